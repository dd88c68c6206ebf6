"""The n-gram index built as Ray tasks: the same map and reduce functions as the local build, so
the index files are identical (tested byte for byte).

Map: the driver streams the corpus and sends each batch of documents to a task (at most two
batches per CPU in flight, so the driver's memory stays bounded); the task returns the batch's
sorted distinct hashes with their position tags and the driver writes the run.  Reduce: one task per hash range reads
the
runs from the index folder (on a cluster: a shared filesystem at the same path) and returns the
shard.
"""
from __future__ import annotations

import logging
from typing import Iterable, Iterator, List, Optional, Tuple


from ..raystart import ray_session
from .tasks import hash_batch, merge_range

__all__ = ["RayTasks"]

log = logging.getLogger("sibscan.contamination")


class RayTasks:
    """Map and reduce tasks on Ray (see :func:`sibscan.contamination.build_index`, ``engine="ray"``).

    Parameters
    ----------
    address : str, optional
        Ray cluster address (``"auto"``: the cluster this machine belongs to); None starts a local
        Ray unless one is already running in this process.
    num_cpus : int, optional
        CPUs of a local Ray started here.
    """

    def __init__(self, address: Optional[str] = None, num_cpus: Optional[int] = None):
        self.ray = ray = ray_session(address, num_cpus, purpose="building the index with Ray")
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._map = ray.remote(num_cpus=1)(hash_batch)
        self._reduce = ray.remote(num_cpus=1)(merge_range)

    def map_batches(self, batches: Iterable[List[str]], n: int) -> Iterator[Tuple[int, int, tuple]]:
        ray = self.ray
        pending = {}
        limit = 2 * self.cpus

        def drain(k: int):
            done, _ = ray.wait(list(pending), num_returns=k)
            for ref in done:
                i, n_docs = pending.pop(ref)
                yield i, n_docs, ray.get(ref)

        for i, docs in enumerate(batches):
            if len(pending) >= limit:
                yield from drain(1)
            pending[self._map.remote(docs, n)] = (i, len(docs))
        while pending:
            yield from drain(1)

    def reduce_ranges(self, run_paths: List[str], ranges: List[Tuple[int, int]]) -> Iterator[Tuple[int, tuple]]:
        ray = self.ray
        runs_ref = ray.put(list(run_paths))
        pending = {self._reduce.remote(runs_ref, lo, hi): j for j, (lo, hi) in enumerate(ranges)}
        log.info("ray: %d reduce tasks on %d CPUs", len(pending), self.cpus)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)
