"""Exact inner-product top-k in torch (CPU or CUDA): the blocked search of :mod:`.topk` on tensors.

The CUDA path computes candidate scores in bf16/fp16 on tensor cores, keeps ``k + margin``
candidates per block, re-scores them in fp32 and *certifies* each row: a database row that was not a
candidate scores at most the block's last candidate plus the half-precision error bound, so a row
whose k-th fp32 similarity clears that bound is exact; the others are searched again in fp32.  Ties
go to the lower database index, as in the numpy path.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np

from .topk import GROUP, Blocks

__all__ = ["HALF_UNIT_ROUNDOFF", "block_topk_torch", "search_blocks_torch"]

#: unit roundoff of the half-precision candidate formats
HALF_UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11}


def block_topk_torch(scores, k: int):
    """Stable top-k of each row of a torch score block (CPU or CUDA).

    Parameters
    ----------
    scores : Tensor of shape (m, b)
    k : int

    Returns
    -------
    vals : Tensor of shape (m, min(k, b)), descending
    idx : Tensor of shape (m, min(k, b)) int64, lower column first on ties
    """
    import torch

    m, b = scores.shape
    ng = b // GROUP
    if k == 1 and ng >= 2:
        return _top1_torch(scores, ng)
    if k == 1:
        vals, idx = scores.max(dim=1)  # first maximal index on ties
        return vals[:, None], idx[:, None]
    if k >= b or ng <= k:
        vals, idx = torch.sort(scores, dim=1, descending=True, stable=True)
        return vals[:, :k], idx[:, :k]
    main = ng * GROUP
    # contiguous groups: a reduction over the last axis is fast in torch
    grouped = _groups_view(scores, ng)
    gvals, gidx = torch.topk(grouped.amax(dim=2), k + 1, dim=1)
    tied = gvals[:, k - 1] == gvals[:, k]
    groups, _ = torch.sort(gidx[:, :k], dim=1)                 # ascending: candidates in index order
    # the k best groups' scores, gathered straight from the 3-D view (no column table to build)
    cvals = torch.gather(grouped, 1, groups[:, :, None].expand(m, k, GROUP)).reshape(m, k * GROUP)
    if main < b:
        cvals = torch.cat([cvals, scores[:, main:]], dim=1)
    vals, idx, boundary = _topk_low_first(cvals, k)
    # candidate position -> column: position p is column groups[p // GROUP] * GROUP + p % GROUP
    # (positions past the groups are the tail columns, in order)
    in_group = idx < k * GROUP
    gpos = torch.clamp(idx, max=k * GROUP - 1)
    cols = torch.gather(groups, 1, gpos // GROUP) * GROUP + gpos % GROUP
    idx = torch.where(in_group, cols, idx - k * GROUP + main)
    redo = tied | boundary
    if bool(redo.any()):
        rows = torch.nonzero(redo).flatten()
        fv, fi = torch.sort(scores[rows], dim=1, descending=True, stable=True)
        vals[rows], idx[rows] = fv[:, :k], fi[:, :k]
    return vals, idx


def _topk_low_first(cvals, k: int):
    """``k`` best columns of each row, ties to the lower column, without a stable sort of the row.

    ``torch.topk`` picks the values (a partial selection: ~4x cheaper than the stable sort of the
    candidates, which was the largest cost of a top-5 block after the group maxima); the ``k`` picked
    are then put in (value desc, column asc) order.  Which of several columns equal to the ``k``-th
    value gets picked is not defined by ``topk``: those rows are flagged in ``boundary`` for the
    caller's exact fallback (rare on continuous scores).

    Returns
    -------
    vals, idx : Tensor of shape (m, k); idx are positions in ``cvals``
    boundary : bool Tensor of shape (m,)
    """
    import torch

    vals, idx = torch.topk(cvals, k, dim=1)
    boundary = (cvals >= vals[:, k - 1:k]).sum(dim=1) > k
    idx, order = torch.sort(idx, dim=1)
    vals = torch.gather(vals, 1, order)
    vals, order = torch.sort(vals, dim=1, descending=True, stable=True)
    return vals, torch.gather(idx, 1, order), boundary


def _groups_view(scores, ng: int):
    """The first ``ng * GROUP`` columns of each row as a view of shape (m, ng, GROUP).

    ``scores[:, :main].reshape(...)`` copies the whole score tile whenever the block width is not a
    multiple of ``GROUP`` (the slice is not contiguous), which a CPU search's default block
    (e.g. 35,746 rows) always hits: a strided view reads the same numbers in place.
    """
    m, b = scores.shape
    if not scores.is_contiguous():
        scores = scores.contiguous()
    return scores.as_strided((m, ng, GROUP), (b, GROUP, 1), scores.storage_offset())


def _top1_torch(scores, ng: int):
    """Top-1 through group maxima (torch's row ``max`` is several times slower than ``amax``
    over short contiguous groups); the first group holding the maximum holds its first index."""
    import torch

    m, b = scores.shape
    main = ng * GROUP
    gmax = _groups_view(scores, ng).amax(dim=2)
    gv, gi = gmax.max(dim=1)
    cols = gi[:, None] * GROUP + torch.arange(GROUP, device=scores.device)
    first = (torch.gather(scores, 1, cols) == gv[:, None]).to(torch.uint8).argmax(dim=1)
    vals, idx = gv, gi * GROUP + first
    if main < b:
        tv, ti = scores[:, main:].max(dim=1)
        later = tv > gv  # strictly: on a tie the earlier (grouped) index wins
        vals = torch.where(later, tv, vals)
        idx = torch.where(later, ti + main, idx)
    return vals[:, None], idx[:, None]


def _merge_torch(sims, ids, new_sims, new_ids, k: int):
    """Merge running (sims, ids) with a later block's; ties keep the earlier (lower) ids first."""
    import torch

    cat_s = torch.cat([sims, new_sims], dim=1)
    cat_i = torch.cat([ids, new_ids], dim=1)
    vals, order = torch.sort(cat_s, dim=1, descending=True, stable=True)
    return vals[:, :k], torch.gather(cat_i, 1, order[:, :k])


def search_blocks_torch(queries: np.ndarray, blocks: Blocks, k: int, *, device: str = "cpu",
                        half: Optional[str] = None, margin: int = 16, query_block: int = 4096,
                        on_block: Optional[Callable[[int], None]] = None,
                        stats: Optional[dict] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Exact top-k of ``queries @ block.T`` over all blocks with torch (CPU or CUDA).

    Parameters
    ----------
    queries : ndarray of shape (m, d)
    blocks : callable returning an iterable of ``(start, ndarray or Tensor of shape (b, d))``,
        starts increasing
    k : int
    device : str
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    half : {None, "bf16", "fp16"}
        Candidate precision on CUDA (tensor cores); ``None`` computes in fp32 throughout.
        Reported similarities are always fp32 and the result equals the fp32 search.
    margin : int
        Extra candidates per block kept for fp32 re-scoring (``k' = k + margin``).
    query_block : int
        Queries per matrix product.
    on_block : callable, optional
        Called with the number of database rows after each block.
    stats : dict, optional
        Filled with ``{"uncertified_rows": int}`` for the half-precision path.

    Returns
    -------
    sims : ndarray of shape (m, k) float32
    ids : ndarray of shape (m, k) int64
    """
    import torch

    dev = torch.device(device)
    q32 = torch.as_tensor(np.ascontiguousarray(queries, dtype=np.float32)).to(dev)
    m = q32.shape[0]
    run_s = torch.full((m, k), -float("inf"), device=dev)
    run_i = torch.full((m, k), -1, dtype=torch.int64, device=dev)
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    try:
        if half is None:
            buf = torch.empty(0, device=dev)
            for start, block in blocks():
                x = _to_device(block, dev)
                b = x.shape[0]
                if buf.numel() < min(m, query_block) * b:
                    buf = torch.empty(min(m, query_block) * b, device=dev)
                for q0 in range(0, m, query_block):
                    q1 = min(m, q0 + query_block)
                    scores = buf[: (q1 - q0) * b].view(q1 - q0, b)
                    torch.mm(q32[q0:q1], x.T, out=scores)
                    vals, idx = block_topk_torch(scores, k)
                    run_s[q0:q1], run_i[q0:q1] = _merge_torch(run_s[q0:q1], run_i[q0:q1], vals, idx + start, k)
                if on_block is not None:
                    on_block(x.shape[0])
        else:
            run_s, run_i = _search_half(q32, blocks, k, half, margin, query_block, run_s, run_i,
                                        on_block, stats)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    return run_s.cpu().numpy(), run_i.cpu().numpy()


def _to_device(block, dev):
    """A database block as an fp32 tensor on ``dev`` (half-precision shards travel as half)."""
    import torch

    if isinstance(block, torch.Tensor):
        return block.to(dev).float()
    if dev.type == "cpu":
        return torch.from_numpy(np.require(block, dtype=np.float32, requirements=["C", "W"]))
    return torch.from_numpy(np.require(block, requirements=["C", "W"])).to(dev, non_blocking=True).float()


def _half_candidates(sh, kp: int):
    """The ``kp`` best columns of a half-precision score block, and the most a column left out
    can score (``None`` when every column is a candidate).

    Grouped like :func:`block_topk_torch`: a column outside the ``kp`` best groups scores at most
    the ``kp+1``-th group maximum; one inside them but not kept, at most the ``kp``-th kept score.
    """
    import torch

    m, b = sh.shape
    ng = b // GROUP
    if b <= kp:
        return torch.arange(b, device=sh.device).expand(m, b), None
    if ng <= kp + 1:
        cv, ci = torch.topk(sh, kp + 1, dim=1)
        return ci[:, :kp], cv[:, kp]
    main = ng * GROUP
    gmax = sh[:, :main].reshape(m, ng, GROUP).amax(dim=2)
    gv, gi = torch.topk(gmax, kp + 1, dim=1)
    cols = (gi[:, :kp, None] * GROUP + torch.arange(GROUP, device=sh.device)).reshape(m, -1)
    if main < b:
        cols = torch.cat([cols, torch.arange(main, b, device=sh.device).expand(m, b - main)], dim=1)
    cv, order = torch.topk(torch.gather(sh, 1, cols), kp + 1, dim=1)
    return torch.gather(cols, 1, order[:, :kp]), torch.maximum(gv[:, kp], cv[:, kp])


def _search_half(q32, blocks: Blocks, k: int, half: str, margin: int, query_block: int,
                 run_s, run_i, on_block, stats):
    """bf16/fp16 candidates, fp32 re-scoring, certification, fp32 re-search of uncertified rows."""
    import torch

    if half not in HALF_UNIT_ROUNDOFF:
        raise ValueError(f"half must be one of {sorted(HALF_UNIT_ROUNDOFF)}, got {half!r}")
    hdt = torch.bfloat16 if half == "bf16" else torch.float16
    u = HALF_UNIT_ROUNDOFF[half]
    dev = q32.device
    m = q32.shape[0]
    kp = k + max(0, int(margin))
    qh = q32.to(hdt)
    qnorm = q32.norm(dim=1)
    # largest score a non-candidate could reach, per row (before the error bound)
    bound = torch.full((m,), -float("inf"), device=dev)
    for start, block in blocks():
        x = _to_device(block, dev)
        b = x.shape[0]
        xh = x.to(hdt)
        # product error of rounded inputs (2u) plus rounding of the output (u), with headroom for
        # reduced-precision split-K reductions: |s_half - s| <= 4u |q| max|x|
        eps = 4.0 * u * qnorm * x.norm(dim=1).max()
        for q0 in range(0, m, query_block):
            q1 = min(m, q0 + query_block)
            sh = qh[q0:q1] @ xh.T
            ci, blk_bound = _half_candidates(sh, kp)
            if blk_bound is not None:
                bound[q0:q1] = torch.maximum(bound[q0:q1], blk_bound.float() + eps[q0:q1])
            ci, _ = torch.sort(ci, dim=1)  # index order, so the stable sort below breaks ties low-first
            exact = torch.einsum("md,mkd->mk", q32[q0:q1], x[ci])
            vals, order = torch.sort(exact, dim=1, descending=True, stable=True)
            vals, idx = vals[:, :k], torch.gather(ci, 1, order[:, :k])
            run_s[q0:q1], run_i[q0:q1] = _merge_torch(run_s[q0:q1], run_i[q0:q1], vals, idx + start, k)
        if on_block is not None:
            on_block(b)
    # certified: the k-th exact similarity beats anything a non-candidate could score
    certified = (run_s[:, -1] > bound) | torch.isneginf(bound)  # -inf: every row was a candidate
    uncertified = torch.nonzero(~certified).flatten()
    if stats is not None:
        stats["uncertified_rows"] = int(uncertified.numel())
    if uncertified.numel():
        s, i = search_blocks_torch(q32[uncertified].cpu().numpy(), blocks, k, device=str(dev),
                                   half=None, query_block=query_block)
        run_s[uncertified] = torch.as_tensor(s, device=dev)
        run_i[uncertified] = torch.as_tensor(i, device=dev)
    return run_s, run_i
