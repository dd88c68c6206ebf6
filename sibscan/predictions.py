"""Model predictions for the test split, and accuracy split by a mask (sibling rows vs the rest).

A predictions file is either

* one prediction per line (``.txt`` or any other suffix), in test order; or
* a CSV/TSV with a header, or JSONL, with an ``id`` and a ``prediction`` field (``pred`` and
  ``y_pred`` are accepted too), matched to the test items by id. Without an id column the rows
  are taken in test order.

An optional ``label`` column holds the true label of each row: it is the truth the predictions are
scored against when the scan's test items have no labels (:func:`read_predictions_and_truth`).
"""
from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from . import fmt
from .errors import InputError
from .items import Items
from .loaders.records import json_objects
from .stats import wilson_interval

__all__ = ["PREDICTION_FIELDS", "accuracy_split", "correct_mask", "read_lines", "read_predictions",
           "read_predictions_and_truth", "read_records"]

#: accepted names of the prediction column/field, in order of preference
PREDICTION_FIELDS = ("prediction", "pred", "y_pred", "predicted")


def read_lines(path: Path, what: str = "predictions") -> List[str]:
    """The lines of a UTF-8 text file; :class:`InputError` naming ``what`` if it cannot be read."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what}: {exc}", path=path) from None


def read_records(path: Path, lines: List[str], fields: tuple = PREDICTION_FIELDS) -> Optional[List[Dict[str, str]]]:
    """Rows of a JSONL file, or of a CSV/TSV whose header names one of ``fields``; None for one value per line.

    CSV/TSV keys are lower-cased and stripped; values are strings (``""`` for JSON null).
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [{k: ("" if v is None else str(v)) for k, v in rec.items()}
                for _, rec in json_objects(lines, path, hint=f"; each line is one JSON object with id and {fields[0]}")]
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(lines, delimiter="\t" if suffix == ".tsv" else ",")
        header = [f.strip().lower() for f in (reader.fieldnames or [])]
        if not any(f in fields for f in header):
            return None  # no header: one prediction per line
        return [{k.strip().lower(): (v or "").strip() for k, v in row.items() if k is not None} for row in reader]
    return None


def read_predictions(path: str | os.PathLike, test: Items) -> np.ndarray:
    """Read one prediction per test item.

    Parameters
    ----------
    path : path
        See the module docstring for the formats.
    test : Items
        The test split; predictions are returned in its order.

    Returns
    -------
    ndarray of shape (n_test,), str

    Raises
    ------
    InputError
        Unreadable file, wrong number of predictions, ids missing from the file or unknown to the
        test split.
    """
    return _read(Path(path), test)[0]


def read_predictions_and_truth(path, test: Items) -> tuple:
    """Predictions and the labels they are scored against, both in test order.

    The truth is the test items' labels; when they have none, the predictions file's ``label``
    column.

    Parameters
    ----------
    path : path, or array-like of shape (n_test,)
        A predictions file (module docstring), or (Python API) the predictions themselves, one per
        test item in the scan's test order.

    Returns
    -------
    predictions, labels : ndarray of shape (n_test,), str

    Raises
    ------
    InputError
        As :func:`read_predictions`; also when neither the test items nor the file have labels, or a
        row of the file's label column is empty; an array of another length than the test split.
    """
    if not isinstance(path, (str, os.PathLike)):
        return _given_predictions(path, test)
    path = Path(path)
    preds, labels = _read(path, test)
    if test.labels is not None:
        return preds, np.asarray(test.labels)
    if labels is None:
        raise InputError("the test items have no labels and this file has no label column, so predictions cannot be "
                         "scored; add a label column (id, prediction, label), scan with --label FIELD, or (Python API) "
                         "pass correct=", path=path)
    empty = np.char.str_len(np.char.strip(labels)) == 0
    if empty.any():
        raise InputError(f"test id {str(test.ids[np.argmax(empty)])!r} has an empty label; give a label on every row",
                         path=path)
    return preds, labels


def _given_predictions(values, test: Items) -> tuple:
    """Predictions given as an array-like (the ``predictions=`` argument), scored against the test labels."""
    what = "predictions"
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):  # ragged nested lists
        arr = np.asarray(None)
    if arr.ndim != 1:
        raise InputError("give a predictions file (CSV/JSONL with id and prediction, or one per line) or an array of "
                         f"shape ({len(test)},), one prediction per test item in scan order; got "
                         f"{type(values).__name__}{f' of shape {arr.shape}' if arr.ndim else ''}", path=what)
    if len(arr) != len(test):
        raise InputError(f"{len(arr)} predictions for {len(test)} test items; give one per test item, in scan order "
                         "(or a file with id and prediction columns)", path=what)
    if test.labels is None:
        raise InputError("the test items have no labels to score predictions against; scan with label= (a label "
                         "column), give a predictions file with a label column, or pass correct=", path=what)
    return np.asarray(["" if v is None else str(v) for v in arr.tolist()], dtype=str), np.asarray(test.labels)


def _read(path: Path, test: Items) -> tuple:
    """(predictions, the file's ``label`` column or None), both in test order."""
    if not path.is_file():
        raise InputError("predictions file not found", path=path)
    lines = read_lines(path)
    n = len(test)
    recs = read_records(path, lines)
    if recs is None:
        preds = [ln.strip() for ln in lines if ln.strip()]
        if path.suffix.lower() in (".csv", ".tsv") and len(preds) == n + 1:
            preds = preds[1:]  # a header line without a recognised name
        if len(preds) != n:
            raise InputError(f"has {len(preds)} predictions for {n} test rows; give one per test row, "
                             "in test order, or a CSV/JSONL with id and prediction columns", path=path)
        return np.array(preds, dtype=str), None
    if not recs:
        raise InputError("no predictions", path=path)
    key = next((k for k in PREDICTION_FIELDS if k in recs[0]), None)
    if key is None:
        raise InputError(f"no prediction field; expected one of {', '.join(PREDICTION_FIELDS)}", path=path, row=1)
    preds = np.array([r.get(key, "") for r in recs], dtype=str)
    labels = np.array([r.get("label", "") for r in recs], dtype=str) if "label" in recs[0] else None
    if "id" not in recs[0]:
        if len(preds) != n:
            raise InputError(f"has {len(preds)} predictions for {n} test rows and no id column", path=path)
        return preds, labels
    ids = np.array([r.get("id", "") for r in recs], dtype=str)
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise InputError(f"id {str(uniq[counts > 1][0])!r} appears {int(counts[counts > 1][0])} times; "
                         "give one prediction per id", path=path)
    order = np.argsort(ids)
    pos = np.searchsorted(ids[order], test.ids)
    pos = np.minimum(pos, len(ids) - 1)
    found = ids[order][pos] == test.ids
    if not found.all():
        miss = test.ids[~found]
        raise InputError(f"{len(miss)} of {n} test ids have no prediction (first: "
                         f"{', '.join(map(repr, miss[:3].tolist()))})",
                         path=path)
    extra = np.setdiff1d(ids, test.ids)
    if len(extra):
        raise InputError(f"{fmt.plural(len(extra), 'id')} {'is' if len(extra) == 1 else 'are'} not in the test split "
                         f"(first: {', '.join(map(repr, extra[:3].tolist()))})",
                         path=path)
    take = order[pos]
    return preds[take], (None if labels is None else labels[take])


def correct_mask(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Whether each prediction equals its label.

    Labels and predictions are compared as numbers when both sides all parse as numbers (so
    ``"1"`` equals ``"1.0"``), otherwise as stripped strings.

    Parameters
    ----------
    predictions, labels : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (n,), bool
    """
    p = np.char.strip(np.asarray(predictions).astype(str))
    y = np.char.strip(np.asarray(labels).astype(str))
    if p.shape != y.shape:
        raise ValueError(f"{len(p)} predictions for {len(y)} labels")
    try:
        return p.astype(np.float64) == y.astype(np.float64)
    except ValueError:
        return p == y


def accuracy_split(correct: np.ndarray, mask: np.ndarray) -> dict:
    """Accuracy on all rows, on the masked rows (e.g. rows with a train sibling) and on the rest.

    Parameters
    ----------
    correct : ndarray of shape (n,), bool
    mask : ndarray of shape (n,), bool

    Returns
    -------
    dict
        ``{"all": {...}, "masked": {...}, "rest": {...}, "difference": float}`` where each part
        has ``n``, ``correct``, ``accuracy`` and ``ci`` (Wilson 95 % interval, None when the part is
        empty), and ``difference`` is masked minus rest accuracy (NaN if either is empty).
    """
    correct = np.asarray(correct, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if correct.shape != mask.shape:
        raise ValueError(f"correct has shape {correct.shape}, mask {mask.shape}")

    def part(sel: np.ndarray) -> dict:
        n = int(sel.sum())
        k = int(correct[sel].sum())
        return {"n": n, "correct": k, "accuracy": k / n if n else math.nan, "ci": wilson_interval(k, n)}

    out = {"all": part(np.ones_like(mask)), "masked": part(mask), "rest": part(~mask)}
    out["difference"] = out["masked"]["accuracy"] - out["rest"]["accuracy"]
    return out
