"""UCR Augmented: misalign a series dataset with random-walk padding (Zhang et al., PAKDD 2025).

Each series is z-normalised (the archive has datasets that are not), then padded to length
``L + l`` with ``l = floor(padding * L)``: a head of ``n_h ~ U{0, …, l}`` values and a tail of
``l - n_h``, both Gaussian random walks with steps ``N(previous, sigma = 0.01)`` — the head walk
starts from the first value and is reversed so it joins the series smoothly, the tail walk starts
from the last value (:func:`sibscan.kernels.walkpad.walk_pad`). The position of the pattern inside
the series now varies from series to series, which a classifier relying on position alone cannot
absorb. Seeded: train and test draw from two child streams of ``numpy.random.SeedSequence(seed)``,
and the record lists every head length.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from ..errors import SibscanError
from ..kernels.walkpad import walk_pad
from .normalise import normalise
from .series import SeriesPair

__all__ = ["AugmentedPair", "augment_pair", "output_paths", "pad_length", "pad_series"]

SIGMA = 0.01


def pad_length(padding: float, length: int) -> int:
    """``l = floor(padding * length)`` (with a tolerance so 0.29 * 100 gives 29)."""
    if not 0 <= padding <= 10:
        raise SibscanError(f"--padding is a fraction of the series length (e.g. 0.1), got {padding:g}")
    return int(np.floor(padding * length + 1e-9))


def pad_series(x: np.ndarray, padding: float, rng: np.random.Generator, sigma: float = SIGMA):
    """Random-walk padding of already-normalised series.

    Parameters
    ----------
    x : ndarray of shape (n, n_channels, L)
    padding : float
        Total padding as a fraction of ``L``.
    rng : numpy.random.Generator
    sigma : float
        Step standard deviation.

    Returns
    -------
    padded : ndarray of shape (n, n_channels, L + l)
    n_head : ndarray of shape (n,), int64
    """
    n, c, length = x.shape
    pad = pad_length(padding, length)
    n_head = rng.integers(0, pad + 1, size=n).astype(np.int64)
    steps = rng.normal(0.0, sigma, size=(2, n, c, pad))
    return walk_pad(x, n_head, steps[0], steps[1]), n_head


@dataclass
class AugmentedPair:
    """An augmented train/test pair and how it was made.

    Attributes
    ----------
    data : SeriesPair
        Series of length ``L + l``.
    n_head_train, n_head_test : ndarray of shape (n_train,), (n_test,)
        Head padding length per series (the tail is ``l - n_head``).
    record : dict
        ``padding, pad_length, sigma, seed, streams, znormalised, length_original,
        length_augmented`` — everything needed to redo it.
    """

    data: SeriesPair
    n_head_train: np.ndarray
    n_head_test: np.ndarray
    record: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {**self.record, "dataset": self.data.describe(),
                "n_head_train": self.n_head_train.tolist(), "n_head_test": self.n_head_test.tolist()}


def augment_pair(data: SeriesPair, padding: float, *, seed: int = 0, sigma: float = SIGMA,
                 znorm: bool = True, name: Optional[str] = None) -> AugmentedPair:
    """Make the UCR Augmented version of a dataset at one padding level.

    Parameters
    ----------
    data : SeriesPair
    padding : float
        Total padding as a fraction of the series length (the paper: 0.1 … 0.5).
    seed : int
        Train uses child stream 0 of ``SeedSequence(seed)``, test child stream 1.
    sigma : float, default 0.01
    znorm : bool, default True
        Z-normalise each series first (as the paper does).
    name : str, optional
        Name of the result (default: ``"<name>_pad<padding>"``).

    Returns
    -------
    AugmentedPair
    """
    if sigma < 0:
        raise SibscanError(f"sigma must be >= 0, got {sigma:g}")
    length = data.length
    pad = pad_length(padding, length)
    x_train, x_test = data.X_train, data.X_test
    if znorm:
        x_train, x_test = normalise(x_train, "znorm"), normalise(x_test, "znorm")
    child = np.random.SeedSequence(seed).spawn(2)
    pad_train, head_train = pad_series(x_train, padding, np.random.default_rng(child[0]), sigma)
    pad_test, head_test = pad_series(x_test, padding, np.random.default_rng(child[1]), sigma)
    name = name or f"{data.name}_pad{padding:g}"
    out = SeriesPair(pad_train, data.y_train, pad_test, data.y_test, name=name,
                     train_source=data.train_source, test_source=data.test_source)
    record = {"method": "UCR Augmented random-walk padding (Zhang, Batista & Kanhere, PAKDD 2025)",
              "padding": float(padding), "pad_length": pad, "sigma": float(sigma), "seed": int(seed),
              "streams": {"train": {"entropy": int(seed), "spawn_key": [0]},
                          "test": {"entropy": int(seed), "spawn_key": [1]}},
              "znormalised": bool(znorm), "length_original": length, "length_augmented": length + pad}
    return AugmentedPair(out, head_train, head_test, record)


def output_paths(out_dir: str | Path, name: str, fmt: str) -> Dict[str, Path]:
    """Where :func:`sibscan.temporal.writers.write_pair` puts a dataset: ``{train, test, record}``."""
    out_dir = Path(out_dir)
    return {"train": out_dir / f"{name}_TRAIN.{fmt}", "test": out_dir / f"{name}_TEST.{fmt}",
            "record": out_dir / f"{name}_augment.json"}
