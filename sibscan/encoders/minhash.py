"""``minhash``: MinHash signatures of text shingles as dense vectors whose cosine estimates Jaccard.

Each of ``num_perm`` signature slots is reduced to ``bits`` bits and one-hot encoded over
``2**bits`` values, *centred* (the chance level ``2**-bits`` subtracted) and scaled.  The inner
product of two such vectors is ``(m - num_perm / B) / (num_perm * (1 - 1/B))`` with ``m`` equal
slots and ``B = 2**bits``: an unbiased estimate of the Jaccard similarity of the shingle sets (the
random agreement of ``bits``-bit values cancels out), so cosine ~= Jaccard.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..errors import InputError
from ..kernels.minhash import EMPTY, char_ngram_hashes, fmix64, minhash_signatures, word_ngram_hashes
from ..kernels.textalign import normalise_text
from ..stats import check_int
from .base import Encoder, cpu_device, l2_normalise, register_encoder

__all__ = ["MinHashEncoder", "signatures_to_vectors"]

PREPROCESSING_VERSION = 1
_WORD = re.compile(r"\w+")


def signatures_to_vectors(sig: np.ndarray, bits: int) -> np.ndarray:
    """Centred one-hot embedding of MinHash signatures.

    Parameters
    ----------
    sig : ndarray of shape (n, num_perm), uint64
        Empty documents (all slots :data:`~sibscan.kernels.minhash.EMPTY`) get a zero row.
    bits : int
        Bits kept per slot; ``B = 2**bits`` values.

    Returns
    -------
    ndarray of shape (n, num_perm * 2**bits), float32
        Unit rows with ``u @ v`` an unbiased estimate of the Jaccard similarity.
    """
    n, num_perm = sig.shape
    B = 1 << bits
    value = (fmix64(sig) >> np.uint64(64 - bits)).astype(np.int64)
    scale = 1.0 / np.sqrt(num_perm * (1.0 - 1.0 / B))
    out = np.full((n, num_perm, B), -scale / B, dtype=np.float32)
    rows = np.arange(n)[:, None]
    slots = np.arange(num_perm)[None, :]
    out[rows, slots, value] += scale
    out = out.reshape(n, num_perm * B)
    out[(sig == EMPTY).all(axis=1)] = 0.0
    return out


@register_encoder
class MinHashEncoder(Encoder):
    """MinHash over character (default 5) or word shingles of normalised text."""

    name = "minhash"
    modality = "text"
    description = "MinHash (128 perms) of char 5-gram shingles as a centred one-hot vector; cosine ~= Jaccard"
    weight_free = True

    def __init__(
        self,
        num_perm: int = 128,
        bits: int = 5,
        shingle: str = "char",
        n: int = 5,
        seed: int = 1,
        *,
        device: str = "auto",
        batch_size: int = 1024,
    ) -> None:
        if shingle not in ("char", "word"):
            raise InputError(f"minhash: unknown shingle {shingle!r}; available: char, word")
        self.num_perm = check_int(num_perm, "minhash: num_perm", error=InputError)
        self.bits = check_int(bits, "minhash: bits", 1, 12, error=InputError)
        self.n = check_int(n, "minhash: n", error=InputError)
        self.shingle, self.seed = shingle, int(seed)
        self.device = cpu_device(device)
        self.batch_size = int(batch_size)
        self.dim = self.num_perm * (1 << self.bits)
        self.identity = (
            f"minhash/v{PREPROCESSING_VERSION} num_perm={self.num_perm} bits={self.bits} "
            f"shingle={self.shingle}{self.n} seed={self.seed} scheme=affine64 norm=nfkc-casefold-ws"
        )

    def signatures(self, batch: Sequence[str]) -> np.ndarray:
        """MinHash signatures, ndarray of shape (n, num_perm), uint64."""
        texts = [normalise_text(t) for t in batch]
        if self.shingle == "char":
            hashes, offsets = char_ngram_hashes(texts, self.n)
        else:
            hashes, offsets = word_ngram_hashes([_WORD.findall(t) for t in texts], self.n)
        return minhash_signatures(hashes, offsets, self.num_perm, self.seed)

    def encode(self, batch: Sequence[str]) -> np.ndarray:
        """Embed texts, as :meth:`NgramEncoder.encode` (shape (n, dim), unit rows; an empty text a zero row)."""
        return l2_normalise(signatures_to_vectors(self.signatures(batch), self.bits))
