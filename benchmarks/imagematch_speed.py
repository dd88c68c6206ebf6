"""imagematch: verifier-only time and scores, exhaustive variant search vs coarse to fine.

    python -m benchmarks.imagematch_speed            # crops + small32, ~1,000 pairs (a few minutes on 2 cores)
    python -m benchmarks.imagematch_speed --quick    # tiny, for the tests

One fixed set of pairs from each of the planted ``crops`` and ``small32`` sets
(:mod:`benchmarks.planted_crops`): every planted test item with its true source, and every test
item (planted or clean) with its ``--negatives`` nearest train items by 32-px grey cosine that are
not its source (hard negatives: the cells that look most alike).  Each setting of the search
scores the same pairs in the same run, alternating order per repeat, images decoded once
beforehand (decoding is not verification's search cost and is the same for all).

Per setting (coarse side, variants kept, torch threads): wall and CPU seconds (median of
``--repeat``), the ratio to the exhaustive search's time, and
against the exhaustive scores: the largest and 99th-percentile score change on true pairs, the
share of pairs with the same best variant, recall at precision >= 0.95 over these pairs, and the
negatives at or above the exhaustive search's cutoff for that precision.
Results: ``benchmarks/results/imagematch_speed.json``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from benchmarks._common import print_table, write_results
from benchmarks.planted_crops import crops_set, small_set

RESULTS_NAME = "imagematch_speed"
TARGET_PRECISION = 0.95
DEFAULT_THREADS = 0  # torch's own default, read at start (0 in a setting means it)
SIZES = {"quick": (30, 1, 10), "default": (120, 4, 40)}  # n_train, per_transform, n_clean


def _pairs(ps, arrays_test: np.ndarray, arrays_train: np.ndarray, negatives: int):
    """(test row, train row, is_true) of the fixed pair set."""
    import torch
    import torch.nn.functional as F

    def emb(a):
        x = F.interpolate(torch.as_tensor(a), size=(32, 32), mode="area").reshape(len(a), -1).numpy()
        x = x - x.mean(1, keepdims=True)
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    sims = emb(arrays_test) @ emb(arrays_train).T
    qi, di, true = [], [], []
    for t in range(len(sims)):
        src = int(ps.source[t])
        if src >= 0:
            qi.append(t), di.append(src), true.append(True)
        order = [int(j) for j in np.argsort(-sims[t], kind="stable") if j != src][:negatives]
        qi += [t] * len(order)
        di += order
        true += [False] * len(order)
    return np.array(qi), np.array(di), np.array(true)


def _recall_at_precision(score: np.ndarray, true: np.ndarray, target: float):
    """Best recall over cutoffs with precision >= target, and that cutoff (the lowest such)."""
    order = np.argsort(-score, kind="stable")
    tp = np.cumsum(true[order])
    prec = tp / np.arange(1, len(score) + 1)
    ok = np.flatnonzero(prec >= target)
    if not len(ok):
        return 0.0, np.inf
    k = ok[-1]
    return float(tp[k] / max(true.sum(), 1)), float(score[order][k])


def _score(ver, q, d, qi, di, coarse: int, keep: int, threads: int):
    import torch

    from sibscan.kernels.alignmatch import patch_agreement
    from sibscan.kernels.scalematch import scale_match

    before = torch.get_num_threads()
    torch.set_num_threads(threads or DEFAULT_THREADS)
    try:
        res = scale_match(q, d, qi, di, ver.variants, batch_size=ver.batch_size, coarse=coarse, keep=keep)
        return res, patch_agreement(q, d, qi, di, ver.variants, res, grid=ver.grid)
    finally:
        torch.set_num_threads(before)


def run_case(ps, *, settings: Sequence[tuple], negatives: int, repeat: int) -> Dict[str, object]:
    import torch

    from sibscan.verify import get_verifier

    ver = get_verifier("imagematch", device="cpu", progress=False)
    q, d = ver.load_arrays(ps.test.paths), ver.load_arrays(ps.train.paths)
    qi, di, true = _pairs(ps, q, d, negatives)
    runs: Dict[tuple, List[float]] = {s: [] for s in settings}
    cpu: Dict[tuple, List[float]] = {s: [] for s in settings}
    out: Dict[tuple, tuple] = {}
    with torch.no_grad():
        for r in range(repeat):
            for s in (settings if r % 2 == 0 else settings[::-1]):
                t0, c0 = time.perf_counter(), time.process_time()
                out[s] = _score(ver, q, d, qi, di, *s)
                runs[s].append(time.perf_counter() - t0)
                cpu[s].append(time.process_time() - c0)
    base = settings[0]
    bres, bscore = out[base]
    b_rec, b_cut = _recall_at_precision(bscore, true, TARGET_PRECISION)
    rows = []
    for s in settings:
        res, score = out[s]
        rec, _ = _recall_at_precision(score, true, TARGET_PRECISION)
        dt = np.abs(score[true] - bscore[true])
        rows.append({"set": ps.name, "coarse": s[0], "keep": s[1], "threads": s[2] or DEFAULT_THREADS,
                     "pairs": int(len(qi)), "true_pairs": int(true.sum()),
                     "seconds": float(np.median(runs[s])), "seconds_runs": runs[s],
                     "speedup": float(np.median(runs[base]) / np.median(runs[s])),
                     "cpu_seconds": float(np.median(cpu[s])),
                     "cpu_speedup": float(np.median(cpu[base]) / np.median(cpu[s])),
                     "same_variant": float((res.variant == bres.variant).mean()),
                     "true_max_abs_change": float(dt.max()) if len(dt) else 0.0,
                     "true_p99_abs_change": float(np.quantile(dt, 0.99)) if len(dt) else 0.0,
                     "true_mean_change": float((score[true] - bscore[true]).mean()) if len(dt) else 0.0,
                     "recall_at_p95": rec,
                     "negatives_at_or_above_exhaustive_cutoff": int((score[~true] >= b_cut).sum()),
                     "negatives_max_score": float(score[~true].max())})
    rows[0]["exhaustive_cutoff"] = b_cut
    rows[0]["exhaustive_recall_at_p95"] = b_rec
    return {"rows": rows}


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--negatives", type=int, default=3, help="hard negatives per test item")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", default="3,6", help="variants refined at 64 px after the 32-px search")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    n_train, per, n_clean = SIZES["quick" if args.quick else "default"]
    global DEFAULT_THREADS
    import torch

    DEFAULT_THREADS = torch.get_num_threads()
    # the exhaustive search as it was (torch's default threads) first: every ratio is against it
    settings = [(0, 1, 0), (0, 1, 1)] + [(32, int(k), 1) for k in args.keep.split(",")]
    t0 = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for make in (crops_set, small_set):
            ps = make(Path(tmp) / make.__name__, n_train=n_train, per_transform=per, n_clean=n_clean, seed=args.seed)
            rows += run_case(ps, settings=settings, negatives=args.negatives, repeat=args.repeat)["rows"]
    print_table([{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()
                  if k not in ("seconds_runs", "exhaustive_cutoff", "exhaustive_recall_at_p95")}
                 for r in rows])
    payload = {"quick": args.quick, "load_average_start": os.getloadavg(), "rows": rows,
               "seconds": time.perf_counter() - t0,
               "command": "python -m benchmarks.imagematch_speed " + " ".join(argv or [])}
    payload["load_average_end"] = os.getloadavg()
    write_results(RESULTS_NAME + ("_quick" if args.quick else ""), payload)
    return payload


if __name__ == "__main__":
    main()
