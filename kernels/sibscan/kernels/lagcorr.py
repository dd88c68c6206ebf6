"""Pearson correlation of series pairs maximised over lags (and optionally sign), NaN-aware.

All lags of a batch of pairs come from six FFT cross-correlations of the masked values (counts,
sums, sums of squares, cross products), so the cost is O(L log L) per pair whatever the lag
range.  :func:`series_lag_corr_reference` is the loop over lags the tests hold it to.
Undefined correlations (a constant series, too little overlap) come back as NaN.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SeriesCorr", "TIE_TOL", "series_lag_corr", "series_lag_corr_reference"]


@dataclass
class SeriesCorr:
    """Best lag of each series pair.

    Attributes
    ----------
    score : ndarray of shape (m,), float32
        Best Pearson r (``|r|`` when ``absolute``); NaN where no lag has enough overlap or a
        side is constant.
    lag : ndarray of shape (m,), int32
        ``query[t]`` matches ``database[t + lag]``.
    negated : ndarray of shape (m,), bool
        The best r was negative (only possible with ``absolute``).
    """

    score: np.ndarray
    lag: np.ndarray
    negated: np.ndarray


def _as_series(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2:
        x = x[:, None, :]
    if x.ndim != 3:
        raise ValueError(f"series must have shape (m, L) or (m, D, L), got {x.shape}")
    return x


def _standardise(x: np.ndarray) -> np.ndarray:
    """Centre and scale each pair's series over its valid samples (keeps the FFT sums accurate)."""
    valid = ~np.isnan(x)
    # huge (1e300) or tiny (1e-300) series are rescaled first (r does not change), so that the
    # squares below neither overflow to inf nor underflow to 0
    mag = np.where(valid & np.isfinite(x), np.abs(x), 0.0).max(axis=(1, 2), keepdims=True)
    extreme = (mag > 1e100) | ((mag < 1e-100) & (mag > 0))
    if extreme.any():
        x = x / np.where(extreme, mag, 1.0)
    cnt = np.maximum(valid.sum(axis=(1, 2), keepdims=True), 1)
    mean = np.where(valid, x, 0).sum(axis=(1, 2), keepdims=True) / cnt
    xc = np.where(valid, x - mean, 0.0)
    sd = np.sqrt((xc * xc).sum(axis=(1, 2), keepdims=True) / cnt)
    return np.where(valid, xc / np.where(sd > 0, sd, 1.0), np.nan)


def _min_overlap(a_valid, b_valid, min_overlap: float) -> np.ndarray:
    short = np.minimum(a_valid.sum(axis=(1, 2)), b_valid.sum(axis=(1, 2)))
    return np.maximum(3, np.ceil(min_overlap * short))


def _lag_scores(n, sa, sb, saa, sbb, sab, need, absolute):
    num = n * sab - sa * sb
    var = (n * saa - sa * sa) * (n * sbb - sb * sb)
    ok = (n >= need[:, None]) & (var > 1e-9 * np.maximum(n, 1) ** 4)
    r = np.where(ok, num / np.sqrt(np.where(ok, var, 1.0)), np.nan)
    return np.clip(r, -1.0, 1.0), np.where(ok, np.abs(r) if absolute else r, -np.inf)


def series_lag_corr(
    query,
    database,
    *,
    max_lag: int,
    absolute: bool = False,
    min_overlap: float = 0.5,
    device: str = "cpu",
    batch_size: int = 4096,
) -> SeriesCorr:
    """Best Pearson r of each series pair over lags ``-max_lag .. max_lag``, NaN-aware.

    Parameters
    ----------
    query, database : ndarray of shape (m, L) or (m, D, L)
        Pair ``i`` is ``(query[i], database[i])``; NaN marks missing samples and padding.  A
        multivariate series shifts all its D dimensions together.  Lengths may differ: the
        shorter side is padded with NaN.
    max_lag : int
        Largest shift tried, in samples.
    absolute : bool
        Maximise ``|r|`` (a sign-flipped copy counts) instead of ``r``.
    min_overlap : float
        A lag counts only where at least this fraction of the shorter series' valid samples
        (and at least 3) overlap.
    device : str
        torch device for the FFTs.

    Returns
    -------
    SeriesCorr
    """
    import torch

    a, b = _as_series(query), _as_series(database)
    if a.shape[:2] != b.shape[:2]:
        raise ValueError(f"query and database series differ in pairs/dimensions: {a.shape} vs {b.shape}")
    L = max(a.shape[2], b.shape[2])
    a = np.pad(a, ((0, 0), (0, 0), (0, L - a.shape[2])), constant_values=np.nan)
    b = np.pad(b, ((0, 0), (0, 0), (0, L - b.shape[2])), constant_values=np.nan)
    max_lag = int(min(max(max_lag, 0), L - 1))
    lags = np.arange(-max_lag, max_lag + 1)
    nfft = 1 << int(np.ceil(np.log2(2 * L)))
    m = len(a)
    score = np.empty(m, np.float32)
    lag = np.empty(m, np.int32)
    neg = np.empty(m, bool)
    for lo in range(0, m, batch_size):
        aa, bb = _standardise(a[lo:lo + batch_size]), _standardise(b[lo:lo + batch_size])
        ma, mb = ~np.isnan(aa), ~np.isnan(bb)
        need = _min_overlap(ma, mb, min_overlap)
        xa, xb = np.where(ma, aa, 0.0), np.where(mb, bb, 0.0)
        t = lambda x: torch.as_tensor(x, dtype=torch.float64, device=device)  # noqa: E731
        A = torch.fft.rfft(torch.stack([t(ma), t(xa), t(xa * xa)]), n=nfft)
        B = torch.fft.rfft(torch.stack([t(mb), t(xb), t(xb * xb)]), n=nfft)

        def xcorr(i, j):
            # sum over t and dimensions of u[t] * v[t + lag]
            c = torch.fft.irfft(A[i].conj() * B[j], n=nfft).sum(dim=1)
            return c[:, lags % nfft].cpu().numpy()

        n = np.rint(xcorr(0, 0))
        r, key = _lag_scores(n, xcorr(1, 0), xcorr(0, 1), xcorr(2, 0), xcorr(0, 2), xcorr(1, 1), need, absolute)
        _store(score, lag, neg, lo, r, key, lags)
    return SeriesCorr(score=score, lag=lag, negated=neg)


#: lags whose key is within this of the best count as tied (r is a float64 FFT sum in the fast path
#: and a direct sum in the reference: a mathematical tie, such as lags +-tau of a series against its
#: own negation, differs between the two by ~1e-15)
TIE_TOL = 1e-7


def _store(score, lag, neg, lo, r, key, lags) -> None:
    """Pick each pair's lag under the tie-break contract shared by the fast path and the reference:
    among the lags whose key is within :data:`TIE_TOL` of the best, the smallest ``|lag|``, and of
    ``-tau`` and ``+tau`` the negative one."""
    order = np.lexsort((lags, np.abs(lags)))  # |lag| ascending, then lag ascending
    k = key[:, order]
    rows = np.arange(len(r))
    top = k.max(axis=1, initial=-np.inf)
    best = order[np.argmax(k >= (top - TIE_TOL)[:, None], axis=1)]
    found = np.isfinite(top)
    hi = lo + len(r)
    score[lo:hi] = np.where(found, key[rows, best], np.nan)
    lag[lo:hi] = np.where(found, lags[best], 0)
    neg[lo:hi] = found & (r[rows, best] < 0)


def series_lag_corr_reference(
    query, database, *, max_lag: int, absolute: bool = False, min_overlap: float = 0.5
) -> SeriesCorr:
    """Loop-over-lags numpy version of :func:`series_lag_corr` (direct masked Pearson r)."""
    a, b = _as_series(query), _as_series(database)
    L = max(a.shape[2], b.shape[2])
    a = np.pad(a, ((0, 0), (0, 0), (0, L - a.shape[2])), constant_values=np.nan)
    b = np.pad(b, ((0, 0), (0, 0), (0, L - b.shape[2])), constant_values=np.nan)
    max_lag = int(min(max(max_lag, 0), L - 1))
    lags = np.arange(-max_lag, max_lag + 1)
    need = _min_overlap(~np.isnan(a), ~np.isnan(b), min_overlap)
    m = len(a)
    r = np.full((m, len(lags)), np.nan)
    key = np.full((m, len(lags)), -np.inf)
    for i in range(m):
        for j, tau in enumerate(lags):
            if tau >= 0:
                u, v = a[i][:, :L - tau], b[i][:, tau:]
            else:
                u, v = a[i][:, -tau:], b[i][:, :L + tau]
            ok = ~np.isnan(u) & ~np.isnan(v)
            if ok.sum() < need[i]:
                continue
            x, y = u[ok], v[ok]
            if x.std() < 1e-9 or y.std() < 1e-9:
                continue
            r[i, j] = np.corrcoef(x, y)[0, 1]
            key[i, j] = abs(r[i, j]) if absolute else r[i, j]
    score = np.empty(m, np.float32)
    lag = np.empty(m, np.int32)
    neg = np.empty(m, bool)
    _store(score, lag, neg, 0, r, key, lags)
    return SeriesCorr(score=score, lag=lag, negated=neg)
