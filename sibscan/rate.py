"""The sibling rate: one estimator and one headline, read by every output.

A sibling rate is the share of test items that have a training sibling — a copy or near copy that a
person would call "the same" under the written definition.  It is computed here and nowhere else:

* :func:`estimate_rate` — the calibrated estimate and its 95 % interval from the deciding scores of
  every test item's nearest training item and a person's same/different answers on some of them
  (``sibscan calibrate`` calls it and records the result in ``cutoff.json``);
* :func:`headline` — the ``headline`` object of ``report.json`` (and of ``sibscan calibrate --json``,
  ``sibscan check --json``, ``Scan.rate``): the state, the estimate and interval, the cutoff and
  its rule, the count flagged at the cutoff (a separate, named figure), the definition of "same";
* :func:`sentence` — the headline as one sentence, printed by every command and report.

States: ``not_assessed`` (no cutoff: only exact twins are known; no rate is printed),
``baseline_only`` (a cutoff without hand labels of this data: the share flagged at it, no interval),
``calibrated`` (hand labels: the estimated rate with its interval).

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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from . import fmt
from .cutoff import Cutoff
from .pairdecision import NONE, SAME, flag_items, labels_phrase, pair_is_sibling, row_labels
from .stats import CUTOFF_BOUND, finite_or_none

__all__ = ["LEVEL", "STATES", "RateEstimate", "TestScores", "best_scores", "estimate_rate", "flagged_mask", "headline",
           "narrow_enough", "no_interval_reason", "sentence", "test_scores"]

STATES = ("not_assessed", "baseline_only", "calibrated")
LEVEL = 0.95


# ------------------------------------------------------------------------------------------------
# what the outputs count: each test item's best deciding score against train, and exact twins
# ------------------------------------------------------------------------------------------------
@dataclass
class TestScores:
    """Each test item's best deciding score against train, and whether it has an exact train twin.

    Attributes
    ----------
    score : ndarray of shape (n_test,), float32
        NaN where the item has no train neighbour.
    exact : ndarray of shape (n_test,), bool
        Same fingerprint as a train item, or a test->train neighbours row marked exact.
    top : Neighbours
        The top-1 test->train rows (one per test item that has a neighbour).
    rows : Neighbours, optional
        Every test->train row: the pairs :meth:`flags` decides (None: each item's best score alone).
    labels : PairLabels, optional
        People's answers about pairs (:func:`sibscan.calibration.labelfile.scan_labels`).
    row_label : ndarray of shape (len(rows),), int8, optional
        The label of each row of ``rows`` (looked up from ``labels`` once, on the first :meth:`flags`).
    nb_label : ndarray, int8, optional
        With :meth:`from_neighbours`: the label of each row of the whole neighbours table it was built
        from (the train -> test count and the sibling groups read the same answers, not a second lookup).
    nb : Neighbours, optional
        With :meth:`from_neighbours`: that table (for :meth:`with_labels`).
    """

    score: np.ndarray
    exact: np.ndarray
    top: object
    rows: object = None
    labels: object = None
    row_label: Optional[np.ndarray] = None
    nb_label: Optional[np.ndarray] = None
    nb: object = None
    _flags: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.score)

    @staticmethod
    def from_neighbours(score: np.ndarray, exact: np.ndarray, top, nb, labels=None) -> "TestScores":
        """The test->train rows of ``nb`` with their labels; a pair labelled "same" that was found only from
        the train side (a train -> test row) is added as a test -> train row, so that it flags its test
        item here as it links the pair in the sibling groups and counts in the train -> test direction."""
        from .neighbourtable import Neighbours

        tt = nb.mask("test", "train")
        rows = nb.select(tt)
        if labels is None or not len(labels):
            return TestScores(score, exact, top, rows=rows, labels=labels, row_label=np.zeros(len(rows), np.int8),
                              nb_label=np.zeros(len(nb), np.int8), nb=nb)
        lab = row_labels(nb, labels)
        row_label = lab[tt]
        back = nb.mask("train", "test") & (lab == SAME)
        if back.any():
            flip = {"query_split": "neighbour_split", "query_index": "neighbour_index", "query_id": "neighbour_id"}
            flip.update({v: k for k, v in flip.items()})
            b = nb.select(back)
            rows = Neighbours.concat([rows, Neighbours({flip.get(k, k): v for k, v in b.columns.items()})])
            row_label = np.concatenate([row_label, lab[back]])
        return TestScores(score, exact, top, rows=rows, labels=labels, row_label=row_label, nb_label=lab, nb=nb)

    def with_labels(self, labels) -> "TestScores":
        """The same scores with other answers deciding the pairs (``labels``: a PairLabels)."""
        if self.nb is not None:
            return TestScores.from_neighbours(self.score, self.exact, self.top, self.nb, labels)
        return TestScores(self.score, self.exact, self.top, self.rows, labels)

    def flags(self, cutoff: Optional[float]):
        """The items flagged at ``cutoff`` by :func:`sibscan.pairdecision.flag_items` (labelled pairs by
        their labels, the rest by score): a :class:`sibscan.pairdecision.Flags`, decided once per cutoff
        (the report, its headline and the per-item table read the same one)."""
        if cutoff in self._flags:
            return self._flags[cutoff]
        if self.rows is None:  # one pair per item: its best score
            qi = np.flatnonzero(np.isfinite(self.score))
            out = flag_items(qi, self.score[qi], np.full(len(qi), NONE, np.int8), self.exact, cutoff)
        else:
            if self.row_label is None:
                r = self.rows
                self.row_label = (self.labels.lookup(r["query_id"], r["neighbour_id"]) if self.labels is not None
                                  else np.zeros(len(r), np.int8))
            out = flag_items(self.rows["query_index"], self.rows["score"], self.row_label, self.exact, cutoff)
        self._flags[cutoff] = out
        return out


def best_scores(nb, query_split: str, neighbour_split: str, n: int) -> tuple:
    """Each query's best deciding score (NaN where none), exact flags from the neighbours rows, the
    top-1 rows, and whether the direction has any rows at all.

    Returns
    -------
    (ndarray of shape (n,) float32, ndarray of shape (n,) bool, Neighbours, bool)
    """
    top = nb.top1(query_split, neighbour_split)
    # float32 like the score column: a cutoff of 0.95 then matches a stored 0.95 (NEP 50 keeps the
    # comparison in float32)
    score = np.full(n, np.nan, np.float32)
    score[top["query_index"]] = top["score"]
    exact = np.zeros(n, bool)
    sub = nb.select(nb.mask(query_split, neighbour_split) & nb["exact"].astype(bool))
    exact[sub["query_index"]] = True
    return score, exact, top, bool(nb.mask(query_split, neighbour_split).any())


def test_scores(scan_dir, fp_train: Optional[np.ndarray] = None, fp_test: Optional[np.ndarray] = None,
                neighbours=None, n_test: Optional[int] = None, labels=None) -> TestScores:
    """The test->train :class:`TestScores` of a scan directory (what is not given is read from it);
    ``labels`` (:class:`sibscan.pairdecision.PairLabels`) decide the pairs they answer."""
    from .kernels.rowhash import fingerprint_membership
    from .scandir import ScanDir, load_items

    sd = ScanDir(scan_dir)
    if fp_train is None or fp_test is None:
        fp_train, fp_test = load_items(sd.path, "train")[1], load_items(sd.path, "test")[1]
    if n_test is None:
        n_test = len(fp_test) if fp_test is not None else len(sd.items("test"))
    nb = sd.neighbours() if neighbours is None else neighbours
    score, exact, top, _ = best_scores(nb, "test", "train", n_test)
    if fp_train is not None and fp_test is not None:
        exact |= fingerprint_membership(fp_test, fp_train)
    return TestScores.from_neighbours(score, exact, top, nb, labels)


def flagged_mask(score: np.ndarray, exact: np.ndarray, cutoff: Optional[float]) -> np.ndarray:
    """Items at ``cutoff`` by score alone: exact twins, and items whose score is at or above it (compared
    in the score's dtype, float32 for a scan); without a cutoff only exact twins.  What the outputs flag
    is :meth:`TestScores.flags` (labelled pairs decided by their labels); this is its unlabelled case."""
    score = np.asarray(score)
    return np.asarray(exact, bool) | pair_is_sibling(score, np.full(score.shape, NONE, np.int8), cutoff)


# ------------------------------------------------------------------------------------------------
# the headline
# ------------------------------------------------------------------------------------------------
def _count(mask: np.ndarray) -> dict:
    n, k = int(mask.size), int(mask.sum())
    return {"count": k, "n": n, "rate": k / n if n else None}


def narrow_enough(estimate: Optional[float], lo: Optional[float], hi: Optional[float]) -> Optional[bool]:
    """Whether an interval is narrow enough to quote: half width <= max(0.5 pp, 25 % of the estimate)."""
    if estimate is None or lo is None or hi is None:
        return None
    return (hi - lo) / 2 <= max(0.005, 0.25 * estimate) + 1e-12


def _rule_phrase(rule: Optional[str]) -> str:
    """How the cutoff was chosen, in words (cutoff.json's ``rule``; "P(same) = 0.5" is the point-estimate
    rule of calibrations fitted before the lower bound, kept readable)."""
    if not rule or rule == "P(same) = 0.5":
        return "where hand labels flip from different to same"
    if rule.startswith("P(same) >= 0.5"):
        return f"the lowest score from which P(same) of the hand labels, by its {CUTOFF_BOUND}, is 0.5 or more"
    return f"the lowest reaching {rule}" if rule.startswith("precision") else rule


def headline(cutoff: Cutoff, scores: TestScores, *, baseline: Optional[dict] = None, n_train: Optional[int] = None,
             definition: Optional[str] = None) -> dict:
    """The headline object: what every output states as the sibling rate (test -> train).

    Parameters
    ----------
    cutoff : Cutoff
        The cutoff in use (``sibscan.cutoff.resolve_cutoff``); a calibrated one carries the
        calibration's estimate in its evidence.
    scores : TestScores
    baseline : dict, optional
        The random-pair baseline, for the expected number of chance siblings at the cutoff.
    n_train : int, optional
    definition : str, optional
        The written definition of "same" (a calibration's own wins).

    Returns
    -------
    dict
        ``{state, estimate, lo, hi, level, n_labels, cutoff, definition, direction, n, score,
        cutoff_source, cutoff_rule, flagged {count, n, rate} or None, exact_twins {count, n, rate},
        expected_chance_siblings, chance_extrapolated, status, narrow_enough, note, text}``; rates
        are fractions, null where nothing was assessed.  Plain JSON types only.
    """
    from .calibration.baseline import expected_chance_siblings, extrapolated

    ev = cutoff.evidence or {}
    n = len(scores)
    exact = _count(np.asarray(scores.exact, bool))
    est = ev.get("estimates") or {}
    rate = est.get("rate") or {}
    labels = ev.get("n_labels") or {}
    n_labels = int(labels.get("same", 0)) + int(labels.get("different", 0)) if labels else 0
    h = {"state": "not_assessed", "estimate": None, "lo": None, "hi": None, "level": LEVEL, "n_labels": 0,
         "cutoff": finite_or_none(cutoff.value), "definition": ev.get("definition") or definition,
         "direction": "test_to_train", "n": n, "score": ev.get("score"), "cutoff_source": cutoff.kind,
         "cutoff_rule": None, "flagged": None, "exact_twins": exact, "expected_chance_siblings": None,
         "chance_extrapolated": None, "status": ev.get("status"), "narrow_enough": None, "note": ev.get("note"),
         "decided_by_labels": None, "n_answers": 0}
    if cutoff.value is not None:
        fl = scores.flags(cutoff.value)
        flagged = _count(fl.flagged)
        h["flagged"] = flagged
        h["decided_by_labels"] = fl.decided()
        h["n_answers"] = len(scores.labels) if scores.labels is not None else 0
        if baseline is not None and n_train:
            h["expected_chance_siblings"] = finite_or_none(expected_chance_siblings(baseline, cutoff.value, n_train, n))
            h["chance_extrapolated"] = extrapolated(baseline, cutoff.value)
        if cutoff.kind == "calibrated" and ev.get("mismatches"):
            which = f"the calibration in {ev['calibration']}" if ev.get("calibration") else "the calibration"
            forced = (f"{which} was made for {'; '.join(ev['mismatches'])} and applied with --force: "
                      "its cutoff is used, its rate estimate is not this data's")
            # added to the evidence's note (why the scan's own calibration is not used), never in its place
            h.update(state="baseline_only", estimate=flagged["rate"], cutoff_rule="calibrated on other data",
                     note="; ".join(n for n in (ev.get("note"), forced) if n))
        elif cutoff.kind == "calibrated" and n_labels:
            triple = [rate.get("lo"), rate.get("estimate"), rate.get("hi")] if rate else est.get("sibling_rate")
            lo, mid, hi = triple if triple else (None, None, None)
            h.update(state="calibrated", estimate=finite_or_none(mid), lo=finite_or_none(lo), hi=finite_or_none(hi),
                     n_labels=n_labels, cutoff_rule=_rule_phrase(ev.get("rule")))
            h["narrow_enough"] = narrow_enough(h["estimate"], h["lo"], h["hi"])
        else:
            h.update(state="baseline_only", estimate=flagged["rate"],
                     cutoff_rule="given by hand" if cutoff.kind == "uncalibrated" else "recorded by the scan")
    h["text"] = sentence(h)
    return h


def _score_name(kind: Optional[str]) -> str:
    return "verified similarity" if kind == "verified" else "similarity"


def no_interval_reason(h: dict) -> str:
    """Why a ``baseline_only`` headline has no interval, in words: hand answers may decide pairs here
    (the scan's own ``labels.jsonl``) while the cutoff is not a calibration of this data."""
    return "no calibrated cutoff of this data" if h.get("n_answers") else "no hand labels of this data"


def sentence(h: dict) -> str:
    """The headline as one sentence (no final full stop), the same in every output."""
    n = h["n"]
    ex = h["exact_twins"]
    if h["state"] == "not_assessed":
        return (f"sibling rate not assessed (no cutoff: label pairs with 'sibscan calibrate SCAN_DIR'); "
                f"exact twins: {ex['count']:,} of {n:,} test items ({fmt.pct(ex['rate'])})")
    fl = h["flagged"]
    at = f"{_score_name(h['score'])} ≥ {fmt.score(h['cutoff'])}"
    said = labels_phrase(h.get("decided_by_labels"))
    said = f" ({said})" if said else ""
    if h["state"] == "baseline_only":
        why = h.get("cutoff_rule") or "not calibrated"
        return (f"{fl['count']:,} of {n:,} test items ({fmt.pct(fl['rate'])}) flagged at {at}{said} ({why}; "
                f"{no_interval_reason(h)}, so no sibling-rate interval: calibrate with 'sibscan calibrate SCAN_DIR')")
    iv = f"{h['level']:.0%} interval {fmt.pct(h['lo'])} to {fmt.pct(h['hi'])}"
    return (f"sibling rate {fmt.pct(h['estimate'])} ({iv}) of {n:,} test items, calibrated with {h['n_labels']:,} "
            f"hand labels; flagged at {at}, {h['cutoff_rule']}: {fl['count']:,} ({fmt.pct(fl['rate'])}){said}")


# ------------------------------------------------------------------------------------------------
# the estimator
# ------------------------------------------------------------------------------------------------
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
