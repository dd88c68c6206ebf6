"""Embedding as Ray tasks: each block of items is encoded by a worker, the driver commits it to the cache.

The driver keeps the embedding cache (blocks are committed atomically as results arrive, so an
interrupted run resumes); workers only encode.  A worker builds the encoder once from a picklable
factory (``functools.partial(get_encoder, name, **options)``) and checks that its identity matches
the driver's, so every block is embedded by the same weights and preprocessing.  Image items travel
as paths: on a cluster the files must be at the same path on every worker (a shared filesystem).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple

import numpy as np

from ..errors import CompatibilityError
from ..raystart import ray_session

__all__ = ["ray_block_encoder"]

log = logging.getLogger("sibscan.engines.ray")

_WORKER_ENCODERS: Dict[str, Any] = {}


def _encode_on_worker(factory: Callable[[], Any], identity: str, batch: Any, batch_size: Optional[int]) -> np.ndarray:
    enc = _WORKER_ENCODERS.get(identity)
    if enc is None:
        enc = factory()
        if enc.identity != identity:
            raise CompatibilityError(
                f"a Ray worker built encoder {enc.identity!r} but the driver uses {identity!r}; install the same "
                "sibscan, packages and weights on every worker"
            )
        _WORKER_ENCODERS[identity] = enc
    if getattr(enc, "batches_internally", False):
        return np.asarray(enc.encode(batch, batch_size=batch_size), dtype=np.float32)
    bs = int(batch_size or getattr(enc, "batch_size", 256) or 256)
    parts = [np.asarray(enc.encode(batch[s:s + bs]), dtype=np.float32) for s in range(0, len(batch), bs)]
    return np.concatenate(parts) if parts else np.zeros((0, int(enc.dim)), np.float32)


def ray_block_encoder(
    factory: Callable[[], Any],
    identity: str,
    *,
    address: Optional[str] = None,
    num_cpus: Optional[int] = None,
    max_in_flight: int = 8,
) -> Callable[[Iterable[Tuple[np.ndarray, Any]], Optional[int]], Iterator[Tuple[np.ndarray, np.ndarray]]]:
    """A function ``encode_blocks(blocks, batch_size)`` that encodes ``(index, content)`` blocks as Ray
    tasks and yields ``(index, embeddings)`` as they finish (at most ``max_in_flight`` at once).

    Parameters
    ----------
    factory : callable
        Builds the encoder on a worker; must be picklable (e.g. ``functools.partial``).
    identity : str
        The driver's encoder identity; a worker whose encoder differs fails loudly.
    address : str, optional
        Ray cluster address (``"auto"`` = the cluster this machine belongs to); ``None`` starts a
        local Ray unless one runs in this process.
    num_cpus : int, optional
        CPUs for a local Ray started here.
    max_in_flight : int
        Blocks submitted but not yet committed (bounds driver memory).
    """
    ray = ray_session(address, num_cpus, purpose="the Ray engine")
    remote = ray.remote(_encode_on_worker)
    factory_ref = ray.put(factory)

    def encode_blocks(blocks: Iterable[Tuple[np.ndarray, Any]],
                      batch_size: Optional[int]) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        pending: Dict[Any, np.ndarray] = {}
        source = iter(blocks)
        exhausted = False
        while pending or not exhausted:
            while not exhausted and len(pending) < max_in_flight:
                try:
                    idx, batch = next(source)
                except StopIteration:
                    exhausted = True
                    break
                pending[remote.remote(factory_ref, identity, batch, batch_size)] = idx
            if not pending:
                break
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)

    return encode_blocks
