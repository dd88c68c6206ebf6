"""The denominator: every test item has exactly one prediction — or the difference is counted.

:func:`align` matches one run's predictions to the targets by id (by position when the predictions
carry no ids) and keeps the rows it could not use as counted lists, never dropping them silently:
target ids with no prediction (*missing*), ids predicted more than once (*duplicate*), ids that are
not test items (*extra*) and attempted samples whose ``status`` says they failed or timed out
(*failed*). :func:`denominator_check` fails when any list is non-empty.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict

import numpy as np

from ..errors import InputError
from .inputs import OK_STATUS, Column
from .result import Check

__all__ = ["Aligned", "align", "denominator_check", "first"]

_SHOWN = 5


def first(ids, n: int = _SHOWN) -> list:
    """The first ``n`` ids as plain strings (for messages and JSON)."""
    return [str(x) for x in list(ids)[:n]]


@dataclass
class Aligned:
    """One run's predictions matched to the targets.

    Attributes
    ----------
    ids : ndarray of shape (m,), str
        Test ids that have a usable prediction, in target order.
    pred, target : ndarray of shape (m, ...)
        Their predictions and targets (float64, or str for class labels).
    n_targets, n_rows : int
        Test items, and rows in the predictions file.
    by : {"id", "position"}
    missing, extra, duplicate : ndarray of str
        Target ids without a prediction; prediction ids that are not test items; ids predicted
        more than once (the first usable row is kept).
    failed : dict of str to ndarray of str
        Ids of attempted samples with no usable prediction, by their status.
    """

    ids: np.ndarray
    pred: np.ndarray
    target: np.ndarray
    n_targets: int
    n_rows: int
    by: str
    missing: np.ndarray
    extra: np.ndarray
    duplicate: np.ndarray
    failed: Dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        return int(sum(len(v) for v in self.failed.values()))


def _target_ids(target: Column) -> np.ndarray:
    if target.ids is None:
        return np.arange(len(target)).astype(str)
    uniq, counts = np.unique(target.ids, return_counts=True)
    if (counts > 1).any():
        dup = str(uniq[counts > 1][0])
        raise InputError(f"target id {dup!r} appears {int(counts[counts > 1][0])} times; ids must be unique",
                         path=target.path)
    return target.ids


def align(pred: Column, target: Column) -> Aligned:
    """Match ``pred`` to ``target`` (see the module docstring).

    Raises
    ------
    InputError
        Duplicate target ids, or a prediction of another shape than its target.
    """
    t_ids = _target_ids(target)
    n_t, n_p = len(t_ids), len(pred)
    if pred.ids is None:
        by = "position"
        overflow = np.array([f"(row {i + 1})" for i in range(n_t, n_p)], dtype=str)
        p_ids = np.concatenate([t_ids[: min(n_t, n_p)], overflow]).astype(str)
    else:
        by = "id"
        p_ids = pred.ids
    ok = np.ones(n_p, bool) if pred.status is None else np.isin(np.char.lower(np.char.strip(pred.status)), OK_STATUS)
    uniq, first_idx, counts = np.unique(p_ids, return_index=True, return_counts=True)
    duplicate = uniq[counts > 1]
    extra = uniq[~np.isin(uniq, t_ids)]
    # first usable row of each id (np.unique's index is the first occurrence)
    ok_ids, ok_rows = np.unique(p_ids[ok], return_index=True)
    ok_rows = np.flatnonzero(ok)[ok_rows]
    has_row = np.isin(t_ids, uniq)
    usable = np.isin(t_ids, ok_ids)
    failed: Dict[str, np.ndarray] = {}
    failed_ids = t_ids[has_row & ~usable]
    if len(failed_ids):
        statuses = np.char.strip(pred.status[first_idx[np.searchsorted(uniq, failed_ids)]].astype(str))
        failed = {s: failed_ids[statuses == s] for s in sorted(set(statuses.tolist()))}
    ids = t_ids[usable]
    rows = ok_rows[np.searchsorted(ok_ids, ids)]
    t_rows = np.flatnonzero(usable)
    p_vals, t_vals = pred.values[rows], target.values[t_rows]
    if p_vals.ndim > 1 or t_vals.ndim > 1:
        if p_vals.shape[1:] != t_vals.shape[1:]:
            raise InputError(f"each prediction has shape {p_vals.shape[1:]} but each target in {target.path} has "
                             f"{t_vals.shape[1:]}; give arrays of the same shape per sample", path=pred.path)
    return Aligned(ids=ids, pred=p_vals, target=t_vals, n_targets=n_t, n_rows=n_p, by=by,
                   missing=t_ids[~has_row], extra=extra, duplicate=duplicate, failed=failed)


def denominator_check(al: Aligned) -> Check:
    """Fail when a test item has no prediction, or more than one, or a prediction names an unknown id."""
    parts = [(name, arr) for name, arr in (("missing", al.missing), ("duplicate", al.duplicate), ("extra", al.extra))]
    detail = {"n_targets": al.n_targets, "n_prediction_rows": al.n_rows, "scored": int(len(al.ids)),
              "matched_by": al.by}
    for name, arr in parts:
        detail[name] = {"count": int(len(arr)), "first": first(arr)}
    detail["failed"] = {"count": al.n_failed, "by_status": {s: int(len(v)) for s, v in al.failed.items()},
                        "first": first(np.concatenate(list(al.failed.values()))) if al.failed else []}
    if al.by == "position":
        detail["note"] = "the predictions carry no ids: matched by position, so duplicates cannot be seen"
    problems = [f"{len(arr)} {name} (first: {', '.join(first(arr, 3))})" for name, arr in parts if len(arr)]
    if al.failed:
        problems.append(", ".join(f"{len(v)} {s}" for s, v in al.failed.items())
                        + f" (first: {', '.join(detail['failed']['first'][:3])})")
    passed = not problems
    if passed:
        summary = f"every one of {al.n_targets} test items has exactly one prediction (matched by {al.by})"
    else:
        summary = (f"{len(al.ids)} of {al.n_targets} test items scored; " + "; ".join(problems)
                   + " — metrics cover the scored items only")
    limitation = (f"Not every test item was scored: {'; '.join(problems)}; the metrics' denominator is "
                  f"{len(al.ids)}, not {al.n_targets}.") if problems else ""
    return Check("denominator", passed, summary, detail, limitation)
