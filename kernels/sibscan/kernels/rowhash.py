"""Vectorised 128-bit fingerprints of numeric rows, and grouping of equal fingerprints.

A row's fingerprint is a function of its values after rounding to ``decimals`` places (optionally
after per-row z-normalisation), with ``-0.0`` folded onto ``0.0`` and every NaN folded onto one
canonical NaN, so that NaN *positions* are part of a row's identity but NaN payloads are not.

How it is computed (all numpy, in row blocks that stay in the CPU cache; no per-row Python):

1. ``q = rint(x * 10**decimals) + 0.0`` — the rounded value, scaled to an integer-valued float
   (``+ 0.0`` turns ``-0.0`` into ``0.0``); NaNs are replaced by one canonical NaN.  A finite value
   so large that the scaling overflows (``1e300 * 1e6``) is beyond rounding: its own 64 bits are
   hashed instead, tagged, so that huge values stay distinct rather than all becoming ``inf``.
   ``decimals=None`` hashes the values exactly (no rounding): the key of the embedding cache.
2. The 64 bits of ``q`` are xored with a per-column key (so that swapping two values changes the
   row) and passed through the SplitMix64 finaliser, a bijective avalanche mix.
3. Two lanes: ``h1 = sum_j a_j * m_j`` and ``h2 = sum_j b_j * m_j`` (mod 2**64) with random odd
   per-column multipliers ``a_j``, ``b_j`` (integer einsum), each lane finalised once more
   with SplitMix64.

Why 128 bits suffice: treating the fingerprint as a uniform 128-bit value, the chance that *any*
two of ``n`` distinct rows collide is at most ``n * (n - 1) / 2 / 2**128`` (the birthday bound).
At ``n = 10**9`` rows that is ``5e17 / 3.4e38 ≈ 1.5e-21`` — negligible next to a disk bit flip.
Two rows that differ give mixed words that differ in at least one column; the two lanes are
independent random linear forms of those words, so each lane collides with probability about
``2**-64`` and both together about ``2**-128``.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Tuple

import numpy as np

__all__ = ["row_fingerprints", "group_fingerprints", "fingerprint_order", "znormalise_rows", "round_rows",
           "safe_scale_rows", "splitmix64"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_CANON_NAN = np.float64(np.nan)
# xored into the bits of a value whose scaling overflowed: keeps it apart from the scaled values
_OVERFLOW_TAG = np.uint64(0xA5A5_5A5A_C3C3_3C3C)
# rows whose largest magnitude lies outside this range are rescaled before z-normalising, so that
# squares neither overflow (1e300) nor underflow (1e-300)
_SAFE_MAX, _SAFE_MIN = 1e100, 1e-100
# bytes per block of the working array: small enough to stay in L2, big enough to amortise Python
_BLOCK_BYTES = 1 << 20
_MAX_THREADS = 8


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser applied in place to a uint64 array; returns ``x``."""
    with np.errstate(over="ignore"):
        x ^= x >> _S30
        x *= _M1
        x ^= x >> _S27
        x *= _M2
        x ^= x >> _S31
    return x


def _splitmix_inplace(w: np.ndarray, tmp: np.ndarray) -> None:
    """:func:`splitmix64` on ``w`` using ``tmp`` (same shape) for the shifted copies."""
    np.right_shift(w, _S30, out=tmp)
    w ^= tmp
    w *= _M1
    np.right_shift(w, _S27, out=tmp)
    w ^= tmp
    w *= _M2
    np.right_shift(w, _S31, out=tmp)
    w ^= tmp


def _keys(d: int, seed: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng([0x5B5CA9, seed, d])
    hi = np.iinfo(np.uint64).max
    key = rng.integers(0, hi, size=d, dtype=np.uint64, endpoint=True)
    a = rng.integers(0, hi, size=d, dtype=np.uint64, endpoint=True) | np.uint64(1)
    b = rng.integers(0, hi, size=d, dtype=np.uint64, endpoint=True) | np.uint64(1)
    return key, a, b


def znormalise_rows(x: np.ndarray) -> np.ndarray:
    """Per-row z-normalisation ignoring NaNs; constant rows become all zeros.

    Parameters
    ----------
    x : ndarray of shape (n, d), float

    Returns
    -------
    ndarray of shape (n, d), float64
        ``(x - mean) / std`` per row (NaNs kept in place).
    """
    x = safe_scale_rows(np.asarray(x, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: mean of empty slice
            mean = np.nanmean(x, axis=1, keepdims=True)
            std = np.nanstd(x, axis=1, keepdims=True)
    std = np.where((std > 0) & np.isfinite(std), std, 1.0)
    return (x - mean) / std


def safe_scale_rows(x: np.ndarray) -> np.ndarray:
    """Rows whose largest finite magnitude is beyond 1e100 or below 1e-100, divided by it.

    For anything that is scale-invariant per row (z-normalisation, cosine), so that squaring a
    value cannot overflow to ``inf`` or underflow to 0; other rows are returned untouched (the
    same array when no row needs it), so ordinary data give bit-identical results.

    Parameters
    ----------
    x : ndarray of shape (n, d), float64

    Returns
    -------
    ndarray of shape (n, d), float64
    """
    if x.size == 0:
        return x
    with np.errstate(invalid="ignore"):
        mag = np.max(np.where(np.isfinite(x), np.abs(x), 0.0), axis=1)
    extreme = (mag > _SAFE_MAX) | ((mag < _SAFE_MIN) & (mag > 0))
    if not extreme.any():
        return x
    out = np.array(x, dtype=np.float64)
    out[extreme] /= mag[extreme, None]
    return out


def round_rows(x: np.ndarray, decimals: int) -> np.ndarray:
    """The rounded, canonical form that :func:`row_fingerprints` hashes (for reference and tests).

    Returns ``rint(x * 10**decimals) + 0.0`` with canonical NaNs, shape ``(n, d)`` float64.
    """
    q = np.rint(np.asarray(x, dtype=np.float64) * (10.0 ** int(decimals))) + 0.0
    q[np.isnan(q)] = _CANON_NAN
    return q


def _hash_range(x, out, lo, hi, rows, scale, znorm, key, a, b) -> None:
    """Hash rows ``lo:hi`` of ``x`` into ``out`` (lanes before the final avalanche), block by block."""
    d = x.shape[1]
    # preallocated work buffers: temporaries of this size would be mmap'ed and faulted in per op
    q = np.empty((rows, d), dtype=np.float64)
    t = np.empty((rows, d), dtype=np.uint64)
    nan = np.empty((rows, d), dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(lo, hi, rows):
            stop = min(hi, start + rows)
            m = stop - start
            qb, tb, nb = q[:m], t[:m], nan[:m]
            block = x[start:stop]
            if znorm:
                block = znormalise_rows(block)
            if scale is None:  # exact: the values themselves
                np.add(block, 0.0, out=qb, casting="unsafe")
            else:
                np.multiply(block, scale, out=qb, casting="unsafe")
                np.rint(qb, out=qb)
                np.add(qb, 0.0, out=qb)
            np.isnan(qb, out=nb)
            if nb.any():
                qb[nb] = _CANON_NAN
            w = qb.view(np.uint64)
            if scale is not None:
                np.isinf(qb, out=nb)
                if nb.any():  # scaled past float range: hash the value's own bits, tagged
                    raw = np.asarray(block, dtype=np.float64)
                    over = nb & np.isfinite(raw)
                    if over.any():
                        w[over] = np.ascontiguousarray(raw[over]).view(np.uint64) ^ _OVERFLOW_TAG
            np.bitwise_xor(w, key, out=w)
            _splitmix_inplace(w, tb)
            # einsum's sum-of-products loop is ~1.5x faster than numpy's integer matmul here
            np.einsum("ij,j->i", w, a, out=out[start:stop, 0])
            np.einsum("ij,j->i", w, b, out=out[start:stop, 1])


def row_fingerprints(x: np.ndarray, decimals: int = 6, znorm: bool = False, seed: int = 0,
                     threads: Optional[int] = None) -> np.ndarray:
    """128-bit fingerprint of each row of a numeric array.

    Parameters
    ----------
    x : ndarray of shape (n, d)
        Numeric rows (any float or int dtype; converted to float64). NaN = missing.
    decimals : int or None, default 6
        Values are rounded to this many decimal places before hashing (negative values round to
        tens, hundreds, ...); None hashes them exactly.
    znorm : bool, default False
        Z-normalise each row first (rescaled and shifted copies ``a * x + b``, ``a > 0``, then
        share a fingerprint).
    seed : int, default 0
        Selects the hash keys; fingerprints are comparable only under the same seed and width.
    threads : int, optional
        Worker threads (default: CPU count, at most 8). Results do not depend on it.

    Returns
    -------
    ndarray of shape (n, 2), uint64
        Two 64-bit lanes per row. Equal rounded rows give equal fingerprints; different rows
        collide with probability about ``2**-128`` (see the module docstring).
    """
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"row_fingerprints expects a 2-D array, got shape {x.shape}")
    n, d = x.shape
    out = np.empty((n, 2), dtype=np.uint64)
    if n == 0:
        return out
    key, a, b = _keys(d, seed)
    scale = None if decimals is None else 10.0 ** int(decimals)  # OverflowError past 10**308, never inf
    rows = max(1, _BLOCK_BYTES // (8 * max(d, 1)))
    if threads is None:
        threads = min(_MAX_THREADS, os.cpu_count() or 1)
    # numpy releases the GIL inside each block operation, so row ranges hash in parallel threads;
    # every row's fingerprint is the same whichever thread computes it
    n_parts = max(1, min(int(threads), -(-n // (rows * 4))))
    bounds = np.linspace(0, n, n_parts + 1).astype(np.int64)
    work = lambda i: _hash_range(x, out, int(bounds[i]), int(bounds[i + 1]), rows, scale, znorm, key, a, b)  # noqa: E731
    if n_parts == 1:
        work(0)
    else:
        with ThreadPoolExecutor(n_parts) as pool:
            list(pool.map(work, range(n_parts)))
    # mix the width in, then avalanche each lane so that similar sums give unrelated fingerprints
    out ^= np.uint64((d * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF)
    splitmix64(out)
    return out


def fingerprint_keys(fp: np.ndarray) -> np.ndarray:
    """(n, 2) uint64 fingerprints as a 1-D structured view, so that np.unique / np.isin / sorting
    compare whole fingerprints (lexicographically: first lane, then second)."""
    fp = np.ascontiguousarray(np.asarray(fp, dtype="<u8"))
    if fp.ndim != 2 or fp.shape[1] != 2:
        raise ValueError(f"fingerprints must have shape (n, 2), got {fp.shape}")
    return fp.view([("hi", "<u8"), ("lo", "<u8")]).ravel()


def fingerprint_order(fp: np.ndarray) -> np.ndarray:
    """Indices that sort fingerprints lexicographically (first lane, then second); equal fingerprints
    come together, in no particular order.

    A sort of the first lane alone (numpy's vectorised ``uint64`` sort: 1,000,000 rows in ~0.03 s
    against ~0.3 s for a ``lexsort`` of both lanes or ~0.6 s for a sort of :func:`fingerprint_keys`);
    only where two *different* fingerprints share a first lane (chance about ``n**2 / 2**65`` for
    real ones) is the exact two-lane ``lexsort`` run instead.

    Parameters
    ----------
    fp : ndarray of shape (n, 2), uint64

    Returns
    -------
    ndarray of shape (n,), int64
    """
    fp = np.asarray(fp, dtype=np.uint64).reshape(-1, 2)
    order = np.argsort(fp[:, 0])
    first = fp[order, 0]
    tie = first[1:] == first[:-1]
    if tie.any():  # copies share both lanes; a tie with another second lane needs the exact sort
        second = fp[order[1:], 1][tie] != fp[order[:-1], 1][tie]
        if second.any():
            return np.lexsort((fp[:, 1], fp[:, 0]))
    return order


def fingerprint_membership(a: np.ndarray, b: np.ndarray, block_rows: int = 1 << 18) -> np.ndarray:
    """Bool array of shape (len(a),): whether each (2,) uint64 fingerprint of ``a`` occurs in ``b``.

    ``b`` may be read ``block_rows`` rows at a time (anything with ``iter_blocks``, such as a scan's
    train fingerprints on disk): it is then never held whole."""
    a = np.asarray(a, np.uint64).reshape(-1, 2)
    if len(a) == 0 or len(b) == 0:
        return np.zeros(len(a), bool)
    keys = fingerprint_keys(a)
    if not hasattr(b, "iter_blocks"):
        return np.isin(keys, fingerprint_keys(np.asarray(b, np.uint64).reshape(-1, 2)))
    found = np.zeros(len(a), bool)
    for _, block in b.iter_blocks(block_rows):
        found |= np.isin(keys, fingerprint_keys(np.asarray(block, np.uint64).reshape(-1, 2)))
    return found


def group_fingerprints(fp: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal fingerprints.

    Parameters
    ----------
    fp : ndarray of shape (n, 2), uint64

    Returns
    -------
    group : ndarray of shape (n,), int64
        Group number of each row, ``0 .. n_groups - 1``, numbered by first occurrence.
    counts : ndarray of shape (n_groups,), int64
        Rows per group.
    first : ndarray of shape (n_groups,), int64
        Index of the first row of each group.
    """
    fp = np.ascontiguousarray(fp, dtype=np.uint64)
    n = len(fp)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    order = np.lexsort((np.arange(n), fp[:, 1], fp[:, 0]))  # stable: ties keep row order
    s = fp[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(s[1:, 0], s[:-1, 0], out=new[1:])
    new[1:] |= s[1:, 1] != s[:-1, 1]
    sorted_gid = np.cumsum(new) - 1
    first_sorted = order[new]  # first row (in input order) of each group, groups in sort order
    # renumber groups by first occurrence so numbering is deterministic and readable
    rank = np.empty(len(first_sorted), dtype=np.int64)
    rank[np.argsort(first_sorted, kind="stable")] = np.arange(len(first_sorted))
    group = np.empty(n, dtype=np.int64)
    group[order] = rank[sorted_gid]
    counts = np.bincount(group, minlength=len(first_sorted)).astype(np.int64)
    first = np.sort(first_sorted).astype(np.int64)
    return group, counts, first
