"""Whether the finest detail agrees at the alignment found: tells a copy from a look-alike of its kind.

:func:`sibscan.kernels.scalematch.scale_match` aligns the band-pass *structure* signal (blur sigma 1
less blur sigma 3): outlines and edges.  Two coins of one tray, or two cells of one textured photo,
share those outlines; a copy also shares what lies finer than them, the grain under the sigma-1 blur
(:func:`fine_band`).  :func:`fine_agreement` is the NCC of the two images' fine bands at the
alignment found (0 where either side is flat there); :func:`fine_agreement_reference` is its loop.
Recompression and the upscaling of small images weaken it in copies too, which the fitted model
weighs (``imagefuse``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .alignmatch import aligned_signals, reference_signals
from .scalematch import FLAT_RMS, SIGMAS, MatchVariant, ScaleMatch, _blur, _side

__all__ = ["fine_agreement", "fine_agreement_reference", "fine_band"]


def fine_band(x):
    """The detail of (m, 1, H, W) grey images finer than the structure signal: ``x - blur(x, sigma 1)``."""
    return x - _blur(x, SIGMAS[0])


def _ncc(a, b, flat: float):
    """NCC over the last two axes of (..., T, T) ``a`` and ``b``; 0 where either's RMS is below ``flat``."""
    a = a - a.mean((-2, -1), keepdim=True)
    b = b - b.mean((-2, -1), keepdim=True)
    na, nb = a.square().mean((-2, -1)).sqrt(), b.square().mean((-2, -1)).sqrt()
    r = (a * b).mean((-2, -1)) / (na * nb).clamp_min(1e-12)
    return r * ((na >= flat) & (nb >= flat))


def fine_agreement(query, database, query_index, database_index, variants: Sequence[MatchVariant], match: ScaleMatch,
                   *, device: str = "cpu") -> np.ndarray:
    """NCC of the fine bands (:func:`fine_band`) of each pair at the alignment ``match`` found.

    Parameters
    ----------
    query, database, query_index, database_index, variants
        As for :func:`sibscan.kernels.scalematch.scale_match`.
    match : ScaleMatch
        Its result for the same pairs.

    Returns
    -------
    ndarray of shape (m,), float64
        In [-1, 1]; 0 where either fine band is flat (RMS below a tenth of the structure signal's
        :data:`sibscan.kernels.scalematch.FLAT_RMS`).
    """
    out = np.zeros(len(match.score))
    for rows, t, w in aligned_signals(query, database, query_index, database_index, variants, match, signal=fine_band,
                                      device=device):
        out[rows] = _ncc(t[:, 0], w[:, 0], FLAT_RMS / 10).double().cpu().numpy()
    return out


def fine_agreement_reference(query: np.ndarray, database: np.ndarray, query_index, database_index,
                             variants: Sequence[MatchVariant], match: ScaleMatch) -> np.ndarray:
    """:func:`fine_agreement` by a plain loop over pairs (numpy), for the tests."""
    m, N = len(match.score), query.shape[-1]
    out = np.zeros(m)
    for i in range(m):
        v = variants[int(match.variant[i])]
        T = _side(N, v)
        t, o = reference_signals(query[query_index[i]], database[database_index[i]], v, signal=fine_band)
        y, x = int(match.y[i]), int(match.x[i])
        a, b = t - t.mean(), o[y:y + T, x:x + T]
        b = b - b.mean()
        na, nb = np.sqrt((a * a).mean()), np.sqrt((b * b).mean())
        if na >= FLAT_RMS / 10 and nb >= FLAT_RMS / 10:
            out[i] = float((a * b).mean() / max(na * nb, 1e-12))
    return out
