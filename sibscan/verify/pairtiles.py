"""Which images a verify call prepares together: pairs cut into tiles of bounded prepared memory.

A verifier that prepares each image once (:mod:`sibscan.kernels.paircorr_sides`) holds the prepared
images of both sides while it scores their pairs.  :func:`pair_tiles` orders the pairs so that one
side, the one whose prepared images take less memory, is held in as few blocks as the budget allows
(one, at a scan's proportions: its test images), and the other side streams past it in smaller
blocks; each image of the held side is then prepared once per call, each of the streamed side once
per held block it has pairs in.
"""
from __future__ import annotations

from typing import Iterator, Tuple

import numpy as np

__all__ = ["pair_tiles"]


def pair_tiles(qi: np.ndarray, di: np.ndarray, per_query: int, per_database: int,
               budget: int) -> Iterator[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Tiles ``(rows, query_ids, database_ids)`` covering every pair once.

    Parameters
    ----------
    qi, di : ndarray of shape (m,), int
        Query and database row of each pair.
    per_query, per_database : int
        Bytes one prepared query / database image holds.
    budget : int
        Bytes of prepared images held at once: three quarters for the held side, the rest for the
        streamed one (at least one image each).

    Yields
    ------
    rows : ndarray of int64
        Pairs of the tile (positions in ``qi``/``di``).
    query_ids, database_ids : ndarray of int64, sorted
        The distinct rows the tile's pairs use on each side.  Consecutive tiles of one held block yield
        the *same* array object for the held side, so a caller re-prepares a side only when it changes.
    """
    qi, di = np.asarray(qi, np.int64), np.asarray(di, np.int64)
    if not len(qi):
        return
    (uq, q_inv), (ud, d_inv) = (np.unique(x, return_inverse=True) for x in (qi, di))
    hold_queries = len(uq) * per_query <= len(ud) * per_database
    held, streamed = (qi, di) if hold_queries else (di, qi)
    per_held, per_streamed = (per_query, per_database) if hold_queries else (per_database, per_query)
    held_block = max(1, int(budget * 3 // 4 // max(per_held, 1)))
    streamed_block = max(1, int(budget // 4 // max(per_streamed, 1)))
    uh, h_inv = (uq, q_inv) if hold_queries else (ud, d_inv)
    block = h_inv.reshape(-1) // held_block
    order = np.lexsort((streamed, block))
    cuts = np.flatnonzero(np.diff(block[order])) + 1
    for seg in np.split(order, cuts):
        b = int(block[seg[0]])
        h_ids = uh[b * held_block:(b + 1) * held_block]
        us, s_inv = np.unique(streamed[seg], return_inverse=True)  # sorted within seg: s_inv is non-decreasing
        s_inv = s_inv.reshape(-1)
        for lo in range(0, len(us), streamed_block):
            a, e = np.searchsorted(s_inv, [lo, lo + streamed_block])
            s_ids = us[lo:lo + streamed_block]
            yield (seg[a:e], h_ids, s_ids) if hold_queries else (seg[a:e], s_ids, h_ids)
