"""``sibscan twins A.npy B.npy --json`` as a whole process against a pandas hash + isin process.

    python -m benchmarks.twins_process              # 1,000,000 + 1,000,000 rows x 46 float64, 5 rounds
    python -m benchmarks.twins_process --quick      # 2,000 + 2,000 rows, 2 rounds (for the tests)

What a user waits for, start to exit: interpreter start, imports, reading both ``.npy`` files,
hashing, matching and printing.  Each round runs, in a fresh process each and in turns (the first
one moves round by round, so load from other processes falls on every side alike):

* ``sibscan``: the ``sibscan`` console script of this interpreter's environment (``python -m
  sibscan`` where there is none), ``twins TRAIN TEST --json``, its standard output written to a file
  (the 1M case prints ~7 MB of JSON: the twin row indices of both directions);
* ``pandas``: :data:`PANDAS_REF` — both arrays loaded, rounded to 6 decimals (sibscan's default,
  so both answer the same question), ``pandas.util.hash_pandas_object`` per row, ``isin`` in both
  directions, the two counts printed;
* ``pandas, no rounding``: the same on the raw values, the fastest pandas reference (it answers a
  slightly different question: equal bits, not equal at 6 decimals).

Data: TRAIN is standard-normal rows; TEST likewise, except its last 20 % are copies of train rows
drawn with replacement (1M case: 200,000 test twins, ~181,000 distinct train rows, the 581,000
row indices of the issue-31 report).  Both sides' counts are checked to agree.

Writes ``benchmarks/results/twins_process.json`` with every run's wall and CPU seconds, the medians,
the speedups (pandas median / sibscan median, wall) and the load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from benchmarks import _common

RESULTS_NAME = "twins_process"
DECIMALS = 6

#: the pandas reference process: argv = TRAIN.npy TEST.npy DECIMALS (-1: no rounding)
PANDAS_REF = """\
import sys
import numpy as np
import pandas as pd
a, b, dec = np.load(sys.argv[1]), np.load(sys.argv[2]), int(sys.argv[3])
if dec >= 0:
    a, b = np.round(a, dec) + 0.0, np.round(b, dec) + 0.0
ha = pd.util.hash_pandas_object(pd.DataFrame(a), index=False)
hb = pd.util.hash_pandas_object(pd.DataFrame(b), index=False)
print(int(hb.isin(ha).sum()), int(ha.isin(hb).sum()))
"""


def make_data(folder: Path, rows: int, cols: int, seed: int = 0) -> tuple:
    """``folder/train.npy`` and ``folder/test.npy`` (float64, ``rows`` x ``cols`` each), the last 20 %
    of test rows copies of train rows drawn with replacement."""
    rng = np.random.default_rng(seed)
    train = rng.standard_normal((rows, cols))
    test = rng.standard_normal((rows, cols))
    k = rows // 5
    test[rows - k:] = train[rng.integers(0, rows, k)]
    paths = folder / "train.npy", folder / "test.npy"
    np.save(paths[0], train)
    np.save(paths[1], test)
    return paths


def sibscan_command(train: Path, test: Path) -> List[str]:
    script = Path(sys.executable).parent / "sibscan"  # what a user types
    head = [str(script)] if script.exists() else [sys.executable, "-m", "sibscan"]
    return head + ["twins", str(train), str(test), "--json"]


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: List[str], out: Path) -> tuple:
    """``(wall seconds, CPU seconds)`` of one run of ``cmd``, its standard output written to ``out``.
    CPU seconds (user + system, all threads) move less than wall time with other processes' load."""
    with open(out, "wb") as fh:
        c0, t0 = _cpu_children(), time.perf_counter()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE)
        seconds, cpu = time.perf_counter() - t0, _cpu_children() - c0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} ... exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
    return seconds, cpu


def main(argv: Optional[List[str]] = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of each split")
    ap.add_argument("--cols", type=int, default=46)
    ap.add_argument("--rounds", type=int, default=5, help="runs of each command, in turns")
    ap.add_argument("--quick", action="store_true", help="2,000 rows, 2 rounds (for the tests)")
    ap.add_argument("--name", default=RESULTS_NAME, help="results file name (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.rounds = 2000, 2
    try:
        import pandas  # noqa: F401  (only to know the reference can run; it runs in its own process)
    except ImportError:
        ap.error("the pandas reference needs pandas (pip install pandas)")
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="sibscan-twins-bench-"))
    try:
        train, test = make_data(tmp, args.rows, args.cols)
        commands: Dict[str, List[str]] = {
            "sibscan": sibscan_command(train, test),
            "pandas": [sys.executable, "-c", PANDAS_REF, str(train), str(test), str(DECIMALS)],
            "pandas_no_rounding": [sys.executable, "-c", PANDAS_REF, str(train), str(test), "-1"],
        }
        names = list(commands)
        runs: Dict[str, List[float]] = {k: [] for k in names}
        cpu: Dict[str, List[float]] = {k: [] for k in names}
        for r in range(max(1, args.rounds)):
            for k in names[r % len(names):] + names[:r % len(names)]:  # who goes first turns round by round
                wall, used = _timed(commands[k], tmp / f"{k}.out")
                runs[k].append(wall)
                cpu[k].append(used)
                print(f"round {r + 1}: {k} {wall:.2f} s (CPU {used:.2f} s)", flush=True)
        report = json.loads((tmp / "sibscan.out").read_text())
        counts = {k: [int(v) for v in (tmp / f"{k}.out").read_text().split()] for k in names[1:]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ours = [report["test_rows_with_train_twin"], report["train_rows_with_test_twin"]]
    if counts["pandas"] != ours:
        raise RuntimeError(f"sibscan counts {ours} but the pandas reference {counts['pandas']}")
    median = {k: statistics.median(v) for k, v in runs.items()}
    median_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    rows = [{"process": k, "median_s": median[k], "min_s": min(runs[k]), "max_s": max(runs[k]),
             "speedup_of_sibscan": median[k] / median["sibscan"], "median_cpu_s": median_cpu[k]} for k in names]
    print(f"whole processes, {args.rows:,} + {args.rows:,} rows x {args.cols} float64, median of {args.rounds} "
          f"runs in turns (speedup = that process's median / sibscan's)")
    table = _common.print_table(rows)
    payload = {
        "rows_train": args.rows, "rows_test": args.rows, "cols": args.cols, "rounds": args.rounds,
        "decimals": DECIMALS, "counts": {"sibscan": ours, **counts},
        "commands": {k: " ".join(v[:2] + ["PANDAS_REF"] + v[3:]) if k != "sibscan" else " ".join(v)
                     for k, v in commands.items()},
        "pandas_reference": PANDAS_REF,
        "seconds": runs, "median_s": median, "cpu_seconds": cpu, "median_cpu_s": median_cpu,
        "speedup_vs_pandas": median["pandas"] / median["sibscan"],
        "speedup_vs_pandas_no_rounding": median["pandas_no_rounding"] / median["sibscan"],
        "cpu_ratio_vs_pandas": median_cpu["pandas"] / median_cpu["sibscan"],
        "load_average_before": list(load_before), "load_average_after": list(os.getloadavg()),
        "table": table,
    }
    path = _common.write_results(args.name, payload)
    print(f"written to {path}")
    return payload


if __name__ == "__main__":
    main()
