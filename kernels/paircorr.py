"""Transform-invariant correlation of image pairs: the compute behind image verification.

:func:`image_pair_corr` scores pairs of equally sized images (grayscale or colour) by the
normalised cross-correlation (NCC) of the query's centre, ``max_shift`` pixels in from each
edge, against every window of the database image it can slide to, maximised over those
translations, a horizontal flip and a few centre crop-scales (either image may be the crop).
Each channel is normalised on its own, so brightness, contrast and per-channel colour gains do
not matter.  The cross-correlation runs as a batched FFT in torch (CPU or CUDA); the
window statistics come from integral images.  :func:`image_pair_corr_reference` is the plain
numpy loop the tests hold it to.  (Series pairs: :mod:`sibscan.kernels.lagcorr`.)

Undefined correlations (a flat image) come back as NaN: the scan then falls back to the embedding
similarity for that pair.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

__all__ = ["ImageCorr", "image_pair_corr", "image_pair_corr_reference", "image_variants", "zoom_reference"]

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
    """

    score: np.ndarray
    flipped: np.ndarray
    dy: np.ndarray
    dx: np.ndarray
    crop_query: np.ndarray
    crop_database: np.ndarray


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


def _window_norms(img, h: int, w: int, n_shift: int):
    """Root of the centred sum of squares of every h x w window: (m, C, n_shift, n_shift)."""
    import torch.nn.functional as F

    x = img - img.mean(dim=(-2, -1), keepdim=True)  # centring first keeps float32 sums accurate
    ii = F.pad(x.cumsum(-1).cumsum(-2), (1, 0, 1, 0))
    ii2 = F.pad((x * x).cumsum(-1).cumsum(-2), (1, 0, 1, 0))

    def box(t):
        return (t[..., h:h + n_shift, w:w + n_shift] - t[..., :n_shift, w:w + n_shift]
                - t[..., h:h + n_shift, :n_shift] + t[..., :n_shift, :n_shift])

    s, s2 = box(ii), box(ii2)
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
    out = (t @ rows).reshape(b, n, n).transpose(1, 2)  # (b, oy, ox)
    return out.reshape(*lead, n, n)


def _corr_batch(q, d, s: int, variants) -> Tuple:
    """Best score and variant/shift index of each pair of one batch (torch tensors)."""
    import torch

    H, W = q.shape[-2:]
    h, w, n = H - 2 * s, W - 2 * s, 2 * s + 1
    flat = FLAT_VAR * h * w
    db = {}
    for cd in sorted({v[2] for v in variants}):
        dz = _zoom_torch(d, cd)
        dn = _window_norms(dz, h, w, n)
        db[cd] = (torch.fft.rfft2(dz), dn)
    maps = []
    qcache = {}
    for flipped, cq, cd in variants:
        key = (flipped, cq)
        if key not in qcache:
            qz = _zoom_torch(q.flip(-1) if flipped else q, cq)
            t, tn = _template(qz, s)
            qcache[key] = (torch.fft.rfft2(t, s=(H, W)).conj(), tn)
        tf, tn = qcache[key]
        df, dn = db[cd]
        cc = _partial_irfft2(tf * df, H, W, n)
        valid = (dn.square() > flat) & (tn.square() > flat)
        ncc = torch.where(valid, cc / (dn * tn).clamp_min(1e-12), torch.zeros_like(cc))
        # mean over channels; a pair only counts where every channel is defined
        ok = valid.all(dim=1)
        score = torch.where(ok, ncc.mean(dim=1), torch.full_like(ok, float("-inf"), dtype=ncc.dtype))
        maps.append(score.reshape(len(q), n * n))
    allmaps = torch.stack(maps, dim=1).reshape(len(q), -1)  # (m, V * n * n)
    best, arg = allmaps.max(dim=1)
    return best, arg


def image_pair_corr(
    query,
    database,
    *,
    max_shift: int = 4,
    flip: bool = True,
    scales: Sequence[float] = (1.0, 0.9, 0.8),
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
    n = 2 * max_shift + 1
    best = np.empty(m, np.float32)
    arg = np.empty(m, np.int64)
    with torch.no_grad():
        for lo in range(0, m, batch_size):
            q = torch.as_tensor(query[lo:lo + batch_size], dtype=torch.float32).to(device)
            d = torch.as_tensor(database[lo:lo + batch_size], dtype=torch.float32).to(device)
            b, a = _corr_batch(q, d, max_shift, variants)
            best[lo:lo + len(q)] = b.cpu().numpy()
            arg[lo:lo + len(q)] = a.cpu().numpy()
    return _decode(best, arg, variants, max_shift, n)


def _decode(best, arg, variants, s, n) -> ImageCorr:
    v, off = np.divmod(arg, n * n)
    oy, ox = np.divmod(off, n)
    table = np.array([(f, cq, cd) for f, cq, cd in variants], dtype=np.float64).reshape(-1, 3)
    best = np.where(np.isfinite(best), np.clip(best, -1.0, 1.0), np.nan).astype(np.float32)
    return ImageCorr(
        score=best,
        flipped=table[v, 0].astype(bool),
        dy=(s - oy).astype(np.int32),
        dx=(s - ox).astype(np.int32),
        crop_query=table[v, 1].astype(np.float32),
        crop_database=table[v, 2].astype(np.float32),
    )


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
) -> ImageCorr:
    """Brute-force numpy version of :func:`image_pair_corr`: explicit loops over every pair,
    transform and shift, NCC computed directly from each window."""
    _check_images(query, database, max_shift)
    variants = image_variants(flip, scales)
    s = max_shift
    m, C, H, W = query.shape
    h, w, n = H - 2 * s, W - 2 * s, 2 * s + 1
    best = np.full(m, -np.inf)
    arg = np.zeros(m, np.int64)
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
    return _decode(best, arg, variants, s, n)

