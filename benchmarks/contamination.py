"""Contamination benchmark.

Parts (``--parts``, all by default):

* ``index`` -> ``results/contamination_index.json``: index build rate (n-grams/s), bytes per stored
  n-gram against a Python set of the same hashes (measured with tracemalloc in the same run),
  query rate — each for the flat shard layout of format v2 (before) and the bucketed one of
  format v3 (after, the default; the headline ``build`` and ``query``), built in turn from the same
  corpus in the same run, their answers checked identical — and peak RSS of a fresh process building the index of a
  streamed corpus of 1x … 16x a base size at a fixed shard size.
* ``synthetic`` -> ``results/contamination_synthetic.json``: planted benchmarks (phrase-pool texts,
  verbatim / partial / paraphrased leaks) over seeds: AUC per leak type, recall and FPR at the
  defaults; and a prevalence sweep (10,000 examples at 1 % contamination) with flagged, real,
  false, missed and precision per setting.  The defaults are the library's, not tuned here.
* ``lm`` -> ``results/contamination_lm.json``: Min-K%++ tokens/s against the bare forward pass of
  the same model in the same run (SmolLM2-135M GGUF; ``--quick``: a tiny random model): every
  batch timed by both back to back, ``--lm-repeats`` passes (3), the ratio the median of the
  pairs' ratios (robust to the machine's load changing mid-run; each pair is kept), and
  membership AUC of Min-K%, Min-K%++ and perplexity for a small GPT-2 trained here on half of a
  public text (members) and scored on the other half (non-members).

Run ``python -m benchmarks.contamination [--quick] [--parts index,synthetic,lm] [--lm-parts throughput] [--lm-repeats N]``.
``--lm-parts`` re-measures only some of the lm part; the other keys of ``contamination_lm.json`` are
kept, each with the ``command`` and ``created`` of the run that measured it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Dict, Sequence

import numpy as np

from . import _common
from .contamination_data import LEAK_TYPES, plant, random_docs

PARTS = ("index", "synthetic", "lm")


def _rss_child(multiple: int, base_docs: int, doc_words: int, shard_size: int, out: str) -> None:
    """Body of the peak-RSS subprocess: stream a corpus of ``multiple`` x base and index it."""
    import resource

    from sibscan.contamination import build_index

    t0 = time.perf_counter()
    idx = build_index(random_docs(multiple, multiple * base_docs, doc_words), out, n=13, shard_size=shard_size,
                      progress=False)
    secs = time.perf_counter() - t0
    print(json.dumps({"multiple": multiple, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "n_ngrams": idx.manifest["n_ngrams"], "n_stored": idx.n_stored,
                      "shards": len(idx.manifest["shards"]), "seconds": secs}))


def bench_index(quick: bool) -> dict:
    from sibscan.contamination import build_index
    from sibscan.contamination.overlap import overlap_with_sources
    from sibscan.kernels.ngramhash import batch_word_ids, ngram_hashes

    n_docs, doc_words = (2_000, 250) if quick else (8_000, 250)
    res: Dict[str, object] = {"n": 13, "corpus_docs": n_docs, "doc_words": doc_words,
                              "loadavg_1_5_15_before": list(os.getloadavg())}
    docs = list(random_docs(0, n_docs, doc_words))
    n_q = 1_000 if quick else 10_000
    rng = np.random.default_rng(1)
    queries = [" ".join(docs[int(rng.integers(n_docs))].split()[:60]) if i % 10 == 0 else
               next(random_docs(100 + i, 1, 60)) for i in range(n_q)]
    ids, off = batch_word_ids(queries)
    query_hashes, _ = ngram_hashes(ids, off, 13)
    # before (flat, format v2) and after (bucketed, format v3) on the same corpus and queries, in turn
    layouts: Dict[str, dict] = {}
    answers = {}
    with tempfile.TemporaryDirectory() as tmp:
        for layout in ("flat", "bucketed"):
            t0 = time.perf_counter()
            idx = build_index(docs, Path(tmp) / layout, n=13, shard_size=1 << 20, progress=False, layout=layout)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = overlap_with_sources(queries, {"c": idx})
            q = time.perf_counter() - t0
            t0 = time.perf_counter()
            idx.lookup(query_hashes)
            lk = time.perf_counter() - t0
            answers[layout] = [o.per_source for o in out]
            n_grams = sum(o.n_ngrams for o in out)
            layouts[layout] = {
                "format": idx.manifest["format"],
                "build": {"seconds": build, "n_ngrams": idx.manifest["n_ngrams"], "n_stored": idx.n_stored,
                          "ngrams_per_s": idx.manifest["n_ngrams"] / build, "shards": len(idx.manifest["shards"]),
                          "stored_bytes": idx.stored_bytes(),
                          "bytes_per_stored_ngram": idx.stored_bytes() / idx.n_stored},
                "query": {"examples": n_q, "ngrams": n_grams, "seconds": q, "ngrams_per_s": n_grams / q,
                          "examples_per_s": n_q / q,
                          "lookup_only_ngrams_per_s": len(query_hashes) / lk}}
    if answers["flat"] != answers["bucketed"]:
        raise RuntimeError("the flat and bucketed layouts answered the queries differently")
    res["layouts"] = layouts
    res["layouts_identical_answers"] = True
    res["build"], res["query"] = layouts["bucketed"]["build"], layouts["bucketed"]["query"]
    # the reference: a Python set of the same 64-bit hashes, 400k of them
    ids, off = batch_word_ids(docs[:2000])
    h, _ = ngram_hashes(ids, off, 13)
    first = h[:400_000]
    tracemalloc.start()
    s = set(int(x) for x in first)
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    res["python_set_reference"] = {"n": len(s), "mb": size / 2**20, "bytes_per_ngram": size / len(s),
                                   "note": "set of Python ints (int objects + set table), tracemalloc"}
    del s
    # peak RSS of a fresh process: corpus grows 1x..16x at a fixed shard size
    base, shard = (300, 1 << 16) if quick else (2_000, 1 << 18)
    multiples = (1, 4) if quick else (1, 2, 4, 8, 16)
    rows = []
    repo = Path(__file__).resolve().parent.parent
    for mult in multiples:
        with tempfile.TemporaryDirectory() as tmp:
            code = (f"from benchmarks.contamination import _rss_child; "
                    f"_rss_child({mult}, {base}, 250, {shard}, {str(Path(tmp) / 'idx')!r})")
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo, check=True)
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    res["rss"] = {"base_docs": base, "doc_words": 250, "shard_size": shard, "rows": rows}
    res["loadavg_1_5_15_after"] = list(os.getloadavg())
    return res


def _metrics(result, kind: np.ndarray) -> dict:
    from sibscan.contamination.combine import auc

    recs = result.to_dict()["examples"]
    over = np.array([np.nan if r["overlap_fraction"] is None else r["overlap_fraction"] for r in recs])
    run = np.array([np.nan if r["longest_match_tokens"] is None else r["longest_match_tokens"] for r in recs])
    z = np.array([np.nan if r["z"] is None else r["z"] for r in recs])
    flag = np.array([bool(r["flagged"]) for r in recs])
    clean = kind == "clean"
    out = {"fpr": float(flag[clean].mean())}
    for lt in LEAK_TYPES:
        sel = (kind == lt) | clean
        y = kind[sel] == lt
        if not y.any():
            continue
        out[lt] = {"auc_overlap": auc(over[sel], y), "auc_run": auc(run[sel], y), "auc_z": auc(z[sel], y),
                   "recall": float(flag[kind == lt].mean())}
    return out


def bench_synthetic(quick: bool, seeds: int) -> dict:
    from sibscan.contamination import ContaminationConfig, audit
    from sibscan.contamination.overlap import overlap_with_sources
    from sibscan.contamination import build_index

    sizes = dict(n_docs=1500, doc_words=200, n_clean=150, n_leaks={k: 10 for k in LEAK_TYPES}, example_words=60) \
        if quick else dict(n_docs=3000, doc_words=200, n_clean=300, n_leaks={k: 20 for k in LEAK_TYPES},
                           example_words=60)
    per_seed = []
    clean_n5 = []
    for seed in range(seeds):
        p = plant(seed, **sizes)
        r = audit(p.examples(), corpus=p.corpus, progress=False)
        per_seed.append(_metrics(r, p.kind))
        if seed == 0:  # how hard the negatives are: clean examples' overlap at n = 5
            with tempfile.TemporaryDirectory() as tmp:
                idx5 = build_index(p.corpus, tmp, n=5, progress=False)
                clean = [t for t, k in zip(p.example_texts, p.kind) if k == "clean"]
                clean_n5 = [o.per_source["c"].overlap_fraction for o in overlap_with_sources(clean, {"c": idx5})]
    agg: Dict[str, object] = {"fpr": _mean_sd([m["fpr"] for m in per_seed])}
    for lt in LEAK_TYPES:
        agg[lt] = {k: _mean_sd([m[lt][k] for m in per_seed]) for k in ("auc_overlap", "auc_run", "auc_z", "recall")}
    res: Dict[str, object] = {"sizes": sizes, "seeds": seeds, "per_seed": per_seed, "mean_sd": agg,
                              "clean_overlap_n5": {"mean": float(np.mean(clean_n5)),
                                                   "p10": float(np.percentile(clean_n5, 10))},
                              "defaults": ContaminationConfig().to_dict()}
    # prevalence sweep: 1 % of the examples leaked
    n_ex = 2_000 if quick else 10_000
    n_leak = n_ex // 100
    split = {k: n_leak // 3 + (1 if i < n_leak % 3 else 0) for i, k in enumerate(LEAK_TYPES)}
    p = plant(1000, n_docs=1000 if quick else 5000, doc_words=200, n_clean=n_ex - n_leak, n_leaks=split,
              example_words=60, n_controls=300)
    settings = [("n=13 (defaults)", ContaminationConfig(), None), ("n=8", ContaminationConfig(n=8), None),
                ("n=13, 300 controls", ContaminationConfig(), {"corpus": p.controls})]
    rows = []
    leaked = p.kind != "clean"
    for name, cfg, controls in settings:
        t0 = time.perf_counter()
        r = audit(p.examples(), corpus=p.corpus, controls=controls, config=cfg, progress=False)
        flag = np.array([bool(f) for f in r.flagged])
        tp, fp = int((flag & leaked).sum()), int((flag & ~leaked).sum())
        rows.append({"setting": name, "examples": n_ex, "real": int(leaked.sum()), "flagged": int(flag.sum()),
                     "true": tp, "false": fp, "missed": int((~flag & leaked).sum()),
                     "precision": (tp / flag.sum()) if flag.sum() else None, "recall": tp / leaked.sum(),
                     "seconds": time.perf_counter() - t0,
                     "recall_by_type": {k: float(flag[p.kind == k].mean()) for k in LEAK_TYPES}})
    res["prevalence_sweep"] = {"prevalence": n_leak / n_ex, "rows": rows}
    return res


def _mean_sd(xs: Sequence) -> dict:
    a = np.array([np.nan if x is None else x for x in xs], np.float64)
    return {"mean": float(np.nanmean(a)), "sd": float(np.nanstd(a))}


LM_PARTS = ("throughput", "membership")


def bench_lm(quick: bool, lm_parts: Sequence[str] = LM_PARTS, repeats: int | None = None) -> dict:
    from .contamination_lm import membership_auc, throughput

    fns = {"throughput": lambda q: throughput(q, repeats), "membership": membership_auc}
    return {k: fns[k](quick) for k in lm_parts}


def _keep_other_lm_parts(res: dict, lm_parts: Sequence[str], quick: bool) -> dict:
    """Merge a partial lm run into the existing results: the keys not re-run keep their values and
    say which run measured them."""
    old_path = _common.RESULTS / "contamination_lm.json"
    if not old_path.is_file():
        return res
    old = json.loads(old_path.read_text())
    if bool(old.get("quick")) != quick:
        return res
    for k in LM_PARTS:
        if k not in lm_parts and k in old:
            kept = dict(old[k])
            kept.setdefault("command", old.get("command"))
            kept.setdefault("created", old.get("created"))
            res[k] = kept
    return res


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (the test suite runs this)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma list of {', '.join(PARTS)}")
    ap.add_argument("--seeds", type=int, default=None, help="planted benchmarks per leak type (10; --quick 2)")
    ap.add_argument("--lm-parts", default=",".join(LM_PARTS), help="of the lm part: comma list "
                                                                   f"of {', '.join(LM_PARTS)}")
    ap.add_argument("--lm-repeats", type=int, default=None,
                    help="throughput: passes over the texts, each batch timed as a forward / Min-K%%++ pair (3)")
    args = ap.parse_args(argv)
    if args.lm_repeats is not None and args.lm_repeats < 1:
        ap.error("--lm-repeats must be >= 1")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTS]
    if bad:
        ap.error(f"unknown part(s) {', '.join(bad)}; available: {', '.join(PARTS)}")
    lm_parts = [p.strip() for p in args.lm_parts.split(",") if p.strip()]
    bad = [p for p in lm_parts if p not in LM_PARTS]
    if bad or not lm_parts:
        ap.error(f"unknown --lm-parts {', '.join(bad) or '(none)'}; available: {', '.join(LM_PARTS)}")
    seeds = args.seeds or (2 if args.quick else 10)
    out = {}
    command = "python -m benchmarks.contamination" + (" --quick" if args.quick else "") + f" --parts {','.join(parts)}"
    if "lm" in parts and tuple(lm_parts) != LM_PARTS:
        command += f" --lm-parts {','.join(lm_parts)}"
    if "lm" in parts and args.lm_repeats is not None:
        command += f" --lm-repeats {args.lm_repeats}"
    for part in parts:
        t0 = time.perf_counter()
        if part == "index":
            res = bench_index(args.quick)
        elif part == "synthetic":
            res = bench_synthetic(args.quick, seeds)
        else:
            res = bench_lm(args.quick, lm_parts, args.lm_repeats)
            for k in lm_parts:
                res[k]["command"] = command
                res[k]["created"] = time.strftime("%Y-%m-%dT%H:%M:%S")
            res = _keep_other_lm_parts(res, lm_parts, args.quick)
        res["command"] = command
        res["quick"] = args.quick
        res["seconds"] = time.perf_counter() - t0
        path = _common.write_results(f"contamination_{part}", res)
        print(f"{part}: {res['seconds']:.0f} s -> {path}", flush=True)
        out[part] = res
    _print_tables(out)
    return out


def _print_tables(out: dict) -> None:
    if "index" in out:
        r = out["index"]
        _common.print_table([{"layout": f"{name} ({x['format']})", "n-grams": x["build"]["n_ngrams"],
                              "build n-grams/s": x["build"]["ngrams_per_s"],
                              "bytes/stored n-gram": x["build"]["bytes_per_stored_ngram"],
                              "python set bytes/n-gram": r["python_set_reference"]["bytes_per_ngram"],
                              "query n-grams/s": x["query"]["ngrams_per_s"],
                              "lookup-only n-grams/s": x["query"]["lookup_only_ngrams_per_s"]}
                             for name, x in r["layouts"].items()])
        _common.print_table([{"corpus": f"{x['multiple']}x", "n-grams": x["n_ngrams"], "shards": x["shards"],
                              "peak RSS MB": x["peak_rss_mb"]} for x in r["rss"]["rows"]])
    if "synthetic" in out:
        r = out["synthetic"]
        _common.print_table([{"leak": lt,
                              **{k: f"{v['mean']:.3f} ± {v['sd']:.3f}" for k, v in r["mean_sd"][lt].items()}}
                             for lt in LEAK_TYPES])
        _common.print_table([{k: v for k, v in row.items() if k not in ("recall_by_type",)}
                             for row in r["prevalence_sweep"]["rows"]])
    if "lm" in out:
        if "throughput" in out["lm"]:
            t = out["lm"]["throughput"]
            _common.print_table([{"repeat": p["repeat"], "batch": p["chunk"], "tokens": p["tokens"],
                                  "first": "forward" if p["forward_first"] else "min-k%++",
                                  "forward s": p["forward_seconds"], "min-k%++ s": p["minkpp_seconds"],
                                  "ratio": p["ratio"]} for p in t["pairs"]])
            _common.print_table([{"model": t["model"], "pairs": t["pairs_n"],
                                  "forward tok/s": t["forward_tokens_per_s"],
                                  "min-k%++ tok/s": t["minkpp_tokens_per_s"], "median paired ratio": t["ratio"],
                                  "quartiles": f"{t['ratio_quartiles'][0]:.3f}–{t['ratio_quartiles'][1]:.3f}"}])
        if "membership" in out["lm"]:
            _common.print_table([{"epochs": m["epochs"], **{k: v for k, v in m["auc"].items()}}
                                 for m in out["lm"]["membership"]["rows"]])


if __name__ == "__main__":
    main()
