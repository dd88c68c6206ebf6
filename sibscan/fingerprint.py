"""Exact-content fingerprints of items (label left out) and of whole splits.

* tables: rows rounded to ``decimals`` (``-0.0`` == ``0.0``, NaN positions kept), optionally
  z-normalised per row, hashed to 128 bits by :mod:`sibscan.kernels.rowhash`;
* text: normalised text, by :func:`sibscan.loaders.text.text_fingerprints`;
* images: decoded pixel content, by :func:`sibscan.loaders.images.image_fingerprints`.

Two items with the same fingerprint are exact copies ("twins").
"""
from __future__ import annotations

import hashlib

import numpy as np

from .items import Items

__all__ = ["fingerprint", "dataset_fingerprint"]


def fingerprint(items: Items, decimals: int = 6, znorm: bool = False) -> np.ndarray:
    """One 128-bit content fingerprint per item, the label excluded.

    Parameters
    ----------
    items : Items
    decimals : int, default 6
        Tables: decimal places kept before hashing.
    znorm : bool, default False
        Tables: z-normalise each row first, so rescaled/shifted copies share a fingerprint.

    Returns
    -------
    ndarray of shape (n, 2), uint64
    """
    if items.modality == "table":
        from .kernels.rowhash import row_fingerprints

        return row_fingerprints(items.values, decimals=decimals, znorm=znorm)
    if items.modality == "text":
        from .loaders.text import text_fingerprints

        return np.asarray(text_fingerprints(items.texts), dtype=np.uint64).reshape(len(items), 2)
    from .loaders.images import image_fingerprints

    return np.asarray(image_fingerprints(items), dtype=np.uint64).reshape(len(items), 2)


def dataset_fingerprint(items: Items, decimals: int = 6, znorm: bool = False, fp: np.ndarray | None = None) -> str:
    """A hex digest identifying a split's content, independent of row order.

    Parameters
    ----------
    items : Items
    decimals, znorm
        As for :func:`fingerprint`.
    fp : ndarray of shape (n, 2), uint64, optional
        Precomputed item fingerprints (saves recomputing them).

    Returns
    -------
    str
        32 hex characters: blake2b over the modality, the row shape, the hashing parameters and
        the sorted multiset of item fingerprints (tables also: width, shape, ``decimals``,
        ``znorm``). Labels and ids do not enter.
    """
    if fp is None:
        fp = fingerprint(items, decimals=decimals, znorm=znorm)
    fp = np.ascontiguousarray(fp, dtype=np.uint64)
    order = np.lexsort((fp[:, 1], fp[:, 0]))
    h = hashlib.blake2b(digest_size=16)
    params = ""
    if items.modality == "table":  # hashing parameters only change table fingerprints
        params = f"{items.values.shape[1]}|{items.shape}|{decimals}|{znorm}"
    h.update(f"sibscan-dataset/1|{items.modality}|{params}|{len(fp)}|".encode())
    h.update(np.ascontiguousarray(fp[order]).astype("<u8").tobytes())
    return h.hexdigest()
