"""Metrics named by their formula, not by a loose name.

"nRMSE" means three different things in published tables, and they give different numbers on the
same predictions; every one is computed and printed with its identity, so a comparison says which
one it matches. For predictions ``ŷ`` and targets ``y`` of shape (n, T, *S) — n samples, T time
steps, S spatial/field axes (a 1-D array is (n,) scalars, a 2-D one (n, T) series):

================  ===========================================================================
``nrmse_step``    mean over samples i and steps t of ‖ŷ_it − y_it‖₂ / ‖y_it‖₂: the spatial RMSE of each
                  step normalised by that step's RMS, then averaged (PDE-benchmark style)
``nrmse_sample``  mean over samples i of ‖ŷ_i − y_i‖_F / ‖y_i‖_F (the per-sample relative L2 error)
``nrmse_global``  sqrt(Σ (ŷ − y)²) / sqrt(Σ y²): the global RMSE over the global RMS
``rmse``          sqrt(mean over every element of (ŷ − y)²)
``mae``           mean over every element of |ŷ − y|
``accuracy``      mean over samples of [ŷ_i = y_i], with a 95 % Wilson interval
``macro_f1``      (1/C) Σ_c 2·TP_c / (2·TP_c + FP_c + FN_c), C = classes in targets ∪ predictions
================  ===========================================================================

A normalised error whose denominator is zero somewhere is *undefined* (reported as None with the
count), never computed over a quietly smaller set. Forecasts with an initial window given
(``init_steps``) are scored on the predicted steps only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from ..predictions import correct_mask
from ..stats import wilson_interval

__all__ = ["Metric", "METRICS", "TASK_METRICS", "compute_metrics", "window", "per_sample_error",
           "nrmse_step", "nrmse_sample", "nrmse_global", "rmse", "mae", "accuracy", "macro_f1"]


#: which samples a classification metric is over: the one statement of it (audit.md, README)
SCORED_SAMPLES = ("over the test items with a prediction: a missing one (or a failed status) is left out of n and "
                  "counted by the denominator check, as there is no answer to score; a NaN or empty prediction is "
                  "an answer, and a wrong one (the nan_free check names it)")


@dataclass(frozen=True)
class Metric:
    """A metric's identity: ``id`` (the key everywhere), a human name, the formula, and (where it is
    a choice) which samples it is over."""

    id: str
    name: str
    formula: str
    samples: str = ""


METRICS: Dict[str, Metric] = {m.id: m for m in (
    Metric("accuracy", "accuracy", "mean_i [ŷ_i = y_i]", SCORED_SAMPLES),
    Metric("macro_f1", "macro-F1", "(1/C) Σ_c 2·TP_c / (2·TP_c + FP_c + FN_c), C = classes in targets ∪ predictions",
           SCORED_SAMPLES),
    Metric("rmse", "RMSE", "sqrt(mean over all elements of (ŷ − y)²)"),
    Metric("mae", "MAE", "mean over all elements of |ŷ − y|"),
    Metric("nrmse_step", "nRMSE per step", "mean_{i,t} ‖ŷ_it − y_it‖₂ / ‖y_it‖₂ (spatial RMSE per sample and "
                                           "step over that step's RMS, averaged)"),
    Metric("nrmse_sample", "nRMSE per sample", "mean_i ‖ŷ_i − y_i‖_F / ‖y_i‖_F (per-sample Frobenius ratio)"),
    Metric("nrmse_global", "nRMSE global", "sqrt(Σ (ŷ − y)²) / sqrt(Σ y²) (global RMSE over global RMS)"),
)}
TASK_METRICS = {
    "classification": ("accuracy", "macro_f1"),
    "regression": ("rmse", "mae", "nrmse_step", "nrmse_sample", "nrmse_global"),
    "forecast": ("rmse", "mae", "nrmse_step", "nrmse_sample", "nrmse_global"),
}


def window(arr: np.ndarray, init_steps: Optional[int]) -> np.ndarray:
    """The predicted steps of ``arr`` (n, T, ...): ``arr[:, init_steps:]``; all of it without an initial window."""
    return arr if not init_steps else arr[:, init_steps:]


def _steps(a: np.ndarray) -> np.ndarray:
    """View as (n, T, s): scalars are one step of one point, series (n, T) one point per step."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        return a[:, None, None]
    return a.reshape(a.shape[0], a.shape[1], -1)


def _ratio(num: np.ndarray, den: np.ndarray, what: str):
    zero = den == 0
    if zero.any():
        return None, f"undefined: {int(zero.sum())} of {zero.size} {what} have an all-zero target"
    return float(np.mean(num / den)), None


def nrmse_step(pred: np.ndarray, target: np.ndarray):
    """``nrmse_step`` (module docstring); returns ``(value or None, note or None)``."""
    p, y = _steps(pred), _steps(target)
    return _ratio(np.sqrt(np.mean((p - y) ** 2, axis=2)), np.sqrt(np.mean(y ** 2, axis=2)), "(sample, step) pairs")


def nrmse_sample(pred: np.ndarray, target: np.ndarray):
    """``nrmse_sample`` (module docstring); returns ``(value or None, note or None)``."""
    p = np.asarray(pred, np.float64).reshape(len(pred), -1)
    y = np.asarray(target, np.float64).reshape(len(target), -1)
    return _ratio(np.linalg.norm(p - y, axis=1), np.linalg.norm(y, axis=1), "samples")


def nrmse_global(pred: np.ndarray, target: np.ndarray):
    """``nrmse_global`` (module docstring); returns ``(value or None, note or None)``."""
    p, y = np.asarray(pred, np.float64), np.asarray(target, np.float64)
    den = np.sqrt(np.sum(y ** 2))
    if den == 0:
        return None, "undefined: every target value is zero"
    return float(np.sqrt(np.sum((p - y) ** 2)) / den), None


def rmse(pred: np.ndarray, target: np.ndarray):
    return float(np.sqrt(np.mean((np.asarray(pred, np.float64) - target) ** 2))), None


def mae(pred: np.ndarray, target: np.ndarray):
    return float(np.mean(np.abs(np.asarray(pred, np.float64) - target))), None


def accuracy(pred: np.ndarray, target: np.ndarray):
    return float(np.mean(correct_mask(pred, target))), None


def _class_keys(pred: np.ndarray, target: np.ndarray):
    """Class identities compared as :func:`~sibscan.predictions.correct_mask` does (numbers when both sides are)."""
    p = np.char.strip(np.asarray(pred).astype(str))
    y = np.char.strip(np.asarray(target).astype(str))
    try:
        return p.astype(np.float64), y.astype(np.float64)
    except ValueError:
        return p, y


def macro_f1(pred: np.ndarray, target: np.ndarray):
    p, y = _class_keys(pred, target)
    classes, inv = np.unique(np.concatenate([y, p]), return_inverse=True)
    yi, pi = inv[: len(y)], inv[len(y):]
    c = len(classes)
    tp = np.bincount(yi[yi == pi], minlength=c)
    fp = np.bincount(pi, minlength=c) - tp
    fn = np.bincount(yi, minlength=c) - tp
    return float(np.mean(2 * tp / (2 * tp + fp + fn))), None


_FUNCS = {"accuracy": accuracy, "macro_f1": macro_f1, "rmse": rmse, "mae": mae,
          "nrmse_step": nrmse_step, "nrmse_sample": nrmse_sample, "nrmse_global": nrmse_global}


def per_sample_error(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Relative error of each sample, ‖ŷ_i − y_i‖_F / ‖y_i‖_F (absolute where ‖y_i‖_F = 0), shape (n,).

    NaN where the prediction is not finite.
    """
    p = np.asarray(pred, np.float64).reshape(len(pred), -1)
    y = np.asarray(target, np.float64).reshape(len(target), -1)
    num = np.linalg.norm(p - y, axis=1)
    den = np.linalg.norm(y, axis=1)
    return np.divide(num, den, out=num.copy(), where=den > 0)


def _non_finite(p: np.ndarray, y: np.ndarray) -> str:
    """Which side holds NaN/Inf, counted in samples (``"1 of 60 targets hold NaN/Inf"``), or ``""``."""
    n = len(p)
    counts = [(int((~np.isfinite(a.reshape(n, -1))).any(axis=1).sum()), what)
              for a, what in ((p, "predictions"), (y, "targets"))]
    return " and ".join(f"{c} of {n} {what}" for c, what in counts
                        if c) + " hold NaN/Inf" if any(c for c, _ in counts) else ""


def compute_metrics(pred: np.ndarray, target: np.ndarray, task: str, init_steps: Optional[int] = None) -> dict:
    """Every metric of ``task`` on one run.

    Parameters
    ----------
    pred, target : ndarray of shape (n, ...)
        Aligned predictions and targets (float64, or str for class labels).
    task : {"classification", "regression", "forecast"}
    init_steps : int, optional
        Forecasts: leading steps given to the model, left out of every metric.

    Returns
    -------
    dict
        ``{metric_id: {"value": float or None, "n": n, "note": str (only when undefined)}}``;
        ``accuracy`` also has ``"ci"`` (95 % Wilson interval).
    """
    out = {}
    n = len(pred)
    numeric = task != "classification"
    p, y = (window(pred, init_steps), window(target, init_steps)) if numeric else (pred, target)
    not_finite = _non_finite(p, y) if numeric and n else ""
    for mid in TASK_METRICS[task]:
        if n == 0:
            value, note = None, "undefined: no scored samples"
        elif not_finite:
            value, note = None, f"undefined: {not_finite} (see the nan_free check)"
        else:
            value, note = _FUNCS[mid](p, y)
        rec = {"value": value, "n": n}
        if note:
            rec["note"] = note
        if mid == "accuracy" and value is not None:
            rec["ci"] = wilson_interval(int(correct_mask(p, y).sum()), n)
        out[mid] = rec
    return out
