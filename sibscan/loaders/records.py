"""Column records of a CSV/TSV, JSONL or Parquet file: one reader for text files and image listings.

Rows in messages are the file's line numbers (counting from 1, the header of a CSV being line 1),
as for tables; a Parquet file has no lines, so there a row is the record's number counting from 1.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError, require

__all__ = ["column", "decode_utf8", "id_column", "json_objects", "read_columns"]


def decode_utf8(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # utf-8-sig reports offsets after the byte-order mark; report them in the file
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        raise InputError(
            f"not valid UTF-8 at byte offset {start} (line {line}: byte {data[start]:#04x}); "
            "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
            path=path,
        ) from None


def read_columns(path: Path) -> Tuple[List[str], Dict[str, list], List[int]]:
    """Columns of a JSONL / CSV / TSV / Parquet file: (column names, {name: values}, the file line of
    each record (Parquet: its number, from 1))."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        pq = require("pyarrow.parquet", "parquet", "reading Parquet files")
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise InputError(f"cannot read Parquet file ({exc})", path=path) from None
        return (list(table.column_names), {name: table.column(name).to_pylist() for name in table.column_names},
                list(range(1, table.num_rows + 1)))
    text = decode_utf8(path.read_bytes(), path)
    if suffix in (".jsonl", ".ndjson"):
        found = json_objects(text.split("\n"), path)
        if not found:
            raise InputError("empty file (no JSON records)", path=path)
        rows = [rec for _, rec in found]
        names: List[str] = []
        for rec in rows:
            names.extend(k for k in rec if k not in names)
        return names, {name: [rec.get(name) for rec in rows] for name in names}, [line for line, _ in found]
    delimiter = "\t" if suffix == ".tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file (no header row)", path=path) from None
    body, lines = [], []
    for r in reader:
        if not r:
            continue
        if len(r) != len(header):
            raise InputError(f"has {len(r)} fields, the header has {len(header)}", path=path, row=reader.line_num)
        body.append(r)
        lines.append(reader.line_num)
    return header, {name: [r[j] for r in body] for j, name in enumerate(header)}, lines


def json_objects(lines: Iterable[str], path: Path, hint: str = "") -> List[Tuple[int, dict]]:
    """The JSON objects of a JSONL text, one per non-empty line, each with its line number (from 1).

    A line that is not a JSON object is an :class:`InputError` naming the file and the line, then
    ``hint`` (what each line should hold).
    """
    out = []
    for row, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg}, column {exc.colno}){hint}", path=path, row=row) from None
        if not isinstance(rec, dict):
            raise InputError(f"a JSON {type(rec).__name__}, not an object{hint}", path=path, row=row)
        if "\\u" in line and _lone_surrogate(rec):
            raise InputError("holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), which "
                             "is not text; fix or remove that escape", path=path, row=row)
        out.append((row, rec))
    return out


def _lone_surrogate(rec: dict) -> bool:
    """Whether a decoded JSON object holds a string that cannot be written as UTF-8 (a lone surrogate)."""
    try:
        json.dumps(rec, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


#: the label column taken when none is named (--label / label=): the first of these, case-insensitive,
#: for tables, text records, image listings and in-memory columns alike
LABEL_NAMES = ("label", "class", "target", "y")


def label_field(names: List[str], taken: Sequence[Optional[str]] = ()) -> Optional[str]:
    """The column named like a label (:data:`LABEL_NAMES`), not one of ``taken`` (the text, id, ... columns)."""
    lower: Dict[str, str] = {}
    for name in names:
        lower.setdefault(str(name).lower(), name)
    return next((lower[c] for c in LABEL_NAMES if c in lower and lower[c] not in taken), None)


#: the command-line option that names each kind of column
_OPTION = {"path": "--path-field", "text": "--text-field", "label": "--label", "id": "--id", "group": "--group"}


def column(columns: Dict[str, list], names: List[str], field: Optional[str], what: str, path: Path):
    if field is None:
        return None
    if field not in columns:
        raise InputError(
            f"no {what} column {field!r}; columns: {', '.join(names)} (choose one with {_OPTION[what]})",
            path=path,
        )
    return columns[field]


def id_column(columns: Dict[str, list], names: List[str], field: Optional[str], path: Path,
              lines: Sequence[int]) -> Optional[List[str]]:
    """The records' ids from the column ``field``, as strings; None when ``field`` is None.

    Every record needs an id of its own: an empty or missing one, or one two records share, is an
    :class:`InputError` naming the file, the row(s) (``lines``: each record's line) and the fix,
    before any item is read (ids name items in every output, so none may be guessed or replaced).
    """
    values = column(columns, names, field, "id", path)
    if values is None:
        return None
    ids = ["" if v is None else str(v) for v in values]
    fix = f"give every record its own {field!r}, or name another id column with --id COLUMN"
    empty = next((i for i, x in enumerate(ids) if not x.strip()), None)
    if empty is not None:
        raise InputError(f"no id in column {field!r}; {fix}", path=path, row=lines[empty])
    arr = np.asarray(ids, dtype=str)
    _, first, inverse = np.unique(arr, return_index=True, return_inverse=True)
    repeat = np.flatnonzero(first[inverse.ravel()] != np.arange(len(arr)))
    if len(repeat):
        again = int(repeat[0])  # the earliest record that repeats an id, and the first that holds it
        was = int(first[inverse.ravel()[again]])
        raise InputError(f"duplicate id {ids[again]!r} in column {field!r} (rows {lines[was]} and {lines[again]}); "
                         f"ids must be unique within a split: {fix}", path=path)
    return ids
