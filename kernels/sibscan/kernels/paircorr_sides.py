"""Image-pair correlation with each image's own work done once: prepared sides, pairs scored by row.

A pair's score (:func:`sibscan.kernels.paircorr.image_pair_corr`) splits into work that belongs to
one image and work that belongs to the pair.  Per image, in its role: as a query, its flipped and
cropped variants, their centre templates' spectra and norms and the templates' detail bands; as a
database image, its crops, their spectra and window norms.  Per pair: the spectra's products, the
partial inverse FFT over the (2s+1)^2 shifts, the maximum, and the detail band of the one window the
maximum chose.  :func:`prepare_queries` / :func:`prepare_database` do the first part once for every
image of a verify call (however many pairs it is in: a scan's candidate pairs hold each test image
about 15 times), :func:`side_pair_corr` the second, batched over pairs given as rows into both sides.
The per-image tensors are the ones the per-pair path computed, by the same operations; the FFTs run
on batches of other shapes, so the scores can differ from the per-pair path's in the last bits
(within 3e-7 measured; ``tests/test_verify_prepared.py`` pins them within 1e-6).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Sequence, Tuple

import numpy as np

from .paircorr_ops import FLAT_VAR, _band_ncc, _detail_band, _partial_irfft2, _template, _window_norms, _zoom_torch

__all__ = ["DatabaseSide", "QuerySide", "prepare_database", "prepare_queries", "side_bytes", "side_pair_corr"]

Variants = Sequence[Tuple[bool, float, float]]


@dataclass
class QuerySide:
    """Prepared query images (n of them), each dict keyed by ``(flipped, crop_query)``.

    Attributes
    ----------
    spectra : dict of tensor of shape (n, C, H, W // 2 + 1), complex64
        Conjugated spectrum of each zero-mean centre template (zero-padded to H x W).
    norms : dict of tensor of shape (n, C, 1, 1)
        Each template's norm.
    zoomed : dict of tensor of shape (n, C, H, W)
        The flipped and cropped images (empty without a detail weight).
    bands : dict of tensor of shape (n, C, h, w)
        The templates' detail bands, filled on first use by :meth:`detail_bands` (a band is needed
        only where a pair chose that variant: a query image with three pairs needs at most three).
    """

    spectra: Dict[Tuple[bool, float], object] = field(default_factory=dict)
    norms: Dict[Tuple[bool, float], object] = field(default_factory=dict)
    zoomed: Dict[Tuple[bool, float], object] = field(default_factory=dict)
    bands: Dict[Tuple[bool, float], object] = field(default_factory=dict)
    _have: Dict[Tuple[bool, float], object] = field(default_factory=dict)

    def detail_bands(self, key: Tuple[bool, float], pos, s: int, sigma: float):
        """Detail bands of the templates of rows ``pos`` (int tensor) under variant ``key``: (len(pos), C, h, w)."""
        import torch

        z = self.zoomed[key]
        n, C, H, W = z.shape
        h, w = H - 2 * s, W - 2 * s
        if key not in self.bands:
            self.bands[key] = torch.empty((n, C, h, w), dtype=z.dtype, device=z.device)
            self._have[key] = torch.zeros(n, dtype=torch.bool, device=z.device)
        have = self._have[key]
        need = torch.unique(pos[~have[pos]])
        if len(need):
            self.bands[key][need] = _detail_band(z[need][..., s:s + h, s:s + w], sigma)
            have[need] = True
        return self.bands[key][pos]


@dataclass
class DatabaseSide:
    """Prepared database images (n of them), each dict keyed by ``crop_database``.

    Attributes
    ----------
    spectra : dict of tensor of shape (n, C, H, W // 2 + 1), complex64
    norms : dict of tensor of shape (n, C, 2s + 1, 2s + 1)
        Centred norm of the window at every shift.
    zoomed : dict of tensor of shape (n, C, H, W)
        The cropped images, where the chosen windows' detail bands are cut (empty without a detail weight).
    """

    spectra: Dict[float, object] = field(default_factory=dict)
    norms: Dict[float, object] = field(default_factory=dict)
    zoomed: Dict[float, object] = field(default_factory=dict)


def side_bytes(channels: int, size: int, max_shift: int, variants: Variants, detail: bool) -> Tuple[int, int]:
    """Bytes one prepared query image and one prepared database image hold."""
    h, n = size - 2 * max_shift, 2 * max_shift + 1
    spectrum = channels * size * (size // 2 + 1) * 8
    q_keys = len({(f, cq) for f, cq, _ in variants})
    d_keys = len({cd for _, _, cd in variants})
    per_q = q_keys * (spectrum + 4 * channels + (4 * channels * (size * size + h * h) if detail else 0))
    per_d = d_keys * (spectrum + 4 * channels * n * n + (4 * channels * size * size if detail else 0))
    return per_q, per_d


def _filled(fn: Callable[[int], dict], n: int, batch_size: int) -> dict:
    """``fn(lo)`` (a dict of tensors of ``batch_size`` images from ``lo``) for every batch, written
    into tensors of all ``n`` images preallocated at the first batch's shapes, under ``torch.no_grad``.
    One batch is alive at a time: the peak is the side plus one batch, not twice the side (a
    concatenation of the batches holds them and the result at once)."""
    import torch

    out: dict = {}
    with torch.no_grad():
        for lo in range(0, n, batch_size):
            part = fn(lo)
            for key, t in part.items():
                if t.shape[0] == n:  # one batch: the side is the batch itself
                    out[key] = t
                    continue
                if key not in out:
                    out[key] = torch.empty((n,) + tuple(t.shape[1:]), dtype=t.dtype, device=t.device)
                out[key][lo:lo + t.shape[0]] = t
            del part
    return out


def prepare_queries(images, s: int, variants: Variants, detail: bool, batch_size: int = 256) -> QuerySide:
    """The query side of ``images`` (float32 tensor of shape (n, C, H, W)), ``batch_size`` images at a time."""
    import torch

    H, W = images.shape[-2:]
    keys = list(dict.fromkeys((f, cq) for f, cq, _ in variants))

    def batch(lo: int) -> dict:
        q, out = images[lo:lo + batch_size], {}
        for flipped, cq in keys:
            qz = _zoom_torch(q.flip(-1) if flipped else q, cq)
            t, out["norm", flipped, cq] = _template(qz, s)
            out["spec", flipped, cq] = torch.fft.rfft2(t, s=(H, W)).conj()
            if detail:
                out["zoom", flipped, cq] = qz
        return out

    side = QuerySide()
    for (kind, flipped, cq), tensor in _filled(batch, len(images), batch_size).items():
        {"spec": side.spectra, "norm": side.norms, "zoom": side.zoomed}[kind][flipped, cq] = tensor
    return side


def prepare_database(images, s: int, variants: Variants, detail: bool, batch_size: int = 256) -> DatabaseSide:
    """The database side of ``images`` (float32 tensor of shape (n, C, H, W)), ``batch_size`` images at a time."""
    import torch

    H, W = images.shape[-2:]
    h, w, n = H - 2 * s, W - 2 * s, 2 * s + 1
    crops = sorted({cd for _, _, cd in variants})

    def batch(lo: int) -> dict:
        d, out = images[lo:lo + batch_size], {}
        for cd in crops:
            dz = _zoom_torch(d, cd)
            out["norm", cd] = _window_norms(dz, h, w, n)
            out["spec", cd] = torch.fft.rfft2(dz)
            if detail:
                out["zoom", cd] = dz
        return out

    side = DatabaseSide()
    for (kind, cd), tensor in _filled(batch, len(images), batch_size).items():
        {"spec": side.spectra, "norm": side.norms, "zoom": side.zoomed}[kind][cd] = tensor
    return side


def side_pair_corr(qside: QuerySide, qpos, dside: DatabaseSide, dpos, s: int, variants: Variants, sigma: float,
                   detail: bool, batch_size: int = 512) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best NCC of pairs ``(qside[qpos[i]], dside[dpos[i]])`` over the variants and shifts.

    Parameters
    ----------
    qpos, dpos : ndarray of shape (m,), int
        Rows of the prepared sides.
    sigma : float
        Gaussian blur (pixels) taken off each template and window to leave its detail band.
    batch_size : int
        Pairs per batch.

    Returns
    -------
    best : ndarray of shape (m,), float32
        Best NCC, ``-inf`` where no window is defined.
    arg : ndarray of shape (m,), int64
        Its index into the (variant, shift) maps (see :func:`sibscan.kernels.paircorr.image_corr_result`).
    band : ndarray of shape (m,), float32
        NCC of the detail bands at that transform (NaN where both are flat, or without ``detail``).
    """
    import torch

    m = len(qpos)
    best = np.empty(m, np.float32)
    arg = np.empty(m, np.int64)
    band = np.full(m, np.nan, np.float32)
    like = next(iter(dside.spectra.values()))
    qpos_all = torch.as_tensor(np.asarray(qpos, np.int64), device=like.device)
    dpos_all = torch.as_tensor(np.asarray(dpos, np.int64), device=like.device)

    def batch(lo: int) -> None:
        qp, dp = qpos_all[lo:lo + batch_size], dpos_all[lo:lo + batch_size]
        b, a = _best_transform(qside, qp, dside, dp, s, variants)
        best[lo:lo + len(qp)] = b.cpu().numpy()
        arg[lo:lo + len(qp)] = a.cpu().numpy()
        if detail:
            band[lo:lo + len(qp)] = _detail_ncc(qside, qp, dside, dp, a, s, variants, sigma).cpu().numpy()

    with torch.no_grad():
        for lo in range(0, m, batch_size):
            batch(lo)
    return best, arg, band


def _best_transform(qside: QuerySide, qp, dside: DatabaseSide, dp, s: int, variants: Variants):
    """Best score and (variant, shift) index of each pair of one batch (torch tensors)."""
    import torch

    spec = next(iter(dside.spectra.values()))
    H, W = spec.shape[-2], 2 * (spec.shape[-1] - 1)
    h, w, n = H - 2 * s, W - 2 * s, 2 * s + 1
    flat = FLAT_VAR * h * w
    m = len(qp)
    db = {cd: (dside.spectra[cd][dp], dside.norms[cd][dp]) for cd in sorted({v[2] for v in variants})}
    qs = {}
    maps = []
    for flipped, cq, cd in variants:
        key = (flipped, cq)
        if key not in qs:
            qs[key] = (qside.spectra[key][qp], qside.norms[key][qp])
        tf, tn = qs[key]
        df, dn = db[cd]
        cc = _partial_irfft2(tf * df, H, W, n)
        valid = (dn.square() > flat) & (tn.square() > flat)
        ncc = torch.where(valid, cc / (dn * tn).clamp_min(1e-12), torch.zeros_like(cc))
        # mean over channels; a pair only counts where every channel is defined
        ok = valid.all(dim=1)
        score = torch.where(ok, ncc.mean(dim=1), torch.full_like(ok, float("-inf"), dtype=ncc.dtype))
        maps.append(score.reshape(m, n * n))
    return torch.stack(maps, dim=1).reshape(m, -1).max(dim=1)


def _detail_ncc(qside: QuerySide, qp, dside: DatabaseSide, dp, arg, s: int, variants: Variants, sigma: float):
    """NCC of the detail bands of each pair's template and the window ``arg`` chose: (m,) tensor, NaN
    where both are flat."""
    import torch

    like = next(iter(dside.zoomed.values()))
    C, H, W = like.shape[1:]
    h, w, n = H - 2 * s, W - 2 * s, 2 * s + 1
    v, off = arg // (n * n), arg % (n * n)
    oy, ox = off // n, off % n
    out = torch.empty(len(qp), dtype=like.dtype, device=like.device)
    # each pair's window as positions in its flattened (H * W) cropped database image
    cells = (torch.arange(h, device=like.device)[:,
                                                 None] * W + torch.arange(w, device=like.device)).reshape(1, 1, h * w)
    for vi in torch.unique(v).tolist():
        rows = torch.nonzero(v == vi).flatten()
        flipped, cq, cd = variants[vi]
        dz = dside.zoomed[cd][dp[rows]].reshape(len(rows), C, H * W)
        at = (oy[rows] * W + ox[rows]).reshape(-1, 1, 1) + cells
        win = torch.gather(dz, 2, at.expand(len(rows), C, h * w)).reshape(len(rows), C, h, w)
        out[rows] = _band_ncc(qside.detail_bands((flipped, cq), qp[rows], s, sigma), _detail_band(win, sigma),
                              FLAT_VAR * h * w)
    return out
