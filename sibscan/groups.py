"""The sibling graph of a scan and its connected components: the sibling groups.

The graph joins every pair of items (over train and test together) that are exact twins (same
fingerprint), siblings at the cutoff (a neighbours-table row with ``score >= cutoff``, in any
direction) or, with ``sources=True``, share a group/source value (patient, user, page).  Its
connected components are the groups: the report counts label conflicts in them, and ``sibscan
split`` keeps each on one side of a new split.  Components are found with ``scipy.sparse.csgraph``
when scipy is installed, else with a vectorised numpy union-find (hooking roots onto the smaller
root, then pointer jumping).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .cutoff import Cutoff, resolve_cutoff
from .scandir import ScanDir, load_items

__all__ = ["GroupTable", "connected_components", "group_table", "sibling_groups"]


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
    at = resolve_cutoff(scan.manifest(), cutoff=cutoff, calibration=calibration, force=force, scan_dir=scan.path)
    return group_table(scan, at, sources=sources)


def group_table(scan: ScanDir, cutoff: Cutoff, sources: bool = True) -> GroupTable:
    """The sibling groups of ``scan`` at a resolved ``cutoff`` (the report passes the one it reports)."""
    train, fp_train = load_items(scan.path, "train")
    test, fp_test = load_items(scan.path, "test")
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
        if cutoff.value is not None:
            keep |= nb["score"] >= cutoff.value
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
    return GroupTable(split, ids.astype(str), index, labels, srcs, group, fps, (a, b), cutoff.record())
