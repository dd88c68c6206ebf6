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

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .paircorr_sides import prepare_database, prepare_queries, side_pair_corr

__all__ = ["ImageCorr", "check_detail", "image_corr_result", "image_pair_corr", "image_variants"]


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
            f"query and database must both have shape (m, C, H, W); got {tuple(query.shape)} and "
            f"{tuple(database.shape)}"
        )
    h, w = query.shape[-2:]
    if max_shift < 0 or 2 * max_shift >= min(h, w) - 1:
        raise ValueError(f"max_shift={max_shift} does not fit images of {h}x{w} pixels")


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
