"""Exact-content fingerprints of items (label left out) and of whole splits.

* tables: rows rounded to ``decimals`` (``-0.0`` == ``0.0``, NaN positions kept), optionally
  z-normalised per row, hashed to 128 bits by :mod:`sibscan.kernels.rowhash`;
* text: the text after :func:`sibscan.kernels.textalign.normalise_text` (case, Unicode forms and
  whitespace do not matter), by :func:`text_fingerprints`;
* images: the decoded RGB pixels and the size, by :func:`image_fingerprints` (the image loader
  computes them while it decodes each image once, and keeps them in ``items.extra["pixel_fp"]``).

Two items with the same fingerprint are exact copies ("twins").
"""
from __future__ import annotations

import functools
import hashlib
import tempfile
from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np

from .errors import InputError
from .imageio import DEPTH_KEY, decode_images
from .items import Items
from .rowids import id_blocks, lexicographic_order
from .kernels.textalign import normalise_text
from .kernels.rowhash import row_fingerprints
from .store.diskarray import NpyWriter
from .store.keybuckets import SORT_ROWS, sorted_blocks

__all__ = ["content_keys", "dataset_fingerprint", "file_fingerprint", "fingerprint", "ids_fingerprint",
           "image_fingerprints", "items_fingerprint", "pixel_fingerprint", "raw_text_fingerprints", "text_fingerprints"]


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
        return _table_blocks(items.values, lambda x: row_fingerprints(x, decimals=decimals, znorm=znorm))
    if items.modality == "text":
        return np.asarray(text_fingerprints(items.texts), dtype=np.uint64).reshape(len(items), 2)
    return np.asarray(image_fingerprints(items), dtype=np.uint64).reshape(len(items), 2)


def content_keys(items: Items, out=None) -> np.ndarray:
    """What an encoder sees of each item, hashed to 128 bits: the key of the embedding cache.

    Not the exact fingerprint: that one is deliberately coarse (tables rounded to ``decimals``,
    optionally z-normalised; text case- and whitespace-folded), and two items it calls twins can
    still embed differently.  Keying the cache on it let a scan reuse another scan's embeddings of
    other rows (another ``--decimals`` or ``--znorm``).  The key is

    * tables: the values exactly, every bit (``-0.0`` = ``0.0``, one NaN);
    * text: the raw text (case and whitespace kept);
    * images: the decoded pixels at their own depth (``pixel_fp``).

    Parameters
    ----------
    items : Items
    out : path, optional
        For a table read from disk: write the keys to this ``.npy`` file a block at a time and return
        it as an :class:`~sibscan.store.diskarray.NpyArray` (memory bounded by the block, not by ``n``).

    Returns
    -------
    ndarray of shape (n, 2), uint64
    """
    if items.modality == "table":
        fn = functools.partial(row_fingerprints, decimals=None)
        if out is not None and not isinstance(items.values, np.ndarray):
            with NpyWriter(out, np.uint64, (2,)) as writer:  # a block of keys at a time, never all of them
                for _, block in _row_blocks(items.values, fn):
                    writer.append(block)
                return writer.close()
        return _table_blocks(items.values, fn)
    if items.modality == "text":
        return raw_text_fingerprints(items.texts)
    return image_fingerprints(items)


def _table_blocks(values, fn) -> np.ndarray:
    """``fn`` (rows -> (m, 2) fingerprints) over ``values`` in row blocks: a disk-backed array is read a
    block at a time, never whole (fingerprints depend on each row alone)."""
    if isinstance(values, np.ndarray):
        return fn(values)
    out = np.empty((len(values), 2), dtype=np.uint64)
    for start, block in _row_blocks(values, fn):
        out[start:start + len(block)] = block
    return out


#: float64 values hashed at a time from a disk-backed table (the unit of memory of a pass over it)
_HASH_BYTES = 4 << 20


def _row_blocks(values, fn):
    """``(first row, fn(rows))`` over ``values`` read :data:`_HASH_BYTES` of float64 at a time."""
    step = max(1, _HASH_BYTES // (8 * max(1, values.shape[1])))
    for start in range(0, len(values), step):
        yield start, fn(np.asarray(values[start:start + step], dtype=np.float64))


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
    h = hashlib.blake2b(digest_size=16)
    params = ""
    if items.modality == "table":  # hashing parameters only change table fingerprints
        params = f"{items.values.shape[1]}|{items.shape}|{decimals}|{znorm}"
    h.update(f"sibscan-dataset/1|{items.modality}|{params}|{len(fp)}|".encode())
    if hasattr(fp, "iter_blocks"):  # on disk (a scan's train set): sorted a bucket at a time, never whole

        # in the system's temporary folder: one left in a scan directory by a kill -9 (the manifest is not
        # written yet) would make the next run refuse the directory as not a scan
        with tempfile.TemporaryDirectory(prefix="sibscan-sort-") as tmp:
            for block in sorted_blocks(fp.iter_blocks(SORT_ROWS), len(fp), Path(tmp)):
                h.update(block.astype("<u8").tobytes())
        return h.hexdigest()
    fp = np.ascontiguousarray(fp, dtype=np.uint64)
    order = np.lexsort((fp[:, 1], fp[:, 0]))
    h.update(np.ascontiguousarray(fp[order]).astype("<u8").tobytes())
    return h.hexdigest()


def items_fingerprint(items: Items, fp: np.ndarray) -> str:
    """A hex digest of a split's rows *in order*: each row's id and content fingerprint.

    :func:`dataset_fingerprint` ignores row order (a calibration belongs to the data, however it is
    sorted); this one changes when rows are reordered or ids renamed, so that a scan directory,
    whose neighbours table points at rows by position, is never resumed on other rows.

    Parameters
    ----------
    items : Items
    fp : ndarray of shape (n, 2), uint64
        The items' fingerprints, in row order.

    Returns
    -------
    str
        32 hex characters.
    """
    ids = items.ids  # an array or RowNumberIds: id_blocks / lexicographic_order take either
    h = hashlib.blake2b(digest_size=16)
    h.update(f"sibscan-items/1|{len(ids)}|{ids.dtype.str}|".encode())
    for _, block in fp.iter_blocks(1 << 16) if hasattr(fp, "iter_blocks") else [(0, fp)]:  # on disk: a block at a time
        h.update(np.ascontiguousarray(block, dtype="<u8").tobytes())
    for block in id_blocks(ids):
        h.update(block.tobytes())
    return h.hexdigest()


def ids_fingerprint(items: Items, fp: np.ndarray) -> str:
    """A hex digest of which content each id names, whatever the row order.

    Hand labels name pairs by id: when the same ids name other content (rows reordered in a file
    whose ids are row numbers), labels given before would describe other pairs.

    Returns
    -------
    str
        32 hex characters: blake2b over the ids sorted, each with its fingerprint.
    """
    ids = items.ids  # an array or RowNumberIds: id_blocks / lexicographic_order take either
    order = lexicographic_order(ids)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"sibscan-ids/1|{len(ids)}|{ids.dtype.str}|".encode())
    step = 1 << 16  # the sorted ids and fingerprints a block at a time
    for a in range(0, len(order), step):
        h.update(np.ascontiguousarray(np.asarray(fp[order[a:a + step]], dtype="<u8")).tobytes())
    for a in range(0, len(order), step):
        h.update(np.ascontiguousarray(ids[order[a:a + step]]).tobytes())
    return h.hexdigest()


def _hash128(blobs) -> np.ndarray:
    digests = b"".join(hashlib.blake2b(b, digest_size=16).digest() for b in blobs)
    return np.frombuffer(digests, dtype="<u8").reshape(-1, 2).astype(np.uint64)


def text_fingerprints(texts: Sequence[str]) -> np.ndarray:
    """128-bit exact fingerprints of texts after :func:`normalise_text`.

    Two texts that differ only in case, Unicode compatibility forms or whitespace get the same
    fingerprint.

    Returns
    -------
    ndarray of shape (n, 2), uint64
    """
    return _hash128(normalise_text(t).encode("utf-8") for t in texts)


def raw_text_fingerprints(texts: Sequence[str]) -> np.ndarray:
    """128-bit fingerprints of the texts' raw UTF-8 bytes (no normalisation).

    Returns
    -------
    ndarray of shape (n, 2), uint64
    """
    return _hash128(t.encode("utf-8") for t in texts)


def pixel_fingerprint(image) -> Tuple[int, int]:
    """128-bit hash of a decoded image's size and pixels, as two 64-bit integers.

    An image deeper than 8 bits is hashed at its own depth (the digest :func:`sibscan.imageio.open_image`
    keeps in ``image.info[DEPTH_KEY]``), not by its 8-bit view.
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(np.array(image.size, dtype="<u8").tobytes())
    deep = image.info.get(DEPTH_KEY)
    h.update(b"deep:" + deep if deep is not None else image.tobytes())
    lo, hi = np.frombuffer(h.digest(), dtype="<u8")
    return int(lo), int(hi)


def file_fingerprint(path: str) -> Tuple[int, int]:
    """128-bit hash of a file's bytes, as two 64-bit integers."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    lo, hi = np.frombuffer(h.digest(), dtype="<u8")
    return int(lo), int(hi)


def image_fingerprints(items: Items, workers: Optional[int] = None) -> np.ndarray:
    """Exact pixel fingerprints of image items: ``items.extra["pixel_fp"]``, computed if missing.

    Returns
    -------
    ndarray of shape (n, 2), uint64

    Raises
    ------
    InputError
        When an image can no longer be decoded.
    """
    if items.modality != "image":
        raise InputError(f"image fingerprints need image items, got {items.modality}", path=items.source or None)
    fp = items.extra.get("pixel_fp")
    if fp is not None and len(fp) == len(items):
        return np.asarray(fp, dtype=np.uint64)
    results = decode_images(items.paths, lambda im, _p: pixel_fingerprint(im), workers=workers, desc="fingerprints")
    for res in results:
        if isinstance(res, InputError):
            raise res
    fp = np.asarray(results, dtype=np.uint64).reshape(-1, 2)
    items.extra["pixel_fp"] = fp
    return fp
