"""Detection quality on planted siblings of real items: calibrated cutoffs vs fixed defaults.

    python -m benchmarks.quality            # default sizes (~10 min on 2 cores)
    python -m benchmarks.quality --quick    # tiny, for the tests
    python -m benchmarks.quality --no-neural --sets images,text
    python -m benchmarks.quality --sets crops,small32 --photos heldout   # photographs imagefuse was not fitted on

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
* at that cutoff: recall (planted test items flagged with their true source), precision (of the
  flagged pile), precision at 1 % prevalence (the flagged pile of a sweep of a mostly-clean set:
  ``0.01 TPR / (0.01 FR+ + 0.99 FPR)``, and its pessimistic end with FPR at its upper 95 % bound:
  a few hundred clean items pin the false-alarm rate only to about 1/n); threshold-free: ROC AUC (planted vs clean test items by
  their best score) and the best recall at precision >= 0.95 (the oracle's choice of cutoff);
* per transform: recall, AUC and precision at 1 % prevalence.

Side by side on the same items, each at its fixed default: plain exact hashing (blake2b of the
bytes), imagededup's PHash (Hamming distance <= 10), cleanlab Datalab's ``near_duplicate``
(threshold 0.13 of the median NN distance, on the default encoder's embeddings), datasketch
MinHashLSH (threshold 0.5, 128 permutations, word sets).  Results: ``benchmarks/results/quality.json``.
"""
from __future__ import annotations

import argparse
import hashlib
import logging
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks._common import print_table, write_results
from benchmarks.planted import PlantedSet, check_difficulty, difficulty, image_set, row_sets, text_set
from benchmarks.planted_crops import PHOTO_SPLIT, alignment_accuracy, crops_set, small_set
from benchmarks.quality_pairs import (NOT_ASSESSED, PAIRS_SUFFIX, POPULATION_KEY, flag_counts, not_assessed, population,
                                      recalibrate_file, split_pairs, truth)

log = logging.getLogger("benchmarks.quality")

ENCODERS = {"image": ("pixels", "phash", "effnet"), "text": ("ngram", "minhash", "minilm"), "table": ("znorm", "raw")}
NEURAL = ("effnet", "minilm", "clip")
VERIFIERS = {"image": "imagecorr", "text": "textalign", "table": "lagcorr"}
#: verifiers also measured, side by side with the modality's current one (results key "verified:NAME")
MORE_VERIFIERS = {"image": ("imagematch", "imagefuse")}
#: the extra candidate views whose top-k joins the default encoder's, as in a scan (sibscan.views;
#: results key "union:ENC+VIEW+..."; per view and per union without verification: "candidate_recall")
EXTRA_VIEWS = {"image": ("windows", "pixels")}
PREVALENCE = 0.01
TARGET_PRECISION = 0.95

def crop_size_key(photos: str) -> str:
    """The SIZES entry of the crop sets cut from ``photos`` ("all", or one half: fewer cells)."""
    return "crops" if photos == "all" else "crops_half"


SIZES = {
    # n_train, per_transform, n_clean for each modality; labels drawn; random pairs verified
    # crops_half: the crop sets cut from one half of the photographs (--photos fit/heldout)
    "quick": {"crops": (60, 2, 20), "crops_half": (60, 2, 20), "image": (40, 2, 20), "text": (60, 2, 24), "table": (60, 2, 24), "labels": 40, "verified_pairs": 80,
              "rows": ("ItalyPowerDemand", "digits")},
    "default": {"crops": (300, 20, 120), "crops_half": (150, 12, 60), "image": (600, 20, 200), "text": (800, 25, 250), "table": (600, 20, 200), "labels": 60,
                "verified_pairs": 500, "rows": None},
}


# ------------------------------------------------------------------------------------------------
# scoring
# ------------------------------------------------------------------------------------------------
def top_k(test_emb: np.ndarray, train_emb: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Exact top-k by cosine (brute force: these sets are small). Returns sims, idx of shape (n_test, k)."""
    sims = test_emb @ train_emb.T
    k = min(k, sims.shape[1])
    idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    part = np.take_along_axis(sims, idx, axis=1)
    order = np.argsort(-part, axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1), np.take_along_axis(idx, order, axis=1)


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


def calibrate(score: np.ndarray, nb: np.ndarray, same: np.ndarray, random_scores: np.ndarray, n_labels: int,
              seed: int = 0) -> Dict[str, object]:
    """Calibrate a cutoff as a user would, with an oracle answering for the drawn pairs.

    Parameters
    ----------
    score : ndarray of shape (n_test,)
        Deciding score of each test item's nearest train item.
    nb : ndarray of shape (n_test,), int
        That nearest train item.
    same : ndarray of shape (n_test,), bool
        The oracle: whether the pair is a planted sibling.
    random_scores : ndarray of shape (m,)
        Scores of random (test, train) pairs: the baseline whose 99th percentile bounds the draw.
    n_labels : int
        Pairs the oracle labels.

    Returns
    -------
    dict
        ``cutoff``, ``status`` (the fit's, or how a no-flip case was resolved), ``lo``, ``labelled``,
        ``labelled_same``, ``interval``.  ``cutoff`` is None where a user gets none: the fit refused
        (its labels hold both answers but cannot support a cutoff, e.g. "not enough labels"); the
        figures at the cutoff are then not assessed (:func:`benchmarks.quality_pairs.not_assessed`).
        Only a true no-flip gets a convention: every labelled pair 'same' flags down to the
        baseline's 99th percentile, every one 'different' flags nothing.
    """
    from sibscan.calibration.fit import fit
    from sibscan.calibration.sampling import Population, make_draw

    n = len(score)
    lo = float(np.quantile(random_scores, 0.99))
    pop = Population(query_id=np.array([f"te{i}" for i in range(n)]), neighbour_id=np.asarray(nb).astype(str),
                     query_index=np.arange(n, dtype=np.int64), neighbour_index=np.asarray(nb, np.int64),
                     score=np.asarray(score, np.float64), exact=np.zeros(n, bool), score_kind="similarity")
    out: Dict[str, object] = {"lo": lo, "labelled": 0, "labelled_same": 0, "interval": None}
    if not (pop.score >= lo).any():
        out.update(cutoff=float(pop.score.max()) + 1e-6, status="no pair above the baseline's 99th percentile")
        return out
    rows = make_draw(pop, lo, n_labels, seed=seed).rows
    s, y = pop.score[rows], np.asarray(same, bool)[rows]
    out.update(labelled=int(len(rows)), labelled_same=int(y.sum()))
    res = fit(s, y, pop.score, lo=lo, n_boot=100, seed=seed)
    if res.cutoff is not None:
        out.update(cutoff=float(res.cutoff), status=res.status,
                   interval=None if res.interval is None else [float(v) for v in res.interval])
    elif y.all():
        # every labelled pair down to the baseline's tail was a sibling: a user flags all of them
        out.update(cutoff=lo, status="no flip, all labelled pairs same: cutoff at the baseline's 99th percentile")
    elif not y.any():
        # every labelled pair was 'different': a user gets no cutoff, and flags nothing
        out.update(cutoff=float(pop.score.max()) + 1e-6, status=f"no flip: {res.status}")
    else:
        # the labels hold both answers and the fit refused: a user gets no cutoff, so there are no figures at it
        out.update(cutoff=None, status=f"no cutoff (not assessed): {res.status}")
    return out


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC AUC of positive vs negative scores (ties count a half)."""
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    from scipy.stats import rankdata

    r = rankdata(np.concatenate([pos, neg]))
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _precision_at(tpr: float, flag_pos: float, fpr: float, prevalence: float = PREVALENCE) -> float:
    den = prevalence * flag_pos + (1 - prevalence) * fpr
    return float(prevalence * tpr / den) if den > 0 else float("nan")


def recall_at_precision(score: np.ndarray, correct: np.ndarray, planted: np.ndarray, target: float) -> float:
    """Best recall over all cutoffs whose flagged pile has precision >= ``target`` (oracle cutoff)."""
    order = np.argsort(-score, kind="stable")
    tp = np.cumsum(correct[order])
    prec = tp / np.arange(1, len(order) + 1)
    # a cutoff sits between distinct scores: evaluate only at the last index of each tie group
    s = score[order]
    last = np.r_[s[1:] != s[:-1], True]
    ok = last & (prec >= target)
    return float(tp[ok].max() / max(planted.sum(), 1)) if ok.any() else 0.0


def detection_metrics(ps: PlantedSet, flagged: np.ndarray, correct: np.ndarray,
                      score: Optional[np.ndarray] = None) -> Dict[str, float]:
    """Recall, precision and precision at 1 % prevalence of a flagged set (and AUC when scores exist).

    ``flagged``, ``correct`` : bool arrays of shape (n_test,); ``correct`` = planted and paired with its source.
    """
    from scipy.stats import beta

    planted, clean = ps.planted, ~ps.planted
    tp = flagged & correct
    tpr = tp.sum() / max(planted.sum(), 1)
    fp, n_clean = int((flagged & clean).sum()), int(clean.sum())
    fpr = fp / max(n_clean, 1)
    # the benchmark holds a few hundred clean items: the false-alarm rate is known only to about
    # 1/n_clean, so the precision at 1 % prevalence also gets its pessimistic end (FPR's upper 95 % bound)
    fpr_hi = float(beta.ppf(0.975, fp + 1, n_clean - fp)) if fp < n_clean else 1.0
    flag_pos = (flagged & planted).sum() / max(planted.sum(), 1)
    out = {
        "recall": float(tpr),
        "precision": float(tp.sum() / flagged.sum()) if flagged.any() else float("nan"),
        "fpr": float(fpr),
        "fpr_upper95": fpr_hi,
        "precision_at_1pct": _precision_at(tpr, flag_pos, fpr),
        "precision_at_1pct_lower95": _precision_at(tpr, flag_pos, fpr_hi),
        "flagged": int(flagged.sum()),
    }
    if score is not None:
        out["auc"] = _auc(score[planted], score[clean])
        out["recall_at_p95"] = recall_at_precision(score, correct, planted, TARGET_PRECISION)
    return out


def per_transform(ps: PlantedSet, flagged: np.ndarray, correct: np.ndarray, score: np.ndarray) -> Dict[str, dict]:
    clean = ~ps.planted
    fpr = (flagged & clean).sum() / max(clean.sum(), 1)
    out = {}
    for t in dict.fromkeys(ps.transform[ps.planted].tolist()):
        m = ps.transform == t
        tpr = (flagged & correct & m).sum() / m.sum()
        out[t] = {"n": int(m.sum()), "recall": float(tpr), "auc": _auc(score[m], score[clean]),
                  "precision_at_1pct": _precision_at(tpr, (flagged & m).sum() / m.sum(), fpr)}
    return out


def union_candidates(*idx: np.ndarray) -> np.ndarray:
    """Row-wise union of candidate lists (each of shape (n_test, k_i)), first occurrence first;
    shorter rows are padded with their first candidate: (n_test, max union size)."""
    rows = [list(dict.fromkeys(np.concatenate([i[r] for i in idx]).tolist())) for r in range(len(idx[0]))]
    width = max(len(r) for r in rows)
    return np.array([r + r[:1] * (width - len(r)) for r in rows], dtype=np.int64)


def view_candidates(ps: PlantedSet, embeddings: Dict[str, Tuple[np.ndarray, np.ndarray]], views: Sequence[str],
                    k: int) -> Tuple[Dict[str, np.ndarray], Dict[str, float]]:
    """Each view's top-k train items per test item (n_test, k), and its seconds: the encoders'
    (already embedded: their encode time) and the scan's built-in views (:func:`sibscan.views.view_topk`)."""
    from sibscan.options import SearchOptions
    from sibscan.views import view_topk

    found, seconds = {}, {}
    for name, (train_emb, test_emb) in embeddings.items():
        found[name] = top_k(test_emb, train_emb, k)[1]
    for v in views:
        if v not in found:
            t = time.perf_counter()
            found[v] = view_topk(v, {"train": ps.train, "test": ps.test}, k, SearchOptions(), progress=False)[1]
            seconds[v] = time.perf_counter() - t
    return found, seconds


def candidate_recall(ps: PlantedSet, found: Dict[str, np.ndarray], default: str, views: Sequence[str], k: int,
                     k_view: int, view_seconds: Dict[str, float]) -> dict:
    """Share of planted test items whose true source is among the candidates (before any verification),
    overall and per transform, with the candidates per item: each view alone (its top-k) and the
    unions a scan makes (the default encoder's top-k joined with each extra view's top-k_view)."""
    def recall(idx: np.ndarray) -> dict:
        hit = (idx == ps.source[:, None]).any(axis=1)
        per = {t: float(hit[ps.planted & (ps.transform == t)].mean()) for t in dict.fromkeys(ps.transform[ps.planted].tolist())}
        return {"all": float(hit[ps.planted].mean()), "per_transform": per,
                "candidates_per_item": float(np.mean([len(set(r[r >= 0].tolist())) for r in idx]))}

    unions = {}
    for names in [(default, *views[:i]) for i in range(1, len(views) + 1)] + [views]:
        names = tuple(dict.fromkeys(names))
        if len(names) > 1:
            unions["+".join(names)] = recall(union_candidates(
                *(found[n][:, :k] if n == default else found[n][:, :k_view] for n in names)))
    return {"k": k, "k_view": k_view, "views": {n: recall(idx[:, :k]) for n, idx in found.items()}, "unions": unions,
            "view_seconds": view_seconds}


def _fallback(verified: np.ndarray, test_emb: np.ndarray, train_emb: np.ndarray, qi: np.ndarray,
              ni: np.ndarray) -> np.ndarray:
    """Verified scores with an undefined one (NaN: a flat image) replaced by the embedding
    similarity of the pair, as the scan does (:func:`sibscan.candidates.verify_neighbours`)."""
    bad = np.isnan(verified)
    if not bad.any():
        return verified
    out = verified.copy()
    out[bad] = np.einsum("ij,ij->i", test_emb[qi[bad]], train_emb[ni[bad]])
    return out


def _distinct_pairs(cand: np.ndarray) -> int:
    """Distinct (test, train) pairs in a padded candidate matrix (n_test, c)."""
    return int(sum(len(set(r.tolist())) for r in cand))


def cascade_candidates(ps: PlantedSet, cand: np.ndarray, train_emb: np.ndarray,
                       test_emb: np.ndarray) -> Tuple[np.ndarray, dict]:
    """The candidates a scan with ``--cascade`` verifies (:func:`sibscan.views.cascade_candidates`'s
    selection on the same signals), as a padded matrix, with the windows scoring's seconds."""
    from sibscan.verify.cascade import IMAGE_CASCADE, cascade_keep
    from sibscan.views import pair_window_scores

    rows = [list(dict.fromkeys(r.tolist())) for r in cand]
    qi = np.repeat(np.arange(len(rows)), [len(r) for r in rows])
    ni = np.array([j for r in rows for j in r], dtype=np.int64)
    t = time.perf_counter()
    win = pair_window_scores(ps.test, qi, ps.train, ni)
    seconds = time.perf_counter() - t
    sim = np.einsum("ij,ij->i", test_emb[qi], train_emb[ni])
    keep = cascade_keep(qi, [(win, IMAGE_CASCADE.window_band), (sim, IMAGE_CASCADE.similarity_band)])
    kept = [ni[(qi == i) & keep].tolist() for i in range(len(rows))]
    width = max(len(r) for r in kept)
    out = np.array([r + r[:1] * (width - len(r)) for r in kept], dtype=np.int64)
    src = (out == ps.source[:, None]).any(axis=1)[ps.planted].mean() if ps.planted.any() else float("nan")
    return out, {"cascade_seconds": seconds, "cascade": IMAGE_CASCADE.describe(), "source_kept": float(src)}


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
        score, nb = sims[:, 0].astype(np.float64), idx[:, 0]
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
    correct = ps.planted & (nb == ps.source)
    cal = calibrate(score, nb, correct, random_scores, n_labels, seed=seed)
    # no calibrated cutoff: the threshold-free figures are measured, those at a cutoff blanked below
    flagged = score >= (np.inf if cal["cutoff"] is None else cal["cutoff"])
    counts = flag_counts(score, cal["cutoff"], correct, ps.planted, ps.hard, _featureless(ps))
    entry = {
        "calibration": cal,
        "source_in_candidates": float((idx == ps.source[:, None]).any(axis=1)[ps.planted].mean()),
        "hard_negatives_flagged": counts["hard_negatives_flagged"],
        "featureless_flagged": counts["featureless_flagged"],
        "metrics": detection_metrics(ps, flagged, correct, score),
        "nn_is_source": float(correct.sum() / max(ps.planted.sum(), 1)),
        "per_transform": per_transform(ps, flagged, correct, score),
        POPULATION_KEY: population(score, nb, random_scores),
    }
    return entry if cal["cutoff"] is not None else not_assessed(entry)


def _featureless(ps: PlantedSet) -> np.ndarray:
    return np.asarray(ps.notes.get("featureless", np.zeros(len(ps.test), bool)), bool)


# ------------------------------------------------------------------------------------------------
# the fixed-default methods, side by side
# ------------------------------------------------------------------------------------------------
def exact_hashing(ps: PlantedSet) -> dict:
    """blake2b of the raw bytes: a test item is flagged when its digest occurs in train."""
    digest = lambda b: hashlib.blake2b(b, digest_size=16).hexdigest()  # noqa: E731
    train = {}
    for j, b in enumerate(ps.content_bytes("train")):
        train.setdefault(digest(b), j)
    hit = np.array([train.get(digest(b), -1) for b in ps.content_bytes("test")])
    return detection_metrics(ps, hit >= 0, ps.planted & (hit == ps.source))


def imagededup_phash(ps: PlantedSet, max_distance: int = 10) -> Optional[dict]:
    """imagededup's PHash at its default ``max_distance_threshold`` (10 bits of 64)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from imagededup.methods import PHash
    except ImportError:
        return None
    logging.getLogger("imagededup").setLevel(logging.ERROR)
    ph = PHash(verbose=False)

    def codes(paths: Sequence[str]) -> np.ndarray:
        return np.array([int(ph.encode_image(image_file=p), 16) for p in paths], dtype=np.uint64)

    a, b = codes(ps.train.paths), codes(ps.test.paths)
    dist = np.bitwise_count(b[:, None] ^ a[None, :]).astype(np.int64)
    nb = dist.argmin(axis=1)
    d = dist[np.arange(len(b)), nb]
    return detection_metrics(ps, d <= max_distance, ps.planted & (nb == ps.source), -d.astype(np.float64))


def cleanlab_near_duplicate(ps: PlantedSet, train_emb: np.ndarray, test_emb: np.ndarray) -> Optional[dict]:
    """cleanlab Datalab ``near_duplicate`` at its defaults, on train + test embeddings together."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from cleanlab import Datalab
    except ImportError:
        return None
    n_train = len(train_emb)
    feats = np.concatenate([train_emb, test_emb]).astype(np.float32)
    lab = Datalab(data={"id": np.arange(len(feats))}, verbosity=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab.find_issues(features=feats, issue_types={"near_duplicate": {}})
    issues = lab.get_issues("near_duplicate")
    sets = issues["near_duplicate_sets"].to_numpy()[n_train:]
    flagged = np.array([bool(len(s)) and bool((np.asarray(s) < n_train).any()) for s in sets])
    correct = np.array([src >= 0 and src in set(np.asarray(s).tolist()) for s, src in zip(sets, ps.source)])
    return detection_metrics(ps, flagged, correct)


def datasketch_lsh(ps: PlantedSet, threshold: float = 0.5, num_perm: int = 128) -> Optional[dict]:
    """datasketch MinHashLSH at its default threshold, on each text's set of (lower-cased) words."""
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        return None

    def mh(text: str) -> "MinHash":
        m = MinHash(num_perm=num_perm, seed=1)
        m.update_batch([w.encode("utf-8") for w in set(text.lower().split())])
        return m

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    train_mh = [mh(t) for t in ps.train.texts]
    for j, m in enumerate(train_mh):
        lsh.insert(j, m)
    flagged = np.zeros(len(ps.test), bool)
    correct = np.zeros(len(ps.test), bool)
    for i, t in enumerate(ps.test.texts):
        hits = lsh.query(mh(t))
        flagged[i] = bool(hits)
        correct[i] = ps.source[i] >= 0 and int(ps.source[i]) in hits
    return detection_metrics(ps, flagged, correct)


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
    _print_set(ps, out)
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


def _modes(entry: dict) -> List[str]:
    return [m for m in entry if m == "embedding" or m.startswith("verified")]


def _mode_name(ps: PlantedSet, mode: str) -> str:
    if mode == "embedding":
        return ""
    return " + " + (VERIFIERS[ps.modality] if mode == "verified" else mode.split(":", 1)[1])


def _print_set(ps: PlantedSet, out: dict) -> None:
    rows = []
    shown = lambda v: NOT_ASSESSED if v is None else v  # noqa: E731
    for name, entry in out["encoders"].items():
        for mode in _modes(entry):
            r = entry[mode]
            m = {k: shown(v) for k, v in r["metrics"].items()}
            cut = r["calibration"]["cutoff"]
            rows.append({"method": f"{name}{_mode_name(ps, mode)}",
                         "cutoff": "none (refused)" if cut is None else f"calibrated {cut:.4f}", "precision": m["precision"],
                         "recall": m["recall"], "P@1%": m["precision_at_1pct"],
                         "P@1% lo": m["precision_at_1pct_lower95"], "AUC": m["auc"],
                         "R@P95": m["recall_at_p95"], "flagged": m["flagged"],
                         "src in cand": r["source_in_candidates"], "hard flagged": shown(r["hard_negatives_flagged"])})
    for name, m in out["fixed_defaults"].items():
        rows.append({"method": name, "cutoff": "fixed default", "precision": m["precision"], "recall": m["recall"],
                     "P@1%": m["precision_at_1pct"], "P@1% lo": m["precision_at_1pct_lower95"], "AUC": m.get("auc", ""), "R@P95": m.get("recall_at_p95", ""),
                     "flagged": m["flagged"]})
    print_table(rows)
    d = out["difficulty"]
    print(f"difficulty under {out['default_encoder']}: best negative {d['best_negative']:.4f} > random-pair median "
          f"{d['random_median']:.4f}; {d['share_negatives_above_random_q99']:.0%} of clean items score above the "
          f"random q99 {d['random_q99']:.4f}")
    rows = []
    for name, entry in out["encoders"].items():
        for mode in _modes(entry):
            row = {"method": f"{name}{_mode_name(ps, mode)}"}
            for t, v in entry[mode]["per_transform"].items():
                row[t] = f"{NOT_ASSESSED if v['recall'] is None else format(v['recall'], '.2f')} / {v['auc']:.2f}"
            rows.append(row)
    print("recall at the calibrated cutoff / ROC AUC, per transform:")
    print_table(rows)
    _print_candidates(out)
    shares = [(what, out.get(key)) for what, key in (("encoder's top-k", "time_share"), ("union", "time_share_union"),
                                                      ("cascade", "time_share_cascade"))]
    print(f"verification beside embedding ({out['default_encoder']}: {out['time_share']['encode_seconds']:.1f} s):")
    print_table([{"candidates": what, "pairs": t["candidate_pairs"],
                  **{f"{n} s (share)": f"{v['seconds']:.1f} ({v['share_of_scan']:.0%})"
                     for n, v in t["verifiers"].items()}}
                 for what, t in shares if t])


def _print_candidates(out: dict) -> None:
    cr = out.get("candidate_recall")
    if cr:
        print(f"true source among the candidates before verification (a view alone: its top-{cr['k']}; a union: the "
              f"encoder's top-{cr['k']} and each extra view's top-{cr['k_view']}), all / per transform:")
        print_table([{"view": name, "all": r["all"], "per item": r["candidates_per_item"],
                      **{t: f"{v:.2f}" for t, v in r["per_transform"].items()}}
                     for name, r in [*cr["views"].items(), *((f"union {n}", r) for n, r in cr["unions"].items())]])


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


def _finite(obj):
    """``obj`` with NaN/inf floats replaced by None (results files are strict JSON)."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    return obj


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (under a minute)")
    ap.add_argument("--no-neural", action="store_true", help="weight-free encoders only (skip minilm, effnet)")
    ap.add_argument("--sets", default="images,text,rows",
                    help="comma list of images, text, rows, crops (heavy crops/zooms/rotations of photo cells, "
                         "featureless negatives), small32 (the same at 32 x 32 px)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the set sizes (e.g. 0.5)")
    ap.add_argument("--k", type=int, default=5, help="candidates verified per test item")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="quality", help="results file stem (benchmarks/results/NAME.json)")
    ap.add_argument("--k-view", type=int, default=5, help="candidates each extra view adds (as the scan's --k-view)")
    ap.add_argument("--candidates-only", action="store_true",
                    help="only the true source's recall among the candidates, per view and union (no verification)")
    ap.add_argument("--photos", default="all", choices=("all", *PHOTO_SPLIT),
                    help="photographs the crops/small32 sets are cut from: all, or one half of "
                         "benchmarks.planted_crops.PHOTO_SPLIT (imagefuse is fitted on 'fit'; 'heldout' evaluates it "
                         "on photographs it never saw, at smaller sizes)")
    ap.add_argument("--workdir", default=None, help="where the planted image files go (default: a temp folder)")
    ap.add_argument("--calibration-only", default=None, metavar="PAIRS_JSON",
                    help="no verification: simulate the calibration again on the scores a run saved in "
                         "NAME_pairs.json.gz (benchmarks.quality_pairs); writes NAME_recalibrated.json unless --name")
    ap.add_argument("--write-back", action="store_true",
                    help="with --calibration-only: also rewrite the run's NAME.json for the methods whose calibration now "
                         "gives no cutoff (their figures at the cutoff become None: not assessed); refused when a cutoff moved")
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
    scale = lambda t: (max(20, int(t[0] * args.scale)), max(2, int(t[1] * args.scale)), max(10, int(t[2] * args.scale)))  # noqa: E731
    wanted = {s.strip() for s in args.sets.split(",") if s.strip()}
    bad = wanted - {"images", "text", "rows", "crops", "small32"}
    if bad:
        ap.error(f"unknown set(s) {', '.join(sorted(bad))}; available: images, text, rows, crops, small32")
    t0 = time.perf_counter()
    results: Dict[str, object] = {}
    common = dict(neural=not args.no_neural, k=args.k, n_labels=size["labels"], n_verified_random=size["verified_pairs"],
                  seed=args.seed, candidates_only=args.candidates_only, k_view=args.k_view)
    with tempfile.TemporaryDirectory(prefix="sibscan-quality-") as tmp:
        work = Path(args.workdir or tmp)
        sets: List[PlantedSet] = []
        if "images" in wanted:
            n_train, per, n_clean = scale(size["image"])
            sets.append(image_set(work / "images", n_train=n_train, per_transform=per, n_clean=n_clean, seed=args.seed))
        for name, make in (("crops", crops_set), ("small32", small_set)):
            if name in wanted:
                n_train, per, n_clean = scale(size[crop_size_key(args.photos)])
                sets.append(make(work / name, n_train=n_train, per_transform=per, n_clean=n_clean, seed=args.seed,
                                 photos=args.photos))
        if "text" in wanted:
            n_train, per, n_clean = scale(size["text"])
            sets.append(text_set(n_train=n_train, per_transform=per, n_clean=n_clean, seed=args.seed))
        if "rows" in wanted:
            n_train, per, n_clean = scale(size["table"])
            sets += row_sets(n_train=n_train, per_transform=per, n_clean=n_clean, seed=args.seed, datasets=size["rows"])
        for ps in sets:
            results[ps.name] = run_set(ps, **common)
        pairs = split_pairs(results, {ps.name: truth(ps, _featureless(ps)) for ps in sets})
    verdict = None if args.candidates_only else image_encoder_verdict(results)
    if verdict:
        print(f"\nimage encoder at equal precision (recall at precision >= {TARGET_PRECISION}): "
              + "; ".join(f"{m}: pixels {v['pixels']:.3f} vs effnet {v['effnet']:.3f} -> {v['winner']}" for m, v in verdict.items()))
    payload = {"quick": args.quick, "candidates_only": args.candidates_only, "scale": args.scale, "seed": args.seed, "k": args.k,
               "k_view": args.k_view, "photos": args.photos,
               "prevalence": PREVALENCE, "target_precision": TARGET_PRECISION, "n_labels": size["labels"],
               "sets": results, "image_encoder_verdict": verdict, "seconds": time.perf_counter() - t0,
               "load_average_1_5_15": list(os.getloadavg())}
    path = write_results(args.name, _finite(payload))
    if pairs["sets"]:
        side = write_results(f"{args.name}_pairs", {"results": path.name, "seed": args.seed, "photos": args.photos,
                                                     "n_labels": size["labels"], **pairs},
                             compact=True)
        print(f"wrote {side} (the scores the calibration saw, for --calibration-only)")
    print(f"\nwrote {path} ({payload['seconds']:.0f} s)")
    return payload


if __name__ == "__main__":
    main()
