"""Random-walk padding of series (the UCR Augmented misalignment), vectorised.

Each series ``x`` of length ``L`` gets a head of ``n_head`` and a tail of ``l - n_head`` values:
the head is a random walk that starts from ``x[0]`` (``w_1 = x[0] + e_1``, ``w_k = w_(k-1) + e_k``)
and is reversed, so ``w_1`` sits right before ``x[0]``; the tail is a walk from ``x[-1]``. Both
walks are drawn to the full length ``l``; the output is the window of length ``L + l`` of
``[reversed head walk, x, tail walk]`` that starts at ``l - n_head`` — one gather, no loop over
rows. :func:`walk_pad_reference` is the per-row loop the tests hold it to.
"""
from __future__ import annotations

import numpy as np

__all__ = ["walk_pad", "walk_pad_reference"]


def walk_pad(x: np.ndarray, n_head: np.ndarray, steps_head: np.ndarray, steps_tail: np.ndarray) -> np.ndarray:
    """Pad every series with a random walk at each end.

    Parameters
    ----------
    x : ndarray of shape (n, n_channels, L)
    n_head : ndarray of shape (n,), int
        Head length per series, in ``[0, l]``; the tail gets ``l - n_head``. All channels of a
        series share it (the whole series is shifted).
    steps_head, steps_tail : ndarray of shape (n, n_channels, l)
        The walks' increments (for the paper's padding: N(0, 0.01)).

    Returns
    -------
    ndarray of shape (n, n_channels, L + l), float64
    """
    x = np.asarray(x, dtype=np.float64)
    n, c, length = x.shape
    pad = steps_head.shape[-1]
    n_head = np.asarray(n_head, dtype=np.int64)
    if steps_head.shape != (n, c, pad) or steps_tail.shape != (n, c, pad):
        raise ValueError(f"steps must have shape {(n, c, pad)}, got {steps_head.shape} and {steps_tail.shape}")
    if n_head.shape != (n,) or (n_head < 0).any() or (n_head > pad).any():
        raise ValueError(f"n_head must be {n} integers in [0, {pad}]")
    # accumulate from the start value itself: the same additions, in the same order, as the walk
    # defined step by step (bit-identical to the reference)
    head = np.cumsum(np.concatenate([x[:, :, :1], steps_head], axis=-1), axis=-1)[:, :, 1:]
    tail = np.cumsum(np.concatenate([x[:, :, -1:], steps_tail], axis=-1), axis=-1)[:, :, 1:]
    full = np.concatenate([head[:, :, ::-1], x, tail], axis=-1)  # (n, c, l + L + l)
    start = (pad - n_head)[:, None, None]
    index = start + np.arange(length + pad)[None, None, :]
    return np.take_along_axis(full, np.broadcast_to(index, (n, c, length + pad)), axis=-1)


def walk_pad_reference(x: np.ndarray, n_head: np.ndarray, steps_head: np.ndarray, steps_tail: np.ndarray) -> np.ndarray:
    """The same padding as :func:`walk_pad`, one series and one step at a time."""
    x = np.asarray(x, dtype=np.float64)
    n, c, length = x.shape
    pad = steps_head.shape[-1]
    out = np.empty((n, c, length + pad))
    for i in range(n):
        nh = int(n_head[i])
        nt = pad - nh
        for ch in range(c):
            head, value = [], x[i, ch, 0]
            for k in range(nh):
                value = value + steps_head[i, ch, k]
                head.append(value)
            tail, value = [], x[i, ch, -1]
            for k in range(nt):
                value = value + steps_tail[i, ch, k]
                tail.append(value)
            out[i, ch] = np.concatenate([np.array(head[::-1]), x[i, ch], np.array(tail)])
    return out
