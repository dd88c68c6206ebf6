"""The neighbours table of a scan: search each direction, turn the results into rows, verify, re-rank.

:func:`neighbours_table` is the search stage (document level for chunked texts: a document pair
scores its best chunk pair, see :mod:`sibscan.stages.chunks`); :func:`verify_neighbours` the verify stage.
:func:`reverse_blocks` is both for the train→test direction, a block of train rows at a time (its
``k`` rows per train row are the part of the table that grows with the train set; the scan writes
each block and keeps none).
"""
from __future__ import annotations

import dataclasses

import time
from typing import Callable, Dict, Iterator, Optional, Sequence, Tuple

import numpy as np

from .chunks import aggregate_chunks, chunk_details
from ..items import Items
from ..kernels.topk import flatten_topk, rank_within_groups
from ..options import DIRECTIONS, SearchOptions
from .pairverify import VerifiedPairs, verify_pairs
from ..progress import bar as progress_bar, task
from ..search.direction import search_direction
from ..store.neighbourtable import Neighbours
from ..search.exact import resolve_backend

__all__ = ["REVERSE_BLOCK", "neighbours_table", "rerank", "reverse_blocks", "table_from_search", "verify_neighbours"]

#: train rows per block of the streamed train→test direction (:func:`reverse_blocks`): a multiple of
#: faiss's 4,096-query tile, so the blocks are searched in the tiles one whole search uses
REVERSE_BLOCK = 16384


def neighbours_table(embeddings: Dict[str, np.ndarray], splits: Dict[str, Items], fps: Dict[str, np.ndarray],
                     options: SearchOptions, *, device: str = "auto", progress: bool = True,
                     chunks: Optional[Dict[str, Tuple[np.ndarray, np.ndarray]]] = None,
                     echo: Callable[[str], None] = lambda s: None, view: str = "",
                     directions: Optional[Sequence[str]] = None) -> Neighbours:
    """Each direction's top-k as rows of the neighbours table (not yet verified).

    Parameters
    ----------
    embeddings : {"train": ndarray of shape (n_train, dim), "test": ...}
        Chunk rows when ``chunks`` is given.
    splits, fps : {"train": Items, "test": Items}, {"train": ndarray of shape (n, 2) uint64, ...}
    options : SearchOptions
        The directions, k per direction, backend, block size and engine.
    chunks : {"train": (doc, chunk), "test": (doc, chunk)}, optional
        Per chunk row, its document and its number there (ndarrays of shape (n_chunks,)).
    view : str
        The ``view`` column of every row (the encoder's name; see :mod:`sibscan.stages.views`).
    directions : sequence of str, optional
        The directions searched (default: ``options.directions``; the scan streams train→test
        separately, see :func:`reverse_blocks`).
    """
    parts = []
    for name in (options.directions if directions is None else directions):
        qs, ns = DIRECTIONS[name]
        k = options.k_of(name)
        echo(f"searching {qs} → {ns} (k={k})")
        with task(f"{qs} → {ns}"):
            if not chunks:
                sims, idx = search_direction(embeddings[qs], embeddings[ns], k, options, device=device,
                                             progress=progress, exclude_self=qs == ns)
                parts.append(table_from_search(qs, splits[qs], ns, splits[ns], sims, idx, fps[qs], fps[ns]))
                continue
            # 4k chunk neighbours leave room for k distinct documents after aggregation
            sims, idx = search_direction(embeddings[qs], embeddings[ns], 4 * k, options, device=device,
                                         progress=progress, exclude_self=qs == ns)
        (qdoc, qchunk), (ndoc, nchunk) = chunks[qs], chunks[ns]
        sims, idx, qrow, nrow = aggregate_chunks(sims, idx, qdoc, ndoc, len(splits[qs]), k, qs == ns)
        part = table_from_search(qs, splits[qs], ns, splits[ns], sims, idx, fps[qs], fps[ns])
        part.columns["detail"] = chunk_details(qchunk, nchunk, qrow, nrow, idx)
        parts.append(part)
    out = Neighbours.concat(parts)
    out.columns["view"] = np.full(len(out), view, dtype=object)
    return out


def table_from_search(
    qsplit: str, q: Items, nsplit: str, n: Items, sims: np.ndarray, idx: np.ndarray,
    q_fp: np.ndarray, n_fp: np.ndarray, offset: int = 0,
) -> Neighbours:
    """Rows of the table from a top-k result of shape (m, k); ``offset``: the split's row of the first query."""
    qi, ni, si, rank = flatten_topk(sims, idx)
    qi += int(offset)
    exact = (q_fp[qi] == n_fp[ni]).all(axis=1)
    return Neighbours({
        "query_split": np.full(len(qi), qsplit), "query_id": q.ids[qi], "query_index": qi,
        "rank": rank, "neighbour_split": np.full(len(qi), nsplit), "neighbour_id": n.ids[ni],
        "neighbour_index": ni, "similarity": si, "exact": exact,
    })


def rerank(nb: Neighbours) -> Neighbours:
    """Sort each query's rows by the deciding score (ties: embedding similarity) and renumber ranks."""
    if len(nb) == 0:
        return nb
    c = nb.columns
    key_dir = np.char.add(np.char.add(c["query_split"].astype(str), ">"), c["neighbour_split"].astype(str))
    order = np.lexsort((-c["similarity"], -c["score"], c["query_index"], key_dir))
    out = nb.select(order)
    kd = key_dir[order]
    q = out["query_index"]
    start = np.ones(len(q), bool)
    start[1:] = (q[1:] != q[:-1]) | (kd[1:] != kd[:-1])
    out.columns["rank"] = rank_within_groups(start).astype(np.int32)
    return out


def verify_neighbours(nb: Neighbours, verifier, splits: Dict[str, Items], progress: bool = True, *,
                      known: Optional[VerifiedPairs] = None, counts: Optional[Dict[str, int]] = None) -> Neighbours:
    """Fill ``verified``/``detail``/``score`` of every row with the verifier, then re-rank.

    Each distinct pair is verified once, in its canonical orientation, and all its rows carry that
    score (:mod:`sibscan.stages.pairverify`); pairs in ``known`` are not verified again; ``counts`` adds up
    the pairs handed to the verifier per direction (see :func:`~sibscan.stages.pairverify.verify_pairs`).
    """
    if verifier is None or len(nb) == 0:
        return nb
    verified, detail = verify_pairs(nb, verifier, splits, known=known, counts=counts)
    cols = dict(nb.columns)
    cols["verified"] = verified
    previous = np.asarray(nb["detail"], dtype=object)
    cols["detail"] = np.array([f"{d}; {p}" if p and d else (d or p) for d, p in zip(detail, previous)], dtype=object)
    cols["score"] = np.where(np.isnan(verified), cols["similarity"], verified).astype(np.float32)
    return rerank(Neighbours(cols))


def reverse_blocks(embeddings: Dict[str, np.ndarray], splits: Dict[str, Items], fps: Dict[str, np.ndarray],
                   options: SearchOptions, verifier, *, device: str = "auto", progress: bool = True, view: str = "",
                   block_rows: Optional[int] = None, timings: Optional[Dict[str, float]] = None,
                   held: Optional[Neighbours] = None, counts: Optional[Dict[str, int]] = None) -> Iterator[Neighbours]:
    """The train→test direction a block of train rows at a time: searched, verified and ranked.

    The parts, in order, are the rows :func:`neighbours_table` + :func:`verify_neighbours` give that
    direction for the whole train set (a query's rows never straddle two blocks, and the re-ranking
    sorts by query first), so a writer that appends them (:class:`sibscan.store.neighbourfile.NeighboursWriter`)
    holds one block's rows, never the direction's ``k * n_train``.

    Parameters
    ----------
    embeddings : {"train": ndarray or NpyArray of shape (n_train, dim), "test": ndarray of shape (n_test, dim)}
        Only ``block_rows`` train rows are read at a time.
    block_rows : int, optional
        Train rows per block (default :data:`REVERSE_BLOCK`).
    timings : dict, optional
        Seconds spent searching and verifying are added to its ``"search"`` and ``"verify"``.
    held : Neighbours, optional
        The table's other directions, verified: a train→test row whose pair is a test→train row there
        carries that row's score and detail, not verified again (:mod:`sibscan.stages.pairverify`; the pairs
        looked up are the held table's, bounded by the test side, not by ``n_train``).
    counts : dict, optional
        Pairs handed to the verifier are added to its ``"train>test"``.

    Yields
    ------
    Neighbours
        One block's rows (``view`` = ``view``), verified when ``verifier`` is given.
    """
    train, n_train = embeddings["train"], len(splits["train"])
    known = VerifiedPairs.of(held, n_train) if held is not None and verifier is not None else None
    k = options.k_of("train-test")
    block_rows = max(1, int(block_rows or REVERSE_BLOCK))
    if options.backend == "auto" and options.engine != "ray" and n_train:
        # one backend for the whole direction, chosen for its whole shape (as one search would be),
        # not re-chosen per block, whose smaller shape could fall under the measured backend's threshold

        test = embeddings["test"]
        options = dataclasses.replace(options, backend=resolve_backend(
            "auto", device, (n_train, len(test), int(np.shape(test)[1]), min(k, len(test)))))
    with task("train → test"), progress_bar(n_train, "search and verify", "item", enabled=progress) as bar:
        blocks = _row_blocks(train, block_rows)
        if not hasattr(train, "shard_bounds"):  # a train index's blocks stop at shard ends, as in one search
            blocks = _fold_tail(blocks)
        for start, block in blocks:
            t0 = time.perf_counter()
            queries = np.asarray(block, dtype=np.float32)
            sims, idx = search_direction(queries, embeddings["test"], k, options, device=device, progress=False)
            # a folded tail makes a block longer than block_rows: searched whole (the same tiles, the same
            # floats), its rows made, verified and handed on block_rows at a time (the memory of the stream)
            for a in range(0, len(queries), block_rows):
                part = table_from_search("train", splits["train"], "test", splits["test"], sims[a:a + block_rows],
                                         idx[a:a + block_rows], fps["train"], fps["test"], offset=start + a)
                part.columns["view"] = np.full(len(part), view, dtype=object)
                t1 = time.perf_counter()
                part = verify_neighbours(part, verifier, splits, progress=False, known=known, counts=counts)
                if timings is not None:
                    timings["search"] = timings.get("search", 0.0) + t1 - t0
                    timings["verify"] = timings.get("verify", 0.0) + time.perf_counter() - t1
                t0 = time.perf_counter()
                yield part
            bar.update(len(queries))


def _fold_tail(blocks: Iterator[Tuple[int, np.ndarray]], small: int = 4096) -> Iterator[Tuple[int, np.ndarray]]:
    """The same rows, with a last block shorter than ``small`` joined to the block before it (when they
    are contiguous): a whole search runs those rows in the tile it ends with, while a call with a handful
    of queries can take another kernel (faiss sums fewer than 20 queries without BLAS)."""
    it = iter(blocks)
    prev = next(it, None)
    if prev is None:
        return
    cur = next(it, None)
    while cur is not None:
        nxt = next(it, None)
        if nxt is None and len(cur[1]) < small and prev[0] + len(prev[1]) == cur[0]:
            yield prev[0], np.concatenate([np.asarray(prev[1]), np.asarray(cur[1])])
            return
        yield prev
        prev, cur = cur, nxt
    yield prev


def _row_blocks(emb, block_rows: int) -> Iterator[Tuple[int, np.ndarray]]:
    """``(first row, rows)`` blocks of an in-memory array, an NpyArray or a train index's shards."""
    if hasattr(emb, "iter_blocks"):  # NpyArray, ShardedEmbeddings (whose blocks stop at shard ends)
        yield from emb.iter_blocks(block_rows)
        return
    for start in range(0, len(emb), block_rows):
        yield start, emb[start:start + block_rows]
