"""Numeric-row encoders: ``znorm`` (cosine = Pearson r) and ``raw`` (cosine of the raw rows).

Rows are float64 with NaN for missing values (see :class:`sibscan.items.Items`).  ``znorm``
centres and scales each row over its present values, then sets the missing ones to 0 (the row
mean), so the cosine of two complete rows is exactly their Pearson correlation: a rescaled or
offset copy of a row scores 1.0.  A run of NaN at the end of a row that covers at least a tenth of
the columns (and two or more values) reads as the padding of a shorter series; ``znorm`` refuses
rows of different lengths, since a Pearson r over misaligned series means nothing.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..errors import InputError, SibscanError
from ..kernels.rowhash import safe_scale_rows
from ..stats import check_int
from .base import Encoder, cpu_device, l2_normalise, register_encoder

__all__ = ["RawEncoder", "ZNormEncoder", "row_problem", "series_lengths", "znormalise"]

PREPROCESSING_VERSION = 1


def series_lengths(x: np.ndarray) -> np.ndarray:
    """Length of each row once trailing NaN padding is removed.

    A trailing NaN run shorter than ``max(2, ceil(d / 10))`` counts as missing values, not padding.

    Parameters
    ----------
    x : ndarray of shape (n, d)

    Returns
    -------
    ndarray of shape (n,), int64
    """
    n, d = x.shape
    present = ~np.isnan(x)
    any_present = present.any(axis=1)
    trail = np.where(any_present, np.argmax(present[:, ::-1], axis=1), d)
    padding = trail >= max(2, int(np.ceil(d / 10)))
    return np.where(padding, d - trail, d).astype(np.int64)


def znormalise(x: np.ndarray) -> np.ndarray:
    """Per-row z-normalisation over present values; NaN set to 0 afterwards.

    Parameters
    ----------
    x : ndarray of shape (n, d)

    Returns
    -------
    ndarray of shape (n, d), float64
        Constant or all-NaN rows become zero rows.
    """
    # a copy, normalised in place below; rows of huge or tiny values are rescaled first (z-scores do
    # not change), so that their squares neither overflow to inf nor underflow to 0
    x = np.array(safe_scale_rows(np.asarray(x, dtype=np.float64)), dtype=np.float64)
    mask = np.isnan(x)
    if mask.any():
        count = (~mask).sum(axis=1, keepdims=True)
        x[mask] = 0.0
        mean = x.sum(axis=1, keepdims=True) / np.maximum(count, 1)
        x -= mean
        x[mask] = 0.0
    else:
        count = np.full((len(x), 1), x.shape[1])
        mean = x.mean(axis=1, keepdims=True)
        x -= mean
    std = np.sqrt(np.einsum("ij,ij->i", x, x)[:, None] / np.maximum(count, 1))
    # a constant row has no shape to correlate: leave it at zero rather than divide by ~0
    std[std <= 1e-12 * np.maximum(np.abs(mean), 1.0)] = np.inf
    x /= std
    return x


def row_problem(x: np.ndarray, *, same_length: bool = False,
                length: Optional[int] = None) -> Optional[Tuple[int, str]]:
    """The first row of ``x`` that a numeric encoder cannot embed, and what is wrong with it.

    Parameters
    ----------
    x : ndarray of shape (n, d), float
    same_length : bool
        Every row must have one length (``znorm``): an all-NaN row, or trailing NaN padding that
        makes a row shorter, is a problem.
    length : int, optional
        The length every row must have (default: the first non-empty row's).

    Returns
    -------
    (row, problem) or None
        ``problem`` completes "row N ...", e.g. ``"holds an infinite value (column 3); replace it or
        mark it missing (NaN)"``.
    """
    inf = np.isinf(x)
    if inf.any():
        row = int(np.flatnonzero(inf.any(axis=1))[0])
        col = int(np.flatnonzero(inf[row])[0])
        return row, f"holds an infinite value (column {col}); replace it or mark it missing (NaN)"
    if not same_length or not len(x):
        return None
    lengths = series_lengths(x)
    empty = np.isnan(x).all(axis=1)
    if empty.any():
        return int(np.flatnonzero(empty)[0]), "has no values (every cell is missing); remove the row or fill it in"
    want = int(lengths[0]) if length is None else int(length)
    if (lengths != want).any():
        j = int(np.flatnonzero(lengths != want)[0])
        return j, (f"has {lengths[j]} values, where the rows before it have {want} (NaN padding at the end); "
                   "resample the series to one length or use the 'raw' encoder")
    return None


def _check_rows(batch, dim: Optional[int], name: str) -> np.ndarray:
    x = np.asarray(batch, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"{name}: expected numeric rows of shape (n, d), got an array of shape {x.shape}")
    if dim is not None and x.shape[1] != dim:
        raise InputError(f"{name}: rows have {x.shape[1]} values, this encoder was set up for {dim}")
    bad = row_problem(x)
    if bad is not None:
        raise InputError(f"{name}: row {bad[0]} {bad[1]}")
    return x


class _NumericEncoder(Encoder):
    """Shared by ``znorm`` and ``raw``: the dimension is the row length.

    Build with ``dim=<number of columns>`` (the scan passes the train split's width); without it
    the first encoded batch fixes it, and reading ``dim`` or ``identity`` before that raises a
    :class:`SibscanError` that says so.  The identity names the width, so that caches and
    calibrations of tables of other widths never mix.
    """

    modality = "table"
    weight_free = True
    _recipe: str = ""
    #: every row must have the same length (no trailing NaN padding, no all-NaN row): see :func:`row_problem`
    same_length: bool = False

    #: why a row of one value says nothing to this encoder (completes "the NAME encoder cannot compare them: ...")
    _one_value: str = ""

    def __init__(self, dim: Optional[int] = None, *, device: str = "auto", batch_size: int = 65536) -> None:
        self._dim = None if dim is None else check_int(dim, f"{self.name}: dim", error=InputError)
        if self._dim is not None:
            self.check_width(self._dim)
        self.device = cpu_device(device)
        self.batch_size = int(batch_size)

    @classmethod
    def check_width(cls, width: int, where: Optional[str] = None) -> None:
        """Refuse rows of a single value (one column, or a 1-D array): every score would be meaningless.

        The scan calls this as soon as its splits are read (:func:`sibscan.encoders.build.check_encoder`),
        before any fingerprint, model or output; building the encoder checks it again.

        Raises
        ------
        InputError
            Naming ``where`` (the file, or the argument) and the fix.
        """
        if width == 1:
            raise InputError(f"rows have one value each (one column, or a 1-D array); the {cls.name} encoder cannot "
                             f"compare them: {cls._one_value}; give rows of two or more values (several features, "
                             "or the whole series); exact copies of single values are counted by 'sibscan twins'",
                             path=where)

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            raise SibscanError(
                f"the {self.name} encoder's dimension is the row length: build it with "
                f"get_encoder({self.name!r}, dim=<number of columns>) or encode a batch first"
            )
        return self._dim

    @property
    def identity(self) -> str:  # type: ignore[override]
        return f"{self.name}/v{PREPROCESSING_VERSION} d={self.dim} {self._recipe}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} d={self._dim}>"

    def _rows(self, batch) -> np.ndarray:
        x = _check_rows(batch, self._dim, self.name)
        if self._dim is None:
            self.check_width(x.shape[1])
            self._dim = x.shape[1]
        return x


@register_encoder
class ZNormEncoder(_NumericEncoder):
    """Per-row z-normalised values; cosine = Pearson correlation."""

    name = "znorm"
    description = "per-row z-normalised values (NaN -> 0 after); cosine = Pearson r; dim = row length"
    _recipe = "ddof=0 nan=0-after padding=refused"
    same_length = True
    _one_value = "z-normalising a single value leaves 0 (there is no shape to correlate)"

    def encode(self, batch) -> np.ndarray:
        """Embed numeric rows.

        Parameters
        ----------
        batch : array-like of shape (n, d), float

        Returns
        -------
        ndarray of shape (n, d), float32, unit rows (constant rows give zero rows)

        Raises
        ------
        InputError
            Rows of different lengths (NaN padding), infinite values, a width other than ``dim``.
        """
        x = self._rows(batch)
        if len(x):
            empty = np.isnan(x).all(axis=1)
            if empty.any():
                raise InputError(f"znorm: row {int(np.flatnonzero(empty)[0])} has no values (every cell is missing); "
                                 "remove the row or fill it in")
            lengths = series_lengths(x)
            if (lengths != lengths[0]).any():
                j = int(np.flatnonzero(lengths != lengths[0])[0])
                raise InputError(
                    f"znorm needs rows of one length: row {j} has {lengths[j]} values, row 0 has {lengths[0]} "
                    "(NaN padding at the end); resample the series to one length or use the 'raw' encoder"
                )
        return l2_normalise(znormalise(x))


@register_encoder
class RawEncoder(_NumericEncoder):
    """Raw values (NaN -> 0), L2-normalised; cosine of the raw rows."""

    name = "raw"
    description = "raw values (NaN -> 0), L2-normalised; cosine of the rows; dim = row length"
    _recipe = "nan=0"
    _one_value = "the cosine of two single values is only their sign (every positive pair scores 1.0)"

    def encode(self, batch) -> np.ndarray:
        """Embed numeric rows as :meth:`ZNormEncoder.encode` does, without z-normalising (zero rows stay zero)."""
        x = self._rows(batch)
        return l2_normalise(np.nan_to_num(x, nan=0.0))
