"""The encode stage of a scan: the embeddings of both splits, written into the scan directory
(:func:`embed_scan`, the one call :func:`sibscan.scan.run_scan` makes for it).

Through the embedding cache (only items it does not hold are embedded), chunk by chunk for long
texts (``--chunk-words``), the train side from a train index when there is one, and with
``--engine ray`` as Ray tasks (the encoder rebuilt per worker, its identity checked).
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

from ..config import ScanConfig
from ..store.cache import embed
from ..store.diskarray import is_disk_array
from ..store.scandir import EMBEDDINGS_KEY, ScanDir
from .chunks import embed_chunked
from ..encoders import encoder_kwargs, get_encoder
from ..errors import InputError, SibscanError
from ..fingerprint import content_keys
from ..items import Items
from ..options import EncoderOptions, LoadOptions, SearchOptions
from ..encoders.numeric import row_problem, series_lengths
from ..engines.ray_embed import ray_block_encoder

__all__ = ["cache_dir_of", "check_rows", "embed_scan", "embed_splits"]


def embed_scan(cfg: ScanConfig, sd: ScanDir, splits: Dict[str, Items], encoder, index, manifest: dict,
               ) -> Tuple[Dict[str, np.ndarray], Dict[str, Tuple[np.ndarray, np.ndarray]]]:
    """:func:`embed_splits` as the scan configures it, each split's embeddings written into ``sd``
    (a large train set straight there, block by block) and the digest of each file written recorded in
    ``manifest`` (:data:`~sibscan.store.scandir.EMBEDDINGS_KEY`: :meth:`ScanDir.embeddings` refuses another
    scan's); returns what :func:`embed_splits` returns."""
    embeddings, chunks = embed_splits(splits, encoder, load=cfg.load, encoding=cfg.encoding, search=cfg.search,
                                      cache_dir=cache_dir_of(cfg.encoding, sd.path), progress=cfg.output.progress,
                                      index=index, train_out=sd.embeddings_path("train"))
    written = [s for s in embeddings if not (s == "train" and index is not None)]  # an index keeps its own
    for split in written:
        if not is_disk_array(embeddings[split]):  # a train set embedded straight into the scan directory is there
            sd.write_embeddings(split, embeddings[split])
    manifest[EMBEDDINGS_KEY] = sd.embeddings_digests(written)
    return embeddings, chunks


def embed_splits(splits: Dict[str, Items], encoder, *, load: LoadOptions,
                 encoding: EncoderOptions, search: SearchOptions, cache_dir: Path, progress: bool = True,
                 index=None, train_out: Optional[Path] = None,
                 ) -> Tuple[Dict[str, np.ndarray], Dict[str, Tuple[np.ndarray, np.ndarray]]]:
    """Embeddings per split, and for chunked texts each chunk row's ``(document, chunk number)``.

    The cache is keyed by each item's content key (:func:`sibscan.fingerprint.content_keys`), not by
    its exact fingerprint (which rounds and folds case).  With ``train_out`` (a ``.npy`` path) the train
    embeddings are written there block by block and read back on demand
    (:class:`~sibscan.store.diskarray.NpyArray`): memory then does not grow with the train set.

    Returns
    -------
    embeddings : {"train": ndarray of shape (n_train, dim), "test": ...}
        float32 rows, L2-normalised; chunk rows when chunking; the train side of an index is a
        :class:`~sibscan.store.shards.ShardedEmbeddings` read block by block.
    chunks : {"train": (ndarray of shape (n_chunks,), ndarray of shape (n_chunks,)), "test": ...}
        Empty unless the texts were chunked.
    """
    if getattr(encoder, "precomputed", False):  # the caller's own embeddings, one row per item
        return {s: encoder.rows(s, len(items), len(items.skipped)) for s, items in splits.items()}, {}
    if splits["train"].modality == "text" and load.chunk_words:
        out, chunks = {}, {}
        for split, items in splits.items():
            emb, doc, chunk = embed_chunked(items, encoder, words=load.chunk_words, stride=load.chunk_stride,
                                            cache_dir=cache_dir, batch_size=encoding.batch_size, progress=progress)
            out[split], chunks[split] = emb, (doc, chunk)
        return out, chunks
    length = None
    for split, items in splits.items():  # every row checked up front, named by file and id
        if not (split == "train" and index is not None):
            length = check_rows(items, encoder, length)
    out = {}
    for split, items in splits.items():
        if split == "train" and index is not None:
            out[split] = index.embeddings()
            continue
        target = train_out if split == "train" else None
        keys_path = None if target is None else Path(target).with_name(f".keys-{Path(target).name}")
        try:  # written beside the embeddings a block at a time when they are (a large train table)
            keys = content_keys(items, out=keys_path)
            out[split] = embed(items, encoder, cache_dir=cache_dir, fingerprints=keys, batch_size=encoding.batch_size,
                               progress=progress, encode_blocks=_remote_encoder(encoder, encoding, search, items),
                               out=target)
        finally:
            if keys_path is not None:
                keys_path.unlink(missing_ok=True)
    for split, emb in out.items():
        if emb.shape[1] != encoder.dim:
            raise SibscanError(f"{split} embeddings have dimension {emb.shape[1]} but {encoder.name} gives {encoder.dim}")
    return out, {}


def check_rows(items: Items, encoder, length: Optional[int] = None) -> Optional[int]:
    """Refuse the first table row the encoder cannot embed, naming the file and the item's id.

    The encoder checks each batch too, but there a row is numbered within its batch ("row 904" of
    the block that holds data row 5000), and the file is unknown.  Here every row of the split is
    checked in blocks before any embedding, against ``length`` (the row length of the split before,
    for encoders that need one length) — returned for the next split.
    """
    same_length = getattr(encoder, "same_length", None)
    if items.modality != "table" or same_length is None:
        return length
    values = items.values
    step = max(1, (32 << 20) // (8 * max(1, values.shape[1])))
    for start in range(0, len(values), step):
        block = np.asarray(values[start:start + step], dtype=np.float64)
        if same_length and length is None and len(block):
            nonempty = ~np.isnan(block).all(axis=1)
            if nonempty.any():
                length = int(series_lengths(block[nonempty][:1])[0])
        bad = row_problem(block, same_length=bool(same_length), length=length)
        if bad is not None:
            row, problem = bad
            raise InputError(f"item {str(items.ids[start + row])!r} (the {items.split} split's row {start + row}, "
                             f"counting from 0) {problem}", path=items.source or items.split)
    return length


def _remote_encoder(encoder, encoding: EncoderOptions, search: SearchOptions, items: Items):
    """With ``--engine ray``: a function that embeds blocks as Ray tasks (None for the local engine)."""
    if search.engine != "ray":
        return None

    kwargs = encoder_kwargs(encoding, items, encoder.name)
    if "image_size" in kwargs:  # the size the encoder was built with (from the train images), not this split's
        kwargs["image_size"] = int(encoder.input_size[0])
    factory = functools.partial(get_encoder, encoder.name, **kwargs)
    return ray_block_encoder(factory, encoder.identity, address=search.address)


def cache_dir_of(encoding: EncoderOptions, out: Path) -> Path:
    """The embedding cache: ``--cache-dir``, else ``OUT/cache``."""
    return Path(encoding.cache_dir) if encoding.cache_dir else Path(out) / "cache"
