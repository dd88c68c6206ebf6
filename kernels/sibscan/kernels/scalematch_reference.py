""":func:`sibscan.kernels.scalematch.scale_match` by plain loops over positions (numpy NCC): the reference
the tests hold the batched FFT search to."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .scalematch import FLAT_RMS, MatchVariant, ScaleMatch, preference, structure, template

__all__ = ["scale_match_reference"]


def scale_match_reference(query: np.ndarray, database: np.ndarray, query_index, database_index,
                          variants: Sequence[MatchVariant], **prefer) -> ScaleMatch:
    """:func:`sibscan.kernels.scalematch.scale_match` by plain loops over positions (numpy NCC), for the tests.

    The templates and structure signals come from the same torch helpers; only the search over
    positions and its normalisation are recomputed here.
    """
    import torch

    query, database = np.asarray(query)[np.asarray(query_index)], np.asarray(database)[np.asarray(database_index)]
    m, N = query.shape[0], query.shape[-1]
    out = ScaleMatch(np.zeros(m, np.float32), np.zeros(m, np.int64), np.zeros(m, np.int32), np.zeros(m, np.int32))
    imgs = {"query": torch.as_tensor(query, dtype=torch.float32),
            "database": torch.as_tensor(database, dtype=torch.float32)}
    sig = {k: structure(v).numpy()[:, 0].astype(np.float64) for k, v in imgs.items()}
    for i in range(m):
        top = -np.inf
        for j, v in enumerate(variants):
            outer = sig["database" if v.inner == "query" else "query"][i]
            t = structure(template(imgs[v.inner][i:i + 1], v, N)).numpy()[0, 0].astype(np.float64)
            T = t.shape[0]
            t = t - t.mean()
            best, by, bx = 0.0, 0, 0  # a flat template scores 0 at (0, 0)
            if np.sqrt((t * t).sum()) / T >= FLAT_RMS:
                t /= np.sqrt((t * t).sum())
                best = -2.0
                for y in range(N - T + 1):
                    for x in range(N - T + 1):
                        w = outer[y:y + T, x:x + T]
                        w = w - w.mean()
                        den = np.sqrt((w * w).sum())
                        val = 0.0 if den < FLAT_RMS * T else float((w * t).sum() / den)
                        if val > best + 1e-6:
                            best, by, bx = val, y, x
            rank = float(preference(np.array([[best]]), N, [v], **prefer)[0, 0])
            if rank > top + 1e-6:
                top, out.score[i], out.variant[i], out.y[i], out.x[i] = rank, best, j, by, bx
    return out
