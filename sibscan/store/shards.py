"""Embeddings on disk in ``.npy`` shards, read block by block: train sets larger than memory.

Layout of a shard directory::

    DIR/index.json         {"format": "sibscan-shards", "version": 1, "dim": d, "dtype": "float16",
                            "n": total rows, "shards": [{"file": "shard-00000.npy", "rows": r}, ...]}
    DIR/shard-00000.npy    (r, d) array
    ...

Every shard is written atomically before the index that lists it, and the index itself is written
atomically, so an interrupted :meth:`ShardedEmbeddings.append` leaves the previous state readable
(a half-written shard is simply not listed and gets overwritten by the next append).

Blocks are read with plain file reads (no memory map kept open), so the resident memory of a search
is the block, not the part of the file touched so far.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import numpy as np

from ..atomic import save_npy, write_json
from .diskarray import read_npy_header
from ..errors import InputError, SibscanError

__all__ = ["ShardedEmbeddings"]

_DTYPES = ("float16", "float32")
_INDEX = "index.json"


class ShardedEmbeddings:
    """Embeddings of shape ``(n, dim)`` stored as ``.npy`` shards on disk.

    Open an existing directory with ``ShardedEmbeddings(path)``; make a new one with
    :meth:`create` (or :meth:`from_array`).

    Parameters
    ----------
    path : str or Path
        Directory holding ``index.json`` and the shards.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        index = self.path / _INDEX
        if not index.is_file():
            raise SibscanError(
                f"{self.path} is not a shard directory (no {_INDEX}); make one with ShardedEmbeddings.create"
            )
        try:
            meta = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SibscanError(f"{index}: unreadable shard index ({exc}); rebuild the shards") from None
        if meta.get("format") != "sibscan-shards":
            raise SibscanError(f"{index}: not a sibscan shard index")
        self.dim = int(meta["dim"])
        self.dtype = np.dtype(meta["dtype"])
        self.shard_rows = int(meta.get("shard_rows", 0)) or None
        self._shards: List[dict] = list(meta["shards"])
        self._offsets = np.cumsum([0] + [int(s["rows"]) for s in self._shards])

    # ------------------------------------------------------------------------------ creation
    @classmethod
    def create(cls, path: str | os.PathLike, dim: int, dtype: str = "float16",
               shard_rows: int = 262144, exist_ok: bool = False) -> "ShardedEmbeddings":
        """Make an empty shard directory.

        Parameters
        ----------
        path : str or Path
        dim : int
            Embedding dimension.
        dtype : {"float16", "float32"}
            Storage type; blocks are read back as float32.
        shard_rows : int
            Most rows in one shard file (an append larger than this is split).
        exist_ok : bool
            Open an existing directory of the same dim/dtype instead of failing.
        """
        path = Path(path)
        if str(np.dtype(dtype)) not in _DTYPES:
            raise SibscanError(f"unknown shard dtype {dtype!r}; available: {', '.join(_DTYPES)}")
        if (path / _INDEX).exists():
            if not exist_ok:
                raise SibscanError(f"{path} already holds shards; open it with ShardedEmbeddings(path)")
            out = cls(path)
            if out.dim != dim or out.dtype != np.dtype(dtype):
                raise SibscanError(
                    f"{path} holds {out.dtype} shards of dim {out.dim}, not {dtype} of dim {dim}"
                )
            return out
        if int(dim) < 1 or int(shard_rows) < 1:
            raise SibscanError(f"dim and shard_rows must be >= 1, got {dim} and {shard_rows}")
        path.mkdir(parents=True, exist_ok=True)
        write_json(path / _INDEX, {"format": "sibscan-shards", "version": 1, "dim": int(dim),
                                   "dtype": str(np.dtype(dtype)), "shard_rows": int(shard_rows),
                                   "n": 0, "shards": []})
        return cls(path)

    @classmethod
    def from_array(cls, path: str | os.PathLike, array: np.ndarray, dtype: str = "float16",
                   shard_rows: int = 262144) -> "ShardedEmbeddings":
        """Write ``array`` of shape (n, dim) as a new shard directory."""
        array = np.asarray(array)
        if array.ndim != 2:
            raise InputError(f"embeddings must be 2-D (n, dim), got shape {array.shape}")
        out = cls.create(path, array.shape[1], dtype=dtype, shard_rows=shard_rows)
        out.append(array)
        return out

    def append(self, block: np.ndarray) -> None:
        """Append rows (shape ``(r, dim)``) as new shard file(s), then update the index atomically."""
        block = np.asarray(block)
        if block.ndim != 2 or block.shape[1] != self.dim:
            raise InputError(
                f"appended block has shape {block.shape}, expected (rows, {self.dim}); "
                "encode with the same encoder as the existing shards", path=self.path)
        bad = ~np.isfinite(block).all(axis=1)
        if bad.any():
            raise InputError(f"row {self.n + int(np.argmax(bad))} of the appended block is not finite "
                             "(NaN/inf); fix the encoder output", path=self.path)
        step = self.shard_rows or max(1, block.shape[0])
        for s0 in range(0, block.shape[0], step):
            part = block[s0:s0 + step].astype(self.dtype)
            name = f"shard-{len(self._shards):05d}.npy"
            save_npy(self.path / name, part)
            self._shards.append({"file": name, "rows": int(part.shape[0])})
            self._offsets = np.append(self._offsets, self._offsets[-1] + part.shape[0])
            self._write_index()

    def _write_index(self) -> None:
        write_json(self.path / _INDEX, {"format": "sibscan-shards", "version": 1, "dim": self.dim,
                                        "dtype": str(self.dtype), "shard_rows": self.shard_rows or 0,
                                        "n": self.n, "shards": self._shards})

    # ------------------------------------------------------------------------------- reading
    @property
    def n(self) -> int:
        return int(self._offsets[-1])

    @property
    def shape(self) -> Tuple[int, int]:
        return (self.n, self.dim)

    @property
    def ndim(self) -> int:
        return 2

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"ShardedEmbeddings({str(self.path)!r}, n={self.n}, dim={self.dim}, dtype={self.dtype})"

    @property
    def shard_bounds(self) -> List[Tuple[int, int]]:
        """``(start, stop)`` rows of each shard."""
        return [(int(a), int(b)) for a, b in zip(self._offsets[:-1], self._offsets[1:])]

    def _shard_path(self, i: int) -> Path:
        return self.path / self._shards[i]["file"]

    def _read_rows(self, i: int, a: int, b: int, dtype=None) -> np.ndarray:
        """Rows ``a:b`` (local to shard ``i``) by plain file reads."""
        path = self._shard_path(i)
        try:
            with open(path, "rb") as fh:
                shape, fortran, dt = read_npy_header(fh)
                if fortran or len(shape) != 2 or shape[1] != self.dim or shape[0] != self._shards[i]["rows"]:
                    raise SibscanError(f"{path}: shard shape {shape} does not match the index; rebuild the shards")
                fh.seek(fh.tell() + a * self.dim * dt.itemsize)
                out = np.fromfile(fh, dtype=dt, count=(b - a) * self.dim)
        except OSError as exc:
            raise SibscanError(f"{path}: cannot read shard ({exc.strerror}); rebuild the shards") from None
        if out.size != (b - a) * self.dim:
            raise SibscanError(f"{path}: shard is truncated; rebuild the shards")
        out = out.reshape(b - a, self.dim)
        return out if dtype is None else out.astype(dtype, copy=False)

    def iter_blocks(self, block_rows: int, dtype=np.float32, start: int = 0,
                    stop: Optional[int] = None) -> Iterator[Tuple[int, np.ndarray]]:
        """Yield ``(start_row, block)`` with blocks of at most ``block_rows`` rows.

        Blocks never cross a shard boundary, so the blocks of one shard are the same whether the
        whole set or that shard alone is searched (the Ray engine relies on this).

        Parameters
        ----------
        block_rows : int
        dtype : numpy dtype or None
            Type of the yielded blocks (``None`` keeps the storage type).
        start, stop : int
            Row range to read (shard-aligned ranges give the same blocks as a full read).
        """
        stop = self.n if stop is None else min(stop, self.n)
        block_rows = max(1, int(block_rows))
        for i, (s0, s1) in enumerate(self.shard_bounds):
            lo, hi = max(s0, start), min(s1, stop)
            for a in range(lo, hi, block_rows):
                b = min(hi, a + block_rows)
                yield a, self._read_rows(i, a - s0, b - s0, dtype)

    def read(self, start: int = 0, stop: Optional[int] = None, dtype=np.float32) -> np.ndarray:
        """Rows ``start:stop`` as one array of shape (stop - start, dim)."""
        stop = self.n if stop is None else min(stop, self.n)
        parts = [blk for _, blk in self.iter_blocks(max(1, stop - start), dtype, start, stop)]
        if not parts:
            return np.empty((0, self.dim), dtype=dtype or self.dtype)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def take(self, indices: np.ndarray, dtype=np.float32) -> np.ndarray:
        """Rows at ``indices`` (any order, repeats allowed) via memory maps, shape (len(indices), dim)."""
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= self.n):
            raise SibscanError(f"row index out of range for {self.n} embeddings")
        out = np.empty((indices.size, self.dim), dtype=dtype)
        shard = np.searchsorted(self._offsets, indices, side="right") - 1
        for i in np.unique(shard):
            sel = np.flatnonzero(shard == i)
            mm = np.load(self._shard_path(int(i)), mmap_mode="r")
            out[sel] = mm[indices[sel] - self._offsets[i]]
            del mm
        return out

    def __array__(self, dtype=None, copy=None):
        return self.read(dtype=dtype or np.float32)
