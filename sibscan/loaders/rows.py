"""Shared row parsing of the table formats (CSV/TSV, ``.arff``, ``.ts``): reading lines, numeric
cells with missing-value tokens, and wrapping the columns as table :class:`~sibscan.items.Items`."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

from ..errors import InputError
from ..items import Items
from ..rowids import RowNumberIds
from ..store.diskarray import is_disk_array

__all__ = ["MISSING_TOKENS", "TABLE_HINT", "build_table_items", "read_text_lines", "strings_to_float"]

MISSING_TOKENS = ("", "?", "nan", "NaN", "NAN", "NA", "N/A", "na", "null", "NULL", "None")
TABLE_HINT = (
    "a table needs numeric columns besides --label/--id/--group; for text use --text-field COLUMN, "
    "for image paths --path-field COLUMN, or set --modality"
)


def read_text_lines(path: Path) -> List[str]:
    """All lines of a UTF-8 text file, or an :class:`InputError` saying why it cannot be read."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None


def strings_to_float(cells: np.ndarray, path: Path, names: Sequence[str], rows: np.ndarray) -> np.ndarray:
    """Convert a 2-D string array to float64; missing tokens become NaN.

    Parameters
    ----------
    cells : ndarray of shape (n, d), str
    path : Path
        For messages.
    names : sequence of d str
        Column names, for messages.
    rows : ndarray of shape (n,), int
        The file's line number of each row, for messages.

    Returns
    -------
    ndarray of shape (n, d), float64
    """
    cells = np.char.strip(np.asarray(cells, dtype=str))
    cells = np.where(np.isin(cells, MISSING_TOKENS), "nan", cells)
    try:
        return cells.astype(np.float64)
    except ValueError:
        pass
    for j in range(cells.shape[1]):  # error path only: find the first bad cell
        try:
            cells[:, j].astype(np.float64)
        except ValueError:
            for i, cell in enumerate(cells[:, j]):
                try:
                    float(cell)
                except ValueError:
                    raise InputError(f"column {names[j]!r} has a non-numeric cell {str(cell)[:40]!r}; "
                                     + TABLE_HINT, path=path, row=int(rows[i])) from None
    raise AssertionError("unreachable: conversion failed but every cell parses")  # pragma: no cover


def build_table_items(path: Path, split: str, values: np.ndarray, *, labels=None, ids=None, groups=None,
                      shape: Optional[tuple] = None) -> Items:
    """Wrap loaded columns as table :class:`Items` (row index as id when ``ids`` is None); ``values``
    read from disk (:class:`~sibscan.store.diskarray.NpyArray`, float64) stay there."""
    n = len(values)
    if n == 0:
        raise InputError("no data rows", path=path)
    if values.ndim != 2 or values.shape[1] == 0:
        raise InputError("no numeric columns; " + TABLE_HINT, path=path)
    items = Items(split=split, modality="table", ids=RowNumberIds(n) if ids is None else ids,
                  labels=labels, groups=groups,
                  values=values if is_disk_array(values) else np.ascontiguousarray(values, dtype=np.float64),
                  shape=shape, source=str(path))
    if ids is not None:
        items.check_unique_ids()
    return items
