"""The shared time permutation and the stratified re-splits of the temporal-information test.

* :func:`time_permutation` draws one permutation of the time index; :func:`permute_time` applies
  that same permutation to every series of every split and to every channel. Tabular methods and
  the Euclidean distance cannot tell the difference; subsequence features are destroyed.
* :func:`stratified_resplit` pools train and test and draws a new train/test split with, per
  class, as many train series as the original split had (the archive's own resampling protocol,
  as in aeon's ``stratified_resample_data``). Run 0 of the test is the given split; run ``r > 0``
  is the re-split drawn with seed ``seed + r``.
"""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np

from ..errors import SibscanError

__all__ = ["check_resplits", "count_resplits", "permute_time", "stratified_resplit", "time_permutation"]


def time_permutation(length: int, seed: int) -> np.ndarray:
    """A random permutation of ``range(length)`` from ``numpy.random.default_rng(seed)``.

    Returns
    -------
    ndarray of shape (length,), int64
    """
    return np.random.default_rng(seed).permutation(int(length)).astype(np.int64)


def permute_time(x: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Reorder the time axis of every series (and channel) by the one permutation ``perm``.

    Parameters
    ----------
    x : ndarray of shape (n, n_channels, length) or (n, length)
    perm : ndarray of shape (length,)

    Returns
    -------
    ndarray of the shape of ``x`` (a C-contiguous copy)
    """
    perm = np.asarray(perm)
    if perm.shape != (x.shape[-1],):
        raise SibscanError(f"the permutation has {perm.shape[0] if perm.ndim else 0} entries for series of "
                           f"length {x.shape[-1]}")
    return np.ascontiguousarray(np.take(x, perm, axis=-1))


def stratified_resplit(y_train: np.ndarray, y_test: np.ndarray, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """A new stratified train/test split of the pooled series, at the original sizes per class.

    Parameters
    ----------
    y_train : ndarray of shape (n_train,)
    y_test : ndarray of shape (n_test,)
    seed : int

    Returns
    -------
    train_index, test_index : ndarray of int64
        Indices into ``concatenate([train, test])``; ``train_index`` has, per class, as many
        entries as ``y_train`` has of that class. Both are sorted by pooled index.
    """
    y = np.concatenate([np.asarray(y_train), np.asarray(y_test)])
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    classes, inverse = np.unique(y, return_inverse=True)
    train_counts = np.array([np.sum(np.asarray(y_train) == c) for c in classes], dtype=np.int64)
    # group the shuffled positions by class (stable: the shuffle decides the order inside a class)
    grouped = order[np.argsort(inverse[order], kind="stable")]
    class_of = inverse[grouped]
    starts = np.searchsorted(class_of, np.arange(len(classes)))
    rank_in_class = np.arange(len(grouped)) - starts[class_of]
    to_train = rank_in_class < train_counts[class_of]
    return np.sort(grouped[to_train]), np.sort(grouped[~to_train])


def count_resplits(y_train: np.ndarray, y_test: np.ndarray, cap: int = 10**6) -> int:
    """How many distinct stratified re-splits exist (the product over classes of C(n_c, n_c_train)), capped."""
    y = np.concatenate([np.asarray(y_train), np.asarray(y_test)])
    total = 1
    for c in np.unique(y):
        total *= math.comb(int(np.sum(y == c)), int(np.sum(np.asarray(y_train) == c)))
        if total >= cap:
            return cap
    return total


def check_resplits(y_train: np.ndarray, y_test: np.ndarray, runs: int, where: str = "") -> None:
    """Refuse a dataset the test cannot run on, with what to do instead.

    Raises
    ------
    SibscanError
        An empty split, fewer than two classes in train, or fewer distinct stratified re-splits
        than ``runs`` (the runs would repeat each other and their std would mean nothing).
    """
    prefix = f"{where}: " if where else ""
    if runs < 1:
        raise SibscanError(f"--runs must be at least 1, got {runs}")
    if len(y_test) == 0 or len(y_train) == 0:
        raise SibscanError(f"{prefix}the {'test' if len(y_test) == 0 else 'train'} split is empty")
    if len(np.unique(y_train)) < 2:
        raise SibscanError(f"{prefix}the train split has {len(np.unique(y_train))} class; a classifier needs two or "
                           "more")
    if runs > 1:
        distinct = count_resplits(y_train, y_test, cap=runs)
        if distinct < runs:
            raise SibscanError(
                f"{prefix}too small for {runs} stratified re-splits: {len(y_train)} train + {len(y_test)} test series "
                f"allow only {distinct} distinct split(s) at the original class counts; lower --runs to {distinct} "
                "or add series")
