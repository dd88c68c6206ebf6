"""Exact inner-product top-k, streamed over database blocks with a running top-k merge.

The database arrives as blocks ``(start, array of shape (b, d))``; each block's scores are computed
with one matrix product, reduced to the block's top-k, and merged into a running result with ids
offset by the block start, finalised once (faiss ``ResultHeap`` style).  The block is the unit of
memory, progress and distribution.

Ties are deterministic: equal similarities are ordered by the lower database index first, exactly
as a stable ``argsort(-scores)`` of the full score matrix would order them.

Selecting the top-k of a score block is done without a per-row partial sort (``argpartition`` costs
~25 ns an element, five times the matrix product): the row is cut into groups, the group maxima are
reduced (a SIMD pass), and only the ``k`` best groups are searched.  Every top-k element lies in one
of the ``k`` groups with the largest maxima, unless the ``k``-th and ``k+1``-th group maxima tie —
those rare rows take a full stable sort.  A row of no more than ``k`` groups partitions out its
``k + 1`` best scores directly; the numpy search makes its tiles wide enough (:func:`tile_shape`)
that this is the exception.

The same blocked search in torch (CPU or CUDA, with half-precision candidates certified in fp32) is
:mod:`sibscan.kernels.topk_torch`.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator, Optional, Tuple

import numpy as np

__all__ = ["Blocks", "GROUP", "ResultHeap", "TILE_BYTES", "TILE_GROUPS_PER_K", "TILE_MIN_ROWS", "block_topk_numpy",
           "flatten_topk", "iter_array_blocks", "merge_topk",
           "order_ties", "rank_within_groups", "search_blocks_numpy", "tile_shape"]

#: ``(start, block)`` pairs in increasing ``start`` order; a callable returns a fresh iterator.
Blocks = Callable[[], Iterable[Tuple[int, np.ndarray]]]

#: columns per group in the grouped top-k selection (numpy and torch)
GROUP = 32


# --------------------------------------------------------------------------------------------- merge
def merge_topk(sims_a: np.ndarray, ids_a: np.ndarray, sims_b: np.ndarray, ids_b: np.ndarray,
               k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Merge two top-k lists per row into one, ordered by (similarity desc, index asc).

    Parameters
    ----------
    sims_a, ids_a : ndarray of shape (m, ka)
    sims_b, ids_b : ndarray of shape (m, kb)
        Padding entries carry id -1 and similarity -inf; they sort last.
    k : int

    Returns
    -------
    sims : ndarray of shape (m, k) float32
    ids : ndarray of shape (m, k) int64
    """
    sims = np.concatenate([sims_a, sims_b], axis=1).astype(np.float32, copy=False)
    ids = np.concatenate([ids_a, ids_b], axis=1).astype(np.int64, copy=False)
    # -1 padding must sort after real ids of equal (-inf) similarity
    tie_key = np.where(ids < 0, np.iinfo(np.int64).max, ids)
    order = np.lexsort((tie_key, -sims), axis=1)[:, :k]
    sims = np.take_along_axis(sims, order, axis=1)
    ids = np.take_along_axis(ids, order, axis=1)
    if sims.shape[1] < k:
        pad = k - sims.shape[1]
        sims = np.pad(sims, ((0, 0), (0, pad)), constant_values=-np.inf)
        ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
    return sims, ids


def order_ties(sims: np.ndarray, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """A top-k result sorted by similarity, with each run of equal similarities put in index order.

    Parameters
    ----------
    sims : ndarray of shape (m, k), descending per row
    ids : ndarray of shape (m, k), int64

    Returns
    -------
    sims, ids : the same arrays, rows with ties re-sorted by (similarity desc, index asc); only those
        rows are touched.
    """
    if sims.shape[1] < 2:
        return sims, ids
    rows = np.flatnonzero((sims[:, 1:] == sims[:, :-1]).any(axis=1))
    if rows.size:
        order = np.lexsort((ids[rows], -sims[rows]), axis=1)
        sims[rows] = np.take_along_axis(sims[rows], order, axis=1)
        ids[rows] = np.take_along_axis(ids[rows], order, axis=1)
    return sims, ids


class ResultHeap:
    """Running top-k of ``n_queries`` rows, merged block by block, finalised once.

    Parameters
    ----------
    n_queries : int
    k : int
    """

    def __init__(self, n_queries: int, k: int):
        self.k = int(k)
        self.sims = np.full((n_queries, self.k), -np.inf, dtype=np.float32)
        self.ids = np.full((n_queries, self.k), -1, dtype=np.int64)

    def add_result(self, sims: np.ndarray, ids: np.ndarray, rows=slice(None)) -> None:
        """Merge a block's top-k (``ids`` already global) into ``rows`` (a slice or row numbers) of
        the running result."""
        self.sims[rows], self.ids[rows] = merge_topk(self.sims[rows], self.ids[rows], sims, ids, self.k)

    def finalize(self) -> Tuple[np.ndarray, np.ndarray]:
        return self.sims, self.ids


# ------------------------------------------------------------------------------ block top-k: numpy
def block_topk_numpy(scores: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Stable top-k of each row of a score block.

    Parameters
    ----------
    scores : ndarray of shape (m, b) float32
    k : int, ``1 <= k``

    Returns
    -------
    vals : ndarray of shape (m, min(k, b)) float32, descending
    idx : ndarray of shape (m, min(k, b)) int64, column indices (lower first on ties)
    """
    m, b = scores.shape
    if k == 1:
        idx = scores.argmax(axis=1)[:, None]  # first occurrence on ties
        return np.take_along_axis(scores, idx, axis=1), idx.astype(np.int64)
    ng = b // GROUP
    if k >= b:
        idx = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, idx, axis=1), idx.astype(np.int64)
    if ng <= k:  # too few groups to skip any: the k + 1 best of the whole row
        cols = np.broadcast_to(np.arange(b), (m, b))
        return _best_of(scores, cols, scores, k, np.zeros(m, bool))
    main = ng * GROUP
    # interleaved groups: group c holds columns c, c + ng, c + 2 ng, ... (a strided max is SIMD-fast)
    gmax = scores[:, :main].reshape(m, GROUP, ng).max(axis=1)
    part = np.argpartition(gmax, ng - k - 1, axis=1)[:, ng - k - 1:]  # the k + 1 largest group maxima
    pvals = np.take_along_axis(gmax, part, axis=1)
    porder = np.argsort(-pvals, axis=1, kind="stable")
    part = np.take_along_axis(part, porder, axis=1)
    pvals = np.take_along_axis(pvals, porder, axis=1)
    tied = pvals[:, k - 1] == pvals[:, k]
    groups = part[:, :k]                                                   # (m, k)
    cols = (groups[:, None, :] + (np.arange(GROUP) * ng)[None, :, None]).reshape(m, -1)
    if main < b:  # tail columns are always candidates
        tail = np.broadcast_to(np.arange(main, b), (m, b - main))
        cols = np.concatenate([cols, tail], axis=1)
    cvals = np.take_along_axis(scores, cols, axis=1)
    return _best_of(cvals, cols, scores, k, tied)


def _best_of(cvals: np.ndarray, cols: np.ndarray, scores: np.ndarray, k: int,
             tied: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Stable top-k of each row from candidate scores ``cvals`` at columns ``cols`` of ``scores``
    (both of shape (m, c), c > k): the k + 1 best candidates (unordered), then an exact (value desc,
    column asc) sort of those alone.  Rows marked ``tied``, and rows where the k-th and k+1-th tie (an
    equal candidate of lower column may lie outside the k + 1), take a full stable sort of ``scores``."""
    best = np.argpartition(cvals, cvals.shape[1] - k - 1, axis=1)[:, cvals.shape[1] - k - 1:]
    bvals = np.take_along_axis(cvals, best, axis=1)
    bcols = np.take_along_axis(cols, best, axis=1)
    order = np.lexsort((bcols, -bvals), axis=1)
    bvals = np.take_along_axis(bvals, order, axis=1)
    bcols = np.take_along_axis(bcols, order, axis=1)
    tied = tied | (bvals[:, k - 1] == bvals[:, k])
    vals = np.ascontiguousarray(bvals[:, :k])
    idx = bcols[:, :k].astype(np.int64)
    if tied.any():
        rows = np.flatnonzero(tied)
        full = np.argsort(-scores[rows], axis=1, kind="stable")[:, :k]
        idx[rows] = full
        vals[rows] = np.take_along_axis(scores[rows], full, axis=1)
    return vals, idx


#: bytes of one score tile of the numpy search: a tile this size stays in a 32 MiB L3 while its top-k
#: is read back (a 4,096 x 35,746 tile, 585 MB, made the reduction read DRAM)
TILE_BYTES = 16 << 20
#: fewest database rows per tile (a thinner product loses BLAS speed)
TILE_MIN_ROWS = 1024
#: groups of a top-k tile per group searched (k + 1): 8 ran 10-30 % faster than 4 (4,096 queries,
#: d=64 to 512, k=10 to 100, 2 cores loaded by other jobs); at or under 1 a row's k + 1 best are
#: partitioned out of the whole row
TILE_GROUPS_PER_K = 8


def tile_shape(m: int, k: int, query_block: int = 4096) -> Tuple[int, int]:
    """(query rows, database rows) of one score tile of :func:`search_blocks_numpy`.

    A tile has at least ``TILE_MIN_ROWS`` database rows and, for ``k > 1``, at least
    ``TILE_GROUPS_PER_K x GROUP x (k + 1)`` (that many times the k + 1 groups
    :func:`block_topk_numpy` searches, so it skips most of the tile rather than sorting it); the
    query rows are cut so the tile holds at most ``TILE_BYTES`` of scores (more only where one query
    row of the narrowest tile is larger).
    """
    cols = TILE_MIN_ROWS if k <= 1 else max(TILE_MIN_ROWS, TILE_GROUPS_PER_K * GROUP * (k + 1))
    qb = max(1, min(query_block, m, TILE_BYTES // (4 * cols)))
    return qb, max(cols, TILE_BYTES // (4 * qb))


def search_blocks_numpy(queries: np.ndarray, blocks: Blocks, k: int, *, query_block: int = 4096,
                        on_block: Optional[Callable[[int], None]] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Exact top-k of ``queries @ block.T`` over all blocks, numpy BLAS.

    Each block is cut into score tiles of :func:`tile_shape` (at most ``TILE_BYTES``), computed into
    one preallocated buffer, so the top-k reads scores still in cache and no tile allocates.  Top-1
    keeps a running best per query (``argmax``; a later tile replaces it only on a strictly higher
    score, so ties keep the lower index); top-k reduces with :func:`block_topk_numpy` and merges into
    a :class:`ResultHeap` only the rows of a tile whose highest score beats their running k-th
    (strictly, for the same reason): after the first tiles most rows skip it.  A row whose running
    result still holds a placeholder (id -1) always takes the tile, whatever its scores.

    Parameters
    ----------
    queries : ndarray of shape (m, d) float32
    blocks : callable returning an iterable of ``(start, ndarray of shape (b, d))``
    k : int
    query_block : int
        Most queries per matrix product (fewer where k needs wider tiles, :func:`tile_shape`).
    on_block : callable, optional
        Called with the number of database rows after each block (progress).

    Returns
    -------
    sims : ndarray of shape (m, k) float32
    ids : ndarray of shape (m, k) int64 (-1 / -inf where fewer than k rows exist)
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    m = queries.shape[0]
    qb, tile = tile_shape(m, k, query_block)
    buf = np.empty(qb * tile, dtype=np.float32)
    heap = ResultHeap(m, k)
    rows = np.arange(qb)
    for start, block in blocks():
        block = np.asarray(block, dtype=np.float32)
        b = block.shape[0]
        for t0 in range(0, b, tile):
            part = block[t0:t0 + tile]
            t = part.shape[0]
            for q0 in range(0, m, qb):
                q1 = min(m, q0 + qb)
                scores = buf[: (q1 - q0) * t].reshape(q1 - q0, t)
                np.matmul(queries[q0:q1], part.T, out=scores)
                if k == 1:
                    best = scores.argmax(axis=1)
                    vals = scores[rows[: q1 - q0], best]
                    # strict: an equal score of a later row loses; written ~(<=) so a NaN is never
                    # skipped, and a row still holding the placeholder (id -1) always takes one
                    better = ~(vals <= heap.sims[q0:q1, 0]) | (heap.ids[q0:q1, 0] < 0)
                    heap.sims[q0:q1, 0][better] = vals[better]
                    heap.ids[q0:q1, 0][better] = best[better] + (start + t0)
                else:  # only rows whose best score here beats their running k-th enter the merge
                    hit = np.flatnonzero(~(scores.max(axis=1) <= heap.sims[q0:q1, k - 1])
                                         | (heap.ids[q0:q1, k - 1] < 0))
                    if hit.size == 0:
                        continue
                    sub = scores if hit.size == q1 - q0 else scores[hit]
                    vals, idx = block_topk_numpy(sub, k)
                    idx += start + t0
                    heap.add_result(vals, idx, hit + q0)
        if on_block is not None:
            on_block(b)
    return heap.finalize()


def iter_array_blocks(array, block_rows: int) -> Iterator[Tuple[int, np.ndarray]]:
    """Yield ``(start, array[start:start + block_rows])`` over an in-memory or memory-mapped array."""
    n = array.shape[0]
    for start in range(0, n, block_rows):
        yield start, array[start:start + block_rows]


def flatten_topk(sims: np.ndarray, idx: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A top-k result of shape (m, k) as flat ``(query row, neighbour row, similarity, rank)`` arrays,
    without the padding entries (index -1)."""
    m, k = idx.shape
    qi = np.repeat(np.arange(m, dtype=np.int64), k)
    ni = idx.reshape(-1)
    keep = ni >= 0
    rank = np.tile(np.arange(k, dtype=np.int32), m)
    return qi[keep], ni[keep], sims.reshape(-1)[keep], rank[keep]


def rank_within_groups(start: np.ndarray) -> np.ndarray:
    """Position of each row inside its run of rows, given a bool mask of shape (n,) of where each run starts."""
    n = len(start)
    return np.arange(n) - np.maximum.accumulate(np.where(start, np.arange(n), 0))
