"""Fit the cutoff from labelled pairs: where a person's answers flip from "different" to "same".

``P(same | score)`` is fitted monotone non-decreasing by isotonic regression (pool adjacent
violators, :func:`pava`).  The cutoff is where the answers flip — the midpoint between the last
labelled score with ``P < 0.5`` and the first with ``P >= 0.5`` — or, with a target precision, the
lowest cutoff whose model precision among nearest-neighbour pairs (the mean of ``P`` over the
pairs it flags) reaches the target.  A bootstrap over the labels gives its interval.

The sibling rate and its interval are not estimated here: :func:`sibscan.rate.estimate_rate` is the
one estimator (``calibration.flow`` calls both).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from sibscan import fmt

__all__ = ["pava", "Curve", "fit_curve", "find_cutoff", "bootstrap_cutoff", "FitResult", "fit"]


def pava(y: np.ndarray, w: Optional[np.ndarray] = None) -> np.ndarray:
    """Isotonic (non-decreasing) least-squares fit of ``y`` in its given order.

    Parameters
    ----------
    y : ndarray of shape (n,)
    w : ndarray of shape (n,), optional
        Positive weights (default 1).

    Returns
    -------
    ndarray of shape (n,)
    """
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    # blocks as parallel stacks: value, weight, length (n is a few hundred labels at most)
    val: List[float] = []
    wt: List[float] = []
    ln: List[int] = []
    for yi, wi in zip(y, w):
        val.append(yi)
        wt.append(wi)
        ln.append(1)
        while len(val) > 1 and val[-2] > val[-1]:
            tw = wt[-2] + wt[-1]
            v = (val[-2] * wt[-2] + val[-1] * wt[-1]) / tw
            n = ln[-2] + ln[-1]
            del val[-1], wt[-1], ln[-1]
            val[-1], wt[-1], ln[-1] = v, tw, n
    return np.repeat(val, ln)


@dataclass
class Curve:
    """A fitted step function ``P(same | score)``: value ``p[i]`` from ``x[i]`` up to ``x[i+1]``."""

    x: np.ndarray
    p: np.ndarray

    def __call__(self, s: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.x, np.asarray(s, dtype=np.float64), side="right") - 1
        return self.p[np.clip(i, 0, len(self.p) - 1)]


def fit_curve(scores: np.ndarray, same: np.ndarray) -> Curve:
    """Isotonic ``P(same | score)`` from labelled pairs (ties in score pooled first)."""
    scores = np.asarray(scores, dtype=np.float64)
    same = np.asarray(same, dtype=np.float64)
    x, inv = np.unique(scores, return_inverse=True)
    w = np.bincount(inv, minlength=len(x)).astype(np.float64)
    y = np.bincount(inv, weights=same, minlength=len(x)) / w
    return Curve(x=x, p=pava(y, w))


def find_cutoff(curve: Curve, pop_scores: Optional[np.ndarray] = None, target_precision: Optional[float] = None) -> Optional[float]:
    """The cutoff of one fitted curve, or None when the answers never flip.

    With ``target_precision`` the lowest cutoff (a labelled score or a midpoint) at which the mean of
    ``P(same)`` over the population pairs scoring at or above it reaches the target.
    """
    x, p = curve.x, curve.p
    if target_precision is None:
        up = np.flatnonzero(p >= 0.5)
        if len(up) == 0 or up[0] == 0:
            return None
        i = up[0]
        return float((x[i - 1] + x[i]) / 2)
    if pop_scores is None or len(pop_scores) == 0:
        return None
    if not (p >= 0.5).any() or not (p < 0.5).any():
        return None
    cand = np.unique(np.concatenate([x, (x[1:] + x[:-1]) / 2]))
    s = np.sort(np.asarray(pop_scores, dtype=np.float64))
    ps = curve(s)
    # precision(c) = mean of P over s >= c: suffix sums over the sorted population
    suffix = np.cumsum(ps[::-1])[::-1]
    start = np.searchsorted(s, cand, side="left")
    count = len(s) - start
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.where(count > 0, suffix[np.minimum(start, len(s) - 1)] / np.maximum(count, 1), np.nan)
    ok = np.flatnonzero(prec >= target_precision)
    return float(cand[ok[0]]) if len(ok) else None


def bootstrap_cutoff(scores: np.ndarray, same: np.ndarray, pop_scores: np.ndarray, target_precision: Optional[float],
                     n_boot: int = 300, seed: int = 0) -> tuple:
    """Percentile interval (2.5 %, 97.5 %) of the cutoff over label resamples, and the share that flipped."""
    rng = np.random.default_rng(seed)
    n = len(scores)
    idx = rng.integers(0, n, size=(n_boot, n))
    cuts = []
    for row in idx:
        c = find_cutoff(fit_curve(scores[row], same[row]), pop_scores, target_precision)
        if c is not None:
            cuts.append(c)
    if not cuts:
        return None, 0.0
    cuts = np.asarray(cuts)
    return (float(np.quantile(cuts, 0.025)), float(np.quantile(cuts, 0.975))), len(cuts) / n_boot


@dataclass
class FitResult:
    """A fitted cutoff with its evidence (see :func:`fit`)."""

    cutoff: Optional[float]
    interval: Optional[tuple]
    rule: str
    status: str
    advice: List[str] = field(default_factory=list)
    curve: Optional[Curve] = None
    flip_share: float = 0.0


def fit(scores: np.ndarray, same: np.ndarray, pop_scores: np.ndarray, *, lo: float, target_precision: Optional[float] = None,
        min_per_side: int = 3, min_flip_share: float = 0.8, n_boot: int = 300, seed: int = 0) -> FitResult:
    """Fit the cutoff and say whether the labels can support it, and what would help.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Deciding scores of the labelled pairs (skips excluded).
    same : ndarray of shape (m,), bool
    pop_scores : ndarray of shape (N,)
        Scores of all nearest-neighbour pairs (for the target-precision rule).
    lo : float
        Lower end of the candidate range (for the advice).
    min_per_side : int
        'same' and 'different' answers needed at least.
    min_flip_share : float
        The answers must flip in at least this share of bootstrap resamples.  (A wide interval in
        score units is no reason to refuse a cutoff: a gap with no pairs in it is wide and harmless;
        the rate's interval says how much the uncertainty matters.)
    """
    scores = np.asarray(scores, dtype=np.float64)
    same = np.asarray(same, dtype=bool)
    rule = "P(same) = 0.5" if target_precision is None else f"precision >= {target_precision:g}"
    n_same, n_diff = int(same.sum()), int((~same).sum())
    if n_same + n_diff == 0:
        return FitResult(None, None, rule, "no labels yet",
                         [f"label pairs (sibscan calibrate --ui web or --ui terminal); the candidate range starts at {fmt.score(lo)}"])
    curve = fit_curve(scores, same)
    cutoff = find_cutoff(curve, pop_scores, target_precision)
    advice: List[str] = []
    status = "ok"
    top_diff = float(scores[~same].max()) if n_diff else lo
    low_same = float(scores[same].min()) if n_same else 1.0
    if n_same < min_per_side:
        status = f"too few 'same' labels ({n_same}; need at least {min_per_side})"
        advice.append(f"label about {2 * (min_per_side - n_same) + 5} more pairs scoring between {fmt.span(top_diff, 1.0)}")
    if n_diff < min_per_side:
        msg = f"too few 'different' labels ({n_diff}; need at least {min_per_side})"
        status = msg if status == "ok" else f"{status}; {msg}"
        advice.append(f"label about {2 * (min_per_side - n_diff) + 5} more pairs scoring between {fmt.span(lo, low_same)}")
    if cutoff is None:
        if target_precision is not None and (curve.p >= 0.5).any() and (curve.p < 0.5).any():
            why = f"no cutoff reaches precision {target_precision:g}"
            advice.append(f"label more pairs scoring above {fmt.score(low_same)} to tell whether higher scores reach the target")
        elif (curve.p >= 0.5).all():
            why = f"no flip observed: every labelled pair down to score {fmt.score(low_same)} was 'same'"
            advice.append(f"label pairs scoring between {fmt.span(lo, low_same)}")
        else:
            why = f"no flip observed: every labelled pair up to score {fmt.score(top_diff)} was 'different'"
            advice.append(f"label pairs scoring between {fmt.span(top_diff, 1.0)} (if the scan has none, no siblings were found above chance)")
        status = why if status == "ok" else f"{status}; {why}"
        return FitResult(None, None, rule, status, advice, curve)
    interval, flip_share = bootstrap_cutoff(scores, same, pop_scores, target_precision, n_boot=n_boot, seed=seed)
    if status == "ok" and flip_share < min_flip_share:
        status = f"the answers flip in only {flip_share:.0%} of bootstrap resamples"
        if interval is not None:
            advice.append(f"label about 10 more pairs scoring between {fmt.span(*interval)}")
    return FitResult(cutoff, interval, rule, status, advice, curve, flip_share)
