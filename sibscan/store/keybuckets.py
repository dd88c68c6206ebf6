"""Keys spread over files by their top bits, each file small enough to sort or match in memory.

128-bit content hashes (fingerprints, cache keys) are even over their top bits, so ``2**bits``
buckets of ``n`` keys hold about ``n / 2**bits`` each, and bucket ``b`` holds exactly the keys
between those of buckets ``b - 1`` and ``b + 1``: sorting each bucket on its own and reading them in
order sorts them all (:func:`sorted_blocks`), in memory bounded by a bucket, not by ``n``.  Files are
named by plain strings (pathlib interns every name it parses, for good) in a folder the caller removes.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterable, Iterator, Tuple

import numpy as np

__all__ = ["bucket_bits", "bucket_of", "read_file", "sorted_blocks", "spread"]

#: fingerprints sorted in memory at a time by :func:`sorted_blocks`, on average
SORT_ROWS = 1 << 17


def bucket_bits(n: int, per_bucket: int) -> int:
    """Top bits that cut ``n`` keys into buckets of about ``per_bucket``."""
    return int(np.ceil(np.log2(max(1.0, n / per_bucket))))


def bucket_of(hi: np.ndarray, bits: int) -> np.ndarray:
    """Each key's bucket: the top ``bits`` of its first (most significant) 64 bits."""
    if bits == 0:
        return np.zeros(len(hi), np.int64)
    return (np.asarray(hi, np.uint64) >> np.uint64(64 - bits)).astype(np.int64)


def spread(folder: Path, prefix: str, rec: np.ndarray, group: np.ndarray) -> None:
    """Append each record to the file of its group (``prefix`` + group number), in their order."""
    order = np.argsort(group, kind="stable")
    rec, group = rec[order], group[order]
    bounds = [0, *(np.flatnonzero(np.diff(group)) + 1).tolist(), len(rec)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            with open(_file(folder, prefix, int(group[a])), "ab") as fh:
                # not ndarray.tofile: its short write on a full disk raises an OSError without errno
                fh.write(memoryview(np.ascontiguousarray(rec[a:b])).cast("B"))


def read_file(folder: Path, prefix: str, number: int, dtype: np.dtype, drop: bool = False) -> np.ndarray:
    """The records of one group (none when it has no file); ``drop``: remove the file once read."""
    path = _file(folder, prefix, number)
    if not os.path.exists(path):
        return np.zeros(0, dtype)
    out = np.fromfile(path, dtype=dtype)
    if drop:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return out


def sorted_blocks(blocks: Iterable[Tuple[int, np.ndarray]], n: int, folder: Path) -> Iterator[np.ndarray]:
    """(n, 2) uint64 fingerprints, given as ``(first row, rows)`` blocks, in lexicographic order
    (first lane, then second: ``np.lexsort((fp[:, 1], fp[:, 0]))``), a bucket at a time."""
    folder.mkdir(parents=True, exist_ok=True)
    bits = bucket_bits(n, SORT_ROWS)
    for _, block in blocks:
        block = np.ascontiguousarray(block, dtype=np.uint64).reshape(-1, 2)
        spread(folder, "s", block, bucket_of(block[:, 0], bits))
    for b in range(1 << bits):
        part = read_file(folder, "s", b, np.dtype("<u8"), drop=True).reshape(-1, 2)
        if len(part):
            yield part[np.lexsort((part[:, 1], part[:, 0]))]


def _file(folder: Path, prefix: str, number: int) -> str:
    return os.path.join(folder, f"{prefix}{number}")
