"""A split reduced to what exact twins need: fingerprints, label codes and ids — computed while a
CSV/TSV is read, block by block, so the values are never all in memory.

``sibscan twins`` on a 400 MB CSV held every value (8 bytes per cell) to fingerprint them once;
:func:`load_prints` parses ``_BLOCK_ROWS`` rows at a time with the table loader's own parser
(:func:`sibscan.loaders.tables.delimited_blocks`: same messages, same file lines), fingerprints
each block exactly as :func:`sibscan.fingerprint.fingerprint` does (a row's fingerprint depends on
that row alone) and keeps 16 bytes per row per precision, a label code per row and, only when an
id column is named, the ids.  Other formats (``.npy``, Parquet, ``.ts``, ``.arff``, text, images)
are loaded whole by :func:`sibscan.loaders.load` and fingerprinted from the items.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..errors import InputError, SibscanError
from ..fingerprint import fingerprint
from ..items import SPLITS, Items
from . import check_readable, load, modality_of
from .rows import TABLE_HINT
from ..kernels.rowhash import row_fingerprints
from .tables import delimited_blocks, line_bound

__all__ = ["SplitPrints", "load_prints", "prints_from_items"]

_STREAMED = (".csv", ".tsv")
#: rows parsed and fingerprinted at a time (``None``: the table loader's chunk)
_BLOCK_ROWS: Optional[int] = None


@dataclass
class SplitPrints:
    """One split as exact fingerprints.

    ``fps[d]`` is an ndarray of shape (n, 2), uint64: each row's fingerprint at ``d`` decimals (text
    and images: one content fingerprint, under every ``d``).  ``labels`` are codes into ``vocab``
    (``labels[i]`` names ``vocab[labels[i]]``); ``ids`` is None when the ids are the row positions.
    ``items`` holds the whole split when it was loaded whole (needed for predictions and the
    distinct-values statistic of test rows).
    """

    split: str
    modality: str
    n: int
    width: int
    fps: Dict[int, np.ndarray]
    source: str = ""
    labels: Optional[np.ndarray] = None
    vocab: Optional[np.ndarray] = None
    ids: Optional[np.ndarray] = None
    skipped: list = field(default_factory=list)
    items: Optional[Items] = None

    def __len__(self) -> int:
        return self.n

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    def id_strings(self) -> np.ndarray:
        """ndarray of shape (n,), str: the ids (row positions when the file names none)."""
        return self.ids if self.ids is not None else np.arange(self.n).astype(str)


def prints_from_items(items: Items, decimals: Sequence[int], znorm: bool = False) -> SplitPrints:
    """The fingerprints of loaded items at each of ``decimals`` (the items are kept)."""
    vocab = codes = None
    if items.has_labels:
        vocab, codes = np.unique(items.labels, return_inverse=True)
        codes = codes.reshape(-1).astype(np.int32)
    table = items.modality == "table"
    fps = {}
    for d in decimals:  # text and images have one fingerprint whatever the rounding
        fps[int(d)] = fingerprint(items, int(d), znorm) if table or not fps else next(iter(fps.values()))
    return SplitPrints(items.split, items.modality, len(items), int(items.values.shape[1]) if table else 0, fps,
                       source=items.source, labels=codes, vocab=vocab, ids=items.ids, skipped=list(items.skipped),
                       items=items)


def load_prints(source: str | os.PathLike, split: str, decimals: Sequence[int], znorm: bool = False, *,
                keep_items: bool = False, modality: Optional[str] = None, label: Optional[str] = None,
                id: Optional[str] = None,  # noqa: A002 - matches the CLI option name
                text_field: Optional[str] = None, path_field: Optional[str] = None,
                labels_path: Optional[str | os.PathLike] = None) -> SplitPrints:
    """Read one split as fingerprints at each of ``decimals``.

    A CSV/TSV table is streamed (unless ``keep_items``); anything else is loaded by
    :func:`sibscan.loaders.load` with the same arguments.  Errors are the loader's: one line naming
    the file and its line.

    Returns
    -------
    SplitPrints
    """
    path = Path(source)
    common = dict(modality=modality, label=label, id=id, text_field=text_field, path_field=path_field)
    if keep_items or labels_path is not None or path.suffix.lower() not in _STREAMED:
        return prints_from_items(load(path, split, labels_path=labels_path, **common), decimals, znorm)
    if split not in SPLITS:
        raise SibscanError(f"unknown split {split!r}; available: {', '.join(SPLITS)}")
    if not path.exists():
        raise InputError("file not found", path=path)
    check_readable(path)
    if modality_of(path, modality=modality, text_field=text_field, path_field=path_field) != "table" \
            or not path.is_file():
        return prints_from_items(load(path, split, **common), decimals, znorm)
    return _stream_delimited(path, split, [int(d) for d in decimals], znorm, label, id)


def _stream_delimited(path: Path, split: str, decimals: List[int], znorm: bool, label, id_) -> SplitPrints:
    fps: Dict[int, np.ndarray] = {}
    codes: Optional[np.ndarray] = None
    vocab: Dict[str, int] = {}
    ids: List[np.ndarray] = []
    n, width = 0, 0
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    for block in delimited_blocks(path, delimiter, label, id_, None, chunk_rows=_BLOCK_ROWS):
        m = len(block.values)
        if not fps:  # sized from the line ends: the rows past n are never written, so never resident
            width = block.values.shape[1]
            bound = max(m, line_bound(path))
            fps = {d: np.empty((bound, 2), np.uint64) for d in decimals}
            if block.label is not None:
                codes = np.empty(bound, np.int32)
        elif n + m > len(codes if codes is not None else next(iter(fps.values()))):
            raise InputError("more rows than line ends while reading", path=path)  # pragma: no cover
        for d in decimals if width else ():  # no numeric column: refused below, after every row was checked
            fps[d][n:n + m] = row_fingerprints(block.values, decimals=d, znorm=znorm)
        if codes is not None:
            uniq, inv = np.unique(block.label, return_inverse=True)
            codes[n:n + m] = np.array([vocab.setdefault(str(u), len(vocab)) for u in uniq], np.int32)[inv.reshape(-1)]
        if block.id is not None:
            ids.append(block.id)
        n += m
    if width == 0:
        raise InputError("no numeric columns; " + TABLE_HINT, path=path)
    id_arr = np.concatenate(ids) if ids else None
    if id_arr is not None:  # as the loader: ids must be unique within a split
        Items(split, "table", ids=id_arr, values=np.empty((n, 0)), source=str(path)).check_unique_ids()
    words = np.array(list(vocab), dtype=str) if codes is not None else None
    return SplitPrints(split, "table", n, width, {d: fp[:n] for d, fp in fps.items()}, source=str(path),
                       labels=None if codes is None else codes[:n], vocab=words, ids=id_arr)

