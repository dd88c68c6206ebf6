"""Transform-invariant correlation of image pairs: the compute behind image verification.

:func:`image_pair_corr` scores pairs of equally sized images (grayscale or colour) by the
normalised cross-correlation (NCC) of the query's centre, ``max_shift`` pixels in from each
edge, against every window of the database image it can slide to, maximised over those
translations, a horizontal flip and a few centre crop-scales (either image may be the crop).
Each channel is normalised on its own, so brightness, contrast and per-channel colour gains do
not matter.  The cross-correlation runs as a batched FFT in torch (CPU or CUDA); the
window statistics come from box sums.  Each image's own part of the work is done by
:mod:`.paircorr_sides` (here once per batch of pairs; a verifier that sees an image in many pairs
prepares it once for all of them).  :func:`.paircorr_reference.image_pair_corr_reference`
is the plain numpy loop the tests hold it to.  (Series pairs: :mod:`sibscan.kernels.lagcorr`.)

With ``detail > 0`` the score also weighs the fine structure: at the alignment the NCC chose, the
NCC of the two windows' detail bands (each minus its Gaussian blur of ``detail_sigma`` pixels) is
blended in, ``(1 - detail) * ncc + detail * detail_ncc``.  A whole-image NCC is carried by the
coarse layout, which unrelated images of one kind share (two handwritten 1s, mirrored corners of
one photograph); the fine structure is what a copy keeps and a look-alike does not.  On the planted
32-px set (``benchmarks.image_scale``) ``detail=0.25`` at ``detail_sigma = size / 16`` lifted recall
at precision 0.95 of the default scan from 0.778 to 0.822 (0.800 to 0.822 on 64-128 px images).

Undefined correlations (a flat image) come back as NaN: the scan then falls back to the embedding
similarity for that pair.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["FLAT_VAR", "ImageCorr", "check_detail", "image_corr_result", "image_pair_corr", "image_variants"]

#: a window or template whose variance is below this (values in [0, 1]) counts as flat
FLAT_VAR = 1e-6


@dataclass
class ImageCorr:
    """Best transform of each image pair.

    Attributes
    ----------
    score : ndarray of shape (m,), float32
        Best NCC in [-1, 1]; NaN where every candidate window or the template is flat.
    flipped : ndarray of shape (m,), bool
        The query matched after a horizontal flip.
    dy, dx : ndarray of shape (m,), int32
        The query is the database image moved ``dy`` px down and ``dx`` px right (working pixels;
        for flipped pairs, in the flipped query's frame).
    crop_query, crop_database : ndarray of shape (m,), float32
        Centre-crop fraction applied to each side before matching (1.0 = none): ``crop_database
        = 0.9`` means the query shows the centre 90 % of the database image.
    ncc : ndarray of shape (m,), float32
        The plain NCC at that transform (``score`` when ``detail=0``).
    """

    score: np.ndarray
    flipped: np.ndarray
    dy: np.ndarray
    dx: np.ndarray
    crop_query: np.ndarray
    crop_database: np.ndarray
    ncc: np.ndarray


def image_variants(flip: bool, scales: Sequence[float]) -> List[Tuple[bool, float, float]]:
    """The ``(flipped, crop_query, crop_database)`` transforms tried, in tie-break order."""
    crops = [(1.0, 1.0)]
    for s in scales:
        s = float(s)
        if not 0.0 < s <= 1.0:
            raise ValueError(f"crop scales must be in (0, 1], got {s}")
        if s < 1.0:
            crops += [(1.0, s), (s, 1.0)]
    flips = (False, True) if flip else (False,)
    return [(f, cq, cd) for f in flips for cq, cd in crops]


def _check_images(query, database, max_shift: int) -> None:
    if query.ndim != 4 or query.shape != database.shape:
        raise ValueError(
            f"query and database must both have shape (m, C, H, W); got {tuple(query.shape)} and {tuple(database.shape)}"
        )
    h, w = query.shape[-2:]
    if max_shift < 0 or 2 * max_shift >= min(h, w) - 1:
        raise ValueError(f"max_shift={max_shift} does not fit images of {h}x{w} pixels")


@functools.lru_cache(maxsize=32)
def _interp_matrix(size: int, crop: float) -> np.ndarray:
    """(size, size) matrix of 1-D bilinear weights sampling the centre ``crop`` fraction, with
    the pixel-centre convention of ``grid_sample(align_corners=False)``."""
    norm = (2 * np.arange(size) + 1) / size - 1
    pix = np.clip(((norm * crop + 1) * size - 1) / 2, 0, size - 1)
    lo = np.floor(pix).astype(int)
    hi = np.minimum(lo + 1, size - 1)
    frac = pix - lo
    mat = np.zeros((size, size))
    rows = np.arange(size)
    np.add.at(mat, (rows, lo), 1 - frac)
    np.add.at(mat, (rows, hi), frac)
    return mat


def _mirror_index(idx: np.ndarray, size: int) -> np.ndarray:
    """Indices folded back into ``[0, size)`` by mirroring at the edges (``d c b | a b c d``)."""
    if size == 1:
        return np.zeros_like(idx)
    period = 2 * (size - 1)
    idx = np.mod(idx, period)
    return np.where(idx >= size, period - idx, idx)


@functools.lru_cache(maxsize=32)
def _blur_matrix(size: int, sigma: float) -> np.ndarray:
    """(size, size) matrix of a 1-D Gaussian blur: weights ``exp(-x^2 / 2 sigma^2)`` out to
    ``4 sigma``, summing to 1, the edges mirrored."""
    radius = int(4 * sigma + 0.5)
    off = np.arange(-radius, radius + 1)
    weights = np.exp(-0.5 * (off / sigma) ** 2)
    weights /= weights.sum()
    rows = np.arange(size)
    mat = np.zeros((size, size))
    np.add.at(mat, (np.repeat(rows, len(off)), _mirror_index(rows[:, None] + off, size).ravel()),
              np.tile(weights, size))
    return mat


def _zoom_torch(x, crop: float):
    """Centre ``crop`` fraction of ``x`` (m, C, H, W) resampled bilinearly back to H x W.

    Bilinear resampling is separable, so it is two small matrix products (much faster than
    ``grid_sample`` on the CPU)."""
    if crop == 1.0:
        return x
    import torch

    H, W = x.shape[-2:]
    ry = torch.as_tensor(_interp_matrix(H, crop), dtype=x.dtype, device=x.device)
    rx = torch.as_tensor(_interp_matrix(W, crop), dtype=x.dtype, device=x.device)
    return ry @ x @ rx.T


def _rows_product(a, x):
    """``a @ x`` for ``a`` (p, H) and ``x`` (..., H, W) as one matrix product over all of ``x``'s
    columns (a broadcast ``a @ x`` runs one small product per image: 2x slower on the CPU)."""
    lead, (H, W) = x.shape[:-2], x.shape[-2:]
    out = x.transpose(-1, -2).reshape(-1, H) @ a.T  # (..., W, p)
    return out.reshape(*lead, W, a.shape[0]).transpose(-1, -2)


@functools.lru_cache(maxsize=32)
def _box_matrix(size: int, width: int, n: int) -> np.ndarray:
    """(n, size) matrix summing the ``width`` values starting at each of the first ``n`` offsets."""
    idx = np.arange(size)
    return ((idx >= np.arange(n)[:, None]) & (idx < np.arange(n)[:, None] + width)).astype(np.float64)


def _window_norms(img, h: int, w: int, n_shift: int):
    """Root of the centred sum of squares of every h x w window: (m, C, n_shift, n_shift)."""
    import torch

    H, W = img.shape[-2:]
    by = torch.as_tensor(_box_matrix(H, h, n_shift), dtype=img.dtype, device=img.device)
    bx = torch.as_tensor(_box_matrix(W, w, n_shift), dtype=img.dtype, device=img.device)
    x = img - img.mean(dim=(-2, -1), keepdim=True)  # centring first keeps float32 sums accurate
    # window sums as box-matrix products: sums of h * w values, not differences of running sums
    s, s2 = (_rows_product(by, t @ bx.T) for t in (x, x * x))
    return (s2 - s * s / (h * w)).clamp_min(0).sqrt()


def _template(q, s: int):
    """Centre template of ``q`` zero-mean per channel, and its norm: (m, C, h, w), (m, C, 1, 1)."""
    h, w = q.shape[-2] - 2 * s, q.shape[-1] - 2 * s
    t = q[..., s:s + h, s:s + w]
    t = t - t.mean(dim=(-2, -1), keepdim=True)
    return t, t.square().sum(dim=(-2, -1), keepdim=True).sqrt()


@functools.lru_cache(maxsize=32)
def _inverse_dft_matrices(H: int, W: int, n: int, dtype, device):
    """Real matrices computing the first ``n`` x ``n`` outputs of ``irfft2`` (see
    :func:`_partial_irfft2`): columns stage (2 * (W // 2 + 1), 2n), rows stage (2H, n)."""
    import torch

    kx, o = np.arange(W // 2 + 1), np.arange(n)
    weight = np.where((kx == 0) | (2 * kx == W), 1.0, 2.0)[:, None]  # Hermitian half spectrum
    ang = 2 * np.pi * np.outer(kx, o) / W
    er, ei = weight * np.cos(ang) / W, weight * np.sin(ang) / W
    # complex product on interleaved (re, im) pairs: (r + i*j)(er + i*ei)
    cols = np.zeros((2 * len(kx), 2 * n))
    cols[0::2, 0::2], cols[1::2, 0::2] = er, -ei
    cols[0::2, 1::2], cols[1::2, 1::2] = ei, er
    ang = 2 * np.pi * np.outer(np.arange(H), o) / H  # (ky, oy)
    rows = np.concatenate([np.cos(ang) / H, -np.sin(ang) / H])  # real part of exp(+i ang) * t
    t = lambda a: torch.as_tensor(a, dtype=dtype, device=device)  # noqa: E731
    return t(cols), t(rows)


def _partial_irfft2(spec, H: int, W: int, n: int):
    """``irfft2(spec, s=(H, W))[..., :n, :n]`` as two real matrix products.

    Only the (2s+1)^2 shifts are needed, not all H x W outputs: the columns stage works on the
    interleaved real view of ``spec`` without a copy, and the rows stage on a tensor already
    n / (W / 2) times smaller.  ``spec`` has shape (..., H, W // 2 + 1), contiguous.
    """
    import torch

    lead, kw = spec.shape[:-2], spec.shape[-1]
    cols, rows = _inverse_dft_matrices(H, W, n, spec.real.dtype, spec.device)
    t = torch.view_as_real(spec.contiguous()).reshape(-1, 2 * kw) @ cols  # (B * H, 2n) = (ky, ox, re/im)
    b = t.shape[0] // H
    t = t.reshape(b, H, n, 2).permute(0, 2, 3, 1).reshape(b * n, 2 * H)  # (b, ox) x (re/im, ky)
    # rows.T @ t.T: the long side (b * n) as the product's columns runs 4x faster than t @ rows
    out = (rows.T @ t.T).reshape(n, b, n).transpose(0, 1)  # (b, oy, ox)
    return out.reshape(*lead, n, n)


def _band_ncc(a, b, flat: float):
    """NCC per channel of equally shaped (m, C, h, w) tensors, averaged over the channels that are
    not flat on both sides (0 where only one side is flat; NaN where every channel is flat on both)."""
    import torch

    a = a - a.mean(dim=(-2, -1), keepdim=True)
    b = b - b.mean(dim=(-2, -1), keepdim=True)
    va, vb = a.square().sum(dim=(-2, -1)), b.square().sum(dim=(-2, -1))
    fa, fb = va <= flat, vb <= flat
    r = (a * b).sum(dim=(-2, -1)) / (va * vb).sqrt().clamp_min(1e-12)
    r = torch.where(fa | fb, torch.zeros_like(r), r)
    return torch.where(fa & fb, torch.full_like(r, float("nan")), r).nanmean(dim=1)


def _detail_band(x, sigma: float):
    """Detail band of ``x`` (..., h, w): ``x`` minus its Gaussian blur of ``sigma`` pixels (edges
    mirrored), the blur as two matrix products."""
    import torch

    h, w = x.shape[-2:]
    gh = torch.as_tensor(_blur_matrix(h, sigma), dtype=x.dtype, device=x.device)
    gwt = torch.as_tensor(_blur_matrix(w, sigma).T, dtype=x.dtype, device=x.device)
    return x - gh @ (x @ gwt)


def image_pair_corr(
    query,
    database,
    *,
    max_shift: int = 4,
    flip: bool = True,
    scales: Sequence[float] = (1.0, 0.9, 0.8),
    detail: float = 0.0,
    detail_sigma: Optional[float] = None,
    device: str = "cpu",
    batch_size: int = 512,
) -> ImageCorr:
    """Best NCC of each image pair over translations, a horizontal flip and crop-scales.

    Parameters
    ----------
    query, database : ndarray or torch.Tensor of shape (m, C, H, W)
        Pair ``i`` is ``(query[i], database[i])``; values on any scale (each channel is
        normalised on its own).
    max_shift : int
        Largest translation tried, in pixels along each axis: ``(2 * max_shift + 1) ** 2`` shifts.
    flip : bool
        Also try the horizontally flipped query.
    scales : sequence of float in (0, 1]
        Centre-crop fractions; each ``s < 1`` is tried both ways (query = crop of database, and
        database = crop of query).
    detail : float in [0, 1]
        Weight of the detail bands' NCC in the score, at the transform the NCC chose (0: the NCC
        alone).  Where both detail bands are flat the NCC stands in for it; where one is, it is 0.
    detail_sigma : float, optional
        Gaussian blur (pixels) taken off each window to leave its detail band (default ``H / 16``).
    device : str
        torch device, resolved by the caller (``"cpu"``, ``"cuda"``).
    batch_size : int
        Pairs per batch (memory is about ``batch_size * (V + 4) * H * W * 8`` bytes).

    Returns
    -------
    ImageCorr
    """
    import torch

    from .paircorr_sides import prepare_database, prepare_queries, side_pair_corr

    _check_images(query, database, max_shift)
    variants = image_variants(flip, scales)
    m, _, H, W = query.shape
    sigma = check_detail(detail, detail_sigma, H)
    n = 2 * max_shift + 1
    best = np.empty(m, np.float32)
    arg = np.empty(m, np.int64)
    band = np.full(m, np.nan, np.float32)
    with torch.no_grad():
        for lo in range(0, m, batch_size):
            q = torch.as_tensor(query[lo:lo + batch_size], dtype=torch.float32).to(device)
            d = torch.as_tensor(database[lo:lo + batch_size], dtype=torch.float32).to(device)
            qside = prepare_queries(q, max_shift, variants, bool(detail), batch_size=len(q))
            dside = prepare_database(d, max_shift, variants, bool(detail), batch_size=len(d))
            rows = np.arange(len(q))
            sl = slice(lo, lo + len(q))
            best[sl], arg[sl], band[sl] = side_pair_corr(qside, rows, dside, rows, max_shift, variants, sigma,
                                                         bool(detail), batch_size=len(q))
    return image_corr_result(best, arg, variants, max_shift, n, band, detail)


def check_detail(detail: float, sigma: Optional[float], size: int) -> float:
    """The detail band's blur in pixels (default ``size / 16``), after checking both options."""
    if not 0.0 <= float(detail) <= 1.0:
        raise ValueError(f"detail must be in [0, 1], got {detail}")
    sigma = size / 16 if sigma is None else float(sigma)
    if not sigma > 0:
        raise ValueError(f"detail_sigma must be positive, got {sigma}")
    return sigma


def image_corr_result(best, arg, variants, s, n, band, detail: float) -> ImageCorr:
    """The :class:`ImageCorr` of pairs from their best NCC ``best`` (m,), its (variant, shift) index
    ``arg`` (m,) into the (V, n, n) maps of ``variants`` and shift ``s``, and the detail bands' NCC
    ``band`` (m,) there, blended with weight ``detail``."""
    v, off = np.divmod(arg, n * n)
    oy, ox = np.divmod(off, n)
    table = np.array([(f, cq, cd) for f, cq, cd in variants], dtype=np.float64).reshape(-1, 3)
    best = np.where(np.isfinite(best), np.clip(best, -1.0, 1.0), np.nan)
    band = np.where(np.isnan(band), best, np.clip(band, -1.0, 1.0))  # both bands flat: the NCC stands in
    score = best if not detail else (1.0 - detail) * best + detail * band
    return ImageCorr(
        score=score.astype(np.float32),
        flipped=table[v, 0].astype(bool),
        dy=(s - oy).astype(np.int32),
        dx=(s - ox).astype(np.int32),
        crop_query=table[v, 1].astype(np.float32),
        crop_database=table[v, 2].astype(np.float32),
        ncc=best.astype(np.float32),
    )
