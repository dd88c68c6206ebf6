"""What the outputs count: each test item's best deciding score against train, its exact twins, and
which items are flagged at a cutoff.

* :class:`TestScores` — the test -> train scores of a scan with the pairs and answers that decide them;
  :meth:`TestScores.flags` decides the flagged items once per cutoff (by
  :func:`sibscan.verdict.pairdecision.flag_items`: labelled pairs by their labels, the rest by score);
* :func:`test_scores` — the :class:`TestScores` of a scan directory;
* :func:`best_scores` — each query's best score and exact flags in one direction of a neighbours table;
* :func:`flagged_mask` — the items flagged by score alone (the unlabelled case).

The headline (:mod:`sibscan.verdict.headline`) and the report read them; the rate estimator
(:mod:`sibscan.verdict.rate`) reads the scores.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .pairdecision import NONE, SAME, flag_items, pair_is_sibling, row_labels
from ..store.neighbourtable import Neighbours
from ..store.scandir import ScanDir, load_items

__all__ = ["TestScores", "best_scores", "direction_rows", "duplicated_rows", "flagged_mask", "test_scores"]


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
        People's answers about pairs (:func:`sibscan.verdict.labelfile.scan_labels`).
    row_label : ndarray of shape (len(rows),), int8, optional
        The label of each row of ``rows`` (looked up from ``labels`` once, on the first :meth:`flags`).
    nb_label : ndarray, int8, optional
        With :meth:`from_neighbours`: the label of each row of the whole neighbours table it was built
        from (the train -> test count and the sibling groups read the same answers, not a second lookup).
    nb : Neighbours, optional
        With :meth:`from_neighbours`: that table (for :meth:`with_labels`).
    added : ndarray of shape (len(rows),), bool, optional
        Rows of ``rows`` that exist only because a person labelled the pair "same" from the train side
        (:func:`direction_rows`): the scores alone never saw them, so they are left out of ``by_score``.
    """

    score: np.ndarray
    exact: np.ndarray
    top: object
    rows: object = None
    labels: object = None
    row_label: Optional[np.ndarray] = None
    nb_label: Optional[np.ndarray] = None
    nb: object = None
    added: Optional[np.ndarray] = None
    _flags: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.score)

    @staticmethod
    def from_neighbours(score: np.ndarray, exact: np.ndarray, top, nb, labels=None) -> "TestScores":
        """The test->train rows of ``nb`` with their labels; a pair labelled "same" that was found only from
        the train side (a train -> test row) is added as a test -> train row (:func:`direction_rows`), so
        that it flags its test item here as it links the pair in the sibling groups and counts in the
        train -> test direction."""
        lab = row_labels(nb, labels) if labels is not None and len(labels) else np.zeros(len(nb), np.int8)
        rows, row_label, added = direction_rows(nb, lab, "test", "train")
        return TestScores(score, exact, top, rows=rows, labels=labels, row_label=row_label, nb_label=lab, nb=nb,
                          added=added)

    def with_labels(self, labels) -> "TestScores":
        """The same scores with other answers deciding the pairs (``labels``: a PairLabels)."""
        if self.nb is not None:
            return TestScores.from_neighbours(self.score, self.exact, self.top, self.nb, labels)
        return TestScores(self.score, self.exact, self.top, self.rows, labels)

    def answered_pairs(self) -> int:
        """How many distinct (test, train) pairs of this table a person answered (same or different): the
        answers that decide pairs of this scan, not those about pairs it does not hold."""
        if self.nb is not None and self.nb_label is not None:
            nb, lab = self.nb, self.nb_label
        elif self.rows is not None and self.labels is not None:
            nb = self.rows
            lab = (self.row_label if self.row_label is not None
                   else self.labels.lookup(nb["query_id"], nb["neighbour_id"]))
        else:
            return 0
        hit = np.flatnonzero(np.asarray(lab) != NONE)
        if not len(hit):
            return 0
        fwd = nb["query_split"][hit] == "test"
        q, n = nb["query_id"][hit].astype(str), nb["neighbour_id"][hit].astype(str)
        return len(set(zip(np.where(fwd, q, n).tolist(), np.where(fwd, n, q).tolist())))

    def flags(self, cutoff: Optional[float]):
        """The items flagged at ``cutoff`` by :func:`sibscan.verdict.pairdecision.flag_items` (labelled pairs by
        their labels, the rest by score): a :class:`sibscan.verdict.pairdecision.Flags`, decided once per cutoff
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
            out = flag_items(self.rows["query_index"], self.rows["score"], self.row_label, self.exact, cutoff,
                             added=self.added)
        self._flags[cutoff] = out
        return out


def direction_rows(nb, label: np.ndarray, query_split: str, neighbour_split: str) -> tuple:
    """The ``query_split -> neighbour_split`` rows of ``nb`` and, turned round into that orientation, the
    rows of the other orientation whose pair a person labelled "same".

    Groups link a "same" pair whichever side found it, so both directions of the report count it: the
    one rule for test -> train (:class:`TestScores`) and train -> test (the report).  The added rows are
    marked: without labels they do not exist, so the scores alone (``Flags.by_score``) never count them.

    Parameters
    ----------
    nb : Neighbours
        The neighbours table, shape (m,) per column.
    label : ndarray of shape (m,), int8
        Each row's label (:func:`sibscan.verdict.pairdecision.row_labels`).
    query_split, neighbour_split : str

    Returns
    -------
    (Neighbours of r rows, ndarray of shape (r,) int8 labels, ndarray of shape (r,) bool added)
    """
    own = nb.mask(query_split, neighbour_split)
    rows, row_label = nb.select(own), np.asarray(label)[own]
    back = nb.mask(neighbour_split, query_split) & (np.asarray(label) == SAME)
    if not back.any():
        return rows, row_label, np.zeros(len(rows), bool)
    flip = {"query_split": "neighbour_split", "query_index": "neighbour_index", "query_id": "neighbour_id"}
    flip.update({v: k for k, v in flip.items()})
    b = nb.select(back)
    turned = Neighbours({flip.get(k, k): v for k, v in b.columns.items()})
    # a pair this side found too is its own row (row_labels labelled it already): turned round as well,
    # a copy scoring a last bit higher would be shown as "a pair only the train side found"
    width = int(max(rows["neighbour_index"].max(initial=-1), turned["neighbour_index"].max(initial=-1))) + 1
    new = ~np.isin(turned["query_index"] * width + turned["neighbour_index"],
                   rows["query_index"] * width + rows["neighbour_index"])
    if not new.any():
        return rows, row_label, np.zeros(len(rows), bool)
    turned, back_label = turned.select(new), np.asarray(label)[back][new]
    return (Neighbours.concat([rows, turned]), np.concatenate([row_label, back_label]),
            np.concatenate([np.zeros(len(rows), bool), np.ones(len(turned), bool)]))


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
    ``labels`` (:class:`sibscan.verdict.pairdecision.PairLabels`) decide the pairs they answer."""
    from ..kernels.rowhash import fingerprint_membership

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


def duplicated_rows(fingerprints: np.ndarray):
    """``(mask, n_groups)``: rows whose fingerprint occurs at least twice, and how many such fingerprints."""
    from ..kernels.rowhash import fingerprint_keys

    if len(fingerprints) == 0:
        return np.zeros(0, bool), 0
    _, inv, counts = np.unique(fingerprint_keys(fingerprints), return_inverse=True, return_counts=True)
    return counts[inv.ravel()] > 1, int((counts > 1).sum())
