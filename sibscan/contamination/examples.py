"""The benchmark examples to audit: ids and texts, from a file or from Python.

Every example needs an id, unique, and a text; a file without an id column, a row with an empty
id, or an id used twice stops the audit with one line naming the file and row.  Empty texts are
left out and listed (``skipped``), never counted as clean.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Mapping, Sequence, Union

from ..errors import InputError
from ..items import Skipped
from ..loaders.text import load_text

__all__ = ["Examples", "load_examples", "as_examples"]


@dataclass
class Examples:
    """Benchmark examples: ``ids[i]`` names ``texts[i]``."""

    ids: List[str]
    texts: List[str]
    source: str = "<python>"
    skipped: List[Skipped] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)


def _check(ids: Sequence[str], texts: Sequence[str], source: str, skipped: List[Skipped]) -> Examples:
    seen = {}
    for row, i in enumerate(ids):
        if i is None or not str(i).strip():
            raise InputError("example without an id; every example needs a unique id", path=source, row=row)
        if i in seen:
            raise InputError(f"duplicate id {i!r} (rows {seen[i]} and {row}); example ids must be unique",
                             path=source)
        seen[i] = row
    if not ids:
        raise InputError("no examples (the file is empty or every text is empty)", path=source)
    return Examples(list(ids), list(texts), source, skipped)


def load_examples(path: Union[str, Path], *, id_field: str = "id", text_field: str = "text") -> Examples:
    """Read examples from a JSONL / CSV / TSV / Parquet file with an id and a text column.

    Parameters
    ----------
    path : str or Path
    id_field, text_field : str
        Column names.

    Returns
    -------
    Examples
    """
    path = Path(path)
    if path.is_file() and path.stat().st_size == 0:
        raise InputError("empty file: no examples", path=path)
    if path.suffix.lower() == ".txt":
        raise InputError("a .txt file has no ids; give examples as JSONL/CSV/Parquet with an id and a text column",
                         path=path)
    items = load_text(path, "test", text_field=text_field, id=id_field)
    raw_ids = [str(i) for i in items.ids]
    return _check(raw_ids, list(items.texts), str(path), list(items.skipped))


def as_examples(data) -> Examples:
    """Examples from what a Python caller holds.

    Parameters
    ----------
    data : Examples, str/Path (a file), mapping id -> text, or sequence of dicts with ``id`` and
        ``text``

    Returns
    -------
    Examples
    """
    if isinstance(data, Examples):
        return data
    if isinstance(data, (str, Path)):
        return load_examples(data)
    if isinstance(data, Mapping):
        pairs = [(str(k), v) for k, v in data.items()]
    elif isinstance(data, Sequence) and all(isinstance(r, Mapping) for r in data):
        pairs = [(None if r.get("id") is None else str(r.get("id")), r.get("text")) for r in data]
    else:
        raise TypeError("examples must be a file path, a mapping id -> text, or a list of {'id', 'text'} dicts")
    ids, texts, skipped = [], [], []
    for row, (i, t) in enumerate(pairs):
        if not isinstance(t, str):
            raise InputError(f"example {i!r}: text is a {type(t).__name__}, expected a string", path="examples",
                             row=row)
        if not t.strip():
            skipped.append(Skipped(where=f"examples, row {row} (id {i!r})", reason="empty text"))
            continue
        ids.append(i)
        texts.append(t)
    return _check(ids, texts, "examples", skipped)
