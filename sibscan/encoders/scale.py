"""The input size of an image encoder, chosen from the images themselves.

A CNN embeds whatever size it is given; resizing every 32-px image to 224 px before EfficientNet
spends 49x the pixels on interpolation.  :func:`choose_image_size` takes the median short side of
the training images, up-samples it at most :data:`MAX_UPSCALE` times, never beyond the model's
native size, and rounds down to a multiple of :data:`MULTIPLE`, never below :data:`MINIMUM` (96 px:
CIFAR-sized 32-px images run at 96, 5.4x fewer pixels than the previous 224 crop).  The
size goes into the encoder's identity, so caches, indexes and calibrations made at one size are
never mixed with another.  ``--image-size`` overrides it.

Detection quality per size (recall at precision >= 0.95, AUC) is measured by
``python -m benchmarks.image_scale``; the constants below follow it.
"""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np

from ..errors import InputError
from ..items import Items
from ..imageio import open_image

__all__ = ["MAX_UPSCALE", "MINIMUM", "MULTIPLE", "SAMPLE", "choose_image_size", "median_short_side"]

log = logging.getLogger("sibscan.encoders")

#: up-sample the median short side at most this many times
MAX_UPSCALE = 2.0
#: sizes are rounded down to a multiple of this (fewer distinct identities, aligned kernels)
MULTIPLE = 16
#: never below this many pixels: at 64 px EfficientNet's last map is 2 x 2 and flips and shifts of
#: 32-px images left the candidates (verified recall at precision >= 0.95 on planted 32-px siblings
#: 0.628 at 64 px, 0.767 at 96, 0.744 at 128, against 0.756 for the previous 224 path;
#: ``benchmarks/results/image_scale.json``, runs ``32px_sizes`` and ``auto_vs_previous``)
MINIMUM = 96
#: images decoded to find the median when the loader did not record sizes
SAMPLE = 64


def median_short_side(items: Items) -> Optional[float]:
    """Median of ``min(width, height)`` over ``items``; ``None`` when no image could be measured.

    Uses the sizes the image loader recorded (``items.extra["width"]``/``["height"]``); otherwise
    decodes an evenly spaced sample of :data:`SAMPLE` images (unreadable ones are left out here:
    the encoder reports them).
    """
    width, height = items.extra.get("width"), items.extra.get("height")
    if width is not None and height is not None and len(width) == len(items) and len(items):
        return float(np.median(np.minimum(np.asarray(width), np.asarray(height))))

    paths = items.paths or []
    picks = np.unique(np.linspace(0, len(paths) - 1, num=min(SAMPLE, len(paths))).astype(int)) if paths else []
    sides = []
    for i in picks:
        try:
            sides.append(min(open_image(paths[i]).size))
        except InputError:
            continue
    return float(np.median(sides)) if sides else None


def choose_image_size(short_side: Optional[float], native: int, *, max_upscale: float = MAX_UPSCALE,
                      multiple: int = MULTIPLE, minimum: int = MINIMUM) -> int:
    """The encoder input size for images whose median short side is ``short_side``.

    Parameters
    ----------
    short_side : float or None
        Median short side in pixels (``None``: unknown, the native size is used).
    native : int
        The model's own input size (224 for EfficientNet-Lite0): never exceeded.
    max_upscale, multiple, minimum
        See the module constants.

    Returns
    -------
    int
        ``min(native, max(minimum, floor(max_upscale * short_side / multiple) * multiple))``.
    """
    if short_side is None or not np.isfinite(short_side) or short_side <= 0:
        return int(native)
    size = int(max_upscale * short_side) // multiple * multiple
    return int(min(native, max(minimum, size)))


def image_size_for(items: Items, native: int) -> int:
    """:func:`choose_image_size` of ``items``' median short side, logged."""
    side = median_short_side(items)
    size = choose_image_size(side, native)
    log.info("image encoder input: %d px (median short side %s of the %s images, up-sampled at most %gx, "
             "native %d px; --image-size overrides)", size, "unknown" if side is None else f"{side:g} px",
             items.split, MAX_UPSCALE, native)
    return size
