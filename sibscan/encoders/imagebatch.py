"""Image files -> uint8 pixel batches at an encoder's input size, decoded ahead of the model.

Every image is decoded by :func:`sibscan.imageio.open_image` (the one decode function), its short
side resized to ``size`` (bicubic) and centre-cropped to ``size x size`` — torchvision's
``Resize(size)`` + ``CenterCrop(size)`` on a PIL image, pixel for pixel — and written into a
preallocated ``uint8`` buffer of shape ``(batch, 3, size, size)``.

:func:`pixel_batches` keeps two such buffers and fills the next batch in a thread pool while the
caller runs the model on the current one (Pillow and the runtimes release the GIL), so decoding
overlaps inference and no batch allocates: the buffers (and the runtime's own arena) are reused for
the whole call.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..imageio import open_image

__all__ = ["crop_geometry", "decode_into", "default_threads", "pixel_batches", "to_pixels"]


def default_threads() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


def crop_geometry(width: int, height: int, size: int) -> Tuple[int, int, int, int]:
    """Size after resizing the short side to ``size``, and the top-left of the centred crop.

    The same arithmetic as torchvision's ``Resize(size)`` (long side truncated) and
    ``CenterCrop(size)`` (offsets rounded half to even), so the pixels equal those transforms'.

    Returns
    -------
    new_width, new_height, left, top : int
    """
    if width <= height:
        nw, nh = size, int(size * height / width)
    else:
        nw, nh = int(size * width / height), size
    return nw, nh, int(round((nw - size) / 2.0)), int(round((nh - size) / 2.0))


def to_pixels(image, size: int, out: Optional[np.ndarray] = None) -> np.ndarray:
    """An RGB PIL image resized (short side, bicubic) and centre-cropped into ``out``.

    Parameters
    ----------
    image : PIL.Image.Image, mode RGB
    size : int
    out : ndarray of shape (3, size, size), uint8, optional
        Written in place (a slot of a batch buffer).

    Returns
    -------
    ndarray of shape (3, size, size), uint8
    """
    from PIL import Image

    nw, nh, left, top = crop_geometry(image.width, image.height, size)
    if (nw, nh) != image.size:
        image = image.resize((nw, nh), Image.Resampling.BICUBIC)
    if (nw, nh) != (size, size):
        image = image.crop((left, top, left + size, top + size))
    hwc = np.asarray(image)
    if out is None:
        out = np.empty((3, size, size), np.uint8)
    out[...] = hwc.transpose(2, 0, 1)
    return out


def decode_into(paths: Sequence[str], rows: Sequence[int], size: int, buf: np.ndarray, offset: int) -> None:
    """Decode ``paths[rows]`` into ``buf[rows - offset]`` (:class:`InputError` on an unreadable one)."""
    for i in rows:
        to_pixels(open_image(paths[i]), size, buf[i - offset])


def pixel_batches(paths: Sequence[str], size: int, batch_size: int, *, threads: Optional[int] = None,
                  buffers: Optional[List[np.ndarray]] = None,
                  fill: Callable[..., None] = decode_into) -> Iterator[Tuple[int, np.ndarray]]:
    """Yield ``(start, pixels)`` batches of ``paths``, the next one decoding while the caller works.

    Parameters
    ----------
    paths : sequence of str, length n
    size : int
        Output side in pixels.
    batch_size : int
    threads : int, optional
        Decoding threads (default :func:`default_threads`).
    buffers : list of two ndarrays of shape (>= batch_size, 3, size, size), uint8, optional
        Reused across calls when given (e.g. pinned memory for a GPU copy).
    fill : callable
        ``fill(paths, rows, size, buffer, offset)`` decodes rows into a buffer (default
        :func:`decode_into`).

    Yields
    ------
    start : int
    pixels : ndarray of shape (b, 3, size, size), uint8
        A view of one of the two buffers, valid until the next batch is requested.

    Raises
    ------
    InputError
        The first image of a batch that cannot be decoded.
    """
    n = len(paths)
    if n == 0:
        return
    threads = max(1, int(threads or default_threads()))
    if buffers is None:
        shape = (min(batch_size, n), 3, size, size)
        buffers = [np.empty(shape, np.uint8), np.empty(shape, np.uint8)]
    starts = list(range(0, n, batch_size))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sibscan-decode") as pool:

        def submit(b: int):
            start = starts[b]
            rows = np.arange(start, min(n, start + batch_size))
            parts = np.array_split(rows, min(threads, len(rows)))
            return [pool.submit(fill, paths, part, size, buffers[b % 2], start) for part in parts]

        pending = submit(0)
        try:
            for b, start in enumerate(starts):
                for future in pending:
                    future.result()
                # the other buffer is free again: the caller finished with it before asking for this batch
                pending = submit(b + 1) if b + 1 < len(starts) else []
                yield start, buffers[b % 2][: min(batch_size, n - start)]
        finally:
            for future in pending:
                future.cancel()
