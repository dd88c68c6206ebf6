"""Exact nearest-neighbour search: each query's top-k database rows by inner product.

Embeddings are L2-normalised by the encoders, so the inner product is the cosine similarity.  The
database is streamed in blocks (an in-memory array, a memory map, or :class:`ShardedEmbeddings` on
disk) and every block's top-k is merged into one running result; the block size comes from a memory
budget, which is logged before a big search.

Backends (all exact, all with the same answers up to fp32 rounding; ties go to the lower index, except
that faiss may keep other rows among many rows tied at the k-th place — equal similarities, another
choice of which tied rows fill the last places; see :func:`search_faiss`):

* ``"torch"`` — blocked matrix product + grouped top-k; CPU or CUDA.  On CUDA the candidates are
  computed in bf16 (or fp16) on tensor cores and re-scored in fp32, with a certificate that the
  result is the fp32 one (rows that cannot be certified are searched again in fp32).
* ``"faiss"`` — faiss's exhaustive inner-product kernel (``faiss.knn``, what ``IndexFlatIP.search``
  runs) straight on the database rows: an in-memory float32 database is one block, searched with no
  copy and no merge; a large query set is cut into row ranges searched side by side, one core and one
  faiss thread each (:mod:`sibscan.search.faissindex`), which spares faiss's per-tile thread
  synchronisation; on CUDA a GPU index (faiss-gpu).
* ``"numpy"`` — the same blocked kernel on numpy's BLAS, no optional dependency.
* ``"auto"`` — torch on CUDA (tensor cores); on the CPU the backend measured fastest on this
  machine for large searches (:mod:`sibscan.search.pick`: a few seconds once, cached per CPU model,
  cores and library versions), faiss (else numpy) for small ones.

When ``k`` exceeds the number of database rows, the missing columns hold index ``-1`` and
similarity ``-inf``.
"""
from __future__ import annotations

import importlib.util
import logging
import sys
from typing import Callable, Iterable, NamedTuple, Optional, Tuple

import numpy as np

from ..device import check_device_name, resolve_device, cuda_available
from ..errors import InputError, SibscanError, require
from ..options import BACKENDS
from ..stats import check_int
from ..store.shards import ShardedEmbeddings
from ..kernels.topk import search_blocks_numpy
from ..kernels.topk_torch import search_blocks_torch
from ..progress import bar
from .faissindex import search_faiss, faiss_tile_bytes
from .pick import cpu_backend, fallback_backend

__all__ = ["SearchPlan", "brute_force_search", "checked_blocks", "drop_self", "n_bytes_faiss_tile", "plan_blocks",
           "prepare_search", "resolve_backend", "run_backend", "search", "search_bar"]

log = logging.getLogger("sibscan.search")

PRECISIONS = ("auto", "fp32", "bf16", "fp16")

_MIB = 1 << 20
_DEFAULT_CPU_BUDGET = 768 * _MIB
_LOG_ABOVE = 256 * _MIB  # log the memory plan of searches whose buffers exceed this


# -------------------------------------------------------------------------------- validation
def _check_queries(queries) -> np.ndarray:
    q = np.asarray(queries)
    if q.ndim != 2:
        raise InputError(f"queries must be a 2-D array (n_queries, dim), got shape {q.shape}")
    if not np.issubdtype(q.dtype, np.number):
        raise InputError(f"queries must be numeric, got dtype {q.dtype}")
    q = np.ascontiguousarray(q, dtype=np.float32)
    bad = _bad_rows(q)
    if bad.any():
        raise InputError(f"query row {int(np.argmax(bad))} {_BAD_ROW}")
    return q


def _check_database(database) -> Tuple[object, int, int]:
    if isinstance(database, ShardedEmbeddings):
        return database, database.n, database.dim
    if hasattr(database, "shape") and hasattr(database, "__getitem__") and not isinstance(database, np.ndarray):
        db = database  # array-like such as a torch tensor: convert blockwise
    else:
        db = np.asarray(database)
    if len(db.shape) != 2:
        raise InputError(f"database must be a 2-D array (n, dim), got shape {tuple(db.shape)}")
    if isinstance(db, np.ndarray) and not np.issubdtype(db.dtype, np.number):
        raise InputError(f"database must be numeric, got dtype {db.dtype}")
    return db, int(db.shape[0]), int(db.shape[1])


def _bad_rows(block: np.ndarray) -> np.ndarray:
    """Bool mask of the rows holding NaN or inf, or values so large that the row's squared norm
    overflows float32 (ndarray of shape (b,)): such a row's similarities can be inf or NaN, which no
    top-k orders.  One pass (a row-wise dot product; NaN and inf propagate into it)."""
    v = block if block.dtype in (np.float32, np.float64) else block.astype(np.float64)  # half would overflow
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.einsum("ij,ij->i", v, v)
    return ~(sq <= _F32_MAX)  # NaN too


#: largest float32: a squared norm above it overflows the float32 search
_F32_MAX = float(np.finfo(np.float32).max)
#: the end of the bad-row message, for queries and database rows alike
_BAD_ROW = "contains NaN or inf, or values so large its squared norm overflows float32; drop or re-encode that item"


def checked_blocks(database, block_rows: int, start: int = 0,
                   stop: Optional[int] = None) -> Callable[[], Iterable[Tuple[int, np.ndarray]]]:
    """A re-iterable stream of ``(start, block)`` over rows ``start:stop`` that rejects NaN/inf rows
    by number.  Blocks start at multiples of ``block_rows`` (or at shard starts), so a row range
    aligned to them is cut into the same blocks as the whole database."""
    stop = database.shape[0] if stop is None else min(stop, database.shape[0])

    def raw():
        if isinstance(database, ShardedEmbeddings):
            return database.iter_blocks(block_rows, dtype=None, start=start, stop=stop)
        return ((s, database[s:min(stop, s + block_rows)]) for s in range(start, stop, block_rows))

    def blocks():
        for s0, block in raw():
            if type(block).__module__.startswith("torch"):  # a tensor (possibly on the GPU) stays one
                import torch

                v = block if block.is_floating_point() else block.double()
                norm = torch.linalg.vector_norm(v, dim=1, dtype=None if v.dtype == torch.float64 else torch.float32)
                bad = (~(norm <= _F32_MAX ** 0.5)).cpu().numpy()  # NaN, inf or a squared norm over float32
            else:
                block = np.asarray(block)
                bad = _bad_rows(block)
            if bad.any():
                raise InputError(f"database row {s0 + int(np.argmax(bad))} {_BAD_ROW}")
            yield s0, block

    return blocks


# --------------------------------------------------------------------------------- planning
def plan_blocks(n_queries: int, n: int, dim: int, *, device: str = "cpu",
                memory_limit: Optional[int] = None) -> Tuple[int, int, int]:
    """Choose query and database block sizes from a memory budget.

    Parameters
    ----------
    n_queries, n, dim : int
    device : str
        ``"cpu"`` or a CUDA device (the budget then defaults to half the free GPU memory).
    memory_limit : int, optional
        Bytes the search buffers may use (score block + database block + candidates).

    Returns
    -------
    query_block, block_rows, estimated_bytes : int
    """
    if device == "cpu":
        budget = int(memory_limit) if memory_limit else _DEFAULT_CPU_BUDGET
        query_block = max(1, min(n_queries, 4096))
        per_row = 4 * query_block + 12 * dim  # fp32 scores + fp32 block + stored block / faiss copy
        lo, hi = 256, 65536
    else:
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(device))
        budget = int(memory_limit) if memory_limit else free // 2
        query_block = max(1, min(n_queries, 16384))
        per_row = 4 * query_block + 12 * dim  # half scores + top-k' work + fp32 and half block
        lo, hi = 1024, 262144
    block_rows = int(np.clip(budget // max(per_row, 1), lo, hi))
    block_rows = max(1, min(block_rows, max(n, 1)))
    estimate = block_rows * per_row + n_queries * dim * 4 * 2
    return query_block, block_rows, estimate


def search_bar(total: int, enabled: bool):
    return bar(total, "search", "row", enabled=enabled, scale=True)


# ----------------------------------------------------------------------------------- search
def search(queries, database, k: int, *, backend: str = "auto", device: str = "auto",
           block_size: Optional[int] = None, exclude_self: bool = False, progress: bool = True,
           memory_limit: Optional[int] = None, precision: str = "auto",
           margin: int = 16) -> Tuple[np.ndarray, np.ndarray]:
    """Each query's ``k`` most similar database rows, exact, by inner product.

    Parameters
    ----------
    queries : array-like of shape (m, d)
        L2-normalised query embeddings.
    database : array-like of shape (n, d), memory-mapped array, or ShardedEmbeddings
        L2-normalised database embeddings, streamed block by block.
    k : int
        Neighbours per query.  Where fewer than ``k`` rows exist the extra columns hold index -1
        and similarity -inf.
    backend : {"auto", "torch", "faiss", "numpy"}
    device : {"auto", "cpu", "cuda"}
        Resolved once; ``"cuda"`` without a GPU fails with the reason.  The numpy backend is CPU-only.
    block_size : int, optional
        Database rows per block; default from ``memory_limit``.
    exclude_self : bool
        ``queries`` are the database rows in the same order (within-split search): each row's own
        index is removed from its neighbours.  Exact copies of the row may still be returned, before
        or after where the row itself would have been.
    progress : bool
        Progress bar on stderr (shown only on a terminal).
    memory_limit : int, optional
        Bytes for the search buffers (CPU default 768 MiB, CUDA default half the free memory).
    precision : {"auto", "fp32", "bf16", "fp16"}
        CUDA candidate precision for the torch backend (``"auto"`` = bf16 on CUDA, fp32 on CPU);
        reported similarities are fp32 whatever the candidate precision.
    margin : int
        Extra half-precision candidates per block re-scored in fp32.

    Returns
    -------
    similarities : ndarray of shape (m, k) float32, descending per row
    indices : ndarray of shape (m, k) int64, database rows (lower index first on ties)
    """
    plan = prepare_search(queries, database, k, backend=backend, device=device, block_size=block_size,
                          exclude_self=exclude_self, memory_limit=memory_limit, precision=precision)
    q, k, m = plan.queries, plan.k, plan.queries.shape[0]
    if m == 0:
        return np.empty((0, k), np.float32), np.empty((0, k), np.int64)
    blocks = checked_blocks(plan.database, plan.block_rows)
    with search_bar(plan.n, progress) as bar:
        sims, ids = run_backend(q, blocks, plan.search_k, backend=plan.backend, device=plan.device,
                                half=plan.half, margin=margin, query_block=plan.query_block,
                                on_block=bar.update)
    if exclude_self:
        sims, ids = drop_self(sims, ids, k)
    return sims, ids


class SearchPlan(NamedTuple):
    """Validated inputs and resolved choices of one search (shared by the local and Ray engines)."""

    queries: np.ndarray
    database: object
    n: int
    k: int
    search_k: int  # k + 1 when the query itself is to be dropped
    backend: str
    device: str
    half: Optional[str]
    query_block: int
    block_rows: int


def prepare_search(queries, database, k, *, backend: str, device: str, block_size: Optional[int],
                   exclude_self: bool, memory_limit: Optional[int], precision: str) -> SearchPlan:
    if backend not in BACKENDS:
        raise SibscanError(f"unknown search backend {backend!r}; available: {', '.join(BACKENDS)}")
    device = check_device_name(device)
    if precision not in PRECISIONS:
        raise SibscanError(f"unknown precision {precision!r}; available: {', '.join(PRECISIONS)}")
    k = check_int(k, "k")
    q = _check_queries(queries)
    db, n, d = _check_database(database)
    if q.shape[1] != d:
        raise InputError(f"queries have dimension {q.shape[1]} but the database has {d}; "
                         "embed both with the same encoder")
    if exclude_self and q.shape[0] != n:
        raise SibscanError(f"exclude_self needs the queries to be the database rows ({q.shape[0]} queries, "
                           f"{n} database rows); pass exclude_self=False for a cross-split search")
    backend = resolve_backend(backend, device, (q.shape[0], n, d, k))
    dev = "cpu" if backend == "numpy" else resolve_device(device)
    if backend == "numpy" and device not in (None, "auto", "cpu"):
        raise SibscanError("the numpy backend runs on the CPU only; use --backend 'torch' for --device 'cuda'")
    half = None
    if dev != "cpu" and backend == "torch":
        half = {"auto": "bf16", "fp32": None}.get(precision, precision)

    kk = k + 1 if exclude_self else k
    m = q.shape[0]
    query_block, block_rows, estimate = plan_blocks(m, n, d, device="cpu" if dev == "cpu" else dev,
                                                    memory_limit=memory_limit)
    if block_size is not None:
        if int(block_size) < 1:
            raise SibscanError(f"block_size must be >= 1, got {block_size}")
        block_rows = int(block_size)
    elif backend == "faiss" and dev == "cpu" and _resident_float32(db):
        # faiss reads the rows where they are and keeps only a small score tile: one block, no copy, no merge
        block_rows, estimate = max(n, 1), n_bytes_faiss_tile(m, d, kk)
    level = logging.INFO if estimate > _LOG_ABOVE else logging.DEBUG
    log.log(level, "search %d x %d x %d (k=%d) on %s/%s: blocks of %d database x %d query rows, "
            "about %.0f MiB of buffers", m, n, d, k, backend, dev, block_rows, query_block, estimate / _MIB)

    return SearchPlan(q, db, n, k, kk, backend, dev, half, query_block, block_rows)


def run_backend(q: np.ndarray, blocks, k: int, *, backend: str, device: str, half: Optional[str],
                margin: int, query_block: int,
                on_block: Optional[Callable[[int], None]] = None) -> Tuple[np.ndarray, np.ndarray]:
    """One resolved backend over one stream of blocks (also the body of a Ray task)."""
    on_block = on_block or (lambda rows: None)
    if backend == "numpy":
        return search_blocks_numpy(q, blocks, k, query_block=query_block, on_block=on_block)
    if backend == "torch":
        return search_blocks_torch(q, blocks, k, device=device, half=half, margin=margin,
                                   query_block=query_block, on_block=on_block)

    return search_faiss(q, blocks, k, device, on_block)


def _resident_float32(db) -> bool:
    """An in-memory (not memory-mapped) C-contiguous float32 array: faiss can read it as it is."""
    return (type(db) is np.ndarray and db.dtype == np.float32 and db.flags.c_contiguous)


def n_bytes_faiss_tile(m: int, d: int, k: int) -> int:
    """Bytes of faiss's own score tiles (a 4,096 x 1,024 float32 tile per ``faiss.knn`` call, one per
    range searched at the same time, :func:`sibscan.search.faissindex.faiss_tile_bytes`) plus the results
    (similarity and id per neighbour)."""
    return faiss_tile_bytes(m, d) + 12 * m * k


def resolve_backend(backend: str, device: str, shape: Optional[Tuple[int, int, int, int]] = None) -> str:
    """The backend :func:`search` runs; ``shape`` = (queries, database rows, dim, k) lets ``auto`` on the
    CPU take the one measured fastest on this machine (:func:`sibscan.search.pick.cpu_backend`).  A caller
    that splits one search into several calls resolves it once, for the whole shape."""
    if backend == "auto":
        if device not in (None, "auto", "cpu") or (device in (None, "auto") and _cuda()):
            require("torch", "gpu", "searching on CUDA")
            return "torch"

        if shape is None:
            return fallback_backend()
        # measured on one full tile of a large CPU search (the block plan_blocks gives it)
        return cpu_backend(*shape, run=_measured_run, tile=plan_blocks(1 << 20, 1 << 30, shape[2])[:2])
    if backend == "torch":
        require("torch", "torch", "the torch search backend")
    elif backend == "faiss":
        require("faiss", "faiss", "the faiss search backend")
    return backend


def _measured_run(q: np.ndarray, x: np.ndarray, k: int, backend: str):
    """One search as :mod:`sibscan.search.pick` times it (an explicit backend: it never recurses)."""
    return search(q, x, k, backend=backend, device="cpu", progress=False)


def _cuda() -> bool:
    return importlib.util.find_spec("torch") is not None and cuda_available()


def drop_self(sims: np.ndarray, ids: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """From (m, k+1) results drop each row's own index, or the last column where it is absent."""
    m = sims.shape[0]
    drop = ids == np.arange(m)[:, None]
    drop[~drop.any(axis=1), -1] = True
    keep = ~drop
    return sims[keep].reshape(m, k), ids[keep].reshape(m, k)


# -------------------------------------------------------------------------------- reference
def brute_force_search(queries, database, k: int, *, exclude_self: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Reference top-k: the full float64 score matrix, stable sort (lower index first on ties).

    Parameters
    ----------
    queries : array-like of shape (m, d)
    database : array-like of shape (n, d) or ShardedEmbeddings
    k : int
    exclude_self : bool
        Queries are the database rows; a row's own index is never a neighbour.

    Returns
    -------
    similarities : ndarray of shape (m, k) float32 (-inf padding)
    indices : ndarray of shape (m, k) int64 (-1 padding)
    """
    q = np.asarray(queries, dtype=np.float64)
    x = np.asarray(database, dtype=np.float64)
    scores = q @ x.T
    if exclude_self:
        np.fill_diagonal(scores, -np.inf)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    sims = np.take_along_axis(scores, order, axis=1).astype(np.float32)
    ids = order.astype(np.int64)
    if exclude_self:
        ids[np.isneginf(sims)] = -1
    if ids.shape[1] < k:
        pad = k - ids.shape[1]
        sims = np.pad(sims, ((0, 0), (0, pad)), constant_values=-np.inf)
        ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
    return sims, ids
