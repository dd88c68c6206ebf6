"""``pixels``: a small resized copy of the image, mean/std normalised, as the embedding.

Weight-free and fast.  Shrinking to ``size x size`` with area averaging (Pillow's BOX filter) wipes
out what re-encoding, resizing and a crop of a few pixels change, so near copies land close in
cosine; per-image mean/std normalisation makes it blind to brightness and contrast shifts.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import InputError
from ..stats import check_int
from .base import Encoder, cpu_device, l2_normalise, register_encoder
from ..imageio import decode_images

__all__ = ["PixelsEncoder", "shrink_images"]

PREPROCESSING_VERSION = 1


def _pil_available():
    import importlib.util

    if importlib.util.find_spec("PIL") is None:
        return False, "Pillow is missing; install it with: pip install 'sibscan[images]'"
    return True, ""


def shrink_images(
    paths: Sequence[str],
    size: int,
    *,
    color: bool,
    resample: str = "box",
    workers: Optional[int] = None,
) -> np.ndarray:
    """Decode images and shrink each to ``size x size`` (aspect ratio not kept).

    Parameters
    ----------
    paths : sequence of str, length n
    size : int
    color : bool
        RGB when True, else 8-bit grayscale (ITU-R 601-2 luma, Pillow's ``"L"``).
    resample : {"box", "lanczos", "bilinear"}
    workers : int, optional
        Decoding threads.

    Returns
    -------
    ndarray of shape (n, size, size, 3) or (n, size, size), float32 in [0, 255]

    Raises
    ------
    InputError
        The first image that cannot be decoded.
    """
    from PIL import Image

    method = {"box": Image.Resampling.BOX, "lanczos": Image.Resampling.LANCZOS,
              "bilinear": Image.Resampling.BILINEAR}[resample]

    def shrink(im, _path):
        if not color:
            im = im.convert("L")
        return np.asarray(im.resize((size, size), method, reducing_gap=3.0), dtype=np.float32)

    results = decode_images(list(paths), shrink, workers=workers, desc="shrinking images")
    for res in results:
        if isinstance(res, InputError):
            raise res
    shape = (size, size, 3) if color else (size, size)
    return np.stack(results).astype(np.float32) if results else np.empty((0, *shape), np.float32)


@register_encoder
class PixelsEncoder(Encoder):
    """Shrunk image, per-image mean/std normalised, L2: cosine ~ pixel correlation."""

    name = "pixels"
    modality = "image"
    description = "small resized image (default 32x32 RGB), mean/std normalised; robust to resize and re-compression"
    weight_free = True

    def __init__(
        self,
        size: int = 32,
        color: bool = True,
        *,
        device: str = "auto",
        batch_size: int = 256,
        workers: Optional[int] = None,
    ) -> None:
        self.size = check_int(size, "pixels: size", 2, error=InputError)
        self.device = cpu_device(device)
        self.color = bool(color)
        self.batch_size = int(batch_size)
        self.workers = workers
        self.dim = self.size * self.size * (3 if self.color else 1)
        self.identity = (
            f"pixels/v{PREPROCESSING_VERSION} size={self.size} {'rgb' if self.color else 'gray'} resample=box "
            "norm=mean-std"
        )

    @classmethod
    def available(cls):
        return _pil_available()

    def encode(self, batch: Sequence[str]) -> np.ndarray:
        """Embed images.

        Parameters
        ----------
        batch : sequence of str, length n
            Image paths.

        Returns
        -------
        ndarray of shape (n, dim), float32, rows of unit norm (a flat image gives a zero row)
        """
        x = shrink_images(batch, self.size, color=self.color, workers=self.workers).reshape(len(batch), -1)
        x = x - x.mean(axis=1, keepdims=True)
        return l2_normalise(x)
