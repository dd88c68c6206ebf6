"""One verified score per pair: each unordered pair of items is verified once, in one orientation.

The neighbours table can hold a pair twice: (test i, train j) as a test→train row and again as a
train→test row, (test i, test j) as i→j and as j→i.  Whether two items are the same photo is a
property of the pair, but an image verifier searches the query inside the database image, so the two
orientations give two unequal scores (``python -m benchmarks.pair_once``, on ``benchmarks.verify_share``'s
3,000 x 600 case: 4,120 of the 9,000 train→test rows are test→train rows too, and 482 test pairs
rows in both orders; with imagecorr their two scores are 0.023 apart on average, up to 0.29; with
imagefuse equal for most, 85 of the 4,120 more than 0.01 apart, up to 0.60).
So the scan verifies each pair once, in its **canonical orientation** (:data:`PAIRING`):

* across splits, the test item is the query and the train item the database (the sibling question's
  orientation: a train→test row carries the score its pair has as a test→train row);
* within a split, the lower row is the query.

Every row of the pair carries that one ``verified`` score and the verifier's ``detail`` (which
describes the canonical orientation: "shifted 2 px" moves the test item onto the train item).

The train→test direction is verified a block of train rows at a time
(:func:`sibscan.stages.candidates.reverse_blocks`); its pairs that the held table verified already are
looked up in :class:`VerifiedPairs`, which holds the held table's (test, train) pairs only: its size
is bounded by the test side (``n_test`` x candidates per test item), never by ``n_train``.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from ..calibration.baseline import pair_keys
from ..items import Items
from ..progress import task
from ..store.neighbourtable import Neighbours

__all__ = ["PAIRING", "VerifiedPairs", "canonical_pairs", "verify_pairs"]

#: the pairing rule, recorded in the scan's manifest (a scan verified under another rule, or under none,
#: is not resumed onto: its train→test and test→test rows carry scores of the other orientation)
PAIRING = "one-per-pair-v1(test queries train; within a split the lower row queries)"

#: the order in which a pair's directions claim it when counting verifier calls (the first one holding it)
_CLAIM = ("test>train", "test>test", "train>test", "train>train")


def canonical_pairs(query_split: str, query_index: np.ndarray, neighbour_split: str,
                    neighbour_index: np.ndarray) -> Tuple[str, np.ndarray, str, np.ndarray]:
    """The canonical orientation (:data:`PAIRING`) of one direction's pairs.

    Parameters
    ----------
    query_split, neighbour_split : str
    query_index, neighbour_index : ndarray of shape (m,), int

    Returns
    -------
    (query split, query rows, database split, database rows), the rows ndarrays of shape (m,) int64
    """
    qi, ni = np.asarray(query_index, np.int64), np.asarray(neighbour_index, np.int64)
    if query_split == neighbour_split:
        return query_split, np.minimum(qi, ni), neighbour_split, np.maximum(qi, ni)
    if (query_split, neighbour_split) == ("train", "test"):
        return "test", ni, "train", qi
    return query_split, qi, neighbour_split, ni


class VerifiedPairs:
    """The verified (test, train) pairs of a table, looked up by pair.

    Holds one flat key (``test * n_train + train``), score and detail per distinct pair of the table's
    test→train and train→test rows: built from the held table (every direction but the streamed
    train→test one), it is bounded by ``n_test`` x the candidates per test item.
    """

    def __init__(self, keys: np.ndarray, verified: np.ndarray, detail: np.ndarray, n_train: int):
        """``keys``: sorted and distinct (as :meth:`of` gives them), with their scores and details."""
        self.keys, self.verified, self.detail = keys, verified, detail
        self.n_train = int(n_train)

    @classmethod
    def of(cls, nb: Neighbours, n_train: int) -> "VerifiedPairs":
        """The pairs of ``nb``'s cross-split rows, with their ``verified`` score and ``detail``
        (the verifier's: the held table of a scan that streams train→test has no other detail)."""
        keys, verified, detail = [], [], []
        for qs, ns in (("test", "train"), ("train", "test")):
            m = nb.mask(qs, ns)
            _, ti, _, tri = canonical_pairs(qs, nb["query_index"][m], ns, nb["neighbour_index"][m])
            keys.append(pair_keys(ti, tri, n_train))
            verified.append(nb["verified"][m])
            detail.append(nb["detail"][m])
        keys_all = np.concatenate(keys)
        _, first = np.unique(keys_all, return_index=True)  # a pair held in both directions carries one score
        return cls(keys_all[first], np.concatenate(verified)[first], np.concatenate(detail)[first], n_train)

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, test_index: np.ndarray, train_index: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(found, verified, detail)`` of each (test, train) pair, ndarrays of shape (m,): bool, float32
        (NaN where not found, or where the verifier gave none), object ("" where not found)."""
        keys = pair_keys(test_index, train_index, self.n_train)
        if not len(self.keys):
            return np.zeros(len(keys), bool), np.full(len(keys), np.nan, np.float32), np.full(len(keys), "", object)
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        found = self.keys[pos] == keys
        verified = np.where(found, self.verified[pos], np.nan).astype(np.float32)
        detail = np.where(found, self.detail[pos], "").astype(object)
        return found, verified, detail


def verify_pairs(nb: Neighbours, verifier, splits: Dict[str, Items], *, known: Optional[VerifiedPairs] = None,
                 counts: Optional[Dict[str, int]] = None) -> Tuple[np.ndarray, np.ndarray]:
    """The verified score and detail of every row of ``nb``, each distinct pair verified once, in its
    canonical orientation; (test, train) pairs found in ``known`` are not verified again.

    Parameters
    ----------
    nb : Neighbours
    verifier : Verifier
    splits : {"train": Items, "test": Items}
    known : VerifiedPairs, optional
        Pairs verified before (the held table, when train→test rows are verified a block at a time).
    counts : dict, optional
        Pairs handed to the verifier are added to it under the direction that claims them: the first of
        test>train, test>test, train>test holding the pair (``"train>test"``: train→test pairs no
        test→train row holds).

    Returns
    -------
    verified : ndarray of shape (len(nb),), float32 (NaN where the verifier gives none)
    detail : ndarray of shape (len(nb),), object
    """
    verified = np.full(len(nb), np.nan, np.float32)
    detail = np.full(len(nb), "", dtype=object)
    groups: Dict[Tuple[str, str], list] = {}
    for name in _CLAIM:  # the directions the table holds, in the order they claim a pair
        qs, ns = name.split(">")
        rows = np.flatnonzero(nb.mask(qs, ns))
        if not len(rows):
            continue
        cq, ci, cd, di = canonical_pairs(qs, nb["query_index"][rows], ns, nb["neighbour_index"][rows])
        groups.setdefault((cq, cd), []).append((f"{qs}>{ns}", rows, ci, di))
    for (cq, cd), parts in groups.items():
        rows = np.concatenate([p[1] for p in parts])
        ci, di = np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts])
        claim = np.concatenate([np.full(len(p[1]), n) for n, p in enumerate(parts)])
        # distinct pairs, each claimed by its first row (the parts come in _CLAIM's order)
        width = int(di.max()) + 1 if len(di) else 1  # a flat key per pair: query row * width + database row
        _, first, inverse = np.unique(pair_keys(ci, di, width), return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        score, text = np.full(len(first), np.nan, np.float32), np.full(len(first), "", dtype=object)
        todo = np.ones(len(first), bool)
        if known is not None and (cq, cd) == ("test", "train"):
            found, score, text = known.lookup(ci[first], di[first])
            todo = ~found
        ask = first[todo]
        if len(ask):
            with task(f"{cq} → {cd}"):
                res = verifier.verify(splits[cq], ci[ask], splits[cd], di[ask])
            score[todo] = np.asarray(res.scores, np.float32)
            text[todo] = np.asarray(res.details, dtype=object)
        if counts is not None:
            claimed = np.bincount(claim[ask], minlength=len(parts))
            for (name, *_), m in zip(parts, claimed.tolist()):
                counts[name] = counts.get(name, 0) + m
        verified[rows], detail[rows] = score[inverse], text[inverse]
    return verified, detail
