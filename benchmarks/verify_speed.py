"""An image verifier's pairs/s and scores, this checkout against a base revision, in one run (same load).

    python -m benchmarks.verify_speed                     # imagefuse, against main (a few minutes on 2 cores)
    python -m benchmarks.verify_speed --quick             # tiny: a check that it runs

The pairs are those of ``benchmarks/imagematch_speed.py`` on the planted ``crops`` and ``small32`` sets
(:mod:`benchmarks.planted_crops`): every planted test item with its true source, and every test item with
its ``--negatives`` nearest train items by 32-px grey cosine (the cells that look most alike).  The base
revision's ``sibscan`` (``git archive --base``) and this checkout's each run the verifier's whole
``verify`` (decoding included) in a fresh process, one torch thread as the verifier sets it, alternating
which goes first per repeat; a first call on 20 pairs (imports, set-up) is not timed.  Per set and
version (``--also`` adds this checkout's verifier with other options): wall and CPU seconds (median of
``--repeat``), pairs/s, and against the base's scores the largest absolute change (all pairs, and
planted pairs).
Results: ``benchmarks/results/verify_speed_<verifier>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from benchmarks._common import print_table, write_results
from benchmarks.imagematch_speed import _pairs
from benchmarks.planted_crops import crops_set, small_set

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"quick": (30, 1, 10), "default": (240, 20, 120)}  # n_train, per_transform, n_clean (planted_crops' own)

#: run in a fresh process per version: ``sys.argv[1]`` the case file; prints the timing as JSON
WORKER = """
import json, sys, time
import numpy as np
import sibscan
from sibscan.items import Items
from sibscan.verify import get_verifier
case = json.load(open(sys.argv[1]))
ver = get_verifier(case["verifier"], device="cpu", progress=False, **json.loads(sys.argv[3]))
test, train = (Items(s, "image", ids=[str(i) for i in range(len(p))], paths=p)
               for s, p in (("test", case["test"]), ("train", case["train"])))
qi, di = np.array(case["qi"]), np.array(case["di"])
ver.verify(test, qi[:20], train, di[:20])  # imports, blur matrices and FFT set-up are not the per-pair cost
t0, c0 = time.perf_counter(), time.process_time()
res = ver.verify(test, qi, train, di)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
np.save(sys.argv[2], np.asarray(res.scores))
print(json.dumps({"wall": wall, "cpu": cpu, "identity": ver.identity, "module": sibscan.__file__}))
"""


def base_tree(rev: str, dest: Path) -> Path:
    """``sibscan`` (with its ``kernels``) as of ``rev``, importable from ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    tar = dest / "base.tar"
    with tar.open("wb") as fh:
        subprocess.run(["git", "archive", rev, "sibscan", "kernels"], cwd=ROOT, stdout=fh, check=True)
    with tarfile.open(tar) as tf:
        tf.extractall(dest)
    # setup's package-dir mapping: kernels/sibscan/kernels since the layout that shadows nothing, kernels/ before
    nested = dest / "kernels" / "sibscan" / "kernels"
    shutil.move(str(nested if nested.is_dir() else dest / "kernels"), str(dest / "sibscan" / "kernels"))
    return dest


def run_version(case: Path, out: Path, pythonpath: Optional[Path], options: dict) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run([sys.executable, "-c", WORKER, str(case), str(out), json.dumps(options)], env=env,
                          cwd=case.parent, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.verify_speed", description=__doc__.split("\n")[0])
    ap.add_argument("--verifier", default="imagefuse")
    ap.add_argument("--base", default="main", help="git revision to compare with")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--name", default=None, help="results file stem (default verify_speed_VERIFIER)")
    ap.add_argument("--negatives", type=int, default=12, help="hard negatives per test item")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--also", action="append", default=[], metavar="NAME:KEY=VALUE,...",
                    help="also this checkout's verifier with these options (integers), e.g. exhaustive:coarse=0")
    args = ap.parse_args(argv)
    versions = {"base": (True, {}), "new": (False, {})}
    for spec in args.also:
        name, _, opts = spec.partition(":")
        versions[name] = (False, {k: int(v) for k, v in (o.split("=") for o in opts.split(",") if o)})
    n_train, per, n_clean = SIZES["quick" if args.quick else "default"]
    rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip())
    t0 = time.perf_counter()
    load_start = os.getloadavg()
    rows = []
    from sibscan.verify import get_verifier

    loader = get_verifier(args.verifier, device="cpu", progress=False)
    with tempfile.TemporaryDirectory(prefix="sibscan-verify-speed-") as tmp:
        tmp = Path(tmp)
        base = base_tree(rev, tmp / "base")
        for make in (crops_set, small_set):
            ps = make(tmp / make.__name__, n_train=n_train, per_transform=per, n_clean=n_clean, seed=args.seed)
            qi, di, true = _pairs(ps, loader.load_arrays(ps.test.paths), loader.load_arrays(ps.train.paths),
                                  args.negatives)
            case = tmp / f"{ps.name}.json"
            case.write_text(json.dumps({"verifier": args.verifier, "test": list(ps.test.paths),
                                        "train": list(ps.train.paths), "qi": qi.tolist(), "di": di.tolist()}))
            runs = {k: [] for k in versions}
            for r in range(args.repeat):
                for name in (list(versions) if r % 2 == 0 else list(versions)[::-1]):
                    old, options = versions[name]
                    runs[name].append(run_version(case, tmp / f"{ps.name}_{name}.npy", base if old else None, options))
            if not runs["base"][0]["module"].startswith(str(base)):  # the base revision's code, not this checkout's
                raise RuntimeError(f"the base run imported {runs['base'][0]['module']}, not the archive in {base}")
            scores = {k: np.load(tmp / f"{ps.name}_{k}.npy").astype(np.float64) for k in runs}
            for k, rs in runs.items():
                diff = np.abs(scores[k] - scores["base"])
                wall, cpu = float(np.median([x["wall"] for x in rs])), float(np.median([x["cpu"] for x in rs]))
                rows.append({"set": ps.name, "version": k, "options": versions[k][1], "pairs": int(len(qi)),
                             "planted_pairs": int(true.sum()), "seconds": wall, "cpu_seconds": cpu,
                             "pairs_per_s": len(qi) / wall, "seconds_runs": [x["wall"] for x in rs],
                             "speedup": float(np.median([x["wall"] for x in runs["base"]])) / wall,
                             "cpu_speedup": float(np.median([x["cpu"] for x in runs["base"]])) / cpu,
                             "max_abs_score_change": float(diff.max()),
                             "max_abs_score_change_planted": float(diff[true].max()) if true.any() else 0.0,
                             "identical_scores": int((diff == 0).sum()), "identity": rs[0]["identity"]})
    print_table([{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()
                  if k not in ("seconds_runs", "identity", "options")} for r in rows])
    payload = {"verifier": args.verifier, "base": rev, "head": head, "head_dirty": dirty, "quick": args.quick,
               "load_average_start": load_start, "load_average_end": os.getloadavg(),
               "loaded": "timings on a shared 2-core machine with other helpers running",
               "rows": rows, "seconds": time.perf_counter() - t0,
               "command": "python -m benchmarks.verify_speed " + " ".join(argv or sys.argv[1:])}
    write_results(args.name or f"verify_speed_{args.verifier}" + ("_quick" if args.quick else ""), payload)
    return payload


if __name__ == "__main__":
    main()
