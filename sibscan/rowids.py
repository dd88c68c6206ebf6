"""The ids of rows named by their position (``"0" .. "n-1"``), made on demand instead of held.

A table without an id column names its rows by number.  Held as strings, those ids are numpy's
``<U21`` (84 bytes a row): at a million train rows, more than the rest of a streamed scan keeps.
:class:`RowNumberIds` holds only ``n`` and makes the strings of the rows asked for; indexed, compared,
iterated or converted (``np.asarray``) it gives exactly what ``np.arange(n).astype(str)`` gives.
"""
from __future__ import annotations

from typing import Iterator, Tuple

import numpy as np

__all__ = ["RowNumberIds", "id_blocks", "lexicographic_order"]

#: the dtype of ``np.arange(n).astype(str)`` on this platform (``<U21`` where numpy's default int is
#: int64; ``<U11`` on numpy 1.x under Windows): the ids digest hashes it, so it must be numpy's own
ID_DTYPE = np.arange(1).astype(str).dtype


class RowNumberIds:
    """The ids ``"0" .. "n-1"`` of ``n`` rows, an array-like that makes only the strings asked for.

    Parameters
    ----------
    n : int
        The number of rows.
    """

    dtype = ID_DTYPE
    ndim = 1
    row_bytes = ID_DTYPE.itemsize

    def __init__(self, n: int):
        self.n = int(n)

    @property
    def shape(self) -> Tuple[int]:
        return (self.n,)

    @property
    def size(self) -> int:
        return self.n

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"RowNumberIds({self.n})"

    def _rows(self, key) -> np.ndarray:
        return np.arange(self.n)[key] if isinstance(key, slice) else _checked(np.asarray(key), self.n)

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            i = int(key) + (self.n if key < 0 else 0)
            if not 0 <= i < self.n:
                raise IndexError(f"index {int(key)} is out of bounds for {self.n} ids")
            return np.str_(i)
        return self._rows(key).astype(ID_DTYPE)

    def __iter__(self) -> Iterator[np.str_]:
        for _, block in self.iter_blocks(65536):
            yield from block

    def __array__(self, dtype=None, copy=None):
        out = np.arange(self.n).astype(ID_DTYPE)
        return out if dtype is None else out.astype(dtype)

    def astype(self, dtype, copy: bool = True) -> np.ndarray:
        return np.asarray(self).astype(dtype)

    def tolist(self) -> list:
        return [str(i) for i in range(self.n)]

    def tobytes(self) -> bytes:
        return np.asarray(self).tobytes()

    def __eq__(self, other):
        return np.asarray(self) == other

    def __ne__(self, other):
        return np.asarray(self) != other

    __hash__ = None

    def iter_blocks(self, block_rows: int) -> Iterator[Tuple[int, np.ndarray]]:
        """``(first row, ids)`` blocks of at most ``block_rows`` ids (as :class:`~sibscan.store.diskarray.NpyArray`)."""
        block_rows = max(1, int(block_rows))
        for a in range(0, self.n, block_rows):
            yield a, np.arange(a, min(self.n, a + block_rows)).astype(ID_DTYPE)


def _checked(index: np.ndarray, n: int) -> np.ndarray:
    if index.dtype == bool:
        if index.shape != (n,):
            raise IndexError(f"boolean index of shape {index.shape} for {n} ids")
        return np.flatnonzero(index)
    index = index.astype(np.int64, copy=False)
    if index.size and (index.min() < -n or index.max() >= n):
        raise IndexError(f"id index out of range for {n} ids")
    return np.where(index < 0, index + n, index)


def id_blocks(ids, block_rows: int = 1 << 16) -> Iterator[np.ndarray]:
    """The ids in consecutive blocks: an in-memory array as it is, :class:`RowNumberIds` made a block at a time."""
    if isinstance(ids, RowNumberIds):
        for _, block in ids.iter_blocks(block_rows):
            yield block
    else:
        yield np.ascontiguousarray(ids)


def lexicographic_order(ids) -> np.ndarray:
    """``np.argsort(ids, kind="stable")`` without making the strings of :class:`RowNumberIds`.

    The decimal strings of ``0 .. n-1`` sort as the numbers scaled to the same number of digits,
    the shorter first on a tie ("1" < "10" < "100" < "11" < "2"): two int64 keys, 24 bytes a row.
    """
    if not isinstance(ids, RowNumberIds):
        return np.argsort(np.asarray(ids), kind="stable")
    x = np.arange(ids.n, dtype=np.int64)
    digits = np.ones(ids.n, dtype=np.int64)
    for d in range(1, len(str(max(ids.n - 1, 0)))):
        digits[x >= 10 ** d] += 1
    width = int(digits.max()) if ids.n else 1
    scaled = x * 10 ** (width - digits)
    return np.lexsort((digits, scaled))
