"""Model selection on the right split: was the reported checkpoint the best on validation, or on test?

Input: a CSV with one row per checkpoint, a checkpoint column (``checkpoint``, ``ckpt``, ``step``,
``epoch``, ``name``, or else the first column) and, for a metric, a validation and a test column
named ``val_<metric>`` / ``test_<metric>`` (also ``valid``/``validation``/``dev``, and the suffix forms
``<metric>_val`` / ``<metric>/test``), or plain ``val`` / ``test``. The reported checkpoint is named
with ``--reported`` or marked in a ``reported`` column (1/true/yes/x).

Choosing on test makes the test score a selection statistic: it is biased upward by the very
choice. The check says which split the reported checkpoint is best on, and how far its test metric
is from the one that selection on validation gives.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

from ..errors import InputError, SibscanError
from ..predictions import read_lines
from .result import Check
from ..options import SELECTION_MODES as MODES

__all__ = ["selection_check", "metric_direction"]

_CKPT = ("checkpoint", "ckpt", "step", "epoch", "name")
_SPLITS = {"validation": "val", "valid": "val", "val": "val", "dev": "val", "test": "test"}
_LOWER_IS_BETTER = ("loss", "err", "rmse", "mae", "mse", "nrmse", "perplexity", "ppl", "wer", "cer")
_TRUE = ("1", "true", "yes", "y", "x")


def metric_direction(metric: str, mode: str = "auto") -> Tuple[str, str]:
    """``("max" | "min", how it was decided)``: ``mode`` when given, else from the metric's name."""
    if mode not in MODES:
        raise SibscanError(f"unknown --mode {mode!r}; available: {', '.join(MODES)}")
    if mode != "auto":
        return mode, "--mode"
    if not metric:
        raise SibscanError("the selection CSV's columns are plain val/test: say whether higher is better with "
                           "--mode max or --mode min")
    low = any(word in metric.lower() for word in _LOWER_IS_BETTER)
    return ("min" if low else "max"), f"the metric name {metric!r}"


def _split_of(column: str) -> Optional[Tuple[str, str]]:
    """``"val_accuracy"`` -> ``("val", "accuracy")``; ``"test"`` -> ``("test", "")``; None otherwise."""
    c = column.strip().lower()
    for word in sorted(_SPLITS, key=len, reverse=True):
        if c == word:
            return _SPLITS[word], ""
        for sep in ("_", "/", ".", "-", " "):
            if c.startswith(word + sep):
                return _SPLITS[word], c[len(word) + 1:]
            if c.endswith(sep + word):
                return _SPLITS[word], c[: -len(word) - 1]
    return None


def _read(path: Path):
    lines = read_lines(path, "the selection CSV")
    reader = csv.reader(lines, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
    rows = [r for r in reader if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise InputError("needs a header and one row per checkpoint", path=path)
    return [h.strip() for h in rows[0]], rows[1:]


def _pairs(header) -> Dict[str, Dict[str, int]]:
    pairs: Dict[str, Dict[str, int]] = {}
    for j, h in enumerate(header):
        hit = _split_of(h)
        if hit:
            pairs.setdefault(hit[1], {})[hit[0]] = j
    return {m: cols for m, cols in pairs.items() if set(cols) == {"val", "test"}}


def _column(path: Path, rows, j: int, name: str) -> np.ndarray:
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        cell = r[j].strip() if j < len(r) else ""
        try:
            out[i] = float(cell) if cell else np.nan
        except ValueError:
            raise InputError(f"column {name!r} holds {cell!r}, not a number", path=path, row=i + 2) from None
    return out


def selection_check(path: os.PathLike, *, reported: Optional[str] = None, metric: Optional[str] = None,
                    mode: str = "auto") -> Check:
    """Compare the reported checkpoint with the best on validation and the best on test.

    Parameters
    ----------
    path : path
        The per-checkpoint CSV (module docstring).
    reported : str, optional
        The checkpoint whose test score was reported (else the ``reported`` column).
    metric : str, optional
        Which metric, when the CSV holds several val/test pairs.
    mode : {"auto", "max", "min"}
        Whether higher is better; ``auto`` decides from the metric's name (loss, error, RMSE… → min).

    Returns
    -------
    Check
        ``selection``: passed when the reported checkpoint is (one of) the best on validation.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("selection CSV not found", path=path)
    header, rows = _read(path)
    low = [h.lower() for h in header]
    pairs = _pairs(header)
    if not pairs:
        raise InputError(f"no validation/test column pair (val_<metric> and test_<metric>, or val and test); "
                         f"columns: {', '.join(header)}", path=path, row=1)
    if metric is None:
        if len(pairs) > 1:
            raise SibscanError(f"{path}: several metrics; choose one with --metric: "
                               f"{', '.join(m or '(plain val/test)' for m in pairs)}")
        metric = next(iter(pairs))
    elif metric.lower() not in pairs:
        raise SibscanError(f"{path}: no val/test columns for metric {metric!r}; available: "
                           f"{', '.join(m or '(plain val/test)' for m in pairs)}")
    metric = metric.lower()
    direction, decided_by = metric_direction(metric, mode)
    ci = next((low.index(c) for c in _CKPT if c in low), 0)
    names = np.array([r[ci].strip() if ci < len(r) else "" for r in rows], dtype=str)
    if reported is None:
        if "reported" not in low:
            raise SibscanError(f"{path}: say which checkpoint's test score was reported: --reported NAME, or a "
                               "'reported' column marking it")
        mark = np.array([(r[low.index("reported")].strip().lower() if low.index("reported") < len(r) else "") in _TRUE
                         for r in rows])
        if mark.sum() != 1:
            raise InputError(f"the 'reported' column marks {int(mark.sum())} checkpoints; mark exactly one", path=path)
        reported = str(names[mark][0])
    hit = np.flatnonzero(names == str(reported).strip())
    if not len(hit):
        raise SibscanError(f"{path}: no checkpoint {reported!r} in column {header[ci]!r}; "
                           f"available: {', '.join(names[:8].tolist())}{' …' if len(names) > 8 else ''}")
    r = int(hit[0])
    val = _column(path, rows, pairs[metric]["val"], header[pairs[metric]["val"]])
    test = _column(path, rows, pairs[metric]["test"], header[pairs[metric]["test"]])
    if np.isnan(val[r]) or np.isnan(test[r]):
        raise InputError(f"the reported checkpoint {reported!r} has no validation or test value", path=path, row=r + 2)
    pick = np.nanmax if direction == "max" else np.nanmin
    best_val = np.flatnonzero(val == pick(val))
    best_test = np.flatnonzero(test == pick(test))
    chosen_on = "validation" if r in best_val else "test" if r in best_test else "neither"
    at_val = float(test[best_val[0]])  # ties on validation: the first in file order
    label = metric or "metric"
    detail = {
        "metric": metric or None, "direction": direction, "direction_from": decided_by,
        "n_checkpoints": len(rows), "reported": str(reported),
        "best_on_validation": names[best_val].tolist(), "best_on_test": names[best_test].tolist(),
        "chosen_on": chosen_on, "validation_at_reported": float(val[r]), "test_at_reported": float(test[r]),
        "test_at_best_on_validation": at_val, "test_at_best_on_test": float(test[best_test[0]]),
        "difference": float(test[r]) - at_val,
    }
    passed = chosen_on == "validation"
    if passed:
        summary = (f"the reported checkpoint {reported} is the best on validation ({label} {val[r]:.4g}); "
                   f"its test {label} is {test[r]:.4g}")
        limitation = ""
    else:
        where = "the best on test, not on validation" if chosen_on == "test" else "the best on neither split"
        summary = (f"the reported checkpoint {reported} is {where} (best on validation: "
                   f"{', '.join(names[best_val].tolist())}): its test {label} {test[r]:.4g} differs by "
                   f"{detail['difference']:+.4g} from the {at_val:.4g} that selection on validation gives")
        limitation = (f"The reported checkpoint was not selected on validation ({where}); selection on validation "
                      f"gives test {label} {at_val:.4g} instead of {test[r]:.4g}.")
    return Check("selection", passed, summary, detail, limitation)
