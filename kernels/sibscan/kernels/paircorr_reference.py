"""Brute-force references of :mod:`.paircorr`: explicit loops over every pair, transform, shift
and pixel, in float64, that the fast torch kernel is tested against."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .paircorr import ImageCorr, check_detail, _check_images, image_corr_result, image_variants
from .paircorr_ops import FLAT_VAR

__all__ = ["blur_reference", "image_pair_corr_reference", "zoom_reference"]


def zoom_reference(x: np.ndarray, crop: float) -> np.ndarray:
    """Numpy bilinear centre crop-and-resize matching ``grid_sample(align_corners=False)``.

    ``x`` has shape (..., H, W); returns the same shape.
    """
    if crop == 1.0:
        return np.asarray(x, np.float64)
    H, W = x.shape[-2:]

    def coords(size):
        norm = (2 * np.arange(size) + 1) / size - 1
        pix = ((norm * crop + 1) * size - 1) / 2
        pix = np.clip(pix, 0, size - 1)
        lo = np.floor(pix).astype(int)
        hi = np.minimum(lo + 1, size - 1)
        return lo, hi, pix - lo

    y0, y1, fy = coords(H)
    x0, x1, fx = coords(W)
    x = np.asarray(x, np.float64)
    top = x[..., y0, :][..., x0] * (1 - fx) + x[..., y0, :][..., x1] * fx
    bot = x[..., y1, :][..., x0] * (1 - fx) + x[..., y1, :][..., x1] * fx
    return top * (1 - fy)[:, None] + bot * fy[:, None]


def image_pair_corr_reference(
    query: np.ndarray,
    database: np.ndarray,
    *,
    max_shift: int = 4,
    flip: bool = True,
    scales: Sequence[float] = (1.0, 0.9, 0.8),
    detail: float = 0.0,
    detail_sigma: Optional[float] = None,
) -> ImageCorr:
    """Brute-force numpy version of :func:`image_pair_corr`: explicit loops over every pair,
    transform and shift, NCC computed directly from each window (the detail bands by
    :func:`blur_reference`)."""
    _check_images(query, database, max_shift)
    variants = image_variants(flip, scales)
    s = max_shift
    m, C, H, W = query.shape
    sigma = check_detail(detail, detail_sigma, H)
    h, w, n = H - 2 * s, W - 2 * s, 2 * s + 1
    best = np.full(m, -np.inf)
    arg = np.zeros(m, np.int64)
    band = np.full(m, np.nan)
    for i in range(m):
        for vi, (flipped, cq, cd) in enumerate(variants):
            qi = query[i][..., ::-1] if flipped else query[i]
            qz, dz = zoom_reference(qi, cq), zoom_reference(database[i], cd)
            t = qz[:, s:s + h, s:s + w]
            t = t - t.mean(axis=(1, 2), keepdims=True)
            for oy in range(n):
                for ox in range(n):
                    win = dz[:, oy:oy + h, ox:ox + w]
                    win = win - win.mean(axis=(1, 2), keepdims=True)
                    tv, wv = (t * t).sum(axis=(1, 2)), (win * win).sum(axis=(1, 2))
                    if (tv <= FLAT_VAR * h * w).any() or (wv <= FLAT_VAR * h * w).any():
                        continue
                    r = ((t * win).sum(axis=(1, 2)) / np.sqrt(tv * wv)).mean()
                    if r > best[i]:
                        best[i], arg[i] = r, vi * n * n + oy * n + ox
        if detail:
            vi, off = divmod(int(arg[i]), n * n)
            (flipped, cq, cd), (oy, ox) = variants[vi], divmod(off, n)
            t = zoom_reference(query[i][..., ::-1] if flipped else query[i], cq)[:, s:s + h, s:s + w]
            win = zoom_reference(database[i], cd)[:, oy:oy + h, ox:ox + w]
            per_channel = []
            for a, b in zip(t - blur_reference(t, sigma), win - blur_reference(win, sigma)):
                a, b = a - a.mean(), b - b.mean()
                fa, fb = (a * a).sum() <= FLAT_VAR * h * w, (b * b).sum() <= FLAT_VAR * h * w
                if not (fa and fb):
                    per_channel.append(0.0 if fa or fb else (a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))
            band[i] = np.mean(per_channel) if per_channel else np.nan
    return image_corr_result(best, arg, variants, s, n, band, detail)


def blur_reference(x: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of ``x`` (..., H, W) along its last two axes, pixel by pixel: weights
    ``exp(-o^2 / 2 sigma^2)`` for offsets ``|o| <= int(4 sigma + 0.5)``, normalised, an offset past an
    edge reflected back into the image (``d c b | a b c d``)."""
    radius = int(4 * sigma + 0.5)
    weights = {o: np.exp(-0.5 * (o / sigma) ** 2) for o in range(-radius, radius + 1)}
    total = sum(weights.values())

    def reflect(j: int, size: int) -> int:
        while size > 1 and not 0 <= j < size:
            j = -j if j < 0 else 2 * (size - 1) - j
        return j if size > 1 else 0

    def along(a: np.ndarray, axis: int) -> np.ndarray:
        a = np.moveaxis(np.asarray(a, np.float64), axis, -1)
        out = np.zeros_like(a)
        size = a.shape[-1]
        for i in range(size):
            for o, wgt in weights.items():
                out[..., i] += wgt / total * a[..., reflect(i + o, size)]
        return np.moveaxis(out, -1, axis)

    return along(along(x, -1), -2)

