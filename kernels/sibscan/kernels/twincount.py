"""Exact-copy counts between a large split and a smaller one, from 128-bit fingerprints alone.

:func:`sibscan.kernels.rowhash.group_fingerprints` numbers the groups of the two splits together; its
sort and its group arrays take about 70 bytes per row of both splits.  :func:`twin_counts` gives
the same counts for the twin report with the train side visited in blocks: the test side's
distinct fingerprints are sorted once, each block of train fingerprints is looked up in them
(``searchsorted``), and only one more pass over the train fingerprints in sorted order (an
``int64`` order, 8 bytes per row) counts the train side's own distinct rows and label conflicts.
Beyond the fingerprints (16 bytes per row) and the label codes, memory is one block.

Every count equals the one computed from ``group_fingerprints`` over the concatenation (tested
against that reference in ``tests/reliability/test_rel_twins_memory.py``).
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .rowhash import fingerprint_keys, fingerprint_order

__all__ = ["twin_counts", "twin_membership"]

#: train rows looked up at a time
BLOCK_ROWS = 1 << 16


class _TestSide:
    """The test split's distinct fingerprints, sorted (first lane, then second), and each test row's
    index among them.

    Looked up by the first lane alone (a ``uint64`` ``searchsorted``, ~10x faster than one on
    :func:`fingerprint_keys` with the needles sorted), the second lane compared at the position found;
    only when two distinct test fingerprints share a first lane is the two-lane search used instead.
    """

    def __init__(self, fp_te: np.ndarray):
        fp = np.asarray(fp_te, dtype=np.uint64).reshape(-1, 2)
        order = fingerprint_order(fp)
        s = fp[order]
        new = np.ones(len(s), bool)
        new[1:] = (s[1:, 0] != s[:-1, 0]) | (s[1:, 1] != s[:-1, 1])
        self.first, self.second = s[new, 0], s[new, 1]
        self.n = len(self.first)
        self.inv = np.empty(len(s), np.int64)
        self.inv[order] = np.cumsum(new) - 1
        self.keys = None  # the two-lane keys, where distinct fingerprints share a first lane
        if self.n > 1 and bool((self.first[1:] == self.first[:-1]).any()):
            self.keys = fingerprint_keys(np.stack([self.first, self.second], axis=1))

    def lookup(self, fp_block: np.ndarray):
        """``(pos, match)``: the distinct-test index of each row of a train block, and whether it is one
        (``pos`` means nothing where ``match`` is False)."""
        fp = np.asarray(fp_block, dtype=np.uint64).reshape(-1, 2)
        if self.n == 0:
            return np.zeros(len(fp), np.int64), np.zeros(len(fp), bool)
        if self.keys is not None:
            keys = fingerprint_keys(fp)
            pos = np.minimum(np.searchsorted(self.keys, keys), self.n - 1)
            return pos, self.keys[pos] == keys
        # needles in ascending order: each search starts where the last ended, in cache (8x faster
        # than random needles on 1,000,000 rows)
        order = np.argsort(fp[:, 0])
        pos = np.empty(len(fp), np.int64)
        pos[order] = np.searchsorted(self.first, fp[order, 0])
        np.minimum(pos, self.n - 1, out=pos)
        return pos, (self.first[pos] == fp[:, 0]) & (self.second[pos] == fp[:, 1])


def twin_membership(fp_tr: np.ndarray, fp_te: np.ndarray, block: Optional[int] = None):
    """Which rows of each split have a copy in the other.

    Parameters
    ----------
    fp_tr : ndarray of shape (n_train, 2), uint64
    fp_te : ndarray of shape (n_test, 2), uint64
    block : int, optional
        Train rows looked up at a time (default ``BLOCK_ROWS``).

    Returns
    -------
    test_has : ndarray of shape (n_test,), bool
    train_idx : ndarray of shape (n_train_twins,), int64
        Train rows (ascending) whose fingerprint occurs in test.
    """
    block = block or BLOCK_ROWS
    side = _TestSide(fp_te)
    seen = np.zeros(side.n, bool)
    found = []
    for start in range(0, len(fp_tr), block):
        pos, match = side.lookup(fp_tr[start:start + block])
        seen[pos[match]] = True
        found.append(np.flatnonzero(match) + start)
    train_idx = np.concatenate(found) if found else np.zeros(0, np.int64)
    return seen[side.inv], train_idx.astype(np.int64)


def twin_counts(fp_tr: np.ndarray, fp_te: np.ndarray, code_tr: Optional[np.ndarray] = None,
                code_te: Optional[np.ndarray] = None, block: Optional[int] = None) -> Dict[str, object]:
    """Counts of exact copies within and between two splits, with label conflicts.

    Parameters
    ----------
    fp_tr : ndarray of shape (n_train, 2), uint64
    fp_te : ndarray of shape (n_test, 2), uint64
    code_tr, code_te : ndarray of shape (n_train,) / (n_test,), int, optional
        Label codes in one code space (equal code = equal label); both or neither.
    block : int, optional
        Train rows per block (default ``BLOCK_ROWS``).

    Returns
    -------
    dict
        ``n_groups`` (distinct fingerprints over both splits), ``distinct_train``, ``distinct_test``,
        ``test_has`` (bool, n_test: a train copy exists), ``train_idx`` (train rows with a test copy),
        ``first_train`` (int64, n_test: the first train row with the test row's fingerprint, -1 if
        none); with codes also ``conflict_idx`` (test rows with a train copy of which at least one has
        another label), ``no_same_idx`` (test rows with a train copy but none with the same label),
        ``groups_conflict`` (fingerprints with more than one label over both splits) and
        ``cross_conflict`` (those present in both splits).
    """
    n1, block = len(fp_tr), block or BLOCK_ROWS
    side = _TestSide(fp_te)
    n_u = side.n
    first_u = np.full(n_u, -1, np.int64)
    found, pairs = [], []
    labels = code_tr is not None and code_te is not None
    n_lab = int(max(np.max(code_tr, initial=-1), np.max(code_te, initial=-1))) + 1 if labels else 1
    for start in range(0, n1, block):
        pos, match = side.lookup(fp_tr[start:start + block])
        rows = np.flatnonzero(match)
        found.append(rows + start)
        u, first = np.unique(pos[rows], return_index=True)  # rows ascend: the first of each in this block
        fresh = first_u[u] < 0
        first_u[u[fresh]] = rows[first[fresh]] + start
        if labels:
            pairs.append(np.unique(pos[rows] * n_lab + np.asarray(code_tr[start + rows], np.int64)))
    train_idx = np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)
    in_train = first_u >= 0
    distinct_train, train_only_conflicts = _train_groups(fp_tr, code_tr if labels else None, side, block)
    out: Dict[str, object] = {
        "n_groups": distinct_train + int((~in_train).sum()), "distinct_train": distinct_train,
        "distinct_test": n_u, "test_has": in_train[side.inv], "train_idx": train_idx,
        "first_train": first_u[side.inv]}
    if labels:
        key_tr = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, np.int64)
        key_te = side.inv.astype(np.int64) * n_lab + np.asarray(code_te, np.int64)
        labels_per_u = np.bincount(np.unique(np.concatenate([key_tr, key_te])) // n_lab, minlength=n_u)
        train_labels_per_u = np.bincount(key_tr // n_lab, minlength=n_u)
        same = np.isin(key_te, key_tr)
        test_has = out["test_has"]
        out["conflict_idx"] = np.flatnonzero(test_has & (train_labels_per_u[side.inv] > same))
        out["no_same_idx"] = np.flatnonzero(test_has & ~same)
        out["groups_conflict"] = int((labels_per_u > 1).sum()) + train_only_conflicts
        out["cross_conflict"] = int(((labels_per_u > 1) & in_train).sum())
    return out


def _train_groups(fp_tr: np.ndarray, code_tr: Optional[np.ndarray], side: _TestSide, block: int):
    """Distinct train fingerprints, and those absent from test that carry more than one train label:
    one pass over the train rows in fingerprint order, a block at a time."""
    if len(fp_tr) == 0:
        return 0, 0
    # equal fingerprints together; their labels in any order (a group has a second label exactly when
    # two neighbours within it differ)
    order = fingerprint_order(fp_tr)
    distinct = conflicts = 0
    prev_fp = prev_code = None
    last_group = -1  # the last group (running number) counted as a conflict
    for start in range(0, len(order), block):
        idx = order[start:start + block]
        fp = fp_tr[idx]
        new = np.empty(len(idx), bool)
        new[0] = prev_fp is None or bool((fp[0] != prev_fp).any())
        new[1:] = (fp[1:, 0] != fp[:-1, 0]) | (fp[1:, 1] != fp[:-1, 1])
        gid = np.cumsum(new) + (distinct - 1)  # running group number of each row
        distinct += int(new.sum())
        if code_tr is not None:
            code = np.asarray(code_tr[idx])
            other = np.empty(len(idx), bool)  # a second label within the group
            other[0] = not new[0] and code[0] != prev_code
            other[1:] = ~new[1:] & (code[1:] != code[:-1])
            at = np.flatnonzero(other)
            if len(at):
                at = at[~side.lookup(fp[at])[1]]  # groups also in test are counted from both splits
                groups = np.unique(gid[at])
                conflicts += len(groups) - int(len(groups) > 0 and groups[0] == last_group)
                if len(groups):
                    last_group = int(groups[-1])
            prev_code = code[-1]
        prev_fp = fp[-1].copy()
    return distinct, conflicts
