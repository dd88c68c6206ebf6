"""Long texts scanned by chunks: embed each chunk, and score a document pair by its best chunk pair."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from ..store.cache import embed
from ..fingerprint import content_keys
from ..items import Items
from ..kernels.topk import flatten_topk, rank_within_groups
from ..loaders.text import chunk_items

__all__ = ["aggregate_chunks", "chunk_details", "embed_chunked"]


def embed_chunked(items: Items, encoder, *, words: int, stride: Optional[int], cache_dir: Path,
                  batch_size: Optional[int], progress: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embed a text split chunk by chunk (``words`` words every ``stride``, through the cache).

    Returns
    -------
    (ndarray of shape (n_chunks, dim), ndarray of shape (n_chunks,), ndarray of shape (n_chunks,))
        The chunk embeddings, the document of each chunk and its number within the document.
    """
    chunks = chunk_items(items, words, stride or words)
    emb = embed(chunks, encoder, cache_dir=cache_dir, fingerprints=content_keys(chunks), batch_size=batch_size,
                progress=progress)
    return emb, np.asarray(chunks.extra["doc_index"], np.int64), np.asarray(chunks.extra["chunk"], np.int64)


def aggregate_chunks(
    sims: np.ndarray, idx: np.ndarray, q_doc: np.ndarray, n_doc: np.ndarray, n_q_docs: int, k: int,
    same_split: bool,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chunk-level top-k → document-level top-k, a document pair scoring its best chunk pair.

    Returns ``(sims, doc_idx, q_chunk_row, n_chunk_row)``, each of shape (n_q_docs, k); missing
    entries have index -1 and similarity -inf; the chunk rows name the matching chunks.
    """
    qc, nc, sv, _ = flatten_topk(sims, idx)
    qd, nd = q_doc[qc], n_doc[nc]
    if same_split:
        keep = qd != nd
        qc, nc, sv, qd, nd = qc[keep], nc[keep], sv[keep], qd[keep], nd[keep]
    order = np.lexsort((-sv, nd, qd))
    qc, nc, sv, qd, nd = qc[order], nc[order], sv[order], qd[order], nd[order]
    first = np.ones(len(qd), bool)
    first[1:] = (qd[1:] != qd[:-1]) | (nd[1:] != nd[:-1])
    qc, nc, sv, qd, nd = qc[first], nc[first], sv[first], qd[first], nd[first]
    order = np.lexsort((nd, -sv, qd))
    qc, nc, sv, qd, nd = qc[order], nc[order], sv[order], qd[order], nd[order]
    start = np.ones(len(qd), bool)
    start[1:] = qd[1:] != qd[:-1]
    pos = rank_within_groups(start)
    keep = pos < k
    out_s = np.full((n_q_docs, k), -np.inf, np.float32)
    out_i = np.full((n_q_docs, k), -1, np.int64)
    out_qc = np.full((n_q_docs, k), -1, np.int64)
    out_nc = np.full((n_q_docs, k), -1, np.int64)
    out_s[qd[keep], pos[keep]] = sv[keep]
    out_i[qd[keep], pos[keep]] = nd[keep]
    out_qc[qd[keep], pos[keep]] = qc[keep]
    out_nc[qd[keep], pos[keep]] = nc[keep]
    return out_s, out_i, out_qc, out_nc


def chunk_details(q_chunk: np.ndarray, n_chunk: np.ndarray, q_row: np.ndarray, n_row: np.ndarray,
                  idx: np.ndarray) -> np.ndarray:
    """``"chunk a ~ chunk b"`` for every found document pair of an :func:`aggregate_chunks` result, in
    the row order of the neighbours table (arrays of shape (n_q_docs, k); chunk numbers per chunk row)."""
    found = (idx >= 0).reshape(-1)
    a, b = q_chunk[q_row.reshape(-1)[found]], n_chunk[n_row.reshape(-1)[found]]
    return np.array([f"chunk {x} ~ chunk {y}" for x, y in zip(a.tolist(), b.tolist())], dtype=object)
