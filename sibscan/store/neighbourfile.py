"""The neighbours table of a scan written a block of rows at a time: ``neighbours.npz`` and ``neighbours.csv``.

:meth:`ScanDir.write_neighbours <sibscan.store.scandir.ScanDir.write_neighbours>` writes a table held
whole; :class:`NeighboursWriter` takes it in parts (the train→test direction of a large train set is
searched, verified and appended a block of train rows at a time), so the writer holds one part, never
the table.  The files are the same: the CSV text is :meth:`Neighbours.iter_csv
<sibscan.store.neighbourtable.Neighbours.iter_csv>`'s, row for row; the ``.npz`` holds the same arrays as
:meth:`Neighbours.save <sibscan.store.neighbourtable.Neighbours.save>` (a text column as one fixed-width unicode
array, as wide as its longest cell).  That width is known only at the end, so every column is first
spooled to a raw file beside the output (text cells at their part's width) and copied into the
archive on :meth:`NeighboursWriter.close`, a part at a time.

Both files are written atomically (temporary names, renamed when complete); an exception inside
``with NeighboursWriter(...)`` leaves the previous files (if any) and no temporary behind.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from ..atomic import atomic_path
from .neighbourtable import NEIGHBOUR_COLUMNS, SOURCE_MEMBER, Neighbours

__all__ = ["NeighboursWriter"]


class NeighboursWriter:
    """Append :class:`~.neighbourtable.Neighbours` parts; :meth:`close` writes ``npz_path`` and ``csv_path``.

    Parameters
    ----------
    npz_path, csv_path : path
        ``DIR/neighbours.npz`` and ``DIR/neighbours.csv`` (``csv_path=None``: no CSV).
    source : str, optional
        The digest of what the table is computed from, stored in the ``.npz`` as
        :meth:`Neighbours.save <sibscan.store.neighbourtable.Neighbours.save>` stores it.
    """

    def __init__(self, npz_path: str | os.PathLike, csv_path: str | os.PathLike | None, source: str | None = None):
        self.npz_path = Path(npz_path)
        self.source = source
        self.npz_path.parent.mkdir(parents=True, exist_ok=True)
        self._stack = contextlib.ExitStack()
        self._spool = Path(tempfile.mkdtemp(prefix=f".{self.npz_path.name}.", suffix=".tmp", dir=self.npz_path.parent))
        self._files = {}
        #: per text column, the (rows, width) of each part spooled; its final width
        self._parts: Dict[str, List[Tuple[int, int]]] = {n: [] for n, d in NEIGHBOUR_COLUMNS.items() if d == object}
        self._width = {n: 1 for n in self._parts}
        self.rows = 0
        self._csv = None
        try:
            for name in NEIGHBOUR_COLUMNS:
                self._files[name] = open(self._spool / name, "wb")
            if csv_path is not None:
                tmp = self._stack.enter_context(atomic_path(csv_path))
                self._csv = self._stack.enter_context(open(tmp, "w", encoding="utf-8", newline=""))
                self._csv.write(next(Neighbours.empty().iter_csv()))  # the header
        except BaseException:  # no writer to close: leave no spool or temporary behind
            self.abort()
            raise

    def append(self, part: Neighbours) -> None:
        """Add ``part``'s rows after the rows appended so far."""
        if len(part) == 0:
            return
        for name, dtype in NEIGHBOUR_COLUMNS.items():
            col = part.columns[name]
            if dtype == object:
                col = col.astype(str)  # as Neighbours.save stores it
                self._parts[name].append((len(col), col.dtype.itemsize // 4))
                self._width[name] = max(self._width[name], col.dtype.itemsize // 4)
            else:
                col = np.ascontiguousarray(col, dtype=dtype)
            self._files[name].write(memoryview(col).cast("B"))
        if self._csv is not None:
            pieces = part.iter_csv()
            next(pieces)  # the header, written once
            for piece in pieces:
                self._csv.write(piece)
        self.rows += len(part)

    def close(self) -> None:
        """Write the ``.npz`` (column by column, a part at a time) and rename both files into place."""
        try:
            for fh in self._files.values():
                fh.close()
            with atomic_path(self.npz_path, suffix=".npz") as tmp:
                with open(tmp, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                    for name in NEIGHBOUR_COLUMNS:
                        self._copy_column(zf, name)
                    if self.source is not None:
                        with zf.open(f"{SOURCE_MEMBER}.npy", "w") as out:
                            np.lib.format.write_array(out, np.array(self.source))
                    zf.close()
                    raw.flush()
                    os.fsync(raw.fileno())
            if self._csv is not None:
                self._csv.flush()
                os.fsync(self._csv.fileno())
            self._stack.close()  # closes the CSV and renames it onto csv_path
        except BaseException:
            self.abort()
            raise
        finally:
            shutil.rmtree(self._spool, ignore_errors=True)

    def _copy_column(self, zf: zipfile.ZipFile, name: str) -> None:
        dtype = NEIGHBOUR_COLUMNS[name]
        final = np.dtype(f"<U{self._width[name]}") if dtype == object else dtype
        if self.rows == 0 and dtype == object:
            final = np.dtype("<U1")
        header = {"descr": np.lib.format.dtype_to_descr(final), "fortran_order": False, "shape": (self.rows,)}
        with zf.open(f"{name}.npy", "w", force_zip64=True) as out, open(self._spool / name, "rb") as src:
            np.lib.format.write_array_header_1_0(out, header)
            if dtype != object:
                shutil.copyfileobj(src, out, 16 << 20)
                return
            for rows, width in self._parts[name]:
                cells = np.frombuffer(src.read(rows * width * 4), dtype=f"<U{width}")
                out.write(memoryview(np.ascontiguousarray(cells.astype(final))).cast("B"))

    def abort(self) -> None:
        """Drop everything written so far (the previous files, if any, stay)."""
        for fh in self._files.values():
            fh.close()
        with contextlib.suppress(BaseException):
            self._stack.__exit__(RuntimeError, RuntimeError("aborted"), None)  # atomic_path drops its temporary
        shutil.rmtree(self._spool, ignore_errors=True)

    def __enter__(self) -> "NeighboursWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()
