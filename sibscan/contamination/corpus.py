"""Stream a corpus one document at a time: a file, a folder, or any iterable of strings.

Files: ``.txt`` (the whole file is one document), ``.jsonl``/``.ndjson`` (one document per line, in
its ``text`` field), ``.parquet`` (one document per row of the ``text`` column, read a row group at
a time).  A folder is walked recursively in sorted path order, other file types are ignored.

Bad bytes never stop a build: a ``.txt`` file that is not UTF-8 is skipped whole, a JSONL line that
is not UTF-8 or not a JSON object with a text field is skipped alone; each skip is recorded with
the file and its byte offset (:attr:`CorpusReader.skipped`).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Union

from ..errors import InputError, require

__all__ = ["CORPUS_EXTENSIONS", "CorpusReader", "SkippedDoc", "corpus_files"]

CORPUS_EXTENSIONS = (".txt", ".jsonl", ".ndjson", ".parquet")

CorpusLike = Union[str, os.PathLike, Iterable[str]]


@dataclass(frozen=True)
class SkippedDoc:
    """A document (or whole file) left out of the corpus, with where and why."""

    path: str
    offset: int  # byte offset of the problem in the file
    reason: str

    def to_dict(self) -> dict:
        return {"path": self.path, "offset": self.offset, "reason": self.reason}


def corpus_files(path: Path) -> List[Path]:
    """The corpus files under ``path`` (itself when it is a file), sorted."""
    if path.is_file():
        if path.suffix.lower() not in CORPUS_EXTENSIONS:
            raise InputError(f"unsupported corpus file type {path.suffix!r}; use one of "
                             f"{', '.join(CORPUS_EXTENSIONS)} or a folder of them", path=path)
        return [path]
    if not path.is_dir():
        raise InputError("no such file or folder", path=path)
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in CORPUS_EXTENSIONS)
    if not files:
        raise InputError(f"no corpus files ({', '.join(CORPUS_EXTENSIONS)}) in this folder", path=path)
    return files


class CorpusReader:
    """Iterate over a corpus's documents; records skipped ones.

    Parameters
    ----------
    corpus : str, PathLike or iterable of str
        A file, a folder, or the documents themselves (an iterable is read once).
    text_field : str
        The JSONL / Parquet field holding the text.
    """

    def __init__(self, corpus: CorpusLike, text_field: str = "text"):
        self.text_field = text_field
        self.skipped: List[SkippedDoc] = []
        if isinstance(corpus, (str, os.PathLike)):
            self.path: Optional[Path] = Path(corpus)
            self.files = corpus_files(self.path)
            self._iterable = None
        elif isinstance(corpus, bytes) or not isinstance(corpus, Iterable):
            raise TypeError(f"corpus must be a path or an iterable of strings, not {type(corpus).__name__}")
        else:
            self.path, self.files, self._iterable = None, [], corpus

    def fingerprint(self) -> Optional[str]:
        """Names, sizes and modification times of the files (None for an iterable): what a
        finished index is keyed by, so a changed corpus is rebuilt."""
        if self.path is None:
            return None
        h = hashlib.blake2b(digest_size=16)
        for f in self.files:
            st = f.stat()
            h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return h.hexdigest()

    def __iter__(self) -> Iterator[str]:
        if self._iterable is not None:
            for i, doc in enumerate(self._iterable):
                if not isinstance(doc, str):
                    raise InputError(f"document {i} is a {type(doc).__name__}, expected a string", path="corpus")
                yield doc
            return
        for f in self.files:
            suffix = f.suffix.lower()
            if suffix == ".txt":
                yield from self._txt(f)
            elif suffix == ".parquet":
                yield from self._parquet(f)
            else:
                yield from self._jsonl(f)

    def _skip(self, path: Path, offset: int, reason: str) -> None:
        self.skipped.append(SkippedDoc(str(path), int(offset), reason))

    def _txt(self, path: Path) -> Iterator[str]:
        data = path.read_bytes()
        try:
            yield data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
            self._skip(path, start, f"not valid UTF-8 (byte {data[start]:#04x}); file skipped")

    def _jsonl(self, path: Path) -> Iterator[str]:
        offset = 0
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                here, offset = offset, offset + len(raw)
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw, here = raw[3:], here + 3
                if not raw.strip():
                    continue
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self._skip(path, here + exc.start, f"line {lineno} not valid UTF-8; line skipped")
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    self._skip(path, here, f"line {lineno} not valid JSON ({exc.msg}); line skipped")
                    continue
                text = rec.get(self.text_field) if isinstance(rec, dict) else None
                if not isinstance(text, str):
                    self._skip(path, here, f"line {lineno} has no string field {self.text_field!r}; line skipped")
                    continue
                yield text

    def _parquet(self, path: Path) -> Iterator[str]:
        pq = require("pyarrow.parquet", "parquet", "reading Parquet corpora")
        try:
            pf = pq.ParquetFile(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            self._skip(path, 0, f"cannot read Parquet ({exc}); file skipped")
            return
        if self.text_field not in pf.schema_arrow.names:
            self._skip(path, 0, f"no column {self.text_field!r} (columns: {', '.join(pf.schema_arrow.names)}); "
                                "file skipped")
            return
        for g in range(pf.num_row_groups):
            for text in pf.read_row_group(g, columns=[self.text_field]).column(0).to_pylist():
                if isinstance(text, str):
                    yield text
