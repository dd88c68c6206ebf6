"""Pieces of the report that are pure functions of arrays: sweep, histogram, pairs, conflicts.

Each takes plain arrays (one entry per test item, or per pair) so that it can be checked against a
brute-force computation in the tests.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..kernels.rowhash import fingerprint_keys
from ..verdict.pairdecision import DIFFERENT, SAME
from ..stats import finite_or_none

__all__ = ["sweep", "histogram", "pair_records", "label_conflicts", "baseline_scores"]


def sweep(score: np.ndarray, exact: np.ndarray, cutoffs: np.ndarray, correct: Optional[np.ndarray] = None) -> dict:
    """Sibling rate (and accuracy gap) at every cutoff.

    Parameters
    ----------
    score : ndarray of shape (n,)
        Each test item's best deciding score against train (NaN where it has no neighbour).
    exact : ndarray of shape (n,), bool
        Exact twins: siblings at every cutoff.
    cutoffs : ndarray of shape (m,)
    correct : ndarray of shape (n,), bool, optional

    Returns
    -------
    dict of lists of length m
        ``cutoff, n_sibling, sibling_rate`` and with ``correct``: ``accuracy_sibling,
        accuracy_rest, gap`` (sibling minus rest; None where a side is empty).
    """
    n = len(score)
    eff = np.where(np.isnan(score), -np.inf, score).astype(np.float64)
    eff[np.asarray(exact, bool)] = np.inf
    order = np.argsort(eff, kind="stable")
    sorted_eff = eff[order]
    below = np.searchsorted(sorted_eff, cutoffs, side="left")  # items with eff < cutoff
    n_sib = n - below
    out = {"cutoff": [float(c) for c in cutoffs], "n_sibling": n_sib.tolist(),
           "sibling_rate": (n_sib / n).tolist() if n else [None] * len(cutoffs)}
    if correct is not None:
        c = np.asarray(correct, bool)[order].astype(np.int64)
        cum = np.concatenate([[0], np.cumsum(c)])
        total = cum[-1]
        rest_correct = cum[below]
        sib_correct = total - rest_correct
        with np.errstate(invalid="ignore", divide="ignore"):
            acc_sib = np.where(n_sib > 0, sib_correct / np.maximum(n_sib, 1), np.nan)
            acc_rest = np.where(below > 0, rest_correct / np.maximum(below, 1), np.nan)
        out["accuracy_sibling"] = [finite_or_none(v) for v in acc_sib]
        out["accuracy_rest"] = [finite_or_none(v) for v in acc_rest]
        out["gap"] = [finite_or_none(v) for v in acc_sib - acc_rest]
    return out


def baseline_scores(baseline: Optional[dict]):
    """The random-pair baseline as ``(edges, counts)`` or ``(scores, None)``, whichever it stores.

    Accepts the layouts a baseline may carry: ``histogram: {edges, counts}``, or a sample of
    scores under ``scores`` / ``sample``.  Returns ``(None, None)`` when there is neither.
    """
    if not baseline:
        return None, None
    hist = baseline.get("histogram")
    if isinstance(hist, dict) and hist.get("edges") is not None and hist.get("counts") is not None:
        return np.asarray(hist["edges"], float), np.asarray(hist["counts"], float)
    for key in ("scores", "sample", "similarities"):
        if baseline.get(key) is not None:
            s = np.asarray(baseline[key], float)
            return s[np.isfinite(s)], None
    return None, None


def histogram(score: np.ndarray, baseline: Optional[dict], n_bins: int = 40, *, cutoff: Optional[float] = None,
              n_body: int = 8) -> dict:
    """Histogram of each test item's best score, with the baseline on the same bins as densities.

    The bins are fine where the test items' scores are (from a little below their 1st percentile,
    or the cutoff, to 1) and coarse over the rest of the range (``n_body`` bins over the random-pair
    baseline's body), so a plot can spend its width where the decision is made.

    Returns ``{edges (uneven, n+1), nn_counts (n), nn_density, baseline_density or None, focus}``;
    densities integrate to 1 over the bins (``sum(density * diff(edges)) == 1``) so that the two
    curves share one axis; ``focus`` is the edge where the fine bins start (None: all are even).
    """
    s = score[np.isfinite(score)]
    b_edges, b_counts = baseline_scores(baseline)
    lo_candidates = [float(s.min())] if s.size else []
    if b_edges is not None and b_counts is None and b_edges.size:
        lo_candidates.append(float(b_edges.min()))
    elif b_edges is not None:
        lo_candidates.append(float(b_edges[0]))
    lo = min(lo_candidates) if lo_candidates else 0.0
    lo = max(-1.0, np.floor(lo * 20) / 20)
    starts = ([float(np.quantile(s, 0.01))] if s.size else []) + ([float(cutoff)] if cutoff is not None else [])
    focus = np.floor((min(starts) - 0.02) * 20) / 20 if starts else lo
    if starts and focus - lo >= 0.2 * (1.0 - lo) and focus < 1.0:
        edges = np.concatenate([np.linspace(lo, focus, n_body + 1)[:-1], np.linspace(focus, 1.0, n_bins + 1)])
    else:
        focus = None
        edges = np.linspace(lo, 1.0, n_bins + 1)
    counts, _ = np.histogram(np.clip(s, lo, 1.0), bins=edges)
    width = np.diff(edges)
    dens = counts / max(counts.sum(), 1) / width
    base = None
    if b_edges is not None:
        if b_counts is None:
            bc, _ = np.histogram(np.clip(b_edges, lo, 1.0), bins=edges)
        else:
            # re-bin a stored histogram by its bin centres
            centres = (b_edges[:-1] + b_edges[1:]) / 2
            bc, _ = np.histogram(np.clip(centres, lo, 1.0), bins=edges, weights=b_counts)
        base = (bc / max(bc.sum(), 1e-300) / width).tolist()
    return {"edges": edges.tolist(), "nn_counts": counts.tolist(), "nn_density": dens.tolist(),
            "baseline_density": base, "focus": None if focus is None else float(focus)}


def pair_records(rows: np.ndarray, top, test, train, labels=None) -> list:
    """Pair dicts for rows ``rows`` of a top-1 test->train :class:`~sibscan.store.scandir.Neighbours`, with the
    pair's hand label (``labels``, a :class:`sibscan.verdict.pairdecision.PairLabels`: "same", "different" or None)."""
    rows = np.asarray(rows, np.int64)
    said = (labels.lookup(top["query_id"][rows], top["neighbour_id"][rows]) if labels is not None and len(rows)
            else np.zeros(len(rows), np.int8))
    out = []
    for r, hand in zip(rows, said):
        qi, ni = int(top["query_index"][r]), int(top["neighbour_index"][r])
        tl = None if test.labels is None else str(test.labels[qi])
        rl = None if train.labels is None else str(train.labels[ni])
        out.append({
            "test_id": str(top["query_id"][r]), "test_index": qi,
            "train_id": str(top["neighbour_id"][r]), "train_index": ni,
            "score": finite_or_none(top["score"][r]), "similarity": finite_or_none(top["similarity"][r]),
            "verified": finite_or_none(top["verified"][r]), "exact": bool(top["exact"][r]),
            "detail": str(top["detail"][r]), "test_label": tl, "train_label": rl,
            "label_match": None if tl is None or rl is None else tl == rl,
            "hand_label": {SAME: "same", DIFFERENT: "different"}.get(int(hand)),
        })
    return out


def label_conflicts(groups, max_groups: int = 50, max_members: int = 20) -> dict:
    """Sibling groups whose members carry more than one label, listed and counted per class.

    Parameters
    ----------
    groups : sibscan.groups.GroupTable
    """
    labels = groups.labels
    has = labels != ""
    g, lab = groups.group[has], labels[has]
    if g.size == 0:
        return {"n_groups": 0, "n_items": 0, "per_class": {}, "groups": [], **_group_facts(groups)}
    classes, code = np.unique(lab, return_inverse=True)
    pairs = np.unique(np.stack([g, code.ravel()], axis=1), axis=0)
    n_labels = np.bincount(pairs[:, 0], minlength=groups.n_groups)
    bad = n_labels > 1
    bad_pairs = pairs[bad[pairs[:, 0]]]
    per_class = np.bincount(bad_pairs[:, 1], minlength=len(classes))
    sizes = np.bincount(groups.group, minlength=groups.n_groups)
    bad_ids = np.flatnonzero(bad)
    bad_ids = bad_ids[np.argsort(-sizes[bad_ids], kind="stable")]
    member_rows = np.flatnonzero(bad[groups.group])
    listed = []
    by_group = member_rows[np.argsort(groups.group[member_rows], kind="stable")]
    starts = np.searchsorted(groups.group[by_group], bad_ids)
    for gid, st in zip(bad_ids[:max_groups], starts[:max_groups]):
        rows = by_group[st: st + sizes[gid]]
        exact = None
        if groups.fingerprints is not None:
            exact = bool(len(np.unique(fingerprint_keys(groups.fingerprints[rows]))) == 1)
        listed.append({
            "group": f"g{gid}", "size": int(sizes[gid]), "exact": exact,
            "labels": sorted({str(x) for x in labels[rows] if x != ""}),
            "has_test": bool((groups.split[rows] == "test").any()),
            "members": [{"split": str(groups.split[r]), "id": str(groups.ids[r]), "label": str(labels[r])}
                        for r in rows[:max_members]],
        })
    return {
        "n_groups": int(bad.sum()), "n_items": int(sizes[bad].sum()), **_group_facts(groups),
        "per_class": {str(c): int(k) for c, k in zip(classes, per_class) if k},
        "groups": listed,
    }


def _group_facts(groups) -> dict:
    """How the groups were made, the largest one and why it holds together, and the sibling pairs
    left between groups (see :mod:`sibscan.groups`)."""
    return {"linkage": groups.linkage, "largest_group": groups.largest(), "pairs_between_groups": groups.dropped}
