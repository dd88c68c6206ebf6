"""Detection quality on planted siblings of real items: calibrated cutoffs vs fixed defaults.

    python -m benchmarks.quality            # default sizes (~10 min on 2 cores)
    python -m benchmarks.quality --quick    # tiny, for the tests
    python -m benchmarks.quality --no-neural --sets images,text
    python -m benchmarks.quality --sets crops,small32 --photos heldout   # photographs imagefuse was not fitted on
    python -m benchmarks.quality --sets crops,small32 --seed 0,2,3,4 --photos all,heldout --name quality_crops_14c
                                            # eight runs: one NAME.json and one side file, runs by key

For every planted set (:mod:`benchmarks.planted`: images, text, one per row dataset) and every
encoder of its modality (the weight-free ones always; ``minilm`` and ``effnet`` when they load),
without and with verification (the top-``k`` candidates re-scored by the modality's verifier):

* the cutoff is calibrated as a user would: the random-pair baseline's 99th percentile bounds the
  range, 60 nearest-neighbour pairs are drawn across it (:func:`sibscan.calibration.sampling.make_draw`),
  an oracle answers "same" exactly for planted pairs, and :func:`sibscan.calibration.fit.fit` sets
  the cutoff by ``sibscan calibrate``'s default rule (the lowest score from which P(same)'s 95 % lower
  bound per run of answers reaches 0.5; not ``--target-precision``: 0.95 below is the oracle's R@P95
  only); where it refuses one, a user gets none and the figures at the cutoff are not assessed (None);
  the scores it calibrated on go to ``NAME_pairs.json.gz``, and ``--calibration-only
  NAME_pairs.json.gz`` simulates it again from them without verifying (:mod:`benchmarks.quality_pairs`);
* at that cutoff, with the oracle's answers deciding the pairs they answer as a person's do in a scan
  (:mod:`sibscan.verdict.pairdecision`: "different" never flagged, "same" always, an item whose nearest pair
  was answered "different" decided by its next candidate): hard negatives and featureless clean items
  flagged, recall (planted test items flagged with their true source), precision (of the
  flagged pile), the same by score alone (``*_above_cutoff``, ``above_cutoff``), precision at 1 % prevalence (the
  flagged pile of a sweep of a mostly-clean set:
  ``0.01 TPR / (0.01 FR+ + 0.99 FPR)``, and its pessimistic end with FPR at its upper 95 % bound:
  a few hundred clean items pin the false-alarm rate only to about 1/n); threshold-free: ROC AUC (planted vs clean test
  items by their best score) and the best recall at precision >= 0.95 (the oracle's choice of cutoff);
* per transform: recall, AUC and precision at 1 % prevalence.

Side by side on the same items, each at its fixed default: plain exact hashing (blake2b of the
bytes), imagededup's PHash (Hamming distance <= 10), cleanlab Datalab's ``near_duplicate``
(threshold 0.13 of the median NN distance, on the default encoder's embeddings), datasketch
MinHashLSH (threshold 0.5, 128 permutations, word sets).  Results: ``benchmarks/results/quality.json``,
one run per seed and photo split under ``runs`` (:func:`benchmarks.quality_pairs.run_key`), each run
replacing only its own key (:func:`benchmarks._common.write_run`).

This module is the run; the candidates are made in :mod:`benchmarks.quality_candidates`, calibrated
and scored in :mod:`benchmarks.quality_metrics`, the fixed-default methods run in
:mod:`benchmarks.quality_baselines` and the tables printed by :mod:`benchmarks.quality_print`.
"""
from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks._common import comma_list, finite, keyed_runs, write_run
from benchmarks.planted import PlantedSet, check_difficulty, difficulty, image_set, row_sets, text_set
from benchmarks.planted_crops import PHOTO_SPLIT, alignment_accuracy, crops_set, small_set
from benchmarks.quality_baselines import cleanlab_near_duplicate, datasketch_lsh, exact_hashing, imagededup_phash
from benchmarks.quality_candidates import (_distinct_pairs, _fallback, cascade_candidates, candidate_recall, top_k,
                                           union_candidates, view_candidates)
from benchmarks.quality_metrics import PREVALENCE, TARGET_PRECISION, calibrate, detection_metrics, per_transform
from benchmarks.quality_pairs import (PAIRS_SUFFIX, POPULATION_KEY, flag_counts, flag_masks, next_pair, not_assessed,
                                      population, recalibrate_file, run_key, split_pairs, take_labels, truth)
from benchmarks.quality_print import _print_candidates, _print_set

log = logging.getLogger("benchmarks.quality")

ENCODERS = {"image": ("pixels", "phash", "effnet"), "text": ("ngram", "minhash", "minilm"), "table": ("znorm", "raw")}
NEURAL = ("effnet", "minilm", "clip")
VERIFIERS = {"image": "imagecorr", "text": "textalign", "table": "lagcorr"}
#: verifiers also measured, side by side with the modality's current one (results key "verified:NAME")
MORE_VERIFIERS = {"image": ("imagematch", "imagefuse")}
#: the extra candidate views whose top-k joins the default encoder's, as in a scan (sibscan.stages.views;
#: results key "union:ENC+VIEW+..."; per view and per union without verification: "candidate_recall")
EXTRA_VIEWS = {"image": ("windows", "pixels")}

def crop_size_key(photos: str) -> str:
    """The SIZES entry of the crop sets cut from ``photos`` ("all", or one half: fewer cells)."""
    return "crops" if photos == "all" else "crops_half"


SIZES = {
    # n_train, per_transform, n_clean for each modality; labels drawn; random pairs verified
    # crops_half: the crop sets cut from one half of the photographs (--photos fit/heldout)
    "quick": {"crops": (60, 2, 20), "crops_half": (60, 2, 20), "image": (40, 2, 20), "text": (60, 2, 24),
              "table": (60, 2, 24), "labels": 40, "verified_pairs": 80, "rows": ("ItalyPowerDemand", "digits")},
    "default": {"crops": (300, 20, 120), "crops_half": (150, 12, 60), "image": (600, 20, 200), "text": (800, 25, 250),
                "table": (600, 20, 200), "labels": 60, "verified_pairs": 500, "rows": None},
}


# ------------------------------------------------------------------------------------------------
# scoring
# ------------------------------------------------------------------------------------------------
class PairScores:
    """Verifier scores of (test, train) pairs, each pair verified once however many encoders propose it."""

    def __init__(self, ps: PlantedSet, verifier) -> None:
        self.ps, self.verifier = ps, verifier
        self.cache: Dict[Tuple[int, int], float] = {}
        self.seconds = 0.0
        self.pairs = 0

    def __call__(self, qi: np.ndarray, ni: np.ndarray) -> np.ndarray:
        qi, ni = np.asarray(qi, np.int64), np.asarray(ni, np.int64)
        keys = list(zip(qi.tolist(), ni.tolist()))
        todo = sorted({k for k in keys if k not in self.cache})
        if todo:
            q, n = np.array(todo, dtype=np.int64).T
            t = time.perf_counter()
            res = self.verifier.verify(self.ps.test, q, self.ps.train, n)
            self.seconds += time.perf_counter() - t
            self.pairs += len(todo)
            self.cache.update(zip(todo, np.asarray(res.scores, np.float64).tolist()))
        return np.array([self.cache[k] for k in keys], dtype=np.float64)


def evaluate(ps: PlantedSet, train_emb: np.ndarray, test_emb: np.ndarray, pairs: Optional[PairScores], *, k: int,
             n_labels: int, n_verified_random: int, seed: int, candidates: Optional[np.ndarray] = None) -> dict:
    """Calibrate and score one encoder on one set, with (``pairs`` given) or without verification.

    ``candidates`` (n_test, c) replaces the encoder's top-k (a union of views); it needs ``pairs``.
    """
    rng = np.random.default_rng(seed)
    sims, idx = top_k(test_emb, train_emb, k)
    if candidates is not None:
        idx = candidates
    n_test = len(test_emb)
    if pairs is None:
        ver = sims.astype(np.float64)
        score, nb = ver[:, 0], idx[:, 0]
        ti, tj = rng.integers(0, n_test, 20000), rng.integers(0, len(train_emb), 20000)
        random_scores = np.einsum("ij,ij->i", test_emb[ti], train_emb[tj])
    else:
        qi = np.repeat(np.arange(n_test), idx.shape[1])
        ver = _fallback(pairs(qi, idx.reshape(-1)), test_emb, train_emb, qi, idx.reshape(-1)).reshape(idx.shape)
        best = np.argmax(ver, axis=1)
        score, nb = ver[np.arange(n_test), best], idx[np.arange(n_test), best]
        # the random pairs are the same for every encoder (seeded): verified once, reused
        ti, tj = rng.integers(0, n_test, n_verified_random), rng.integers(0, len(train_emb), n_verified_random)
        random_scores = _fallback(pairs(ti, tj), test_emb, train_emb, ti, tj)
    # each item's next pair (best of its other candidates): where a person labels the top pair
    # "different", the item is decided by the pairs left (sibscan.verdict.pairdecision)
    score2, nb2 = next_pair(ver, idx, nb)
    correct = ps.planted & (nb == ps.source)
    cal = calibrate(score, nb, correct, random_scores, n_labels, seed=seed)
    # the simulated answers decide the pairs they answer, as a person's do in a scan (sibscan.verdict.pairdecision);
    # no calibrated cutoff: the threshold-free figures are measured, those at a cutoff blanked below
    labelled, correct2 = take_labels(cal), ps.planted & (nb2 == ps.source)
    m = flag_masks(score, cal["cutoff"], correct, labelled, score2, correct2)
    counts = flag_counts(score, cal["cutoff"], correct, ps.planted, ps.hard, _featureless(ps), labelled, score2,
                         correct2, masks=m)
    entry = {
        "calibration": cal,
        "source_in_candidates": float((idx == ps.source[:, None]).any(axis=1)[ps.planted].mean()),
        "hard_negatives_flagged": counts["hard_negatives_flagged"],
        "featureless_flagged": counts["featureless_flagged"],
        "hard_negatives_above_cutoff": counts["hard_negatives_above_cutoff"],
        "featureless_above_cutoff": counts["featureless_above_cutoff"],
        "metrics": detection_metrics(ps, m["flagged"], correct, score, hit=m["hit"]),
        "above_cutoff": {k: counts[k + "_above_cutoff"] for k in ("recall", "precision", "flagged")},
        "nn_is_source": float(correct.sum() / max(ps.planted.sum(), 1)),
        "per_transform": per_transform(ps, m["flagged"], correct, score, hit=m["hit"]),
        POPULATION_KEY: population(score, nb, random_scores, score2, nb2),
    }
    return entry if cal["cutoff"] is not None else not_assessed(entry)


def _featureless(ps: PlantedSet) -> np.ndarray:
    return np.asarray(ps.notes.get("featureless", np.zeros(len(ps.test), bool)), bool)


# ------------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------------
def _encoders(modality: str, neural: bool) -> List[str]:
    from sibscan.encoders import encoder_class

    names = []
    for name in ENCODERS[modality]:
        if name in NEURAL and not neural:
            continue
        ok, why = encoder_class(name).available()
        if ok:
            names.append(name)
        else:
            log.warning("skipping encoder %s: %s", name, why)
    return names


def _default_encoder(modality: str, names: List[str]) -> str:
    from sibscan.encoders import default_encoder

    name = default_encoder(modality)
    return name if name in names else names[0]


def run_set(ps: PlantedSet, *, neural: bool, k: int, n_labels: int, n_verified_random: int, seed: int,
            candidates_only: bool = False, k_view: int = 5) -> dict:
    from sibscan.encoders import get_encoder
    from sibscan.errors import SibscanError
    from sibscan.verify import get_verifier

    print(f"\n## {ps.name}: {len(ps.train)} train, {len(ps.test)} test ({int(ps.planted.sum())} planted, "
          f"{int((~ps.planted).sum())} clean of which {int(ps.hard.sum())} hard)", flush=True)
    verifier = get_verifier(VERIFIERS[ps.modality])
    pairs = PairScores(ps, verifier)
    more = {n: PairScores(ps, get_verifier(n, progress=False)) for n in MORE_VERIFIERS.get(ps.modality, ())}
    names = _encoders(ps.modality, neural)
    out: Dict[str, object] = {"modality": ps.modality, "n_train": len(ps.train), "n_test": len(ps.test),
                              "n_planted": int(ps.planted.sum()), "n_clean": int((~ps.planted).sum()),
                              "n_hard": int(ps.hard.sum()), "notes": ps.notes, "verifier": verifier.identity,
                              "more_verifiers": {n: p.verifier.identity for n, p in more.items()},
                              "encoders": {}, "fixed_defaults": {}}
    embeddings = {}
    for name in names:
        try:
            enc = get_encoder(name, device="cpu")
            t = time.perf_counter()
            train_emb = enc.encode(ps.train.content)
            test_emb = enc.encode(ps.test.content)
            secs = time.perf_counter() - t
        except (SibscanError, OSError, RuntimeError) as exc:  # a neural encoder whose weights do not load here
            log.warning("skipping encoder %s: %s", name, exc)
            continue
        embeddings[name] = (train_emb, test_emb)
        entry = {"identity": enc.identity, "encode_items_per_s": (len(ps.train) + len(ps.test)) / max(secs, 1e-9),
                 "encode_seconds": secs}
        if candidates_only:
            out["encoders"][name] = entry
            continue
        common = dict(k=k, n_labels=n_labels, n_verified_random=n_verified_random, seed=seed)
        for verified in (False, True):
            entry["verified" if verified else "embedding"] = evaluate(
                ps, train_emb, test_emb, pairs if verified else None, **common)
        for vname, vpairs in more.items():
            entry[f"verified:{vname}"] = evaluate(ps, train_emb, test_emb, vpairs, **common)
        out["encoders"][name] = entry
    default = _default_encoder(ps.modality, list(embeddings))
    views = EXTRA_VIEWS.get(ps.modality, ())
    if views:
        common = dict(k=k, n_labels=n_labels, n_verified_random=n_verified_random, seed=seed)
        found, view_seconds = view_candidates(ps, embeddings, views, max(k, k_view))
        out["candidate_recall"] = candidate_recall(ps, found, default, views, k, k_view, view_seconds)
        # as in a scan: the encoder's top-k, each extra view's top-k_view
        found = {n: idx[:, :k] if n == default else idx[:, :k_view] for n, idx in found.items()}
        if candidates_only:
            out["default_encoder"] = default
            _print_candidates(out)
            return out
        # candidates from more than one view, verified: the default encoder's top-k joined with the views'
        union = tuple(dict.fromkeys((default, *views)))
        cand = union_candidates(*(found[v] for v in union))
        entry = {"identity": " + ".join(union), "candidates_per_item": float(np.mean(
            [len(set(r.tolist())) for r in cand])),
                 "encode_seconds": sum(view_seconds[v] if v in view_seconds else out["encoders"][v]["encode_seconds"]
                                       for v in union)}
        for vname, vpairs in {VERIFIERS[ps.modality]: pairs, **more}.items():
            key = "verified" if vpairs is pairs else f"verified:{vname}"
            entry[key] = evaluate(ps, *embeddings[default], vpairs, candidates=cand, **common)
        out["encoders"]["union:" + "+".join(union)] = entry
        # the scan's --cascade: only each item's candidates near its best windows score or similarity are verified
        ccand, cascade_info = cascade_candidates(ps, cand, *embeddings[default])
        centry = {"identity": " + ".join(union) + ", cascade", "candidates_per_item": float(np.mean(
            [len(set(r.tolist())) for r in ccand])), **cascade_info}
        for vname, vpairs in {VERIFIERS[ps.modality]: pairs, **more}.items():
            key = "verified" if vpairs is pairs else f"verified:{vname}"
            centry[key] = evaluate(ps, *embeddings[default], vpairs, candidates=ccand, **common)
        out["encoders"]["cascade:" + "+".join(union)] = centry
        out["cascade"] = {"union_pairs": _distinct_pairs(cand), "cascade_pairs": _distinct_pairs(ccand),
                          "cascade_seconds": cascade_info["cascade_seconds"]}
    out["default_encoder"] = default
    if "transform_details" in ps.notes:  # the planted crop sets: is the transform found the one planted?
        out["alignment_accuracy"] = {n: alignment_accuracy(ps, p.verifier) for n, p in more.items()}
        print("alignment found = planted: " + ", ".join(f"{n} {a['accuracy']:.3f}" for n, a in
                                                         out["alignment_accuracy"].items()), flush=True)
    out["difficulty"] = difficulty(ps, *embeddings[default], seed=seed)
    out["time_share"] = _time_share(out, default, pairs, more, len(ps.test) * k)
    if "cascade" in out:  # the pairs a scan verifies: the union's, or the cascade's plus its windows scoring
        c = out["cascade"]
        out["time_share_union"] = _time_share(out, default, pairs, more, c["union_pairs"])
        out["time_share_cascade"] = _time_share(out, default, pairs, more, c["cascade_pairs"], c["cascade_seconds"])
    check_difficulty(out["difficulty"], f"{ps.name} under {default}")
    out["verify_pairs_per_s"] = pairs.pairs / pairs.seconds if pairs.seconds else None
    out["more_verify_pairs_per_s"] = {n: p.pairs / p.seconds if p.seconds else None for n, p in more.items()}
    fixed = {"exact hash (blake2b)": exact_hashing(ps)}
    if ps.modality == "image":
        fixed["imagededup PHash (<=10 bits)"] = imagededup_phash(ps)
    if ps.modality == "text":
        fixed["datasketch MinHashLSH (0.5)"] = datasketch_lsh(ps)
    fixed[f"cleanlab near_duplicate ({default})"] = cleanlab_near_duplicate(ps, *embeddings[default])
    out["fixed_defaults"] = {k: v for k, v in fixed.items() if v is not None}
    out["skipped_methods"] = [k for k, v in fixed.items() if v is None]
    _print_set(out, VERIFIERS[ps.modality])
    return out


def _time_share(out: dict, default: str, pairs: PairScores, more: Dict[str, PairScores], n_pairs: int,
                extra_seconds: float = 0.0) -> dict:
    """Embedding seconds of the default encoder beside each verifier's seconds for ``n_pairs``
    candidate pairs (at the verifier's measured pairs per second; ``n_test * k`` for the encoder's
    top-k), plus ``extra_seconds`` (the cascade's windows scoring) counted as verification."""
    enc = out["encoders"][default]["encode_seconds"]
    share = {"encoder": default, "encode_seconds": enc, "candidate_pairs": n_pairs, "verifiers": {}}
    if extra_seconds:
        share["cascade_seconds"] = extra_seconds
    for p in [pairs, *more.values()]:
        if p.seconds:
            v = n_pairs * p.seconds / p.pairs + extra_seconds
            share["verifiers"][p.verifier.name] = {"seconds": v, "share_of_scan": v / (v + enc)}
    return share


def image_encoder_verdict(results: dict) -> Optional[dict]:
    """Which image encoder finds more planted siblings at equal precision (recall at precision >= 0.95)."""
    img = results.get("images")
    if not img or "effnet" not in img["encoders"] or "pixels" not in img["encoders"]:
        return None
    verdict = {}
    for mode in ("embedding", "verified"):
        r = {n: img["encoders"][n][mode]["metrics"]["recall_at_p95"] for n in ("pixels", "effnet")}
        verdict[mode] = {**r, "winner": max(r, key=r.get) if r["pixels"] != r["effnet"] else "tie"}
    return verdict


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (under a minute)")
    ap.add_argument("--no-neural", action="store_true", help="weight-free encoders only (skip minilm, effnet)")
    ap.add_argument("--sets", default="images,text,rows",
                    help="comma list of images, text, rows, crops (heavy crops/zooms/rotations of photo cells, "
                         "featureless negatives), small32 (the same at 32 x 32 px)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the set sizes (e.g. 0.5)")
    ap.add_argument("--k", type=int, default=5, help="candidates verified per test item")
    ap.add_argument("--seed", "--seeds", dest="seeds", type=comma_list(int), default=[0],
                    help="seed, or a comma list of seeds: a run each in NAME.json, key seedN (default 0)")
    ap.add_argument("--name", default="quality", help="results file stem (benchmarks/results/NAME.json)")
    ap.add_argument("--k-view", type=int, default=5, help="candidates each extra view adds (as the scan's --k-view)")
    ap.add_argument("--candidates-only", action="store_true",
                    help="only the true source's recall among the candidates, per view and union (no verification)")
    ap.add_argument("--photos", type=comma_list(str, ("all", *PHOTO_SPLIT)), default=["all"],
                    help="photographs the crops/small32 sets are cut from: all, or one half of "
                         "benchmarks.planted_crops.PHOTO_SPLIT (imagefuse is fitted on 'fit'; 'heldout' evaluates it "
                         "on photographs it never saw, at smaller sizes); a comma list runs each with every seed "
                         "(key PHOTOS_seedN but for all)")
    ap.add_argument("--workdir", default=None, help="where the planted image files go (default: a temp folder)")
    ap.add_argument("--calibration-only", default=None, metavar="PAIRS_JSON",
                    help="no verification: simulate the calibration again on the scores a run saved in "
                         "NAME_pairs.json.gz (benchmarks.quality_pairs); writes NAME_recalibrated.json unless --name")
    ap.add_argument("--write-back", action="store_true",
                    help="with --calibration-only: also rewrite the run's NAME.json for the "
                         "methods whose calibration now gives no cutoff (their figures at "
                         "the cutoff become None: not assessed); refused when a cutoff moved")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    size = SIZES["quick" if args.quick else "default"]
    if args.calibration_only:
        if not args.calibration_only.endswith(PAIRS_SUFFIX) or not Path(args.calibration_only).exists():
            ap.error(f"--calibration-only takes a NAME{PAIRS_SUFFIX} a run wrote, got {args.calibration_only}")
        return recalibrate_file(Path(args.calibration_only), None if args.name == "quality" else args.name,
                                size["labels"], write=args.write_back)
    if args.write_back:
        ap.error("--write-back goes with --calibration-only NAME_pairs.json.gz")
    wanted = {s.strip() for s in args.sets.split(",") if s.strip()}
    bad = wanted - {"images", "text", "rows", "crops", "small32"}
    if bad:
        ap.error(f"unknown set(s) {', '.join(sorted(bad))}; available: images, text, rows, crops, small32")
    # every seed of every photo split: a run each of one results file and one side file (issue 31: one
    # file per benchmark), each written as it finishes, replacing only its own key
    keyed_runs(args.name), keyed_runs(f"{args.name}_pairs", compact=True)  # refused before the work
    done: Dict[str, dict] = {}
    for photos in args.photos:
        for seed in args.seeds:
            key = run_key(seed, photos)
            payload, pairs = _run(args, size, wanted, seed, photos)
            path = write_run(args.name, key, payload)
            if pairs["sets"]:
                side = write_run(f"{args.name}_pairs", key, {"seed": seed, "photos": photos,
                                                             "n_labels": size["labels"], **pairs}, compact=True)
                print(f"wrote {side} (the scores the calibration saw, for --calibration-only)")
            print(f"\nwrote {path}, run {key} ({payload['seconds']:.0f} s)")
            done[key] = payload
    return done


def _run(args: argparse.Namespace, size: dict, wanted: set, seed: int, photos: str) -> Tuple[dict, dict]:
    """One run of ``main``'s command at one seed and photo split: its results payload and its side file's sets."""
    scale = lambda t: (max(20, int(t[0] * args.scale)), max(2, int(t[1] * args.scale)), max(10, int(t[2] * args.scale)))  # noqa: E731
    t0 = time.perf_counter()
    results: Dict[str, object] = {}
    common = dict(neural=not args.no_neural, k=args.k, n_labels=size["labels"],
                  n_verified_random=size["verified_pairs"],
                  seed=seed, candidates_only=args.candidates_only, k_view=args.k_view)
    with tempfile.TemporaryDirectory(prefix="sibscan-quality-") as tmp:
        work = Path(args.workdir or tmp)
        sets: List[PlantedSet] = []
        if "images" in wanted:
            n_train, per, n_clean = scale(size["image"])
            sets.append(image_set(work / "images", n_train=n_train, per_transform=per, n_clean=n_clean, seed=seed))
        for name, make in (("crops", crops_set), ("small32", small_set)):
            if name in wanted:
                n_train, per, n_clean = scale(size[crop_size_key(photos)])
                sets.append(make(work / name, n_train=n_train, per_transform=per, n_clean=n_clean, seed=seed,
                                 photos=photos))
        if "text" in wanted:
            n_train, per, n_clean = scale(size["text"])
            sets.append(text_set(n_train=n_train, per_transform=per, n_clean=n_clean, seed=seed))
        if "rows" in wanted:
            n_train, per, n_clean = scale(size["table"])
            sets += row_sets(n_train=n_train, per_transform=per, n_clean=n_clean, seed=seed, datasets=size["rows"])
        for ps in sets:
            results[ps.name] = run_set(ps, **common)
        pairs = split_pairs(results, {ps.name: truth(ps, _featureless(ps)) for ps in sets})
    verdict = None if args.candidates_only else image_encoder_verdict(results)
    if verdict:
        print(f"\nimage encoder at equal precision (recall at precision >= {TARGET_PRECISION}): "
              + "; ".join(f"{m}: pixels {v['pixels']:.3f} vs effnet {v['effnet']:.3f} -> {v['winner']}"
                          for m, v in verdict.items()))
    payload = {"quick": args.quick, "candidates_only": args.candidates_only, "scale": args.scale, "seed": seed,
               "k": args.k, "k_view": args.k_view, "photos": photos,
               "prevalence": PREVALENCE, "target_precision": TARGET_PRECISION, "n_labels": size["labels"],
               "sets": results, "image_encoder_verdict": verdict, "seconds": time.perf_counter() - t0,
               "load_average_1_5_15": list(os.getloadavg())}
    return finite(payload), pairs


if __name__ == "__main__":
    main()
