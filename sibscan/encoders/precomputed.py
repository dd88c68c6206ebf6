"""``precomputed``: embeddings the caller brings (``train_features=``/``test_features=``, ``--train-features``).

Not in the registry (it cannot be built by name): :func:`sibscan.encoders.build.build_encoder` makes it
when the options carry features.  Its identity is the one the caller declares (``features_id``): the
model that made the vectors, so that a calibration is tied to that model as it would be to a built-in
encoder.  Rows are L2-normalised here (cosine similarity); they must be finite, one per item, in the
items' order.
"""
from __future__ import annotations

import os
from typing import Any, Dict

import numpy as np

from ..errors import InputError, SibscanError
from .base import Encoder, l2_normalise

__all__ = ["PrecomputedEncoder"]


def _read(features: Any, what: str) -> np.ndarray:
    """An (n, dim) float32 array from an ``.npy`` path or an array-like (a torch tensor too)."""
    if isinstance(features, (str, os.PathLike)):
        try:
            arr = np.load(features, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(f"cannot read {what} ({exc}); expected an .npy array of shape (n, dim)",
                             path=features) from None
    else:
        if hasattr(features, "detach"):  # a torch tensor, wherever it lives
            features = features.detach().float().cpu()
        arr = np.asarray(features)
    where = str(features) if isinstance(features, (str, os.PathLike)) else None  # the message names `what` itself
    if arr.ndim != 2 or arr.dtype.kind not in "biuf" or arr.shape[1] == 0:
        raise InputError(f"{what} must be a numeric array of shape (n, dim), got dtype {arr.dtype} and shape "
                         f"{arr.shape}",
                         path=where)
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
    if len(bad):
        raise InputError(f"{what} row {bad[0]} holds NaN or inf ({len(bad)} such rows); embed those items again",
                         path=where)
    return arr.astype(np.float32, copy=False)


class PrecomputedEncoder(Encoder):
    """The caller's embeddings of both splits, under the identity the caller declares.

    Parameters
    ----------
    train, test : path to an .npy file, or array-like of shape (n, dim)
    identity : str
        The model that made them (e.g. ``"clip-vit-b32-laion2b"``).
    modality : {"table", "text", "image"}
        The items' modality (what the vectors stand for).
    """

    name = "precomputed"
    description = "embeddings you computed (train_features=/test_features=, --train-features/--test-features)"
    weight_free = True
    #: embed_splits takes the rows as they are instead of calling encode
    precomputed = True

    def __init__(self, train: Any, test: Any, *, identity: str, modality: str):
        if not identity or not str(identity).strip():
            raise SibscanError("precomputed features need the identity of the model that made them (features_id=...)")
        self.features: Dict[str, np.ndarray] = {"train": _read(train, "train_features"),
                                                "test": _read(test, "test_features")}
        dims = {s: f.shape[1] for s, f in self.features.items()}
        if dims["train"] != dims["test"]:
            raise InputError(f"train_features have {dims['train']} columns but test_features {dims['test']}; both must "
                             "come from one model", path="test_features")
        self.dim = int(dims["train"])
        self.identity = str(identity).strip()
        self.modality = modality

    def rows(self, split: str, n_items: int, skipped: int = 0) -> np.ndarray:
        """The L2-normalised rows of ``split``: ndarray of shape (n_items, dim), float32."""
        f = self.features[split]
        if len(f) != n_items:
            why = f" ({skipped} of its items could not be read and were left out, see the manifest)" if skipped else ""
            raise InputError(f"{split}_features has {len(f)} rows but the {split} split has {n_items} items{why}; give "
                             "one row per item, in the items' order", path=f"{split}_features")
        return l2_normalise(f)

    def encode(self, batch):
        raise SibscanError("precomputed features cannot embed new items; pass their embeddings with the data")
