"""The random-pair baseline: the score that unrelated items get under this encoder on this data.

A nearest neighbour is the maximum over the whole train set, so even unrelated items reach high
scores when the train set is large.  :func:`compute_baseline` scores every (test, train) pair where
there are few (:data:`ALL_PAIRS_MAX`), else a uniform random sample of them — an item's nearest
neighbours included: on a small set of alike items they are the high tail itself — summarises their
score distribution and keeps its upper tail; :func:`expected_chance_siblings` turns the tail into the
expected number of test items whose nearest neighbour clears a cutoff by chance alone.
:func:`scan_baseline` is the baseline of a scan — exact twins left out, verified when a verifier
decides — the one function ``sibscan scan`` and ``sibscan calibrate`` both call.

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

from sibscan import fmt
from sibscan.errors import SibscanError
from sibscan.store.shards import ShardedEmbeddings

__all__ = ["ALL_PAIRS_MAX", "ALL_VERIFIED_MAX", "MIN_VERIFIED", "QUANTILES", "baseline_warning", "compute_baseline",
           "expected_chance_siblings",
           "extrapolated", "left_out_neighbours", "neighbour_pair_keys", "pair_keys", "scan_baseline",
           "tail_probability", "verified_budget"]

QUANTILES = ("0.5", "0.9", "0.99", "0.999", "0.9999")
_CHUNK = 16384
#: pairs scored at once by the all-pairs baseline (a block of 4 MB of float32 scores)
_BLOCK_PAIRS = 1 << 20
#: every (test, train) pair is scored, not a sample, where there are at most this many: on a small set
#: the pairs a sample would miss can be the whole high tail; 2,000,000 pairs at d = 1280 take 0.27 s,
#: less than the previous 100,000-pair sample's 0.60 s (``benchmarks/chance_baseline.py``), and 16 MB
#: (float64) for the summary.  Verified scores cost a verification each: see :data:`ALL_VERIFIED_MAX`
ALL_PAIRS_MAX = 2_000_000
#: every pair is verified, not a sample of :func:`verified_budget`, where there are at most this many
#: (and at most ``--verified-baseline-pairs``): the sets issue 30 names (UCR Wine 3,078 pairs, Meat
#: 3,600) at a bounded cost — 5,000 pairs are 1 s of ``lagcorr`` (5,104 pairs/s) and 12 s of
#: ``imagefuse`` (about 400 pairs/s, docs/benchmarks.md), where the whole 2,000,000 would be 80 minutes
ALL_VERIFIED_MAX = 5_000
_GRID = 257
_MIN_EXCEED = 30
#: the fewest random pairs a verified baseline scores (however small the scan)
MIN_VERIFIED = 2_000


def _unit(rows) -> np.ndarray:
    """``rows`` as float32 of unit length (a zero row stays zero)."""
    a = np.asarray(rows, dtype=np.float32)
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


def _normalised_dot(test_emb: np.ndarray, train_emb: np.ndarray, ti: np.ndarray, tj: np.ndarray) -> np.ndarray:
    """Cosine similarity of rows ``test_emb[ti]`` and ``train_emb[tj]``, chunked to bound memory."""
    if isinstance(train_emb, ShardedEmbeddings):  # a train index: read only the rows drawn
        rows, tj = np.unique(tj, return_inverse=True)
        train_emb = train_emb.take(rows)
    out = np.empty(len(ti), dtype=np.float32)
    for start in range(0, len(ti), _CHUNK):
        a = np.asarray(test_emb[ti[start:start + _CHUNK]], dtype=np.float32)
        b = np.asarray(train_emb[tj[start:start + _CHUNK]], dtype=np.float32)
        num = np.einsum("ij,ij->i", a, b)
        # the norms divide the m dot products, not the m x dim rows (a sample's rows are used once)
        out[start:start + _CHUNK] = num / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return out


def _rows(emb, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of an embedding array, a memory map or a :class:`ShardedEmbeddings`."""
    return emb.read(start, stop) if isinstance(emb, ShardedEmbeddings) else np.asarray(emb[start:stop])


def _all_pair_blocks(n_test: int, n_train: int):
    """``(test_start, test_stop, train_start, train_stop)`` blocks that cover every (test, train) pair
    once, each at most :data:`_BLOCK_PAIRS` pairs (the unit of memory of the all-pairs baseline)."""
    train_step = max(1, min(n_train, _BLOCK_PAIRS))
    test_step = max(1, _BLOCK_PAIRS // train_step)
    for j0 in range(0, n_train, train_step):
        for i0 in range(0, n_test, test_step):
            yield i0, min(i0 + test_step, n_test), j0, min(j0 + train_step, n_train)


def _all_pair_scores(test_emb, train_emb, exclude) -> tuple:
    """The cosine similarity of every (test, train) pair but those ``exclude`` names, a block at a time
    (the block's rows normalised and multiplied: the same score :func:`_normalised_dot` gives a pair);
    returns ``(scores of shape (m,), n_excluded)``."""
    out, n_excluded = [], 0
    a = b = None
    for i0, i1, j0, j1 in _all_pair_blocks(len(test_emb), len(train_emb)):
        if i0 == 0:  # a new block of train rows, read once
            b = _unit(_rows(train_emb, j0, j1))
        a = _unit(_rows(test_emb, i0, i1))
        s = (a @ b.T).ravel()
        if exclude is not None:
            ti, tj = np.repeat(np.arange(i0, i1), j1 - j0), np.tile(np.arange(j0, j1), i1 - i0)
            drop = np.asarray(exclude(ti, tj), dtype=bool)
            n_excluded += int(drop.sum())
            s = s[~drop]
        out.append(s)
    return np.concatenate(out), n_excluded


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


def _sampled_pairs(n_test: int, n_train: int, n_pairs: int, rng: np.random.Generator) -> tuple:
    """``n_pairs`` distinct (test, train) index pairs drawn uniformly without replacement: every pair is
    as likely as any other, an item's nearest neighbours included; returns ``(test_idx, train_idx)``."""
    flat = rng.choice(n_test * n_train, size=min(n_pairs, n_test * n_train), replace=False).astype(np.int64)
    return flat // n_train, flat % n_train


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
    all_pairs_max: Optional[int] = None,
) -> dict:
    """Score every (test, train) pair, or a uniform random sample of them, and summarise the distribution.

    Where the pairs are few (``n_test * n_train <= max(all_pairs_max, n_pairs)``) every pair is scored,
    a block at a time; elsewhere ``n_pairs`` distinct pairs drawn uniformly.  No pair is left out for
    being an item's nearest neighbour: on a small set of alike items those pairs *are* the upper tail
    that the chance count reads (UCR Meat: 15.3 chance siblings at r >= 0.9999 with them left out,
    44.2 with all 3,600 pairs; ``benchmarks/chance_baseline.py``).

    Parameters
    ----------
    train_emb : ndarray of shape (n_train, dim)
        Train embeddings (may be a float16 memory map or a :class:`ShardedEmbeddings`; rows need not
        be normalised).
    test_emb : ndarray of shape (n_test, dim)
        Test embeddings.
    n_pairs : int
        Pairs in the random sample, distinct and drawn without replacement.
    seed : int
        Seed of the pair draw.
    score_fn : callable ``(test_idx, train_idx) -> scores``, optional
        The deciding score of pairs ``(test_idx[i], train_idx[i])`` when verification decides
        (arrays of shape (m,)); by default the cosine similarity of the embeddings.
    encoder_identity, verifier_identity : str
        Recorded so a baseline is never applied to another encoder.
    exclude : callable ``(test_idx, train_idx) -> bool mask``, optional
        Pairs known not to be unrelated, dropped: the scan passes exact twins (equal fingerprints),
        copies rather than chance.  A sample draws a few more pairs to make up for them.
    n_compared : int, optional
        How many train items each test item's deciding score is the best of (``n_train`` for the
        embedding similarity, the ``k`` verified candidates for a verified score); the expected
        number of chance siblings is computed for that many comparisons.
    all_pairs_max : int, optional
        Every pair is scored when there are at most this many (default :data:`ALL_PAIRS_MAX`, or
        :data:`ALL_VERIFIED_MAX` with a ``score_fn``: each of its pairs may cost a verification).

    Returns
    -------
    dict
        What ``baseline.json`` holds: ``n_pairs, n_possible, all_pairs, draw ("all" or "uniform"),
        n_excluded, seed, score, mean, sd, quantiles, max, histogram, n_train, n_test, n_compared,
        encoder_identity, verifier_identity, tail``.
    """
    n_train, n_test = len(train_emb), len(test_emb)
    if n_train == 0 or n_test == 0:
        raise SibscanError(f"the random-pair baseline needs both splits non-empty (train {n_train}, test {n_test} "
                           "items)")
    if n_pairs < 2:
        raise SibscanError(f"the random-pair baseline needs at least 2 pairs, got n_pairs={n_pairs}")
    total = n_test * n_train
    if all_pairs_max is None:
        all_pairs_max = ALL_PAIRS_MAX if score_fn is None else ALL_VERIFIED_MAX
    every = total <= max(int(all_pairs_max), n_pairs)
    n_excluded = 0
    if every and score_fn is None:
        scores, n_excluded = _all_pair_scores(test_emb, train_emb, exclude)
    else:
        if every:
            flat = np.arange(total, dtype=np.int64)
            ti, tj = flat // n_train, flat % n_train
        else:  # a few more than asked, so that the excluded pairs (exact twins: a small share) are made up for
            ti, tj = _sampled_pairs(n_test, n_train, n_pairs + (0 if exclude is None else max(16, n_pairs // 20)),
                                    np.random.default_rng(seed))
        if exclude is not None:
            keep = ~np.asarray(exclude(ti, tj), dtype=bool)
            n_excluded = int((~keep).sum()) if every else int((~keep[:n_pairs]).sum())
            ti, tj = ti[keep], tj[keep]
        if not every:
            ti, tj = ti[:n_pairs], tj[:n_pairs]
        if score_fn is None:
            scores = _normalised_dot(test_emb, train_emb, ti, tj)
        else:
            scores = np.asarray(score_fn(ti, tj), dtype=np.float32)
            if scores.shape != (len(ti),):
                raise SibscanError(f"score_fn returned shape {scores.shape} for {len(ti)} pairs")
    if len(scores) < 2:
        raise SibscanError("the random-pair baseline has fewer than 2 pairs left after excluding exact twins")
    finite = np.isfinite(scores)
    if not finite.all():
        scores = scores[finite]
        if len(scores) < 2:
            raise SibscanError("the random-pair baseline got no finite scores; check the embeddings for NaN")
    s64 = scores.astype(np.float64)
    counts, edges = np.histogram(s64, bins=60)
    return {
        "n_pairs": int(len(scores)),
        "n_possible": int(total),
        "all_pairs": bool(every),
        "draw": "all" if every else "uniform",
        "n_excluded": n_excluded,
        "seed": int(seed),
        "score": "similarity" if score_fn is None else "verified",
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
    neighbour lists: a nearest neighbour is not a random pair (the known-"different" control pairs of
    :mod:`.controls` are drawn outside them)."""
    keys = []
    for q, n, swap in (("test", "train", False), ("train", "test", True)):
        sub = neighbours.direction(q, n)
        if len(sub):
            a, b = sub["query_index"], sub["neighbour_index"]
            keys.append(pair_keys(b, a, n_train) if swap else pair_keys(a, b, n_train))
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)


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
    k: Optional[int] = None,
) -> dict:
    """The random-pair baseline of a scan, on the score that decides there.

    Every (test, train) pair where there are few (at most :data:`ALL_PAIRS_MAX` for the embedding
    similarity; when a verifier scores them, at most :data:`ALL_VERIFIED_MAX` or the verified sample's
    size, whichever is larger, and at most ``n_verified_pairs``), else a uniform sample;
    exact twins left out, an item's nearest neighbours not (see :func:`compute_baseline`).

    Parameters
    ----------
    embeddings : {"train": ndarray of shape (n_train, dim), "test": ndarray of shape (n_test, dim)}
        The scan's embeddings; ``train`` may be :class:`~sibscan.store.shards.ShardedEmbeddings` (a train
        index): a sample reads only the rows it draws, all pairs a block of rows at a time.
    n_pairs : int
        Random pairs scored by embedding similarity.
    n_verified_pairs : int
        At most this many when ``verifier`` scores them (verification is per pair; see
        :func:`verified_budget` for how a sample is scaled to the scan).
    seed : int
    encoder_identity : str
    verifier : Verifier, optional
        Scores the pairs (then ``splits`` holds the items ``{"train": Items, "test": Items}``).
    fingerprints : {"train": ndarray of shape (n_train, 2), "test": ...}, optional
        Exact fingerprints: pairs that are exact twins are left out (they are copies, not chance).
    doc_index : {"train": ndarray of shape (n_chunks,), "test": ...}, optional
        Chunked text: the document of each embedding row; a document is represented by its first
        chunk, and no pair is left out for being an exact twin.
    k : int, optional
        Candidates verified per test item (the scan's ``--k``), for the chance-sibling count.

    Returns
    -------
    dict
        As :func:`compute_baseline`.
    """
    if doc_index is not None:
        embeddings = {s: embeddings[s][np.unique(doc_index[s], return_index=True)[1]] for s in embeddings}
        fingerprints = None
    n_train, n_test = len(embeddings["train"]), len(embeddings["test"])

    def verified_scores(test_idx: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
        return verifier.verify(splits["test"], np.asarray(test_idx), splits["train"], np.asarray(train_idx)).scores

    def exact_twins(test_idx: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
        return (fingerprints["test"][test_idx] == fingerprints["train"][train_idx]).all(axis=1)

    all_pairs_max = ALL_PAIRS_MAX
    if verifier is not None:  # a verified pair costs a verification: all of them only where they are few
        n_pairs = min(n_pairs, verified_budget(n_verified_pairs, n_test, k or 1) if k else n_verified_pairs)
        all_pairs_max = min(n_verified_pairs, max(n_pairs, ALL_VERIFIED_MAX))
    return compute_baseline(
        embeddings["train"], embeddings["test"], seed=seed, n_pairs=n_pairs, all_pairs_max=all_pairs_max,
        score_fn=None if verifier is None else verified_scores,
        exclude=None if fingerprints is None else exact_twins,
        encoder_identity=encoder_identity, verifier_identity=None if verifier is None else verifier.identity,
        n_compared=min(k, n_train) if verifier is not None and k else n_train,
    )


def left_out_neighbours(baseline: dict) -> bool:
    """Whether ``baseline`` is an older sibscan's sample that left out each item's nearest-neighbour pairs
    (``neighbours_excluded``): on a small set of alike items it undercounts chance siblings, and a scan
    resumed on it, or calibrate, computes it again."""
    return baseline.get("neighbours_excluded") is True


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
        raise SibscanError(f"baseline has no usable tail (missing {', '.join(sorted(missing))}); re-run 'sibscan scan' "
                           "to recompute it")
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
            f"{share} unrelated pairs score above it, so it flags unrelated items; calibrate it with 'sibscan "
            "calibrate'"
        )
    return None

