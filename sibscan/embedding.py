"""The encode stage of a scan: the embeddings of both splits.

Through the embedding cache (only items it does not hold are embedded), chunk by chunk for long
texts (``--chunk-words``), the train side from a train index when there is one, and with
``--engine ray`` as Ray tasks (the encoder rebuilt per worker, its identity checked).
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Dict, Tuple

import numpy as np

from .cache import embed
from .chunks import embed_chunked
from .encoders import encoder_kwargs, get_encoder
from .errors import SibscanError
from .fingerprint import content_keys
from .items import Items
from .options import EncoderOptions, LoadOptions, SearchOptions

__all__ = ["cache_dir_of", "embed_splits"]


def embed_splits(splits: Dict[str, Items], encoder, *, load: LoadOptions,
                 encoding: EncoderOptions, search: SearchOptions, cache_dir: Path, progress: bool = True,
                 index=None) -> Tuple[Dict[str, np.ndarray], Dict[str, Tuple[np.ndarray, np.ndarray]]]:
    """Embeddings per split, and for chunked texts each chunk row's ``(document, chunk number)``.

    The cache is keyed by each item's content key (:func:`sibscan.fingerprint.content_keys`), not by
    its exact fingerprint (which rounds and folds case).

    Returns
    -------
    embeddings : {"train": ndarray of shape (n_train, dim), "test": ...}
        float32 rows, L2-normalised; chunk rows when chunking; the train side of an index is a
        :class:`~sibscan.shards.ShardedEmbeddings` read block by block.
    chunks : {"train": (ndarray of shape (n_chunks,), ndarray of shape (n_chunks,)), "test": ...}
        Empty unless the texts were chunked.
    """
    if splits["train"].modality == "text" and load.chunk_words:
        out, chunks = {}, {}
        for split, items in splits.items():
            emb, doc, chunk = embed_chunked(items, encoder, words=load.chunk_words, stride=load.chunk_stride,
                                            cache_dir=cache_dir, batch_size=encoding.batch_size, progress=progress)
            out[split], chunks[split] = emb, (doc, chunk)
        return out, chunks
    out = {}
    for split, items in splits.items():
        if split == "train" and index is not None:
            out[split] = index.embeddings()
            continue
        out[split] = embed(items, encoder, cache_dir=cache_dir, fingerprints=content_keys(items), batch_size=encoding.batch_size,
                           progress=progress, encode_blocks=_remote_encoder(encoder, encoding, search, items))
    for split, emb in out.items():
        if emb.shape[1] != encoder.dim:
            raise SibscanError(f"{split} embeddings have dimension {emb.shape[1]} but {encoder.name} gives {encoder.dim}")
    return out, {}


def _remote_encoder(encoder, encoding: EncoderOptions, search: SearchOptions, items: Items):
    """With ``--engine ray``: a function that embeds blocks as Ray tasks (None for the local engine)."""
    if search.engine != "ray":
        return None
    from .engines.ray_embed import ray_block_encoder

    factory = functools.partial(get_encoder, encoder.name, **encoder_kwargs(encoding, items))
    return ray_block_encoder(factory, encoder.identity, address=search.address)


def cache_dir_of(encoding: EncoderOptions, out: Path) -> Path:
    """The embedding cache: ``--cache-dir``, else ``OUT/cache``."""
    return Path(encoding.cache_dir) if encoding.cache_dir else Path(out) / "cache"
