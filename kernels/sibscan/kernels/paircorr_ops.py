"""The operations image-pair correlation is made of (:mod:`.paircorr`, :mod:`.paircorr_sides`):
bilinear centre crops, window norms from box sums, zero-mean templates, the partial inverse FFT
over the shifts, Gaussian detail bands and their NCC.  Torch tensors in, torch tensors out, on
whatever device they are on; each product is shaped to run as one matrix product over the batch."""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["FLAT_VAR"]

#: a window or template whose variance is below this (values in [0, 1]) counts as flat
FLAT_VAR = 1e-6


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
