"""The per-pair scores of a :mod:`benchmarks.quality` run, and its calibration simulated again from them.

A quality run spends minutes verifying candidates; the calibration it simulates (a draw of 60
pairs, oracle labels, :func:`sibscan.calibration.fit.fit`) takes a fraction of a second.  Every run
writes beside ``NAME.json`` the scores the calibration saw (``NAME_pairs.json.gz``: per set the planted
truth, per encoder and mode each test item's best score, its nearest train item and the verified
random pairs), so a change to the calibration can be measured on the same scores without verifying
again::

    python -m benchmarks.quality --calibration-only benchmarks/results/quality_crops_14c_seed2_pairs.json.gz

prints, per set and method, the cutoff, the hard negatives and featureless items above it, and the
recall and precision there, before (as recorded in ``NAME.json``) and now, and writes them to
``NAME_recalibrated.json`` (``--name`` to choose).  Figures quoted in the README still come from full
runs; this is for looking.  With ``--write-back`` it also rewrites ``NAME.json`` where a method's
calibration now refuses a cutoff (its figures at the cutoff become None: :func:`write_back`), the one
change that needs no verification.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

__all__ = ["AT_CUTOFF", "NOT_ASSESSED", "PAIRS_SUFFIX", "POPULATION_KEY", "calibration_only", "flag_counts", "not_assessed",
           "population", "recalibrate_file", "split_pairs", "truth", "write_back"]

#: how a run's side file ends (``NAME`` + this; written compact, gzipped)
PAIRS_SUFFIX = "_pairs.json.gz"
#: where :func:`benchmarks.quality.evaluate` leaves the scores it calibrated on (moved out by :func:`split_pairs`)
POPULATION_KEY = "_population"
#: the figures of an evaluation that exist only at a cutoff (``metrics`` keys; per transform: recall, precision at 1 %)
AT_CUTOFF = ("recall", "precision", "fpr", "fpr_upper95", "precision_at_1pct", "precision_at_1pct_lower95", "flagged")
#: how tables print a figure that was not assessed (None in the results)
NOT_ASSESSED = "not assessed"


def not_assessed(entry: dict) -> dict:
    """``entry`` (an evaluation of :func:`benchmarks.quality.evaluate`) with every figure at the cutoff set
    to None, in place: its calibration gave no cutoff, as a user would get none.  The threshold-free
    figures (AUC, recall at precision 0.95, source among the candidates) stay."""
    entry["hard_negatives_flagged"] = entry["featureless_flagged"] = None
    entry["metrics"].update({k: None for k in AT_CUTOFF})
    for t in (entry.get("per_transform") or {}).values():
        t.update(recall=None, precision_at_1pct=None)
    return entry


def population(score: np.ndarray, nb: np.ndarray, random_scores: np.ndarray) -> dict:
    """What one evaluation calibrated on, as JSON lists; scores to 9 significant digits (a float32's
    precision, which is what the verifiers give: a cutoff, a midpoint between two scores, flags the same)."""
    digits = lambda a: [float(f"{v:.9g}") for v in np.asarray(a, np.float64)]  # noqa: E731
    return {"score": digits(score), "nb": [int(v) for v in nb], "random_scores": digits(random_scores)}


def truth(ps, featureless: np.ndarray) -> dict:
    """What the side file needs to count flagged items again: a planted set's truth and its items' labels."""
    labels = lambda items: None if items.labels is None else [str(v) for v in items.labels]  # noqa: E731
    return {"source": ps.source.tolist(), "hard": ps.hard.tolist(), "featureless": np.asarray(featureless, bool).tolist(),
            "transform": ps.transform.tolist(), "test_ids": [str(v) for v in ps.test.ids],
            "test_labels": labels(ps.test), "train_labels": labels(ps.train)}


def flag_counts(score: np.ndarray, cutoff: float, correct: np.ndarray, planted: np.ndarray, hard: np.ndarray,
                featureless: np.ndarray) -> dict:
    """At ``cutoff``: hard negatives and featureless clean items flagged, recall, precision, items flagged
    (all None when there is no cutoff: not assessed)."""
    if cutoff is None:
        return dict.fromkeys(("hard_negatives_flagged", "featureless_flagged", "recall", "precision", "flagged"))
    flagged = np.asarray(score) >= cutoff
    return {"hard_negatives_flagged": int((flagged & hard).sum()),
            "featureless_flagged": int((flagged & featureless & ~planted).sum()),
            "recall": float((flagged & correct).sum() / max(planted.sum(), 1)),
            "precision": float((flagged & correct).sum() / flagged.sum()) if flagged.any() else None,
            "flagged": int(flagged.sum())}


def split_pairs(results: dict, truth: Dict[str, dict]) -> dict:
    """Move every evaluation's population out of ``results`` (in place) into the side file's form.

    ``truth``: per set name ``{source, hard, featureless, test_labels, train_labels}`` (lists).
    """
    out = {"sets": {}}
    for set_name, entry in results.items():
        methods = {}
        for enc, modes in (entry.get("encoders") or {}).items():
            for mode, r in modes.items():
                if isinstance(r, dict) and POPULATION_KEY in r:
                    methods[f"{enc}|{mode}"] = r.pop(POPULATION_KEY)
        if methods:
            out["sets"][set_name] = {**truth.get(set_name, {}), "methods": methods}
    return out


def _recorded(results: Optional[dict], set_name: str, method: str) -> Optional[dict]:
    if results is None:
        return None
    enc, mode = method.split("|", 1)
    try:
        r = results["sets"][set_name]["encoders"][enc][mode]
    except KeyError:
        return None
    return {"cutoff": r["calibration"]["cutoff"], "hard_negatives_flagged": r["hard_negatives_flagged"],
            "recall": r["metrics"]["recall"]}


def _recorded_path(pairs_path: Path) -> Path:
    """``NAME.json`` beside ``NAME_pairs.json.gz``: the run that wrote the side file."""
    return pairs_path.with_name(pairs_path.name[: -len(PAIRS_SUFFIX)] + ".json")


def calibration_only(pairs_path: Path, n_labels: Optional[int], seed: int, methods: Optional[List[str]] = None) -> dict:
    """Simulate the calibration again on the scores in ``pairs_path`` (see the module docstring).

    The labels drawn are the run's: the side file's ``n_labels``, else (side files written before it
    was recorded) ``NAME.json``'s, else ``n_labels``.
    """
    from benchmarks.quality_metrics import calibrate

    from benchmarks._common import read_results

    pairs_path = Path(pairs_path)
    side = read_results(pairs_path)
    recorded_path = _recorded_path(pairs_path)
    recorded = read_results(recorded_path) if recorded_path.exists() else None
    for source, value in (("side file", side.get("n_labels")), ("NAME.json", (recorded or {}).get("n_labels")),
                          ("the sizes of this run's flags", n_labels)):
        if value is not None:
            n_labels, n_labels_from = int(value), source
            break
    else:
        raise ValueError(f"{pairs_path} records no n_labels and none was given")
    out: Dict[str, dict] = {}
    for set_name, s in side["sets"].items():
        source = np.asarray(s["source"], np.int64)
        planted, hard = source >= 0, np.asarray(s["hard"], bool)
        featureless = np.asarray(s["featureless"], bool)
        for method, p in s["methods"].items():
            if methods and method not in methods:
                continue
            score, nb = np.asarray(p["score"], np.float64), np.asarray(p["nb"], np.int64)
            correct = planted & (nb == source)
            cal = calibrate(score, nb, correct, np.asarray(p["random_scores"], np.float64), n_labels, seed=seed)
            out.setdefault(set_name, {})[method] = {
                "before": _recorded(recorded, set_name, method),
                "now": {"calibration": cal, **flag_counts(score, cal["cutoff"], correct, planted, hard, featureless)}}
    return {"pairs_file": str(pairs_path), "n_labels": n_labels, "n_labels_from": n_labels_from, "seed": seed, "sets": out}


def write_back(pairs_path: Path, out: dict) -> List[str]:
    """Write into the run's ``NAME.json`` what :func:`calibration_only` found for the methods whose
    calibration now gives no cutoff: that calibration, and None for every figure at the cutoff
    (:func:`not_assessed`); the threshold-free figures stay as the run measured them.  Every other
    method must have kept its cutoff and counts (else it needs a full run: refused, nothing written).
    Returns the methods rewritten (``"SET METHOD"``) and records them, with the command, in ``recalibrated``.
    """
    import time

    from benchmarks._common import read_results
    from sibscan.atomic import write_json
    from sibscan.calibration.fit import RULE

    pairs_path = Path(pairs_path)
    recorded_path = _recorded_path(pairs_path)
    if not recorded_path.exists():
        raise SystemExit(f"--write-back needs the run's {recorded_path.name} beside {pairs_path.name}")
    rec = read_results(recorded_path)
    todo, moved = [], []
    for set_name, methods in out["sets"].items():
        for method, r in methods.items():
            b, now = r["before"], r["now"]
            enc, mode = method.split("|", 1)
            if now["calibration"]["cutoff"] is None:
                todo.append((set_name, method, rec["sets"][set_name]["encoders"][enc][mode], now["calibration"]))
            elif (b is None or b["cutoff"] is None or abs(b["cutoff"] - now["calibration"]["cutoff"]) > 1e-6
                  or b["hard_negatives_flagged"] != now["hard_negatives_flagged"]):
                moved.append(f"{set_name} {method}")
    if moved:
        raise SystemExit(f"--write-back: the cutoff or its counts moved for {', '.join(moved)}; their figures need a full run "
                         f"(python -m benchmarks.quality ... --name {recorded_path.stem}); nothing written")
    done = []
    for set_name, method, entry, cal in todo:
        entry["calibration"] = cal
        not_assessed(entry)
        done.append(f"{set_name} {method}")
    if done:
        rec["recalibrated"] = {
            "command": f"python -m benchmarks.quality --calibration-only {pairs_path.as_posix()} --write-back",
            "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "rule": RULE, "methods": done,
            "note": "these methods' calibration gives no cutoff on the run's saved scores (a user gets none): "
                    "their figures at the cutoff are None (not assessed); every other field is as the run wrote it"}
        write_json(recorded_path, rec)
    return done


def recalibrate_file(pairs_path: Path, name: Optional[str], n_labels: int, write: bool = False) -> dict:
    """``--calibration-only``: :func:`calibration_only` with the run's own seed and label count, a table, and
    ``NAME_recalibrated.json`` (or ``name``) in the results folder; ``write``: also :func:`write_back`."""
    from benchmarks._common import print_table, read_results, write_results
    from benchmarks.quality import _finite

    side = read_results(Path(pairs_path))
    out = calibration_only(pairs_path, n_labels, int(side.get("seed", 0)))
    rows = []
    for set_name, methods in out["sets"].items():
        for method, r in methods.items():
            b, n = r["before"] or {}, r["now"]
            rows.append({"set": set_name, "method": method, "cutoff before": b.get("cutoff", ""),
                         "cutoff now": n["calibration"]["cutoff"], "hard before": b.get("hard_negatives_flagged", ""),
                         "hard now": n["hard_negatives_flagged"], "recall before": b.get("recall", ""),
                         "recall now": n["recall"], "status": n["calibration"]["status"]})
    print_table(rows)
    path = write_results(name or Path(pairs_path).name[: -len(PAIRS_SUFFIX)] + "_recalibrated", _finite(out))
    print(f"\nwrote {path} (labels drawn: {out['n_labels']}, from {out['n_labels_from']})")
    if write:
        done = write_back(Path(pairs_path), out)
        print(f"rewrote {_recorded_path(Path(pairs_path)).name}: {len(done)} methods now without a cutoff (not assessed)"
              + "".join(f"\n  {m}" for m in done))
    return out
