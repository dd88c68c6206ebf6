"""``lagcorr``: numeric rows / time series re-scored by correlation maximised over lags.

The score of a pair is the Pearson r of the overlapping non-NaN samples (NaN = missing or
padding) with one series shifted against the other, maximised over lags ``-max_lag..max_lag``
(default: 10 % of the length, at least 1), optionally over the sign too (``absolute=True``: a
negated copy counts).  Pearson r is already invariant to offset and scale.  A multivariate
series (``Items.shape = (n_dims, length)``) shifts all its dimensions together.  All lags come
from a handful of FFT cross-correlations (:func:`sibscan.kernels.lagcorr.series_lag_corr`).
"""
from __future__ import annotations

import math
from typing import List, Optional

import numpy as np

from ..device import resolve_device
from ..errors import SibscanError
from ..items import Items
from .base import Verifier, VerifyResult, register_verifier
from ..kernels.lagcorr import series_lag_corr

__all__ = ["LagCorrVerifier"]


def _series(items: Items, index: np.ndarray) -> np.ndarray:
    """Rows ``index`` of ``items`` as an array of shape (m, n_dims, length)."""
    values = np.asarray(items.values[np.asarray(index)], dtype=np.float64)  # only these rows (values may be on disk)
    dims = int(items.shape[0]) if items.shape and len(items.shape) == 2 else 1
    if values.shape[1] % dims:
        raise SibscanError(
            f"{items.source or items.split}: {values.shape[1]} values per row do not split into {dims} dimensions"
        )
    return values.reshape(len(values), dims, -1)


@register_verifier
class LagCorrVerifier(Verifier):
    """Pearson correlation of rows/series maximised over lags (a shifted window), NaN-aware.

    Parameters
    ----------
    max_lag : int, optional
        Largest shift in samples; default ``max(1, ceil(lag_fraction * length))``.
    lag_fraction : float
        Default ``max_lag`` as a fraction of the series length.
    absolute : bool
        Maximise ``|r|``: a sign-flipped copy counts as a sibling.
    min_overlap : float
        A lag counts only where at least this fraction of the shorter series overlaps.
    device : {"auto", "cpu", "cuda"}
    batch_size : int
        Pairs per FFT batch.
    """

    name = "lagcorr"
    requires = (("torch", "torch"),)
    modality = "table"
    description = "Pearson r of rows/series maximised over lags (shifted windows), NaN-aware"

    def __init__(
        self,
        max_lag: Optional[int] = None,
        lag_fraction: float = 0.1,
        absolute: bool = False,
        min_overlap: float = 0.5,
        device: str = "auto",
        batch_size: int = 4096,
    ):
        if max_lag is not None and int(max_lag) < 0:
            raise SibscanError(f"lagcorr max_lag must be >= 0, got {max_lag}")
        if not 0.0 <= float(lag_fraction) < 1.0:
            raise SibscanError(f"lagcorr lag_fraction must be in [0, 1), got {lag_fraction}")
        if not 0.0 < float(min_overlap) <= 1.0:
            raise SibscanError(f"lagcorr min_overlap must be in (0, 1], got {min_overlap}")
        self.max_lag = None if max_lag is None else int(max_lag)
        self.lag_fraction = float(lag_fraction)
        self.absolute = bool(absolute)
        self.min_overlap = float(min_overlap)
        self.device = resolve_device(device)
        self.batch_size = int(batch_size)
        lag = f"max_lag={self.max_lag}" if self.max_lag is not None else f"lag_fraction={self.lag_fraction:g}"
        self.identity = (
            f"lagcorr-v1({lag},absolute={int(self.absolute)},min_overlap={self.min_overlap:g})"
        )

    def lag_for(self, length: int) -> int:
        """The largest lag tried for series of ``length`` samples."""
        if self.max_lag is not None:
            return self.max_lag
        return max(1, math.ceil(self.lag_fraction * length))

    def verify(
        self, queries: Items, query_index: np.ndarray, database: Items, database_index: np.ndarray
    ) -> VerifyResult:
        """Score pairs ``(queries[query_index[i]], database[database_index[i]])``.

        Returns
        -------
        VerifyResult
            ``scores`` (m,) float32, Pearson r in [-1, 1] (``|r|`` with ``absolute``); NaN where a
            side is constant or the overlap is too short.  ``details`` like ``"lag 3"``
            (``query[t]`` matches ``database[t + 3]``) or ``"lag -2, negated"``.
        """
        qi, di = self.pair_index(queries, query_index, database, database_index)
        a, b = _series(queries, qi), _series(database, di)
        if a.shape[1] != b.shape[1]:
            raise SibscanError(
                f"{queries.split} series have {a.shape[1]} dimensions but {database.split} series {b.shape[1]}; "
                "load both splits with the same dimensions"
            )
        length = max(a.shape[2], b.shape[2])
        res = series_lag_corr(
            a, b, max_lag=self.lag_for(length), absolute=self.absolute,
            min_overlap=self.min_overlap, device=self.device, batch_size=self.batch_size,
        )
        details: List[str] = []
        for s, lag, neg in zip(res.score, res.lag, res.negated):
            if np.isnan(s):
                details.append("constant or too little overlap: correlation undefined")
            else:
                details.append(f"lag {int(lag)}" + (", negated" if neg else ""))
        return VerifyResult(scores=res.score, details=details)
