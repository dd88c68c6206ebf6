"""Arrays on disk in ``.npy`` files, written block by block and read by plain file reads.

Memory bounded by the block size: a table of a million rows is parsed into :class:`NpyWriter` a
block at a time and read back through :class:`NpyArray`, which fetches only the rows asked for
(a slice, a sorted or unsorted index array) with ``pread``.  Nothing is memory-mapped, so the
resident memory of a pass over the file is one block, not the part of the file touched so far
(the pages of a memory map stay resident and count in RSS).

Both are plain ``.npy`` files: ``np.load`` reads them too.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterator, Optional, Tuple

import numpy as np

from ..errors import SibscanError
from ..atomic import new_file_mode

__all__ = ["NpyArray", "NpyStream", "NpyWriter", "collect_rows", "is_disk_array", "read_npy_header"]

_MAGIC = b"\x93NUMPY\x01\x00"
_ROWS_WIDTH = 20  # digits reserved for the row count, so the header can be rewritten in place
_GAP_ROWS = 64  # rows between two wanted rows that are read through rather than seeked over
_RUN_BYTES = 8 << 20  # at most this much is read in one go by take (scattered rows never read the whole file)


def is_disk_array(x) -> bool:
    """True for an :class:`NpyArray` (or anything else that reads rows on demand instead of holding them)."""
    return isinstance(x, NpyArray)


def read_npy_header(fh) -> tuple:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` file ``fh`` is at the start of (version 1.0
    or 2.0 header); leaves ``fh`` at the first data byte."""
    version = np.lib.format.read_magic(fh)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    return read_header(fh)

class NpyStream:
    """A 1-D ``.npy`` member of an archive (``zipfile.ZipFile.open``) read front to back, ``m`` rows at a
    time: memory bounded by the rows asked for, whatever the column's length."""

    def __init__(self, fh):
        self.fh = fh
        shape, fortran, self.dtype = read_npy_header(fh)
        if fortran or len(shape) != 1 or self.dtype.hasobject:
            raise ValueError(f"expected a 1-D column, got shape {shape}")
        self.rows = int(shape[0])

    def read(self, m: int) -> np.ndarray:
        data = self.fh.read(m * self.dtype.itemsize)
        if len(data) != m * self.dtype.itemsize:
            raise EOFError("the column ends early")
        return np.frombuffer(data, dtype=self.dtype)

    def close(self) -> None:
        self.fh.close()


class NpyArray:
    """A read-only ``.npy`` file (C order, 1-D or 2-D) whose rows are read on demand.

    Supports ``len``, ``shape``, ``dtype``, ``ndim``, ``a[i]``, ``a[i:j]``, ``a[index_array]``,
    ``a[mask]``, :meth:`iter_blocks` and ``np.asarray(a)`` (reads everything).

    Parameters
    ----------
    path : path

    Raises
    ------
    SibscanError
        The file is missing, not a ``.npy`` file, Fortran-ordered, or shorter than its header says
        (truncated); the message names the file.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:
            with open(self.path, "rb") as fh:
                shape, fortran, dtype = read_npy_header(fh)
                self.offset = fh.tell()
                size = os.fstat(fh.fileno()).st_size
        except FileNotFoundError:
            raise SibscanError(f"{self.path} is missing") from None
        except OSError as exc:
            raise SibscanError(f"{self.path}: cannot read ({exc.strerror})") from None
        except ValueError as exc:
            raise SibscanError(f"{self.path} is not a readable .npy file ({exc})") from None
        if fortran or len(shape) not in (1, 2) or dtype.hasobject:
            raise SibscanError(f"{self.path}: expected a C-ordered 1-D or 2-D numeric array, got shape {shape}")
        self.shape: Tuple[int, ...] = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        if size < self.offset + self.shape[0] * self.row_bytes:
            raise SibscanError(f"{self.path} is truncated ({size:,} bytes, its header promises "
                               f"{self.offset + self.shape[0] * self.row_bytes:,})")

    # --- array protocol ----------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.row_bytes

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"NpyArray({str(self.path)!r}, shape={self.shape}, dtype={self.dtype})"

    def __array__(self, dtype=None, copy=None):
        out = self.read(0, len(self))
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, key):
        rest = ()
        if isinstance(key, tuple):
            key, rest = key[0], key[1:]
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            out = self.read(start, max(start, stop)) if step == 1 else self.take(np.arange(start, stop, step))
        elif isinstance(key, (int, np.integer)):
            i = int(key) + (len(self) if key < 0 else 0)
            if not 0 <= i < len(self):
                raise IndexError(f"row {int(key)} out of range for {len(self)} rows")
            out = self.read(i, i + 1)[0]
        else:
            index = np.asarray(key)
            if index.dtype == bool:
                if index.shape != (len(self),):
                    raise IndexError(f"boolean index of shape {index.shape} for {len(self)} rows")
                index = np.flatnonzero(index)
            out = self.take(index)
        return out[(slice(None), *rest)] if rest else out

    # --- reading -----------------------------------------------------------------------------
    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` as a new (writable) array."""
        stop = min(int(stop), len(self))
        start = min(max(0, int(start)), stop)
        out = np.empty((stop - start, *self.shape[1:]), dtype=self.dtype)
        if stop > start:
            try:
                with open(self.path, "rb") as fh:
                    fh.seek(self.offset + start * self.row_bytes)
                    got = fh.readinto(memoryview(out).cast("B"))
            except OSError as exc:
                raise SibscanError(f"{self.path}: cannot read ({exc.strerror})") from None
            if got != out.nbytes:
                raise SibscanError(f"{self.path} is truncated (rows {start}-{stop - 1} cannot be read)")
        return out

    def take(self, indices) -> np.ndarray:
        """Rows at ``indices`` (any order, repeats allowed): nearby rows are read in one go."""
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(self)
        if indices.size and (indices.min() < -n or indices.max() >= n):
            raise IndexError(f"row index out of range for {n} rows")
        indices = np.where(indices < 0, indices + n, indices)
        out = np.empty((indices.size, *self.shape[1:]), dtype=self.dtype)
        if not indices.size:
            return out
        uniq, inverse = np.unique(indices, return_inverse=True)
        # runs of wanted rows closer than _GAP_ROWS apart are read as one range, of at most _RUN_BYTES
        span = max(1, _RUN_BYTES // max(1, self.row_bytes))
        cut = np.flatnonzero((np.diff(uniq) > _GAP_ROWS) | (np.diff(uniq // span) != 0)) + 1
        got = np.empty((uniq.size, *self.shape[1:]), dtype=self.dtype)
        pos = 0
        for run in np.split(uniq, cut):
            block = self.read(int(run[0]), int(run[-1]) + 1)
            got[pos:pos + run.size] = block[run - run[0]]
            pos += run.size
        out[:] = got[inverse.reshape(-1)]
        return out

    def iter_blocks(self, block_rows: int, start: int = 0, stop: Optional[int] = None) -> Iterator[Tuple[int, np.ndarray]]:
        """Yield ``(first row, rows)`` blocks of at most ``block_rows`` rows over ``start:stop``."""
        stop = len(self) if stop is None else min(int(stop), len(self))
        block_rows = max(1, int(block_rows))
        for a in range(int(start), stop, block_rows):
            yield a, self.read(a, min(stop, a + block_rows))


class NpyWriter:
    """Write a ``.npy`` file block by block without knowing the row count in advance.

    The rows go to a temporary file beside ``path``; :meth:`close` writes the final row count into
    the header and renames the file onto ``path`` (atomically, with the permissions the umask
    gives, like :mod:`sibscan.atomic`), returning it as an :class:`NpyArray`.  Used as a context
    manager, an exception removes the temporary file and leaves ``path`` as it was.

    Parameters
    ----------
    path : path
    dtype : numpy dtype
    row_shape : tuple of int
        The shape of one row: ``(d,)`` for a 2-D array of width d, ``()`` for a 1-D array.
    """

    def __init__(self, path: str | os.PathLike, dtype, row_shape: Tuple[int, ...] = ()):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.row_shape = tuple(int(s) for s in row_shape)
        self.rows = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp.npy", dir=self.path.parent)
        os.fchmod(fd, new_file_mode())
        self._tmp = Path(tmp)
        self._fh = os.fdopen(fd, "wb")
        self._header_len = len(self._header(0))
        self._fh.write(self._header(0))

    def _header(self, rows: int) -> bytes:
        shape = f"({rows:>{_ROWS_WIDTH}d}, {', '.join(str(s) for s in self.row_shape)})" if self.row_shape \
            else f"({rows:>{_ROWS_WIDTH}d},)"
        text = "{'descr': %r, 'fortran_order': False, 'shape': %s, }" % (np.lib.format.dtype_to_descr(self.dtype), shape)
        # magic (8) + header length (2) + text + padding + "\n" is a multiple of 64 bytes
        pad = -(len(_MAGIC) + 2 + len(text) + 1) % 64
        body = (text + " " * pad + "\n").encode("latin1")
        return _MAGIC + len(body).to_bytes(2, "little") + body

    def append(self, block) -> None:
        """Append rows of shape ``(m, *row_shape)`` (converted to the writer's dtype)."""
        block = np.ascontiguousarray(block, dtype=self.dtype)
        if block.shape[1:] != self.row_shape:
            raise ValueError(f"{self.path}: block of shape {block.shape}, expected (m, {self.row_shape})")
        self._fh.write(memoryview(block).cast("B") if block.size else b"")
        self.rows += len(block)

    def _numpy_header(self, rows: int) -> bytes:
        """The header ``np.save`` writes for this dtype and shape (the file is then byte-identical to it)."""
        import io

        d = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (rows, *self.row_shape)}
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, d)
        return buf.getvalue()

    def close(self) -> NpyArray:
        """Finish the file, rename it onto ``path`` and return it opened for reading."""
        header = self._numpy_header(self.rows)
        if len(header) != self._header_len:  # np.save's header is shorter or longer: keep the reserved one
            header = self._header(self.rows)
        if len(header) != self._header_len:  # pragma: no cover - the row count has a reserved width
            raise RuntimeError("npy header grew")
        self._fh.seek(0)
        self._fh.write(header)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self._tmp, self.path)
        return NpyArray(self.path)

    def abort(self) -> None:
        """Drop the unfinished file."""
        if not self._fh.closed:
            self._fh.close()
        if self._tmp.exists():
            self._tmp.unlink()

    def __enter__(self) -> "NpyWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._fh.closed:
            self.close()


def collect_rows(blocks, n: int, dim: int, out=None):
    """Consecutive float32 row blocks of width ``dim`` (``n`` rows in all) as one in-memory array, or
    written to the ``.npy`` file ``out`` (memory: one block) and returned as an :class:`NpyArray`."""
    if out is None:
        result = np.empty((n, dim), np.float32)
        start = 0
        for block in blocks:
            result[start:start + len(block)] = block
            start += len(block)
        return result
    with NpyWriter(out, np.float32, (dim,)) as writer:
        for block in blocks:
            writer.append(block)
        return writer.close()
