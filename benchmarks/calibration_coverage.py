"""Coverage and width of the sibling-rate interval, on scores of real items and a fallible labeller.

    python -m benchmarks.calibration_coverage            # the default run (see DEFAULT below)
    python -m benchmarks.calibration_coverage --quick    # tiny, for the tests
    python -m benchmarks.calibration_coverage --datasets 200 --sizes 2000,10000
    python -m benchmarks.calibration_coverage --kinds image --prevalences 0.03,0.12 --datasets 60 \
        --sizes 2000 --adaptive-runs 0                   # a subset, to iterate on the estimator

Each simulated data set has ``n`` test items of which a share ``prevalence`` are siblings.  Their
deciding scores are drawn from the verified nearest-neighbour scores of the project's own real-item
benchmark scans (``benchmarks/data/verified_scores.json``, made by ``python -m
benchmarks.score_samples``: image tiles and digits under effnet + imagecorr, pydoc paragraphs and
docstrings under minilm + textalign, UCR series and digit rows under znorm + lagcorr), siblings from
the siblings' scores and the rest from the non-siblings', by a smoothed bootstrap (a resampled score
plus a little Gaussian noise, kept at or below 1).  The data sets cycle through image, text and
series score sets.  The candidate range starts at the 99th percentile of that set's random-pair
scores, as in a scan.

Labelling is what ``sibscan calibrate`` does: the first 12 pairs by the prior allocation (a few from
below the candidate range), then each next pair adaptively where the rate's interval shrinks most
(:func:`sibscan.calibration.sampling.extend_draw` with the estimator's uncertainty), in steps of
``--step`` pairs (1 = after every answer, as the labelling pages; larger steps only to save time).
The labeller answers wrong 3 % of the time.  The 95 % interval of
:func:`sibscan.verdict.rate.estimate_rate` is read at 60 and at 100 labels.

Reference, measured in the same run on the same data sets and the same fallible answers: the
estimator before this version ("today's": 60 pairs drawn by the prior allocation from the candidate
range only, a design-weighted stratified posterior that takes every pair below the range as
unrelated), and its 0.098 mean width at 60 labels on the old 1,000 x 500 planted benchmark.
"""
from __future__ import annotations

import argparse
import time
from typing import Dict, List

import numpy as np

from benchmarks._common import print_table, write_results
from benchmarks.score_samples import load as load_scores

PREVALENCES = (0.005, 0.03, 0.12)
#: 100 data sets per size and prevalence: 200 per prevalence over the two sizes
DEFAULT = {"datasets": 100, "sizes": (2000, 10000), "step": 5, "adaptive_runs": 60}
QUICK = {"datasets": 2, "sizes": (300,), "step": 20, "adaptive_runs": 1}
LABELLER_ERROR = 0.03
TODAY_WIDTH = 0.098  # benchmarks/results/calibration_coverage.json before this version, 1,000 x 500, 60 labels
SEED_PAIRS = 12


def _score_sets() -> Dict[str, List[dict]]:
    """The score sets grouped by modality: {"image": [...], "text": [...], "series": [...]}."""
    sets = load_scores()["sets"]
    out: Dict[str, List[dict]] = {"image": [], "text": [], "series": []}
    for name, s in sorted(sets.items()):
        kind = "series" if s["modality"] == "table" else s["modality"]
        out[kind].append({"name": name, **{k: np.asarray(s[k], np.float64) for k in ("sibling", "other", "random")}})
    return out


def _smoothed(sample: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of a smoothed bootstrap of ``sample``: a resampled value plus Gaussian noise with
    half of Silverman's bandwidth, reflected below 1 (scores do not exceed 1)."""
    sd = min(float(np.std(sample)), float(np.subtract(*np.quantile(sample, [0.75, 0.25]))) / 1.34) or float(np.std(sample))
    h = 0.5 * 0.9 * max(sd, 1e-4) * len(sample) ** -0.2
    x = rng.choice(sample, size=n) + rng.normal(0.0, h, size=n)
    return np.where(x > 1.0, 2.0 - x, x)


def make_dataset(sets: dict, kind: str, j: int, n: int, prevalence: float, rng: np.random.Generator) -> dict:
    s = sets[kind][j % len(sets[kind])]
    n_sib = int(round(prevalence * n))
    truth = np.zeros(n, bool)
    truth[rng.choice(n, n_sib, replace=False)] = True
    score = np.empty(n)
    score[truth] = _smoothed(s["sibling"], n_sib, rng)
    score[~truth] = _smoothed(s["other"], n - n_sib, rng)
    return {"set": s["name"], "score": score, "truth": truth, "lo": float(np.quantile(s["random"], 0.99))}


def _population(score: np.ndarray):
    from sibscan.calibration.sampling import Population

    n = len(score)
    ids = np.array([f"i{i}" for i in range(n)])
    return Population(query_id=ids, neighbour_id=ids, query_index=np.arange(n), neighbour_index=np.arange(n),
                      score=score, exact=np.zeros(n, bool), score_kind="verified")


def label_adaptively(ds: dict, checkpoints, step: int, rng: np.random.Generator, seed: int) -> Dict[int, dict]:
    """Label as ``sibscan calibrate`` does, with a labeller wrong 3 % of the time; the estimate at each checkpoint."""
    from sibscan.calibration.sampling import extend_draw, make_draw
    from sibscan.verdict.rate import estimate_rate

    score, truth = ds["score"], ds["truth"]
    n = len(score)
    exact = np.zeros(n, bool)
    pop = _population(score)
    wrong = rng.random(n) < LABELLER_ERROR  # each item's answer, if asked: the truth, or wrong
    answer = truth ^ wrong
    draw = make_draw(pop, ds["lo"], min(SEED_PAIRS, checkpoints[0]), seed=seed)
    out = {}
    for target in checkpoints:
        while len(draw.rows) < target:
            rows = draw.rows
            est = estimate_rate(score, exact, rows, answer[rows], fast=True)
            extend_draw(draw, pop, min(step, target - len(rows)), labels_by_row={int(r): "x" for r in rows},
                        p_same=est.p_same, curve_sd=est.curve_sd)
        rows = draw.rows[:target]
        est = estimate_rate(score, exact, rows, answer[rows])
        out[target] = {"lo": est.lo, "mid": est.estimate, "hi": est.hi, "n_below": int((score[rows] < ds["lo"]).sum()),
                       "wrong_answers": int(wrong[rows].sum())}
    return out


def today(ds: dict, n_labels: int, rng: np.random.Generator, seed: int) -> dict:
    """The estimator before this version, as a reference: prior-allocated stratified draw from the
    candidate range only, design-weighted Jeffreys posterior per stratum, pairs below the range taken
    as unrelated.  Same fallible labeller."""
    from sibscan.calibration.sampling import _prior_uncertainty, allocate

    score, truth = ds["score"], ds["truth"]
    n = len(score)
    lo = min(ds["lo"], 1 - 1e-6)
    K = int(np.clip(n_labels // 6, 3, 10))
    edges = np.linspace(lo, max(1.0, score.max()) + 1e-6, K + 1)
    h = np.where(score < lo, -1, np.clip(np.searchsorted(edges, score, side="right") - 1, 0, K - 1))
    N_h = np.bincount(h[h >= 0], minlength=K)
    take = allocate(N_h, np.sqrt(N_h) * _prior_uncertainty(edges, lo), n_labels)
    r = np.random.default_rng([seed, 0])
    rows = np.concatenate([r.choice(np.flatnonzero(h == k), int(take[k]), replace=False) for k in np.flatnonzero(take)] or [np.zeros(0, int)])
    answer = truth[rows] ^ (rng.random(len(rows)) < LABELLER_ERROR)
    hs = h[rows]
    n_h = np.bincount(hs, minlength=K).astype(float)
    a_h = np.bincount(hs, weights=answer.astype(float), minlength=K)
    mid = float((N_h * np.where(n_h > 0, a_h / np.maximum(n_h, 1), 0.5)).sum())
    theta = r.beta(a_h + 0.5, n_h - a_h + 0.5, size=(4000, K))
    totals = (a_h + r.binomial(np.maximum(N_h - n_h, 0).astype(np.int64), theta)).sum(axis=1)
    lo_c, hi_c = np.quantile(totals, [0.025, 0.975])
    return {"lo": min(float(lo_c), mid) / n, "mid": mid / n, "hi": max(float(hi_c), mid) / n}


KINDS = ("image", "text", "series")


def run(datasets: int, sizes, step: int, adaptive_runs: int, seed: int = 0, kinds=KINDS, prevalences=PREVALENCES) -> dict:
    """The coverage runs: at each size and prevalence, ``datasets`` data sets cycling through ``kinds``
    (a subset of kinds or prevalences is for iterating quickly; the results quoted use all)."""
    sets = _score_sets()
    runs = []
    t0 = time.perf_counter()
    for n in sizes:
        for prev in prevalences:
            for d in range(datasets):
                rng = np.random.default_rng([seed, n, int(prev * 1e4), d])
                kind = kinds[d % len(kinds)]
                ds = make_dataset(sets, kind, d // len(kinds), n, prev, rng)
                truth = float(ds["truth"].mean())
                res = label_adaptively(ds, (60, 100), step, rng, seed=d)
                ref = today(ds, 60, rng, seed=d)
                row = {"n": n, "prevalence": prev, "kind": kind, "set": ds["set"], "true": truth,
                       "today_60": {**ref, "covered": ref["lo"] <= truth <= ref["hi"]}}
                for k, v in res.items():
                    row[f"new_{k}"] = {**v, "covered": v["lo"] <= truth <= v["hi"]}
                runs.append(row)
            print(f"  n={n:,} prevalence {prev:.1%}: {datasets} data sets, {time.perf_counter() - t0:.0f} s", flush=True)
    # strictly adaptive (a new estimate after every answer), as the labelling pages do: 2,000 items at 1 %
    adaptive = []
    for d in range(adaptive_runs):
        rng = np.random.default_rng([seed, 99, d])
        kind = kinds[d % len(kinds)]
        ds = make_dataset(sets, kind, d // len(kinds), 2000 if adaptive_runs > 10 else min(sizes), 0.01, rng)
        res = label_adaptively(ds, (100,), 1, rng, seed=d)[100]
        truth = float(ds["truth"].mean())
        adaptive.append({"kind": kind, "set": ds["set"], "true": truth, **res, "covered": res["lo"] <= truth <= res["hi"],
                         "half_width": (res["hi"] - res["lo"]) / 2})
    print(f"  adaptive, 100 labels, 1 %: {adaptive_runs} data sets, {time.perf_counter() - t0:.0f} s", flush=True)
    return {"runs": runs, "adaptive": adaptive, "seconds": time.perf_counter() - t0}


def summarise(result: dict) -> dict:
    runs = result["runs"]
    rows = []
    for n in sorted({r["n"] for r in runs}):
        for prev in sorted({r["prevalence"] for r in runs}):
            sel = [r for r in runs if r["n"] == n and r["prevalence"] == prev]
            if not sel:
                continue
            row = {"n": n, "prevalence": prev, "datasets": len(sel)}
            for key, label in (("new_60", "60"), ("new_100", "100"), ("today_60", "today 60")):
                row[f"coverage {label}"] = float(np.mean([r[key]["covered"] for r in sel]))
                row[f"width {label}"] = float(np.mean([r[key]["hi"] - r[key]["lo"] for r in sel]))
            rows.append(row)
    per_kind = []
    for kind in KINDS:
        sel = [r for r in runs if r["kind"] == kind]
        if sel:
            per_kind.append({"kind": kind, "datasets": len(sel),
                             "coverage 60": float(np.mean([r["new_60"]["covered"] for r in sel])),
                             "coverage 100": float(np.mean([r["new_100"]["covered"] for r in sel])),
                             "today coverage 60": float(np.mean([r["today_60"]["covered"] for r in sel]))})
    ad = result["adaptive"]
    width60 = float(np.mean([r["new_60"]["hi"] - r["new_60"]["lo"] for r in runs]))
    width100 = float(np.mean([r["new_100"]["hi"] - r["new_100"]["lo"] for r in runs]))
    today60 = float(np.mean([r["today_60"]["hi"] - r["today_60"]["lo"] for r in runs]))
    return {
        "by_size_and_prevalence": rows, "by_kind": per_kind,
        "coverage_min_60": min(r["coverage 60"] for r in rows), "coverage_min_100": min(r["coverage 100"] for r in rows),
        "mean_width_60": width60, "mean_width_100": width100, "today_mean_width_60_same_run": today60,
        "width_60_vs_today_same_run": width60 / today60 if today60 else None,
        "width_60_vs_today_0.098": width60 / TODAY_WIDTH,
        "adaptive_100_at_1pct_median_half_width": float(np.median([r["half_width"] for r in ad])) if ad else None,
        "adaptive_100_at_1pct_coverage": float(np.mean([r["covered"] for r in ad])) if ad else None,
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.calibration_coverage", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few tiny data sets (for the tests)")
    ap.add_argument("--datasets", type=int, default=None, help=f"data sets per size and prevalence (default {DEFAULT['datasets']}: 200 per prevalence)")
    ap.add_argument("--sizes", default=None, help="comma list of test-set sizes (default 2000,10000)")
    ap.add_argument("--step", type=int, default=None, help="pairs added per adaptive step in the coverage runs (default 5)")
    ap.add_argument("--adaptive-runs", type=int, default=None, help="data sets of 2,000 items at 1 %% labelled strictly adaptively (default 60)")
    ap.add_argument("--kinds", default=None, help=f"comma list of score kinds (default all: {','.join(KINDS)}); a subset to iterate")
    ap.add_argument("--prevalences", default=None, help="comma list of prevalences as fractions (default 0.005,0.03,0.12)")
    ap.add_argument("--name", default="calibration_coverage", help="results file stem")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else DEFAULT)
    if args.datasets is not None:
        cfg["datasets"] = args.datasets
    if args.sizes:
        cfg["sizes"] = tuple(int(x) for x in args.sizes.split(","))
    if args.step is not None:
        cfg["step"] = args.step
    if args.adaptive_runs is not None:
        cfg["adaptive_runs"] = args.adaptive_runs
    kinds = tuple(args.kinds.split(",")) if args.kinds else KINDS
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        ap.error(f"unknown kind {', '.join(unknown)}; available: {', '.join(KINDS)}")
    prevalences = tuple(float(x) for x in args.prevalences.split(",")) if args.prevalences else PREVALENCES
    cfg.update(kinds=list(kinds), prevalences=list(prevalences))
    print(f"{cfg['datasets']} data sets per size and prevalence, sizes {cfg['sizes']}, prevalences {prevalences}, "
          f"kinds {kinds}, labeller wrong {LABELLER_ERROR:.0%} of the time, adaptive step {cfg['step']}", flush=True)
    result = run(cfg["datasets"], cfg["sizes"], cfg["step"], cfg["adaptive_runs"], kinds=kinds, prevalences=prevalences)
    summary = summarise(result)
    print_table(summary["by_size_and_prevalence"])
    print_table(summary["by_kind"])
    for k, v in summary.items():
        if not isinstance(v, list):
            print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}")
    path = write_results(args.name, {"quick": args.quick, "config": {**cfg, "sizes": list(cfg["sizes"])},
                                     "labeller_error": LABELLER_ERROR, "prevalences": list(prevalences),
                                     "seconds": result["seconds"], "summary": summary, "runs": result["runs"],
                                     "adaptive": result["adaptive"]})
    print(f"written: {path} ({result['seconds']:.0f} s)")
    return summary


if __name__ == "__main__":
    main()
