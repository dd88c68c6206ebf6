"""Checks that predictions are real: finite, not the targets, the initial window kept, errors not too perfect.

Each function takes one run's :class:`~sibscan.audit.denominator.Aligned` predictions and returns a
:class:`~sibscan.audit.result.Check`; :func:`combine_runs` joins one check over several runs (it
passes only when it passes in every run).
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ..predictions import correct_mask
from ..fmt import pct
from .denominator import Aligned, first
from .metrics import per_sample_error, window
from .result import Check

__all__ = ["AGREEMENT_MARGIN", "agreement_limit", "nan_free", "not_targets", "init_window", "near_perfect_share",
           "combine_runs"]

_NON_FINITE_WORDS = ("", "nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


def _bad_rows(values: np.ndarray) -> Tuple[np.ndarray, int]:
    """Rows holding a non-finite value (or, for labels, an empty/NaN one), and the count of such values."""
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values.reshape(len(values), -1))
        return bad.any(axis=1), int(bad.sum())
    bad = np.isin(np.char.lower(np.char.strip(values.astype(str))), _NON_FINITE_WORDS)
    return bad, int(bad.sum())


def nan_free(al: Aligned) -> Check:
    """Fail when a prediction or its target holds NaN or Inf (for class labels: is empty or "nan"):
    either makes the metrics over it undefined, and the summary names which side holds them."""
    rows, n_values = _bad_rows(al.pred)
    t_rows, t_values = _bad_rows(al.target)
    n, k, kt = len(al.ids), int(rows.sum()), int(t_rows.sum())
    detail = {"n": n, "rows": k, "values": n_values, "first": first(al.ids[rows]),
              "target_rows_non_finite": kt, "target_values": t_values, "target_first": first(al.ids[t_rows])}
    found = [f"{c} of {n} {what} hold NaN/Inf ({v} values; first: {', '.join(first(al.ids[r], 3))})"
             for c, v, r, what in ((k, n_values, rows, "predictions"), (kt, t_values, t_rows, "targets")) if c]
    if found:
        summary = "; ".join(found)
        limitation = f"{summary}; metrics over them are undefined."
    else:
        summary, limitation = f"no NaN/Inf in {n} predictions or their targets", ""
    return Check("nan_free", not found, summary, detail, limitation)


#: how far above the model's validation accuracy the share of predictions equal to their targets may
#: lie before ``not_targets`` fails (absolute, 0.05 = 5 points): a test score that much above validation
#: is not the same model on data of the same kind
AGREEMENT_MARGIN = 0.05


def agreement_limit(max_agreement: Optional[float], val_accuracy: Optional[float]) -> Tuple[Optional[float], str]:
    """The largest plausible share of predictions equal to their targets, and where it comes from: the
    stated ``max_agreement``, the validation accuracy plus :data:`AGREEMENT_MARGIN`, the lower of the
    two when both are given; ``(None, "")`` when neither is (only all-equal predictions then fail)."""
    limits = []
    if max_agreement is not None:
        limits.append((max_agreement, "--max-agreement"))
    if val_accuracy is not None:
        limits.append((min(1.0, val_accuracy + AGREEMENT_MARGIN),
                       f"validation accuracy {pct(val_accuracy)} + {AGREEMENT_MARGIN * 100:g} points"))
    return min(limits) if limits else (None, "")


def not_targets(al: Aligned, task: str, init_steps: Optional[int], rtol: float, atol: float,
                max_agreement: Optional[float] = None, val_accuracy: Optional[float] = None) -> Check:
    """Fail when the predictions are the targets: every label equal, or (numbers) ``allclose`` on the
    predicted window at ``rtol``/``atol``; or when the share of samples equal to their targets is above
    the limit :func:`agreement_limit` makes of ``max_agreement`` and ``val_accuracy`` (a copy of the
    answers with a few changed passes the first test, not this one)."""
    n = len(al.ids)
    detail = {"n": n}
    if task == "classification":
        same = correct_mask(al.pred, al.target)
        identical = bool(same.all())
        detail.update(samples_equal=int(same.sum()), compared="labels, exactly")
    else:
        p, y = window(al.pred, init_steps), window(al.target, init_steps)
        close = np.isclose(p, y, rtol=rtol, atol=atol).reshape(n, -1).all(axis=1)
        identical = bool(close.all())
        diff = np.abs(p - y)
        finite = diff[np.isfinite(diff)]
        detail.update(samples_equal=int(close.sum()), rtol=rtol, atol=atol,
                      max_abs_diff=float(finite.max()) if finite.size else None,
                      compared="predicted window" if init_steps else "all values")
    k = detail["samples_equal"]
    # labels only: a share of numbers close to their targets is near_perfect_share's (refused for them: run.py)
    limit, limit_from = agreement_limit(max_agreement, val_accuracy) if task == "classification" else (None, "")
    share = k / n
    too_many = limit is not None and share > limit
    detail.update(identical=identical, share_equal=share, max_agreement=limit, limit_from=limit_from or None)
    if identical:
        summary = (f"all {n} predictions equal their targets"
                   + ("" if task == "classification" else f" (allclose at rtol={rtol:g}, atol={atol:g})")
                   + ": the prediction file holds the targets, not a model's output")
        limitation = "The predictions equal the targets: the scores measure a copy of the answers, not a model."
    elif too_many:
        summary = (f"{pct(share)} of predictions ({k} of {n}) equal their targets, above the limit {pct(limit)} "
                   f"({limit_from}): targets leaked into the predictions, or test items seen in training?")
        limitation = (f"{pct(share)} of predictions equal their targets, above the plausible {pct(limit)} "
                      f"({limit_from}): the scores may measure leaked answers, not a model.")
    else:
        within = (f", within the limit {pct(limit)} ({limit_from})" if limit is not None
                  else "; no limit on the share: give --max-agreement or --val-accuracy" if task == "classification"
                  else "")
        summary = f"predictions differ from the targets ({k} of {n} samples equal{within})"
        limitation = ""
    return Check("not_targets", not identical and not too_many, summary, detail, limitation)


def init_window(al: Aligned, init_steps: int) -> Check:
    """Fail when a forecast changed its given initial window (the first ``init_steps`` steps), which
    must be kept exactly."""
    p0 = al.pred[:, :init_steps].reshape(len(al.ids), -1)
    y0 = al.target[:, :init_steps].reshape(len(al.ids), -1)
    kept = (p0 == y0) | (np.isnan(p0) & np.isnan(y0))
    changed = ~kept.all(axis=1)
    k = int(changed.sum())
    diff = np.abs(p0 - y0)
    diff = diff[np.isfinite(diff)]
    detail = {"init_steps": init_steps, "n": len(al.ids), "samples_changed": k, "first": first(al.ids[changed]),
              "max_abs_diff": float(diff.max()) if diff.size else 0.0}
    if k:
        summary = (f"{k} of {len(al.ids)} forecasts changed the first {init_steps} given steps (max |diff| "
                   f"{detail['max_abs_diff']:.3g}; first: {', '.join(first(al.ids[changed], 3))}): the time axis "
                   "may be shifted")
        limitation = f"{k} forecasts do not reproduce their initial window: predictions and targets may be misaligned."
    else:
        summary, limitation = f"the first {init_steps} steps are kept exactly in all {len(al.ids)} forecasts", ""
    return Check("init_window", k == 0, summary, detail, limitation)


def near_perfect_share(al: Aligned, init_steps: Optional[int], tol: float, max_share: float) -> Check:
    """Fail when more than ``max_share`` of the samples have a relative error below ``tol``
    (:func:`~sibscan.audit.metrics.per_sample_error` on the predicted window)."""
    err = per_sample_error(window(al.pred, init_steps), window(al.target, init_steps))
    near = err < tol  # NaN compares False: a broken prediction is not a perfect one
    n, k = len(err), int(near.sum())
    share = k / n
    passed = share <= max_share
    detail = {"share": share, "count": k, "n": n, "tolerance": tol, "max_share": max_share,
              "error": "per-sample ‖ŷ_i − y_i‖_F / ‖y_i‖_F (absolute where ‖y_i‖_F = 0)",
              "median_error": float(np.nanmedian(err)) if np.isfinite(err).any() else None,
              "first": first(al.ids[near])}
    summary = (f"{pct(share)} of samples ({k} of {n}) have a relative error below {tol:g}, "
               f"{'within' if passed else 'above'} the limit {pct(max_share)}")
    limitation = "" if passed else (
        f"{pct(share)} of samples are near-perfect (relative error below {tol:g}): an error distribution this "
        "good suggests leaked targets or test items seen in training.")
    return Check("near_perfect_share", passed, summary, detail, limitation)


def combine_runs(per_run: List[Tuple[str, Check]]) -> Check:
    """One check over several runs: passed when every run passed; ``detail["runs"]`` holds each run's."""
    if len(per_run) == 1:
        return per_run[0][1]
    name = per_run[0][1].name
    failed = [(run, c) for run, c in per_run if not c.passed]
    detail = {"runs": {run: {"passed": c.passed, **c.detail} for run, c in per_run}}
    if failed:
        summary = (f"fails in {len(failed)} of {len(per_run)} runs — "
                   + "; ".join(f"{r}: {c.summary}" for r, c in failed))
        limitation = " ".join(f"{r}: {c.limitation or c.summary}" for r, c in failed)
    else:
        summary = f"all {len(per_run)} runs: {per_run[0][1].summary}" if len(set(c.summary for _, c in per_run)) == 1 \
            else f"passes in all {len(per_run)} runs"
        limitation = ""
    return Check(name, not failed, summary, detail, limitation)
