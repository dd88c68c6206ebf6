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

from typing import Callable, Dict, Optional

import numpy as np

from sibscan.errors import SibscanError
from sibscan.shards import ShardedEmbeddings

__all__ = ["compute_baseline", "scan_baseline", "tail_probability", "expected_chance_siblings", "baseline_warning",
           "QUANTILES"]

QUANTILES = ("0.5", "0.9", "0.99", "0.999", "0.9999")
_CHUNK = 16384
_GRID = 257
_MIN_EXCEED = 30


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
) -> dict:
    """Score random (test, train) pairs and summarise the distribution.

    Parameters
    ----------
    train_emb : ndarray of shape (n_train, dim)
        Train embeddings (may be a float16 memory map; rows need not be normalised).
    test_emb : ndarray of shape (n_test, dim)
        Test embeddings.
    n_pairs : int
        Number of random pairs (drawn with replacement; pairs that happen to be real siblings are
        rare, about one in ``n_train``).
    seed : int
        Seed of the pair draw.
    score_fn : callable ``(test_idx, train_idx) -> scores``, optional
        The deciding score of pairs ``(test_idx[i], train_idx[i])`` when verification decides
        (arrays of shape (m,)); by default the cosine similarity of the embeddings.
    encoder_identity, verifier_identity : str
        Recorded so a baseline is never applied to another encoder.
    exclude : callable ``(test_idx, train_idx) -> bool mask``, optional
        Pairs known not to be unrelated, dropped from the sample: the scan passes exact twins (equal
        fingerprints), which would otherwise sit in the tail that the chance estimate reads.

    Returns
    -------
    dict
        What ``baseline.json`` holds: ``n_pairs, seed, score, mean, sd, quantiles, max, histogram,
        n_train, n_test, encoder_identity, verifier_identity, tail``.
    """
    n_train, n_test = len(train_emb), len(test_emb)
    if n_train == 0 or n_test == 0:
        raise SibscanError(f"the random-pair baseline needs both splits non-empty (train {n_train}, test {n_test} items)")
    if n_pairs < 2:
        raise SibscanError(f"the random-pair baseline needs at least 2 pairs, got n_pairs={n_pairs}")
    rng = np.random.default_rng(seed)
    ti = rng.integers(0, n_test, n_pairs)
    tj = rng.integers(0, n_train, n_pairs)
    n_excluded = 0
    if exclude is not None:
        keep = ~np.asarray(exclude(ti, tj), dtype=bool)
        n_excluded = int((~keep).sum())
        ti, tj = ti[keep], tj[keep]
        n_pairs = len(ti)
        if n_pairs < 2:
            raise SibscanError("the random-pair baseline has fewer than 2 pairs left after excluding exact twins")
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
        "n_excluded": n_excluded,
        "seed": int(seed),
        "score": kind,
        "mean": float(s64.mean()),
        "sd": float(s64.std(ddof=1)),
        "quantiles": {q: float(np.quantile(s64, float(q))) for q in QUANTILES},
        "max": float(s64.max()),
        "histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
        "n_train": int(n_train),
        "n_test": int(n_test),
        "encoder_identity": encoder_identity,
        "verifier_identity": verifier_identity,
        "tail": _tail(s64),
    }


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
        At most this many when ``verifier`` scores them (verification is per pair).
    seed : int
    encoder_identity : str
    verifier : Verifier, optional
        Scores the pairs (then ``splits`` holds the items ``{"train": Items, "test": Items}``).
    fingerprints : {"train": ndarray of shape (n_train, 2), "test": ...}, optional
        Exact fingerprints: pairs that are exact twins are left out (they are copies, not chance).
    doc_index : {"train": ndarray of shape (n_chunks,), "test": ...}, optional
        Chunked text: the document of each embedding row; a document is represented by its first
        chunk, and no pair is left out.

    Returns
    -------
    dict
        As :func:`compute_baseline`.
    """
    if doc_index is not None:
        embeddings = {s: embeddings[s][np.unique(doc_index[s], return_index=True)[1]] for s in embeddings}
        fingerprints = None
    if isinstance(embeddings["train"], ShardedEmbeddings):
        # a train index may not fit in memory: random pairs only need a random subset of its rows
        sh = embeddings["train"]
        rows = np.sort(np.random.default_rng(seed).choice(sh.n, size=min(sh.n, n_pairs), replace=False))
        embeddings = {"train": sh.take(rows), "test": embeddings["test"]}
        if verifier is not None:
            splits = {"train": splits["train"].subset(rows), "test": splits["test"]}
        if fingerprints is not None:
            fingerprints = {"train": fingerprints["train"][rows], "test": fingerprints["test"]}

    def verified_scores(test_idx: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
        return verifier.verify(splits["test"], np.asarray(test_idx), splits["train"], np.asarray(train_idx)).scores

    def exact_twins(test_idx: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
        return (fingerprints["test"][test_idx] == fingerprints["train"][train_idx]).all(axis=1)

    return compute_baseline(
        embeddings["train"], embeddings["test"], seed=seed,
        n_pairs=n_pairs if verifier is None else min(n_pairs, n_verified_pairs),
        score_fn=None if verifier is None else verified_scores, exclude=None if fingerprints is None else exact_twins,
        encoder_identity=encoder_identity, verifier_identity=None if verifier is None else verifier.identity,
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
    """Expected number of test items whose nearest neighbour exceeds ``cutoff`` by chance.

    ``n_test * (1 - (1 - p)**n_train)`` with ``p`` = :func:`tail_probability` (computed as
    ``-expm1(n_train * log1p(-p))`` so tiny ``p`` keeps its precision).

    Returns
    -------
    float
        In [0, n_test]; positive whenever ``n_train`` and ``n_test`` are.
    """
    p = float(tail_probability(baseline, cutoff))
    if p >= 1.0:
        return float(n_test)
    return float(n_test * -np.expm1(n_train * np.log1p(-p)))


def baseline_warning(baseline: Optional[dict], cutoff: Optional[float]) -> Optional[str]:
    """A warning when ``cutoff`` sits inside the baseline's body (below its 99.9th percentile), else None."""
    if baseline is None or cutoff is None or not np.isfinite(cutoff):
        return None
    q999 = float(baseline["quantiles"]["0.999"])
    if cutoff < q999:
        q99 = float(baseline["quantiles"]["0.99"])
        share = "more than 1 in 100" if cutoff < q99 else "more than 1 in 1000"
        return (
            f"cutoff {cutoff:.4f} is below the random-pair baseline's 99.9th percentile ({q999:.4f}): "
            f"{share} unrelated pairs score above it, so it flags unrelated items; calibrate it with 'sibscan calibrate'"
        )
    return None


def format_expected(count: float) -> str:
    """A chance-sibling count for people: 3 significant digits, or "< 0.01" for the tail's tiny values."""
    return "< 0.01" if count < 0.01 else f"{count:.3g}"
