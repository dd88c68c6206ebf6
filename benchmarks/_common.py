"""Shared by the benchmark scripts: timing, machine facts, results files, table printing."""
from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from sibscan.atomic import dumps_json, write_bytes, write_json

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(fn: Callable[[], object], repeat: int = 3, min_time: float = 0.0) -> float:
    """Best wall-clock seconds of ``repeat`` calls of ``fn`` (at least one call)."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def machine() -> Dict[str, object]:
    info: Dict[str, object] = {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }
    try:
        import numpy as np

        info["numpy"] = np.__version__
    except ImportError:  # pragma: no cover
        pass
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info


def write_results(name: str, payload: Dict[str, object], *, compact: bool = False) -> Path:
    """Write ``benchmarks/results/<name>.json`` atomically, with the machine description.

    ``$SIBSCAN_BENCH_RESULTS`` names another folder (``benchmarks/gpu_check.sh --dry-run`` keeps its
    CPU stand-in figures out of ``benchmarks/results/`` with it).  ``compact``: ``<name>.json.gz``,
    one gzipped line (long lists of per-item scores, not meant to be read by eye; :func:`read_results`).
    Both forms go through one serialiser (:func:`sibscan.atomic.dumps_json`): numpy scalars and arrays
    written, non-finite numpy float16/32 as null, a non-finite Python float (np.float64 is one) refused (strict JSON).
    """
    payload = {"benchmark": name, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine(), **payload}
    if compact:
        return write_compact(results_path(name, compact=True), payload)
    return write_json(results_path(name), payload)


def comma_list(kind: Callable[[str], object], allowed: Optional[Sequence[str]] = None) -> Callable[[str], list]:
    """An argparse type: a comma list of ``kind`` values (one at least, none twice; ``allowed``: the valid
    ones).  The seeds, photo splits and sizes one command runs, each a run of one results file (:func:`write_run`)."""
    import argparse

    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError("give at least one value")
        bad = [t for t in items if allowed is not None and t not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(bad)}; available: {', '.join(allowed)}")
        try:
            values = [kind(t) for t in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: give a comma list of {kind.__name__} values") from None
        if len(set(values)) < len(values):
            raise argparse.ArgumentTypeError(f"{text!r} names a value twice")
        return values
    return parse


#: the key under which one results file holds the runs of one benchmark (its seeds, photo splits, sizes,
#: configurations, each named by a key): one file per benchmark, each run replacing only its own key
RUNS = "runs"


def results_path(name: str, *, compact: bool = False) -> Path:
    """Where :func:`write_results` writes ``name`` (``$SIBSCAN_BENCH_RESULTS`` or ``benchmarks/results/``)."""
    folder = Path(os.environ["SIBSCAN_BENCH_RESULTS"]) if os.environ.get("SIBSCAN_BENCH_RESULTS") else RESULTS
    return folder / f"{name}.json{'.gz' if compact else ''}"


def keyed_runs(name: str, *, compact: bool = False) -> Dict[str, Dict[str, object]]:
    """The runs ``name``'s results file holds, by key (none yet: empty).  A file of another form is refused
    (it would be overwritten): call this before a long run, so the refusal comes before the work."""
    path = results_path(name, compact=compact)
    if not path.is_file():
        return {}
    runs = read_results(path).get(RUNS)
    if not isinstance(runs, dict):
        raise SystemExit(f"{path}: not a file of runs by key ('{RUNS}'); move it away or give another --name")
    return dict(runs)


def write_run(name: str, key: str, run: Dict[str, object], *, compact: bool = False,
              **fields: object) -> Path:
    """Write one run of a benchmark into its one results file, under ``runs[key]``, keeping the file's
    other runs (another seed, size or configuration of the same command; :func:`keyed_runs`).

    The run is stamped with its own ``created`` and ``machine``; ``fields`` go beside ``runs`` (what
    every run shares).  Through :func:`write_results`: ``compact``, the one serialiser.
    """
    runs = keyed_runs(name, compact=compact)
    runs[key] = {"created": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine(), **run}
    return write_results(name, {**fields, RUNS: runs}, compact=compact)


def write_compact(path: Path, payload: Dict[str, object]) -> Path:
    """Write ``payload`` to ``path`` atomically as one gzipped line through the one serialiser
    (:func:`sibscan.atomic.dumps_json`); the same bytes for the same payload (no time in the gzip header)."""
    import gzip

    data = (dumps_json(payload, indent=None) + "\n").encode("utf-8")
    return write_bytes(Path(path), gzip.compress(data, compresslevel=9, mtime=0))


def finite(obj):
    """``obj`` with NaN/inf floats replaced by None (results files are strict JSON)."""
    import numpy as np

    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    return obj


def read_results(path: Path) -> Dict[str, object]:
    """A results file back, gzipped (``compact``) or not."""
    import gzip
    import json

    path = Path(path)
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)


def print_table(rows: List[Dict[str, object]], columns: Sequence[str] | None = None) -> str:
    """Print rows as an aligned Markdown table and return the text."""
    if not rows:
        return ""
    columns = list(columns or rows[0].keys())

    def fmt(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return str(v)

    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)) + " |",
             "| " + " | ".join("-" * w for w in widths) + " |"]
    lines += ["| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |" for row in cells]
    text = "\n".join(lines)
    print(text, flush=True)
    return text
