"""The neighbours table of a scan: search each direction, turn the results into rows, verify, re-rank."""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from .config import ScanConfig
from .errors import SibscanError
from .items import Items
from .kernels.topk import flatten_topk, rank_within_groups
from .scandir import Neighbours

__all__ = ["rerank", "search_direction", "table_from_search", "verify_neighbours"]


def search_direction(q_emb, d_emb, k: int, cfg: ScanConfig, exclude_self: bool) -> Tuple[np.ndarray, np.ndarray]:
    """Top-k of each query row; queries or database may be :class:`~sibscan.shards.ShardedEmbeddings`."""
    from .search import search
    from .shards import ShardedEmbeddings

    k = min(k, len(d_emb) - (1 if exclude_self else 0))
    if k <= 0:
        return np.zeros((len(q_emb), 0), np.float32), np.zeros((len(q_emb), 0), np.int64)
    if cfg.engine not in ("local", "ray"):
        raise SibscanError(f"unknown engine {cfg.engine!r}; available: local, ray")
    if isinstance(q_emb, ShardedEmbeddings):
        # queries larger than memory (a big train index searched against the test set): block by block
        parts = [search_direction(block, d_emb, k, cfg, exclude_self=False) for _, block in q_emb.iter_blocks(65536)]
        if not parts:
            return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    if cfg.engine == "ray":
        from .engines import search_ray

        return search_ray(q_emb, d_emb, k, address=cfg.address, backend=cfg.backend, block_size=cfg.block_size,
                          exclude_self=exclude_self, progress=cfg.progress)
    return search(
        q_emb, d_emb, k, backend=cfg.backend, device=cfg.device, block_size=cfg.block_size,
        exclude_self=exclude_self, progress=cfg.progress,
    )


def table_from_search(
    qsplit: str, q: Items, nsplit: str, n: Items, sims: np.ndarray, idx: np.ndarray,
    q_fp: np.ndarray, n_fp: np.ndarray,
) -> Neighbours:
    qi, ni, si, rank = flatten_topk(sims, idx)
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


def verify_neighbours(nb: Neighbours, verifier, splits: Dict[str, Items], progress: bool = True) -> Neighbours:
    """Fill ``verified``/``detail``/``score`` of every row with the verifier, then re-rank."""
    if verifier is None or len(nb) == 0:
        return nb
    verified = np.full(len(nb), np.nan, np.float32)
    detail = np.full(len(nb), "", dtype=object)
    for (qs, ns) in sorted(set(zip(nb["query_split"].tolist(), nb["neighbour_split"].tolist()))):
        rows = np.flatnonzero(nb.mask(qs, ns))
        res = verifier.verify(splits[qs], nb["query_index"][rows], splits[ns], nb["neighbour_index"][rows])
        verified[rows] = np.asarray(res.scores, np.float32)
        detail[rows] = np.asarray(res.details, dtype=object)
    cols = dict(nb.columns)
    cols["verified"] = verified
    previous = np.asarray(nb["detail"], dtype=object)
    cols["detail"] = np.array([f"{d}; {p}" if p and d else (d or p) for d, p in zip(detail, previous)], dtype=object)
    cols["score"] = np.where(np.isnan(verified), cols["similarity"], verified).astype(np.float32)
    return rerank(Neighbours(cols))
