"""Search engines beyond one process: the same database blocks run as tasks elsewhere.

``ray_engine.search_ray`` runs one Ray task per shard (or per range of blocks) and merges the
per-task top-k; its results are identical to :func:`sibscan.search.search` on the same blocks.
``ray_embed.ray_block_encoder`` embeds blocks of items as Ray tasks while the driver fills the cache.
"""
from __future__ import annotations

__all__ = ["ray_block_encoder", "search_ray"]


def __getattr__(name: str):
    if name == "search_ray":
        from .ray_engine import search_ray

        return search_ray
    if name == "ray_block_encoder":
        from .ray_embed import ray_block_encoder

        return ray_block_encoder
    raise AttributeError(f"module 'sibscan.engines' has no attribute {name!r}")
