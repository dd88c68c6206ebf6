"""Search engines beyond one process: the same database blocks run as tasks elsewhere.

``ray_engine.search_ray`` runs one Ray task per shard (or per range of blocks) and merges the
per-task top-k; its results are identical to :func:`sibscan.search.search` on the same blocks.
"""
from __future__ import annotations

__all__ = ["search_ray"]


def __getattr__(name: str):
    if name == "search_ray":
        from .ray_engine import search_ray

        return search_ray
    raise AttributeError(f"module 'sibscan.engines' has no attribute {name!r}")
