"""Train/test series for the temporal audits: equal-length, labelled, as ``(n, n_channels, length)``.

The files are read by :mod:`sibscan.loaders` (UCR ``.tsv``, sktime/UEA ``.ts``, ``.arff``, CSV,
``.npy``/``.npz``, Parquet); this module only checks that the result is something the
permutation test and the padding can run on, and says what to do where it is not:

* labels in both splits (a classification benchmark);
* equal length: a variable-length dataset (NaN-padded by the loaders) is refused, and so is a
  series with missing values inside it — both would make the permutation move NaNs around;
* train and test of the same length and channel count.

Multivariate series keep their channels: the permutation and the padding act on every channel's
time axis alike.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import InputError, SibscanError
from ..items import Items, check_pair
from ..loaders import load

__all__ = ["SeriesPair", "load_series", "series_from_items", "series_pair"]


@dataclass
class SeriesPair:
    """A labelled train/test pair of equal-length series.

    Attributes
    ----------
    X_train : ndarray of shape (n_train, n_channels, length), float64
    y_train : ndarray of shape (n_train,), str
    X_test : ndarray of shape (n_test, n_channels, length), float64
    y_test : ndarray of shape (n_test,), str
    name : str
        A short name (the dataset's, from the file name).
    train_source, test_source : str
        Where the splits were read from.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str = ""
    train_source: str = ""
    test_source: str = ""

    @property
    def n_channels(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def length(self) -> int:
        return int(self.X_train.shape[2])

    @property
    def classes(self) -> np.ndarray:
        return np.unique(np.concatenate([self.y_train, self.y_test]))

    def describe(self) -> dict:
        return {"name": self.name, "train": self.train_source, "test": self.test_source,
                "n_train": int(len(self.y_train)), "n_test": int(len(self.y_test)),
                "n_channels": self.n_channels, "length": self.length, "n_classes": int(len(self.classes))}


def series_from_items(items: Items) -> np.ndarray:
    """The series of a table split as a 3-D array, refusing unequal lengths and missing values.

    Parameters
    ----------
    items : Items
        ``modality="table"``; multivariate rows are flattened channel after channel with
        ``items.shape == (n_channels, length)``.

    Returns
    -------
    ndarray of shape (n, n_channels, length), float64

    Raises
    ------
    InputError
        Not numeric series, no labels, variable-length series or missing values (naming the file
        and the row).
    """
    where = items.source or items.split
    if items.modality != "table":
        raise InputError(f"the temporal audits need numeric series, got {items.modality}", path=where)
    if not items.has_labels:
        raise InputError("no class labels; the temporal-information test scores a classifier "
                         "(name the label column with --label; a headerless UCR .tsv has it first)", path=where)
    values = items.values
    n_channels, length = _channels_length(items)
    x = values.reshape(len(values), n_channels, length)
    missing = np.isnan(x)
    if missing.any():
        row, channel = (int(v[0]) for v in np.nonzero(missing.any(axis=2)))
        row_missing = missing[row, channel]
        first = int(np.argmax(row_missing))
        if row_missing[first:].all():  # NaN only at the end: the loaders' padding of a shorter series
            raise InputError(
                f"series {str(items.ids[row])!r} has {first} of {length} time steps"
                + (f" in channel {channel}" if n_channels > 1 else "")
                + "; the temporal-information test needs equal-length series (one permutation of the "
                "time axis for every series): resample or truncate them to one length first",
                path=where)
        raise InputError(
            f"series {str(items.ids[row])!r} has a missing value at time step {first}"
            + (f" of channel {channel}" if n_channels > 1 else "")
            + "; the temporal-information test needs complete series: interpolate the gaps first",
            path=where)
    if not np.isfinite(x).all():
        row = int(np.nonzero(~np.isfinite(x).all(axis=(1, 2)))[0][0])
        raise InputError(f"series {str(items.ids[row])!r} has an infinite value; fix or drop it", path=where)
    return np.ascontiguousarray(x, dtype=np.float64)


def series_pair(train: Items, test: Items, name: Optional[str] = None) -> SeriesPair:
    """Check a loaded train/test pair and return it as :class:`SeriesPair`."""
    check_pair(train, test)
    shape_train, shape_test = (_channels_length(s) for s in (train, test))
    if shape_train != shape_test:
        raise InputError(f"test series have (channels, length) {shape_test} but train series "
                         f"({train.source or 'train'}) have {shape_train}", path=test.source or "test")
    x_train, x_test = series_from_items(train), series_from_items(test)
    if name is None:
        name = _dataset_name(train.source)
    return SeriesPair(x_train, train.labels, x_test, test.labels, name=name,
                      train_source=train.source, test_source=test.source)


def load_series(train: str | os.PathLike, test: str | os.PathLike, *, label: Optional[str] = None,
                name: Optional[str] = None) -> SeriesPair:
    """Read a train and a test file with :func:`sibscan.load` and check them as series.

    Parameters
    ----------
    train, test : path
        UCR ``.tsv`` (label first, no header), sktime/UEA ``.ts``, ``.arff``, CSV/TSV with a header
        and a label column, ``.npy``/``.npz`` with labels, or Parquet.
    label : str, optional
        The label column, where the format needs one named.
    name : str, optional
        The dataset's name (default: the train file's stem without ``_TRAIN``).
    """
    for path in (train, test):
        if Path(path).is_dir():
            raise SibscanError(f"{path} is a folder; give the TRAIN and TEST files (or --archive DIR for a "
                               "folder of datasets)")
    tr = load(train, "train", modality="table", label=label)
    te = load(test, "test", modality="table", label=label)
    return series_pair(tr, te, name=name)


def _channels_length(items: Items) -> tuple:
    return tuple(items.shape) if items.shape is not None else (1, int(items.values.shape[1]))


def _dataset_name(source: str) -> str:
    stem = Path(source).stem if source else "dataset"
    for suffix in ("_TRAIN", "_train", "-train", "_Train"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem
