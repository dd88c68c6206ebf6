"""What verifying each pair once saves, and how far the two orientations of a pair score apart.

    python -m benchmarks.pair_once                                   # 3,000 train x 600 test, imagecorr
    python -m benchmarks.pair_once --verifier imagefuse              # run imagefuse_3600 of the same file
    python -m benchmarks.pair_once --quick                           # tiny, for the tests

A scan's neighbours table holds a pair twice when (test i, train j) is both a test→train and a
train→test row, or (test i, test j) both i→j and j→i.  The scan verifies each pair once, in its
canonical orientation (:mod:`sibscan.stages.pairverify`).  On :mod:`benchmarks.verify_share`'s case
(:func:`benchmarks.scan_e2e.write_image32_case`) scanned by :func:`sibscan.scan.run_scan`, this
measures from the table it writes:

* the overlap: train→test rows whose pair is a test→train row, test pairs that are rows in both orders;
* the two orientations' scores of those pairs (each verified both ways here): mean, quantiles, max
  of the absolute difference;
* the verifier's wall and CPU time on the table's pairs, every row in its own orientation (the scan
  before one score per pair) against each pair once (the scan now), alternated ``--repeats`` times
  each in this process (verifier calls only: no search, no table).

Results: ``benchmarks/results/pair_once.json`` (``--name``), one run per verifier and size under ``runs``
(key ``VERIFIER_IMAGES``, e.g. ``imagecorr_3600``), each run replacing only its own key
(:func:`benchmarks._common.write_run`).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks._common import keyed_runs, print_table, write_run

_ORDER = (("test", "train"), ("test", "test"), ("train", "test"))


def pair_calls(nb) -> Tuple[List[tuple], List[tuple]]:
    """``(per row, once)``: the verifier calls ``(query split, rows, database split, rows)`` of every
    row in its own orientation, and of each distinct pair once in its canonical one."""
    from sibscan.stages.pairverify import canonical_pairs

    per_row, once, seen = [], [], {}
    for qs, ns in _ORDER:
        m = nb.mask(qs, ns)
        qi, ni = nb["query_index"][m], nb["neighbour_index"][m]
        per_row.append((qs, qi, ns, ni))
        cq, ci, cd, di = canonical_pairs(qs, qi, ns, ni)
        held = seen.setdefault((cq, cd), set())
        new = sorted(set(zip(ci.tolist(), di.tolist())) - held)
        held.update(new)
        pairs = np.array(new, np.int64).reshape(-1, 2)
        once.append((cq, pairs[:, 0], cd, pairs[:, 1]))
    return per_row, once


def both_ways(nb) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    """The pairs a table holds in both orientations: ``{"cross": (test rows, train rows), "test": (lower
    test rows, higher test rows)}``."""
    n_train = int(max(nb["query_index"].max(initial=0), nb["neighbour_index"].max(initial=0))) + 1
    fwd, rev = nb.mask("test", "train"), nb.mask("train", "test")
    k_fwd = nb["query_index"][fwd] * n_train + nb["neighbour_index"][fwd]
    k_rev = nb["neighbour_index"][rev] * n_train + nb["query_index"][rev]
    cross = np.intersect1d(k_fwd, k_rev)
    tt = nb.mask("test", "test")
    a, b = nb["query_index"][tt], nb["neighbour_index"][tt]
    k = a * n_train + b
    twice = np.intersect1d(k, b * n_train + a)
    twice = twice[twice // n_train < twice % n_train]  # each unordered pair once
    return {"cross": (cross // n_train, cross % n_train), "test": (twice // n_train, twice % n_train)}


def _gaps(verifier, splits, pairs: Dict[str, Tuple[np.ndarray, np.ndarray]]) -> Dict[str, dict]:
    """|score one way - score the other way| of each pair held both ways, summarised."""
    out = {}
    for kind, (a, b) in pairs.items():
        other = "train" if kind == "cross" else "test"
        one = np.asarray(verifier.verify(splits["test"], a, splits[other], b).scores, np.float64)
        two = np.asarray(verifier.verify(splits[other], b, splits["test"], a).scores, np.float64)
        gap = np.abs(one - two)
        gap = gap[np.isfinite(gap)]
        out[kind] = {"pairs": int(len(a)), "scored": int(len(gap))}
        if len(gap):
            out[kind].update(mean=float(gap.mean()), median=float(np.median(gap)), q90=float(np.quantile(gap, 0.9)),
                             max=float(gap.max()), over_0_01=int((gap > 0.01).sum()), over_0_05=int((gap > 0.05).sum()))
    return out


def _timed(verifier, splits, calls) -> Dict[str, float]:
    load, wall, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
    for qs, qi, ns, ni in calls:
        if len(qi):
            verifier.verify(splits[qs], qi, splits[ns], ni)
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "load": load}


def main(argv: Optional[Sequence[str]] = None) -> dict:
    from benchmarks.scan_e2e import write_image32_case
    from sibscan.config import ScanConfig
    from sibscan.scan import run_scan
    from sibscan.store.scandir import ScanDir
    from sibscan.verify import build_verifier

    ap = argparse.ArgumentParser(prog="python -m benchmarks.pair_once", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--images", type=int, default=None, help="images in all, five sixths "
                                                             "train (default 3600; --quick 60)")
    ap.add_argument("--verifier", default="imagecorr")
    ap.add_argument("--repeats", type=int, default=2, help="timed runs of each way, alternated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="pair_once", help="results file stem (benchmarks/results/NAME.json)")
    args = ap.parse_args(argv)
    n_images = args.images if args.images is not None else (60 if args.quick else 3600)
    if n_images < 12:
        ap.error(f"--images {n_images}: give at least 12 images")
    name, key = args.name + ("_quick" if args.quick else ""), f"{args.verifier}_{n_images}"
    keyed_runs(name)  # a file of another form is refused before the scan
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sibscan-pair-once-") as tmp:
        case = write_image32_case(Path(tmp) / "data", n_images, seed=args.seed)
        cfg = ScanConfig(out=str(Path(tmp) / "scan"), device="cpu", progress=False, train=case["train"],
                         test=case["test"], verifier=args.verifier, verified_baseline_pairs=200, baseline_pairs=5000)
        print(f"scanning {case['n_train']} train, {case['n_test']} test with {args.verifier} ...", flush=True)
        manifest = run_scan(cfg).manifest
        sd = ScanDir(cfg.output.out)
        nb, splits = sd.neighbours(), {s: sd.items(s) for s in ("train", "test")}
        verifier = build_verifier(cfg.verification, "image", cfg.encoding.device, cfg.output.progress)
        per_row, once = pair_calls(nb)
        rows = {f"{q}>{n}": int(nb.mask(q, n).sum()) for q, n in _ORDER}
        held = both_ways(nb)
        gaps = _gaps(verifier, splits, held)
        n_train, n_test = len(splits["train"]), len(splits["test"])
        # every image through the verifier once before the clock (a verifier may keep decoded images)
        _timed(verifier, splits, [("test", np.arange(max(n_train, n_test)) % n_test, "train",
                                   np.arange(max(n_train, n_test)) % n_train)])
        timings: Dict[str, List[dict]] = {"per_row": [], "once": []}
        for r in range(max(1, args.repeats)):
            ways = (("per_row", per_row), ("once", once))
            for way, calls in (ways if r % 2 == 0 else ways[::-1]):
                timings[way].append(_timed(verifier, splits, calls))
    n_per_row, n_once = sum(len(c[1]) for c in per_row), sum(len(c[1]) for c in once)
    mean = {w: float(np.mean([t["cpu"] for t in ts])) for w, ts in timings.items()}
    payload = {"quick": args.quick, "seed": args.seed, "images": n_images, "verifier": manifest["verifier"]["identity"],
               "rows": rows, "train_test_rows_that_are_test_train_rows": int(len(held["cross"][0])),
               "test_pairs_in_both_orders": int(len(held["test"][0])), "pairs_per_row": n_per_row, "pairs_once": n_once,
               "scan_pairs_verified": manifest.get("pairs_verified"), "orientation_gap": gaps, "timings": timings,
               "cpu_ratio_once_over_per_row": mean["once"] / mean["per_row"] if mean["per_row"] else None,
               "seconds": time.perf_counter() - t0,
               "load": "see each timing's load (load average at its start); other jobs may share the machine"}
    print_table([{"verifier": args.verifier, "rows": sum(rows.values()), "train>test also test>train":
                  payload["train_test_rows_that_are_test_train_rows"], "test pairs both orders":
                  payload["test_pairs_in_both_orders"], "pairs once": n_once,
                  "mean |gap| cross": gaps["cross"].get("mean", "-"), "max |gap| cross": gaps["cross"].get("max", "-"),
                  "CPU s per row": mean["per_row"], "CPU s once": mean["once"]}])
    path = write_run(name, key, payload)
    print(f"wrote {path}, run {key}")
    return payload


if __name__ == "__main__":
    main()
