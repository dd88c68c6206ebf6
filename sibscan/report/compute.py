"""Build the report dict (the versioned JSON; see docs/report-schema.md) from a finished scan.

Definitions used throughout (per test item, against the training set):

* **exact twin** — its fingerprint equals a train item's fingerprint (or a neighbours row in that
  direction carries ``exact``);
* **near sibling** — not an exact twin, and one of its pairs with train is a sibling by
  :func:`sibscan.verdict.pairdecision.pair_is_sibling`: labelled "same" by hand, or unlabelled with a deciding
  ``score`` at or above the cutoff (a pair labelled "different" never is);
* **sibling** — exact twin or near sibling.  The headline sibling rate counts these.

Every number is recomputable from the scan directory: the items' fingerprints, labels and groups,
the neighbours table's ``score`` column, the calibration's ``labels.jsonl`` and baseline.json.
"""
from __future__ import annotations

import logging
import time
import warnings
from typing import Callable, Optional, Union

import numpy as np

from ..errors import InputError, SibscanError
from ..groups import group_table
from ..store.scandir import ScanDir
from ..verdict import Verdict
from .audits import audit_sections
from .honest import SECTION, evaluation_section
from .items import verdict_items
from .sections import histogram, label_conflicts, pair_records, sweep
from ..stats import finite_or_none, rate_record, wilson_interval
from .. import predictions as pred_mod

__all__ = ["build_report", "SCHEMA_VERSION"]

#: bump on any incompatible change of the JSON layout (docs/report-schema.md)
SCHEMA_VERSION = 3

log = logging.getLogger("sibscan.report")

CorrectArg = Union[None, np.ndarray, Callable]


def _classify(flagged: np.ndarray, exact: np.ndarray, cutoff: Optional[float]):
    """Exact twins, near siblings and either among ``flagged`` at ``cutoff``; without a cutoff near siblings
    were not assessed: ``near`` and ``any`` are ``{count: null, n, rate: null, ci: null}``."""
    if cutoff is None:
        none = {"count": None, "n": int(len(flagged)), "rate": None, "ci": None}
        return {"exact": rate_record(exact), "near": dict(none), "any": dict(none)}
    return {"exact": rate_record(exact), "near": rate_record(flagged & ~exact), "any": rate_record(flagged)}


def _correct(test, predictions, correct) -> Optional[np.ndarray]:
    if predictions is not None and correct is not None:
        raise SibscanError("give predictions or correct, not both")
    if predictions is not None:
        preds, truth = pred_mod.read_predictions_and_truth(predictions, test)
        return np.asarray(pred_mod.correct_mask(preds, truth), bool)
    if correct is None:
        return None
    arr = correct(test) if callable(correct) else correct
    arr = np.asarray(arr)
    if arr.shape != (len(test),):
        raise InputError(f"correct has shape {arr.shape}; expected ({len(test)},), one entry per test item in scan "
                         "order", path="correct")
    if arr.dtype != bool:
        if not np.isin(arr, [0, 1]).all():
            raise InputError("correct must be booleans (or 0/1) per test item", path="correct")
        arr = arr.astype(bool)
    return arr


def _accuracy(correct: np.ndarray, mask: np.ndarray) -> dict:
    return pred_mod.accuracy_split(correct, mask)


def _manifest_summary(m: dict, cutoff: dict) -> dict:
    """The scan manifest's facts; its ``cutoff`` is the one this report counts at (the one the scan
    recorded, often none before calibrating, is kept as ``cutoff_at_scan``)."""
    keys = ("sibscan_version", "created", "status", "modality", "inputs", "dataset_fingerprint", "encoder",
            "verifier", "parameters", "timings")
    out = {k: m.get(k) for k in keys if k in m}
    out["cutoff"] = {k: cutoff.get(k) for k in ("value", "source", "interval", "calibration", "score", "rule")}
    out["cutoff_at_scan"] = (m.get("cutoff") or {}).get("value")
    out["skipped"] = {s: len(v) for s, v in (m.get("skipped") or {}).items()}
    return out


def build_report(scan_dir, *, predictions=None, correct: CorrectArg = None, cutoff: Optional[float] = None,
                 calibration=None, force: bool = False, n_pairs: int = 20, n_near: int = 10,
                 n_sweep: int = 101, max_conflicts: int = 50) -> dict:
    """The report of a finished scan as a JSON-ready dict (schema in docs/report-schema.md).

    Parameters
    ----------
    scan_dir : str, Path or Verdict
        A scan directory written by ``sibscan scan``, or its :class:`~sibscan.verdict.Verdict` already
        opened (then ``cutoff``, ``calibration`` and ``force`` are the verdict's and may not be given).
    predictions : str or Path, or array-like of shape (n_test,), optional
        CSV/JSONL with ``id, prediction[, label]`` per test item (read by sibscan.predictions), or
        the predictions in the scan's test order, scored against the test labels.
    correct : ndarray of shape (n_test,) bool, or callable(test Items) -> that, optional
        Per-row correctness (accuracy, exact match, pass@1) in the scan's test order.
    cutoff : float, optional
        Override the cutoff on the deciding score.
    calibration : str or Path, optional
        A calibration directory; refused for another dataset/encoder unless ``force``.
    n_pairs, n_near : int
        Closest pairs listed; pairs listed just above and just below the cutoff.
    n_sweep : int
        Cutoffs in the sweep.
    max_conflicts : int
        Conflicting-label groups listed (all are counted).
    """
    if isinstance(scan_dir, Verdict):
        if cutoff is not None or calibration is not None or force:
            raise TypeError("build_report: a Verdict carries its cutoff; give cutoff=, calibration=, force= to "
                            "Verdict.open")
        verdict = scan_dir
    else:
        verdict = None
    scan = verdict.scan if verdict is not None else ScanDir(scan_dir)
    manifest = scan.manifest()
    if manifest.get("status", "complete") != "complete":
        warnings.warn(f"the scan in {scan.path} is not complete (status {manifest.get('status')!r}); the report covers "
                      "what it holds")
    if verdict is None:  # the cutoff, and the hand labels behind it that decide the pairs they answer
        verdict = Verdict.open(scan.path, cutoff=cutoff, calibration=calibration, force=force)
    at, labels = verdict.cutoff, verdict.labels
    rec = at.record()
    c = at.value
    train, test = verdict.train[0], verdict.test[0]
    n_train, n_test = len(train), len(test)

    # test -> train: the scores the headline is computed from
    ts, flags = verdict.scores, verdict.flags
    s_tt, ex_tt, top_tt = ts.score, ts.exact, ts.top
    tt, sib = _classify(flags.flagged, ex_tt, c), flags.flagged
    tt["decided_by_labels"] = flags.decided()
    per_item = verdict_items(verdict)
    # train -> test and within test: the verdict's flags in those directions
    rt_dir, ww_dir = verdict.train_to_test, verdict.within_test
    rt, has_rt = _classify(rt_dir.flagged, rt_dir.exact, c), rt_dir.available
    ww, has_ww = _classify(ww_dir.flagged, ww_dir.exact, c), ww_dir.available
    ww["n_exact_groups"] = ww_dir.n_exact_groups

    def rate_at(x):
        return float(flags.flagged_at(x).mean()) if n_test else None

    interval_rates = None
    if rec["interval"] and None not in rec["interval"]:
        lo, hi = rec["interval"]
        interval_rates = [rate_at(hi), rate_at(lo)]
    baseline = verdict.baseline
    # the expected chance siblings: the headline's figure, stated again under test_to_train
    head = verdict.headline
    tt["at_interval"] = interval_rates
    # the headline's interval, where there is one (kept under its old name for readers of schema 2)
    tt["calibration_estimate"] = [head["lo"], head["estimate"], head["hi"]] if verdict.estimated else None
    tt["expected_chance_siblings"] = head["expected_chance_siblings"]
    # the words every output prints about chance siblings (sibscan.verdict.chance)
    chance = {k: v for k, v in verdict.chance.items() if k != "warning"}

    # per class
    per_class = []
    # copy groups over both splits, at the cutoff this report counts at
    groups = group_table(verdict, sources=False)
    conflicts = label_conflicts(groups, max_groups=max_conflicts)
    if test.labels is not None:
        classes, code = np.unique(test.labels, return_inverse=True)
        code = code.ravel()
        k = len(classes)
        n_c = np.bincount(code, minlength=k)
        ex_c = np.bincount(code, weights=ex_tt, minlength=k).astype(int)
        any_c = np.bincount(code, weights=sib, minlength=k).astype(int)
        for j, lab in enumerate(classes):
            row = {"label": str(lab), "n_test": int(n_c[j]), "exact": int(ex_c[j]),
                   "near": int(any_c[j] - ex_c[j]), "siblings": int(any_c[j]),
                   "rate": any_c[j] / n_c[j], "ci": wilson_interval(int(any_c[j]), int(n_c[j])),
                   "conflict_groups": conflicts["per_class"].get(str(lab), 0)}
            if c is None:  # near siblings not assessed: no rate to state
                row.update(near=None, siblings=None, rate=None, ci=None)
            per_class.append(row)

    # shared sources
    shared = {"available": False}
    shared_mask = None
    if test.groups is not None and train.groups is not None:
        shared_mask = np.isin(test.groups, train.groups[train.groups != ""]) & (test.groups != "")
        vals, cnt = np.unique(test.groups[shared_mask], return_counts=True)
        order = np.argsort(-cnt, kind="stable")[:20]
        tr_vals, tr_cnt = np.unique(train.groups, return_counts=True)
        tr_count = dict(zip(tr_vals.tolist(), tr_cnt.tolist()))
        shared = {"available": True, **rate_record(shared_mask), "n_sources_shared": int(len(vals)),
                  "top": [{"source": str(vals[i]), "n_test": int(cnt[i]), "n_train": int(tr_count[vals[i]])}
                          for i in order]}

    # accuracy
    corr = _correct(test, predictions, correct)
    accuracy = None
    if corr is not None:
        accuracy = {"siblings": _accuracy(corr, sib) if c is not None else None, "exact_twins": _accuracy(corr, ex_tt),
                    "shared_sources": _accuracy(corr, shared_mask) if shared_mask is not None else None}

    # sweep over the whole range of scores (and the cutoff interval)
    finite = s_tt[np.isfinite(s_tt)]
    lows = [v for v in [c, *(rec["interval"] or [])] if v is not None]
    lo = min(lows + ([float(finite.min())] if finite.size else [0.0]))
    cutoffs = np.linspace(max(-1.0, np.floor(lo * 100) / 100), 1.0, n_sweep)
    # at every cutoff what the labels leave: an item labelled "same" counts at each, one labelled
    # "different" by its other pairs (Flags.score_left)
    sw = sweep(flags.score_left, ex_tt | flags.same, cutoffs, corr)

    # pairs: the closest near pairs first, exact twins after them (they need no eye, and an exact twin
    # scores 1: listed first, they filled the closest pairs and pushed out the near pairs worth looking at)
    order = np.lexsort((-np.nan_to_num(top_tt["score"].astype(np.float64), nan=-np.inf),
                        np.asarray(top_tt["exact"], bool)))
    closest = pair_records(order[:n_pairs], top_tt, test, train, labels)
    near_cut = None
    if c is not None:
        # the pairs whose flag the cutoff decides: exact twins are siblings at every cutoff (an exact text twin
        # whose boilerplate is masked can verify below a re-cased copy, and filled 'just above' on the text demo)
        sc = np.where(np.asarray(top_tt["exact"], bool), np.nan, top_tt["score"])
        above = np.flatnonzero(sc >= c)
        above = above[np.argsort(sc[above], kind="stable")][:n_near]
        below = np.flatnonzero(sc < c)
        below = below[np.argsort(-sc[below], kind="stable")][:n_near]
        near_cut = {"above": pair_records(above, top_tt, test, train, labels),
                    "below": pair_records(below, top_tt, test, train, labels)}

    report = {
        "schema_version": SCHEMA_VERSION,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "scan": {"path": str(scan.path), "modality": test.modality, "n_train": n_train, "n_test": n_test,
                 "dataset_fingerprint": manifest.get("dataset_fingerprint"),
                 "encoder": manifest.get("encoder"), "verifier": manifest.get("verifier"),
                 "has_labels": test.labels is not None, "has_sources": shared["available"]},
        "headline": head,
        "cutoff": rec,
        "baseline_warning": verdict.chance["warning"],
        "chance": chance,
        "sibling_rate": {
            "test_to_train": tt,
            "train_to_test": {**rt, "available": has_rt},
            "within_test": {**ww, "available": has_ww},
        },
        "per_class": per_class,
        "label_conflicts": conflicts,
        "shared_sources": shared,
        "accuracy": accuracy,
        "sweep": sw,
        "histogram": histogram(s_tt, baseline, cutoff=c),
        "closest_pairs": closest,
        "flagged": per_item.flagged(),
        "near_cutoff": near_cut,
        "manifest": _manifest_summary(manifest, rec),
        "audits": audit_sections(scan.path),
    }
    evaluation = evaluation_section(scan.path, manifest.get("dataset_fingerprint"), report)
    if evaluation is not None:  # rendered here: its sibling rate is this report's own
        report["audits"] = dict(sorted({**report["audits"], SECTION: evaluation}.items()))
    return _clean(report)


def _clean(obj):
    """JSON-ready: numpy scalars to Python, NaN/inf to None, tuples to lists."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return finite_or_none(obj)
    return obj
