"""The sibling rate: one estimator, read by every output through one headline.

A sibling rate is the share of test items that have a training sibling — a copy or near copy that a
person would call "the same" under the written definition.  It is computed here and nowhere else:
:func:`estimate_rate` gives the calibrated estimate and its 95 % interval from the deciding scores of
every test item's nearest training item and a person's same/different answers on some of them
(``sibscan calibrate`` calls it and records the result in ``cutoff.json``).

What every output states is the headline (:mod:`sibscan.verdict.headline`: :func:`headline`, :func:`sentence`),
over the scores and flags of :mod:`sibscan.verdict.testscores` (:class:`TestScores`); import them from there.

The estimator
-------------
Design-based, so that it covers wherever the siblings score.  The test items are cut into strata by
their top-1 score over the *whole* test set (:func:`score_strata`: fine strata at the top, where
siblings sit, coarse ones below, the scores under the candidate range included); the pairs a person
labels are random draws within their strata (:mod:`sibscan.calibration.sampling` draws them by the
same rule, adaptively: each next pair from the stratum where one more answer shrinks the interval
most), so each stratum's answers are a random sample of it whatever the allocation.

Per stratum ``h`` the share of items a person would answer "same", ``q_h``, has a Jeffreys posterior
from its ``a_h`` "same" of ``m_h`` answers.  The labeller answers wrong: "same" about a non-sibling
with probability ``f_s``, "different" about a sibling with probability ``f_d``, so ``q_h = f_s +
p_h (1 - f_s - f_d)`` and the sibling share is ``p_h = (q_h - f_s) / (1 - f_s - f_d)`` (the
Rogan-Gladen correction).  ``(f_s, f_d)`` have a posterior on a grid: a flat prior, times the
answers on control pairs when given (:class:`sibscan.stats.ControlAnswers`: known-different pairs
answered "same" measure ``f_s``, known-same answered "different" ``f_d``), times what every
stratum's answers allow (``q_h >= f_s`` and ``q_h <= 1 - f_d``: a stratum answered "different"
throughout bounds ``f_s``).  Without control answers the flat prior is the assumption: each rate at
most 10 %, and :meth:`RateEstimate.to_dict` says so in ``"method"``.

The count of siblings is then drawn by Monte Carlo, every draw one ``(f_s, f_d)`` and one ``p_h``
per stratum: exact twins, plus the answered "same" at or above the cutoff (known siblings: the
floor), plus per stratum a binomial of its unlabelled items at ``p_h`` (a finite population: the
labelled items are not drawn again), plus the labelled items the answers may have got wrong
(answered "same" below the cutoff at ``p (1 - f_d) / q``, answered "different" at ``p f_d / (1 -
q)``).  An oracle's answers (``trusted``: made from a planted truth) carry no error: its "same" are
known siblings wherever they score.  The interval is the draws' 2.5-97.5 % quantiles and the estimate
their median, so ``lo x n`` is never below exact twins + answered "same" at or above the cutoff (+ an
oracle's "same" anywhere), and the estimate lies in
``[lo, hi]`` (property-tested).  A stratum without answers has the prior's whole range: label it
(the draw gives every stratum answers first).

What it costs: nothing is assumed away, so a big low-score stratum answered "different" throughout
still carries an upper end of a few percent of its items until enough answers narrow it, and the
labeller's unknown false-"same" rate widens the upper end where the rate is small: the width is what
the labels buy.  Each stratum's prior share is Beta(a, 1), most of its mass near 0 (most strata
hold few siblings), with the shape ``a`` one of 0.1, 0.15, 0.25, 0.4 weighed by all strata's answers.
Jeffreys' Beta(1/2, 1/2) put half a pseudo-"same" in every stratum, and over the big low-score strata
that added up to a lower end of about 1 % at 60 labels where the rate was 0.5 %; a fixed Beta(0.15, 1)
missed on images at 12 % (0.84-0.89 over 64 simulated sets of 10,000 items), where siblings the
verifier scores low spread into the big strata and the fixed prior read their few "same" answers as
almost nothing.

Measured by ``python -m benchmarks.calibration_coverage`` (scores drawn from the project's real-item
benchmark scans, a labeller wrong 3 % of the time, 16 data sets per kind x size x prevalence): the 95 %
interval covers 0.94-1.00 in every cell at 60, 100 and 200 labels (1.00 / 0.99 / 0.99 over all 288 at
60 / 100 / 200), mean width 9.2 pp at 60 labels, 6.9 at 100, 4.9 at 200, 3.8 at 400.  Half width
max(1 pp, 25 % of the rate) takes 175-300 labels at 12 % (image, 10,000 items: more than 400) and
more than 400 at 0.5 % and 3 %; with an error-free labeller the estimator is told about (``--oracle``),
150 at 0.5 %, 150-200 at 12 %, 300-400 at 3 %:
over thousands of low-score items a labeller's 3 % false "same" cannot be told from a few percent of
siblings in a few hundred answers.  docs/benchmarks.md has the table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .headline import LEVEL
from ..stats import ControlAnswers
from .testscores import flagged_mask

__all__ = ["RateEstimate", "estimate_rate", "score_strata"]

#: the estimator's strata: test items are cut by their top-1 score at these shares from the top (the
#: finest where siblings sit, the coarsest where the bulk of unrelated items lies), over the WHOLE test
#: set, below the candidate range included; a stratum holds at least ``_MIN_STRATUM`` items
_TAILS = (0.005, 0.02, 0.06, 0.18, 0.45)
_MIN_STRATUM = 10
#: the labeller's error rates (false "same", false "different"): a grid over [0, cap] with a flat prior;
#: without control answers the cap is the assumption (at most 10 % each way), with them it is 0.5 and
#: the controls' answers measure the rates
_ERR_CAP_ASSUMED, _ERR_CAP_MEASURED, _ERR_GRID = 0.10, 0.5, 25
_DRAWS, _DRAWS_FAST = 20_000, 4_000
#: each stratum's prior sibling share is Beta(a, 1) (its CDF x ** a: no scipy in the core install), the
#: shape ``a`` itself unknown, one of these with equal prior weight and weighed by all strata's answers:
#: a set whose strata are mostly empty of siblings picks a small ``a`` (a narrow upper end at a 0.5 %
#: rate), one whose siblings spread into the low strata (photos the verifier scores low) a larger one
_SHARE_SHAPES = (0.1, 0.15, 0.25, 0.4)
_THETA = 128  # grid points of each stratum's sibling share (uniform in theta, p = sin(theta)^2)
#: the method as every record names it
METHOD = ("stratified by top-1 score over the whole test set; per stratum a Jeffreys posterior of the share answered "
          "'same', corrected for the labeller's false-'same' and false-'different' rates (Rogan-Gladen); unlabelled "
          "items by a finite-population Monte Carlo; answered 'same' at or above the cutoff counted as siblings")


def score_strata(score: np.ndarray) -> np.ndarray:
    """The estimator's stratum of each test item from its top-1 score: 0 (lowest) .. K-1, -1 without a score.

    One rule for the estimator (:func:`estimate_rate`) and the draw of pairs to label
    (:func:`sibscan.calibration.sampling.extend_draw`), so that every labelled pair is a random draw
    from its stratum.  The cut points are scores at the shares ``_TAILS`` from the top of all finite
    scores (compared in float32, the precision scores are stored in, so the population and the test
    scores agree); ties stay together; strata smaller than ``_MIN_STRATUM`` join the one below.

    Parameters
    ----------
    score : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (n,), int64
    """
    s = np.asarray(score, np.float64).astype(np.float32)
    ok = np.isfinite(s)
    out = np.full(len(s), -1, np.int64)
    if not ok.any():
        return out
    srt = np.sort(s[ok])
    m = len(srt)
    edges = np.unique([srt[m - int(np.ceil(t * m))] for t in _TAILS if int(np.ceil(t * m)) < m])
    # merge strata holding too few items into the one below (drop their lower edge), from the top
    while len(edges):
        counts = np.diff(np.r_[0, np.searchsorted(srt, edges, side="left"), m])
        small = np.flatnonzero(counts[1:] < _MIN_STRATUM)  # stratum k + 1 starts at edges[k]
        if not len(small):
            break
        edges = np.delete(edges, small[-1])
    out[ok] = np.searchsorted(edges, s[ok], side="right")
    return out


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
        Posterior mean probability that each item is a sibling: 1 for exact twins and known siblings
        (answered "same" at or above the cutoff), the labelled items given their answer, the others
        their stratum's posterior mean sibling share (0 without a score).
    curve_sd : ndarray of shape (n,)
        Posterior standard deviation of the sibling share of each item's stratum (0 for exact twins
        and items without a score): where another answer would tell the most.
    n_known : int
        Known siblings among the labelled: answered "same" at or above the cutoff (none without one).
    labeller_error : dict
        ``{"false_same": [lo, median, hi], "false_different": [...], "controls": n}``: the posterior
        of the labeller's error rates (``controls`` 0: not measured, the assumption in ``method``).
    method : str
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
    n_known: int = 0
    labeller_error: dict = field(default_factory=dict)
    method: str = METHOD

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "lo": self.lo, "hi": self.hi, "level": self.level,
                "siblings": list(self.siblings), "n": self.n, "n_labels": self.n_labels, "n_exact": self.n_exact,
                "n_known": self.n_known, "labeller_error": self.labeller_error, "method": self.method}

    def precision_recall(self, score: np.ndarray, exact: np.ndarray, cutoff: Optional[float]) -> tuple:
        """Posterior-mean precision and recall of the items flagged at ``cutoff`` (None where undefined)."""
        if cutoff is None:
            return None, None
        flagged = flagged_mask(score, exact, cutoff)
        tp, total = float(self.p_same[flagged].sum()), float(self.p_same.sum())
        return (tp / flagged.sum() if flagged.any() else None), (tp / total if total > 0 else None)


def estimate_rate(score: np.ndarray, exact: np.ndarray, labelled: np.ndarray, same: np.ndarray, *,
                  level: float = LEVEL, fast: bool = False, cutoff: Optional[float] = None,
                  controls: Optional[ControlAnswers] = None, trusted: Optional[np.ndarray] = None) -> RateEstimate:
    """The sibling rate of ``n`` test items from their scores and a person's answers on some of them.

    Parameters
    ----------
    score : ndarray of shape (n,)
        Each test item's best deciding score against train (NaN: no neighbour, not a sibling).
    exact : ndarray of shape (n,), bool
        Exact twins: siblings without asking (their answers, if any, are not used).
    labelled : ndarray of shape (m,), int
        Items with an answer (each at most once: the latest answer of its pair), drawn at random
        within their strata (:func:`score_strata`).
    same : ndarray of shape (m,), bool
        The answers.
    level : float
    fast : bool
        Fewer Monte Carlo draws (5x faster): for choosing the next pair to label, not for reporting.
    cutoff : float, optional
        The cutoff in force: items answered "same" at or above it are known siblings (the interval's
        floor); without one (nothing flagged) the floor is the exact twins, and every answer is read
        with the labeller's error.
    controls : ControlAnswers, optional
        The labeller's answers on control pairs: they measure the false-"same" and false-"different"
        rates; without them each is assumed to be at most 10 %.
    trusted : ndarray of shape (m,), bool, optional
        Answers known to be right: an oracle's (``"labeller": "oracle"``, made from a planted truth), not
        a person's.  They carry no labeller error: a trusted "same" is a known sibling wherever it
        scores (the floor), a trusted "different" a known non-sibling.  Default: none (every answer a
        person's).

    Returns
    -------
    RateEstimate
        See the module docstring for the model.
    """
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if controls is not None and not isinstance(controls, ControlAnswers):
        raise TypeError(f"controls must be a sibscan.stats.ControlAnswers, got {type(controls).__name__}")
    score = np.asarray(score, np.float64)
    exact = np.asarray(exact, bool)
    n = len(score)
    labelled = np.asarray(labelled, np.int64)
    same = np.asarray(same, bool)
    if labelled.shape != same.shape:
        raise ValueError(f"labelled and same must have the same length, got {len(labelled)} and {len(same)}")
    trusted = np.zeros(len(same), bool) if trusted is None else np.asarray(trusted, bool)
    if trusted.shape != same.shape:
        raise ValueError(f"trusted and same must have the same length, got {len(trusted)} and {len(same)}")
    use = ~exact[labelled] & np.isfinite(score[labelled])
    labelled, same, trusted = labelled[use], same[use], trusted[use]
    h = score_strata(score)
    h[exact] = -1
    K = int(h.max()) + 1 if n and h.max() >= 0 else 0
    free = h >= 0
    N = np.bincount(h[free], minlength=K).astype(np.int64)
    hl = h[labelled]
    known = same & ((score[labelled] >= cutoff) | trusted) if cutoff is not None else same & trusted
    hand = ~trusted
    m = np.bincount(hl[hand], minlength=K)
    a = np.bincount(hl[hand], weights=same[hand].astype(np.float64), minlength=K)
    m_t = np.bincount(hl[trusted], minlength=K)
    a_t = np.bincount(hl[trusted], weights=same[trusted].astype(np.float64), minlength=K)
    k_same = np.bincount(hl[same & ~known], minlength=K)  # a person's "same" below the cutoff
    k_diff = m - a.astype(np.int64)  # a person's "different"
    rng = np.random.default_rng(0)
    draws = _DRAWS_FAST if fast else _DRAWS
    fs, fd, p = _posterior_draws(a, m, controls, draws, rng, a_t, m_t)
    q = fs[:, None] + p * (1.0 - fs - fd)[:, None]
    p_if_same = np.clip(p * (1.0 - fd[:, None]) / np.maximum(q, 1e-12), 0.0, 1.0)
    p_if_diff = np.clip(p * fd[:, None] / np.maximum(1.0 - q, 1e-12), 0.0, 1.0)
    n_exact = int(exact.sum())
    n_known = int(known.sum())
    total = (n_exact + n_known + rng.binomial(N - m - m_t, p).sum(axis=1) + rng.binomial(k_same, p_if_same).sum(axis=1)
             + rng.binomial(k_diff, p_if_diff).sum(axis=1)).astype(np.float64)
    lo_c, mid_c, hi_c = (float(v) for v in np.quantile(total, [(1 - level) / 2, 0.5, (1 + level) / 2]))
    # per item: the posterior mean probability of being a sibling, and the sd of its stratum's share
    p_same = exact.astype(np.float64)
    curve_sd = np.zeros(n)
    if K:
        p_same[free] = p.mean(axis=0)[h[free]]
        curve_sd[free] = p.std(axis=0)[h[free]]
        p_same[labelled] = np.where(known, 1.0, np.where(trusted, 0.0, np.where(
            same, p_if_same.mean(axis=0)[hl], p_if_diff.mean(axis=0)[hl])))
    frac = (lambda v: v / n) if n else (lambda v: 0.0)
    n_controls = controls.n if controls is not None else 0
    err = {"false_same": _three(fs), "false_different": _three(fd), "controls": n_controls}
    method = METHOD + (f"; the labeller's error rates measured on {n_controls} control answers (flat prior on [0, "
                       f"{_ERR_CAP_MEASURED:g}])" if n_controls else
                       f"; the labeller's error rates not measured (no control answers): assumed at most "
                       f"{_ERR_CAP_ASSUMED:.0%} each (flat prior), bounded further by the answers")
    n_trusted = int(trusted.sum())
    if n_trusted:
        method += (f"; {n_trusted} oracle answers (made from a planted truth) read as right: their 'same' are known "
                   "siblings wherever they score" + (" (every answer is an oracle's)" if n_trusted == len(same) else ""))
    return RateEstimate(estimate=frac(mid_c), lo=frac(lo_c), hi=frac(hi_c), siblings=(lo_c, mid_c, hi_c), n=n,
                        n_labels=int(len(labelled)), n_exact=n_exact, level=level, p_same=p_same, curve_sd=curve_sd,
                        n_known=n_known, labeller_error=err, method=method)


def _posterior_draws(a: np.ndarray, m: np.ndarray, controls: Optional[ControlAnswers], draws: int,
                     rng: np.random.Generator, a_t: Optional[np.ndarray] = None, m_t: Optional[np.ndarray] = None) -> tuple:
    """Draws of the labeller's (false-"same", false-"different") rates and of every stratum's sibling
    share from their joint posterior (module docstring).

    The error rates live on a grid over ``[0, cap]^2``; each stratum's share ``p`` on a grid uniform in
    ``theta`` with ``p = sin(theta)^2`` (fine near 0 and 1), with the prior Beta(a, 1), ``a`` one of
    ``_SHARE_SHAPES``; the answers' likelihood is binomial in ``q = f_s + p (1 - f_s - f_d)``.  All
    strata's answers weigh each (a, error rates) grid point by their likelihood averaged over the prior
    (so a stratum answered "different" throughout bounds ``f_s``, and strata that all hold few siblings
    favour a small ``a``); given the grid point, each share is drawn from its own posterior.

    Parameters
    ----------
    a, m : ndarray of shape (K,)
        "Same" answers and answers per stratum (a person's).
    a_t, m_t : ndarray of shape (K,), optional
        The same of answers known to be right (an oracle's): binomial in ``p`` itself.

    Returns
    -------
    fs, fd : ndarray of shape (draws,)
    p : ndarray of shape (draws, K)
    """
    K = len(m)
    cap = _ERR_CAP_MEASURED if controls is not None and controls.n else _ERR_CAP_ASSUMED
    step = cap / _ERR_GRID
    g = (np.arange(_ERR_GRID) + 0.5) * step
    FS, FD = (x.ravel() for x in np.meshgrid(g, g, indexing="ij"))
    logw = np.zeros(len(FS))
    if controls is not None:
        fs_k, fd_k = controls.different_answered_same, controls.n_same - controls.same_answered_same
        logw += fs_k * np.log(FS) + (controls.n_different - fs_k) * np.log1p(-FS)
        logw += fd_k * np.log(FD) + (controls.n_same - fd_k) * np.log1p(-FD)
    dtheta = (np.pi / 2) / _THETA
    ps = np.sin((np.arange(_THETA) + 0.5) * dtheta) ** 2  # (T,): cell midpoints
    # the prior's mass in each cell, exactly (its density is infinite at 0), for every shape of the grid
    shapes = np.asarray(_SHARE_SHAPES, np.float64)
    S, G = len(shapes), len(FS)
    prior = np.diff((np.sin(np.arange(_THETA + 1) * dtheta) ** 2)[None, :] ** shapes[:, None], axis=1)  # (S, T)
    q = FS[:, None] + ps[None, :] * (1.0 - FS - FD)[:, None]  # (G, T)
    lq, l1q = np.log(q), np.log1p(-q)
    # log P(answers of stratum k | p, fs, fd), (G, K, T); strata without answers: 0
    ll = a[None, :, None] * lq[:, None, :] + (m - a)[None, :, None] * l1q[:, None, :]
    if m_t is not None and m_t.any():  # answers without error: binomial in the share itself
        ll = ll + (a_t[:, None] * np.log(ps)[None, :] + (m_t - a_t)[:, None] * np.log1p(-ps)[None, :])[None, :, :]
    top = ll.max(axis=2, keepdims=True)
    # (S * G, K, T): every (shape, error rates) grid point's per-stratum likelihood times the prior
    lik = (np.exp(ll - top)[None, :, :, :] * prior[:, None, None, :]).reshape(S * G, K, _THETA)
    logw = np.tile(logw, S) + (np.log(lik.sum(axis=2)) + np.tile(top[:, :, 0], (S, 1))).sum(axis=1)
    w = np.exp(logw - logw.max())
    k = rng.choice(len(w), size=draws, p=w / w.sum())
    jitter = rng.random((2, draws)) - 0.5
    fs = np.clip(FS[k % G] + jitter[0] * step, 0.0, cap)
    fd = np.clip(FD[k % G] + jitter[1] * step, 0.0, cap)
    # each stratum's share given the drawn grid point: from its posterior over theta, jittered within the cell
    cum = np.cumsum(lik, axis=2)
    cum /= cum[:, :, -1:]
    p = np.empty((draws, K))
    for j in range(K):
        c = cum[k, j, :]  # (draws, T)
        t = (c < rng.random((draws, 1))).sum(axis=1)
        p[:, j] = np.sin((np.minimum(t, _THETA - 1) + rng.random(draws)) * dtheta) ** 2
    return fs, fd, p


def _three(x: np.ndarray) -> list:
    """[2.5 %, 50 %, 97.5 %] quantiles of a draw, rounded for a record."""
    return [round(float(v), 5) for v in np.quantile(x, [0.025, 0.5, 0.975])]

