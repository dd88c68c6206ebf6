"""A verification cascade: a cheap score picks which candidate pairs the expensive verifier sees.

``imagematch`` (:mod:`sibscan.verify.imagematch`) searches scale, rotation and flip per pair and
costs 5-7x ``imagecorr``'s time per pair on a quiet machine (5.7x in the loaded whole scans of
``benchmarks.verify_share``, both on one torch thread); verifying every
candidate of the union of views (13 per test item on the planted crop sets) took 74-77 % of scan
time beside effnet's embedding with nothing else running (docs/benchmarks.md, "Verification time
beside effnet's embedding").  A test item is decided by its best verified pair, so only the
candidates that could be its best need the expensive score: each query's rows whose cheap score is
within ``band`` of that query's best cheap score, for any of the cheap signals (a union, so a source
one signal ranks low is kept by the other).  The rows the cascade drops are left out of the
neighbours table: they were never verified and cannot decide.

The signals and bands of the scan (:data:`IMAGE_CASCADE`): the windows score of the pair
(:func:`sibscan.stages.views.pair_window_scores`, within 0.02 of the query's best) and the scan
encoder's cosine (the query's best only).  Measured on the planted crop sets (``python -m
benchmarks.quality --sets crops,small32``, a run on the windows view's old grid; the current figures
are in the README's cascade paragraph and docs/benchmarks.md, "Heavy crops"): 2.7-2.9 verified
pairs per test item instead of 13, the true source kept for 0.97 / 0.92 of planted items (1.00 /
0.96 among all candidates).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

__all__ = ["IMAGE_CASCADE", "Cascade", "cascade_keep"]


@dataclass(frozen=True)
class Cascade:
    """Which candidates reach the verifier: within ``window_band`` of the query's best windows score,
    or within ``similarity_band`` of its best embedding similarity."""

    window_band: float = 0.02
    similarity_band: float = 0.0

    def describe(self) -> str:
        return (f"cascade(windows within {self.window_band:g}, similarity within {self.similarity_band:g} "
                f"of the query's best)")


#: the scan's cascade for images (bands measured with benchmarks.quality, see the module docstring)
IMAGE_CASCADE = Cascade()


def cascade_keep(groups: np.ndarray, signals: Sequence[Tuple[np.ndarray, float]],
                 always: Optional[np.ndarray] = None) -> np.ndarray:
    """Rows to verify: within ``band`` of their group's best score, for any signal.

    Parameters
    ----------
    groups : ndarray of shape (m,), int
        The query of each row (rows of one query compete).
    signals : sequence of (ndarray of shape (m,), float)
        A cheap score of each row (NaN: none) and its band (>= 0).
    always : ndarray of shape (m,), bool, optional
        Rows kept whatever their scores (exact twins).

    Returns
    -------
    ndarray of shape (m,), bool
        At least one row of every group is kept (all of a group none of whose rows has a score).
    """
    groups = np.asarray(groups)
    m = len(groups)
    keep = np.zeros(m, bool) if always is None else np.asarray(always, bool).copy()
    if m == 0:
        return keep
    _, inverse = np.unique(groups, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_groups = int(inverse.max()) + 1
    for scores, band in signals:
        if band < 0:
            raise ValueError(f"a cascade band is >= 0, got {band}")
        scores = np.asarray(scores, np.float64)
        best = np.full(n_groups, np.nan)
        np.fmax.at(best, inverse, scores)
        with np.errstate(invalid="ignore"):
            keep |= scores >= best[inverse] - band
    kept_any = np.zeros(n_groups, bool)
    kept_any[inverse[keep]] = True
    return keep | ~kept_any[inverse]
