"""Load tables and time series into :class:`~sibscan.items.Items` (``modality="table"``).

Formats (chosen by file suffix):

* ``.csv`` / ``.tsv`` with a header row — the label, id and group columns are picked by name
  (``label=``, ``id=``, ``group=``); without ``label=`` a column named ``label``, ``class``,
  ``target`` or ``y`` is used if there is one. Every other column must be numeric.
* headerless ``.tsv`` — the UCR 2018 archive layout: the label is the first column. A file is
  headerless when its first row parses as numbers. (A headerless ``.csv`` has no label unless
  ``label=`` names a column index, e.g. ``label="0"``.)
* ``.ts`` — sktime/UEA (see :mod:`sibscan.loaders.ts_format`); ``.arff`` (see
  :mod:`sibscan.loaders.arff`).
* ``.npy`` / ``.npz`` — an array of shape ``(n, d)`` or ``(n, n_dims, length)``; labels from
  ``labels_path`` (``.npy`` or a text file with one label per line) or, in an ``.npz``, from an
  array named ``y``/``labels``/``label``/``target``.
* ``.parquet`` / ``.pq`` — numeric columns, via pyarrow (``pip install 'sibscan[parquet]'``).

Missing values (empty cell, ``?``, ``NA``, ``NaN``, ``null``) become NaN. pandas is not used.
"""
from __future__ import annotations

import csv
import itertools
import logging
import os
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError, require
from ..items import Items
from .records import label_field
from .rows import MISSING_TOKENS, TABLE_HINT, build_table_items, read_text_lines, strings_to_float
from .arff import load_arff
from .ts_format import load_ts

__all__ = ["DelimitedBlock", "TABLE_SUFFIXES", "delimited_blocks", "line_bound", "load_table"]

log = logging.getLogger(__name__)

TABLE_SUFFIXES = (".csv", ".tsv", ".ts", ".arff", ".npy", ".npz", ".parquet", ".pq")


def load_table(
    source: str | os.PathLike,
    split: str,
    *,
    label: Optional[str] = None,
    id: Optional[str] = None,  # noqa: A002 - matches the CLI option name
    group: Optional[str] = None,
    labels_path: Optional[str | os.PathLike] = None,
    sink=None,
) -> Items:
    """Load one split of a table or time-series file.

    Parameters
    ----------
    source : path
        The file; its suffix selects the format (see the module docstring).
    split : {"train", "test"}
    label, id, group : str, optional
        Column names (or, for headerless files, column indices as strings) of the label, the item
        id and the group. Without ``id`` the row index is the id.
    labels_path : path, optional
        Labels for ``.npy``/``.npz`` input, one per row.
    sink : optional
        CSV/TSV only (other formats ignore it): where the parsed chunks of values go instead of one
        array in memory — an object with ``append(chunk)``, ``close() -> values`` and ``abort()``,
        such as :class:`sibscan.store.spill.RowSpill` (values and fingerprints to disk as they are read).

    Returns
    -------
    Items
        ``modality="table"``, ``values`` float64 of shape ``(n, d)`` (what ``sink.close()`` returned,
        when a sink took them).

    Raises
    ------
    InputError
        Unreadable or empty file, ragged rows, non-numeric cells, unknown column; the message
        names the file and the row.
    """
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(f"unknown table format {suffix or '(no suffix)'!r}; "
                         f"supported: {', '.join(TABLE_SUFFIXES)}", path=path)
    if not path.is_file():
        raise InputError("file not found" if not path.exists() else "not a file", path=path)
    if labels_path is not None and suffix not in (".npy", ".npz"):
        raise InputError("labels_path (--labels-train/--labels-test) is only for .npy/.npz input; "
                         "name the label column with --label", path=path)
    if suffix in (".csv", ".tsv"):
        return _load_delimited(path, split, "\t" if suffix == ".tsv" else ",", label, id, group,
                               _HeldRows(path) if sink is None else sink)
    if suffix == ".ts":
        return load_ts(path, split)
    if suffix == ".arff":
        return load_arff(path, split, label=label, id=id, group=group)
    if suffix in (".npy", ".npz"):
        return _load_numpy(path, split, labels_path)
    return _load_parquet(path, split, label, id, group)


def _pick(names: List[str], wanted: Optional[str], what: str, path: Path) -> Optional[int]:
    if wanted is None:
        return None
    if wanted in names:
        return names.index(wanted)
    raise InputError(f"unknown {what} column {wanted!r}; available: {', '.join(names[:20])}"
                     + (", ..." if len(names) > 20 else ""), path=path)


def _auto_label(names: List[str]) -> Optional[int]:
    name = label_field(names)
    return None if name is None else names.index(name)


def _looks_numeric(row: Sequence[str]) -> bool:
    cells = np.char.strip(np.asarray(row, dtype=str))
    cells = np.where(np.isin(cells, MISSING_TOKENS), "nan", cells)
    try:
        cells.astype(np.float64)
    except ValueError:
        return False
    return True


_CHUNK_ROWS = 1 << 13  # rows parsed at a time: the parsed strings never outgrow one chunk


def _csv_rows(path: Path, delimiter: str) -> Iterator[Tuple[int, List[str]]]:
    """``(file line, cells)`` of every non-blank row, streamed from the file."""
    line = 0
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            for row in reader:
                line = reader.line_num
                if row and any(c.strip() for c in row):
                    yield line, row
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read: not UTF-8 after line {line} ({exc.reason}); "
                         "save the file as UTF-8", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None


class DelimitedBlock(NamedTuple):
    """One chunk of a delimited file's rows: numeric values and the picked columns (stripped strings)."""

    values: np.ndarray  #: float64 of shape (m, n_numeric)
    label: Optional[np.ndarray]
    id: Optional[np.ndarray]
    group: Optional[np.ndarray]
    lines: np.ndarray  #: the file line of each row, int64 of shape (m,)


def delimited_blocks(path: Path, delimiter: str, label, id_, group,  # noqa: C901
                     chunk_rows: Optional[int] = None) -> Iterator[DelimitedBlock]:
    """The rows of a header (or headerless) delimited file, parsed ``chunk_rows`` rows at a time
    (default ``_CHUNK_ROWS``), so the parsed strings never outgrow one chunk.

    Raises :class:`InputError` naming the file line of a bad row when its chunk is reached;
    ``"has a header but no data rows"`` when there are none.
    """
    rows = _csv_rows(path, delimiter)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file (no rows)", path=path)
    header = not _looks_numeric(first[1])
    if header:
        names = [c.strip() for c in first[1]]
    else:
        names = [str(j) for j in range(len(first[1]))]
        if label is None and delimiter == "\t":
            label = "0"  # UCR 2018 archive: headerless .tsv, class label first
        rows = itertools.chain([first], rows)
    width = len(names)
    picked = None
    size = chunk_rows or _CHUNK_ROWS
    for chunk in iter(lambda: list(itertools.islice(rows, size)), []):
        line_no = np.fromiter((ln for ln, _ in chunk), np.int64, len(chunk))
        lengths = np.fromiter((len(r) for _, r in chunk), np.int64, len(chunk))
        bad = np.flatnonzero(lengths != width)
        if len(bad):
            i = int(bad[0])
            raise InputError(f"has {lengths[i]} cells, expected {width} (as in the "
                             f"{'header' if header else 'first row'}); rows must all have the same width",
                             path=path, row=int(line_no[i]))
        if picked is None:
            li = _pick(names, label, "label", path)
            if li is None and header and label is None:
                li = _auto_label(names)
                if li is not None:
                    log.info("%s: using column %r as the label", path, names[li])
            picked = {"label": li, "id": _pick(names, id_, "id", path), "group": _pick(names, group, "group", path)}
            keep = [j for j in range(width) if j not in set(picked.values())]
        cells = np.array([r for _, r in chunk], dtype=str)
        del chunk
        part = strings_to_float(cells[:, keep], path, [names[j] for j in keep], line_no)
        cols = {what: None if j is None else np.char.strip(cells[:, j]) for what, j in picked.items()}
        del cells
        yield DelimitedBlock(part, cols["label"], cols["id"], cols["group"], line_no)
    if picked is None:
        raise InputError("has a header but no data rows", path=path)


class _HeldRows:
    """The loader's own sink: one float64 buffer for every chunk, sized from the line ends (joining
    chunks at the end held them twice)."""

    def __init__(self, path: Path):
        self.path, self.values, self.n = path, None, 0

    def append(self, part: np.ndarray) -> None:
        if self.values is None:
            self.values = np.empty((max(len(part), line_bound(self.path)), part.shape[1]), np.float64)
        elif self.n + len(part) > len(self.values):  # more rows than line ends: cannot happen, but never lose a row
            self.values = np.concatenate([self.values[:self.n], np.empty((len(part), part.shape[1]), np.float64)])
        self.values[self.n:self.n + len(part)] = part
        self.n += len(part)

    def close(self) -> np.ndarray:
        # the rows past n were never written, so never resident: slicing them off costs nothing
        return self.values[:self.n]

    def abort(self) -> None:
        self.values = None


def _load_delimited(path: Path, split: str, delimiter: str, label, id_, group, sink) -> Items:
    """A delimited file read by :func:`delimited_blocks` into ``sink`` (see :func:`load_table`), so peak
    memory is the values the sink holds plus one chunk's strings, not the file's strings."""
    columns: Dict[str, List[np.ndarray]] = {"label": [], "id": [], "group": []}
    try:
        for block in delimited_blocks(path, delimiter, label, id_, group):
            sink.append(block.values)
            for what in columns:
                if getattr(block, what) is not None:
                    columns[what].append(getattr(block, what))
        values = sink.close()
    except BaseException:
        sink.abort()
        raise
    col = lambda what: np.concatenate(columns[what]) if columns[what] else None  # noqa: E731
    return build_table_items(path, split, values, labels=col("label"), ids=col("id"), groups=col("group"))


def line_bound(path: Path) -> int:
    """At least the number of rows of a delimited file: its line ends (``\\n`` and ``\\r``) plus one."""
    count = 1
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                count += block.count(b"\n") + block.count(b"\r")
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None
    return count


def _read_labels(path: Path, n: int, source: Path) -> np.ndarray:
    if not path.is_file():
        raise InputError("label file not found", path=path)
    if path.suffix.lower() == ".npy":
        try:
            labels = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read labels: {exc}", path=path) from None
        labels = labels.reshape(-1) if labels.ndim == 2 and 1 in labels.shape else labels
        if labels.ndim != 1:
            raise InputError(f"labels must be 1-D, got shape {labels.shape}", path=path)
    else:
        labels = np.array([s.strip() for s in read_text_lines(path) if s.strip()], dtype=str)
    if len(labels) != n:
        raise InputError(f"has {len(labels)} labels for {n} rows of {source}", path=path)
    return _label_strings(labels)


def _label_strings(labels: np.ndarray) -> np.ndarray:
    # integer-valued float labels (1.0) print as 1, so they match labels read from text
    if labels.dtype.kind == "f" and np.all(np.isfinite(labels)) and np.all(labels == np.round(labels)):
        labels = labels.astype(np.int64)
    return labels.astype(str)


def _load_numpy(path: Path, split: str, labels_path) -> Items:
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None
    labels = None
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            keys = list(loaded.keys())
            xkey = next((k for k in ("X", "x", "data", "values") if k in keys), None)
            ykey = next((k for k in ("y", "labels", "label", "target") if k in keys), None)
            if xkey is None:
                others = [k for k in keys if k != ykey]
                if len(others) != 1:
                    raise InputError(f"cannot tell the data array among {keys}; name it 'X'", path=path)
                xkey = others[0]
            x = loaded[xkey]
            if ykey is not None and labels_path is None:
                labels = _label_strings(np.asarray(loaded[ykey]).reshape(len(loaded[ykey]), -1)[:, 0])
    else:
        x = loaded
    if x.dtype.kind not in "biuf":
        raise InputError(f"array dtype {x.dtype} is not numeric", path=path)
    shape = None
    if x.ndim == 3:
        shape = (int(x.shape[1]), int(x.shape[2]))
        x = x.reshape(len(x), -1)
    elif x.ndim != 2:
        raise InputError(f"expected an array of shape (n, d) or (n, n_dims, length), got {x.shape}", path=path)
    if labels_path is not None:
        labels = _read_labels(Path(labels_path), len(x), path)
    elif labels is not None and len(labels) != len(x):
        raise InputError(f"has {len(labels)} labels for {len(x)} rows", path=path)
    # build_table_items makes float64 (a copy only when it is not: 0.3 s per 368 MB array copied for nothing)
    return build_table_items(path, split, x, labels=labels, shape=shape)


def _load_parquet(path: Path, split: str, label, id_, group) -> Items:
    pq = require("pyarrow.parquet", "parquet", "reading Parquet files")
    pa = require("pyarrow", "parquet", "reading Parquet files")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read Parquet: {exc}", path=path) from None
    names = list(table.column_names)
    li = _pick(names, label, "label", path)
    if li is None and label is None:
        li = _auto_label(names)
    ii = _pick(names, id_, "id", path)
    gi = _pick(names, group, "group", path)
    special = {j for j in (li, ii, gi) if j is not None}
    cols: Dict[str, np.ndarray] = {}
    for j, name in enumerate(names):
        if j in special:
            continue
        typ = table.schema.field(name).type
        if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)
                or pa.types.is_decimal(typ)):
            raise InputError(f"column {name!r} has type {typ}, not numeric; " + TABLE_HINT, path=path)
        arr = table.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False)
        cols[name] = np.asarray(arr, dtype=np.float64)
    values = np.column_stack(list(cols.values())) if cols else np.zeros((table.num_rows, 0))

    def strs(j):
        if j is None:
            return None
        return np.array([("" if v is None else str(v)) for v in table.column(j).to_pylist()], dtype=str)

    return build_table_items(path, split, values, labels=strs(li), ids=strs(ii), groups=strs(gi))
