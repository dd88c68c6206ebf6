"""Coverage of the calibrated sibling-rate interval, with an oracle labeller on planted data.

For each seed: a scan with planted siblings (share drawn in 3-15 %) and hard negatives, the default
draw of 60 nearest-neighbour pairs, labelled by an oracle; then whether the 95 % interval of the
design-weighted sibling rate covers the true rate, and whether the fitted cutoff separates the planted
siblings from every other nearest neighbour.  Reference, measured in the same run: a naive 95 %
Wilson interval on the labelled pairs' share of "same", scaled by the share of pairs above the drawn
range (it ignores the sampling design).

    python -m benchmarks.calibration_coverage [--quick] [--seeds 50]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import print_table, write_results
from sibscan.calibration import calibrate
from sibscan.calibration.synthetic import oracle_labels, planted_scan
from sibscan.scandir import ScanDir
from sibscan.stats import wilson_interval


def one(seed: int, root: Path, n_train: int, n_test: int, n_pairs: int) -> dict:
    rate = float(np.random.default_rng(1000 + seed).uniform(0.03, 0.15))
    p = planted_scan(root / f"s{seed}", n_train=n_train, n_test=n_test, rate=rate, seed=seed)
    cal_dir = root / f"c{seed}"
    calibrate(p.path, calibration_dir=cal_dir, ui="none", n_pairs=n_pairs, seed=seed)
    draw = json.loads((cal_dir / "draw.json").read_text())
    pairs = [(d["query_id"], d["neighbour_id"]) for d in draw["pairs"]]
    labels = oracle_labels(p, pairs)
    lab_file = root / f"l{seed}.jsonl"
    with open(lab_file, "w") as fh:
        for (q, t), lab in zip(pairs, labels):
            fh.write(json.dumps({"dataset_fingerprint": draw["dataset_fingerprint"], "encoder_identity": draw["encoder_identity"],
                                 "verifier_identity": None, "query_id": q, "neighbour_id": t, "label": lab}) + "\n")
    cal = calibrate(p.path, calibration_dir=cal_dir, labels=lab_file, ui="none", n_pairs=n_pairs, seed=seed)
    lo, mid, hi = cal.estimates["sibling_rate"]
    top = ScanDir(p.path).neighbours().top1()
    sib = np.array([p.sibling_of.get(q) == t for q, t in zip(top["query_id"], top["neighbour_id"])])
    sep = cal.cutoff is not None and top["score"][sib].min() >= cal.cutoff > top["score"][~sib].max()
    above = (top["score"] >= draw["lo"]).mean()
    k = sum(lab == "same" for lab in labels)
    nlo, nhi = wilson_interval(k, len(labels))  # labels are never empty here
    truth = p.true_rate
    return {"seed": seed, "true": truth, "lo": lo, "mid": mid, "hi": hi, "covered": lo <= truth <= hi,
            "naive_lo": nlo * above, "naive_hi": nhi * above, "naive_covered": nlo * above <= truth <= nhi * above,
            "separates": bool(sep), "status": cal.status, "cutoff": cal.cutoff}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 seeds on small scans (for tests)")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--n-pairs", type=int, default=60)
    args = ap.parse_args(argv)
    seeds = 5 if args.quick else args.seeds
    n_train, n_test = (200, 150) if args.quick else (1000, 500)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one(s, Path(tmp), n_train, n_test, args.n_pairs) for s in range(seeds)]
    elapsed = time.perf_counter() - t0
    cov = float(np.mean([r["covered"] for r in runs]))
    naive = float(np.mean([r["naive_covered"] for r in runs]))
    width = float(np.mean([r["hi"] - r["lo"] for r in runs]))
    naive_width = float(np.mean([r["naive_hi"] - r["naive_lo"] for r in runs]))
    rows = [
        {"interval": "design-weighted (sibscan)", "coverage": cov, "mean_width": width, "coverage_vs_naive": cov / max(naive, 1e-9),
         "cutoff_separates": float(np.mean([r["separates"] for r in runs])),
         "status_ok": float(np.mean([r["status"] == "ok" for r in runs]))},
        {"interval": "naive Wilson (reference)", "coverage": naive, "mean_width": naive_width, "coverage_vs_naive": 1.0,
         "cutoff_separates": "", "status_ok": ""},
    ]
    print(f"{seeds} seeds, n_train {n_train}, n_test {n_test}, {args.n_pairs} labelled pairs each, nominal 95 %, {elapsed:.1f} s")
    print_table(rows)
    path = write_results("calibration_coverage", {"quick": args.quick, "seeds": seeds, "n_train": n_train, "n_test": n_test,
                                                  "n_pairs": args.n_pairs, "seconds": elapsed, "summary": rows, "runs": runs})
    print(f"written: {path}")


if __name__ == "__main__":
    main()
