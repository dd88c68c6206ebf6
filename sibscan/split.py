"""Siblings into groups, and a leak-free stratified group split.

The sibling graph joins every pair of items (over train and test together) that are exact twins
(same fingerprint), siblings at the cutoff (a neighbours-table row with ``score >= cutoff``, in any
direction) or, with ``sources=True``, share a group/source value (patient, user, page).  Its
connected components are the groups: a split that keeps every group on one side leaves no sibling
across the boundary.  Components are found with ``scipy.sparse.csgraph`` when scipy is installed,
else with a vectorised numpy union-find (hooking roots onto the smaller root, then pointer jumping).
"""
from __future__ import annotations

import csv
import io
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .atomic import write_json, write_text
from .cutoff import resolve_cutoff
from .errors import SibscanError
from .scandir import ScanDir

__all__ = ["GroupTable", "ResplitResult", "connected_components", "sibling_groups", "resplit", "write_groups", "write_resplit"]

log = logging.getLogger("sibscan.split")


def _renumber(labels: np.ndarray) -> np.ndarray:
    """Component ids 0..m-1 in order of each component's smallest member."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    order = np.empty(len(first), np.int64)
    order[np.argsort(first, kind="stable")] = np.arange(len(first))
    return order[inv.ravel()]


def connected_components(n: int, a: np.ndarray, b: np.ndarray, method: str = "auto") -> np.ndarray:
    """Connected components of the undirected graph with ``n`` nodes and edges ``(a[i], b[i])``.

    Parameters
    ----------
    n : int
        Number of nodes.
    a, b : ndarray of shape (m,), int
        Edge end points in ``[0, n)``.
    method : {"auto", "scipy", "numpy"}
        ``auto`` uses scipy when importable.

    Returns
    -------
    ndarray of shape (n,), int64
        Component id of each node, numbered 0.. in order of each component's smallest node.
    """
    a = np.asarray(a, dtype=np.int64).ravel()
    b = np.asarray(b, dtype=np.int64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"edge arrays differ in length: {a.size} and {b.size}")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
        raise ValueError(f"edge end points must lie in [0, {n})")
    if method not in ("auto", "scipy", "numpy"):
        raise ValueError(f"unknown method {method!r}; available: auto, scipy, numpy")
    if method in ("auto", "scipy"):
        try:
            from scipy.sparse import coo_matrix
            from scipy.sparse.csgraph import connected_components as cc
        except ImportError:
            if method == "scipy":
                raise
        else:
            graph = coo_matrix((np.ones(a.size, np.int8), (a, b)), shape=(n, n)).tocsr()
            return _renumber(cc(graph, directed=False)[1])
    parent = np.arange(n, dtype=np.int64)
    while a.size:
        # every node points at its root here, so pa/pb are roots: hook the larger onto the smaller
        pa, pb = parent[a], parent[b]
        live = pa != pb
        if not live.any():
            break
        np.minimum.at(parent, np.maximum(pa[live], pb[live]), np.minimum(pa[live], pb[live]))
        while True:
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt
    return _renumber(parent)


def _same_value_edges(keys: np.ndarray, valid: Optional[np.ndarray] = None):
    """Edges joining each row to the first row with the same key (rows (n,) or (n, d))."""
    idx = np.arange(len(keys)) if valid is None else np.flatnonzero(valid)
    if idx.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = keys[idx]
    _, first, inv = np.unique(k, axis=0 if k.ndim > 1 else None, return_index=True, return_inverse=True)
    rep = idx[first][inv.ravel()]
    keep = rep != idx
    return idx[keep], rep[keep]


@dataclass
class GroupTable:
    """Every item of train and test with its sibling group.

    Attributes
    ----------
    split, ids, labels, sources : ndarray of shape (n,), str
        Train rows first, then test rows; ``labels``/``sources`` are "" where missing.
    index : ndarray of shape (n,), int64
        Row of the item within its split.
    group : ndarray of shape (n,), int64
        Component id (0..n_groups-1).
    fingerprints : ndarray of shape (n, 2), uint64, or None
    edges : tuple of two ndarrays of shape (m,)
        The sibling graph's edges over rows of this table (exact, cutoff and source edges).
    cutoff : dict
        The cutoff record used (see :func:`sibscan.cutoff.resolve_cutoff`).
    """

    split: np.ndarray
    ids: np.ndarray
    index: np.ndarray
    labels: np.ndarray
    sources: np.ndarray
    group: np.ndarray
    fingerprints: Optional[np.ndarray]
    edges: tuple
    cutoff: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def sizes(self) -> np.ndarray:
        """Size of each item's group, shape (n,)."""
        return np.bincount(self.group)[self.group]

    @property
    def n_groups(self) -> int:
        return int(self.group.max()) + 1 if len(self.group) else 0

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["split", "id", "label", "source", "group", "group_size"])
        sizes = self.sizes
        w.writerows(zip(self.split, self.ids, self.labels, self.sources, (f"g{g}" for g in self.group), sizes))
        return buf.getvalue()


def sibling_groups(scan_dir, *, cutoff: Optional[float] = None, calibration=None, force: bool = False,
                   sources: bool = True) -> GroupTable:
    """Group the items of a scan into connected components of the sibling graph.

    Parameters
    ----------
    scan_dir : str or Path
        A finished scan directory.
    cutoff, calibration, force
        Which cutoff makes a sibling (see :func:`sibscan.cutoff.resolve_cutoff`). With no
        cutoff anywhere, only exact twins (and shared sources) join items.
    sources : bool
        Also join items that share a group/source value.
    """
    scan = ScanDir(scan_dir)
    manifest = scan.manifest()
    rec = resolve_cutoff(manifest, cutoff=cutoff, calibration=calibration, force=force, scan_dir=scan.path).record()
    train, fp_train = _load(scan, "train")
    test, fp_test = _load(scan, "test")
    n_train, n = len(train), len(train) + len(test)

    def col(items, name):
        v = getattr(items, name)
        return np.full(len(items), "", dtype=object) if v is None else v.astype(object)

    split = np.concatenate([np.full(len(train), "train", "U5"), np.full(len(test), "test", "U5")])
    ids = np.concatenate([train.ids.astype(object), test.ids.astype(object)])
    labels = np.concatenate([col(train, "labels"), col(test, "labels")]).astype(str)
    srcs = np.concatenate([col(train, "groups"), col(test, "groups")]).astype(str)
    index = np.concatenate([np.arange(len(train)), np.arange(len(test))]).astype(np.int64)
    fps = None
    if fp_train is not None and fp_test is not None:
        fps = np.concatenate([fp_train, fp_test]).astype(np.uint64)

    parts_a, parts_b = [], []
    if fps is not None:
        ea, eb = _same_value_edges(fps)
        parts_a.append(ea), parts_b.append(eb)
    nb = scan.neighbours() if scan.neighbours_path.exists() else None
    if nb is not None and len(nb):
        keep = nb["exact"].astype(bool)
        if rec["value"] is not None:
            keep |= nb["score"] >= rec["value"]
        qs, ns = nb["query_split"][keep], nb["neighbour_split"][keep]
        ga = nb["query_index"][keep] + np.where(qs == "test", n_train, 0)
        gb = nb["neighbour_index"][keep] + np.where(ns == "test", n_train, 0)
        parts_a.append(ga), parts_b.append(gb)
    if sources:
        ea, eb = _same_value_edges(srcs, valid=(srcs != ""))
        parts_a.append(ea), parts_b.append(eb)
    a = np.concatenate(parts_a) if parts_a else np.zeros(0, np.int64)
    b = np.concatenate(parts_b) if parts_b else np.zeros(0, np.int64)
    group = connected_components(n, a, b)
    return GroupTable(split, ids.astype(str), index, labels, srcs, group, fps, (a, b), rec)


def _load(scan: ScanDir, split: str):
    from .scandir import load_items

    return load_items(scan.path, split)


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
        Sibling-graph edges that cross the new boundary (0 by construction).
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


def resplit(groups: GroupTable, *, test_size: float = 0.2, seed: int = 0) -> ResplitResult:
    """Split whole groups into a new train and test set with each class's share near ``test_size``.

    Multi-item groups are placed first, largest first, each on the side that brings the per-class
    test counts closer (L1) to their targets, followed by one pass that moves a group across where
    that helps; singletons then fill each class's remaining test quota in a seeded random order
    (vectorised).  With few singletons and large mixed-class groups the balance is as good as those
    groups allow, not exact: ``class_balance`` reports what was reached.
    """
    if not 0.0 < test_size < 1.0:
        raise SibscanError(f"--test-size is a fraction in (0, 1), got {test_size}")
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
        {"label": str(c), "n": int(t), "n_train": int(t - k), "n_test": int(k), "test_fraction": float(k / t) if t else None}
        for c, t, k in zip(classes, totals, n_test_c)
    ]
    return ResplitResult(train, test, twins_left, siblings_left, int((g_test & g_train).sum()), balance,
                         float(test.size / n))


def write_groups(groups: GroupTable, path) -> Path:
    """Write the group table as CSV (``split,id,label,source,group,group_size``) atomically."""
    return write_text(path, groups.to_csv())


def write_resplit(groups: GroupTable, result: ResplitResult, out_dir) -> Path:
    """Write ``train.csv``, ``test.csv`` (``original_split,id,label,group``) and ``resplit.json``."""
    out = Path(out_dir)
    for name, rows in (("train", result.train), ("test", result.test)):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["original_split", "id", "label", "group"])
        w.writerows(zip(groups.split[rows], groups.ids[rows], groups.labels[rows], (f"g{g}" for g in groups.group[rows])))
        write_text(out / f"{name}.csv", buf.getvalue())
    write_json(out / "resplit.json", {**result.summary(), "cutoff": groups.cutoff, "n_groups": groups.n_groups})
    return out
