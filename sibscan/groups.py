"""The sibling graph of a scan and its sibling groups.

The graph joins every pair of items (over train and test together) that are exact twins (same
fingerprint), siblings at the cutoff (a neighbours-table row that is a sibling pair by
:func:`sibscan.verdict.pairdecision.pair_is_sibling`, in any direction: labelled "same" by hand, or
unlabelled with ``score >= cutoff``; a pair labelled "different" never joins) or, with
``sources=True``, share a group/source value (patient, user, page).  The report counts label conflicts in its groups,
and ``sibscan split`` keeps each group on one side of
a new split.

Two linkages:

* ``complete`` (the default): exact twins and shared sources join unconditionally (an exact copy
  is the same item; a source is declared), forming *atoms*; atoms then merge only while every
  pair of atoms in the group has a measured sibling pair (a row at or above the cutoff): greedy
  complete linkage, highest-scoring pairs first.  So one false positive cannot chain
  unrelated items: with A~B and B~C but A and C unrelated, B joins one of them and the other
  stays apart.  Complete linkage rather than mutual nearest neighbours: a photo with two
  copies (a star A~B, A~C with B~C measured too) stays one group, and the rule says why a group
  holds together (every pair of its members was measured above the cutoff).  The price: a
  sibling pair whose ends landed in different groups (``GroupTable.dropped``) may cross a
  re-split; ``sibscan split`` counts them.
* ``single``: the connected components of the whole graph (transitive: no sibling pair can cross
  a re-split, but one false positive chains everything it touches).

Components are found with ``scipy.sparse.csgraph`` when scipy is installed, else with a
vectorised numpy union-find (hooking roots onto the smaller root, then pointer jumping).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from . import fmt
from .verdict.pairdecision import pair_is_sibling
from .errors import SibscanError
from .options import LINKAGES
from .verdict import Verdict

__all__ = ["GroupTable", "complete_linkage", "connected_components", "group_table", "sibling_groups"]


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


def complete_linkage(atoms: np.ndarray, a: np.ndarray, b: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Greedy complete linkage of atoms over measured sibling pairs.

    Parameters
    ----------
    atoms : ndarray of shape (n,), int
        The atom of each item (items of one atom are never separated).
    a, b : ndarray of shape (m,), int
        Items of each measured sibling pair (at or above the cutoff).
    score : ndarray of shape (m,)
        The pair's score; pairs are tried highest first (ties: lower atoms first).

    Returns
    -------
    ndarray of shape (n,), int64
        Group of each item, numbered 0.. in order of each group's smallest item.  Two atoms share a
        group only when every pair of atoms in that group has a measured pair between them.
    """
    atoms = np.asarray(atoms, np.int64)
    pa, pb = atoms[np.asarray(a, np.int64)], atoms[np.asarray(b, np.int64)]
    keep = pa != pb
    lo, hi, sc = np.minimum(pa, pb)[keep], np.maximum(pa, pb)[keep], np.asarray(score, np.float64)[keep]
    order = np.lexsort((hi, lo, -sc))
    lo, hi = lo[order], hi[order]
    linked = set(zip(lo.tolist(), hi.tolist()))
    cluster = {}  # atom -> its cluster's representative atom (only atoms that were ever merged)
    members = {}  # representative -> its atoms
    # a loop over the pairs above the cutoff only (a small share of the table); each merge checks
    # every atom pair across the two clusters, stopping at the first unmeasured one
    for x, y in zip(lo.tolist(), hi.tolist()):
        cx, cy = cluster.get(x, x), cluster.get(y, y)
        if cx == cy:
            continue
        mx, my = members.get(cx, [cx]), members.get(cy, [cy])
        if all((min(u, v), max(u, v)) in linked for u in mx for v in my):
            if len(mx) < len(my):
                cx, cy, mx, my = cy, cx, my, mx
            members[cx] = mx + my
            members.pop(cy, None)
            for v in my:
                cluster[v] = cx
    rep = np.arange(atoms.max() + 1 if atoms.size else 0, dtype=np.int64)
    for v, c in cluster.items():
        rep[v] = c
    return _renumber(rep[atoms]) if atoms.size else np.zeros(0, np.int64)


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
        The cutoff record used (see :func:`sibscan.verdict.cutoff.resolve_cutoff`).
    linkage : str
        ``complete`` or ``single`` (see the module docstring).
    pairs : tuple of three ndarrays of shape (p,)
        The measured sibling pairs (rows of this table, and their scores) at or above the cutoff.
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
    linkage: str = "single"
    pairs: tuple = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def sizes(self) -> np.ndarray:
        """Size of each item's group, shape (n,)."""
        return np.bincount(self.group)[self.group]

    @property
    def n_groups(self) -> int:
        return int(self.group.max()) + 1 if len(self.group) else 0

    @property
    def dropped(self) -> int:
        """Sibling-graph edges whose two ends are in different groups (0 under single linkage)."""
        a, b = self.edges
        return int((self.group[a] != self.group[b]).sum()) if len(a) else 0

    def largest(self) -> Optional[dict]:
        """The largest group and why it holds together, or None when every group is a single item.

        ``{group, size, n_train, n_test, labels, linkage, exact_twins, shared_source, pairs_measured,
        min_pair_score, reason}``: under complete linkage every pair of its atoms (exact twins and
        items sharing a source) was measured at or above the cutoff, and ``min_pair_score`` is the
        lowest of those pairs.
        """
        sizes = np.bincount(self.group) if len(self.group) else np.zeros(0, np.int64)
        if not len(sizes) or sizes.max() < 2:
            return None
        g = int(np.argmax(sizes))
        rows = np.flatnonzero(self.group == g)
        inside = np.zeros(len(self.group), bool)
        inside[rows] = True
        pa, pb, ps = self.pairs
        m = inside[pa] & inside[pb] if len(pa) else np.zeros(0, bool)
        exact = self.fingerprints is not None and len(np.unique(self.fingerprints[rows], axis=0)) == 1
        source = bool(len(set(self.sources[rows].tolist())) == 1 and self.sources[rows][0] != "")
        measured = int(m.sum())
        low = float(ps[m].min()) if measured else None
        if self.linkage == "complete":
            reason = ("exact twins" if exact else "one shared source" if source else
                      "every pair of its members is an exact twin, shares a source or was scored at or above the "
                      f"cutoff ({measured} measured pairs, the lowest {fmt.score(low)})" if low is not None else
                      "exact twins and shared sources")
        else:
            # the linkage is named by every sentence that quotes this reason
            reason = (f"connected through {fmt.plural(measured, 'sibling pair')} at or above the cutoff, "
                      "exact twins and shared sources (members need not pair with each other)")
        return {"group": f"g{g}", "size": int(sizes[g]), "n_train": int((self.split[rows] == "train").sum()),
                "n_test": int((self.split[rows] == "test").sum()),
                "labels": sorted(set(self.labels[rows].tolist()) - {""}),
                "linkage": self.linkage, "exact_twins": bool(exact), "shared_source": source,
                "pairs_measured": measured, "min_pair_score": low, "reason": reason}

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["split", "id", "label", "source", "group", "group_size"])
        sizes = self.sizes
        w.writerows(zip(self.split, self.ids, self.labels, self.sources, (f"g{g}" for g in self.group), sizes))
        return buf.getvalue()


def sibling_groups(scan_dir, *, cutoff: Optional[float] = None, calibration=None, force: bool = False,
                   sources: bool = True, linkage: str = "complete") -> GroupTable:
    """Group the items of a scan into connected components of the sibling graph.

    Parameters
    ----------
    scan_dir : str or Path
        A finished scan directory.
    cutoff, calibration, force
        Which cutoff makes a sibling (see :func:`sibscan.verdict.cutoff.resolve_cutoff`). With no
        cutoff anywhere, only exact twins (and shared sources) join items.
    sources : bool
        Also join items that share a group/source value.
    linkage : {"complete", "single"}
        See the module docstring.
    """
    check_linkage(linkage)
    verdict = Verdict.open(scan_dir, cutoff=cutoff, calibration=calibration, force=force)
    return group_table(verdict, sources=sources, linkage=linkage)


def check_linkage(linkage: str) -> None:
    """Refuse an unknown linkage, naming the valid ones."""
    if linkage not in LINKAGES:
        raise SibscanError(f"unknown --linkage {linkage!r}; available: {', '.join(LINKAGES)}")


def group_table(verdict: Verdict, sources: bool = True, linkage: str = "complete") -> GroupTable:
    """The sibling groups of a scan at its verdict's cutoff: pairs its hand labels answer are decided by
    them (:attr:`sibscan.verdict.testscores.TestScores.nb_label`), the rest by score."""
    check_linkage(linkage)
    (train, fp_train), (test, fp_test) = verdict.train, verdict.test
    cutoff, scan = verdict.cutoff, verdict.scan
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

    firm_a, firm_b = [], []  # exact twins and shared sources: always joined
    if fps is not None:
        ea, eb = _same_value_edges(fps)
        firm_a.append(ea), firm_b.append(eb)
    pair_a = pair_b = np.zeros(0, np.int64)
    pair_s = np.zeros(0, np.float32)
    nb = verdict.neighbours if scan.neighbours_path.exists() else None
    if nb is not None and len(nb):
        shift = lambda split: np.where(split == "test", n_train, 0)  # noqa: E731
        ga = nb["query_index"] + shift(nb["query_split"])
        gb = nb["neighbour_index"] + shift(nb["neighbour_split"])
        exact = nb["exact"].astype(bool)
        firm_a.append(ga[exact]), firm_b.append(gb[exact])
        if cutoff.value is not None:
            near = pair_is_sibling(nb["score"], verdict.scores.nb_label, cutoff.value) & ~exact
            pair_a, pair_b, pair_s = ga[near], gb[near], nb["score"][near]
    if sources:
        ea, eb = _same_value_edges(srcs, valid=(srcs != ""))
        firm_a.append(ea), firm_b.append(eb)
    fa = np.concatenate(firm_a) if firm_a else np.zeros(0, np.int64)
    fb = np.concatenate(firm_b) if firm_b else np.zeros(0, np.int64)
    a, b = np.concatenate([fa, pair_a]).astype(np.int64), np.concatenate([fb, pair_b]).astype(np.int64)
    if linkage == "single":
        group = connected_components(n, a, b)
    else:
        group = complete_linkage(connected_components(n, fa, fb), pair_a, pair_b, pair_s)
    return GroupTable(split, ids.astype(str), index, labels, srcs, group, fps, (a, b), cutoff.record(), linkage,
                      (pair_a.astype(np.int64), pair_b.astype(np.int64), pair_s.astype(np.float32)))
