"""The candidates :mod:`benchmarks.quality` verifies, as a scan makes them: each encoder's exact top-k,
the extra views' top-k and their unions, the ``--cascade`` selection, and the true source's recall
among them before any verification.
"""
from __future__ import annotations

import time
from typing import Dict, Sequence, Tuple

import numpy as np

from benchmarks.planted import PlantedSet


def top_k(test_emb: np.ndarray, train_emb: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Exact top-k by cosine (brute force: these sets are small). Returns sims, idx of shape (n_test, k)."""
    sims = test_emb @ train_emb.T
    k = min(k, sims.shape[1])
    idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    part = np.take_along_axis(sims, idx, axis=1)
    order = np.argsort(-part, axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1), np.take_along_axis(idx, order, axis=1)


def union_candidates(*idx: np.ndarray) -> np.ndarray:
    """Row-wise union of candidate lists (each of shape (n_test, k_i)), first occurrence first;
    shorter rows are padded with their first candidate: (n_test, max union size)."""
    rows = [list(dict.fromkeys(np.concatenate([i[r] for i in idx]).tolist())) for r in range(len(idx[0]))]
    width = max(len(r) for r in rows)
    return np.array([r + r[:1] * (width - len(r)) for r in rows], dtype=np.int64)


def view_candidates(ps: PlantedSet, embeddings: Dict[str, Tuple[np.ndarray, np.ndarray]], views: Sequence[str],
                    k: int) -> Tuple[Dict[str, np.ndarray], Dict[str, float]]:
    """Each view's top-k train items per test item (n_test, k), and its seconds: the encoders'
    (already embedded: their encode time) and the scan's built-in views (:func:`sibscan.stages.views.view_topk`)."""
    from sibscan.options import SearchOptions
    from sibscan.stages.views import view_topk

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
        per = {t: float(hit[ps.planted & (ps.transform == t)].mean())
               for t in dict.fromkeys(ps.transform[ps.planted].tolist())}
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
    similarity of the pair, as the scan does (:func:`sibscan.stages.candidates.verify_neighbours`)."""
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
    """The candidates a scan with ``--cascade`` verifies (:func:`sibscan.stages.views.cascade_candidates`'s
    selection on the same signals), as a padded matrix, with the windows scoring's seconds."""
    from sibscan.verify.cascade import IMAGE_CASCADE, cascade_keep
    from sibscan.stages.views import pair_window_scores

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
