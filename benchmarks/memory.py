"""Peak memory of ``sibscan twins`` on large CSV files.

Each case runs ``python -m sibscan twins TRAIN.csv TEST.csv`` in a fresh subprocess and records its
peak resident memory (``ru_maxrss`` of the child).  TRAIN is a seeded CSV of 32 float columns written
with 6 decimals, sized to ``--sizes`` MB; TEST holds 1,000 of its rows (so there are twins to find).
The fixed cost (interpreter, numpy, the CLI's imports) is the same command on a 1,000-row TRAIN,
measured in the same run; ``per_MB`` is (peak - fixed) / file size.

Not measured here (issue 13 asks for it too): ``scan --encoder raw`` at 50k-800k train rows.

Run ``python -m benchmarks.memory [--quick] [--sizes 100,400]``; results go to
``benchmarks/results/memory.json``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

RESULTS_NAME = "memory"
COLUMNS = 32


def write_csv(path: Path, megabytes: float, seed: int = 0) -> int:
    """A CSV of about ``megabytes`` MB (header ``c0..c31``); returns its row count."""
    rng = np.random.default_rng(seed)
    block = rng.normal(size=(2_000, COLUMNS))
    line = len(",".join(f"{v:.6f}" for v in block[0])) + 1
    n = max(1_000, int(megabytes * 1e6 / line))
    with open(path, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(COLUMNS)) + "\n")
        done = 0
        while done < n:
            m = min(len(block), n - done)
            rows = block[:m] + done  # distinct rows per block
            fh.write("\n".join(",".join(f"{v:.6f}" for v in r) for r in rows) + "\n")
            done += m
    return n


def peak_rss_mb(args: List[str]) -> float:
    """Peak RSS (MB) of ``python -m sibscan ARGS`` run as a child of a fresh helper process."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "sibscan", *args],
                         capture_output=True, text=True, check=True).stdout.split()
    if out[1] not in ("0", "1"):  # twins exits 1 when it finds twins
        raise RuntimeError(f"sibscan {' '.join(args)} exited {out[1]}")
    return int(out[0]) / 1024  # KiB on Linux


def main(argv=None) -> Dict[str, object]:
    from benchmarks._common import print_table, write_results

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 and 20 MB (seconds)")
    ap.add_argument("--sizes", default="100,400", help="train CSV sizes in MB, comma-separated")
    args = ap.parse_args(argv)
    sizes = [5.0, 20.0] if args.quick else [float(s) for s in args.sizes.split(",")]
    rows: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small = tmp / "small.csv"
        write_csv(small, 0.0)
        test = tmp / "test.csv"
        small.replace(test)  # 1,000 rows: the first 1,000 of every train file
        write_csv(small, 0.0)
        fixed = peak_rss_mb(["twins", str(small), str(test)])
        for mb in sizes:
            train = tmp / f"train_{mb:g}.csv"
            n = write_csv(train, mb)
            size = train.stat().st_size / 1e6
            t0 = time.perf_counter()
            peak = peak_rss_mb(["twins", str(train), str(test)])
            rows.append({"case": f"twins, {size:.0f} MB CSV", "train_rows": n, "file_MB": size, "peak_MB": peak,
                         "fixed_MB": fixed, "per_MB": (peak - fixed) / size, "seconds": time.perf_counter() - t0})
            train.unlink()
    print_table(rows)
    growth = rows[-1]["per_MB"] / rows[0]["per_MB"] if rows[0]["per_MB"] > 0 else None
    print(f"memory per MB of CSV beyond the fixed cost, largest / smallest case: {growth:.2f}" if growth else "")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    payload = {"quick": args.quick, "cases": rows, "per_MB_growth_largest_over_smallest": growth,
               "load_average_1min_at_end": load}
    path = write_results(RESULTS_NAME, payload)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
