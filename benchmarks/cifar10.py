"""The default image scan on real photos: CIFAR-10 against ciFAIR's list of test→train duplicates.

    python -m benchmarks.cifar10 --data /tmp/cifar10                  # the full set (60,000 images)
    python -m benchmarks.cifar10 --data /tmp/cifar10 --fraction 0.25  # a class-stratified quarter

``--data`` is the unpacked ``cifar10_jpg.tar.gz`` (``train/<class>/NNNN.jpg``, ``test/<class>/NNNN.jpg``);
``index_map.json`` (original CIFAR-10 index → file) and ``ciFAIR_duplicates_cifar10.csv`` are read from
``--meta`` (default: the ``--data`` folder, else ``/work/shared/data/cifar10``).

What it runs: the default ``sibscan scan --train DATA/train --test DATA/test --out DIR`` in a fresh
process with a fresh ``DIR`` (so a cold embedding cache), its wall time, and the stage times the scan
recorded in its manifest (``timings``).  ``--scan-args`` appends options (``"--extra-views none"``) and
``--key`` names the run inside the results file.

What it measures on the finished scan, against the ciFAIR pairs whose two sides are both scanned:

* **partner among the candidates**: the pairs that are a test→train row of the neighbours table (the
  encoder's top ``k`` joined with each extra view's top ``k_view``), by the view(s) that proposed them;
  and, beside it, the pairs that are a row in either direction.
* **the verified score's recall of the listed pairs**: every distinct (test, train) pair of the table
  scored by its best row's ``score``, ranked; the cutoff is set where the flagged pairs reach the
  number of listed pairs (a pair not ranked counts as missed), and the recall of the listed pairs at
  that cutoff is reported, with the recall at 2x and 4x as many flagged pairs and at the scan's own cutoff.
  Precision is **not assessed**: ciFAIR's list is an undercount (a flagged pair not on it may still be a
  sibling), so precision against it is only a lower bound; it takes a labelled sample of the flagged
  pairs, which this benchmark does not have.

Subsampling (``--fraction f < 1``): in each split and class, the images are taken in original CIFAR-10
index order and every image whose position ``r`` in that order has ``floor((r + 1) f) > floor(r f)`` is
kept (evenly spaced, deterministic, no seed), and **every image on the ciFAIR list is kept as well**
(both sides of all 286 pairs), so the recall figures always count the same 286 pairs; at small
fractions those pairs are therefore a denser share of the sample than in the full set.  The sample is a
folder of symbolic links under ``--work`` (ids stay ``<class>/NNNN.jpg``).

Results: ``benchmarks/results/cifar10.json``, one key per run (``full``, ``f0.5``, ``f0.25``, or ``--key``),
each run replacing only its own key, with the 1-minute load average at its start and end (the machine
is shared).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks._common import keyed_runs, write_run

NAME = "cifar10"
#: where the lead keeps the shared copy of the metadata (used when ``--meta`` and ``--data`` lack it)
SHARED_META = Path("/work/shared/data/cifar10")
_MAP, _LIST = "index_map.json", "ciFAIR_duplicates_cifar10.csv"
#: flagged pairs as multiples of the listed pairs, where recall is reported
_MULTIPLES = (1, 2, 4)


def read_meta(meta: Path) -> Tuple[Dict[str, Dict[int, str]], List[Tuple[int, int, int]]]:
    """``({"train": {index: "train/<class>/NNNN.jpg"}, "test": {...}}, [(test index, train index, judgment)])``."""
    raw = json.loads((meta / _MAP).read_text())
    index = {split: {int(i): p for i, p in raw[split].items()} for split in ("train", "test")}
    with open(meta / _LIST, newline="") as fh:
        pairs = [(int(r["TestID"]), int(r["TrainID"]), int(r["Judgment"])) for r in csv.DictReader(fh)]
    return index, pairs


def sample(index: Dict[str, Dict[int, str]], pairs: Sequence[Tuple[int, int, int]], fraction: float) -> Dict[str, List[int]]:
    """The original indices kept in each split (see the module docstring for the rule), sorted."""
    listed = {"test": {p[0] for p in pairs}, "train": {p[1] for p in pairs}}
    keep = {}
    for split, files in index.items():
        by_class: Dict[str, List[int]] = {}
        for i in sorted(files):
            by_class.setdefault(files[i].split("/")[1], []).append(i)
        kept = set(listed[split])
        for members in by_class.values():
            kept.update(i for r, i in enumerate(members) if math.floor((r + 1) * fraction) > math.floor(r * fraction))
        keep[split] = sorted(kept)
    return keep


def link_sample(data: Path, index: Dict[str, Dict[int, str]], keep: Dict[str, List[int]], folder: Path) -> Path:
    """A folder of symbolic links to the kept images, laid out as ``data`` (made afresh)."""
    if folder.exists():
        shutil.rmtree(folder)
    for split, rows in keep.items():
        for i in rows:
            rel = index[split][i]
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink((data / rel).resolve(), folder / rel)
    return folder


def _load_1min() -> float:
    return round(os.getloadavg()[0], 2)


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "not recorded"


def run_scan(root: Path, out: Path, scan_args: Sequence[str], log: Path) -> Tuple[float, int]:
    """``sibscan scan`` in a fresh process (stderr, with its progress lines, to ``log``); (wall seconds, exit code)."""
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "sibscan", "scan", "--train", str(root / "train"), "--test", str(root / "test"),
           "--out", str(out), *scan_args]
    print("running:", shlex.join(cmd), flush=True)
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=fh)
    return time.perf_counter() - t0, proc.returncode


def measure(out: Path, index: Dict[str, Dict[int, str]], pairs: Sequence[Tuple[int, int, int]],
            keep: Dict[str, List[int]]) -> dict:
    """Partner-among-candidates and recall of the listed pairs on the finished scan in ``out``."""
    from sibscan.store.scandir import ScanDir

    sd = ScanDir(out)
    manifest, nb = sd.manifest(), sd.neighbours()
    # ids are paths relative to the split folder: "<class>/NNNN.jpg"
    id_of = {s: {i: p.split("/", 1)[1] for i, p in index[s].items()} for s in index}
    kept = {s: set(v) for s, v in keep.items()}
    listed = [(id_of["test"][te], id_of["train"][tr], j) for te, tr, j in pairs if te in kept["test"]
              and tr in kept["train"]]
    qs, ns = nb["query_split"], nb["neighbour_split"]
    tt, rt = (qs == "test") & (ns == "train"), (qs == "train") & (ns == "test")
    test_ids = np.where(tt, nb["query_id"], nb["neighbour_id"])
    train_ids = np.where(tt, nb["neighbour_id"], nb["query_id"])
    both = tt | rt
    views = {}
    for a, b, v in zip(test_ids[tt].tolist(), train_ids[tt].tolist(), nb["view"][tt].tolist()):
        views[(a, b)] = v
    best: Dict[Tuple[str, str], float] = {}
    for a, b, s in zip(test_ids[both].tolist(), train_ids[both].tolist(), nb["score"][both].tolist()):
        if not (s <= best.get((a, b), -np.inf)):
            best[(a, b)] = s
    in_tt = [(a, b) in views for a, b, _ in listed]
    per_view = Counter(views[(a, b)] for a, b, _ in listed if (a, b) in views)
    view_names = manifest.get("views", [])
    found_by = {v: sum(n for combo, n in per_view.items() if v in combo.split("+")) for v in view_names}
    only_by = {v: per_view.get(v, 0) for v in view_names}
    # recall of the listed pairs when the top m distinct pairs by verified score are flagged
    scores = np.sort(np.array([s for s in best.values() if np.isfinite(s)], np.float64))[::-1]
    listed_scores = np.array([best.get((a, b), -np.inf) for a, b, _ in listed], np.float64)
    n_listed = len(listed)
    curve = []
    for m in _MULTIPLES:
        flagged = min(m * n_listed, len(scores))
        if flagged == 0:
            continue
        cut = float(scores[flagged - 1])
        curve.append({"flagged_pairs": int((scores >= cut).sum()), "cutoff": cut,
                      "listed_recall": float((listed_scores >= cut).mean()) if n_listed else None,
                      "listed_found": int((listed_scores >= cut).sum())})
    own = manifest.get("cutoff") or {}
    own_cut = own.get("value") if isinstance(own, dict) else None
    at_own = None
    if isinstance(own_cut, (int, float)):
        at_own = {"cutoff": float(own_cut), "flagged_pairs": int((scores >= own_cut).sum()),
                  "listed_found": int((listed_scores >= own_cut).sum()),
                  "listed_recall": float((listed_scores >= own_cut).mean()) if n_listed else None}
    judgment = {j: [x for x, (_, _, jj) in zip(in_tt, listed) if jj == j] for j in (1, 2)}
    return {
        "listed_pairs": n_listed,
        "partner_among_candidates": int(sum(in_tt)),
        "partner_among_candidates_by_judgment": {str(j): int(sum(v)) for j, v in judgment.items()},
        "partner_in_either_direction": int(sum((a, b) in best for a, b, _ in listed)),
        "partner_found_by_view": found_by, "partner_found_only_by_view": only_by,
        "candidate_rows_test_train": int(tt.sum()), "candidate_pairs_distinct": len(best),
        "recall_at_listed_count": curve[0] if curve else None, "recall_curve": curve,
        "recall_at_scan_cutoff": at_own, "scan_cutoff": own,
        "precision": "not assessed (ciFAIR's list is an undercount; no labelled sample of flagged pairs)",
        "missed": [[a, b, j] for (a, b, j), x in zip(listed, in_tt) if not x],
        "timings": manifest.get("timings", {}), "views": view_names,
        "pairs_verified": manifest.get("pairs_verified"),
    }


def _find_meta(meta: Optional[str], data: Path) -> Path:
    for folder in ([Path(meta)] if meta else [data, SHARED_META]):
        if (folder / _MAP).is_file() and (folder / _LIST).is_file():
            return folder
    where = meta or f"{data} or {SHARED_META}"
    raise SystemExit(f"cifar10: {_MAP} and {_LIST} not found in {where}; pass --meta FOLDER holding both")


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cifar10", description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the unpacked CIFAR-10 JPEGs (train/ and test/ inside)")
    ap.add_argument("--meta", default=None, help="folder with index_map.json and ciFAIR_duplicates_cifar10.csv")
    ap.add_argument("--fraction", type=float, default=1.0, help="class-stratified share of each split (0, 1]")
    ap.add_argument("--work", default=None, help="scratch folder for the sample and "
                                                 "the scan (default: a folder in /tmp)")
    ap.add_argument("--scan-args", default="", help="options appended to the scan command, e.g. '--extra-views none'")
    ap.add_argument("--key", default=None, help="the run's key in the results file (default full / f<fraction>)")
    ap.add_argument("--name", default=NAME, help="results file stem")
    ap.add_argument("--keep", action="store_true", help="keep the scan directory (default: removed after measuring)")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "train").is_dir() or not (data / "test").is_dir():
        raise SystemExit(f"cifar10: {data} has no train/ and test/ folders; unpack cifar10_jpg.tar.gz there")
    if not 0.0 < args.fraction <= 1.0:
        raise SystemExit(f"cifar10: --fraction must be in (0, 1], got {args.fraction}")
    keyed_runs(args.name)  # a results file of another form is refused before the scan, not after it
    meta = _find_meta(args.meta, data)
    index, pairs = read_meta(meta)
    key = args.key or ("full" if args.fraction == 1.0 else f"f{args.fraction:g}")
    work = Path(args.work) if args.work else Path("/tmp") / f"sibscan-cifar10-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    keep = sample(index, pairs, args.fraction) if args.fraction < 1.0 else {s: sorted(v) for s, v in index.items()}
    root = data if args.fraction == 1.0 else link_sample(data, index, keep, work / "sample")
    out, log = work / "scan", work / "scan.log"
    load0, up0 = _load_1min(), _uptime()
    wall, rc = run_scan(root, out, shlex.split(args.scan_args), log)
    load1, up1 = _load_1min(), _uptime()
    tail = log.read_text(errors="replace").splitlines()[-15:]
    if rc != 0:
        print("\n".join(tail), file=sys.stderr)
        raise SystemExit(f"cifar10: the scan exited with {rc} (log: {log})")
    result = {"fraction": args.fraction, "n_train": len(keep["train"]), "n_test": len(keep["test"]),
              "scan_args": args.scan_args, "wall_seconds": round(wall, 2), "load_1min_start": load0,
              "load_1min_end": load1, "uptime_start": up0, "uptime_end": up1, **measure(out, index, pairs, keep)}
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    path = write_run(args.name, key, result, sampling="class-stratified evenly spaced by original index, plus "
                     "every ciFAIR-listed image (see benchmarks/cifar10.py)")
    t = result["timings"]
    print(f"{key}: {result['n_train']:,} train + {result['n_test']:,} test, {wall:.1f} s wall "
          f"(load {load0} → {load1}); stages: " + ", ".join(f"{k} {v:.1f}" for k, v in t.items()))
    at = result["recall_at_listed_count"] or {}
    print(f"ciFAIR partner among the candidates: {result['partner_among_candidates']} of {result['listed_pairs']} "
          f"(by view: {result['partner_found_by_view']}); recall of the listed pairs with as many pairs flagged: "
          f"{at.get('listed_found')} of {result['listed_pairs']} (cutoff {at.get('cutoff')}); precision not assessed")
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
