"""Sorted distinct 64-bit hashes, each with a 16-bit tag, in 8 bytes per entry: a bucketed layout.

The top ``BUCKET_BITS`` (16) bits of a hash name its bucket; a table of per-bucket counts says
where each bucket starts, so an entry stores only the low 48 bits, packed with its tag into one
uint64: ``(hash & LOW_MASK) << 16 | tag``.  Entries stay in hash order (bucket by bucket, then by
the low bits), so within a bucket the packed values are sorted and a lookup is a binary search of
one bucket.

A table covers the buckets of one hash range ``[lo, hi)`` only (``first_bucket = lo >> 48``), so
all the tables of an index partitioned into ranges hold ``2**16`` counts plus one per range
boundary; each count takes the smallest unsigned dtype that holds the fullest bucket (1 byte up to
255 entries per bucket, about 16.7 M entries per table range).  Per entry that is
``8 + (2**16 + ranges - 1) * itemsize / entries`` bytes.

Lookups read only the probed entries of a memory-mapped array: about ``log2(bucket size) + 1``
entries per query.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

__all__ = ["BUCKET_BITS", "bucket_span", "bucket_pack", "bucket_unpack", "bucket_lookup"]

BUCKET_BITS = 16
_LOW_BITS = 64 - BUCKET_BITS
_LOW_MASK = np.uint64((1 << _LOW_BITS) - 1)
_SHIFT = np.uint64(_LOW_BITS)
_TAG_SHIFT = np.uint64(16)
_TAG_MASK = np.uint64(0xFFFF)


def bucket_span(lo: int, hi: int) -> Tuple[int, int]:
    """The buckets of the hash range ``[lo, hi)``: ``(first_bucket, n_buckets)``.

    ``hi`` may be ``2**64`` (the end of the hash space)."""
    if not 0 <= lo < hi <= 1 << 64:
        raise ValueError(f"not a hash range: [{lo}, {hi})")
    first = lo >> _LOW_BITS
    return first, ((hi - 1) >> _LOW_BITS) - first + 1


def bucket_pack(hashes: np.ndarray, tags: np.ndarray, first_bucket: int,
                n_buckets: int) -> Tuple[np.ndarray, np.ndarray]:
    """Pack sorted distinct hashes and their tags into the bucketed layout.

    Parameters
    ----------
    hashes : ndarray of shape (u,), uint64, sorted ascending, distinct, all in the buckets
        ``first_bucket .. first_bucket + n_buckets - 1``
    tags : ndarray of shape (u,), uint16
    first_bucket, n_buckets : int
        From :func:`bucket_span` of the range the hashes were drawn from.

    Returns
    -------
    counts : ndarray of shape (n_buckets,), the smallest unsigned dtype that holds the largest count
    packed : ndarray of shape (u,), uint64 — ``(hash & LOW_MASK) << 16 | tag``
    """
    hashes = np.asarray(hashes, np.uint64)
    bucket = (hashes >> _SHIFT).astype(np.int64) - int(first_bucket)
    if len(bucket) and (bucket[0] < 0 or bucket[-1] >= n_buckets):
        raise ValueError(f"hashes outside buckets {first_bucket}..{first_bucket + n_buckets - 1}")
    counts = np.bincount(bucket, minlength=n_buckets)
    counts = counts.astype(np.min_scalar_type(int(counts.max()) if len(counts) else 0))
    packed = ((hashes & _LOW_MASK) << _TAG_SHIFT) | np.asarray(tags, np.uint16).astype(np.uint64)
    return counts, packed


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, dtype=np.int64, out=out[1:])
    return out


def bucket_unpack(counts: np.ndarray, packed: np.ndarray, first_bucket: int) -> Tuple[np.ndarray, np.ndarray]:
    """The sorted hashes and tags back from :func:`bucket_pack` (reads every entry).

    Returns
    -------
    hashes : ndarray of shape (u,), uint64
    tags : ndarray of shape (u,), uint16
    """
    packed = np.asarray(packed, np.uint64)
    bucket = np.repeat(np.arange(len(counts), dtype=np.uint64) + np.uint64(first_bucket),
                       np.asarray(counts, np.int64))
    return (bucket << _SHIFT) | (packed >> _TAG_SHIFT), (packed & _TAG_MASK).astype(np.uint16)


def bucket_lookup(counts: np.ndarray, packed: np.ndarray, first_bucket: int,
                  queries: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Membership of ``queries`` in a bucketed table and the stored tag of each hit.

    Same results as :func:`sibscan.kernels.ngramhash.sorted_lookup` on the unpacked table (tested
    against it): a vectorised binary search within each query's bucket.

    Parameters
    ----------
    counts : ndarray of shape (n_buckets,)
    packed : ndarray of shape (u,), uint64 (a memory map is read only where probed)
    first_bucket : int
    queries : ndarray of shape (m,), uint64; those outside the table's buckets are misses

    Returns
    -------
    hit : ndarray of shape (m,), bool
    tag : ndarray of shape (m,), uint16 (0 where not hit)
    """
    queries = np.asarray(queries, np.uint64)
    hit = np.zeros(len(queries), bool)
    tag = np.zeros(len(queries), np.uint16)
    if not len(packed) or not len(queries):
        return hit, tag
    offsets = _offsets(counts)
    bucket = (queries >> _SHIFT).astype(np.int64) - int(first_bucket)
    inside = (bucket >= 0) & (bucket < len(counts))
    bucket = np.where(inside, bucket, 0)
    lo = np.where(inside, offsets[bucket], 0)
    end = np.where(inside, offsets[bucket + 1], 0)
    hi = end.copy()
    key = queries & _LOW_MASK
    todo = np.flatnonzero(lo < hi)
    while len(todo):  # lower bound of key within [lo, hi): the first entry whose low bits are >= key
        a, b = lo[todo], hi[todo]
        mid = (a + b) >> 1
        right = (np.asarray(packed[mid]) >> _TAG_SHIFT) < key[todo]
        lo[todo] = np.where(right, mid + 1, a)
        hi[todo] = np.where(right, b, mid)
        todo = todo[lo[todo] < hi[todo]]
    found = np.flatnonzero(lo < end)
    if len(found):
        entry = np.asarray(packed[lo[found]])
        ok = (entry >> _TAG_SHIFT) == key[found]
        hit[found[ok]] = True
        tag[found[ok]] = (entry[ok] & _TAG_MASK).astype(np.uint16)
    return hit, tag
