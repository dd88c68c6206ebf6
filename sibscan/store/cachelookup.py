"""Which rows of a split the embedding cache holds, in memory bounded by a bucket of keys.

The cache's keys (16 bytes per cached item, in its shards' ``.fp.npy`` files) and a split's content
keys both grow with the train set.  :func:`locate` holds neither whole: both go to bucket files by
the top bits of the key (keys are hashes, so the buckets are even), each bucket is matched in memory
on its own (about :data:`BUCKET_ROWS` keys), and the answers go to files by row range, read back a
range at a time in row order (:meth:`Located.blocks`).  The answers are the ones a sorted index of
every key would give (:meth:`sibscan.store.cache.EmbeddingCache.find`): the first shard (in the order the
shards are given) and row holding a key.  The files live in a folder the caller removes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Tuple

import numpy as np

from .keybuckets import bucket_bits, bucket_of, read_file, spread
from ..kernels.rowhash import fingerprint_keys

__all__ = ["ANSWER", "BUCKET_ROWS", "MISSING", "RANGE_ROWS", "Located", "locate", "sorted_lookup"]

#: keys (cached and asked for together) matched in memory at a time, on average
BUCKET_ROWS = 1 << 17
#: rows of answers read back at a time
RANGE_ROWS = 1 << 17
#: the ``shard`` of a row whose key the cache does not hold
MISSING = -1

_CACHED = np.dtype([("hi", "<u8"), ("lo", "<u8"), ("shard", "<i8"), ("row", "<i8")])
_ASKED = np.dtype([("hi", "<u8"), ("lo", "<u8"), ("row", "<i8")])
#: per row asked: the shard and row holding its key, or MISSING and the first row asked with the same key
ANSWER = np.dtype([("row", "<i8"), ("shard", "<i8"), ("at", "<i8")])


@dataclass
class Located:
    """The answers of :func:`locate`: ``n`` rows, of which ``n_missing`` are not cached, ``n_new`` of
    them the first row of their key (the rows to embed: each distinct missing key once)."""

    folder: Path
    n: int
    n_missing: int
    n_new: int

    def blocks(self) -> Iterator[np.ndarray]:
        """The answers (structured, fields ``row``, ``shard``, ``at``) of consecutive row ranges, in row order."""
        for r, start in enumerate(range(0, self.n, RANGE_ROWS)):
            got = read_file(self.folder, "a", r, ANSWER)
            out = np.empty(min(RANGE_ROWS, self.n - start), ANSWER)
            if len(got) != len(out):  # pragma: no cover - would mean a bucket file was lost
                raise RuntimeError(f"cache lookup answered {len(got)} of rows {start}-{start + len(out) - 1}")
            out[got["row"] - start] = got
            yield out

    def new_rows(self, size: int) -> Iterator[np.ndarray]:
        """The rows to embed (each missing key's first row), ascending, in blocks of ``size`` (the
        last one shorter)."""
        held, count = [], 0
        for a in self.blocks():
            part = a["row"][(a["shard"] == MISSING) & (a["at"] == a["row"])]
            while len(part):
                take, part = part[:size - count], part[size - count:]
                held.append(take)
                count += len(take)
                if count == size:
                    yield np.concatenate(held)
                    held, count = [], 0
        if count:
            yield np.concatenate(held)


def locate(shards: Iterable[np.ndarray], asked: Iterable[Tuple[int, np.ndarray]], n: int, n_cached: int,
           folder: Path) -> Located:
    """Find each asked key among the cached ones.

    Parameters
    ----------
    shards : iterable of ndarray of shape (m, 2), uint64
        Each cache shard's keys, in the cache's order (a shard's number is its position).
    asked : iterable of (first row, ndarray of shape (m, 2) uint64)
        The keys asked for, consecutive blocks from row 0 to ``n``.
    n, n_cached : int
        Rows asked and keys cached (to size the buckets).
    folder : Path
        Where the bucket and answer files go (created; the caller removes it).
    """
    folder.mkdir(parents=True, exist_ok=True)
    bits = bucket_bits(n + n_cached, BUCKET_ROWS)
    for s, keys in enumerate(shards):
        rec = _records(_CACHED, keys, shard=s, row=np.arange(len(keys)))
        spread(folder, "c", rec, bucket_of(rec["hi"], bits))
    for start, keys in asked:
        rec = _records(_ASKED, keys, row=np.arange(start, start + len(keys)))
        spread(folder, "q", rec, bucket_of(rec["hi"], bits))
    n_missing = n_new = 0
    for b in range(1 << bits):
        cached, asked_b = read_file(folder, "c", b, _CACHED, drop=True), read_file(folder, "q", b, _ASKED, drop=True)
        if not len(asked_b):
            continue
        answer = _match(cached, asked_b)
        missing = answer["shard"] == MISSING
        n_missing += int(missing.sum())
        n_new += int((missing & (answer["at"] == answer["row"])).sum())
        spread(folder, "a", answer, answer["row"] // RANGE_ROWS)
    return Located(folder, n, n_missing, n_new)


def _match(cached: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """One bucket's answers (``asked`` in row order); ``cached`` in shard order, rows in order."""
    q = _keys(asked)
    answer = np.empty(len(asked), ANSWER)
    answer["row"] = asked["row"]
    answer["shard"] = MISSING
    hit = np.zeros(len(asked), bool)
    if len(cached):
        order = np.argsort(_keys(cached), kind="stable")  # equal keys: the first shard's, then the first row's
        cached = cached[order]
        hit, safe = sorted_lookup(_keys(cached), q)
        answer["shard"][hit] = cached["shard"][safe[hit]]
        answer["at"][hit] = cached["row"][safe[hit]]
    miss = np.flatnonzero(~hit)
    # a missing key is embedded once, for its first row; its other rows point there
    _, first, inverse = np.unique(q[miss], return_index=True, return_inverse=True)
    answer["at"][miss] = asked["row"][miss[first[inverse.reshape(-1)]]]
    return answer


def sorted_lookup(keys: np.ndarray, q: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(found, position)`` of each key of ``q`` in the sorted ``keys`` (structured, see
    :func:`~sibscan.kernels.rowhash.fingerprint_keys`): the first equal key's position where found."""
    if len(keys) == 0:
        return np.zeros(len(q), bool), np.zeros(len(q), np.int64)
    pos = np.searchsorted(keys, q)
    safe = np.minimum(pos, len(keys) - 1)
    return (pos < len(keys)) & (keys[safe] == q), safe


def _keys(rec: np.ndarray) -> np.ndarray:
    return fingerprint_keys(np.stack([rec["hi"], rec["lo"]], axis=1))


def _records(dtype: np.dtype, keys: np.ndarray, **fields: np.ndarray) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.uint64).reshape(-1, 2)
    rec = np.empty(len(keys), dtype)
    rec["hi"], rec["lo"] = keys[:, 0], keys[:, 1]
    for name, value in fields.items():
        rec[name] = value
    return rec
