"""Fit the cutoff from labelled pairs: the lowest score from which P(same)'s lower bound per run of answers reaches 0.5.

``P(same | score)`` is fitted monotone non-decreasing by isotonic regression (pool adjacent
violators, :func:`pava`).  Each pooled block of answers gets its one-sided 95 % (Jeffreys) lower
bound (:func:`same_lower_bound`); since ``P`` does not fall as the score rises, a block's bound holds
for every score above it too, so the curve's lower bound at a score is the largest bound of the blocks
at or below it.  The cutoff (:data:`RULE`) is the lowest score at which that lower bound reaches
0.5 — the midpoint between the last labelled score below it and the first at it — or, with a target
precision, the lowest cutoff at which the flagged nearest-neighbour pairs' mean lower-bound ``P``
reaches the target.  The confidence (:data:`CONFIDENCE`) holds for each run of answers, not for
the cutoff as a whole: in simulations (``python -m benchmarks.cutoff_rule_sim``) the first
flagged labelled pair had a true ``P(same) < 0.5`` in 6-16 % of draws (the point estimate: 40-59 %).  Both need a run
of answers that is mostly "same": with none 'different' among
them, at least :func:`min_same_run` (3 at 95 %).  The point estimate alone put the cutoff under
pairs a person had answered "different" (a pooled block of three "same" and one "different" is
``P = 0.75``; two and two is ``P = 0.5``, which flagged).  Design weights are not needed: the draw
chose pairs by their score alone, so ``P(same | score)`` is the same among drawn and undrawn pairs.
A bootstrap over the labels gives the cutoff's interval.

The sibling rate and its interval are not estimated here: :func:`sibscan.verdict.rate.estimate_rate` is the
one estimator (``calibration.flow`` calls both).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import List, Optional

import numpy as np

from sibscan import fmt
# the rule names live below everything reading them
from sibscan.verdict.cutoffrule import RULE, SUPPORTED, precision_rule
from sibscan.stats import CUTOFF_BOUND, CUTOFF_CONFIDENCE

from .advice import Ask, Unlabelled

__all__ = ["BOUND", "CONFIDENCE", "pava", "Curve", "fit_curve", "find_cutoff", "bootstrap_cutoff", "FitResult",
           "fit", "beta_cdf", "min_same_run", "same_lower_bound"]

#: one-sided confidence of the lower bound on ``P(same | score)`` that both cutoff rules read, and how
#: the texts name it: one constant below everything that prints it (:data:`sibscan.stats.CUTOFF_CONFIDENCE`)
CONFIDENCE = CUTOFF_CONFIDENCE
BOUND = CUTOFF_BOUND


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; converges for x < (a + 1) / (a + b + 2))."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        for aa in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)``: the Beta(a, b) distribution function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


@lru_cache(maxsize=65536)
def same_lower_bound(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """One-sided Jeffreys lower bound of a share from ``k`` "same" of ``n`` answers.

    The ``1 - confidence`` quantile of Beta(k + 1/2, n - k + 1/2), the share's posterior under the
    Jeffreys prior: its coverage stays near the nominal level where Clopper-Pearson's is well above it
    (Brown, Cai & DasGupta 2001).  0 when none of them (or no answer) is "same", as there.
    """
    if n <= 0 or k <= 0:
        return 0.0
    a, b, alpha = k + 0.5, n - k + 0.5, 1.0 - confidence
    lo, hi = 0.0, 1.0
    for _ in range(60):  # the distribution function rises with x: bisect for the alpha quantile
        mid = (lo + hi) / 2
        if beta_cdf(mid, a, b) < alpha:
            lo = mid
        else:
            hi = mid
    return lo


def min_same_run(target: float = 0.5, confidence: float = CONFIDENCE) -> int:
    """"same" answers with none 'different' among them whose lower bound reaches ``target``: 3 for 0.5
    at 95 %, 38 for 0.95.

    The bound of an all-'same' run rises with its length: doubling, then bisection (a few dozen
    bounds, where stepping one at a time took seconds for 0.999).
    """
    if not 0.0 < target < 1.0:
        raise ValueError(f"target is a share in (0, 1), got {target}")
    hi = 1
    while same_lower_bound(hi, hi, confidence) < target:
        hi *= 2
    lo = hi // 2  # its bound is under the target (or lo is 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if same_lower_bound(mid, mid, confidence) >= target:
            hi = mid
        else:
            lo = mid
    return hi


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
    """A fitted step function ``P(same | score)``: value ``p[i]`` from ``x[i]`` up to ``x[i+1]``, and
    its lower bound ``lower[i]`` there (non-decreasing; see the module docstring)."""

    x: np.ndarray
    p: np.ndarray
    lower: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        if self.lower is None:  # a curve given without its bound: read at its point estimate
            self.lower = np.asarray(self.p, dtype=np.float64)

    def __call__(self, s: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.x, np.asarray(s, dtype=np.float64), side="right") - 1
        return self.p[np.clip(i, 0, len(self.p) - 1)]


def fit_curve(scores: np.ndarray, same: np.ndarray) -> Curve:
    """Isotonic ``P(same | score)`` from labelled pairs (ties in score pooled first), with its lower bound.

    A block is a run of labelled scores with one fitted value (two adjacent pooled blocks that
    happen to fit the same value count as one: the same value from more answers).
    """
    scores = np.asarray(scores, dtype=np.float64)
    same = np.asarray(same, dtype=np.float64)
    x, inv = np.unique(scores, return_inverse=True)
    w = np.bincount(inv, minlength=len(x)).astype(np.float64)
    k = np.bincount(inv, weights=same, minlength=len(x))
    p = pava(k / w, w)
    block = np.concatenate([[0], np.cumsum(p[1:] != p[:-1])]) if len(p) else np.zeros(0, np.int64)
    kb = np.rint(np.bincount(block, weights=k)).astype(np.int64)
    nb = np.rint(np.bincount(block, weights=w)).astype(np.int64)
    # one cache key with min_same_run
    bound = np.array([same_lower_bound(int(a), int(b), CONFIDENCE) for a, b in zip(kb, nb)])
    # P does not fall as the score rises: a block's bound holds above it too
    lower = np.maximum.accumulate(bound[block]) if len(p) else np.zeros(0)
    return Curve(x=x, p=p, lower=lower)


def find_cutoff(curve: Curve, pop_scores: Optional[np.ndarray] = None,
                target_precision: Optional[float] = None) -> Optional[float]:
    """The cutoff of one fitted curve by its lower bound, or None when the labels cannot support one.

    Without ``target_precision``: the midpoint between the last labelled score whose lower bound is
    under 0.5 and the first at or above it (None when there is none, or when it is the lowest labelled
    score: no answer below it says where the flip is).  With ``target_precision``: the lowest cutoff (a
    labelled score or a midpoint) at which the mean lower bound over the population pairs scoring at or
    above it reaches the target.
    """
    s = None if pop_scores is None else np.sort(np.asarray(pop_scores, dtype=np.float64))
    return _cutoff(curve, s, target_precision)


def _cutoff(curve: Curve, s: Optional[np.ndarray], target_precision: Optional[float]) -> Optional[float]:
    """:func:`find_cutoff` with the population's scores ``s`` sorted already (a bootstrap sorts them once)."""
    x, lower = curve.x, curve.lower
    up = np.flatnonzero(lower >= 0.5)
    # the lower bound must be under 0.5 somewhere below (the point estimate may be 0.5 or more there)
    if len(up) == 0 or up[0] == 0:
        return None
    if target_precision is None:
        i = up[0]
        return float((x[i - 1] + x[i]) / 2)
    if s is None or len(s) == 0:
        return None
    cand = np.unique(np.concatenate([x, (x[1:] + x[:-1]) / 2]))
    ps = Curve(x, lower)(s)
    # precision(c) = mean of P over s >= c: suffix sums over the sorted population
    suffix = np.cumsum(ps[::-1])[::-1]
    start = np.searchsorted(s, cand, side="left")
    count = len(s) - start
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.where(count > 0, suffix[np.minimum(start, len(s) - 1)] / np.maximum(count, 1), np.nan)
    ok = np.flatnonzero(prec >= target_precision)
    return float(cand[ok[0]]) if len(ok) else None


def _run_at(curve: Curve, scores: np.ndarray, same: np.ndarray, value: float) -> tuple:
    """Ends of the run of labelled scores fitted at ``value``, its 'same' answers and all its answers."""
    on = curve.p == value
    a, b = float(curve.x[on][0]), float(curve.x[on][-1])
    inside = (scores >= a) & (scores <= b)
    return a, b, int(same[inside].sum()), int(inside.sum())


def bootstrap_cutoff(scores: np.ndarray, same: np.ndarray, pop_scores: np.ndarray, target_precision: Optional[float],
                     n_boot: int = 300, seed: int = 0) -> tuple:
    """Percentile interval (2.5 %, 97.5 %) of the cutoff over label resamples, and the share that flipped."""
    rng = np.random.default_rng(seed)
    n = len(scores)
    idx = rng.integers(0, n, size=(n_boot, n))
    cuts = []
    s = None if pop_scores is None else np.sort(np.asarray(pop_scores, dtype=np.float64))
    for row in idx:
        c = _cutoff(fit_curve(scores[row], same[row]), s, target_precision)
        if c is not None:
            cuts.append(c)
    if not cuts:
        return None, 0.0
    cuts = np.asarray(cuts)
    return (float(np.quantile(cuts, 0.025)), float(np.quantile(cuts, 0.975))), len(cuts) / n_boot


@dataclass
class FitResult:
    """A fitted cutoff with its evidence (see :func:`fit`).

    ``status`` is the one verdict on whether the labels support the cutoff: :data:`sibscan.verdict.cutoffrule.SUPPORTED`
    ("ok") or why not; ``asks`` are the score ranges ``advice`` names, each holding at least its ``n``
    unlabelled pairs (:meth:`.advice.Unlabelled.ask`).
    """

    cutoff: Optional[float]
    interval: Optional[tuple]
    rule: str
    status: str
    advice: List[str] = field(default_factory=list)
    curve: Optional[Curve] = None
    flip_share: float = 0.0
    asks: List[Ask] = field(default_factory=list)


def fit(scores: np.ndarray, same: np.ndarray, pop_scores: np.ndarray, *, lo: float,
        target_precision: Optional[float] = None,
        min_per_side: int = 3, min_flip_share: float = 0.8, n_boot: int = 300, seed: int = 0,
        unlabelled: Optional[np.ndarray] = None) -> FitResult:
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
        The rule must find a cutoff in at least this share of bootstrap resamples.  (A wide interval in
        score units is no reason to refuse a cutoff: a gap with no pairs in it is wide and harmless;
        the rate's interval says how much the uncertainty matters.)
    unlabelled : ndarray of shape (u,), optional
        Scores of the population's pairs with no answer yet, which the advice may name (default:
        ``pop_scores`` less the labelled ``scores``; a caller that knows skipped pairs passes its own).
    """
    scores = np.asarray(scores, dtype=np.float64)
    same = np.asarray(same, dtype=bool)
    rule = RULE if target_precision is None else precision_rule(target_precision)
    n_same, n_diff = int(same.sum()), int((~same).sum())
    if n_same + n_diff == 0:
        return FitResult(None, None, rule, "no labels yet",
                         ["label pairs (sibscan calibrate --ui web or --ui terminal); the candidate range starts at "
                          f"{fmt.score(lo)}"])
    open_ = Unlabelled(unlabelled) if unlabelled is not None else Unlabelled.from_population(pop_scores, scores)
    asks: List[Ask] = []

    def ask(n: int, a: float, b: float, widen: str = "down") -> Optional[str]:
        """The words of advice to label about ``n`` pairs scoring ``a`` to ``b`` that the scan holds (None: none
        left)."""
        got = open_.ask(n, a, b, widen)
        if got is None:
            return None
        if any((x.lo, x.hi) == (got.lo, got.hi) for x in asks):  # both sides short of answers can ask for one range
            return f"the pairs scoring {fmt.span(got.lo, got.hi)} named above serve here too"
        asks.append(got)
        return got.phrase

    curve = fit_curve(scores, same)
    cutoff = find_cutoff(curve, pop_scores, target_precision)
    problems: List[str] = []
    advice: List[str] = []
    top_diff = float(scores[~same].max()) if n_diff else lo
    low_same = float(scores[same].min()) if n_same else 1.0
    run = min_same_run()
    if n_same < min_per_side:
        problems.append(f"too few 'same' labels ({n_same}; need at least {min_per_side})")
        if n_same and n_diff:  # the normal case of a clean set: its few siblings may be all there are
            found = (f"the labels found only {n_same} sibling{'s' if n_same > 1 else ''} ('same' answers, scoring "
                     f"{fmt.span(low_same, float(scores[same].max()))}), and a cutoff needs a run of at least {run} "
                     "'same' answers: ")
            more = ask(2 * (min_per_side - n_same) + 5, top_diff, 1.0)
            advice.append(found + (f"{more} to find more; if the scan holds no more siblings there, no cutoff can be "
                                   "fitted (the sibling rate is still estimated from the labels)" if more else
                                   f"{open_.exhausted(1.0, 'down')} already, so the scan holds no more to find: no "
                                   "cutoff can be fitted (the sibling rate is still estimated from the labels)"))
    if n_diff < min_per_side:
        problems.append(f"too few 'different' labels ({n_diff}; need at least {min_per_side})")
        more = ask(2 * (min_per_side - n_diff) + 5, min(lo, low_same), low_same)
        advice.append(more or f"{open_.exhausted(low_same, 'down')} already: no more pairs below the 'same' "
                              "answers can be answered 'different', so no flip can be placed")
    if cutoff is None:
        if n_diff == 0:
            # the advice for too few 'different' answers says where to label
            problems.append(f"no flip observed: every labelled pair down to score {fmt.score(low_same)} was 'same'")
        elif n_same == 0:
            problems.append(f"no flip observed: every labelled pair up to score {fmt.score(top_diff)} was 'different'")
            more = ask(2 * max(min_per_side - n_same, 1) + 5, top_diff, 1.0)
            advice.append(f"{more} (if the scan has none, no siblings were found above chance)" if more else
                          f"{open_.exhausted(1.0, 'down')} already and none was 'same': no siblings were found above "
                          "chance")
        elif curve.lower[0] >= 0.5:
            # the lowest run of answers already bounds P(same) at 0.5 or more: the flip lies below every
            # labelled score, so only answers below the lowest one can place it (more above never can)
            x0, b, k, m = _run_at(curve, scores, same, curve.p[0])  # the run starts at the lowest labelled score
            problems.append(f"no flip observed at or below the lowest labelled score {fmt.score(x0)}: P(same) is high "
                            f"already there (its {BOUND} is {curve.lower[0]:.2f}; the lowest run of answers, scoring "
                            f"{fmt.span(x0, b)}, holds {k} 'same' of {m}), so "
                            "no answer below it says where P(same) falls under 0.5")
            if n_diff >= min_per_side:  # with fewer, the advice above already points below the lowest 'same'
                more = ask(10, min(lo, x0), x0)
                advice.append(f"{more} (below the lowest labelled one; pairs above it cannot place the cutoff)" if more
                              else f"{open_.exhausted(x0, 'down')} already: the flip lies below every pair the scan "
                                   "scores, so no cutoff can be placed")
        elif target_precision is not None and (curve.lower >= 0.5).any():
            problems.append(f"not enough labels: no cutoff reaches precision {target_precision:g} by the {BOUND} (with "
                            f"no 'different' answer among them, {min_same_run(target_precision)} 'same' answers above "
                            "the cutoff are needed)")
            left = open_.count(low_same, 1.0)
            advice.append(f"label more of the {fmt.plural(left, 'unlabelled pair')} scoring above "
                          f"{fmt.score(low_same)}, or lower --target-precision" if left else
                          f"every pair scoring above {fmt.score(low_same)} is labelled already: lower "
                          "--target-precision")
        else:
            need = min_same_run(max(0.5, target_precision or 0.5))
            # the run of answers with the highest P(same): more answers there tighten its bound
            a, b, k, m = _run_at(curve, scores, same, curve.p[-1])
            problems.append(f"not enough labels: no score from which P(same)'s {BOUND} reaches "
                            f"{0.5 if target_precision is None else target_precision:g} (that needs a run of at least "
                            f"{need} 'same' answers with few 'different' among them; the run with the highest P(same), "
                            f"scoring {fmt.span(a, b)}, holds {k} 'same' of {m} answers)")
            if n_same >= min_per_side:  # with fewer, the advice above says where to look
                # from the highest 'different' up, or from the run's start when that 'different' is inside it
                advice.append(ask(10, min(a, top_diff), 1.0) or f"{open_.exhausted(1.0, 'down')} already: the scores "
                              "do not separate 'same' from 'different' well enough for the rule")
    # the one verdict on whether the labels support the cutoff (sibscan.verdict.cutoffrule.supported reads it)
    status = "; ".join(problems) if problems else SUPPORTED
    if cutoff is None:
        return FitResult(None, None, rule, status, advice, curve, asks=asks)
    interval, flip_share = bootstrap_cutoff(scores, same, pop_scores, target_precision, n_boot=n_boot, seed=seed)
    if not problems and flip_share < min_flip_share:
        status = (f"the rule finds a cutoff in only {flip_share:.0%} of bootstrap resamples, under the "
                  f"{min_flip_share:.0%} it needs (the answers flip too seldom)")
        if interval is not None:  # around the cutoff's interval, where the answers would firm it up
            advice.append(ask(10, *interval, widen="both") or f"{open_.exhausted(1.0, 'both')} already: more answers "
                          "cannot firm the cutoff up, as the scores do not separate 'same' from 'different' well "
                          "enough here (a verifier that does, 'sibscan scan --verifier', or a cutoff given by hand, "
                          "--cutoff X, would)")
    return FitResult(cutoff, interval, rule, status, advice, curve, flip_share, asks)
