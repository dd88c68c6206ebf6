"""The random-pair baseline: the score that unrelated items get under this encoder on this data.

A nearest neighbour is the maximum over the whole train set, so even unrelated items reach high
scores when the train set is large.  :func:`compute_baseline` samples random (test, train) pairs,
summarises their score distribution and keeps its upper tail; :func:`expected_chance_siblings`
turns the tail into the expected number of test items whose nearest neighbour clears a cutoff by
chance alone.  :func:`scan_baseline` is the baseline of a scan — exact twins left out, verified
when a verifier decides — the one function ``sibscan scan`` and ``sibscan calibrate`` both call.

Tail model
----------
Up to the baseline's threshold ``u`` (about its 99th percentile) the survival function
``p(c) = P(score > c)`` is the empirical one, interpolated on a grid of quantiles.  Beyond ``u`` it
is a generalised Pareto distribution fitted to the exceedances by probability-weighted moments
(Hosking & Wallis 1987): ``p(c) = p_u * (1 - kappa (c - u) / scale) ** (1 / kappa)``.  Similarity is
bounded by 1, so the fitted tail is usually bounded too (``kappa > 0``, ending at
``tail["endpoint"]``); beyond its end the probability is reported as the smallest positive float,
never exactly 0.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional, Tuple

import numpy as np

from sibscan import fmt
from sibscan.errors import SibscanError
from sibscan.shards import ShardedEmbeddings

__all__ = ["compute_baseline", "neighbour_pair_keys", "pair_keys", "scan_baseline", "streamed_pair_member", "tail_probability", "expected_chance_siblings", "extrapolated",
           "baseline_warning", "verified_budget", "MIN_VERIFIED",
           "QUANTILES"]

QUANTILES = ("0.5", "0.9", "0.99", "0.999", "0.9999")
_CHUNK = 16384
_GRID = 257
_MIN_EXCEED = 30
#: the fewest random pairs a verified baseline scores (however small the scan)
MIN_VERIFIED = 2_000


def _normalised_dot(test_emb: np.ndarray, train_emb: np.ndarray, ti: np.ndarray, tj: np.ndarray) -> np.ndarray:
    """Cosine similarity of rows ``test_emb[ti]`` and ``train_emb[tj]``, chunked to bound memory."""
    out = np.empty(len(ti), dtype=np.float32)
    for start in range(0, len(ti), _CHUNK):
        a = np.asarray(test_emb[ti[start:start + _CHUNK]], dtype=np.float32)
        b = np.asarray(train_emb[tj[start:start + _CHUNK]], dtype=np.float32)
        num = np.einsum("ij,ij->i", a, b)
        den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        out[start:start + _CHUNK] = num / np.maximum(den, 1e-12)
    return out


def _gpd_pwm(y: np.ndarray) -> tuple:
    """Hosking-Wallis probability-weighted-moment fit of a generalised Pareto to exceedances ``y``.

    Returns ``(kappa, scale)`` of the survival function ``(1 - kappa * y / scale) ** (1 / kappa)``
    (``kappa > 0``: bounded tail ending at ``scale / kappa``; ``kappa = 0``: exponential).  Shape is
    clipped to [-0.5, 1] and the scale kept positive, so a handful of ties cannot break the fit.
    """
    k = len(y)
    if k < 2 or float(np.max(y)) <= 0:
        return 0.0, max(float(np.mean(y)) if k else 0.0, 1e-6)
    y = np.sort(y)
    a0 = float(y.mean())
    a1 = float(np.mean((1.0 - (np.arange(1, k + 1) - 0.35) / k) * y))
    denom = a0 - 2.0 * a1
    if denom <= 0:
        return 0.0, max(a0, 1e-6)
    kappa = float(np.clip(a0 / denom - 2.0, -0.5, 1.0))
    scale = max(float(2.0 * a0 * a1 / denom), 1e-6)
    return kappa, scale


def _tail(scores: np.ndarray) -> dict:
    """Empirical survival grid up to the threshold and the exponential fitted beyond it."""
    s = np.sort(scores.astype(np.float64))
    n = len(s)
    k = int(min(max(n // 100, _MIN_EXCEED), max(n // 2, 1)))
    u = float(s[n - k - 1]) if n > k else float(s[0])
    exceed = s[s > u] - u
    p_u = len(exceed) / n
    kappa, scale = _gpd_pwm(exceed)
    levels = np.linspace(0.0, 1.0 - p_u, _GRID)
    body_x = np.quantile(s, levels)
    return {
        "method": "empirical below the threshold, generalised Pareto (probability-weighted moments) beyond it",
        "threshold": u,
        "p_threshold": p_u,
        "scale": scale,
        "shape": kappa,
        "endpoint": u + scale / kappa if kappa > 0 else None,
        "n_exceed": int(len(exceed)),
        "body_x": body_x.tolist(),
        "body_p": (1.0 - levels).tolist(),
    }


def _distinct_pairs(n_test: int, n_train: int, n_pairs: int, rng: np.random.Generator) -> tuple:
    """``n_pairs`` distinct (test, train) index pairs drawn without replacement, or all of them when
    there are no more than that; returns ``(test_idx, train_idx, all_pairs)``."""
    total = n_test * n_train
    if total <= n_pairs:
        flat = np.arange(total, dtype=np.int64)
        return flat // n_train, flat % n_train, True
    flat = rng.choice(total, size=n_pairs, replace=False).astype(np.int64)
    return flat // n_train, flat % n_train, False


def compute_baseline(
    train_emb: np.ndarray,
    test_emb: np.ndarray,
    *,
    n_pairs: int = 100_000,
    seed: int = 0,
    score_fn: Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]] = None,
    encoder_identity: str = "",
    verifier_identity: Optional[str] = None,
    exclude: Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]] = None,
    n_compared: Optional[int] = None,
    exclude_if_room: Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]] = None,
) -> dict:
    """Score random distinct (test, train) pairs and summarise the distribution.

    Parameters
    ----------
    train_emb : ndarray of shape (n_train, dim)
        Train embeddings (may be a float16 memory map; rows need not be normalised).
    test_emb : ndarray of shape (n_test, dim)
        Test embeddings.
    n_pairs : int
        Number of random pairs, distinct and drawn without replacement; every (test, train) pair
        when there are no more than that (then nothing is left to chance).
    seed : int
        Seed of the pair draw.
    score_fn : callable ``(test_idx, train_idx) -> scores``, optional
        The deciding score of pairs ``(test_idx[i], train_idx[i])`` when verification decides
        (arrays of shape (m,)); by default the cosine similarity of the embeddings.
    encoder_identity, verifier_identity : str
        Recorded so a baseline is never applied to another encoder.
    exclude : callable ``(test_idx, train_idx) -> bool mask``, optional
        Pairs known not to be unrelated, dropped from the sample: the scan passes exact twins (equal
        fingerprints) and the pairs in either item's top-k neighbour list, which would otherwise sit
        in the tail that the chance estimate reads.  More pairs are drawn to make up for them.
    exclude_if_room : callable ``(test_idx, train_idx) -> bool mask``, optional
        Pairs dropped as well when at least half the pairs remain (the scan passes the pairs in
        either item's top-k neighbour list; on a tiny scan they are most pairs, and kept).
    n_compared : int, optional
        How many train items each test item's deciding score is the best of (``n_train`` for the
        embedding similarity, the ``k`` verified candidates for a verified score); the expected
        number of chance siblings is computed for that many comparisons.

    Returns
    -------
    dict
        What ``baseline.json`` holds: ``n_pairs, n_possible, all_pairs, n_excluded, neighbours_excluded, seed, score, mean,
        sd, quantiles, max, histogram, n_train, n_test, n_compared, encoder_identity,
        verifier_identity, tail``.
    """
    n_train, n_test = len(train_emb), len(test_emb)
    if n_train == 0 or n_test == 0:
        raise SibscanError(f"the random-pair baseline needs both splits non-empty (train {n_train}, test {n_test} items)")
    if n_pairs < 2:
        raise SibscanError(f"the random-pair baseline needs at least 2 pairs, got n_pairs={n_pairs}")
    rng = np.random.default_rng(seed)
    # a few more than asked, so that the excluded pairs (twins, neighbours: a small share) are made up for
    extra = 0 if exclude is None and exclude_if_room is None else max(16, n_pairs // 20)
    ti, tj, all_pairs = _distinct_pairs(n_test, n_train, n_pairs + extra, rng)
    n_excluded, room = 0, None
    if exclude is not None or exclude_if_room is not None:
        keep = np.ones(len(ti), bool) if exclude is None else ~np.asarray(exclude(ti, tj), dtype=bool)
        if exclude_if_room is not None:
            # on a tiny scan nearly every pair is someone's neighbour: the few left would be the most
            # dissimilar, not random, so the neighbours stay in (and the record says so)
            narrower = keep & ~np.asarray(exclude_if_room(ti, tj), dtype=bool)
            room = bool(narrower.sum() >= max(2, keep.sum() // 2))
            keep = narrower if room else keep
        n_excluded = int((~keep).sum()) if all_pairs else int((~keep[:n_pairs]).sum())
        ti, tj = ti[keep][:n_pairs], tj[keep][:n_pairs]
        if len(ti) < 2:
            raise SibscanError("the random-pair baseline has fewer than 2 pairs left after excluding exact twins")
    n_pairs = len(ti)
    if score_fn is None:
        scores = _normalised_dot(test_emb, train_emb, ti, tj)
        kind = "similarity"
    else:
        scores = np.asarray(score_fn(ti, tj), dtype=np.float32)
        kind = "verified"
        if scores.shape != (n_pairs,):
            raise SibscanError(f"score_fn returned shape {scores.shape} for {n_pairs} pairs")
    finite = np.isfinite(scores)
    if not finite.all():
        scores = scores[finite]
        if len(scores) < 2:
            raise SibscanError("the random-pair baseline got no finite scores; check the embeddings for NaN")
    s64 = scores.astype(np.float64)
    counts, edges = np.histogram(s64, bins=60)
    return {
        "n_pairs": int(len(scores)),
        "n_possible": int(n_test) * int(n_train),
        "all_pairs": bool(all_pairs),
        "n_excluded": n_excluded,
        "neighbours_excluded": room,
        "seed": int(seed),
        "score": kind,
        "mean": float(s64.mean()),
        "sd": float(s64.std(ddof=1)),
        "quantiles": {q: float(np.quantile(s64, float(q))) for q in QUANTILES},
        "max": float(s64.max()),
        "histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
        "n_train": int(n_train),
        "n_test": int(n_test),
        "n_compared": int(n_compared) if n_compared else int(n_train),
        "encoder_identity": encoder_identity,
        "verifier_identity": verifier_identity,
        "tail": _tail(s64),
    }


def verified_budget(n_verified_pairs: int, n_test: int, k: int) -> int:
    """Random pairs to verify: at most ``n_verified_pairs`` and at most half the candidate pairs the
    scan verifies (``n_test * k``: the baseline then costs at most half the verification stage), but
    never fewer than :data:`MIN_VERIFIED` (a 99th percentile needs a few dozen pairs above it)."""
    return int(min(n_verified_pairs, max(MIN_VERIFIED, n_test * k // 2)))


def pair_keys(test_index: np.ndarray, train_index: np.ndarray, n_train: int) -> np.ndarray:
    """The flat key ``test * n_train + train`` of each (test, train) pair, int64 of shape (m,)."""
    return np.asarray(test_index, np.int64) * int(n_train) + np.asarray(train_index, np.int64)


def neighbour_pair_keys(neighbours, n_train: int) -> np.ndarray:
    """Sorted flat keys ``test * n_train + train`` of the (test, train) pairs in either direction's
    neighbour lists: a nearest neighbour is not a random pair.  ``neighbours`` may be a part of the
    table (the scan passes each streamed train→test block; see ``scan_baseline(neighbour_keys=)``)."""
    keys = []
    for q, n, swap in (("test", "train", False), ("train", "test", True)):
        sub = neighbours.direction(q, n)
        if len(sub):
            a, b = sub["query_index"], sub["neighbour_index"]
            keys.append(pair_keys(b, a, n_train) if swap else pair_keys(a, b, n_train))
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)


def streamed_pair_member(blocks: Callable[[], Iterable[Tuple[np.ndarray, np.ndarray]]],
                         n_train: int) -> Callable[[np.ndarray], np.ndarray]:
    """Which flat (test, train) keys (:func:`pair_keys`) are rows of a train→test neighbour list read
    as ``blocks()``: ``(train_index, test_index)`` a block at a time (the scan's table on disk), so
    memory does not grow with the train set.  Returns ``member(keys) -> bool ndarray of shape (m,)``,
    the streamed counterpart of :func:`neighbour_pair_keys`' train→test keys."""
    def member(keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, np.int64)
        wanted = np.unique(keys)  # sorted once; each block is looked up in it, not the keys re-sorted per block
        hit = np.zeros(len(wanted), bool)
        if len(wanted):
            for train_index, test_index in blocks():
                found = pair_keys(test_index, train_index, n_train)
                pos = np.minimum(np.searchsorted(wanted, found), len(wanted) - 1)
                hit[pos[wanted[pos] == found]] = True
        return hit[np.searchsorted(wanted, keys)]

    return member


def scan_baseline(
    embeddings: Dict[str, np.ndarray],
    *,
    n_pairs: int,
    n_verified_pairs: int,
    seed: int,
    encoder_identity: str,
    verifier=None,
    splits: Optional[Dict[str, object]] = None,
    fingerprints: Optional[Dict[str, np.ndarray]] = None,
    doc_index: Optional[Dict[str, np.ndarray]] = None,
    neighbours=None,
    k: Optional[int] = None,
    neighbour_keys: Optional[np.ndarray | Callable[[np.ndarray], np.ndarray]] = None,
) -> dict:
    """The random-pair baseline of a scan, on the score that decides there.

    Parameters
    ----------
    embeddings : {"train": ndarray of shape (n_train, dim), "test": ndarray of shape (n_test, dim)}
        The scan's embeddings; ``train`` may be :class:`~sibscan.shards.ShardedEmbeddings` (a train
        index): only a random subset of its rows is read.
    n_pairs : int
        Random pairs scored by embedding similarity.
    n_verified_pairs : int
        At most this many when ``verifier`` scores them (verification is per pair; see
        :func:`verified_budget` for how the number is scaled to the scan).
    seed : int
    encoder_identity : str
    verifier : Verifier, optional
        Scores the pairs (then ``splits`` holds the items ``{"train": Items, "test": Items}``).
    fingerprints : {"train": ndarray of shape (n_train, 2), "test": ...}, optional
        Exact fingerprints: pairs that are exact twins are left out (they are copies, not chance).
    doc_index : {"train": ndarray of shape (n_chunks,), "test": ...}, optional
        Chunked text: the document of each embedding row; a document is represented by its first
        chunk, and no pair is left out for being an exact twin.
    neighbours : Neighbours, optional
        The scan's neighbours table: pairs in a test item's or a train item's neighbour list are
        left out (they are the closest, not random) unless that leaves fewer than half the pairs.
    k : int, optional
        Candidates verified per test item (the scan's ``--k``), for the chance-sibling count.
    neighbour_keys : ndarray of int64, or callable ``(keys) -> bool mask``, optional
        More pairs of the neighbour lists, as :func:`neighbour_pair_keys` gives them: the rows of the table
        that ``neighbours`` does not hold (the scan streams the train→test direction to disk).  A callable
        says which of the flat keys it is given are among them (the scan reads those rows back from disk
        a block at a time instead of holding a key per row).

    Returns
    -------
    dict
        As :func:`compute_baseline`.
    """
    if doc_index is not None:
        embeddings = {s: embeddings[s][np.unique(doc_index[s], return_index=True)[1]] for s in embeddings}
        fingerprints = None
    n_train_all, n_test = len(embeddings["train"]), len(embeddings["test"])
    rows = None
    if isinstance(embeddings["train"], ShardedEmbeddings):
        # a train index may not fit in memory: random pairs only need a random subset of its rows
        sh = embeddings["train"]
        rows = np.sort(np.random.default_rng(seed).choice(sh.n, size=min(sh.n, n_pairs), replace=False))
        embeddings = {"train": sh.take(rows), "test": embeddings["test"]}
        if verifier is not None:
            splits = {"train": splits["train"].subset(rows), "test": splits["test"]}
        if fingerprints is not None:
            fingerprints = {"train": fingerprints["train"][rows], "test": fingerprints["test"]}
    near = None if neighbours is None else neighbour_pair_keys(neighbours, n_train_all)
    more = neighbour_keys if callable(neighbour_keys) else None
    if neighbour_keys is not None and more is None:
        near = np.union1d(np.zeros(0, np.int64) if near is None else near, np.asarray(neighbour_keys, np.int64))

    def verified_scores(test_idx: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
        return verifier.verify(splits["test"], np.asarray(test_idx), splits["train"], np.asarray(train_idx)).scores

    def exact_twins(test_idx: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
        return (fingerprints["test"][test_idx] == fingerprints["train"][train_idx]).all(axis=1)

    def neighbour_pairs(test_idx: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
        train_orig = train_idx if rows is None else rows[train_idx]
        keys = pair_keys(test_idx, train_orig, n_train_all)
        held = np.isin(keys, near) if near is not None else np.zeros(len(keys), bool)
        return held | np.asarray(more(keys), dtype=bool) if more is not None else held

    if verifier is not None:
        n_pairs = min(n_pairs, verified_budget(n_verified_pairs, n_test, k or 1) if k else n_verified_pairs)
    return compute_baseline(
        embeddings["train"], embeddings["test"], seed=seed, n_pairs=n_pairs,
        score_fn=None if verifier is None else verified_scores,
        exclude=None if fingerprints is None else exact_twins,
        exclude_if_room=neighbour_pairs if (near is not None and len(near)) or more is not None else None,
        encoder_identity=encoder_identity, verifier_identity=None if verifier is None else verifier.identity,
        n_compared=min(k, n_train_all) if verifier is not None and k else n_train_all,
    )


def tail_probability(baseline: dict, cutoff: float | np.ndarray) -> np.ndarray | float:
    """``P(score > cutoff)`` for one random pair, from the baseline's tail (see the module docstring).

    Parameters
    ----------
    baseline : dict
        From :func:`compute_baseline`.
    cutoff : float or ndarray of shape (m,)

    Returns
    -------
    float or ndarray of shape (m,), each in (0, 1]
    """
    tail = baseline.get("tail") or {}
    missing = {"threshold", "p_threshold", "scale", "body_x", "body_p"} - set(tail)
    if missing:
        raise SibscanError(f"baseline has no usable tail (missing {', '.join(sorted(missing))}); re-run 'sibscan scan' to recompute it")
    c = np.asarray(cutoff, dtype=np.float64)
    u, p_u, scale = float(tail["threshold"]), float(tail["p_threshold"]), float(tail["scale"])
    body = np.interp(c, np.asarray(tail["body_x"]), np.asarray(tail["body_p"]), left=1.0, right=p_u)
    y = np.maximum(c - u, 0.0)
    kappa = float(tail.get("shape", 0.0))
    if abs(kappa) < 1e-9:
        beyond = p_u * np.exp(-y / scale)
    else:
        base = np.maximum(1.0 - kappa * y / scale, 0.0)
        with np.errstate(divide="ignore"):
            beyond = p_u * base ** (1.0 / kappa)
    p = np.where(c > u, beyond, np.maximum(body, p_u))
    # beyond a bounded tail's end the model says 0; keep the smallest positive probability instead
    # so a count is never silently exactly 0 (``tail["endpoint"]`` says where the model ends)
    p = np.clip(p, np.finfo(np.float64).tiny, 1.0)
    return float(p) if p.ndim == 0 else p


def expected_chance_siblings(baseline: dict, cutoff: float, n_train: int, n_test: int) -> float:
    """Expected number of test items whose deciding score exceeds ``cutoff`` by chance.

    ``n_test * (1 - (1 - p)**m)`` with ``p`` = :func:`tail_probability` and ``m`` the number of
    train items each test item's deciding score is the best of: ``baseline["n_compared"]`` (the
    ``k`` verified candidates when a verifier decides, all ``n_train`` train items for the embedding
    similarity; ``n_train`` for a baseline that does not say).  Computed as
    ``-expm1(m * log1p(-p))`` so tiny ``p`` keeps its precision.  A verified scan's candidates are
    the closest by embedding, not random pairs, so for it the count is a rough, low estimate.

    Returns
    -------
    float
        In [0, n_test]; positive whenever ``n_train`` and ``n_test`` are.
    """
    p = float(tail_probability(baseline, cutoff))
    m = min(int(baseline.get("n_compared") or n_train), n_train) if n_train else 0
    if p >= 1.0:
        return float(n_test)
    return float(n_test * -np.expm1(m * np.log1p(-p)))


def extrapolated(baseline: Optional[dict], cutoff: Optional[float]) -> bool:
    """Whether ``cutoff`` lies beyond every random pair scored: the chance count there comes from
    the fitted tail alone."""
    return baseline is not None and cutoff is not None and "max" in baseline and float(cutoff) > float(baseline["max"])


def baseline_warning(baseline: Optional[dict], cutoff: Optional[float]) -> Optional[str]:
    """A warning when ``cutoff`` sits inside the baseline's body (below its 99.9th percentile), else None."""
    if baseline is None or cutoff is None or not np.isfinite(cutoff):
        return None
    q999 = float(baseline["quantiles"]["0.999"])
    if cutoff < q999:
        q99 = float(baseline["quantiles"]["0.99"])
        share = "more than 1 in 100" if cutoff < q99 else "more than 1 in 1000"
        return (
            f"cutoff {fmt.score(cutoff)} is below the random-pair baseline's 99.9th percentile ({fmt.score(q999)}): "
            f"{share} unrelated pairs score above it, so it flags unrelated items; calibrate it with 'sibscan calibrate'"
        )
    return None

