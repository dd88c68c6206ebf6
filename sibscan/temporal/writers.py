"""Write series in the archive's own formats: UCR ``.tsv`` and sktime/UEA ``.ts``.

Values are written with Python's shortest round-trip ``repr``, so reading a file back with
:func:`sibscan.load` gives the arrays bit for bit, and the same arrays always give the same bytes.
Files are written atomically.

* ``.tsv`` — the UCR 2018 layout: no header, the label first, then the values, tab-separated.
  Univariate only, and only for labels that read as numbers (the loader tells a header row from
  a data row by whether it parses as numbers).
* ``.ts`` — ``@problemName … @data`` then ``v,v,…:v,v,…:label`` per series; any channel count.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict

import numpy as np

from ..atomic import write_text
from ..errors import SibscanError
from ..options import SERIES_FORMATS as FORMATS

__all__ = ["choose_format", "write_pair", "write_series"]

_TS_LABEL = re.compile(r"^[^\s:,]+$")


def _numeric(labels: np.ndarray) -> bool:
    try:
        np.asarray(labels, dtype=str).astype(np.float64)
    except ValueError:
        return False
    return True


def choose_format(x: np.ndarray, labels: np.ndarray, fmt: str = "auto") -> str:
    """``"tsv"`` for univariate series with numeric labels, else ``"ts"`` (or check ``fmt``)."""
    if fmt not in ("auto", *FORMATS):
        raise SibscanError(f"unknown format {fmt!r}; available: auto, {', '.join(FORMATS)}")
    tsv_ok = x.shape[1] == 1 and _numeric(labels)
    if fmt == "auto":
        return "tsv" if tsv_ok else "ts"
    if fmt == "tsv" and not tsv_ok:
        why = "multivariate series" if x.shape[1] != 1 else "labels that are not numbers"
        raise SibscanError(f"UCR .tsv cannot hold {why}; use --format ts")
    return fmt


def _rows(x2d: np.ndarray, sep: str) -> list:
    return [sep.join(map(repr, row)) for row in x2d.tolist()]


def write_series(path: str | Path, x: np.ndarray, labels: np.ndarray, *, fmt: str, name: str = "series") -> Path:
    """Write one split.

    Parameters
    ----------
    path : path
    x : ndarray of shape (n, n_channels, length)
    labels : ndarray of shape (n,)
    fmt : {"tsv", "ts"}
    name : str
        ``@problemName`` of a ``.ts`` file.
    """
    labels = np.asarray(labels).astype(str)
    if fmt == "tsv":
        choose_format(x, labels, "tsv")
        lines = [f"{lab}\t{row}" for lab, row in zip(labels, _rows(x[:, 0, :], "\t"))]
        return write_text(path, "\n".join(lines) + "\n")
    if fmt != "ts":
        raise SibscanError(f"unknown format {fmt!r}; available: {', '.join(FORMATS)}")
    bad = [lab for lab in np.unique(labels) if not _TS_LABEL.match(lab)]
    if bad:
        raise SibscanError(f"label {bad[0]!r} cannot be written to a .ts file (no spaces, ':' or ',')")
    n, c, length = x.shape
    classes = " ".join(np.unique(labels))
    header = [f"@problemName {re.sub(r'[^A-Za-z0-9_.-]', '_', name) or 'series'}", "@timeStamps false",
              "@missing false", f"@univariate {'true' if c == 1 else 'false'}"]
    if c > 1:
        header.append(f"@dimensions {c}")
    header += ["@equalLength true", f"@seriesLength {length}", f"@classLabel true {classes}", "@data"]
    per_channel = [_rows(x[:, ch, :], ",") for ch in range(c)]
    lines = [":".join(parts) + f":{lab}" for *parts, lab in zip(*per_channel, labels)]
    return write_text(path, "\n".join(header + lines) + "\n")


def write_pair(paths: Dict[str, Path], data, fmt: str) -> Dict[str, Path]:
    """Write a :class:`SeriesPair`'s two splits to ``paths["train"]`` and ``paths["test"]``."""
    write_series(paths["train"], data.X_train, data.y_train, fmt=fmt, name=data.name)
    write_series(paths["test"], data.X_test, data.y_test, fmt=fmt, name=data.name)
    return {"train": paths["train"], "test": paths["test"]}
