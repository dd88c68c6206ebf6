"""Windows of small grayscale images as vectors: the appearance view that finds heavy crops and zooms.

A crop of a photo (0.5–0.8 of its side, resized back) and the photo itself do not correlate
pixel for pixel; the crop correlates with the *window* of the photo it was cut from.  Each image is
cut into square windows over a few scales and positions (:func:`window_boxes`), every window
area-averaged to ``out x out`` cells from an integral image (exact box sums, vectorised over the
whole batch), mean/std normalised and scaled to unit length, so the inner product of two window
vectors is their pixel correlation.  Searching an item's whole-image vector against the other
split's window vectors finds the item it was cropped from; the other way round finds the wider shot
it was zoomed out of.  A mirrored copy is the vector with its columns reversed (:func:`mirror`),
so flips cost no second cut.
"""
from __future__ import annotations

from typing import Iterable, Sequence, Tuple

import numpy as np

from .topk import merge_topk

__all__ = ["VIEW_CELLS", "VIEW_SCALES", "WINDOW_SCALES", "mirror", "window_boxes", "window_pair_scores", "window_topk",
           "window_vectors"]

#: window sides as fractions of the image side, with the number of positions along each axis
#: (136 windows).  Measured on ``benchmarks.quality --sets crops``: positions matter as much as scales
#: (4 scales x 3-4 positions found the source in the top 10 for 0.80 of the heavy crops, these 0.98)
WINDOW_SCALES: Tuple[Tuple[float, int], ...] = ((1.0, 1), (0.9, 3), (0.8, 4), (0.7, 5), (0.6, 6), (0.5, 7))


#: the windows *view*'s grid (its top-k candidates, :func:`sibscan.stages.views.windows_topk_gray`): 293
#: windows of ``VIEW_CELLS`` x ``VIEW_CELLS`` cells, about the same floats per image as 136 of 12 x 12
#: (18,752 against 19,584): the same memory and multiply-adds, but 2.2x the scores to take the best
#: of (1,500 x 300 images, five alternating runs at load 6-8: 0.95-1.5x the wall time, 1.2-1.5x the
#: CPU time of the grid above).  On the grid above, positions at half the side step two cells apart,
#: so a heavy crop of a 32-px image lies up to a cell off every window and its source can rank below
#: look-alike textures; here the step is at most 0.8 of a (coarser) cell.  Measured on the planted
#: sets of :mod:`benchmarks.planted_crops` as ``benchmarks.quality`` cuts them (all photos): the source
#: in the view's own top 5 for small32 seeds 0-3 0.94/0.97/0.96/0.96 (the grid above:
#: 0.90/0.85/0.91/0.93), crops 0.99/0.94/0.98/1.00 (0.97/0.93/0.91/0.95)
VIEW_SCALES: Tuple[Tuple[float, int], ...] = ((1.0, 1), (0.9, 4), (0.8, 5), (0.7, 7), (0.6, 9), (0.5, 11))
VIEW_CELLS = 8

#: images cut into windows at once inside :func:`window_vectors`
_CUT_CHUNK = 64


def window_boxes(scales: Sequence[Tuple[float, int]] = WINDOW_SCALES) -> np.ndarray:
    """Square windows as ``(top, left, side)`` fractions of the image side, shape (n_windows, 3).

    ``(side, steps)``: ``steps`` evenly spaced positions per axis from edge to edge (one: centred).
    The whole image, ``(0, 0, 1)``, comes first; the set is symmetric under a left-right flip.
    """
    boxes = []
    for side, steps in scales:
        if not 0.0 < side <= 1.0 or steps < 1:
            raise ValueError(f"a window side is a fraction in (0, 1] with >= 1 position, got ({side}, {steps})")
        starts = np.linspace(0.0, 1.0 - side, steps) if steps > 1 else np.array([(1.0 - side) / 2])
        boxes.extend((y, x, side) for y in starts for x in starts)
    return np.asarray(boxes, np.float64)


def window_vectors(gray: np.ndarray, boxes: np.ndarray, out: int = 16) -> np.ndarray:
    """Area-averaged, normalised vectors of every window of every image.

    Parameters
    ----------
    gray : ndarray of shape (n, s, s)
        Grayscale images (``s`` at least ``out``; 64 keeps a 0.55 window above 2 px a cell).
    boxes : ndarray of shape (w, 3)
        ``(top, left, side)`` fractions, from :func:`window_boxes`.
    out : int
        Cells per window side.

    Returns
    -------
    ndarray of shape (n, w, out * out), float32
        Row-major cells, each vector mean-centred and of unit length (a flat window gives zeros).
    """
    gray = np.asarray(gray)
    if gray.ndim != 3 or gray.shape[1] != gray.shape[2]:
        raise ValueError(f"expected square images of shape (n, s, s), got {gray.shape}")
    n, s = gray.shape[0], gray.shape[1]
    if s < out:
        raise ValueError(f"images of {s}x{s} are smaller than a window of {out}x{out} cells")
    # cell edges in pixels, rounded: (w, out + 1) along each axis; every cell at least 1 px wide
    t = np.linspace(0.0, 1.0, out + 1)
    ys = np.rint((boxes[:, :1] + boxes[:, 2:] * t) * s).astype(np.int64)
    xs = np.rint((boxes[:, 1:2] + boxes[:, 2:] * t) * s).astype(np.int64)
    ys = np.minimum(np.maximum.accumulate(np.maximum(ys, np.arange(out + 1) + ys[:, :1]), axis=1), s)
    xs = np.minimum(np.maximum.accumulate(np.maximum(xs, np.arange(out + 1) + xs[:, :1]), axis=1), s)
    y0, y1 = ys[:, :-1, None], ys[:, 1:, None]  # (w, out, 1)
    x0, x1 = xs[:, None, :-1], xs[:, None, 1:]  # (w, 1, out)
    area = np.maximum((y1 - y0) * (x1 - x0), 1)
    vectors = np.empty((n, len(boxes), out * out), np.float32)
    # _CUT_CHUNK images at a time: their float64 temporaries (~10 MB) stay in cache; each image's
    # numbers are its own, so the vectors are the same bits as in one pass (1.5-4x less time)
    for a in range(0, n, _CUT_CHUNK):
        chunk = np.asarray(gray[a:a + _CUT_CHUNK], np.float64)
        integral = np.zeros((len(chunk), s + 1, s + 1))
        integral[:, 1:, 1:] = chunk.cumsum(axis=1).cumsum(axis=2)
        sums = integral[:, y1, x1] - integral[:, y0, x1] - integral[:, y1, x0] + integral[:, y0, x0]
        v = (sums / area).reshape(len(chunk), len(boxes), out * out)
        v -= v.mean(axis=2, keepdims=True)
        norm = np.linalg.norm(v, axis=2, keepdims=True)
        # C order (``vectors``): a strided block is copied whole (80 MB for 1,024 images) by every
        # ``reshape`` in :func:`window_pair_scores`, once per query slice
        vectors[a:a + _CUT_CHUNK] = np.divide(v, norm, out=np.zeros_like(v), where=norm > 1e-9)
    return vectors


def mirror(vectors: np.ndarray, out: int = 16) -> np.ndarray:
    """The vectors of left-right mirrored windows: each ``out x out`` grid with its columns reversed.

    Parameters
    ----------
    vectors : ndarray of shape (..., out * out)

    Returns
    -------
    ndarray of the same shape
    """
    shape = vectors.shape
    return np.ascontiguousarray(vectors.reshape(*shape[:-1], out, out)[..., ::-1]).reshape(shape)


def window_pair_scores(q: np.ndarray, d: np.ndarray, out: int = 16) -> np.ndarray:
    """How well each query image matches each database image as a window of it, or it as a window of the query.

    The score of a pair is the largest of: the query's whole image (or its mirror) against every
    window of the database image (the query is a crop of it), and every window of the query (or of
    its mirror) against the database image's whole image (the query is a wider shot of it).

    Parameters
    ----------
    q : ndarray of shape (nq, w, out * out)
    d : ndarray of shape (nd, w, out * out)
        Window vectors from :func:`window_vectors` with the same boxes; window 0 is the whole image.

    Returns
    -------
    ndarray of shape (nq, nd), float32
    """
    nq, w, dim = q.shape
    nd = d.shape[0]
    whole = np.concatenate([q[:, 0], mirror(q[:, 0], out)])  # (2 nq, dim)
    crop = (whole @ d.reshape(nd * w, dim).T).reshape(2, nq, nd, w).max(axis=(0, 3))
    wide = (np.concatenate([q, mirror(q, out)], axis=1).reshape(nq * 2 * w, dim) @ d[:, 0].T)
    return np.maximum(crop, wide.reshape(nq, 2 * w, nd).max(axis=1)).astype(np.float32)


def window_topk(q: np.ndarray, blocks: Iterable[Tuple[int, np.ndarray]], k: int, out: int = 16,
                max_floats: int = 1 << 25) -> Tuple[np.ndarray, np.ndarray]:
    """Top-k database images of each query image by :func:`window_pair_scores`, streamed over blocks.

    Parameters
    ----------
    q : ndarray of shape (nq, w, out * out)
    blocks : iterable of (start, ndarray of shape (b, w, out * out))
        Database window vectors block by block, ``start`` the block's first row.
    k : int
    max_floats : int
        Score floats held at once (queries are taken in slices to stay under it; 2^25 = 128 MiB).

    Returns
    -------
    sims : ndarray of shape (nq, k), float32 (-inf where fewer than k)
    idx : ndarray of shape (nq, k), int64 (-1 where fewer than k); ties: lower index first
    """
    nq, w = q.shape[0], q.shape[1]
    sims = np.full((nq, k), -np.inf, np.float32)
    idx = np.full((nq, k), -1, np.int64)
    for start, d in blocks:
        step = max(1, max_floats // max(1, 2 * w * len(d)))
        for a in range(0, nq, step):
            s = window_pair_scores(q[a:a + step], d, out)
            kk = min(k, s.shape[1])
            part = np.argsort(-s, axis=1, kind="stable")[:, :kk]
            sims[a:a + step], idx[a:a + step] = merge_topk(
                sims[a:a + step], idx[a:a + step], np.take_along_axis(s, part, axis=1), part + start, k)
    return sims, idx
