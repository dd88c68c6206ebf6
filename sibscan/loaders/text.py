"""Load text items (JSONL, CSV/TSV, Parquet, or ``.txt`` one item per line), and cut long documents
into overlapping word chunks (their exact fingerprints: :mod:`sibscan.fingerprint`).

Item ids are the id column when given, else a column called ``id`` when the file has one (as if
``--id id`` were given: an empty or repeated id is refused, never replaced), else the item's record
number in the file (0-based; for ``.txt`` the 0-based line number), so that skipping an empty item
never renumbers the others. Messages and the list of skipped items name
rows by the file's line number (from 1), as the table loaders do.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np

from ..errors import InputError
from ..items import Items, Skipped
from ..stats import check_int
from .records import column, decode_utf8, id_column, label_field, read_columns

__all__ = ["TEXT_EXTENSIONS", "chunk_items", "load_text"]

TEXT_EXTENSIONS = (".jsonl", ".ndjson", ".csv", ".tsv", ".parquet", ".txt")


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
        Columns holding each item's label, id and group (label default: the first column named
        label, class, target or y; id default: a column named id).
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
            raise InputError("a .txt file has no columns; use JSONL/CSV/Parquet for text/label/id/group fields",
                             path=path)
        lines = decode_utf8(path.read_bytes(), path).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        texts_all = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        ids_all: list = [str(i) for i in range(len(texts_all))]
        line_of = list(range(1, len(texts_all) + 1))
        labels_all = groups_all = None
    else:
        names, columns, line_of = read_columns(path)
        if text_field is None:
            if "text" not in columns:
                raise InputError(
                    f"no 'text' column; columns: {', '.join(names)} (choose one with --text-field)", path=path
                )
            text_field = "text"
        texts_all = column(columns, names, text_field, "text", path)
        n_rows = len(texts_all)
        # an "id" field names its record, as --id id would (a repeat refused, not replaced by row numbers)
        id_field = id if id is not None or "id" not in columns else "id"
        ids_all = id_column(columns, names, id_field, path, line_of)
        ids_all = ids_all or [str(i) for i in range(n_rows)]
        if label is None:  # a field named like a label is one, as in a table (--label names another)
            label = label_field(names, (text_field, id_field, group))
        labels_all = column(columns, names, label, "label", path)
        groups_all = column(columns, names, group, "group", path)
        for i, t in enumerate(texts_all):
            if isinstance(t, (dict, list)):
                raise InputError(f"text field {text_field!r} holds a JSON {type(t).__name__}, not a string", path=path,
                                 row=line_of[i])
        texts_all = ["" if t is None else str(t) for t in texts_all]
    if not texts_all:
        raise InputError("has no records (only a header, or nothing at all)", path=path)
    keep = np.array([bool(t.strip()) for t in texts_all], dtype=bool)
    skipped = [Skipped(where=f"{path}, row {line_of[i]}", reason="empty text") for i in np.flatnonzero(~keep)]
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
    words = check_int(words, "--chunk-words", error=InputError)
    check_int(stride, "--chunk-stride", 1, words, error=InputError)
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
