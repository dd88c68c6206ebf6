"""Search engines beyond one process: the same database blocks run as tasks elsewhere.

``ray_engine.search_ray`` runs one Ray task per shard (or per range of blocks) and merges the
per-task top-k; its results are identical to :func:`sibscan.search.search` on the same blocks.
``ray_embed.ray_block_encoder`` embeds blocks of items as Ray tasks while the driver fills the cache.

Both are imported here directly: Ray itself is imported only when a task runs, and the one module a
caller does not need costs 0.5-13 ms once the other is imported (``python -X importtime``, issue 33).
"""
from __future__ import annotations

from .ray_embed import ray_block_encoder
from .ray_engine import search_ray

__all__ = ["ray_block_encoder", "search_ray"]
