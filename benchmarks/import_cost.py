"""What each import kept inside a function saves: the numbers behind ``LAZY_IMPORTS_ALLOWED``.

For every import of our own modules that ``tests/test_architecture.py`` lists as kept lazy for import time,
what that import adds when run right after the entry point its reason names (``sibscan --help`` is
``import sibscan.cli``; else ``import sibscan.X``), in fresh processes: milliseconds (the best of the runs,
the reasons' figure, and their median) and modules added to ``sys.modules``.  That is what the entry point
would pay if the import moved to its module's top.  Also the median wall time of ``sibscan --help``, the
start-up every command pays.

    python -m benchmarks.import_cost             # 9 runs each, writes benchmarks/results/import_cost.json
    python -m benchmarks.import_cost --quick     # 1 run, the first 2 imports: checks the benchmark runs

Medians on a shared machine vary up to 3x from run to run (other work on the cores adds to a run, never takes
away: hence the best of the runs); the module counts do not vary.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks._common import print_table, write_results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_architecture import LAZY_IMPORTS_ALLOWED, LAZY_REASON, function_level_imports  # noqa: E402

_TIMED = ("import importlib, sys, time\nimportlib.import_module(sys.argv[1])\nbefore = len(sys.modules)\n"
          "start = time.perf_counter()\nexec(sys.argv[2])\n"
          "print((time.perf_counter() - start) * 1000, len(sys.modules) - before)")


def lazy_for_import_time() -> List[Dict[str, str]]:
    """``[{module, imports, entry, reason}]``: the listed imports kept lazy for import time."""
    rows = []
    for module, targets in sorted(LAZY_IMPORTS_ALLOWED.items()):
        for target, reason in sorted(targets.items()):
            match = LAZY_REASON.fullmatch(reason)
            if match and match.group(4):
                rows.append({"module": module, "imports": target, "entry": match.group(5) or "sibscan.cli",
                             "reason": reason})
    return rows


def added_by(entry: str, statements: List[str], runs: int) -> Dict[str, float]:
    """Milliseconds (best and median of ``runs``) and modules that ``statements`` add right after ``import entry``."""
    ms, modules = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _TIMED, entry, "\n".join(statements)], capture_output=True,
                             text=True, check=True).stdout.split()
        ms.append(float(out[0]))
        modules.append(int(out[1]))
    return {"ms": round(min(ms), 1), "median_ms": round(statistics.median(ms), 1), "modules": max(modules)}


def help_seconds(runs: int) -> Optional[float]:
    """Median wall seconds of ``sibscan --help`` (None when the console command is not on PATH)."""
    command = shutil.which("sibscan", path=str(Path(sys.executable).parent)) or shutil.which("sibscan")
    if command is None:
        return None
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([command, "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 3)


def main(argv: Optional[List[str]] = None) -> Dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh processes per measurement (median)")
    parser.add_argument("--quick", action="store_true", help="1 run, the first 2 imports")
    args = parser.parse_args(argv)
    runs = 1 if args.quick else args.runs
    rows = lazy_for_import_time()[: 2 if args.quick else None]
    for row in rows:
        row.update(added_by(row["entry"], function_level_imports(row["module"])[row["imports"]], runs))
    print_table(rows, ["module", "imports", "entry", "ms", "median_ms", "modules", "reason"])
    # the file keeps the measurements; the reasons they back are in the test file
    payload = {"runs": runs, "sibscan_help_s": help_seconds(runs),
               "imports": [{k: v for k, v in row.items() if k != "reason"} for row in rows]}
    print(f"sibscan --help: {payload['sibscan_help_s']} s (median of {runs})")
    write_results("import_cost_quick" if args.quick else "import_cost", payload)
    return payload


if __name__ == "__main__":
    main()
