"""Read the sktime/UEA ``.ts`` time-series format.

A ``.ts`` file has metadata lines (``@problemName``, ``@univariate``, ``@equalLength``,
``@classLabel true 1 2 3`` ...), then ``@data`` and one series per line::

    1.0,2.0,?,4.0:0.5,0.6,0.7,0.8:classA

Dimensions are separated by ``:``, values by ``,``; ``?`` is a missing value; the class label
(when ``@classLabel true`` or ``@targetLabel true``) follows the last ``:``. Variable-length
series are padded with NaN to the longest one; the result has ``shape = (n_dims, length)`` and
``values`` of shape ``(n, n_dims * length)``, dimension after dimension.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import numpy as np

from ..errors import InputError
from ..items import Items
from .rows import build_table_items, read_text_lines

__all__ = ["load_ts"]

_TRUE = ("true",)


def _header(lines: List[str], path: Path):
    meta: Dict[str, List[str]] = {}
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith("@"):
            raise InputError(f"data before @data: {line[:40]!r}", path=path, row=i + 1)
        parts = line.split()
        key = parts[0][1:].lower()
        if key == "data":
            return meta, i + 1
        meta[key] = parts[1:]
    raise InputError("no @data line; a .ts file needs its metadata, then @data, then one series per line",
                     path=path)


def _flag(meta: Dict[str, List[str]], key: str) -> bool:
    vals = meta.get(key)
    return bool(vals) and vals[0].lower() in _TRUE


def load_ts(path: str | Path, split: str) -> Items:
    """Load a sktime/UEA ``.ts`` file.

    Parameters
    ----------
    path : path
    split : {"train", "test"}

    Returns
    -------
    Items
        ``modality="table"``, ``values`` of shape ``(n, n_dims * length)`` (NaN-padded),
        ``shape = (n_dims, length)``, labels from the last ``:`` field when the file has them.
    """
    path = Path(path)
    lines = read_text_lines(path)
    if not any(s.strip() for s in lines):
        raise InputError("empty file", path=path)
    meta, start = _header(lines, path)
    if _flag(meta, "timestamps"):
        raise InputError("@timeStamps true is not supported; export the series without timestamps",
                         path=path)
    has_label = _flag(meta, "classlabel") or _flag(meta, "targetlabel")
    allowed = set(meta["classlabel"][1:]) if _flag(meta, "classlabel") and len(meta["classlabel"]) > 1 else None
    equal_length = _flag(meta, "equallength")
    tokens: List[str] = []
    lengths: List[int] = []  # one per (row, dim)
    labels: List[str] = []
    line_no: List[int] = []
    n_dims = None
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if not line or line.startswith("#"):
            continue
        if has_label:
            body, sep, lab = line.rpartition(":")
            if not sep:
                raise InputError("no ':label' at the end of the line, but @classLabel is true", path=path, row=i + 1)
            lab = lab.strip()
            if allowed is not None and lab not in allowed:
                raise InputError(f"label {lab!r} is not in @classLabel ({' '.join(sorted(allowed))})",
                                 path=path, row=i + 1)
            labels.append(lab)
        else:
            body = line
        dims = body.split(":")
        if n_dims is None:
            n_dims = len(dims)
        elif len(dims) != n_dims:
            raise InputError(f"has {len(dims)} dimensions, expected {n_dims} (as in the first series)",
                             path=path, row=i + 1)
        for d in dims:
            toks = d.replace("?", "nan").split(",")
            tokens.extend(toks)
            lengths.append(len(toks))
        line_no.append(i + 1)
    if n_dims is None:
        raise InputError("no series after @data", path=path)
    n = len(line_no)
    lens = np.asarray(lengths, dtype=np.int64).reshape(n, n_dims)
    if "dimensions" in meta and meta["dimensions"] and meta["dimensions"][0].isdigit() \
            and int(meta["dimensions"][0]) != n_dims:
        raise InputError(f"@dimensions says {meta['dimensions'][0]} but the series have {n_dims}", path=path)
    if equal_length and (lens != lens[0, 0]).any():
        r, k = (int(v[0]) for v in np.nonzero(lens != lens[0, 0]))
        raise InputError(f"series length {int(lens[r, k])} differs from {int(lens[0, 0])}, but @equalLength is true",
                         path=path, row=line_no[r])
    try:
        flat = np.array(tokens, dtype=np.float64)
    except ValueError:
        _raise_bad_token(tokens, lens, line_no, path)
    length = int(lens.max())
    out = np.full((n * n_dims, length), np.nan)
    seg = lens.reshape(-1)
    seg_start = np.cumsum(seg) - seg
    pos = np.arange(len(flat)) - np.repeat(seg_start, seg)
    out[np.repeat(np.arange(n * n_dims), seg), pos] = flat
    values = out.reshape(n, n_dims * length)
    return build_table_items(path, split, values, labels=np.array(labels, dtype=str) if has_label else None,
                             shape=(n_dims, length))


def _raise_bad_token(tokens, lens, line_no, path):
    k = 0
    for r, row_lens in enumerate(lens):
        for ln in row_lens:
            for t in tokens[k:k + ln]:
                try:
                    float(t)
                except ValueError:
                    hint = " (an empty value: check for a doubled ',' or a trailing ',')" if not t.strip() else ""
                    raise InputError(f"non-numeric value {t.strip()[:40]!r}{hint}", path=path,
                                     row=line_no[r]) from None
            k += ln
    raise AssertionError("unreachable")  # pragma: no cover
