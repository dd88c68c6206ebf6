"""``ngram``: hashed word and character n-gram counts of normalised text (feature hashing).

Text is normalised (NKFC, case folding, whitespace collapsed) so that case and spacing changes do
not move an item.  Word n-grams (default 1-2, words = ``\\w+`` runs) and character n-grams (default
3-5, over the normalised string) are hashed with a signed hash into ``dim`` buckets; counts are
sublinear (``1 + log tf``), each family is L2-normalised, the families are added with equal weight,
and the sum is L2-normalised: cosine is a bag-of-n-grams similarity.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence, Tuple

import numpy as np

from ..device import resolve_device
from ..errors import InputError
from ..kernels.minhash import char_ngram_hashes, word_ngram_hashes
from ..loaders.text import normalise_text
from .base import Encoder, l2_normalise, register_encoder

__all__ = ["NgramEncoder", "hashed_counts"]

PREPROCESSING_VERSION = 1
_WORD = re.compile(r"\w+")


def hashed_counts(hashes: np.ndarray, offsets: np.ndarray, dim: int, sublinear: bool = True) -> np.ndarray:
    """Signed feature hashing of ragged shingle hashes into dense rows.

    Parameters
    ----------
    hashes : ndarray of shape (total,), uint64
    offsets : ndarray of shape (n + 1,), int64
    dim : int
        Buckets.
    sublinear : bool
        Weight each distinct feature by ``1 + log(count)`` instead of ``count``.

    Returns
    -------
    ndarray of shape (n, dim), float32 (not normalised)
    """
    n = len(offsets) - 1
    doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    if len(hashes) == 0:
        return np.zeros((n, dim), dtype=np.float32)
    order = np.lexsort((hashes, doc))
    h, d = hashes[order], doc[order]
    first = np.flatnonzero(np.r_[True, (h[1:] != h[:-1]) | (d[1:] != d[:-1])])
    counts = np.diff(np.r_[first, len(h)]).astype(np.float64)
    weight = 1.0 + np.log(counts) if sublinear else counts
    hf, df = h[first], d[first]
    bucket = (hf % np.uint64(dim)).astype(np.int64)
    # the sign comes from the top bit, independent of the bucket bits: collisions cancel on average
    sign = np.where((hf >> np.uint64(63)) == 1, -1.0, 1.0)
    out = np.bincount(df * dim + bucket, weights=sign * weight, minlength=n * dim)
    return out.reshape(n, dim).astype(np.float32)


def _range(value, what: str) -> Tuple[int, int]:
    lo, hi = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
    if not (1 <= int(lo) <= int(hi)):
        raise InputError(f"ngram: {what} must be (min, max) with 1 <= min <= max, got {value!r}")
    return int(lo), int(hi)


@register_encoder
class NgramEncoder(Encoder):
    """Hashed word + character n-gram counts, sublinear tf, L2."""

    name = "ngram"
    modality = "text"
    description = "hashed word 1-2-gram + char 3-5-gram counts (normalised text, sublinear tf), 4096 dims"
    weight_free = True

    def __init__(
        self,
        dim: int = 4096,
        word_ngrams: Tuple[int, int] = (1, 2),
        char_ngrams: Optional[Tuple[int, int]] = (3, 5),
        sublinear: bool = True,
        *,
        device: str = "auto",
        batch_size: int = 1024,
    ) -> None:
        if not isinstance(dim, (int, np.integer)) or dim < 2:
            raise InputError(f"ngram: dim must be an integer >= 2, got {dim!r}")
        resolve_device(device)  # validates the policy; the work itself is numpy on the CPU
        self.device = "cpu"
        self.dim = int(dim)
        self.word_ngrams = _range(word_ngrams, "word_ngrams") if word_ngrams is not None else None
        self.char_ngrams = _range(char_ngrams, "char_ngrams") if char_ngrams is not None else None
        if self.word_ngrams is None and self.char_ngrams is None:
            raise InputError("ngram: word_ngrams and char_ngrams cannot both be None")
        self.sublinear = bool(sublinear)
        self.batch_size = int(batch_size)
        fam = lambda r: "none" if r is None else f"{r[0]}-{r[1]}"  # noqa: E731
        self.identity = (
            f"ngram/v{PREPROCESSING_VERSION} dim={self.dim} word={fam(self.word_ngrams)} char={fam(self.char_ngrams)} "
            f"tf={'sublinear' if self.sublinear else 'raw'} norm=nfkc-casefold-ws hash=fnv1a-fmix64-signed"
        )

    def encode(self, batch: Sequence[str]) -> np.ndarray:
        """Embed texts.

        Parameters
        ----------
        batch : sequence of str, length n

        Returns
        -------
        ndarray of shape (n, dim), float32, rows of unit norm (an empty text gives a zero row)
        """
        texts = [normalise_text(t) for t in batch]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if self.word_ngrams is not None:
            tokens = [_WORD.findall(t) for t in texts]
            fam = np.zeros_like(out)
            for n in range(self.word_ngrams[0], self.word_ngrams[1] + 1):
                fam += hashed_counts(*word_ngram_hashes(tokens, n), self.dim, self.sublinear)
            out += l2_normalise(fam)
        if self.char_ngrams is not None:
            fam = np.zeros_like(out)
            for n in range(self.char_ngrams[0], self.char_ngrams[1] + 1):
                fam += hashed_counts(*char_ngram_hashes(texts, n), self.dim, self.sublinear)
            out += l2_normalise(fam)
        return l2_normalise(out)
