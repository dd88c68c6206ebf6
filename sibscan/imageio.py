"""Decode images safely into RGB: the one place where sibscan opens image files.

Grayscale, palette, RGBA (composited on white), CMYK all become RGB; animated GIF/WebP give their
first frame; a decompression bomb (more than ``MAX_PIXELS`` pixels) is refused before decoding; a
path that is not a regular file (a FIFO, a device, a folder named ``*.png``) is refused before it is
opened (reading a FIFO would block).  Images deeper than 8 bits per sample (16-bit and 32-bit
integer, float: Pillow modes ``I;16*``, ``I``, ``F``) are scaled to 8 bits by their own range, the
lowest value to 0 and the highest to 255, rather than clipped (a 12-bit image in 16 bits would
become all white, a float image in [0, 1] all black); the digest of the samples at their own depth
is kept in ``image.info[DEPTH_KEY]``, so that the exact fingerprint
(:func:`sibscan.fingerprint.pixel_fingerprint`) tells two deep images apart even where their 8-bit
views agree.  :func:`decode_images` decodes many in a thread pool (Pillow releases the GIL while
decoding).
"""
from __future__ import annotations

import hashlib
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, List, Optional, Sequence, TypeVar, Union

from .errors import InputError, require
from .progress import bar

__all__ = ["open_image", "decode_images", "DEPTH_KEY", "MAX_PIXELS", "IMAGE_EXTENSIONS"]

T = TypeVar("T")

#: refuse images larger than this many pixels (a 20000 x 20000 bomb is 4e8)
MAX_PIXELS = 89_478_485  # Pillow's own default warning limit
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")
#: ``image.info`` key of the digest of a deep image's samples at their own depth
DEPTH_KEY = "sibscan.depth_digest"
#: Pillow modes with more than 8 bits per sample
_DEEP_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")


def _deep_to_rgb(im):
    """A 16/32-bit or float single-channel image as 8-bit RGB, scaled by its own range (NaN -> 0)."""
    import numpy as np
    from PIL import Image

    a = np.asarray(im)
    digest = hashlib.blake2b(f"{im.mode}|{a.dtype.str}|{a.shape}|".encode() + np.ascontiguousarray(a).tobytes(),
                             digest_size=16).digest()
    x = a.astype(np.float64)
    finite = np.isfinite(x)
    lo, hi = (float(x[finite].min()), float(x[finite].max())) if finite.any() else (0.0, 0.0)
    scaled = np.zeros(x.shape, np.uint8)
    if hi > lo:
        scaled[finite] = np.rint((x[finite] - lo) * (255.0 / (hi - lo))).astype(np.uint8)
    out = Image.fromarray(scaled, "L").convert("RGB")
    out.info[DEPTH_KEY] = digest
    return out


def open_image(path: str | os.PathLike, max_pixels: int = MAX_PIXELS):
    """Return the image at ``path`` as a fully decoded RGB ``PIL.Image.Image``.

    Raises
    ------
    InputError
        Zero-byte, unreadable, truncated/corrupt or oversized files, with the path and the reason.
    """
    Image = require("PIL.Image", "images", "reading images")
    path = Path(path)
    try:
        st = path.stat()
    except OSError as exc:
        reason = "dangling symbolic link" if path.is_symlink() else f"cannot read image ({exc.strerror})"
        raise InputError(reason, path=path) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a special file"
        raise InputError(f"not an image file but {kind}", path=path)
    size = st.st_size
    if size == 0:
        raise InputError("zero-byte image file", path=path)
    try:
        with Image.open(path) as im:
            w, h = im.size
            if w * h > max_pixels:
                raise InputError(
                    f"image is {w}x{h} = {w * h:,} pixels, over the {max_pixels:,} limit (decompression bomb?)",
                    path=path,
                )
            im.seek(0)
            if im.mode in _DEEP_MODES:
                return _deep_to_rgb(im)
            if im.mode in ("RGBA", "LA") or (im.mode == "P" and "transparency" in im.info):
                im = im.convert("RGBA")
                background = Image.new("RGBA", im.size, (255, 255, 255, 255))
                background.alpha_composite(im)
                return background.convert("RGB")
            out = im.convert("RGB")
            out.load()
            return out
    except InputError:
        raise
    except Image.DecompressionBombError as exc:
        raise InputError(f"refused as a decompression bomb ({exc})", path=path) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise InputError(f"corrupt or unsupported image ({exc})", path=path) from None


def default_workers() -> int:
    return max(1, min(8, (os.cpu_count() or 1)))


def decode_images(
    paths: Sequence[Union[str, os.PathLike]],
    fn: Callable[[object, str], T],
    *,
    workers: Optional[int] = None,
    desc: str = "decoding images",
    transient: bool = True,
) -> List[Union[T, InputError]]:
    """Decode every image with :func:`open_image` in a thread pool and apply ``fn(image, path)``.

    Parameters
    ----------
    paths : sequence of paths, length n
    fn : callable
        Called with the decoded RGB ``PIL.Image.Image`` and its path; runs in the worker thread.
    workers : int, optional
        Threads; default ``min(8, cpu_count)``.
    desc : str
        Progress-bar label.
    transient : bool
        True: the bar shows on a terminal only (an inner loop, e.g. one encoder batch); False: off a
        terminal it also writes timed progress lines (loading a whole split).

    Returns
    -------
    list of length n
        ``fn``'s result, or the :class:`InputError` that made the image unreadable.
    """
    def one(path):
        try:
            return fn(open_image(path), str(path))
        except InputError as exc:
            return exc

    workers = workers or default_workers()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        out = []
        with bar(len(paths), desc, "image", transient=transient) as progress:
            for res in pool.map(one, paths):
                out.append(res)
                progress.update()
        return out
