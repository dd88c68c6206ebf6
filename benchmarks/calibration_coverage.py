"""Coverage and width of the sibling-rate interval, on scores of real items and a fallible labeller.

    python -m benchmarks.calibration_coverage            # the default run (see DEFAULT below)
    python -m benchmarks.calibration_coverage --quick    # tiny, for the tests
    python -m benchmarks.calibration_coverage --kinds image --prevalences 0.12 --sizes 10000 \
        --datasets 16 --control-datasets 0 --name scratch   # a subset, to iterate on the estimator

Each simulated data set has ``n`` test items of which a share ``prevalence`` are siblings.  Their
deciding scores are drawn from the verified nearest-neighbour scores of the project's own real-item
benchmark scans (``benchmarks/data/verified_scores.json``, made by ``python -m
benchmarks.score_samples``: image tiles and digits under effnet + imagecorr, pydoc paragraphs and
docstrings under minilm + textalign, UCR series and digit rows under znorm + lagcorr), siblings from
the siblings' scores and the rest from the non-siblings', by a smoothed bootstrap (a resampled score
plus a little Gaussian noise, kept at or below 1).  Every cell is kind (image, text, series) x test
size x prevalence.  The candidate range starts at the 99th percentile of that set's random-pair
scores, as in a scan.

Labelling is what ``sibscan calibrate`` does: the first 12 pairs by the prior allocation over the
estimator's strata, then each next pair adaptively where the rate's interval shrinks most
(:func:`sibscan.calibration.sampling.extend_draw` with the estimator's uncertainty), in steps of
``--step`` pairs (1 = after every answer, as the labelling pages; larger steps only to save time).
The labeller answers wrong 3 % of the time.  The 95 % interval of
:func:`sibscan.verdict.rate.estimate_rate` is read at each checkpoint, with the cutoff calibrate fits
from the answers (:func:`sibscan.calibration.fit.find_cutoff`), and "labels needed" is the first
checkpoint whose half width is at most max(1 pp, 25 % of the true rate) (issue 30's target).  The
control runs spend 10 % of the answers on control pairs (half known "same", half known "different",
answered by the same fallible labeller) and pass them to the estimator.
"""
from __future__ import annotations

import argparse
import time
from typing import Dict, List

import numpy as np

from benchmarks._common import keyed_runs, print_table, write_run
from benchmarks.score_samples import load as load_scores

PREVALENCES = (0.005, 0.03, 0.12)
#: 100 data sets per size and prevalence: 200 per prevalence over the two sizes
DEFAULT = {"datasets": 16, "sizes": (2000, 10000), "step": 10, "checkpoints": (60, 100, 150, 200, 300, 400),
           "control_datasets": 8}
QUICK = {"datasets": 1, "sizes": (300,), "step": 20, "checkpoints": (30, 60), "control_datasets": 1}
LABELLER_ERROR = 0.03
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


def label_adaptively(ds: dict, checkpoints, step: int, rng: np.random.Generator, seed: int,
                     control_share: float = 0.0, keep_rows: bool = False, oracle: bool = False) -> Dict[int, dict]:
    """Label as ``sibscan calibrate`` does, with a labeller wrong 3 % of the time; the estimate at each
    checkpoint (total answers).  With ``control_share``, that share of the answers goes to control
    pairs (half known "same", half known "different", answered by the same fallible labeller) and the
    estimate reads them (:class:`sibscan.stats.ControlAnswers`).  ``keep_rows``: each checkpoint's
    ``rows`` and ``answers`` too (:mod:`benchmarks.width_forecast` forecasts from them).  ``oracle``: the
    labeller is never wrong and the estimator is told so (its answers are an oracle's: ``trusted``), the
    best any labelling can do."""
    from sibscan.calibration.fit import find_cutoff, fit_curve
    from sibscan.calibration.sampling import extend_draw, make_draw
    from sibscan.stats import ControlAnswers
    from sibscan.verdict.rate import estimate_rate

    score, truth = ds["score"], ds["truth"]
    n = len(score)
    exact = np.zeros(n, bool)
    pop = _population(score)
    error = 0.0 if oracle else LABELLER_ERROR
    wrong = rng.random(n) < error  # each item's answer, if asked: the truth, or wrong
    answer = truth ^ wrong
    top = max(checkpoints)
    ctrl_wrong = rng.random((2, top)) < error  # [known same, known different] answers, in order
    pairs_at = {t: t - int(round(control_share * t)) for t in checkpoints}
    draw = make_draw(pop, ds["lo"], min(SEED_PAIRS, pairs_at[checkpoints[0]]), seed=seed)
    out = {}
    for total in checkpoints:
        target = pairs_at[total]
        while len(draw.rows) < target:
            rows = draw.rows
            est = estimate_rate(score, exact, rows, answer[rows], fast=True, trusted=np.full(len(rows), oracle))
            extend_draw(draw, pop, min(step, target - len(rows)), labels_by_row={int(r): "x" for r in rows},
                        p_same=est.p_same, curve_sd=est.curve_sd)
        rows = draw.rows[:target]
        n_ctrl = total - target
        controls = None
        if n_ctrl:
            ns, nd = n_ctrl // 2, n_ctrl - n_ctrl // 2
            controls = ControlAnswers(n_same=ns, same_answered_same=int(ns - ctrl_wrong[0, :ns].sum()),
                                      n_different=nd, different_answered_same=int(ctrl_wrong[1, :nd].sum()))
        # the cutoff calibrate fits from these answers: answered "same" at or above it are the floor
        cutoff = find_cutoff(fit_curve(score[rows], answer[rows]))
        est = estimate_rate(score, exact, rows, answer[rows], cutoff=cutoff, controls=controls,
                            trusted=np.full(len(rows), oracle))
        out[total] = {"lo": est.lo, "mid": est.estimate, "hi": est.hi, "n_below": int((score[rows] < ds["lo"]).sum()),
                      "wrong_answers": int(wrong[rows].sum()), "controls": n_ctrl}
        if keep_rows:
            out[total].update(rows=np.array(rows), answers=answer[rows])
    return out


KINDS = ("image", "text", "series")


def half_width_target(rate: float) -> float:
    """The half width a rate's interval should reach: max(1 pp, 25 % of the rate) (issue 30)."""
    return max(0.01, 0.25 * rate)


def _one(job: tuple) -> dict:
    """One simulated data set (a pool worker's unit)."""
    seed, n, prev, d, kind, checkpoints, step, control_share, oracle = job
    sets = _score_sets()
    rng = np.random.default_rng([seed, n, int(prev * 1e4), d, int(control_share * 100)])
    ds = make_dataset(sets, kind, d, n, prev, rng)
    truth = float(ds["truth"].mean())
    res = label_adaptively(ds, checkpoints, step, rng, seed=d, control_share=control_share, oracle=oracle)
    row = {"n": n, "prevalence": prev, "kind": kind, "set": ds["set"], "true": truth, "control_share": control_share}
    target = half_width_target(truth)
    needed = None
    for k in sorted(res):
        v = res[k]
        row[f"at_{k}"] = {**v, "covered": v["lo"] <= truth <= v["hi"]}
        if needed is None and (v["hi"] - v["lo"]) / 2 <= target:
            needed = k
    row["labels_needed"] = needed  # None: not reached by the last checkpoint
    return row


def run(datasets: int, sizes, step: int, checkpoints, seed: int = 0, kinds=KINDS, prevalences=PREVALENCES,
        control_datasets: int = 0, control_share: float = 0.1, workers: int = 2, oracle: bool = False) -> dict:
    """The coverage runs: ``datasets`` data sets per kind, size and prevalence (each its own draw of
    a score set of that kind), and ``control_datasets`` more per kind and prevalence at the smallest
    size with ``control_share`` of the answers on control pairs; ``oracle``: an error-free labeller."""
    from multiprocessing import Pool

    jobs = [(seed, n, prev, d, kind, tuple(checkpoints), step, 0.0, oracle)
            for n in sizes for prev in prevalences for kind in kinds for d in range(datasets)]
    jobs += [(seed, min(sizes), prev, d, kind, tuple(checkpoints), step, control_share, oracle)
             for prev in prevalences for kind in kinds for d in range(control_datasets)]
    t0 = time.perf_counter()
    runs = []
    pool = Pool(workers) if workers > 1 else None
    try:
        rows = pool.imap_unordered(_one, jobs, chunksize=1) if pool else map(_one, jobs)
        for i, row in enumerate(rows):
            runs.append(row)
            if (i + 1) % 50 == 0 or i + 1 == len(jobs):
                print(f"  {i + 1} of {len(jobs)} data sets, {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        if pool:
            pool.close()
            pool.join()
    return {"runs": runs, "seconds": time.perf_counter() - t0}


def _binomial_se(p: float, k: int) -> float:
    return float(np.sqrt(p * (1 - p) / k)) if k else float("nan")


def summarise(result: dict, checkpoints) -> dict:
    runs = result["runs"]
    cells = []
    for share in sorted({r["control_share"] for r in runs}):
        for kind in KINDS:
            for n in sorted({r["n"] for r in runs}):
                for prev in sorted({r["prevalence"] for r in runs}):
                    sel = [r for r in runs if r["kind"] == kind and r["n"] == n and r["prevalence"] == prev
                           and r["control_share"] == share]
                    if not sel:
                        continue
                    row = {"kind": kind, "n": n, "prevalence": prev, "controls": share, "datasets": len(sel)}
                    for k in checkpoints:
                        cov = float(np.mean([r[f"at_{k}"]["covered"] for r in sel]))
                        row[f"cov {k}"] = cov
                        row[f"se {k}"] = _binomial_se(cov, len(sel))
                        row[f"width {k}"] = float(np.mean([r[f"at_{k}"]["hi"] - r[f"at_{k}"]["lo"] for r in sel]))
                    needed = [r["labels_needed"] if r["labels_needed"] is not None else np.inf for r in sel]
                    med = float(np.median(needed))
                    row["labels needed (median)"] = med if np.isfinite(med) else f"> {max(checkpoints)}"
                    cells.append(row)
    main_cells = [c for c in cells if c["controls"] == 0]
    by_kind = {}
    for kind in KINDS:
        needed = [r["labels_needed"] if r["labels_needed"] is not None else np.inf
                  for r in runs if r["kind"] == kind and r["control_share"] == 0]
        if needed:
            med = float(np.median(needed))
            by_kind[kind] = med if np.isfinite(med) else f"> {max(checkpoints)}"
    return {"cells": cells,
            "coverage_min": {str(k): min(c[f"cov {k}"] for c in main_cells) for k in checkpoints} if main_cells else {},
            "cells_below_0.93": {str(k): [f"{c['kind']} n={c['n']} {c['prevalence']:.1%}: {c[f'cov {k}']:.2f}"
                                          for c in main_cells if c[f"cov {k}"] < 0.93] for k in checkpoints},
            "labels_needed_median_by_kind": by_kind}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.calibration_coverage", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few tiny data sets (for the tests)")
    ap.add_argument("--datasets", type=int, default=None, help="data sets per kind, size and prevalence "
                                                               f"(default {DEFAULT['datasets']})")
    ap.add_argument("--sizes", default=None, help="comma list of test-set sizes (default 2000,10000)")
    ap.add_argument("--step", type=int, default=None, help=f"pairs added per adaptive step (default {DEFAULT['step']})")
    ap.add_argument("--checkpoints", default=None, help="comma list of answer counts the interval "
                                                        "is read at (default 60,100,150,200,300,400)")
    ap.add_argument("--control-datasets", type=int, default=None, help="data sets per kind and prevalence with "
                                                                       "10 %% of the answers on control pairs")
    ap.add_argument("--kinds", default=None, help="comma list of score kinds (default all: "
                                                  f"{','.join(KINDS)}); a subset to iterate")
    ap.add_argument("--prevalences", default=None, help="comma list of prevalences as "
                                                        "fractions (default 0.005,0.03,0.12)")
    ap.add_argument("--workers", type=int, default=None, help="processes (default 2; 1 with --quick)")
    ap.add_argument("--oracle", action="store_true", help="an error-free labeller whose answers the estimator is told "
                    "are right (an oracle's): the best any labelling can do (the run 'oracle' of the results file; "
                    "without it, the run 'labeller_error')")
    ap.add_argument("--name", default=None, help="results file stem (default calibration_coverage)")
    args = ap.parse_args(argv)
    keyed_runs(args.name or "calibration_coverage")  # a file of another form is refused before the work
    cfg = dict(QUICK if args.quick else DEFAULT)
    for key in ("datasets", "step", "control_datasets"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    if args.sizes:
        cfg["sizes"] = tuple(int(x) for x in args.sizes.split(","))
    if args.checkpoints:
        cfg["checkpoints"] = tuple(int(x) for x in args.checkpoints.split(","))
    kinds = tuple(args.kinds.split(",")) if args.kinds else KINDS
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        ap.error(f"unknown kind {', '.join(unknown)}; available: {', '.join(KINDS)}")
    prevalences = tuple(float(x) for x in args.prevalences.split(",")) if args.prevalences else PREVALENCES
    cfg.update(kinds=list(kinds), prevalences=list(prevalences))
    print(f"{cfg['datasets']} data sets per kind, size and prevalence, sizes {cfg['sizes']}, prevalences {prevalences}, "
          f"kinds {kinds}, " + ("an oracle labeller (never wrong, and trusted)" if args.oracle else
                                f"labeller wrong {LABELLER_ERROR:.0%} of the time") + f", adaptive step {cfg['step']}, "
          f"read at {cfg['checkpoints']} answers", flush=True)
    result = run(cfg["datasets"], cfg["sizes"], cfg["step"], cfg["checkpoints"], kinds=kinds, prevalences=prevalences,
                 control_datasets=cfg["control_datasets"], oracle=args.oracle,
                 workers=args.workers if args.workers is not None else (1 if args.quick else 2))
    summary = summarise(result, cfg["checkpoints"])
    print_table(summary["cells"])
    for k, v in summary.items():
        if k != "cells":
            print(f"{k}: {v}")
    key = "oracle" if args.oracle else "labeller_error"  # the two labellers: runs of one results file
    path = write_run(args.name or "calibration_coverage", key, {
        "quick": args.quick, "config": {**cfg, "sizes": list(cfg["sizes"]), "checkpoints": list(cfg["checkpoints"])},
        "labeller_error": 0.0 if args.oracle else LABELLER_ERROR, "oracle": args.oracle, "seconds": result["seconds"],
        "summary": summary, "datasets": result["runs"]})
    print(f"written: {path} ({result['seconds']:.0f} s)")
    return summary


if __name__ == "__main__":
    main()
