"""Scale-searching template match on a structure signal: the compute behind ``imagematch``.

:func:`scale_match` scores pairs of equally sized grayscale images by where one of them, shrunk,
rotated a little and perhaps mirrored, sits best inside the other.  For each variant ``(inner,
scale, angle, flip)`` the *inner* image (the query, or the database image when ``inner ==
"database"``) is resampled to a ``T x T`` template, ``T = round(scale * N)`` (a rotated template
keeps the largest upright square inside the rotated image, so its side shrinks by ``1 / (|cos| +
|sin|)``), and slid over every position of the *outer* image; the score is the normalised cross
correlation (NCC) at the best position.  ``scale = 0.6`` with ``inner = "query"`` means the query
shows 60 % of the database image's side: a heavy crop (or, the other way, a zoom-out).

Both images are compared on a band-pass structure signal (difference of Gaussians, sigma 1 and 3
working pixels) rather than on grey levels: slow gradients of sky, sea, walls and vignetting carry
no structure, so two different featureless scenes do not correlate, while the edges of a photo
survive colour, gamma and JPEG changes.  A template with almost no structure left (band-pass RMS
below :data:`FLAT_RMS`) scores 0: it holds nothing that could tell a copy from another flat image.

The correlation over all positions is a batched FFT (torch, CPU or CUDA); window statistics come
from integral images.  :func:`sibscan.kernels.scalematch_reference.scale_match_reference` is the plain
numpy loop the tests hold it to.

What agrees at the alignment found (the patch agreement ``imagematch`` scores by, and the inputs
``imagefuse`` adds) is measured in :mod:`sibscan.kernels.alignmatch`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import List, NamedTuple, Sequence

import numpy as np

__all__ = ["FLAT_RMS", "MatchVariant", "ScaleMatch", "match_variants", "preference", "scale_match",
           "structure", "template"]

#: a template whose band-pass RMS is below this (grey levels in [0, 1]) holds no structure
FLAT_RMS = 0.004
#: the difference of Gaussians that makes the structure signal (working pixels)
SIGMAS = (1.0, 3.0)
#: most pairs per inverse-FFT batch on the CPU: a batch's temporaries (33 x 64 complex per pair) stay in
#: cache; 128 ran the search 1.3-1.9x faster than 1,024 on the planted crops (the same values)
CPU_FFT_ROWS = 128


class MatchVariant(NamedTuple):
    """One transform tried: the inner image, its scale inside the outer one, rotation, mirror."""

    inner: str  # "query" or "database"
    scale: float
    angle: float  # degrees, counter-clockwise
    flip: bool


@dataclass
class ScaleMatch:
    """Best variant of each image pair.

    Attributes
    ----------
    score : ndarray of shape (m,), float32
        Best NCC of the structure signals, in [-1, 1]; 0 where the inner image is flat.
    variant : ndarray of shape (m,), int64
        Index into the variants list of the best one.
    y, x : ndarray of shape (m,), int32
        Top-left corner of the template inside the outer image (working pixels).
    """

    score: np.ndarray
    variant: np.ndarray
    y: np.ndarray
    x: np.ndarray


def match_variants(scales: Sequence[float], angles: Sequence[float], flip: bool) -> List[MatchVariant]:
    """Every variant tried, in tie-break order (scale 1 once, each smaller scale both ways)."""
    out = []
    for s in sorted({float(s) for s in scales}, reverse=True):
        if not 0.0 < s <= 1.0:
            raise ValueError(f"scales must be in (0, 1], got {s}")
        for inner in (("query",) if s == 1.0 else ("query", "database")):
            for a in sorted({float(a) for a in angles}, key=abs):
                for f in ((False, True) if flip else (False,)):
                    out.append(MatchVariant(inner, s, a, f))
    return out


def _side(size: int, v: MatchVariant) -> int:
    shrink = 1.0 / (abs(math.cos(math.radians(v.angle))) + abs(math.sin(math.radians(v.angle))))
    return max(4, min(size, int(round(v.scale * shrink * size))))


@functools.lru_cache(maxsize=512)  # every template side at two resolutions, two sigmas each
def _blur_matrix(size: int, sigma: float) -> np.ndarray:
    """(size, size) matrix of a 1-D Gaussian blur with reflected edges (``B @ x`` blurs columns)."""
    r = int(math.ceil(3 * sigma))
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    k /= k.sum()
    mat = np.zeros((size, size))
    for i in range(size):
        for o, w in zip(range(-r, r + 1), k):
            j = i + o
            while j < 0 or j >= size:  # reflect (without repeating the edge pixel)
                j = -j if j < 0 else 2 * (size - 1) - j
            mat[i, j] += w
    return mat.astype(np.float32)


def _blur(x, sigma: float):
    """Separable Gaussian blur of (m, 1, H, W) with reflected edges: two small matrix products
    (a single-channel ``conv2d`` is many times slower on the CPU)."""
    import torch

    h, w = x.shape[-2:]
    by = torch.as_tensor(_blur_matrix(h, float(sigma)), device=x.device, dtype=x.dtype)
    bx = by if w == h else torch.as_tensor(_blur_matrix(w, float(sigma)), device=x.device, dtype=x.dtype)
    # ``by @ x`` as ``(x^T @ by^T)^T``: one matrix product over the whole batch (a 2-D matrix on the left
    # of a batch is copied once per image and multiplied image by image)
    return (x.transpose(-1, -2) @ by.T).transpose(-1, -2) @ bx.T


def structure(x):
    """Band-pass structure signal of (m, 1, H, W) images: blur(sigma 1) - blur(sigma 3)."""
    return _blur(x, SIGMAS[0]) - _blur(x, SIGMAS[1])


def antialias(img, scale: float):
    """(m, 1, H, W) images blurred before shrinking to ``scale`` (Gaussian, sigma ``0.5 * sqrt(1/scale^2 - 1)``)."""
    return _blur(img, 0.5 * math.sqrt(1.0 / scale ** 2 - 1.0)) if scale < 1.0 else img


def template(img, v: MatchVariant, size: int, *, blurred=None):
    """The inner images resampled for variant ``v``: (m, 1, T, T) grey levels.

    The centre of the image (rotated by ``v.angle``, mirrored when ``v.flip``) is sampled on a
    ``T x T`` grid; shrinking is anti-aliased by a Gaussian of sigma ``0.5 * sqrt(1/scale^2 - 1)``.
    ``blurred`` is ``img`` already anti-aliased for ``v.scale`` (:func:`antialias`), shared by the
    variants of one scale.
    """
    import torch
    import torch.nn.functional as F

    t = _side(size, v)
    frac = t / (v.scale * size)  # the share of the inner image's side the template covers
    img = antialias(img, v.scale) if blurred is None else blurred
    a = math.radians(v.angle)
    c, s = math.cos(a) * frac, math.sin(a) * frac
    fx = -1.0 if v.flip else 1.0
    theta = torch.tensor([[[c * fx, -s, 0.0], [s * fx, c, 0.0]]], dtype=img.dtype, device=img.device)
    # one sampling grid for the whole batch (every image is sampled at the same points): building it
    # per image was a batched matrix product per image, 15 % of the search's time
    grid = F.affine_grid(theta, (1, 1, t, t), align_corners=False).expand(len(img), t, t, 2)
    return F.grid_sample(img, grid, mode="bilinear", padding_mode="border", align_corners=False)


def _integrals(sig):
    """Integral images of (n, 1, N, N) signals and of their squares, centred first (float32 sums
    stay accurate): a pair of (n, 1, N+1, N+1) tensors, shared by every window side."""
    import torch.nn.functional as F

    x = sig - sig.mean(dim=(-2, -1), keepdim=True)
    return F.pad(x.cumsum(-1).cumsum(-2), (1, 0, 1, 0)), F.pad((x * x).cumsum(-1).cumsum(-2), (1, 0, 1, 0))


def _window_norms(integrals, T: int):
    """Root of the centred sum of squares of every T x T window, from :func:`_integrals` of (n, 1, N, N)
    signals: (n, N-T+1, N-T+1)."""
    ii, ii2 = integrals
    n = ii.shape[-1] - T

    def box(z):
        return z[..., T:T + n, T:T + n] - z[..., :n, T:T + n] - z[..., T:T + n, :n] + z[..., :n, :n]

    s1, s2 = box(ii), box(ii2)
    return (s2 - s1 * s1 / (T * T)).clamp_min(0).sqrt()[:, 0]


def _normalise(ts):
    """Zero-mean unit-norm templates, and which ones are flat (RMS below :data:`FLAT_RMS`)."""
    t = ts - ts.mean(dim=(-2, -1), keepdim=True)
    norm = t.square().sum(dim=(-2, -1), keepdim=True).sqrt()
    T = ts.shape[-1]
    flat = (norm / T < FLAT_RMS).view(-1)
    return t / norm.clamp_min(1e-12), flat


def _spectra(x, N: int):
    """``rfft2`` of (n, 1, T, T) signals zero-padded to N x N, held transposed: (n, N // 2 + 1, N) complex.

    Transposed, the inverse over rows in :func:`_variant_search` runs along contiguous memory (2-3x faster
    than over the strided axis); made as the two passes ``rfft2`` makes (the same values), the second along
    contiguous memory too, with no transposed copy."""
    import torch

    return torch.fft.fft(torch.fft.rfft(x[:, 0], n=N, dim=-1).transpose(-1, -2), n=N, dim=-1)


def _variant_search(query, database, qi, di, variants: Sequence[MatchVariant], todo, *, device: str,
                    batch_size: int):
    """Best NCC and its position of the pairs ``todo[j]`` under variant ``j``, for every ``j``.

    Parameters
    ----------
    query, database : tensor of shape (n, 1, N, N), on ``device``
    qi, di : tensor of shape (m,), int64
    todo : sequence of ndarray of int (one per variant)
        Rows of the pairs to try with that variant.

    Returns
    -------
    val : ndarray of shape (m, len(variants)), float32
        -inf where a pair was not tried with a variant.
    pos : ndarray of shape (m, len(variants)), int64
        Flat position ``y * (N - T + 1) + x`` of the best window.
    """
    import torch

    m, N, V = len(qi), query.shape[-1], len(variants)
    if query.device.type == "cpu":
        batch_size = min(batch_size, CPU_FFT_ROWS)
    val = np.full((m, V), -np.inf, np.float32)
    pos = np.zeros((m, V), np.int64)
    imgs = {"query": query, "database": database}
    sig = {k: structure(v) for k, v in imgs.items()}
    spec = {k: _spectra(v, N) for k, v in sig.items()}
    integrals = {k: _integrals(v) for k, v in sig.items()}  # window sums of every side T come from these
    index = {"query": qi, "database": di}
    pair_spec = {}  # each pair's outer spectrum, gathered once for all its variants (exhaustive search)
    inv_den, blurred = {}, {}

    def inverse_norms(ints, T):
        den = _window_norms(ints, T)
        # a flat window scores 0: one multiply by 0 instead of a division and a select per pair
        return torch.where(den < FLAT_RMS * T, torch.zeros_like(den), 1.0 / den.clamp_min(1e-12))

    for j, v in enumerate(variants):
        rows = torch.as_tensor(np.asarray(todo[j], np.int64), device=device)
        if not len(rows):
            continue
        outer = "database" if v.inner == "query" else "query"
        T = _side(N, v)
        n = N - T + 1
        # only the images some pair needs are transformed (all of them in an exhaustive search)
        need, local = torch.unique(index[v.inner][rows], return_inverse=True)
        everyone = len(rows) == m
        # every outer image's window norms for side T, and every inner image anti-aliased for the scale, once
        # (a refinement after the coarse search needs most images for most variants too)
        if (outer, T) not in inv_den:
            inv_den = {k: w for k, w in inv_den.items() if k[1] == T}  # variants come grouped by size
            inv_den[outer, T] = inverse_norms(integrals[outer], T)
        inv = inv_den[outer, T]
        if (v.inner, v.scale) not in blurred:  # the anti-aliasing is shared by a scale's rotations
            blurred = {(v.inner, v.scale): antialias(imgs[v.inner], v.scale)}
        src = blurred[v.inner, v.scale][need]
        if everyone and outer not in pair_spec:
            pair_spec[outer] = spec[outer][index[outer]]
        t, flat = _normalise(structure(template(src, v, N, blurred=src)))
        tspec = torch.conj(_spectra(t, N))
        for lo in range(0, len(rows), batch_size):
            r, ii = rows[lo:lo + batch_size], local[lo:lo + batch_size]
            oi = index[outer][r]
            ospec = pair_spec[outer][lo:lo + batch_size] if everyone else spec[outer][oi]
            # the inverse 2-D FFT of only the n x n positions a template fits at: the inverse over rows,
            # the first n rows kept, then the real inverse over columns (irfft2's own two passes, the
            # same values, on n of the N rows in the second)
            prod = tspec.index_select(0, ii).mul_(ospec)  # in place: one temporary fewer
            corr = torch.fft.irfft(torch.fft.ifft(prod, dim=-1)[..., :n].transpose(-1, -2), n=N, dim=-1)[:, :, :n]
            b, p = (corr * inv[oi]).reshape(len(r), -1).max(dim=1)
            b = torch.where(flat[ii], torch.zeros_like(b), b)
            rn = r.cpu().numpy()
            val[rn, j] = b.cpu().numpy()
            pos[rn, j] = p.cpu().numpy()
    return val, pos


def preference(val: np.ndarray, N: int, variants: Sequence[MatchVariant], size_power: float = 0.0,
               rotation_cost: float = 0.0) -> np.ndarray:
    """What the search ranks each pair's variants by: their NCC ``val`` (m, V) itself when both weights
    are 0; else ``atanh(val) * (T / N) ** size_power - rotation_cost * (angle != 0)``, T the template side.

    ``atanh`` times the template's side is the NCC's evidence in standard errors (Fisher; the
    correlated pixels grow as ``T ** 2``): the best of many positions of a half-side template reaches a
    high NCC by chance more easily than a full one, so a sibling was found "the other way round" at
    half the side, or rotated, where its true alignment scored a little lower."""
    if not size_power and not rotation_cost:
        return val
    side = np.array([_side(N, v) for v in variants], np.float64) / N
    rotated = np.array([v.angle != 0.0 for v in variants], np.float64)
    return np.arctanh(np.clip(val, -0.999, 0.999)) * side ** size_power - rotation_cost * rotated


def _as_match(val: np.ndarray, pos: np.ndarray, N: int, variants: Sequence[MatchVariant], **prefer) -> ScaleMatch:
    """The first most preferred variant of each pair (:func:`preference`; variant order breaks ties), as a
    :class:`ScaleMatch` whose score is its NCC."""
    best = np.argmax(preference(val, N, variants, **prefer), axis=1)
    rows = np.arange(len(val))
    p = pos[rows, best]
    n_best = N - np.array([_side(N, v) for v in variants], np.int64)[best] + 1
    return ScaleMatch(score=val[rows, best].astype(np.float32), variant=best.astype(np.int64),
                      y=(p // n_best).astype(np.int32), x=(p % n_best).astype(np.int32))


def scale_match(query, database, query_index, database_index, variants: Sequence[MatchVariant], *,
                device: str = "cpu", batch_size: int = 1024, coarse: int = 0, keep: int = 4,
                size_power: float = 0.0, rotation_cost: float = 0.0) -> ScaleMatch:
    """Best NCC of each pair's structure signals over ``variants`` and all positions.

    Every image is filtered, transformed and Fourier-transformed once per variant however many
    pairs need it; per pair and variant the cost is one inverse FFT of N x N.  The exhaustive search
    holds each pair's two spectra for all variants: ``2 * m * N * (N // 2 + 1)`` complex64, 138 MB
    for the 4,096 pairs ``imagematch`` passes at a time at N = 64.

    With ``coarse`` (a side smaller than N), the search is coarse to fine: every variant is tried
    on the images shrunk to ``coarse x coarse`` (area average), and only each pair's ``keep``
    best variants there are searched again at N, over all positions.  The answer is the
    exhaustive one whenever the exhaustive best variant is among those ``keep`` (the tests hold it
    to that on pairs whose best variant is clear); otherwise it is the best of the ``keep``.

    Parameters
    ----------
    query : ndarray of shape (n_query, 1, N, N)
    database : ndarray of shape (n_database, 1, N, N)
        Grayscale images at working resolution, values in [0, 1].
    query_index, database_index : ndarray of shape (m,), int
        Pair ``i`` is ``(query[query_index[i]], database[database_index[i]])``.
    variants : sequence of MatchVariant
        See :func:`match_variants`.
    device : str
        torch device resolved by the caller.
    batch_size : int
        Pairs per inverse-FFT batch (at most :data:`CPU_FFT_ROWS` on the CPU).
    coarse : int
        Side of the coarse search; 0 searches every variant at N.
    keep : int
        Variants per pair refined at N after the coarse search.
    size_power, rotation_cost : float
        How the variants are ranked (:func:`preference`; both 0: by NCC alone).

    Returns
    -------
    ScaleMatch
    """
    import torch
    import torch.nn.functional as F

    for name, a in (("query", query), ("database", database)):
        if a.ndim != 4 or a.shape[1] != 1 or a.shape[2] != a.shape[3] or a.shape[2] != query.shape[2]:
            raise ValueError(f"{name} images must have shape (n, 1, N, N) with one N for both; got {tuple(a.shape)}")
    if not variants:
        raise ValueError("no variants to try")
    m, N, V = len(query_index), query.shape[-1], len(variants)
    if len(database_index) != m:
        raise ValueError(f"query_index has {m} pairs, database_index {len(database_index)}")
    if coarse and not 8 <= coarse < N:
        raise ValueError(f"coarse must be 0 or in [8, {N - 1}] at N = {N}, got {coarse}")
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    qi = torch.as_tensor(np.asarray(query_index, np.int64), device=device)
    di = torch.as_tensor(np.asarray(database_index, np.int64), device=device)
    everyone = np.arange(m)
    prefer = dict(size_power=size_power, rotation_cost=rotation_cost)
    with torch.no_grad():
        q = torch.as_tensor(query, dtype=torch.float32).to(device)
        d = torch.as_tensor(database, dtype=torch.float32).to(device)
        if not coarse or keep >= V:
            val, pos = _variant_search(q, d, qi, di, variants, [everyone] * V, device=device, batch_size=batch_size)
            return _as_match(val, pos, N, variants, **prefer)
        small = [F.interpolate(x, size=(coarse, coarse), mode="area") for x in (q, d)]
        cval, _ = _variant_search(*small, qi, di, variants, [everyone] * V, device=device, batch_size=batch_size)
        # stable sort: among equal coarse scores the earlier variant is kept, as the exhaustive search would
        chosen = np.argsort(-preference(cval, coarse, variants, **prefer), axis=1, kind="stable")[:, :keep]
        todo = [np.flatnonzero((chosen == j).any(axis=1)) for j in range(V)]
        val, pos = _variant_search(q, d, qi, di, variants, todo, device=device, batch_size=batch_size)
        return _as_match(val, pos, N, variants, **prefer)
