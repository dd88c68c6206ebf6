"""The sibling rate: one estimator, read by every output through one headline.

A sibling rate is the share of test items that have a training sibling — a copy or near copy that a
person would call "the same" under the written definition.  It is computed here and nowhere else:
:func:`estimate_rate` gives the calibrated estimate and its 95 % interval from the deciding scores of
every test item's nearest training item and a person's same/different answers on some of them
(``sibscan calibrate`` calls it and records the result in ``cutoff.json``).

What every output states is the headline (:mod:`sibscan.verdict.headline`: :func:`headline`, :func:`sentence`),
over the scores and flags of :mod:`sibscan.verdict.testscores` (:class:`TestScores`); their public names are
also importable from here, as they were before those modules were split off.

The estimator
-------------
``P(same | score)`` rises with the score.  It is modelled as a logistic curve in the score with a
labeller who answers wrong a share ``eps`` of the time::

    P(answer "same" | s) = eps + (1 - 2 eps) / (1 + exp(-(s - c) / w))

and the posterior over the location ``c`` (where the answers flip), the width ``w`` and ``eps`` is
computed on a grid (flat in ``c`` over and beyond the scores, flat in ``log w``, ``eps`` in
[0, 0.1]).  For each grid point the number of siblings among the N test items is exact twins (known
siblings) + for each labelled item the probability it is a sibling given its answer + for each
unlabelled item ``P(same | s)``; its distribution is the posterior mixture of the normal
approximations of those sums (a Poisson-binomial for the unlabelled items).  The interval is the
2.5-97.5 % quantiles of that mixture and the estimate its median.  Because the curve is monotone, a
region where every answer was "different" bounds every score below it; because answers may be
wrong, one stray "same" among many "different" does not turn a low-score region into siblings.
Selection of the labelled pairs may depend on earlier answers (adaptive labelling): the likelihood
is the same.

What it cannot see: siblings that the verifier scores among non-siblings, far below the flip. There
``P(same | s)`` is a few percent, like the labeller's error rate, and the handful of answers drawn
there cannot tell the two apart: the curve reads them as errors and the interval leaves those
siblings out. On the image score sets a quarter of the siblings score below the 98th percentile of
the non-siblings; this is why coverage falls short at 3 % and 12 % prevalence. (A floor on ``P(same
| s)`` or an allowance for a share of missed siblings restores coverage there, but, with the
labeller's error rate unknown, widened the intervals at 0.5 % 1.7-6x in trial runs: tried, measured,
not adopted.)  Coverage and width are measured by ``python -m benchmarks.calibration_coverage`` on
scores drawn from the project's real-item benchmark scans, with a labeller wrong 3 % of the time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .headline import LEVEL, STATES, headline, narrow_enough, no_interval_reason, sentence
from .testscores import TestScores, best_scores, flagged_mask, test_scores

__all__ = ["LEVEL", "STATES", "RateEstimate", "TestScores", "best_scores", "estimate_rate", "flagged_mask", "headline",
           "narrow_enough", "no_interval_reason", "sentence", "test_scores"]


#: the posterior's grid: locations of the flip (``c``, points per unit of quantile), widths of the
#: curve (in quantile units, flat prior in log w), the labeller's error rates (flat prior), the most
#: grid points kept (the heaviest), and Monte Carlo draws for the quantiles of the count
_FULL = {"c": 120, "w": np.geomspace(2e-4, 0.3, 14), "eps": np.array([0.0, 0.015, 0.03, 0.05, 0.08]),
         "top": np.array([1.0, 0.97, 0.94, 0.9, 0.85, 0.8]), "points": 3000, "draws": 40_000}
_FAST = {"c": 64, "w": np.geomspace(2e-4, 0.3, 8), "eps": np.array([0.0, 0.03, 0.08]),
         "top": np.array([1.0, 0.94, 0.85]), "points": 600, "draws": 4_000}
_KEEP = 1e-7  # grid points with less posterior weight than this share of the largest are dropped
_BLOCK = 256
_BINS = 1024


@dataclass
class RateEstimate:
    """The calibrated sibling rate of a population of test items.

    Attributes
    ----------
    estimate, lo, hi : float
        Posterior median and ``level`` interval of the rate (fractions of ``n``).
    siblings : (float, float, float)
        The same as counts of test items: (lo, median, hi).
    n, n_labels, n_exact : int
        Test items, items with a same/different answer used, exact twins (known siblings).
    level : float
    p_same : ndarray of shape (n,)
        Posterior mean probability that each item is a sibling (1 for exact twins; labelled items
        given their answer).
    curve_sd : ndarray of shape (n,)
        Posterior standard deviation of ``P(same | score)`` at each item's score (0 for exact twins
        and items without a score): where another answer would tell the most.
    """

    estimate: float
    lo: float
    hi: float
    siblings: tuple
    n: int
    n_labels: int
    n_exact: int
    level: float
    p_same: np.ndarray
    curve_sd: np.ndarray

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "lo": self.lo, "hi": self.hi, "level": self.level,
                "siblings": list(self.siblings), "n": self.n, "n_labels": self.n_labels, "n_exact": self.n_exact,
                "method": "monotone logistic P(same | score) with labeller error, grid posterior"}

    def precision_recall(self, score: np.ndarray, exact: np.ndarray, cutoff: Optional[float]) -> tuple:
        """Posterior-mean precision and recall of the items flagged at ``cutoff`` (None where undefined)."""
        if cutoff is None:
            return None, None
        flagged = flagged_mask(score, exact, cutoff)
        tp, total = float(self.p_same[flagged].sum()), float(self.p_same.sum())
        return (tp / flagged.sum() if flagged.any() else None), (tp / total if total > 0 else None)


def _quantile_rank(pop: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Mid-rank of each ``s`` among the sorted population scores ``pop``, as a fraction in (0, 1)."""
    lo = np.searchsorted(pop, s, side="left")
    hi = np.searchsorted(pop, s, side="right")
    return (lo + hi) / (2.0 * len(pop))


def _c_grid(m: int = 240) -> tuple:
    """Locations of the flip in quantile units, with their prior weights: flat over [-0.02, 1.02],
    denser towards the top where siblings sit."""
    u = np.unique(np.concatenate([np.linspace(-0.02, 1.02, m), 1.0 - np.geomspace(2e-4, 0.25, m // 2)]))
    w = np.gradient(u)
    return u, w / w.sum()


def estimate_rate(score: np.ndarray, exact: np.ndarray, labelled: np.ndarray, same: np.ndarray, *,
                  level: float = LEVEL, fast: bool = False) -> RateEstimate:
    """The sibling rate of ``n`` test items from their scores and a person's answers on some of them.

    Parameters
    ----------
    score : ndarray of shape (n,)
        Each test item's best deciding score against train (NaN: no neighbour, not a sibling).
    exact : ndarray of shape (n,), bool
        Exact twins: siblings without asking (their answers, if any, are not used).
    labelled : ndarray of shape (m,), int
        Items with an answer (each at most once: the latest answer of its pair).
    same : ndarray of shape (m,), bool
        The answers.
    level : float
    fast : bool
        A coarser grid (about 10x faster): for choosing the next pair to label, not for reporting.

    Returns
    -------
    RateEstimate
        See the module docstring for the model.
    """
    grid = _FAST if fast else _FULL
    score = np.asarray(score, np.float64)
    exact = np.asarray(exact, bool)
    n = len(score)
    labelled = np.asarray(labelled, np.int64)
    same = np.asarray(same, bool)
    use = ~exact[labelled] & np.isfinite(score[labelled])
    labelled, same = labelled[use], same[use].astype(np.float64)
    free = ~exact & np.isfinite(score)
    pop = np.sort(score[free])
    x = np.zeros(n)
    if len(pop):
        x[free] = _quantile_rank(pop, score[free])
    xl = x[labelled]
    uc, prior_c = _c_grid(grid["c"])
    widths = grid["w"]
    # the answer model's other parameters: (eps, top) pairs, flat prior
    er = np.array([(e, t) for e in grid["eps"] for t in grid["top"]])
    prior_er = np.full(len(er), 1.0 / len(er))
    # log-likelihood of the answers at every (c, w, (eps, rho)): shape (C, W, E)
    # (float32 is plenty for a log-likelihood summed over a few hundred answers, and twice as fast)
    p = _logistic((xl[None, None, :] - uc[:, None, None]) / widths[None, :, None]).astype(np.float32)  # (C, W, m)
    ys, yd = p[:, :, same > 0], p[:, :, same == 0]
    ll = np.empty((len(uc), len(widths), len(er)))
    for e, (eps, top) in enumerate(er):
        a, b = np.float32(eps), np.float32((1 - 2 * eps) * top)
        ll[:, :, e] = np.log(np.maximum(a + b * ys, 1e-12)).sum(axis=2) + np.log(np.maximum(1 - a - b * yd, 1e-12)).sum(axis=2)
    logpost = ll + np.log(prior_c)[:, None, None] + np.log(prior_er)[None, None, :]
    post = np.exp(logpost - logpost.max())
    keep = np.argwhere(post > _KEEP * post.max())
    wts = post[keep[:, 0], keep[:, 1], keep[:, 2]]
    if len(wts) > grid["points"]:  # the heaviest points; what is dropped weighs almost nothing
        top = np.argsort(-wts, kind="stable")[:grid["points"]]
        keep, wts = keep[top], wts[top]
    wts = wts / wts.sum()
    eps, top = er[keep[:, 2], 0], er[keep[:, 2], 1]
    # per kept (c, w): sums of the logistic over the unlabelled items, in blocks (memory: block x bins)
    cw, inv = np.unique(keep[:, :2], axis=0, return_inverse=True)
    inv = inv.ravel()
    free_idx = np.flatnonzero(free)
    is_lab = np.zeros(n, bool)
    is_lab[labelled] = True
    # the unlabelled items by bins of their quantile rank (ranks are spread evenly, so a bin holds
    # about n / _BINS items; ties share a bin): the sums over items become sums over bins
    xf = x[free_idx]
    n_bins = min(_BINS, max(len(free_idx), 1))
    fbin = np.minimum((xf * n_bins).astype(np.int64), n_bins - 1)
    cnt_u = np.bincount(fbin[~is_lab[free_idx]], minlength=n_bins).astype(np.float64)
    cnt_all = np.bincount(fbin, minlength=n_bins).astype(np.float64)
    centre = np.bincount(fbin, weights=xf, minlength=n_bins) / np.maximum(cnt_all, 1)
    s1, s2 = np.empty(len(cw)), np.empty(len(cw))
    # posterior moments of P(same | s) = top * sigma per bin: weights per (c, w)
    a1 = np.bincount(inv, weights=wts * top, minlength=len(cw))
    a2 = np.bincount(inv, weights=wts * top ** 2, minlength=len(cw))
    m1, m2 = np.zeros(n_bins), np.zeros(n_bins)
    for start in range(0, len(cw), _BLOCK):
        sl = slice(start, start + _BLOCK)
        pb = _logistic((centre[None, :] - uc[cw[sl, 0], None]) / widths[cw[sl, 1], None])
        s1[sl], s2[sl] = pb @ cnt_u, (pb * pb) @ cnt_u
        m1 += a1[sl] @ pb
        m2 += a2[sl] @ (pb * pb)
    # the unlabelled items' expected count and Poisson-binomial variance at each kept point
    mu_u = top * s1[inv]
    var_u = mu_u - top ** 2 * s2[inv]
    # the labelled items: the probability each is a sibling given its answer
    pl = top[:, None] * _logistic((x[labelled][None, :] - uc[cw[inv, 0], None]) / widths[cw[inv, 1], None])
    e_ = eps[:, None]
    a = np.where(same[None, :] > 0, (1 - e_) * pl, e_ * pl)
    b = np.where(same[None, :] > 0, e_ * (1 - pl), (1 - e_) * (1 - pl))
    ql = a / np.maximum(a + b, 1e-300)
    n_exact = int(exact.sum())
    mu = n_exact + mu_u + ql.sum(axis=1)
    var = np.maximum(var_u, 0.0) + (ql * (1 - ql)).sum(axis=1)
    lo_c, mid_c, hi_c = _mixture_quantiles(mu, np.sqrt(var), wts, [(1 - level) / 2, 0.5, (1 + level) / 2], n_exact, n,
                                           grid["draws"])
    # per item: posterior mean of P(sibling) and sd of the curve at its score
    p_same = exact.astype(np.float64)
    p_same[free_idx] = m1[fbin]
    p_same[labelled] = wts @ ql
    curve_sd = np.zeros(n)
    curve_sd[free_idx] = np.sqrt(np.maximum(m2 - m1 ** 2, 0.0))[fbin]
    frac = (lambda v: v / n) if n else (lambda v: 0.0)
    return RateEstimate(estimate=frac(mid_c), lo=frac(lo_c), hi=frac(hi_c), siblings=(lo_c, mid_c, hi_c), n=n,
                        n_labels=int(len(labelled)), n_exact=n_exact, level=level, p_same=p_same, curve_sd=curve_sd)


def _mixture_quantiles(mu: np.ndarray, sd: np.ndarray, w: np.ndarray, probs, known: int, n: int, draws: int) -> list:
    """Quantiles of the count of siblings, a posterior mixture of normals: by a seeded Monte Carlo
    draw of ``draws`` values, clipped to [known, n] (``known`` exact twins are siblings for certain)."""
    rng = np.random.default_rng(0)
    k = rng.choice(len(w), size=draws, p=w)
    t = np.clip(rng.normal(mu[k], sd[k]), float(known), float(n))
    return [float(v) for v in np.quantile(t, probs)]


def _logistic(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60.0, 60.0)))
