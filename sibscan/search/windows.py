"""The windows view as two searches: whole images against an index of the other split's windows.

The view's score of a (test, train) pair was the best match of one image's whole-image vector (or
its mirror) against any window of the other (:func:`sibscan.kernels.windows.window_pair_scores`),
computed for every pair: O(n_test x n_train x windows), 2,269 s of a 2,494 s CIFAR-10 scan.  Here each
direction is a nearest-neighbour search of the kind the scan already runs, so it costs what search costs:

* **crop** (the test image is a crop of a train image): the train images' windows are the database,
  the test images' whole-image vectors and their mirrors the queries; each test image keeps the ``k``
  train images whose best window scores highest.
* **wide** (the test image is a wider shot of a train image): the test images' windows are the
  database, the train images' whole-image vectors and mirrors the queries; each train image keeps
  its ``k`` best test images, and each test image is proposed to the train images that kept it.

A test image's candidates are the union of both, best score first, the top ``k`` of it
(:func:`join_directions`).  The database is a faiss index (:func:`build_index`): exact (flat) while
it holds at most :data:`FLAT_MAX_VECTORS` windows and its search compares at most
:data:`FLAT_MAX_PAIRS` (query, window) pairs, past either an inverted file of 8-bit codes
(``IVF{nlist},SQ8``), which bounds memory at 72 bytes a window and scans ``nprobe`` of its lists per
query instead of every window.  On CIFAR-10 at a quarter (12,712 train x 2,705 test images, load
about 9) a flat index of the 793,000 test windows searched by 25,424 train whole-image rows ran
more than a minute per 8,192 rows, which is what the pair bound stops.
:func:`windows_view_reference` computes the same candidates by brute force (every pair's score), the
reference the flat path is tested against.
"""
from __future__ import annotations

import math
from typing import Iterator, Optional, Tuple

import numpy as np

from ..progress import bar
from ..errors import require
from ..kernels.windows import mirror, window_vectors

__all__ = ["FLAT_MAX_PAIRS", "FLAT_MAX_VECTORS", "build_index", "image_topk", "join_directions", "windows_view_reference",
           "windows_view_search"]

#: windows held in an exact (flat) index; past it an IVF index of 8-bit codes.  A flat index of this
#: many 64-float windows is 256 MiB and searching it is a full matrix product per query block
FLAT_MAX_VECTORS = 1 << 20
#: (query row, window) pairs a flat index's search may compare (2^32: about 2.7e11 multiply-adds, a few
#: seconds on 2 cores); past it the IVF index, whose search scans ``nprobe / nlist`` of the windows
FLAT_MAX_PAIRS = 1 << 32
#: images cut into windows at a time while the index is filled (1,024 x 293 windows: 77 MB of floats)
_ADD_BLOCK = 1024
#: queries searched at a time (the unit of progress)
_QUERY_BLOCK = 4096
#: IVF lists probed per query
NPROBE = 16


def _whole_and_mirror(gray: np.ndarray, cells: int) -> np.ndarray:
    """Whole-image vectors, each followed by its mirror: shape (2 n, cells * cells), float32."""
    whole = window_vectors(gray, np.array([[0.0, 0.0, 1.0]]), cells)[:, 0]
    return np.stack([whole, mirror(whole, cells)], axis=1).reshape(2 * len(gray), -1)


def _window_blocks(gray: np.ndarray, boxes: np.ndarray, cells: int) -> Iterator[np.ndarray]:
    """Window vectors of ``_ADD_BLOCK`` images at a time, flattened: (images x windows, cells * cells)."""
    for a in range(0, len(gray), _ADD_BLOCK):
        v = window_vectors(gray[a:a + _ADD_BLOCK], boxes, cells)
        yield v.reshape(-1, v.shape[2])


def build_index(gray: np.ndarray, boxes: np.ndarray, cells: int, *, kind: str = "auto", n_queries: int = 0,
                progress: bool = True, desc: str = "index windows"):
    """A faiss inner-product index of every window of every image; row ``i * n_windows + w`` is image
    ``i``'s window ``w``.

    Parameters
    ----------
    gray : ndarray of shape (n, s, s), uint8
    boxes : ndarray of shape (n_windows, 3)
    kind : {"auto", "flat", "ivf"}
        ``auto``: flat up to :data:`FLAT_MAX_VECTORS` windows and :data:`FLAT_MAX_PAIRS` pairs with
        ``n_queries`` query rows, else IVF (``nlist`` sqrt(windows), at most 1,024; 8-bit scalar codes;
        trained on about 64 windows a list from images drawn with a fixed seed).
    n_queries : int
        Query rows the index will be searched with (for ``auto``).
    """
    faiss = require("faiss", "faiss", "the windows view's index")
    n_vectors, dim = len(gray) * len(boxes), cells * cells
    if kind == "auto":
        kind = "flat" if n_vectors <= FLAT_MAX_VECTORS and n_vectors * n_queries <= FLAT_MAX_PAIRS else "ivf"
    if kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif kind == "ivf":
        nlist = int(min(1024, max(16, math.isqrt(max(n_vectors, 1)))))
        index = faiss.index_factory(dim, f"IVF{nlist},SQ8", faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(0)
        n_train_images = min(len(gray), max(1, 64 * nlist // len(boxes) + 1))
        pick = np.sort(rng.choice(len(gray), n_train_images, replace=False))
        sample = np.concatenate(list(_window_blocks(gray[pick], boxes, cells)))
        index.train(sample)
        index.nprobe = min(NPROBE, nlist)
    else:
        raise ValueError(f"unknown index kind {kind!r}; use auto, flat or ivf")
    with bar(len(gray), desc, "image", enabled=progress) as b:
        for block in _window_blocks(gray, boxes, cells):
            index.add(block)
            b.update(len(block) // len(boxes))
    return index


def image_topk(index, n_windows: int, queries: np.ndarray, k: int, *, progress: bool = True,
               desc: str = "search windows") -> Tuple[np.ndarray, np.ndarray]:
    """The ``k`` images of ``index`` whose best window scores highest against each query pair.

    ``queries`` holds each query image's whole-image vector followed by its mirror (rows ``2 i`` and
    ``2 i + 1``); an image's score is its best window against either.  Windows are searched ``kw`` at a
    time per row, ``kw`` doubled for the rows whose ``k`` best images are not yet certain (fewer than
    ``k`` images score at or above the lower of the two rows' ``kw``-th window), so on a flat index the
    result is exact.

    Returns
    -------
    sims : ndarray of shape (n_queries, k), float32 (-inf where none)
    idx : ndarray of shape (n_queries, k), int64 (-1 where none); ties: lower image first
    """
    n = len(queries) // 2
    n_images = index.ntotal // max(n_windows, 1)
    k = min(k, n_images)
    sims = np.full((n, k), -np.inf, np.float32)
    idx = np.full((n, k), -1, np.int64)
    with bar(n, desc, "image", enabled=progress) as b:
        for a in range(0, n, _QUERY_BLOCK):
            rows = np.arange(a, min(n, a + _QUERY_BLOCK))
            kw = min(index.ntotal, 4 * k)
            while len(rows) and k:
                q = queries[(2 * rows[:, None] + np.arange(2)).reshape(-1)]
                d, i = index.search(np.ascontiguousarray(q, np.float32), kw)
                s, j, sure = _best_images(d.reshape(len(rows), 2 * kw), i.reshape(len(rows), 2 * kw),
                                          d[:, -1].reshape(len(rows), 2).max(axis=1), n_windows, k)
                # a row padded with -1 has seen every window its search reaches (an IVF index's probed lists)
                done = sure | (kw >= index.ntotal) | (i < 0).reshape(len(rows), 2 * kw).any(axis=1)
                sims[rows[done]], idx[rows[done]] = s[done], j[done]
                rows, kw = rows[~done], min(index.ntotal, 2 * kw)
            b.update(min(n, a + _QUERY_BLOCK) - a)
    return sims, idx


def _best_images(d: np.ndarray, i: np.ndarray, floor: np.ndarray, n_windows: int, k: int):
    """Per row: the best score of each image among its windows found, the top ``k`` images, and
    whether they are certain (``k`` images at or above ``floor``, below which windows were not seen)."""
    rows = np.repeat(np.arange(len(d)), d.shape[1])
    img, score = i.reshape(-1) // n_windows, d.reshape(-1)
    ok = i.reshape(-1) >= 0
    rows, img, score = rows[ok], img[ok], score[ok]
    order = np.lexsort((-score, img, rows))  # per (row, image) the best window first
    rows, img, score = rows[order], img[order], score[order]
    first = np.r_[True, (rows[1:] != rows[:-1]) | (img[1:] != img[:-1])]
    rows, img, score = rows[first], img[first], score[first]
    order = np.lexsort((img, -score, rows))  # per row best first, ties lower image first
    rows, img, score = rows[order], img[order], score[order]
    start = np.searchsorted(rows, np.arange(len(d)))
    rank = np.arange(len(rows)) - start[rows]
    top = rank < k
    s = np.full((len(d), k), -np.inf, np.float32)
    j = np.full((len(d), k), -1, np.int64)
    s[rows[top], rank[top]], j[rows[top], rank[top]] = score[top], img[top]
    sure = np.bincount(rows[score >= floor[rows]], minlength=len(d)) >= k
    return s, j, sure


def join_directions(crop: Tuple[np.ndarray, np.ndarray], wide: Tuple[np.ndarray, np.ndarray], n_test: int,
                    k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Each test image's top ``k`` of its crop candidates and the train images whose wide search kept it.

    Parameters
    ----------
    crop : (sims, idx) of shape (n_test, k_c): train images per test image
    wide : (sims, idx) of shape (n_train, k_w): test images per train image

    Returns
    -------
    sims, idx : ndarrays of shape (n_test, k) (-inf / -1 where fewer); a pair found both ways keeps
    its higher score; ties: lower train index first
    """
    cs, ci = crop
    ws, wi = wide
    t = np.concatenate([np.repeat(np.arange(cs.shape[0]), cs.shape[1]), wi.reshape(-1)])
    j = np.concatenate([ci.reshape(-1), np.repeat(np.arange(ws.shape[0]), ws.shape[1])])
    s = np.concatenate([cs.reshape(-1), ws.reshape(-1)])
    ok = (t >= 0) & (j >= 0)
    t, j, s = t[ok], j[ok], s[ok]
    order = np.lexsort((-s, j, t))
    t, j, s = t[order], j[order], s[order]
    first = np.r_[True, (t[1:] != t[:-1]) | (j[1:] != j[:-1])]
    t, j, s = t[first], j[first], s[first]
    order = np.lexsort((j, -s, t))
    t, j, s = t[order], j[order], s[order]
    rank = np.arange(len(t)) - np.searchsorted(t, np.arange(n_test))[t]
    top = rank < k
    sims = np.full((n_test, k), -np.inf, np.float32)
    idx = np.full((n_test, k), -1, np.int64)
    sims[t[top], rank[top]], idx[t[top], rank[top]] = s[top], j[top]
    return sims, idx


def windows_view_search(train: np.ndarray, test: np.ndarray, k: int, boxes: np.ndarray, cells: int, *,
                        kind: str = "auto", progress: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """The windows view's top ``k`` train images of each test image, both directions through an index.

    Parameters
    ----------
    train, test : ndarray of shape (n, s, s), uint8
        Grey images.
    boxes : ndarray of shape (n_windows, 3)
        The windows (:func:`sibscan.kernels.windows.window_boxes`); window 0 is the whole image.
    kind : {"auto", "flat", "ivf"}
        The index of each direction (:func:`build_index`).

    Returns
    -------
    sims : ndarray of shape (n_test, k), float32 (-inf where none)
    idx : ndarray of shape (n_test, k), int64 (-1 where none)
    """
    k = min(k, len(train))
    if k == 0 or len(test) == 0:
        return np.full((len(test), k), -np.inf, np.float32), np.full((len(test), k), -1, np.int64)
    w = len(boxes)
    index = build_index(train, boxes, cells, kind=kind, n_queries=2 * len(test), progress=progress, desc="train windows")
    crop = image_topk(index, w, _whole_and_mirror(test, cells), k, progress=progress, desc="test images against them")
    del index
    index = build_index(test, boxes, cells, kind=kind, n_queries=2 * len(train), progress=progress, desc="test windows")
    wide = image_topk(index, w, _whole_and_mirror(train, cells), k, progress=progress, desc="train images against them")
    return join_directions(crop, wide, len(test), k)


def windows_view_reference(train: np.ndarray, test: np.ndarray, k: int, boxes: np.ndarray,
                           cells: int) -> Tuple[np.ndarray, np.ndarray]:
    """:func:`windows_view_search` by brute force: every pair's crop and wide score, each direction's
    top ``k`` by a stable sort, joined by :func:`join_directions`.  For small sets (tests)."""
    k = min(k, len(train))
    vt, vr = window_vectors(test, boxes, cells), window_vectors(train, boxes, cells)
    wt, wr = _whole_and_mirror(test, cells), _whole_and_mirror(train, cells)
    n_t, n_r, w = len(test), len(train), len(boxes)
    crop = (wt @ vr.reshape(n_r * w, -1).T).reshape(n_t, 2, n_r, w).max(axis=(1, 3))  # (n_test, n_train)
    wide = (wr @ vt.reshape(n_t * w, -1).T).reshape(n_r, 2, n_t, w).max(axis=(1, 3))  # (n_train, n_test)

    def topk(m: np.ndarray, kk: int):
        order = np.argsort(-m, axis=1, kind="stable")[:, :kk]
        return np.take_along_axis(m, order, axis=1).astype(np.float32), order.astype(np.int64)

    return join_directions(topk(crop, k), topk(wide, min(k, n_t)), n_t, k)
