"""Embedding beyond one process: blocks of items encoded as Ray tasks.

``ray_embed.ray_block_encoder`` embeds blocks of items as Ray tasks while the driver fills the cache.
The Ray search engine is :func:`sibscan.search.search_ray` (``sibscan/search/rayengine.py``).
"""
from __future__ import annotations

__all__ = ["ray_block_encoder"]


def __getattr__(name: str):
    if name == "ray_block_encoder":
        from .ray_embed import ray_block_encoder

        return ray_block_encoder
    raise AttributeError(f"module 'sibscan.engines' has no attribute {name!r}")
