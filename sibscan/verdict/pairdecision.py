"""Which pairs are siblings, and which test items are flagged: the one rule every output counts by.

A pair a person labelled is decided by the label: "different" is never a sibling, "same" always is,
at any score; a skipped (or undone) pair decides nothing.  An unlabelled pair is a sibling when its
deciding score is at or above the cutoff.  A test item is flagged when it is an exact twin or any of
its test -> train pairs is a sibling, so an item whose nearest pair was labelled "different" is
decided by its other pairs.  Without a cutoff near siblings are not assessed: only exact twins are
flagged and labels decide nothing.

Labels belong to pairs, not encoders: they are matched by item ids (test id, train id), so answers
given on another encoder's scan of the same data decide the same pairs here.  Answers recorded for
other data (another dataset fingerprint) decide nothing.

Report, check, split, ``Scan.rate`` and the calibration's printed counts read :func:`flag_items`
(the answers of a scan from :func:`sibscan.verdict.labelfile.scan_labels`); ``benchmarks.quality``
applies the same function to its simulated labels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

import numpy as np

__all__ = ["DIFFERENT", "Flags", "NONE", "PairLabels", "SAME", "flag_items", "labels_phrase", "latest_answers",
           "pair_is_sibling", "pair_key", "row_labels"]

#: a pair's label as a number: answered "same", answered "different", no answer (or skipped)
SAME, DIFFERENT, NONE = 1, -1, 0
_CODES = {"same": SAME, "different": DIFFERENT}


def pair_key(rec: dict) -> Tuple[str, str, str, str]:
    """The pair a label record is about, (query_split, query_id, neighbour_split, neighbour_id), with a
    test/train pair always in its test -> train orientation: an answer given from the train side is
    about the same pair, and a later record either way (an undo too) supersedes it."""
    q, n = str(rec.get("query_split", "test")), str(rec.get("neighbour_split", "train"))
    if (q, n) == ("train", "test"):
        return "test", str(rec["neighbour_id"]), "train", str(rec["query_id"])
    return q, str(rec["query_id"]), n, str(rec["neighbour_id"])


def latest_answers(records: Iterable[dict]) -> Dict[Tuple[str, str, str, str], dict]:
    """Each pair's effective record (:func:`pair_key`; records in file order): its latest answer, pairs
    whose latest record is an ``undo`` left out; dict order is the order of the latest answers.  The one
    reading of a labels file that calibrating (``LabelStore.current``) and deciding pairs
    (:meth:`PairLabels.from_records`) share."""
    cur: Dict[Tuple[str, str, str, str], dict] = {}
    for rec in records:
        key = pair_key(rec)
        cur.pop(key, None)  # re-insert so dict order = order of the latest answers
        if rec["label"] != "undo":
            cur[key] = rec
    return cur


def pair_is_sibling(score: np.ndarray, label: np.ndarray, cutoff: Optional[float]) -> np.ndarray:
    """The rule: a labelled pair by its label, an unlabelled one by ``score >= cutoff``.

    Parameters
    ----------
    score : ndarray of shape (m,)
        Deciding scores (NaN: never at the cutoff); compared in their own dtype (float32 for a scan,
        so a cutoff of 0.95 matches a stored 0.95).
    label : ndarray of shape (m,), int
        :data:`SAME`, :data:`DIFFERENT` or :data:`NONE` per pair.
    cutoff : float or None
        None: no cutoff, no pair is a sibling (near siblings are not assessed).

    Returns
    -------
    ndarray of shape (m,), bool
    """
    score = np.asarray(score)
    if cutoff is None:
        return np.zeros(score.shape, bool)
    label = np.asarray(label)
    return (label == SAME) | ((label != DIFFERENT) & (np.nan_to_num(score, nan=-np.inf) >= cutoff))


@dataclass(frozen=True)
class PairLabels:
    """People's answers about (test, train) pairs, keyed by item ids.

    Attributes
    ----------
    test_ids, train_ids : ndarray of shape (m,), str
    label : ndarray of shape (m,), int8
        :data:`SAME` or :data:`DIFFERENT` (skipped and undone pairs are left out).
    source : str or None
        Where they were read (a ``labels.jsonl``), for messages.
    """

    test_ids: np.ndarray
    train_ids: np.ndarray
    label: np.ndarray
    source: Optional[str] = None

    def __len__(self) -> int:
        return len(self.label)

    @staticmethod
    def empty() -> "PairLabels":
        return PairLabels(np.zeros(0, str), np.zeros(0, str), np.zeros(0, np.int8))

    @staticmethod
    def from_records(records: Iterable[dict], dataset_fingerprint: Optional[str] = None,
                     source: Optional[str] = None, keep_unmarked: bool = True) -> "PairLabels":
        """Each test -> train pair's latest answer in ``records`` (``labels.jsonl`` records in file order).

        An ``undo`` withdraws the pair's answer, a ``skip`` decides nothing; with ``dataset_fingerprint``,
        records made for other data are left out.  A record without a fingerprint (older files) is kept
        unless ``keep_unmarked`` is False: the file belongs to a calibration made for other data, where
        ids such as "0", "1" would name other items here.
        """
        kept = (rec for rec in records if dataset_fingerprint is None
                or rec.get("dataset_fingerprint") == dataset_fingerprint
                or (keep_unmarked and rec.get("dataset_fingerprint") is None))
        keys = [(k[1], k[3], _CODES[r["label"]]) for k, r in latest_answers(kept).items()
                if (k[0], k[2]) == ("test", "train") and r.get("label") in _CODES]
        return PairLabels(np.array([k[0] for k in keys], dtype=str), np.array([k[1] for k in keys], dtype=str),
                          np.array([k[2] for k in keys], np.int8), source)

    def lookup(self, test_ids: np.ndarray, train_ids: np.ndarray) -> np.ndarray:
        """The label of each (test id, train id) pair, :data:`NONE` where unlabelled: int8 of shape (m,).

        Only the rows whose test id was labelled are matched pair by pair (a few hundred answers
        against a neighbours table of millions of rows: one ``isin`` over the table, then a small join).
        """
        test_ids, train_ids = _as_str(test_ids), _as_str(train_ids)
        out = np.zeros(len(test_ids), np.int8)
        if not len(self) or not len(test_ids):
            return out
        rows = np.flatnonzero(np.isin(test_ids, self.test_ids))
        if not len(rows):
            return out
        # ids joined by a separator no id holds (NUL): one sorted key array, one search
        mine = np.char.add(np.char.add(self.test_ids.astype(str), "\0"), self.train_ids.astype(str))
        order = np.argsort(mine, kind="stable")
        mine = mine[order]
        theirs = np.char.add(np.char.add(test_ids[rows], "\0"), train_ids[rows])
        pos = np.minimum(np.searchsorted(mine, theirs), len(mine) - 1)
        hit = mine[pos] == theirs
        out[rows[hit]] = self.label[order[pos[hit]]]
        return out


def row_labels(nb, labels: "PairLabels") -> np.ndarray:
    """The hand label of each neighbours row's pair, test -> train or train -> test (none within a split).

    The rows worth matching are found by item index: each labelled test id is looked up once per test
    item (an ``isin`` over n_test ids, not over every row), then rows are kept by an int64 mask and
    only those are matched pair by pair.

    Parameters
    ----------
    nb : sibscan.store.neighbourtable.Neighbours
        The neighbours table, shape (m,) per column.
    labels : PairLabels

    Returns
    -------
    ndarray of shape (m,), int8
    """
    out = np.zeros(len(nb), np.int8)
    if labels is None or not len(labels) or not len(nb):
        return out
    for q, other in (("test", "train"), ("train", "test")):
        m = np.flatnonzero((nb["query_split"] == q) & (nb["neighbour_split"] == other))
        if not len(m):
            continue
        side, far = ("query", "neighbour") if q == "test" else ("neighbour", "query")
        index = np.asarray(nb[f"{side}_index"][m], np.int64)
        ids = np.empty(int(index.max()) + 1, object)
        ids[index] = nb[f"{side}_id"][m]  # one id per test item (every row of an item holds the same id)
        seen = np.zeros(len(ids), bool)
        seen[index] = True
        labelled = np.zeros(len(ids), bool)
        labelled[seen] = np.isin(_as_str(ids[seen]), labels.test_ids)
        rows = m[labelled[index]]
        if len(rows):
            out[rows] = labels.lookup(nb[f"{side}_id"][rows], nb[f"{far}_id"][rows])
    return out


def _as_str(a) -> np.ndarray:
    """``a`` as a numpy string array (no copy when it is one already)."""
    a = np.asarray(a)
    return a if a.dtype.kind == "U" else a.astype(str)


@dataclass
class Flags:
    """Which items are flagged at a cutoff, and what the labels changed.

    Attributes
    ----------
    flagged : ndarray of shape (n,), bool
        Exact twin, or a sibling pair by :func:`pair_is_sibling`.
    by_score : ndarray of shape (n,), bool
        What the scores alone flag (exact twin, or a pair at or above the cutoff; a row that exists only
        because a label added it, ``flag_items``' ``added``, is not one the scores found).
    row : ndarray of shape (n,), int64
        The pair (a row of the rows given) that flags each flagged item: its highest-scoring sibling
        pair; -1 for items not flagged by a pair.
    nearest_label : ndarray of shape (n,), int8
        The label of each item's highest-scoring pair (:data:`NONE` where none).
    score_left, same : ndarray of shape (n,)
        The best score among each item's pairs not labelled "different" (NaN where none), and whether
        any of its pairs was labelled "same": ``flagged == exact | same | (score_left >= cutoff)`` at
        every cutoff, what a sweep over cutoffs counts (:meth:`flagged_at`).
    cutoff : float or None
    exact : ndarray of shape (n,), bool
        Exact twins (flagged at every cutoff).
    row_added : ndarray of shape (n,), bool
        Whether the pair in ``row`` is one a label added (a "same" pair only the train side found), at
        whatever score: what the item's "why" and :meth:`decided` call it.
    """

    flagged: np.ndarray
    by_score: np.ndarray
    row: np.ndarray
    nearest_label: np.ndarray
    score_left: np.ndarray
    same: np.ndarray
    cutoff: Optional[float]
    exact: np.ndarray
    row_added: np.ndarray

    @property
    def unflagged_by_labels(self) -> np.ndarray:
        """Items the scores flag that the labels do not: every pair of theirs at the cutoff labelled "different"."""
        return self.by_score & ~self.flagged

    @property
    def flagged_by_labels(self) -> np.ndarray:
        """Items the scores do not flag that the labels do, through a pair of their own below the cutoff
        labelled "same" (the pair shown for them, ``row``, is not one a label added)."""
        return self.flagged & ~self.by_score & ~self.row_added

    @property
    def flagged_from_train_side(self) -> np.ndarray:
        """Items the scores do not flag that the labels do, through a pair labelled "same" that only the
        train side found (``row`` is a row a label added; its score may be above the cutoff: the scores
        of this item's own candidates never saw it)."""
        return self.flagged & ~self.by_score & self.row_added

    def flagged_at(self, cutoff: float) -> np.ndarray:
        """What the same pairs and labels flag at another ``cutoff`` (a sweep, the interval's ends), without
        deciding every pair again: ``exact | same | score_left >= cutoff``; shape (n,), bool."""
        return self.exact | self.same | (np.nan_to_num(self.score_left, nan=-np.inf) >= cutoff)

    def decided(self) -> Optional[dict]:
        """``{above_cutoff_labelled_different, below_cutoff_labelled_same, train_side_labelled_same}`` (test
        items), None without a cutoff: ``flagged == by_score - above... + below... + train_side...``."""
        if self.cutoff is None:
            return None
        return {"above_cutoff_labelled_different": int(self.unflagged_by_labels.sum()),
                "below_cutoff_labelled_same": int(self.flagged_by_labels.sum()),
                "train_side_labelled_same": int(self.flagged_from_train_side.sum())}


def flag_items(query_index: np.ndarray, score: np.ndarray, label: np.ndarray, exact: np.ndarray,
               cutoff: Optional[float], added: Optional[np.ndarray] = None) -> Flags:
    """Flag ``n = len(exact)`` items from their pairs by :func:`pair_is_sibling`.

    Parameters
    ----------
    query_index : ndarray of shape (m,), int
        The item each pair belongs to (any order, any number per item).
    score : ndarray of shape (m,)
    label : ndarray of shape (m,), int
    exact : ndarray of shape (n,), bool
        Exact twins: flagged at every cutoff, whatever their pairs' labels.
    cutoff : float or None
    added : ndarray of shape (m,), bool, optional
        Pairs present only because a label added them (a "same" pair found from the other side): they
        decide ``flagged`` but not ``by_score``, which counts what the scores alone flag.
    """
    exact = np.asarray(exact, bool)
    n = len(exact)
    qi = np.asarray(query_index, np.int64)
    score = np.asarray(score)
    label = np.asarray(label, np.int8)
    sib = pair_is_sibling(score, label, cutoff)
    by = pair_is_sibling(score, np.zeros(len(score), np.int8), cutoff)
    if added is not None:
        by &= ~np.asarray(added, bool)
    flagged = exact | (np.bincount(qi[sib], minlength=n) > 0)
    by_score = exact | (np.bincount(qi[by], minlength=n) > 0)
    s = np.nan_to_num(score.astype(np.float64), nan=-np.inf)
    row = _best_row(qi, s, sib, n)
    nearest = _best_row(qi, s, np.ones(len(qi), bool), n)
    nearest_label = np.where(nearest >= 0, label[np.maximum(nearest, 0)] if len(label) else 0, NONE).astype(np.int8)
    left = label != DIFFERENT
    score_left = np.full(n, -np.inf)
    np.maximum.at(score_left, qi[left], s[left])
    score_left = np.where(np.isfinite(score_left), score_left, np.nan).astype(score.dtype if score.dtype.kind == "f"
                                                                               else np.float64)
    same = np.bincount(qi[label == SAME], minlength=n) > 0
    row_added = np.zeros(n, bool)
    if added is not None:
        row_added[row >= 0] = np.asarray(added, bool)[row[row >= 0]]
    return Flags(flagged, by_score, row, nearest_label, score_left, same, cutoff, exact, row_added)


def _best_row(qi: np.ndarray, s: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    """Per item, the kept row with the highest ``s`` (ties: the first row); -1 where none is kept."""
    out = np.full(n, -1, np.int64)
    rows = np.flatnonzero(keep)
    if len(rows):
        order = rows[np.lexsort((rows, -s[rows], qi[rows]))]
        first = np.ones(len(order), bool)
        first[1:] = qi[order[1:]] != qi[order[:-1]]
        out[qi[order[first]]] = order[first]
    return out


def labels_phrase(decided: Optional[dict], by: str = "by hand") -> str:
    """What the labels changed, in words ("" when nothing): the same in every output.  ``by``: who gave
    them (:func:`sibscan.labeller.by`)."""
    if not decided:
        return ""
    off, on = decided["above_cutoff_labelled_different"], decided["below_cutoff_labelled_same"]
    far = decided.get("train_side_labelled_same", 0)  # absent from records written before it was counted
    parts = []
    if off:
        parts.append(f"{off:,} test item{'s' if off != 1 else ''} above the cutoff labelled different {by} "
                     f"{'are' if off != 1 else 'is'} not flagged")
    if on:  # "it" only where the sentence has named the cutoff already
        what = "below it" if off else f"test item{'s' if on != 1 else ''} below the cutoff"
        parts.append(f"{on:,} {what} labelled same {by} {'are' if on != 1 else 'is'} flagged")
    if far:
        parts.append(f"{far:,} test item{'s' if far != 1 else ''} {'are' if far != 1 else 'is'} flagged through a pair "
                     f"labelled same {by} that only the train side found")
    return "; ".join(parts)
