"""Load text items (JSONL, CSV/TSV, Parquet, or ``.txt`` one item per line), fingerprint them
exactly, and cut long documents into overlapping word chunks.

Item ids are the id column when given, else the item's record number in the file (0-based; for
``.txt`` the 0-based line number), so that skipping an empty item never renumbers the others.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError, require
from ..items import Items, Skipped
from ..kernels.textalign import normalise_text

__all__ = [
    "TEXT_EXTENSIONS",
    "chunk_items",
    "load_text",
    "raw_text_fingerprints",
    "text_fingerprints",
]

TEXT_EXTENSIONS = (".jsonl", ".ndjson", ".csv", ".tsv", ".parquet", ".txt")


def _hash128(blobs) -> np.ndarray:
    digests = b"".join(hashlib.blake2b(b, digest_size=16).digest() for b in blobs)
    return np.frombuffer(digests, dtype="<u8").reshape(-1, 2).astype(np.uint64)


def text_fingerprints(texts: Sequence[str]) -> np.ndarray:
    """128-bit exact fingerprints of texts after :func:`normalise_text`.

    Two texts that differ only in case, Unicode compatibility forms or whitespace get the same
    fingerprint.

    Returns
    -------
    ndarray of shape (n, 2), uint64
    """
    return _hash128(normalise_text(t).encode("utf-8") for t in texts)


def raw_text_fingerprints(texts: Sequence[str]) -> np.ndarray:
    """128-bit fingerprints of the texts' raw UTF-8 bytes (no normalisation).

    Returns
    -------
    ndarray of shape (n, 2), uint64
    """
    return _hash128(t.encode("utf-8") for t in texts)


def _decode(data: bytes, path: Path) -> str:
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


def _read_records(path: Path) -> Tuple[List[str], Dict[str, list]]:
    """Columns of a JSONL / CSV / TSV / Parquet file: (column names, {name: values})."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        pq = require("pyarrow.parquet", "parquet", "reading Parquet files")
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise InputError(f"cannot read Parquet file ({exc})", path=path) from None
        return list(table.column_names), {name: table.column(name).to_pylist() for name in table.column_names}
    text = _decode(path.read_bytes(), path)
    if suffix in (".jsonl", ".ndjson"):
        rows: List[dict] = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"line {lineno} is not valid JSON ({exc.msg}, column {exc.colno})", path=path) from None
            if not isinstance(rec, dict):
                raise InputError(f"line {lineno} is a JSON {type(rec).__name__}, expected an object", path=path)
            rows.append(rec)
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


def _column(columns: Dict[str, list], names: List[str], field: Optional[str], what: str, path: Path):
    if field is None:
        return None
    if field not in columns:
        raise InputError(
            f"no {what} column {field!r}; columns: {', '.join(names)} (choose one with the {what} option)",
            path=path,
        )
    return columns[field]


def load_text(
    source: str | Path,
    split: str,
    *,
    text_field: Optional[str] = None,
    label: Optional[str] = None,
    id: Optional[str] = None,  # noqa: A002 - mirrors the CLI option --id
    group: Optional[str] = None,
    chunk_words: Optional[int] = None,
    chunk_stride: Optional[int] = None,
) -> Items:
    """Load one split of text items.

    Parameters
    ----------
    source : str or Path
        A ``.jsonl``/``.ndjson``, ``.csv``, ``.tsv`` or ``.parquet`` file with a text column, or a
        ``.txt`` file with one item per line.
    split : {"train", "test"}
    text_field : str, optional
        The text column; default ``"text"`` (an error lists the columns when there is none).
    label, id, group : str, optional
        Columns holding each item's label, id and group.
    chunk_words, chunk_stride : int, optional
        Cut every text into windows of ``chunk_words`` words every ``chunk_stride`` words (see
        :func:`chunk_items`).

    Returns
    -------
    Items
        ``modality="text"``; empty texts are left out and listed in ``skipped``.
    """
    path = Path(source)
    if not path.is_file():
        raise InputError("no such file", path=path)
    suffix = path.suffix.lower()
    if suffix not in TEXT_EXTENSIONS:
        raise InputError(f"unsupported text file type {suffix!r}; use one of {', '.join(TEXT_EXTENSIONS)}", path=path)
    if chunk_stride is not None and chunk_words is None:
        raise InputError("chunk_stride needs chunk_words (--chunk-words N)", path=path)
    if suffix == ".txt":
        if any(f is not None for f in (text_field, label, id, group)):
            raise InputError("a .txt file has no columns; use JSONL/CSV/Parquet for text/label/id/group fields", path=path)
        lines = _decode(path.read_bytes(), path).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        texts_all = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        ids_all: list = [str(i) for i in range(len(texts_all))]
        labels_all = groups_all = None
    else:
        names, columns = _read_records(path)
        if text_field is None:
            if "text" not in columns:
                raise InputError(
                    f"no 'text' column; columns: {', '.join(names)} (choose one with --text-field)", path=path
                )
            text_field = "text"
        texts_all = _column(columns, names, text_field, "text", path)
        n_rows = len(texts_all)
        ids_all = _column(columns, names, id, "id", path) or [str(i) for i in range(n_rows)]
        labels_all = _column(columns, names, label, "label", path)
        groups_all = _column(columns, names, group, "group", path)
        for i, t in enumerate(texts_all):
            if isinstance(t, (dict, list)):
                raise InputError(f"text field {text_field!r} holds a JSON {type(t).__name__}, not a string", path=path, row=i)
        texts_all = ["" if t is None else str(t) for t in texts_all]
    keep = np.array([bool(t.strip()) for t in texts_all], dtype=bool)
    skipped = [Skipped(where=f"{path}, row {i}", reason="empty text") for i in np.flatnonzero(~keep)]
    if not keep.any():
        raise InputError(f"no non-empty texts ({len(texts_all)} rows, all empty)", path=path)
    idx = np.flatnonzero(keep)
    pick = lambda col: None if col is None else np.asarray(["" if col[i] is None else str(col[i]) for i in idx])  # noqa: E731
    items = Items(
        split=split,
        modality="text",
        ids=pick(ids_all),
        labels=pick(labels_all),
        groups=pick(groups_all),
        texts=[texts_all[i] for i in idx],
        source=str(path),
        skipped=skipped,
    )
    items.check_unique_ids()
    if chunk_words is not None:
        items = chunk_items(items, chunk_words, chunk_stride)
    return items


def _chunk_starts(n_words: int, words: int, stride: int) -> np.ndarray:
    """Window starts covering ``n_words`` words: every ``stride`` words, plus a last window flush
    with the end so that the tail is always covered."""
    last = max(n_words - words, 0)
    starts = np.arange(0, last + 1, stride)
    if starts[-1] != last:
        starts = np.append(starts, last)
    return starts


def chunk_items(items: Items, words: int, stride: Optional[int] = None) -> Items:
    """Cut each text into windows of ``words`` words starting every ``stride`` words.

    A document's similarity can then be taken as the maximum over its chunks.  A text of at most
    ``words`` words becomes one chunk.  Whitespace inside a chunk is collapsed to single spaces.

    Parameters
    ----------
    items : Items
        ``modality="text"``.
    words : int
        Words per chunk, >= 1.
    stride : int, optional
        Words between chunk starts, 1 <= stride <= words; default ``words`` (no overlap).

    Returns
    -------
    Items
        One item per chunk with id ``"<doc id>#chunk<N>"``, the document's label and group, and
        ``extra`` ``{"doc_index": int64 (n_chunks,), "chunk": int64 (n_chunks,), "doc_id": str
        (n_chunks,)}`` plus the document's own extra columns repeated.
    """
    if items.modality != "text":
        raise InputError(f"chunking needs text items, got {items.modality}", path=items.source or None)
    stride = words if stride is None else stride
    if not (isinstance(words, (int, np.integer)) and words >= 1):
        raise InputError(f"--chunk-words must be a positive integer, got {words!r}")
    if not (isinstance(stride, (int, np.integer)) and 1 <= stride <= words):
        raise InputError(f"--chunk-stride must be between 1 and --chunk-words ({words}), got {stride!r}")
    texts: List[str] = []
    doc_index: List[np.ndarray] = []
    chunk_no: List[np.ndarray] = []
    for d, text in enumerate(items.texts):
        tokens = text.split()
        starts = _chunk_starts(len(tokens), words, stride)
        texts.extend(" ".join(tokens[s:s + words]) for s in starts)
        doc_index.append(np.full(len(starts), d, dtype=np.int64))
        chunk_no.append(np.arange(len(starts), dtype=np.int64))
    doc = np.concatenate(doc_index)
    chunk = np.concatenate(chunk_no)
    doc_ids = items.ids[doc]
    ids = np.char.add(np.char.add(doc_ids, "#chunk"), chunk.astype(str))
    extra = {k: np.asarray(v)[doc] for k, v in items.extra.items()}
    extra.update({"doc_index": doc, "chunk": chunk, "doc_id": doc_ids})
    return Items(
        split=items.split,
        modality="text",
        ids=ids,
        labels=None if items.labels is None else items.labels[doc],
        groups=None if items.groups is None else items.groups[doc],
        texts=texts,
        source=items.source,
        skipped=list(items.skipped),
        extra=extra,
    )
