"""The ``faiss`` search backend: faiss's exhaustive inner-product kernel, CPU or GPU.

On the CPU the kernel is ``faiss.knn`` (what ``IndexFlatIP.search`` runs, without building an
index): an in-memory float32 database is one block, read where it is.  A large query set is cut into
row ranges searched at the same time on one thread each (one per core faiss would use), each with
faiss's kernel on one OpenMP thread: every query row sees the same database rows and the same
kernel, so the answer is faiss's, and the cores never wait for each other.  The kernel is the same
only while every range is large enough for faiss's BLAS path (rows x d at least
``faiss.cvar.distance_compute_blas_threshold``; below it faiss runs a scalar loop, 2-4x slower):
:func:`split_bounds` never cuts a range below that.  The similarities can still differ from an
unsplit call in the last bit (within 2e-7 at d=384): the BLAS product rounds by its shape and
thread count, as faiss's own result does between one and two OpenMP threads.  faiss's own threading
parallelises inside each of its 4,096 x 1,024 score tiles (a BLAS product, then a reduction over
the queries) and synchronises its threads twice a tile; on a 2-core AMD EPYC that cost 25-35 % more
CPU time than the same search split by rows (5,000 x 100,000 x 512, top-1 and top-5, one thread a
range: 5.1-5.6 CPU-seconds against 6.9-8.4, measured under load from other processes, which makes
the waits of the threaded kernel longer).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Tuple

import numpy as np

from ..errors import SibscanError
from ..kernels.topk import ResultHeap, order_ties

__all__ = ["FAISS_TILE_BYTES", "SPLIT_MIN_ROWS", "faiss_tile_bytes", "knn_cpu", "search_faiss", "split_bounds", "split_workers"]

#: fewest query rows per range when a CPU search is split across cores (below: one faiss call); a
#: range is also never cut below faiss's BLAS threshold (:func:`split_bounds`)
SPLIT_MIN_ROWS = 256
#: bytes of the score tile faiss's BLAS path allocates per ``faiss.knn`` call (4,096 x 1,024 float32)
FAISS_TILE_BYTES = 4 * 4096 * 1024
#: ranges per worker thread (more than one, so a core slowed by another process hands work over)
_RANGES_PER_WORKER = 2


def split_workers() -> int:
    """Threads a split CPU search runs on: the cores faiss would use (``faiss.omp_get_max_threads``,
    which follows ``OMP_NUM_THREADS`` and ``faiss.omp_set_num_threads``)."""
    import faiss

    return max(1, int(faiss.omp_get_max_threads()))


def split_bounds(m: int, d: int, workers: int) -> np.ndarray:
    """Row bounds of the ranges a CPU search of ``m`` queries of dimension ``d`` is cut into.

    Every range has at least :data:`SPLIT_MIN_ROWS` rows and at least enough rows for faiss's BLAS
    path (rows x d >= ``faiss.cvar.distance_compute_blas_threshold``, read at run time), so a split
    search runs faiss's own kernel; a query set too small for two such ranges is one range.

    Returns
    -------
    bounds : ndarray of shape (ranges + 1,) int64, from 0 to ``m``
    """
    import faiss

    blas_rows = -(-int(faiss.cvar.distance_compute_blas_threshold) // max(1, d))
    ranges = min(workers * _RANGES_PER_WORKER, m // max(SPLIT_MIN_ROWS, blas_rows))
    if workers < 2 or ranges < 2:
        return np.array([0, m], np.int64)
    return np.linspace(0, m, ranges + 1).astype(np.int64)


def knn_cpu(q: np.ndarray, x: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """faiss's exact inner-product top-``k`` of ``q`` against ``x`` on the CPU.

    Parameters
    ----------
    q : ndarray of shape (m, d) float32, C-contiguous
    x : ndarray of shape (n, d) float32, C-contiguous
    k : int, ``k <= n``

    Returns
    -------
    sims : ndarray of shape (m, k) float32, descending per row
    ids : ndarray of shape (m, k) int64
    """
    import faiss

    m = q.shape[0]
    workers = split_workers()
    bounds = split_bounds(m, q.shape[1], workers)
    ranges = len(bounds) - 1
    if ranges < 2:
        return faiss.knn(q, x, k, metric=faiss.METRIC_INNER_PRODUCT)
    sims = np.empty((m, k), np.float32)
    ids = np.empty((m, k), np.int64)

    def one(i: int) -> None:
        faiss.omp_set_num_threads(1)  # this worker thread's own OpenMP setting; the caller's is untouched
        lo, hi = bounds[i], bounds[i + 1]
        sims[lo:hi], ids[lo:hi] = faiss.knn(q[lo:hi], x, k, metric=faiss.METRIC_INNER_PRODUCT)

    pool = ThreadPoolExecutor(max_workers=min(workers, ranges), thread_name_prefix="sibscan-faiss")
    try:
        for done in [pool.submit(one, i) for i in range(ranges)]:
            done.result()  # re-raises a worker's error here
    finally:  # after an error or Ctrl-C the ranges not started yet never run (on success none is left)
        pool.shutdown(wait=True, cancel_futures=True)
    return sims, ids


def faiss_tile_bytes(m: int, d: int) -> int:
    """Bytes of the score tiles :func:`knn_cpu` makes faiss allocate for ``m`` queries of dimension
    ``d``: one :data:`FAISS_TILE_BYTES` tile per ``faiss.knn`` call running at the same time."""
    workers = split_workers()
    return FAISS_TILE_BYTES * min(workers, len(split_bounds(m, d, workers)) - 1)


def search_faiss(q: np.ndarray, blocks, k: int, dev: str, on_block) -> Tuple[np.ndarray, np.ndarray]:
    """faiss's exhaustive inner-product search per block (:func:`knn_cpu` on the CPU: no index, no
    copy), blocks merged by :class:`~sibscan.kernels.topk.ResultHeap`.

    faiss returns equal scores in no set order: each row of a block's result is re-sorted by
    (similarity desc, index asc).  Which of several rows tied at the k-th place faiss keeps is its
    own choice, not always the lower index (measured: 3,000 x 5,000 integer vectors of dimension 6,
    0.8 % of top-5 and 15 % of top-30 ids differ from the brute-force reference, all at equal
    similarity; unsplit ``faiss.knn`` does the same): the similarities match the other backends, the
    ids of exactly tied rows may not."""
    import faiss

    use_gpu = dev != "cpu"
    if use_gpu and not hasattr(faiss, "StandardGpuResources"):
        raise SibscanError("backend 'faiss' on CUDA needs faiss-gpu (not installed); "
                           "use backend='torch' or device='cpu'")
    res = faiss.StandardGpuResources() if use_gpu else None
    m = q.shape[0]
    only: Optional[Tuple[np.ndarray, np.ndarray]] = None  # the result while there is one block
    heap: Optional[ResultHeap] = None
    for start, block in blocks():
        if block.dtype != np.float32 or not block.flags.c_contiguous:  # a resident float32 database is read in place
            block = np.ascontiguousarray(block, dtype=np.float32)
        b = block.shape[0]
        kb = min(k, b)
        if use_gpu:
            index = faiss.index_cpu_to_gpu(res, int(dev.split(":")[1]) if ":" in dev else 0,
                                           faiss.IndexFlatIP(block.shape[1]))
            index.add(block)
            sims, idx = index.search(q, kb)
        else:
            sims, idx = knn_cpu(q, block, kb)
        if start:  # faiss returns fresh int64 labels: offset them in place, no copy
            idx += start
        part = order_ties(sims, idx)
        if only is None and heap is None:
            only = part
        else:
            if heap is None:
                heap = ResultHeap(m, k)
                heap.add_result(*only)
            heap.add_result(*part)
        on_block(b)
    if heap is None and only is not None and only[1].shape[1] == k:
        return only
    if heap is None:
        heap = ResultHeap(m, k)
        if only is not None:
            heap.add_result(*only)
    return heap.finalize()
