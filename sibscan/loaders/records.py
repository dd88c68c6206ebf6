"""Column records of a CSV/TSV, JSONL or Parquet file: one reader for text files and image listings."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from ..errors import InputError, require

__all__ = ["column", "decode_utf8", "json_objects", "read_columns"]


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


def read_columns(path: Path) -> Tuple[List[str], Dict[str, list]]:
    """Columns of a JSONL / CSV / TSV / Parquet file: (column names, {name: values})."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        pq = require("pyarrow.parquet", "parquet", "reading Parquet files")
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise InputError(f"cannot read Parquet file ({exc})", path=path) from None
        return list(table.column_names), {name: table.column(name).to_pylist() for name in table.column_names}
    text = decode_utf8(path.read_bytes(), path)
    if suffix in (".jsonl", ".ndjson"):
        rows = [rec for _, rec in json_objects(text.split("\n"), path)]
        names: List[str] = []
        for rec in rows:
            names.extend(k for k in rec if k not in names)
        return names, {name: [rec.get(name) for rec in rows] for name in names}
    delimiter = "\t" if suffix == ".tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file (no header row)", path=path) from None
    body = list(reader)
    bad = next((i for i, r in enumerate(body) if len(r) != len(header) and r), None)
    if bad is not None:
        raise InputError(
            f"has {len(body[bad])} fields, the header has {len(header)}", path=path, row=bad
        )
    body = [r for r in body if r]
    return header, {name: [r[j] for r in body] for j, name in enumerate(header)}


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
        out.append((row, rec))
    return out


def column(columns: Dict[str, list], names: List[str], field: Optional[str], what: str, path: Path):
    if field is None:
        return None
    if field not in columns:
        raise InputError(
            f"no {what} column {field!r}; columns: {', '.join(names)} (choose one with the {what} option)",
            path=path,
        )
    return columns[field]
