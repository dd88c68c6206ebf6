"""Predictions and targets as the user keeps them: one file per run, read into a :class:`Column`.

Formats (the same for predictions and targets):

* CSV/TSV with a header, or JSONL, with a value field — for predictions ``prediction`` / ``pred``
  / ``y_pred`` / ``predicted``, for targets ``target`` / ``y_true`` / ``label`` / ``y`` / ``truth``
  — and optionally ``id`` (matched across files) and ``status`` (``ok`` or e.g. ``failed``,
  ``timeout``: attempted samples that produced no prediction);
* ``.txt`` (or a headerless CSV): one value per line, matched by position;
* ``.npy``: an array of shape (n_samples, ...) matched by position; ``.npz``: the value array (key
  ``predictions``/``targets`` or the only array) plus optional ``ids`` and ``status`` arrays;
* targets only: any data file sibscan loads (UCR ``.tsv``, ``.ts``, ``.arff``, Parquet, a CSV
  with ``--label``), whose labels are the targets and whose ids are the item ids.

Values that all parse as numbers (an empty cell is NaN) become float64; otherwise they stay strings
(class labels).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import numpy as np

from ..errors import InputError, SibscanError
from ..predictions import PREDICTION_FIELDS, read_lines, read_records
from ..loaders import load

__all__ = ["Column", "OK_STATUS", "TARGET_FIELDS", "as_column", "expand_runs", "first_non_number", "infer_task",
           "read_column"]

#: accepted names of the target column/field, in order of preference
TARGET_FIELDS = ("target", "y_true", "label", "y", "truth")
#: ``status`` values that mean the sample produced a prediction (case-insensitive); anything else is a failure
OK_STATUS = ("", "ok", "success", "succeeded", "done", "completed")
_FIELDS = {"predictions": PREDICTION_FIELDS, "targets": TARGET_FIELDS}
_ARRAY_KEYS = {"predictions": ("predictions", "prediction", "pred", "y_pred"),
               "targets": ("targets", "target", "y_true", "y", "labels")}
_RECORD_SUFFIXES = (".csv", ".tsv", ".jsonl")
_RUN_SUFFIXES = (".csv", ".tsv", ".jsonl", ".txt", ".npy", ".npz")


@dataclass
class Column:
    """One file's values.

    Attributes
    ----------
    path : Path
    values : ndarray of shape (n,), str — or float64 of shape (n, ...) when numeric
    ids : ndarray of shape (n,), str, or None (matched by position)
    status : ndarray of shape (n,), str, or None (every row produced a value)
    loaded : bool
        Read through :func:`sibscan.loaders.load`: the file is the test split's data too.
    """

    path: Path
    values: np.ndarray
    ids: Optional[np.ndarray] = None
    status: Optional[np.ndarray] = None
    loaded: bool = False

    def __len__(self) -> int:
        return len(self.values)

    @property
    def numeric(self) -> bool:
        return self.values.dtype.kind == "f"


def expand_runs(paths: List[os.PathLike]) -> List[Path]:
    """Prediction files, one per run: files as given, folders replaced by their prediction files (sorted)."""
    out: List[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in _RUN_SUFFIXES)
            if not found:
                raise InputError(f"folder holds no prediction files ({', '.join(_RUN_SUFFIXES)})", path=p)
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise InputError("predictions file not found", path=p)
    return out


def _as_numbers(strings: np.ndarray) -> Optional[np.ndarray]:
    """float64 of the strings ("" -> NaN), or None when one is not a number."""
    s = np.char.strip(strings.astype(str))
    s = np.where(s == "", "nan", s)
    try:
        return s.astype(np.float64)
    except ValueError:
        return None


def _from_strings(path: Path, values: List[str], ids=None, status=None) -> Column:
    arr = np.array(values, dtype=str)
    num = _as_numbers(arr) if len(arr) else None
    return Column(path, num if num is not None else np.char.strip(arr),
                  None if ids is None else np.array(ids, dtype=str),
                  None if status is None else np.array(status, dtype=str))


def _one_per_line(path: Path, role: str, lines: List[str]) -> Column:
    suffix = path.suffix.lower()
    if lines and suffix in (".csv", ".tsv") and ("\t" if suffix == ".tsv" else ",") in lines[0]:
        raise InputError(f"the header names no {role} field; expected one of {', '.join(_FIELDS[role])}",
                         path=path, row=1)
    if len(lines) > 1 and _as_numbers(np.array(lines[:1])) is None and _as_numbers(np.array(lines[1:])) is not None:
        raise InputError(f"first line {lines[0]!r} is not a number but the rest are: a header? name the column "
                         f"{_FIELDS[role][0]!r} (or id,{_FIELDS[role][0]}), or drop the line", path=path, row=1)
    return _from_strings(path, lines)


def as_column(path: Path, labels, ids) -> Column:
    """Targets from labels already in memory (a scan's test items), numbers parsed as in a file."""
    return _from_strings(Path(path), [str(x) for x in labels], ids=[str(i) for i in ids])


def _read_array(path: Path, role: str) -> Column:
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {role}: {exc}", path=path) from None
    ids = status = None
    if isinstance(data, np.lib.npyio.NpzFile):
        with data:
            keys = list(data.files)
            ids = data["ids"].astype(str) if "ids" in keys else None
            status = data["status"].astype(str) if "status" in keys else None
            rest = [k for k in keys if k not in ("ids", "status")]
            key = next((k for k in _ARRAY_KEYS[role] if k in rest), rest[0] if len(rest) == 1 else None)
            if key is None:
                raise InputError(f"cannot tell which array holds the {role}: found {', '.join(keys) or 'none'}; "
                                 f"name it {_ARRAY_KEYS[role][0]!r} (or keep one array besides ids/status)", path=path)
            values = data[key]
    else:
        values = data
    if values.ndim == 0:
        raise InputError(f"{role} array is a scalar; expected shape (n_samples, ...)", path=path)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.dtype.kind in "biuf":
        values = values.astype(np.float64)
    elif values.dtype.kind in "US" and values.ndim == 1:
        return _from_strings(path, values.astype(str).tolist(), ids, status)
    else:
        raise InputError(f"{role} array has dtype {values.dtype}; expected numbers (or 1-D strings)", path=path)
    for name, extra in (("ids", ids), ("status", status)):
        if extra is not None and len(extra) != len(values):
            raise InputError(f"'{name}' has {len(extra)} entries for {len(values)} {role}", path=path)
    return Column(path, values, ids, status)


def _read_loaded(path: Path, label: Optional[str], id_field: Optional[str]) -> Column:
    items = load(path, "test", label=label, id=id_field)
    if not items.has_labels:
        raise InputError("has no labels to use as targets; name the label column with --label, or give a "
                         f"CSV/JSONL with id and one of {', '.join(TARGET_FIELDS)}", path=path)
    col = _from_strings(path, items.labels.tolist(), ids=items.ids.tolist())
    col.loaded = True
    return col


def read_column(path: os.PathLike, role: str, *, label: Optional[str] = None,
                id_field: Optional[str] = None) -> Column:
    """Read a predictions or targets file (formats: module docstring).

    Parameters
    ----------
    path : path
    role : {"predictions", "targets"}
    label, id_field : str, optional
        Label and id column of a targets data file read through :func:`sibscan.loaders.load`.

    Returns
    -------
    Column

    Raises
    ------
    InputError
        Unreadable file, no values, a missing field (naming the accepted ones).
    """
    if role not in _FIELDS:
        raise SibscanError(f"unknown role {role!r}; available: {', '.join(_FIELDS)}")
    path = Path(path)
    if not path.exists():
        raise InputError(f"{role} file not found", path=path)
    suffix = path.suffix.lower()
    if suffix in (".npy", ".npz"):
        col = _read_array(path, role)
    elif role == "targets" and (label is not None or path.is_dir() or suffix not in _RECORD_SUFFIXES + (".txt",)):
        col = _read_loaded(path, label, id_field)
    else:
        lines = read_lines(path, role)
        fields = _FIELDS[role]
        recs = read_records(path, lines, fields) if suffix in _RECORD_SUFFIXES else None
        if recs is None:
            if role == "targets" and suffix in (".csv", ".tsv"):
                col = _read_loaded(path, label, id_field)  # a data file: UCR .tsv, or a table with a label column
            else:
                col = _one_per_line(path, role, [ln.strip() for ln in lines if ln.strip()])
        else:
            if not recs:
                raise InputError(f"no {role}", path=path)
            key = next((k for k in fields if k in recs[0]), None)
            if key is None:
                raise InputError(f"no {role} field; expected one of {', '.join(fields)}", path=path, row=1)
            id_key = (id_field or "id").lower()
            col = _from_strings(path, [r.get(key, "") for r in recs],
                                ids=[r.get(id_key, "") for r in recs] if id_key in recs[0] else None,
                                status=[r.get("status", "") for r in recs] if "status" in recs[0] else None)
    if len(col) == 0:
        raise InputError(f"no {role}", path=path)
    return col


def infer_task(target: Column) -> str:
    """The task the targets imply: ``forecast`` (an array per sample), ``classification`` (strings or
    whole numbers) or ``regression`` (other numbers). ``--task`` overrides it."""
    if not target.numeric:
        return "classification"
    if target.values.ndim >= 2:
        return "forecast"
    v = target.values[np.isfinite(target.values)]
    return "classification" if np.array_equal(v, np.round(v)) else "regression"


def first_non_number(col: Column) -> str:
    """``"row 3: 'cat'"`` — the first value of a label column that is not a number (for error messages)."""
    for i, v in enumerate(col.values.tolist()):
        if _as_numbers(np.array([v])) is None:
            return f"row {i + 1}: {v!r}"
    return "a value"
