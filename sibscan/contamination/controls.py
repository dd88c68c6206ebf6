"""Per-source overlap thresholds from control texts.

A control text is known to lie outside a source (written after its cutoff date, or held out of
it).  Its overlap with the source is innocent: shared phrases, quotations, boilerplate.  The
source's thresholds are a high percentile (99th by default) of its controls' overlap fractions and
of their longest matched runs; an example above one overlaps more than 99 % of texts that cannot
have leaked.

How many controls does a ``q``-th percentile need?  The largest of ``m`` controls lies above the
``q``-th percentile with probability ``1 - q**m``; for that to be at least 95 %,
``m >= log(0.05) / log(q)`` — **299 controls for the 99th percentile**, 59 for the 95th.  Below that
the threshold is still computed and used, but ``is_well_estimated`` is False and the report says
so.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from ..errors import SibscanError
from .index import NgramIndex
from .overlap import overlap_with_sources

__all__ = ["ControlThreshold", "calibrate_source", "controls_needed"]

DEFAULT_PERCENTILE = 99.0
CONFIDENCE = 0.95


def controls_needed(percentile: float = DEFAULT_PERCENTILE, confidence: float = CONFIDENCE) -> int:
    """Controls needed so that their maximum exceeds the ``percentile`` with ``confidence``."""
    q = percentile / 100.0
    if not 0.0 < q < 1.0:
        raise SibscanError(f"control percentile must be in (0, 100), got {percentile}")
    return math.ceil(math.log(1.0 - confidence) / math.log(q))


@dataclass
class ControlThreshold:
    """A source's overlap threshold measured on control texts."""

    source: str
    percentile: float
    threshold: float  # overlap fraction
    run_threshold: int  # longest matched run, words
    n_controls: int  # scorable controls (at least n words)
    n_unscorable: int
    n_needed: int
    is_well_estimated: bool
    max_control: float
    median_control: float

    def to_dict(self) -> dict:
        return asdict(self)


def calibrate_source(source: str, index: NgramIndex, controls: Sequence[str],
                     percentile: float = DEFAULT_PERCENTILE) -> ControlThreshold:
    """Score control texts against one source and take the ``percentile`` of their overlap and run.

    Parameters
    ----------
    source : str
        The source's name.
    index : NgramIndex
    controls : sequence of str
        Texts known to be outside the source.
    percentile : float

    Returns
    -------
    ControlThreshold
    """
    needed = controls_needed(percentile)
    res = overlap_with_sources(list(controls), {source: index})
    scores = np.array([r.per_source[source].overlap_fraction for r in res if r.scorable], np.float64)
    runs = np.array([r.per_source[source].longest_match_tokens for r in res if r.scorable], np.int64)
    if not len(scores):
        raise SibscanError(f"no control text for source {source!r} has {index.n} words or more; "
                           f"give longer controls or a smaller n")
    thr = float(np.percentile(scores, percentile, method="higher"))
    run_thr = int(np.percentile(runs, percentile, method="higher"))
    return ControlThreshold(source=source, percentile=float(percentile), threshold=thr, run_threshold=run_thr,
                            n_controls=len(scores),
                            n_unscorable=len(res) - len(scores), n_needed=needed,
                            is_well_estimated=len(scores) >= needed, max_control=float(scores.max()),
                            median_control=float(np.median(scores)))
