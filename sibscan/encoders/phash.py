"""``phash``: the DCT perceptual hash as a ±1 vector (cosine = 1 - 2 * Hamming / bits)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import InputError
from ..kernels.phash import bits_to_vectors, phash_bits
from ..stats import check_int
from .base import Encoder, cpu_device, register_encoder
from .pixels import _pil_available, shrink_images

__all__ = ["PHashEncoder"]

PREPROCESSING_VERSION = 1


@register_encoder
class PHashEncoder(Encoder):
    """pHash: grayscale, shrunk to ``hash_size * highfreq`` square (Lanczos), 2-D DCT, the
    ``hash_size x hash_size`` lowest frequencies against their median."""

    name = "phash"
    modality = "image"
    description = "DCT perceptual hash (default 64 bits) as a +-1 vector; cosine = 1 - 2*Hamming/bits"
    weight_free = True

    def __init__(
        self,
        hash_size: int = 8,
        highfreq: int = 4,
        *,
        device: str = "auto",
        batch_size: int = 256,
        workers: Optional[int] = None,
    ) -> None:
        self.hash_size = check_int(hash_size, "phash: hash_size", 2, error=InputError)
        self.highfreq = check_int(highfreq, "phash: highfreq", error=InputError)
        self.device = cpu_device(device)
        self.batch_size = int(batch_size)
        self.workers = workers
        self.dim = self.hash_size * self.hash_size
        self.identity = (
            f"phash/v{PREPROCESSING_VERSION} hash_size={self.hash_size} highfreq={self.highfreq} "
            "gray=L resample=lanczos dct=ii-ortho bits>median"
        )

    @classmethod
    def available(cls):
        return _pil_available()

    def bits(self, batch: Sequence[str]) -> np.ndarray:
        """The hashes as bits, ndarray of shape (n, dim), bool."""
        side = self.hash_size * self.highfreq
        gray = shrink_images(batch, side, color=False, resample="lanczos", workers=self.workers)
        return phash_bits(gray, self.hash_size)

    def encode(self, batch: Sequence[str]) -> np.ndarray:
        """Embed the images at the paths ``batch`` (length n): ndarray of shape (n, dim), float32, entries
        ±1/sqrt(dim)."""
        return bits_to_vectors(self.bits(batch))
