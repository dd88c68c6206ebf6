"""Embedding beyond one process: blocks of items encoded as Ray tasks.

``ray_embed.ray_block_encoder`` embeds blocks of items as Ray tasks while the driver fills the cache.

Imported here directly: Ray itself is imported only when a task runs (``python -X importtime``, issue 33).
The Ray search engine is :func:`sibscan.search.search_ray` (``sibscan/search/rayengine.py``).
"""
from __future__ import annotations

from .ray_embed import ray_block_encoder

__all__ = ["ray_block_encoder"]
