"""The index build's two task bodies (map: a batch of documents -> its sorted distinct n-gram
hashes with each one's position tag; reduce: one hash range of all runs -> a shard) and the range
edges; the local build (:mod:`.index`) and the Ray build (:mod:`.ray_build`) run exactly these.

Each distinct n-gram keeps the tag of its first occurrence in corpus order (the batch order, then
the order within a batch), so the map and reduce results do not depend on where tasks ran."""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from ..kernels.ngramhash import batch_word_ids, ngram_hashes, ngram_position_tags

__all__ = ["hash_batch", "merge_range", "range_bounds", "tag_path"]


def tag_path(path) -> str:
    """The tag file stored beside a hash file (``run-00000.npy`` -> ``run-00000.tag.npy``)."""
    p = str(path)
    return p[:-4] + ".tag.npy"


def hash_batch(docs: Sequence[str], n: int) -> Tuple[np.ndarray, np.ndarray, int, int]:
    """One map task: the sorted distinct n-gram hashes of a batch of documents and their tags.

    Returns
    -------
    hashes : ndarray of shape (u,), uint64, sorted, distinct
    tags : ndarray of shape (u,), uint16
        :func:`sibscan.kernels.ngramhash.ngram_position_tags` of each hash's first occurrence.
    n_words, n_ngrams : int
        Words and n-grams (with repeats) in the batch.
    """
    ids, offsets = batch_word_ids(docs)
    h, starts = ngram_hashes(ids, offsets, n)
    tags = ngram_position_tags(h, starts, offsets)
    u, first = np.unique(h, return_index=True)  # index of the first occurrence
    return u, tags[first], int(len(ids)), int(len(h))


def range_bounds(n_parts: int) -> np.ndarray:
    """Edges of ``n_parts`` equal ranges of the 64-bit hash space, shape (n_parts + 1,), as Python
    ints (the last edge, 2**64, does not fit a uint64)."""
    return np.array([(j << 64) // n_parts for j in range(n_parts + 1)], dtype=object)


def merge_range(run_paths: Sequence[str], lo: int, hi: int) -> Tuple[np.ndarray, np.ndarray]:
    """One reduce task: the distinct hashes in ``[lo, hi)`` over all runs, each with the tag of its
    earliest run (memory-mapped: only the range is read).

    Parameters
    ----------
    run_paths : sequence of str
        The runs in corpus order; each has its tags beside it (:func:`tag_path`).

    Returns
    -------
    hashes : ndarray of shape (u,), uint64, sorted, distinct
    tags : ndarray of shape (u,), uint16
    """
    parts, tag_parts = [], []
    for p in run_paths:
        run = np.load(p, mmap_mode="r")
        a = int(np.searchsorted(run, np.uint64(lo), side="left"))
        b = len(run) if hi >= 1 << 64 else int(np.searchsorted(run, np.uint64(hi), side="left"))
        if b > a:
            parts.append(np.array(run[a:b]))
            tag_parts.append(np.array(np.load(tag_path(p), mmap_mode="r")[a:b]))
        del run
    if not parts:
        return np.empty(0, np.uint64), np.empty(0, np.uint16)
    h = np.concatenate(parts)
    order = np.argsort(h, kind="stable")  # equal hashes keep run order: the first is the earliest
    h = h[order]
    first = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    return h[first], np.concatenate(tag_parts)[order][first]
