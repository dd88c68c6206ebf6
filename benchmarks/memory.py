"""Peak memory of ``sibscan twins`` on large CSVs and of ``sibscan scan --encoder raw`` on many train rows.

Each case runs ``python -m sibscan ...`` in a fresh subprocess and records its peak resident memory
(``ru_maxrss`` of the child).  The ``scan`` cases run a second time with :mod:`tracemalloc` on (the
CLI's ``main`` in-process, tracing started after its imports) and record tracemalloc's peak: the
most memory held at once by Python objects and numpy buffers (numpy reports its data to
tracemalloc), which the RSS blurs — torch's own ~900 MB, reached at interpreter exit, moves by
tens of MB from run to run, and freed heap is not always returned.  tracemalloc does not see native
allocations made outside Python's allocator (torch tensors, faiss); in the raw scan those are
the search blocks, bounded by the block size.

* **twins** — TRAIN is a seeded CSV of 32 float columns written with 6 decimals, sized to
  ``--sizes`` MB; TEST holds 1,000 of its rows (so there are twins to find).
* **scan** — ``scan TRAIN TEST --encoder raw --out DIR`` with every default (three directions,
  lagcorr verification, the random-pair baseline); TRAIN has ``--rows`` rows of 16 float columns,
  TEST 5,000 rows (another seed).

The **fixed cost** of each kind is the same command with a 1,000-row TRAIN, measured in the same
run: the interpreter, everything the command imports (numpy; torch and faiss for ``scan``) and the
unchanged TEST side.  ``beyond_fixed_MB`` = peak - fixed; ``growth`` = beyond_fixed_MB of the largest
case / of the smallest (issue 13 asks for at most 1.2; not assessed when the smallest case is within
the noise of the fixed cost).  The same for the tracemalloc peak: ``traced_*`` and
``traced_growth_largest_over_smallest`` (its noise is far smaller: ``TRACED_NOISE_MB``).
``--quick`` checks the harness only: smaller sizes, and the scan
against 500 test rows with fewer baseline pairs.

``--tracemalloc-only`` skips the scan's peak-RSS runs (the traced runs alone, for iterating on the
scan's memory: about half the time; the RSS keys are then absent and ``rss`` says so).

Run ``python -m benchmarks.memory [--quick] [--sizes 100,400] [--rows 50000,200000,800000]
[--parts twins,scan] [--tracemalloc-only] [--name memory]``; results go to ``benchmarks/results/NAME.json``,
one run per choice of parts under ``runs`` (key ``twins+scan``, ``twins`` or ``scan``), each replacing only its
own key (:func:`benchmarks._common.write_run`).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

RESULTS_NAME = "memory"
TWINS_COLUMNS = 32
SCAN_COLUMNS = 16
SCAN_TEST_ROWS = 5_000
FIXED_ROWS = 1_000
GROWTH_LIMIT = 1.2
#: below this (MB beyond the fixed cost) the smallest case is within the RSS noise of two runs: no growth ratio
NOISE_MB = 16.0
# : below this the smallest case is not told from the fixed cost
# (three traced runs of the fixed case: 145.879-145.882 MB)
TRACED_NOISE_MB = 1.0
#: ``--quick``: a smoke test of the harness (seconds, not the issue's sizes): a 500-row TEST and fewer baseline pairs
QUICK_SCAN_ARGS = ["--baseline-pairs", "2000", "--verified-baseline-pairs", "200"]


def write_csv(path: Path, rows: Optional[int] = None, columns: int = TWINS_COLUMNS, seed: int = 0,
              megabytes: Optional[float] = None) -> int:
    """A seeded CSV (header ``c0..``, 6 decimals) of ``rows`` distinct rows, or of whole 2,000-row
    blocks until it holds ``megabytes`` MB; returns the row count."""
    rng = np.random.default_rng(seed)
    block = rng.normal(size=(2_000, columns))
    header = ",".join(f"c{j}" for j in range(columns)) + "\n"
    done, size = 0, len(header)
    with open(path, "w") as fh:
        fh.write(header)
        while (done < rows) if rows is not None else (size < megabytes * 1e6):
            m = len(block) if rows is None else min(len(block), rows - done)
            text = "\n".join(",".join(f"{v:.6f}" for v in r) for r in block[:m] + done) + "\n"  # distinct per block
            fh.write(text)
            done, size = done + m, size + len(text)
    return done


def _accepted(args: List[str]) -> Tuple[str, ...]:
    """Exit codes of a run that did its work: ``twins`` exits 1 when it finds twins; for ``scan``
    1 is an error (a scan that failed early would otherwise count as a small peak)."""
    return ("0", "1") if args[0] == "twins" else ("0",)


def peak_rss_mb(args: List[str]) -> float:
    """Peak RSS (MB) of ``python -m sibscan ARGS`` run as a child of a fresh helper process."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "sibscan", *args],
                         capture_output=True, text=True, check=True).stdout.split()
    if out[1] not in _accepted(args):
        raise RuntimeError(f"sibscan {' '.join(args)} exited {out[1]}")
    return int(out[0]) / 1024  # KiB on Linux


#: run ``sibscan`` in-process with tracemalloc started after the CLI's imports; argv[1] gets the peak (bytes)
_TRACE_CODE = """
import sys, tracemalloc
out = sys.argv.pop(1)
sys.argv[0] = "sibscan"
from sibscan.cli import main
tracemalloc.start()
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    with open(out, "w") as fh:
        fh.write(str(peak))
sys.exit(code)
"""


def traced_peak_mb(args: List[str], scratch: Path) -> float:
    """tracemalloc's peak (MB) of ``sibscan ARGS`` run in-process in a fresh interpreter."""
    out = scratch / "traced_peak.txt"
    r = subprocess.run([sys.executable, "-c", _TRACE_CODE, str(out), *args], stdout=subprocess.DEVNULL)
    if str(r.returncode) not in _accepted(args):
        raise RuntimeError(f"sibscan {' '.join(args)} (traced) exited {r.returncode}")
    peak = int(out.read_text())
    out.unlink()
    return peak / 2**20


def _growth(cases: List[Dict[str, object]], key: str = "beyond_fixed_MB", noise: float = NOISE_MB) -> Optional[float]:
    if key not in cases[0]:  # RSS not measured (--tracemalloc-only)
        return None
    small, large = cases[0][key], cases[-1][key]
    return large / small if small > noise else None


def _summary(kind: str, fixed: float, cases: List[Dict[str, object]],
             traced_fixed: Optional[float] = None) -> Dict[str, object]:
    growth = _growth(cases)
    out = {"fixed_MB": fixed, "fixed_cost": f"the same command with a {FIXED_ROWS:,}-row TRAIN, in the same run",
           "cases": cases, "growth_largest_over_smallest": growth,
           "growth_limit": GROWTH_LIMIT, "met": None if growth is None else growth <= GROWTH_LIMIT}
    if fixed is None:
        out.update(fixed_cost=None, rss="not measured (--tracemalloc-only)")
    if growth is not None and growth < 1 / GROWTH_LIMIT:  # the largest case below the smallest: noise
        out["note"] = "the largest case peaked below the smallest: this metric's noise, not evidence"
    if traced_fixed is not None:
        tg = _growth(cases, "traced_beyond_fixed_MB", TRACED_NOISE_MB)
        out.update({"traced_fixed_MB": traced_fixed,
                    "traced": "tracemalloc's peak, in a second run of the "
                              "same command (started after the CLI's imports)",
                    "traced_growth_largest_over_smallest": tg,
                    "traced_met": None if tg is None else tg <= GROWTH_LIMIT})
    return out


def twins_part(tmp: Path, sizes: List[float], save: Callable[[Dict[str, object]], None]) -> Dict[str, object]:
    test = tmp / "twins_test.csv"
    write_csv(test, FIXED_ROWS)  # the first 1,000 rows of every train file
    small = tmp / "twins_small.csv"
    write_csv(small, FIXED_ROWS)
    fixed = peak_rss_mb(["twins", str(small), str(test)])
    cases = []
    for mb in sizes:
        train = tmp / f"twins_{mb:g}.csv"
        n = write_csv(train, megabytes=mb)
        size = train.stat().st_size / 1e6
        t0 = time.perf_counter()
        peak = peak_rss_mb(["twins", str(train), str(test)])
        cases.append({"case": f"twins, {size:.0f} MB CSV", "train_rows": n, "file_MB": size, "peak_MB": peak,
                      "beyond_fixed_MB": peak - fixed, "per_MB": (peak - fixed) / size,
                      "seconds": time.perf_counter() - t0})
        train.unlink()
        save(_summary("twins", fixed, cases))
    return _summary("twins", fixed, cases)


def scan_part(tmp: Path, rows: List[int], save: Callable[[Dict[str, object]], None], quick: bool = False,
              traced_only: bool = False) -> Dict[str, object]:
    test = tmp / "scan_test.csv"
    n_test = 500 if quick else SCAN_TEST_ROWS
    write_csv(test, n_test, SCAN_COLUMNS, seed=1)
    extra = QUICK_SCAN_ARGS if quick else []

    def run(train: Path, out: Path, traced: bool = False) -> float:
        args = ["scan", str(train), str(test), "--encoder", "raw", "--out", str(out), *extra]
        try:
            return traced_peak_mb(args, tmp) if traced else peak_rss_mb(args)
        finally:
            subprocess.run(["rm", "-rf", str(out)], check=False)

    small = tmp / "scan_small.csv"
    write_csv(small, FIXED_ROWS, SCAN_COLUMNS)
    fixed = None if traced_only else run(small, tmp / "scan_fixed")
    traced_fixed = run(small, tmp / "scan_fixed", traced=True)
    cases = []
    for n in rows:
        train = tmp / f"scan_{n}.csv"
        write_csv(train, n, SCAN_COLUMNS)
        t0 = time.perf_counter()
        peak = None if traced_only else run(train, tmp / f"scan_{n}")
        seconds = None if traced_only else time.perf_counter() - t0
        t0 = time.perf_counter()
        traced = run(train, tmp / f"scan_{n}", traced=True)
        rss = {} if traced_only else {"peak_MB": peak, "beyond_fixed_MB": peak - fixed,
                                      "per_train_row_KB": (peak - fixed) / n * 1e3, "seconds": seconds}
        cases.append({"case": f"scan --encoder raw, {n:,} × {SCAN_COLUMNS} train, {n_test:,} test",
                      "train_rows": n, "file_MB": train.stat().st_size / 1e6, **rss,
                      "traced_peak_MB": traced, "traced_beyond_fixed_MB": traced - traced_fixed,
                      "traced_per_train_row_B": (traced - traced_fixed) / n * 2**20,
                      "traced_seconds": time.perf_counter() - t0})
        train.unlink()
        save(_summary("scan", fixed, cases, traced_fixed))
    return _summary("scan", fixed, cases, traced_fixed)


def main(argv=None) -> Dict[str, object]:
    from benchmarks._common import keyed_runs, print_table, write_run

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="twins at 2 and 8 MB, scan at 2k and 8k rows against 500 test rows with fewer baseline pairs")
    ap.add_argument("--sizes", default="100,400", help="twins: train CSV sizes in MB, comma-separated")
    ap.add_argument("--rows", default="50000,200000,800000", help="scan: train rows, comma-separated")
    ap.add_argument("--parts", default="twins,scan", help="which commands to measure: twins, scan")
    ap.add_argument("--tracemalloc-only", action="store_true",
                    help="scan: only the tracemalloc runs, no peak-RSS runs (about half the time; for iterating)")
    ap.add_argument("--name", default=RESULTS_NAME,
                    help="results file benchmarks/results/NAME.json, a run per --parts (key twins+scan, twins, scan)")
    args = ap.parse_args(argv)
    sizes = [2.0, 8.0] if args.quick else [float(s) for s in args.sizes.split(",")]
    rows = [2_000, 8_000] if args.quick else [int(s) for s in args.rows.split(",")]
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - {"twins", "scan"})
    if unknown:
        ap.error(f"unknown part(s) {', '.join(unknown)}; available: twins, scan")
    key = "+".join(parts)  # one file, a run per choice of parts (issue 31: --name memory_scan was a file of its own)
    keyed_runs(args.name)  # a file of another form is refused before the first case
    payload: Dict[str, object] = {"quick": args.quick, "complete": False}

    def saver(name: str) -> Callable[[Dict[str, object]], None]:
        def save(part: Dict[str, object]) -> None:  # after every case: a long run stopped early keeps what it measured
            payload[name] = part
            write_run(args.name, key, payload)
        return save

    with tempfile.TemporaryDirectory() as tmp:
        for name, part in (("twins", lambda: twins_part(Path(tmp), sizes, saver("twins"))),
                           ("scan", lambda: scan_part(Path(tmp), rows, saver("scan"), args.quick,
                                                   args.tracemalloc_only))):
            if name not in parts:
                continue
            payload[name] = res = part()
            print_table(res["cases"])
            g = res["growth_largest_over_smallest"]
            if res["fixed_MB"] is None:
                print(f"{name}: peak RSS not measured (--tracemalloc-only)")
            else:
                print(f"{name}: fixed cost {res['fixed_MB']:.0f} MB; peak beyond it, largest / smallest case: "
                      + (f"{g:.2f} (limit {GROWTH_LIMIT}: {'met' if res['met'] else 'not met'})" if g is not None
                         else f"not assessed (the smallest case is within {NOISE_MB:g} MB of the fixed cost)"))
            if "traced_fixed_MB" in res:
                tg = res["traced_growth_largest_over_smallest"]
                print(f"{name}, tracemalloc: fixed cost {res['traced_fixed_MB']:.1f} "
                      "MB; peak beyond it, largest / smallest: "
                      + (f"{tg:.2f} (limit {GROWTH_LIMIT}: {'met' if res['traced_met'] else 'not met'})"
                         if tg is not None
                         else f"not assessed (the smallest case is within {TRACED_NOISE_MB:g} MB of the fixed cost)"))
    payload["complete"] = True
    payload["load_average_1min_at_end"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    path = write_run(args.name, key, payload)
    print(f"wrote {path}, run {key}")
    return payload


if __name__ == "__main__":
    main()
