"""The embedding cache: embeddings stored per (content key, encoder identity) on disk.

Layout, one folder per encoder identity and storage dtype::

    CACHE/<encoder>-<sha256(identity)[:16]>-<f16|f32>-k2/
        meta.json                    identity, dim, dtype (written once, atomically)
        <shard>.emb.npy              (m, dim) float16/float32 embeddings of one finished block
        <shard>.sum.json             blake2b checksums of the two arrays' data, and m
        <shard>.fp.npy               (m, 2) uint64 content keys of those rows — the commit marker

A block is committed by writing its embeddings, their checksums, then its keys, each atomically
(temporary name, then rename); a shard counts only once its ``.fp.npy`` exists, so an interrupted
run leaves whole blocks and resumes after the last one.  The keys are checked against their
checksum when the cache is opened, the embeddings the first time a shard is read for reuse: a shard
corrupted in place (same size, other bytes) is refused with the files to delete, never reused.
Shards are read with plain file reads (:class:`sibscan.store.diskarray.NpyArray`).  :func:`embed` finds
rows through bucket files (:mod:`sibscan.store.cachelookup`: memory bounded by a bucket of keys, however
large the cache and the split); :meth:`EmbeddingCache.find` keeps a sorted index of every key (28
bytes per item), built from the ``.fp.npy`` files when first asked.  Shard names
are unique per process, so two runs sharing a cache never overwrite each other (a row embedded
twice is harmless).

The key is the item's content key (:func:`sibscan.fingerprint.content_keys`): everything the
encoder sees of it — a table row's exact values, a text as written, an image's decoded pixels —
not the exact fingerprint, which rounds (``--decimals``), z-normalises (``--znorm``) and folds case:
two items the fingerprint calls twins can still embed differently, and a cache shared between
scans of other ``--decimals`` must not hand one row another's embedding.  (``-k2``: folders of the
earlier layout, keyed by fingerprints and without checksums, are left alone and not read.)
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Tuple

import numpy as np

from ..atomic import save_npy, write_json
from .cachelookup import RANGE_ROWS, Located, locate, sorted_lookup
from .diskarray import NpyArray, collect_rows, is_disk_array
from ..errors import CompatibilityError, SibscanError
from ..items import Items
from ..kernels.rowhash import fingerprint_keys
from ..fingerprint import content_keys
from ..progress import bar as progress_bar

__all__ = ["EmbeddingCache", "embed", "DTYPES"]

log = logging.getLogger("sibscan.store.cache")

DTYPES = {"float16": "f16", "float32": "f32"}
class EmbeddingCache:
    """The cache folder of one encoder identity (see the module docstring).

    Parameters
    ----------
    cache_dir : path
        The cache root; one sub-folder per encoder identity and dtype.
    encoder : Encoder
        Supplies ``name``, ``identity`` and ``dim``.
    dtype : {"float16", "float32"}
        Storage dtype; lookups always return float32 rows re-normalised to unit length.
    """

    def __init__(self, cache_dir: str | os.PathLike, encoder: Any, dtype: str = "float16"):
        if dtype not in DTYPES:
            raise SibscanError(f"unknown cache dtype {dtype!r}; available: {', '.join(DTYPES)}")
        self.root = Path(cache_dir)
        self.identity = str(encoder.identity)
        self.dim = int(encoder.dim)
        self.dtype = np.dtype(dtype)
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(encoder.name)) or "encoder"
        digest = hashlib.sha256(self.identity.encode("utf-8")).hexdigest()[:16]
        self.path = self.root / f"{slug}-{digest}-{DTYPES[dtype]}-k2"
        self._check_meta()
        self._prefix = f"{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._seq = 0
        self.refresh()

    # --- metadata ------------------------------------------------------------------------------
    def _fix(self) -> str:
        return f"delete {self.path} or pass another --cache-dir"

    def _check_meta(self) -> None:
        meta_path = self.path / "meta.json"
        if not meta_path.exists():
            write_json(meta_path, {"identity": self.identity, "dim": self.dim, "dtype": self.dtype.name,
                                   "created": time.strftime("%Y-%m-%dT%H:%M:%S")})
            return
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CompatibilityError(f"embedding cache {self.path} has an unreadable meta.json ({exc}); {self._fix()}") from None
        if meta.get("identity") != self.identity:
            raise CompatibilityError(
                f"embedding cache {self.path} belongs to encoder {meta.get('identity')!r}, not {self.identity!r}; {self._fix()}"
            )
        if int(meta.get("dim", -1)) != self.dim:
            raise CompatibilityError(
                f"embedding cache {self.path} holds {meta.get('dim')}-dim vectors but encoder {self.identity!r} "
                f"gives {self.dim}-dim vectors; {self._fix()}"
            )

    # --- reading -------------------------------------------------------------------------------
    def _corrupt(self, fp_path: Path, why: str) -> SibscanError:
        stem = fp_path.name[: -len(".fp.npy")]
        return SibscanError(
            f"embedding cache shard {self.path / stem}.emb.npy is corrupt ({why}); delete {stem}.emb.npy, "
            f"{stem}.sum.json and {stem}.fp.npy in {self.path} (or the whole folder) and re-run: those rows are "
            "embedded again"
        )

    def refresh(self) -> None:
        """Re-read the committed shards (checking each one's keys); the key -> (shard, row) index of
        :meth:`find` is rebuilt when next asked for.

        Raises
        ------
        SibscanError
            A committed shard that is truncated, unreadable or fails its checksum (the message names
            the files to delete).
        CompatibilityError
            A shard of another shape or dtype.
        """
        shards, sums = [], []
        for fp_path in sorted(self.path.glob("*.fp.npy")):
            stem = fp_path.name[: -len(".fp.npy")]
            emb_path, sum_path = self.path / f"{stem}.emb.npy", self.path / f"{stem}.sum.json"
            if not emb_path.exists():
                continue
            try:
                checks = json.loads(sum_path.read_text(encoding="utf-8"))
                fp = np.load(fp_path, allow_pickle=False)
                emb = NpyArray(emb_path)
            except FileNotFoundError:
                raise self._corrupt(fp_path, f"{sum_path.name} is missing") from None
            except (OSError, ValueError, EOFError, SibscanError) as exc:
                raise self._corrupt(fp_path, f"cannot be read: {exc}") from None
            if fp.ndim != 2 or fp.shape[1:] != (2,) or fp.dtype != np.uint64 or _digest(fp) != checks.get("fp"):
                raise self._corrupt(fp_path, f"{fp_path.name} fails its checksum")
            if emb.ndim != 2 or emb.shape[1] != self.dim or emb.dtype != self.dtype or len(emb) != len(fp):
                raise CompatibilityError(
                    f"embedding cache shard {emb_path} has shape {emb.shape} {emb.dtype}, expected "
                    f"({len(fp)}, {self.dim}) {self.dtype}; {self._fix()}"
                )
            shards.append(emb)
            sums.append((fp_path, checks.get("emb")))
        self._shards = shards
        self._sums = sums
        self._verified = np.zeros(len(shards), dtype=bool)
        self._index = None

    def _shard_keys(self) -> Iterator[np.ndarray]:
        """Each shard's keys, in shard order (checked against their checksum by :meth:`refresh`)."""
        for fp_path, _ in self._sums:
            yield np.load(fp_path, allow_pickle=False)

    def _key_index(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every key sorted, with its shard and row: 28 bytes per cached item, for :meth:`find`
        (:func:`embed` asks :meth:`locate` instead, whose memory does not grow with the cache)."""
        if self._index is None:
            keys = [fingerprint_keys(fp) for fp in self._shard_keys()] or [fingerprint_keys(np.zeros((0, 2), np.uint64))]
            all_keys = np.concatenate(keys)
            order = np.argsort(all_keys, kind="stable")
            self._index = (all_keys[order],
                           np.concatenate([np.full(len(k), s, np.int32) for s, k in enumerate(keys)])[order],
                           np.concatenate([np.arange(len(k), dtype=np.int64) for k in keys])[order])
        return self._index

    def __len__(self) -> int:
        return sum(len(s) for s in self._shards)

    @property
    def n_shards(self) -> int:
        return len(self._shards)

    def find(self, fingerprints: np.ndarray) -> np.ndarray:
        """Position of each fingerprint in the index, or -1.

        Parameters
        ----------
        fingerprints : ndarray of shape (n, 2), uint64

        Returns
        -------
        ndarray of shape (n,), int64
        """
        hit, pos = sorted_lookup(self._key_index()[0], fingerprint_keys(fingerprints))
        return np.where(hit, pos, -1).astype(np.int64)

    def get(self, positions: np.ndarray) -> np.ndarray:
        """Rows at index ``positions`` (from :meth:`find`, all >= 0): ndarray (n, dim) float32, unit rows."""
        _, shard_of, row_of = self._key_index()
        positions = np.asarray(positions, dtype=np.int64)
        return self.rows(shard_of[positions], row_of[positions])

    def locate(self, keys, folder: Path) -> Located:
        """Where each of ``keys`` (ndarray or NpyArray of shape (n, 2) uint64) is held: what
        :meth:`find` answers, in memory bounded by a block of keys (:func:`sibscan.store.cachelookup.locate`;
        its files go to ``folder``, which the caller removes)."""
        n = len(keys)
        blocks = keys.iter_blocks(RANGE_ROWS) if is_disk_array(keys) else \
            ((s, keys[s:s + RANGE_ROWS]) for s in range(0, n, RANGE_ROWS))
        return locate(self._shard_keys(), blocks, n, len(self), folder)

    def rows(self, shard: np.ndarray, row: np.ndarray) -> np.ndarray:
        """The embeddings at ``(shard, row)`` pairs: ndarray (n, dim) float32, unit rows."""
        shard, row = np.asarray(shard), np.asarray(row, dtype=np.int64)
        out = np.empty((len(shard), self.dim), dtype=np.float32)
        for s in np.unique(shard):
            if not self._verified[s]:  # a shard is checked the first time it is reused
                fp_path, want = self._sums[s]
                if _digest(self._shards[s].read(0, len(self._shards[s]))) != want:
                    raise self._corrupt(fp_path, "its embeddings fail their checksum")
                self._verified[s] = True
            sel = np.flatnonzero(shard == s)
            out[sel] = self._shards[s].take(row[sel])
        if self.dtype != np.float32:
            # float16 storage shifts norms by ~1e-3; exact copies must still score 1.0
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    # --- writing -------------------------------------------------------------------------------
    def add(self, fingerprints: np.ndarray, embeddings: np.ndarray) -> Path:
        """Commit one block: ``embeddings`` (m, dim) for ``fingerprints`` (m, 2). Returns the shard path."""
        emb = np.asarray(embeddings)
        fp = np.ascontiguousarray(np.asarray(fingerprints, dtype=np.uint64))
        if emb.ndim != 2 or emb.shape[1] != self.dim:
            raise CompatibilityError(
                f"encoder {self.identity!r} gave vectors of shape {emb.shape[1:]} but the cache {self.path} "
                f"holds {self.dim}-dim vectors; {self._fix()}"
            )
        if len(fp) != len(emb):
            raise ValueError(f"{len(fp)} fingerprints for {len(emb)} embeddings")
        name = f"{self._prefix}-{self._seq:06d}"
        self._seq += 1
        stored = np.ascontiguousarray(emb, dtype=self.dtype)
        save_npy(self.path / f"{name}.emb.npy", stored)
        write_json(self.path / f"{name}.sum.json", {"emb": _digest(stored), "fp": _digest(fp), "rows": len(fp)})
        save_npy(self.path / f"{name}.fp.npy", fp)  # written last: the commit marker
        return self.path / f"{name}.emb.npy"


def _digest(array: np.ndarray) -> str:
    """blake2b of an array's data (C order): the checksum of a cache shard."""
    return hashlib.blake2b(np.ascontiguousarray(array).view(np.uint8).reshape(-1), digest_size=16).hexdigest()


def _content_rows(content: Any, index: np.ndarray) -> Any:
    if isinstance(content, np.ndarray) or is_disk_array(content):
        return content[index]
    return [content[i] for i in index]


def _encode_block(encoder: Any, batch: Any, batch_size: Optional[int], bar: Any) -> np.ndarray:
    """Encode one block: torch encoders batch internally; others get ``batch_size`` slices."""
    if getattr(encoder, "batches_internally", False):
        return np.asarray(encoder.encode(batch, batch_size=batch_size, on_batch=bar.update), dtype=np.float32)
    bs = int(batch_size or getattr(encoder, "batch_size", 256) or 256)
    parts = []
    for start in range(0, len(batch), bs):
        part = batch[start:start + bs]
        parts.append(np.asarray(encoder.encode(part), dtype=np.float32))
        bar.update(len(part))
    return np.concatenate(parts) if parts else np.zeros((0, encoder.dim), np.float32)


def embed(
    items: Items,
    encoder: Any,
    *,
    cache_dir: Optional[str | os.PathLike],
    fingerprints: Optional[np.ndarray] = None,
    batch_size: Optional[int] = None,
    block_size: int = 4096,
    dtype: str = "float16",
    progress: bool = True,
    encode_blocks: Optional[Callable[[Iterable[Tuple[np.ndarray, Any]], Optional[int]], Iterable[Tuple[np.ndarray, np.ndarray]]]] = None,
    out: Optional[str | os.PathLike] = None,
) -> np.ndarray:
    """Embed ``items`` with ``encoder``, reusing and filling the on-disk cache.

    Only items whose content key is not in the cache are embedded (each distinct key once),
    in blocks of ``block_size`` committed atomically: an interrupted call resumes, on the next call,
    after the last finished block.

    Parameters
    ----------
    items : Items
        One split; its ``content`` is handed to ``encoder.encode`` in slices.
    encoder : Encoder
    cache_dir : path or None
        Cache root; ``None`` embeds everything without caching.
    fingerprints : ndarray of shape (n, 2), uint64, optional
        The items' cache keys (default: :func:`sibscan.fingerprint.content_keys`, what the encoder
        sees of each item; an exact fingerprint is too coarse a key, see the module docstring).
    batch_size : int, optional
        Items per forward pass (default: the encoder's ``batch_size``).
    block_size : int
        Items per committed cache block (the unit of resumption).
    dtype : {"float16", "float32"}
        Storage dtype of the cache.
    progress : bool
        Show a progress bar (items/s, ETA) on stderr.
    encode_blocks : callable, optional
        Encodes elsewhere: called with an iterable of ``(row index, content)`` blocks and the batch
        size, yields ``(row index, embeddings)`` in any order (the Ray engine,
        :func:`sibscan.engines.ray_embed.ray_block_encoder`); each result is committed to the cache as
        it arrives. Needs a ``cache_dir``.
    out : path, optional
        Write the result to this ``.npy`` file block by block (memory bounded by the block, not by
        ``n``) and return it as a :class:`~sibscan.store.diskarray.NpyArray`.

    Returns
    -------
    ndarray (or NpyArray, with ``out``) of shape (n, dim), float32, rows L2-normalised.

    Raises
    ------
    CompatibilityError
        The cache holds vectors of another dimension or encoder identity; the message says to delete
        it or use another cache directory.
    """
    if int(block_size) < 1:
        raise SibscanError(f"block size must be at least 1, got {block_size}")
    block_size = int(block_size)
    n = len(items)
    content = items.content
    dim = int(encoder.dim)
    desc = f"embed {items.split} ({encoder.name})"

    if cache_dir is None:
        if encode_blocks is not None:
            raise SibscanError("embedding elsewhere (encode_blocks, --engine 'ray') needs a cache directory")
        with progress_bar(n, desc, "item", enabled=progress) as bar:
            blocks = (_check_dim(_encode_block(encoder, _content_rows(content, np.arange(s, min(s + block_size, n))),
                                               batch_size, bar), encoder, min(block_size, n - s))
                      for s in range(0, n, block_size))
            return collect_rows(blocks, n, dim, out)

    if fingerprints is None:
        fingerprints = content_keys(items)
    if not is_disk_array(fingerprints):
        fingerprints = np.asarray(fingerprints, dtype=np.uint64)
    if tuple(fingerprints.shape) != (n, 2):
        raise ValueError(f"fingerprints have shape {fingerprints.shape}, expected ({n}, 2)")

    cache = EmbeddingCache(cache_dir, encoder, dtype=dtype)
    # the lookup's files live in the system temp folder (a read-only or shared cache stays untouched, and
    # a killed run leaves nothing in the cache); removed however the call ends
    work = Path(tempfile.mkdtemp(prefix="sibscan-lookup-"))
    try:
        found = cache.locate(fingerprints, work / "before")
        log.info("embedding cache %s: %d of %d items cached, %d to embed", cache.path, n - found.n_missing, n,
                 found.n_new)
        if found.n_new:
            with progress_bar(found.n_new, desc, "item", enabled=progress) as bar:
                # each distinct missing key once, for its first row, in row order
                block_rows = found.new_rows(block_size)
                if encode_blocks is not None:
                    results = encode_blocks(((idx, _content_rows(content, idx)) for idx in block_rows), batch_size)
                    for idx, emb in results:
                        cache.add(fingerprints[idx], _check_dim(np.asarray(emb, np.float32), encoder, len(idx)))
                        bar.update(len(idx))
                else:
                    for idx in block_rows:
                        emb = _encode_block(encoder, _content_rows(content, idx), batch_size, bar)
                        cache.add(fingerprints[idx], _check_dim(emb, encoder, len(idx)))
            cache.refresh()
            found = cache.locate(fingerprints, work / "after")
            if found.n_missing:  # pragma: no cover - would mean a write was lost
                raise SibscanError(f"embedding cache {cache.path} lost rows while writing; re-run the command")
        step = max(1, _GATHER_BYTES // (4 * dim))
        return collect_rows((cache.rows(a["shard"][s:s + step], a["at"][s:s + step])
                         for a in found.blocks() for s in range(0, len(a), step)), n, dim, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


_GATHER_BYTES = 8 << 20  # rows gathered from the cache at a time (a block, not the train set, when writing to ``out``)


def _check_dim(emb: np.ndarray, encoder: Any, n: int) -> np.ndarray:
    if emb.shape != (n, int(encoder.dim)):
        raise CompatibilityError(
            f"encoder {encoder.identity!r} returned an array of shape {emb.shape} for {n} items, but declares "
            f"dim={encoder.dim}; delete the cache made under this identity or fix the encoder"
        )
    return emb
