"""A stratified group split of a scan's sibling groups (:mod:`sibscan.groups`), and the files
``sibscan split`` writes: every group stays on one side, so no grouped sibling crosses the boundary
(every sibling under single linkage; ``siblings_left`` counts the pairs that still cross)."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from .atomic import write_json, write_text
from .errors import SibscanError
from .groups import GroupTable, group_table
from .verdict import Verdict
from .stats import check_int

__all__ = ["ResplitResult", "check_resplit", "groups_and_headline", "resplit", "write_groups", "write_resplit"]


@dataclass
class ResplitResult:
    """A stratified group split of a :class:`GroupTable`.

    Attributes
    ----------
    train, test : ndarray of int64
        Rows of the group table on each side.
    twins_left : int
        New test items with an exact twin in the new train set (0 unless the grouping is broken).
    siblings_left : int
        Sibling-graph edges that cross the new boundary: 0 by construction under single linkage; under
        complete linkage, sibling pairs left between groups (``GroupTable.dropped``) may cross.
    groups_on_both_sides : int
    class_balance : list of dict
        Per label: ``{label, n, n_train, n_test, test_fraction}``.
    test_fraction : float
    """

    train: np.ndarray
    test: np.ndarray
    twins_left: int
    siblings_left: int
    groups_on_both_sides: int
    class_balance: list
    test_fraction: float

    def summary(self) -> dict:
        return {
            "n_train": int(self.train.size), "n_test": int(self.test.size), "test_fraction": self.test_fraction,
            "twins_left": self.twins_left, "siblings_left": self.siblings_left,
            "groups_on_both_sides": self.groups_on_both_sides, "class_balance": self.class_balance,
        }


def groups_and_headline(scan_dir, *, cutoff: Optional[float] = None, calibration=None, force: bool = False,
                        sources: bool = True, linkage: str = "complete") -> Tuple[GroupTable, dict]:
    """The sibling groups of a scan and its headline, from one :class:`~sibscan.verdict.Verdict` (the
    cutoff resolved and the hand labels read once: each warns about what it cannot use)."""
    verdict = Verdict.open(scan_dir, cutoff=cutoff, calibration=calibration, force=force)
    return group_table(verdict, sources=sources, linkage=linkage), verdict.headline


def check_resplit(test_size: float, seed: int) -> None:
    """Refuse re-split options that cannot work, before anything is read or written."""
    if not 0.0 < test_size < 1.0:  # NaN fails too
        raise SibscanError(f"--test-size is a fraction in (0, 1), got {test_size}")
    check_int(seed, "--seed", 0)


def resplit(groups: GroupTable, *, test_size: float = 0.2, seed: int = 0) -> ResplitResult:
    """Split whole groups into a new train and test set with each class's share near ``test_size``.

    Multi-item groups are placed first, largest first, each on the side that brings the per-class
    test counts closer (L1) to their targets, followed by one pass that moves a group across where
    that helps; singletons then fill each class's remaining test quota in a seeded random order
    (vectorised).  With few singletons and large mixed-class groups the balance is as good as those
    groups allow, not exact: ``class_balance`` reports what was reached.
    """
    check_resplit(test_size, seed)
    n = len(groups)
    if n == 0:
        raise SibscanError("the scan has no items to split")
    rng = np.random.default_rng(seed)
    classes, code = np.unique(groups.labels, return_inverse=True)
    code = code.ravel()
    n_cls = len(classes)
    totals = np.bincount(code, minlength=n_cls)
    target = np.round(test_size * totals).astype(np.int64)
    sizes = np.bincount(groups.group)
    in_test_group = np.zeros(len(sizes), bool)
    multi = np.flatnonzero(sizes > 1)
    test_counts = np.zeros(n_cls, np.int64)
    if multi.size:
        sel = sizes[groups.group] > 1
        local = np.searchsorted(multi, groups.group[sel])
        counts = np.zeros((multi.size, n_cls), np.int64)
        np.add.at(counts, (local, code[sel]), 1)
        order = rng.permutation(multi.size)
        order = order[np.argsort(-sizes[multi][order], kind="stable")]
        # a loop over multi-item groups only; singletons (usually most items) are vectorised below
        for i in order:
            deficit = target - test_counts
            if np.abs(deficit - counts[i]).sum() < np.abs(deficit).sum():
                test_counts += counts[i]
                in_test_group[multi[i]] = True
        # one refinement pass: move a group to the other side where that brings the counts closer
        for i in order:
            step = -counts[i] if in_test_group[multi[i]] else counts[i]
            deficit = target - test_counts
            if np.abs(deficit - step).sum() < np.abs(deficit).sum():
                test_counts += step
                in_test_group[multi[i]] = ~in_test_group[multi[i]]
    single = np.flatnonzero(sizes[groups.group] == 1)
    if single.size:
        perm = single[rng.permutation(single.size)]
        perm = perm[np.argsort(code[perm], kind="stable")]
        cls = code[perm]
        start = np.searchsorted(cls, np.arange(n_cls))
        rank = np.arange(perm.size) - start[cls]
        take = perm[rank < np.maximum(target - test_counts, 0)[cls]]
        in_test_group[groups.group[take]] = True
    is_test = in_test_group[groups.group]
    test, train = np.flatnonzero(is_test), np.flatnonzero(~is_test)
    twins_left = 0
    if groups.fingerprints is not None and test.size and train.size:
        fp = groups.fingerprints
        both = np.concatenate([fp[train], fp[test]])
        _, inv = np.unique(both, axis=0, return_inverse=True)
        inv = inv.ravel()
        in_train = np.zeros(inv.max() + 1, bool)
        in_train[inv[: train.size]] = True
        twins_left = int(in_train[inv[train.size:]].sum())
    a, b = groups.edges
    siblings_left = int((is_test[a] != is_test[b]).sum()) if len(a) else 0
    g_test = np.bincount(groups.group[test], minlength=len(sizes)) > 0
    g_train = np.bincount(groups.group[train], minlength=len(sizes)) > 0
    n_test_c = np.bincount(code[test], minlength=n_cls)
    balance = [
        {"label": str(c), "n": int(t), "n_train": int(t - k), "n_test": int(k),
         "test_fraction": float(k / t) if t else None}
        for c, t, k in zip(classes, totals, n_test_c)
    ]
    return ResplitResult(train, test, twins_left, siblings_left, int((g_test & g_train).sum()), balance,
                         float(test.size / n))


def write_groups(groups: GroupTable, path) -> Path:
    """Write the group table as CSV (``split,id,label,source,group,group_size``) atomically."""
    return write_text(path, groups.to_csv())


def write_resplit(groups: GroupTable, result: ResplitResult, out_dir, headline: Optional[dict] = None) -> Path:
    """Write ``train.csv``, ``test.csv`` (``original_split,id,label,group``) and ``resplit.json``
    (with the scan's ``headline``, the sibling rate the split removes, when given)."""
    out = Path(out_dir)
    for name, rows in (("train", result.train), ("test", result.test)):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["original_split", "id", "label", "group"])
        w.writerows(zip(groups.split[rows], groups.ids[rows], groups.labels[rows],
                        (f"g{g}" for g in groups.group[rows])))
        write_text(out / f"{name}.csv", buf.getvalue())
    write_json(out / "resplit.json", {**result.summary(), "cutoff": groups.cutoff, "n_groups": groups.n_groups,
                                      "linkage": groups.linkage, "largest_group": groups.largest(),
                                      **({"headline": headline} if headline is not None else {})})
    return out
