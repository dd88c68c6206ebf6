"""The Ray engine: one task per database shard (or block range), per-task top-k merged once.

Each task runs the local engine's kernel over exactly the blocks the local engine would cut from
its rows (blocks start at shard starts and at multiples of the block size), so the merged result is
identical to :func:`sibscan.search.search` — same similarities, same indices, same tie order.

On a cluster, every worker needs sibscan installed and, for :class:`ShardedEmbeddings`, the shard
directory at the same path (a shared filesystem); an in-memory database travels through Ray's
object store instead.
"""
from __future__ import annotations

import logging
from typing import List, Optional, Tuple

import numpy as np

from ..raystart import ray_session
from ..store.shards import ShardedEmbeddings
from ..kernels.topk import merge_topk
from .exact import checked_blocks, run_backend, drop_self, prepare_search, search_bar

__all__ = ["search_ray"]

log = logging.getLogger("sibscan.engines.ray")


def _task_ranges(plan, tasks_hint: int) -> List[Tuple[int, int]]:
    """Row ranges, one per task, aligned to the local engine's block boundaries."""
    if isinstance(plan.database, ShardedEmbeddings):
        return [b for b in plan.database.shard_bounds if b[1] > b[0]]
    n, rows = plan.n, plan.block_rows
    n_blocks = -(-n // rows)
    per_task = max(1, -(-n_blocks // max(1, tasks_hint)))
    step = per_task * rows
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def _search_range(queries: np.ndarray, database, start: int, stop: int, plan_fields: dict):
    """Body of one Ray task: the local kernel over rows ``start:stop``."""
    if isinstance(database, str):
        database = ShardedEmbeddings(database)
    blocks = checked_blocks(database, plan_fields["block_rows"], start, stop)
    return run_backend(queries, blocks, plan_fields["search_k"], backend=plan_fields["backend"],
                       device="cpu", half=None, margin=0, query_block=plan_fields["query_block"])


def search_ray(queries, shards, k: int, *, address: Optional[str] = None, num_cpus: Optional[int] = None,
               backend: str = "auto", block_size: Optional[int] = None, exclude_self: bool = False,
               memory_limit: Optional[int] = None, progress: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """Exact top-k search with one Ray task per shard; same results as :func:`sibscan.search.search`.

    Parameters
    ----------
    queries : array-like of shape (m, d)
    shards : ShardedEmbeddings or array-like of shape (n, d)
        Shards are read by the workers from their path; an array is put in Ray's object store and
        cut into ranges of whole blocks (about two tasks per CPU).
    k : int
    address : str, optional
        Ray cluster address (``"auto"`` for the cluster this machine belongs to); ``None`` starts a
        local Ray unless one is already running in this process.
    num_cpus : int, optional
        CPUs for a local Ray started here.
    backend : {"auto", "torch", "faiss", "numpy"}
        Kernel each task runs on its CPU.
    block_size, exclude_self, memory_limit, progress
        As in :func:`sibscan.search.search`.

    Returns
    -------
    similarities : ndarray of shape (m, k) float32
    indices : ndarray of shape (m, k) int64
    """
    plan = prepare_search(queries, shards, k, backend=backend, device="cpu", block_size=block_size,
                          exclude_self=exclude_self, memory_limit=memory_limit, precision="fp32")
    m = plan.queries.shape[0]
    if m == 0:
        return np.empty((0, plan.k), np.float32), np.empty((0, plan.k), np.int64)
    ray = ray_session(address, num_cpus, purpose="the Ray engine")
    cpus = int(ray.cluster_resources().get("CPU", 1))
    ranges = _task_ranges(plan, 2 * cpus)
    fields = {"block_rows": plan.block_rows, "search_k": plan.search_k, "backend": plan.backend,
              "query_block": plan.query_block}
    q_ref = ray.put(plan.queries)
    if isinstance(plan.database, ShardedEmbeddings):
        db_ref = str(plan.database.path.resolve())
    else:
        db_ref = ray.put(np.asarray(plan.database))
    remote = ray.remote(num_cpus=1)(_search_range)
    pending = {remote.remote(q_ref, db_ref, a, b, fields): b - a for a, b in ranges}
    log.info("ray: %d tasks over %d rows on %d CPUs", len(pending), plan.n, cpus)
    sims = np.full((m, plan.search_k), -np.inf, np.float32)
    ids = np.full((m, plan.search_k), -1, np.int64)
    with search_bar(plan.n, progress) as bar:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                s, i = ray.get(ref)
                sims, ids = merge_topk(sims, ids, s, i, plan.search_k)
                bar.update(pending.pop(ref))
    if exclude_self:
        sims, ids = drop_self(sims, ids, plan.k)
    return sims, ids
