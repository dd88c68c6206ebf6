"""How well the labels-to-width forecast predicts: forecast at 60 answers, then label on and compare.

    python -m benchmarks.width_forecast              # the default run
    python -m benchmarks.width_forecast --quick      # tiny, for the tests

On the simulated data sets of :mod:`benchmarks.calibration_coverage` (scores of real items, a labeller
wrong 3 % of the time, the adaptive draw of ``sibscan calibrate``), the interval's width after 100 and
200 answers is forecast from the first 60 (:func:`sibscan.calibration.forecast.forecast_width`) and then
measured by labelling on.  Reported per kind and prevalence: the median ratio forecast / measured and
the share of forecasts within 25 % of the measured width.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import print_table, write_results
from benchmarks.calibration_coverage import KINDS, PREVALENCES, _score_sets, label_adaptively, make_dataset

DEFAULT = {"datasets": 6, "n": 2000, "start": 60, "ahead": (100, 200)}
QUICK = {"datasets": 1, "n": 300, "start": 30, "ahead": (60,)}


def _one(sets, kind: str, prev: float, d: int, n: int, start: int, ahead) -> dict:
    from sibscan.calibration.fit import find_cutoff, fit_curve
    from sibscan.calibration.forecast import forecast_width
    from sibscan.calibration.sampling import make_draw

    from benchmarks.calibration_coverage import SEED_PAIRS, _population

    rng = np.random.default_rng([7, n, int(prev * 1e4), d])
    ds = make_dataset(sets, kind, d, n, prev, rng)
    res = label_adaptively(ds, (start, *ahead), 10, rng, seed=d, keep_rows=True)
    rows = res[start]["rows"]
    answer = res[start]["answers"]
    cutoff = find_cutoff(fit_curve(ds["score"][rows], answer))
    pop = _population(ds["score"])  # the population and draw calibrate would have (rows index both)
    draw = make_draw(pop, ds["lo"], SEED_PAIRS, seed=d)
    fc = forecast_width(pop, draw, rows, answer, ds["score"], np.zeros(n, bool), more=[a - start for a in ahead],
                        cutoff=cutoff)
    out = {"kind": kind, "prevalence": prev, "set": ds["set"], "width_now": res[start]["hi"] - res[start]["lo"]}
    for f, a in zip(fc, ahead):
        out[f"forecast_{a}"] = f["width"]
        out[f"measured_{a}"] = res[a]["hi"] - res[a]["lo"]
    return out


def run(datasets: int, n: int, start: int, ahead, kinds=KINDS, prevalences=PREVALENCES) -> dict:
    sets = _score_sets()
    t0 = time.perf_counter()
    runs = [_one(sets, k, p, d, n, start, ahead) for k in kinds for p in prevalences for d in range(datasets)]
    cells = []
    for k in kinds:
        for p in prevalences:
            rs = [r for r in runs if r["kind"] == k and r["prevalence"] == p]
            row = {"kind": k, "prevalence": p, "datasets": len(rs),
                   f"width {start}": float(np.mean([r["width_now"] for r in rs]))}
            for a in ahead:
                ratio = np.array([r[f"forecast_{a}"] / r[f"measured_{a}"] for r in rs])
                row[f"measured {a}"] = float(np.mean([r[f"measured_{a}"] for r in rs]))
                row[f"forecast {a}"] = float(np.mean([r[f"forecast_{a}"] for r in rs]))
                row[f"ratio {a} (median)"] = float(np.median(ratio))
                row[f"within 25% {a}"] = float(np.mean(np.abs(ratio - 1) <= 0.25))
            cells.append(row)
    every = {a: np.array([r[f"forecast_{a}"] / r[f"measured_{a}"] for r in runs]) for a in ahead}
    summary = {"cells": cells,
               "ratio_median": {str(a): float(np.median(v)) for a, v in every.items()},
               "within_25pct": {str(a): float(np.mean(np.abs(v - 1) <= 0.25)) for a, v in every.items()}}
    return {"config": {"datasets": datasets, "n": n, "start": start, "ahead": list(ahead)},
            "seconds": time.perf_counter() - t0, "summary": summary, "runs": runs}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.width_forecast", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one tiny data set per cell (for the tests)")
    ap.add_argument("--datasets", type=int, default=None, help="data sets per kind and prevalence "
                                                               f"(default {DEFAULT['datasets']})")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else DEFAULT)
    if args.datasets is not None:
        cfg["datasets"] = args.datasets
    res = run(**cfg)
    print_table(res["summary"]["cells"])
    print("forecast / measured, median:", res["summary"]["ratio_median"], " within 25 %:",
          res["summary"]["within_25pct"])
    name = "width_forecast_quick" if args.quick else "width_forecast"
    path = write_results(name, {"quick": args.quick, **res})
    print(f"written: {path} ({res['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
