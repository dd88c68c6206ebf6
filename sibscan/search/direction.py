"""One direction's search as a scan asks for it: each query row's top-k database rows, whatever holds
them (in memory, on disk, a train index's shards) and wherever it runs (here, or as Ray tasks).

:func:`search_direction` is the one call the scan's stages make for a top-k (the neighbours table,
the train→test blocks, an extra view's candidates); it hands the search to :func:`sibscan.search.exact.search`
or :func:`sibscan.search.rayengine.search_ray`.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from ..options import SearchOptions
from ..store.shards import ShardedEmbeddings
from .exact import search
from .rayengine import search_ray

__all__ = ["search_direction"]


def search_direction(q_emb, d_emb, k: int, options: SearchOptions, *, device: str = "auto", progress: bool = True,
                     exclude_self: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Top-k of each query row; queries or database may be :class:`~sibscan.store.shards.ShardedEmbeddings`."""
    k = min(k, len(d_emb) - (1 if exclude_self else 0))
    if k <= 0:
        return np.zeros((len(q_emb), 0), np.float32), np.zeros((len(q_emb), 0), np.int64)
    if isinstance(q_emb, ShardedEmbeddings):
        # queries larger than memory (a big train index searched against the test set): block by block
        parts = [search_direction(block, d_emb, k, options, device=device, progress=progress)
                 for _, block in q_emb.iter_blocks(65536)]
        if not parts:
            return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    if options.engine == "ray":
        return search_ray(q_emb, d_emb, k, address=options.address, backend=options.backend,
                          block_size=options.block_size, exclude_self=exclude_self, progress=progress)
    return search(q_emb, d_emb, k, backend=options.backend, device=device, block_size=options.block_size,
                  exclude_self=exclude_self, progress=progress)
