"""The contamination audit's options, checked in one place before any file is read."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

from ..errors import SibscanError
from ..options import ENGINES
from .controls import DEFAULT_PERCENTILE
from .guided import DEFAULT_PREFIX_FRACTION
from .index import DEFAULT_N, DEFAULT_SHARD_SIZE
from .minkprob import DEFAULT_K

__all__ = ["ContaminationConfig"]


@dataclass
class ContaminationConfig:
    """Options of :func:`sibscan.contamination.audit`.

    Attributes
    ----------
    n : int
        Words per n-gram (13: GPT-3's contamination study).
    shard_size : int
        N-grams per index batch and shard (the unit of memory).
    k : float
        Fraction of tokens in Min-K% / Min-K%++ (0.2, both papers' default).
    overlap_floor : float
        Absolute overlap flag for a source without controls (0.7: PaLM counted an example
        contaminated when 70 % of its n-grams occur in the training data).
    run_floor : int
        A verbatim run of this many words is a flag (40: the textalign verifier's ``full_run``,
        the run sibscan treats as a copy however long the texts around it).
    z_threshold : float
        Combined robust z from which an example is an outlier.
    control_percentile : float
        Percentile of the control texts' overlap taken as a source's threshold.
    prefix_fraction : float
        Share of an example's words given as the guided-prompting prefix.
    weight_by_auc : bool
        With labels, weight the combined z by each method's ``max(0, 2 AUC - 1)``.
    prevalence : float, optional
        Expected share of contaminated examples: precision and review-queue size are quoted at it.
    engine : {"local", "ray"}
        Where the index tasks run.
    """

    n: int = DEFAULT_N
    shard_size: int = DEFAULT_SHARD_SIZE
    k: float = DEFAULT_K
    overlap_floor: float = 0.7
    run_floor: int = 40
    z_threshold: float = 3.0
    control_percentile: float = DEFAULT_PERCENTILE
    prefix_fraction: float = DEFAULT_PREFIX_FRACTION
    weight_by_auc: bool = False
    prevalence: Optional[float] = None
    engine: str = "local"

    def check(self) -> "ContaminationConfig":
        """Refuse a bad option before any file is read; returns the config (as every config's ``check``)."""
        checks = [
            (self.n >= 1, f"n must be >= 1 words, got {self.n}"),
            (self.shard_size >= 1, f"shard_size must be >= 1 n-grams, got {self.shard_size}"),
            (0.0 < self.k <= 1.0, f"k is a fraction in (0, 1], got {self.k}"),
            (0.0 < self.overlap_floor <= 1.0, f"overlap_floor is a fraction in (0, 1], got {self.overlap_floor}"),
            (self.run_floor >= 1, f"run_floor must be >= 1 words, got {self.run_floor}"),
            (0.0 < self.control_percentile < 100.0, f"control_percentile must be in (0, 100), got {self.control_percentile}"),
            (0.0 < self.prefix_fraction < 1.0, f"prefix_fraction is a fraction in (0, 1), got {self.prefix_fraction}"),
            (self.prevalence is None or 0.0 < self.prevalence < 1.0,
             f"prevalence is a fraction in (0, 1), got {self.prevalence}"),
            (self.engine in ENGINES, f"unknown engine {self.engine!r}; available: {', '.join(ENGINES)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise SibscanError(message)
        return self

    validate = check  # its first name, still called by sibscan.contamination.audit

    def to_dict(self) -> dict:
        return asdict(self)
