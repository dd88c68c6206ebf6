"""The index build's two task bodies (map: a batch of documents -> its sorted distinct n-gram
hashes; reduce: one hash range of all runs -> a shard) and the range edges; the local build
(:mod:`.index`) and the Ray build (:mod:`.ray_build`) run exactly these."""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from ..kernels.ngramhash import batch_word_ids, ngram_hashes

__all__ = ["hash_batch", "merge_range", "range_bounds"]


def hash_batch(docs: Sequence[str], n: int) -> Tuple[np.ndarray, int, int]:
    """One map task: the sorted distinct n-gram hashes of a batch of documents.

    Returns
    -------
    hashes : ndarray of shape (u,), uint64, sorted, distinct
    n_words, n_ngrams : int
        Words and n-grams (with repeats) in the batch.
    """
    ids, offsets = batch_word_ids(docs)
    h, _ = ngram_hashes(ids, offsets, n)
    return np.unique(h), int(len(ids)), int(len(h))


def range_bounds(n_parts: int) -> np.ndarray:
    """Edges of ``n_parts`` equal ranges of the 64-bit hash space, shape (n_parts + 1,), as Python
    ints (the last edge, 2**64, does not fit a uint64)."""
    return np.array([(j << 64) // n_parts for j in range(n_parts + 1)], dtype=object)


def merge_range(run_paths: Sequence[str], lo: int, hi: int) -> np.ndarray:
    """One reduce task: the distinct hashes in ``[lo, hi)`` over all runs (memory-mapped: only the
    range is read).

    Returns
    -------
    ndarray of shape (u,), uint64, sorted, distinct
    """
    parts = []
    for p in run_paths:
        run = np.load(p, mmap_mode="r")
        a = int(np.searchsorted(run, np.uint64(lo), side="left"))
        b = len(run) if hi >= 1 << 64 else int(np.searchsorted(run, np.uint64(hi), side="left"))
        if b > a:
            parts.append(np.array(run[a:b]))
        del run
    if not parts:
        return np.empty(0, np.uint64)
    return np.unique(np.concatenate(parts))
