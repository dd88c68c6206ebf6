"""Decode images safely into RGB: the one place where sibscan opens image files.

Grayscale, palette, RGBA (composited on white), CMYK all become RGB; animated GIF/WebP give their
first frame; a decompression bomb (more than ``MAX_PIXELS`` pixels) is refused before decoding.
:func:`decode_images` decodes many in a thread pool (Pillow releases the GIL while decoding).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, List, Optional, Sequence, TypeVar, Union

from .errors import InputError, require

__all__ = ["open_image", "decode_images", "MAX_PIXELS", "IMAGE_EXTENSIONS"]

T = TypeVar("T")

#: refuse images larger than this many pixels (a 20000 x 20000 bomb is 4e8)
MAX_PIXELS = 89_478_485  # Pillow's own default warning limit
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")


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
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read image ({exc.strerror})", path=path) from None
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
    from .progress import bar

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
