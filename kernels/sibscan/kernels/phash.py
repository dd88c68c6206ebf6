"""DCT perceptual hash, batched in numpy.

The classic pHash: a grayscale image shrunk to ``size x size`` (``size = hash_size * highfreq``,
32 x 32 by default), a 2-D DCT-II, the ``hash_size x hash_size`` lowest frequencies, and one bit per
coefficient: above the block's median or not.  As a ±1 vector scaled to unit length, the cosine of
two hashes is ``1 - 2 * hamming / bits``, so the embedding search finds Hamming neighbours.
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["dct_matrix", "phash_bits", "bits_to_vectors", "hamming_to_cosine"]


@functools.lru_cache(maxsize=8)
def dct_matrix(n: int) -> np.ndarray:
    """Orthonormal DCT-II matrix ``D`` of shape (n, n): ``D @ x`` is ``scipy.fft.dct(x, norm="ortho")``."""
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    d = np.cos(np.pi * (2 * i + 1) * k / (2 * n)) * np.sqrt(2.0 / n)
    d[0] /= np.sqrt(2.0)
    d.setflags(write=False)
    return d


def phash_bits(gray: np.ndarray, hash_size: int = 8) -> np.ndarray:
    """Perceptual-hash bits of a batch of small grayscale images.

    Parameters
    ----------
    gray : ndarray of shape (n, s, s)
        Grayscale images already shrunk to ``s x s`` (``s >= hash_size``; 32 for the classic hash).
    hash_size : int
        The hash keeps the ``hash_size x hash_size`` lowest DCT frequencies.

    Returns
    -------
    ndarray of shape (n, hash_size * hash_size), bool
        Row-major bits: coefficient greater than the median of its block.
    """
    gray = np.asarray(gray, dtype=np.float64)
    if gray.ndim != 3 or gray.shape[1] != gray.shape[2]:
        raise ValueError(f"expected square images of shape (n, s, s), got {gray.shape}")
    s = gray.shape[1]
    if s < hash_size:
        raise ValueError(f"images of {s}x{s} are smaller than hash_size={hash_size}")
    d = dct_matrix(s)[:hash_size]  # only the low frequencies are needed
    low = np.einsum("ai,nij,bj->nab", d, gray, d, optimize=True).reshape(len(gray), -1)
    median = np.median(low, axis=1, keepdims=True)
    return low > median


def bits_to_vectors(bits: np.ndarray) -> np.ndarray:
    """±1 vectors of unit length from bits.

    Parameters
    ----------
    bits : ndarray of shape (n, b), bool

    Returns
    -------
    ndarray of shape (n, b), float32
        ``(2 * bits - 1) / sqrt(b)``, so that ``u @ v = 1 - 2 * hamming(u, v) / b``.
    """
    bits = np.asarray(bits, dtype=bool)
    b = bits.shape[1]
    return (np.where(bits, 1.0, -1.0) / np.sqrt(b)).astype(np.float32)


def hamming_to_cosine(hamming: np.ndarray, bits: int) -> np.ndarray:
    """Cosine of two ±1 hash vectors from their Hamming distance: ``1 - 2 * hamming / bits``."""
    return 1.0 - 2.0 * np.asarray(hamming, dtype=np.float64) / bits
