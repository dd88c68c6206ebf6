"""The figures of :mod:`benchmarks.quality`: a cutoff calibrated as a user would (an oracle answering
for the drawn pairs), and the detection figures at it and threshold-free (recall, precision, precision
at 1 % prevalence, ROC AUC, recall at precision >= 0.95), overall and per transform.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from benchmarks.planted import PlantedSet


PREVALENCE = 0.01


TARGET_PRECISION = 0.95


def calibrate(score: np.ndarray, nb: np.ndarray, same: np.ndarray, random_scores: np.ndarray, n_labels: int,
              seed: int = 0) -> Dict[str, object]:
    """Calibrate a cutoff as a user would, with an oracle answering for the drawn pairs.

    Parameters
    ----------
    score : ndarray of shape (n_test,)
        Deciding score of each test item's nearest train item.
    nb : ndarray of shape (n_test,), int
        That nearest train item.
    same : ndarray of shape (n_test,), bool
        The oracle: whether the pair is a planted sibling.
    random_scores : ndarray of shape (m,)
        Scores of random (test, train) pairs: the baseline whose 99th percentile bounds the draw.
    n_labels : int
        Pairs the oracle labels.

    Returns
    -------
    dict
        ``cutoff``, ``status`` (the fit's, or how a no-flip case was resolved), ``lo``, ``labelled``,
        ``labelled_same``, ``interval``; and ``_labelled``, the answers themselves (rows of ``score``
        drawn, and whether each was "same"), which the caller takes out with
        :func:`benchmarks.quality_pairs.take_labels` (they decide those pairs: :mod:`sibscan.verdict.pairdecision`).
        ``cutoff`` is None where a user gets none: the fit refused (its labels hold both answers but cannot support a
        cutoff, e.g. "not enough labels"); the figures at the cutoff are then not assessed
        (:func:`benchmarks.quality_pairs.not_assessed`). Only a true no-flip gets a convention: every labelled pair
        'same' flags down to the baseline's 99th percentile, every one 'different' flags nothing.
    """
    from sibscan.calibration.fit import fit
    from sibscan.calibration.sampling import Population, make_draw

    n = len(score)
    lo = float(np.quantile(random_scores, 0.99))
    pop = Population(query_id=np.array([f"te{i}" for i in range(n)]), neighbour_id=np.asarray(nb).astype(str),
                     query_index=np.arange(n, dtype=np.int64), neighbour_index=np.asarray(nb, np.int64),
                     score=np.asarray(score, np.float64), exact=np.zeros(n, bool), score_kind="similarity")
    out: Dict[str, object] = {"lo": lo, "labelled": 0, "labelled_same": 0, "interval": None,
                              "_labelled": (np.zeros(0, np.int64), np.zeros(0, bool))}
    if not (pop.score >= lo).any():
        out.update(cutoff=float(pop.score.max()) + 1e-6, status="no pair above the baseline's 99th percentile")
        return out
    rows = make_draw(pop, lo, n_labels, seed=seed).rows
    s, y = pop.score[rows], np.asarray(same, bool)[rows]
    out.update(labelled=int(len(rows)), labelled_same=int(y.sum()), _labelled=(np.asarray(rows, np.int64), y))
    res = fit(s, y, pop.score, lo=lo, n_boot=100, seed=seed)
    if res.cutoff is not None:
        out.update(cutoff=float(res.cutoff), status=res.status,
                   interval=None if res.interval is None else [float(v) for v in res.interval])
    elif y.all():
        # every labelled pair down to the baseline's tail was a sibling: a user flags all of them
        out.update(cutoff=lo, status="no flip, all labelled pairs same: cutoff at the baseline's 99th percentile")
    elif not y.any():
        # every labelled pair was 'different': a user gets no cutoff, and flags nothing
        out.update(cutoff=float(pop.score.max()) + 1e-6, status=f"no flip: {res.status}")
    else:
        # the labels hold both answers and the fit refused: a user gets no cutoff, so there are no figures at it
        out.update(cutoff=None, status=f"no cutoff (not assessed): {res.status}")
    return out


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC AUC of positive vs negative scores (ties count a half)."""
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    from scipy.stats import rankdata

    r = rankdata(np.concatenate([pos, neg]))
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _precision_at(tpr: float, flag_pos: float, fpr: float, prevalence: float = PREVALENCE) -> float:
    den = prevalence * flag_pos + (1 - prevalence) * fpr
    return float(prevalence * tpr / den) if den > 0 else float("nan")


def recall_at_precision(score: np.ndarray, correct: np.ndarray, planted: np.ndarray, target: float) -> float:
    """Best recall over all cutoffs whose flagged pile has precision >= ``target`` (oracle cutoff)."""
    order = np.argsort(-score, kind="stable")
    tp = np.cumsum(correct[order])
    prec = tp / np.arange(1, len(order) + 1)
    # a cutoff sits between distinct scores: evaluate only at the last index of each tie group
    s = score[order]
    last = np.r_[s[1:] != s[:-1], True]
    ok = last & (prec >= target)
    return float(tp[ok].max() / max(planted.sum(), 1)) if ok.any() else 0.0


def detection_metrics(ps: PlantedSet, flagged: np.ndarray, correct: np.ndarray,
                      score: Optional[np.ndarray] = None, hit: Optional[np.ndarray] = None) -> Dict[str, float]:
    """Recall, precision and precision at 1 % prevalence of a flagged set (and AUC when scores exist).

    ``flagged``, ``correct`` : bool arrays of shape (n_test,); ``correct`` = planted and paired with its source
    by its nearest pair (what AUC and recall at precision 0.95 rank).  ``hit`` : the flagged items whose
    flagging pair is their source (default ``flagged & correct``; another pair where labels set the nearest aside).
    """
    from scipy.stats import beta

    planted, clean = ps.planted, ~ps.planted
    tp = flagged & correct if hit is None else hit
    tpr = tp.sum() / max(planted.sum(), 1)
    fp, n_clean = int((flagged & clean).sum()), int(clean.sum())
    fpr = fp / max(n_clean, 1)
    # the benchmark holds a few hundred clean items: the false-alarm rate is known only to about
    # 1/n_clean, so the precision at 1 % prevalence also gets its pessimistic end (FPR's upper 95 % bound)
    fpr_hi = float(beta.ppf(0.975, fp + 1, n_clean - fp)) if fp < n_clean else 1.0
    flag_pos = (flagged & planted).sum() / max(planted.sum(), 1)
    out = {
        "recall": float(tpr),
        "precision": float(tp.sum() / flagged.sum()) if flagged.any() else float("nan"),
        "fpr": float(fpr),
        "fpr_upper95": fpr_hi,
        "precision_at_1pct": _precision_at(tpr, flag_pos, fpr),
        "precision_at_1pct_lower95": _precision_at(tpr, flag_pos, fpr_hi),
        "flagged": int(flagged.sum()),
    }
    if score is not None:
        out["auc"] = _auc(score[planted], score[clean])
        out["recall_at_p95"] = recall_at_precision(score, correct, planted, TARGET_PRECISION)
    return out


def per_transform(ps: PlantedSet, flagged: np.ndarray, correct: np.ndarray, score: np.ndarray,
                  hit: Optional[np.ndarray] = None) -> Dict[str, dict]:
    """Recall, AUC and precision at 1 % prevalence per planted transform (``hit`` as in :func:`detection_metrics`)."""
    clean = ~ps.planted
    fpr = (flagged & clean).sum() / max(clean.sum(), 1)
    hit = flagged & correct if hit is None else hit
    out = {}
    for t in dict.fromkeys(ps.transform[ps.planted].tolist()):
        m = ps.transform == t
        tpr = (hit & m).sum() / m.sum()
        out[t] = {"n": int(m.sum()), "recall": float(tpr), "auc": _auc(score[m], score[clean]),
                  "precision_at_1pct": _precision_at(tpr, (flagged & m).sum() / m.sum(), fpr)}
    return out
