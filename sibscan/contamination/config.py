"""The contamination audit's options, checked in one place before any file is read."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

from ..errors import SibscanError
from ..options import ENGINES, check_fields, opt
from .controls import DEFAULT_PERCENTILE
from .guided import DEFAULT_PREFIX_FRACTION
from .index import DEFAULT_N, DEFAULT_SHARD_SIZE
from .minkprob import DEFAULT_K

__all__ = ["ContaminationConfig"]


@dataclass
class ContaminationConfig:
    """Options of :func:`sibscan.contamination.audit`; the fields with a flag are ``sibscan contamination``'s
    flags (made from them, as the scan's option groups are), so each default and help is written once.

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

    PANEL = "Options"  # the help panel of its flags (sibscan contamination's, made from these fields)

    n: int = opt(DEFAULT_N, "--n", minimum=1, help="Words per n-gram.")
    shard_size: int = opt(DEFAULT_SHARD_SIZE, "--shard-size", minimum=1, help="N-grams per index batch and shard (the unit of memory).")
    k: float = opt(DEFAULT_K, "--min-k", old=("--k",), help="Fraction of lowest-scoring tokens averaged by Min-K%/Min-K%++, in (0, 1].")
    overlap_floor: float = opt(0.7, "--overlap-floor", help="Flag an example whose overlap with a source without controls reaches this fraction.")
    run_floor: int = opt(40, "--run-floor", minimum=1, help="Flag a verbatim run of this many words.")
    z_threshold: float = opt(3.0, "--z-threshold", help="Flag a combined robust z-score at or above this.")
    control_percentile: float = opt(DEFAULT_PERCENTILE, "--control-percentile", help="Percentile of the control texts' overlap taken as a source's threshold.")
    prefix_fraction: float = opt(DEFAULT_PREFIX_FRACTION, "--prefix-fraction", help="Share of each example's words given as the guided-prompting prefix.")
    weight_by_auc: bool = opt(False, "--weight-by-auc", toggle=False, help="With --labels: weight the combined z by each method's max(0, 2 AUC - 1).")
    prevalence: Optional[float] = opt(None, "--prevalence", help="Expected share of contaminated examples (a fraction): quote precision and review-queue size at it.")
    engine: str = "local"  # no flag of its own: the command line's is the scan's --engine (options.SearchOptions)

    def check(self) -> "ContaminationConfig":
        """Refuse a bad option before any file is read; returns the config (as every config's ``check``: the
        declared bounds by :func:`~sibscan.options.check_fields`, then the open intervals a bound cannot say)."""
        check_fields(self)
        checks = [
            (0.0 < self.k <= 1.0, f"k is a fraction in (0, 1], got {self.k}"),
            (0.0 < self.overlap_floor <= 1.0, f"overlap_floor is a fraction in (0, 1], got {self.overlap_floor}"),
            (0.0 < self.control_percentile < 100.0, "control_percentile must be in (0, 100), got "
                                                    f"{self.control_percentile}"),
            (0.0 < self.prefix_fraction < 1.0, f"prefix_fraction is a fraction in (0, 1), got {self.prefix_fraction}"),
            (self.prevalence is None or 0.0 < self.prevalence < 1.0,
             f"prevalence is a fraction in (0, 1), got {self.prevalence}"),
            (self.engine in ENGINES, f"unknown engine {self.engine!r}; available: {', '.join(ENGINES)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise SibscanError(message)
        return self

    def to_dict(self) -> dict:
        return asdict(self)
