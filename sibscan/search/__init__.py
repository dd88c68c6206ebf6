"""Exact nearest-neighbour search: each query's top-k database rows, streamed in blocks.

``exact`` is the engine (:func:`search`, its brute-force reference, the block plan and the backend
policy); ``faissindex`` the faiss backend, ``pick`` the CPU backend measured fastest on this machine,
``rayengine`` the same search as one Ray task per shard (:func:`search_ray`), ``direction`` the one
call a scan's stages make for a top-k (:func:`search_direction`: here or on Ray, whatever holds the
rows), and ``windows`` the image-windows view searched through an index.  All answers are exact and agree with
:func:`brute_force_search`.
"""
from __future__ import annotations

from .direction import search_direction
from .exact import brute_force_search, plan_blocks, resolve_backend, search
from .rayengine import search_ray
from .windows import windows_view_search

__all__ = ["brute_force_search", "plan_blocks", "resolve_backend", "search", "search_direction", "search_ray",
           "windows_view_search"]
