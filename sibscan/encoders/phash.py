"""``phash``: the DCT perceptual hash as a ±1 vector (cosine = 1 - 2 * Hamming / bits)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..device import resolve_device
from ..errors import InputError
from ..kernels.phash import bits_to_vectors, phash_bits
from .base import Encoder, register_encoder
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
        if not isinstance(hash_size, (int, np.integer)) or hash_size < 2:
            raise InputError(f"phash: hash_size must be an integer >= 2, got {hash_size!r}")
        if not isinstance(highfreq, (int, np.integer)) or highfreq < 1:
            raise InputError(f"phash: highfreq must be an integer >= 1, got {highfreq!r}")
        resolve_device(device)  # validates the policy; the work itself is numpy on the CPU
        self.device = "cpu"
        self.hash_size = int(hash_size)
        self.highfreq = int(highfreq)
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
        """Embed images.

        Parameters
        ----------
        batch : sequence of str, length n
            Image paths.

        Returns
        -------
        ndarray of shape (n, dim), float32, entries ±1/sqrt(dim)
        """
        return bits_to_vectors(self.bits(batch))
