"""``ngram``: hashed word and character n-gram counts of normalised text (feature hashing).

Text is normalised (NKFC, case folding, whitespace collapsed) so that case and spacing changes do
not move an item.  Word n-grams (default 1-2, words = ``\\w+`` runs) and character n-grams (default
3-5, over the normalised string) are hashed with a signed hash into ``dim`` buckets; counts are
sublinear (``1 + log tf``), each family is L2-normalised, the families are added with equal weight,
and the sum is L2-normalised: cosine is a bag-of-n-grams similarity.

**Very long texts are embedded in segments.**  The n-gram hashes of a text cost about 150 bytes of
temporaries per character (a 44 MB single-line text peaked at 7.8 GB), so a normalised text longer
than ``max_chars`` (default 1,048,576 characters) is cut at spaces into segments of at most that
many characters, each segment is embedded on its own, and the text's row is the L2-normalised sum
of the segments' rows.  Memory then depends on ``max_chars``, not on the text; texts up to
``max_chars`` are embedded exactly as before.  The cap is part of the identity, and every text cut
is logged (logger ``sibscan.encoders``, INFO) with its length and its number of segments.
"""
from __future__ import annotations

import logging
import re
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError
from ..kernels.minhash import char_ngram_hashes, word_ngram_hashes
from ..kernels.textalign import normalise_text
from ..stats import check_int
from .base import Encoder, cpu_device, l2_normalise, register_encoder

__all__ = ["NgramEncoder", "feature_weights", "hashed_counts"]

PREPROCESSING_VERSION = 1
MAX_CHARS = 1 << 20  # longest normalised text embedded in one piece (its temporaries: ~150 MB)
_WORD = re.compile(r"\w+")
log = logging.getLogger("sibscan.encoders")


def text_segments(text: str, max_chars: int) -> List[str]:
    """``text`` cut into pieces of at most ``max_chars`` characters, at the last space before each
    limit where there is one (a word is cut only when it is longer than ``max_chars``)."""
    out: List[str] = []
    start, n = 0, len(text)
    while n - start > max_chars:
        cut = text.rfind(" ", start + 1, start + max_chars + 1)
        end = cut if cut > start else start + max_chars
        out.append(text[start:end])
        start = end + 1 if cut > start else end
    out.append(text[start:])
    return out


def feature_weights(hashes: np.ndarray, offsets: np.ndarray, sublinear: bool = True):
    """Distinct features of ragged shingle hashes with their term weights.

    Parameters
    ----------
    hashes : ndarray of shape (total,), uint64
    offsets : ndarray of shape (n + 1,), int64
    sublinear : bool
        Weight each distinct feature by ``1 + log(count)`` instead of ``count``.

    Returns
    -------
    doc : ndarray of shape (m,), int64
        Document of each distinct (document, feature) pair.
    feature : ndarray of shape (m,), uint64
    weight : ndarray of shape (m,), float64
    """
    n = len(offsets) - 1
    doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    order = np.lexsort((hashes, doc))
    h, d = hashes[order], doc[order]
    first = np.flatnonzero(np.r_[True, (h[1:] != h[:-1]) | (d[1:] != d[:-1])]) if len(h) else np.empty(0, np.int64)
    counts = np.diff(np.r_[first, len(h)]).astype(np.float64)
    weight = 1.0 + np.log(counts) if sublinear else counts
    return d[first], h[first], weight


def hashed_counts(doc: np.ndarray, feature: np.ndarray, weight: np.ndarray, n: int, dim: int) -> np.ndarray:
    """Signed feature hashing of sparse (document, feature, weight) entries into dense rows.

    Returns
    -------
    ndarray of shape (n, dim), float32 (not normalised)
    """
    bucket = (feature % np.uint64(dim)).astype(np.int64)
    # the sign comes from the top bit, independent of the bucket bits: collisions cancel on average
    sign = np.where((feature >> np.uint64(63)) == 1, -1.0, 1.0)
    out = np.bincount(doc * dim + bucket, weights=sign * weight, minlength=n * dim)
    return out.reshape(n, dim).astype(np.float32)


def _concat_ragged(parts):
    """Merge ragged arrays over the same documents into one ragged array (documents kept in order)."""
    hashes = [h for h, _ in parts]
    offsets = [o for _, o in parts]
    n = len(offsets[0]) - 1
    doc = np.concatenate([np.repeat(np.arange(n, dtype=np.int64), np.diff(o)) for o in offsets])
    order = np.argsort(doc, kind="stable")
    merged = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc, minlength=n), out=merged[1:])
    return np.concatenate(hashes)[order], merged


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
        max_chars: int = MAX_CHARS,
    ) -> None:
        self.dim = check_int(dim, "ngram: dim", 2, error=InputError)
        self.device = cpu_device(device)
        self.word_ngrams = _range(word_ngrams, "word_ngrams") if word_ngrams is not None else None
        self.char_ngrams = _range(char_ngrams, "char_ngrams") if char_ngrams is not None else None
        if self.word_ngrams is None and self.char_ngrams is None:
            raise InputError("ngram: word_ngrams and char_ngrams cannot both be None")
        self.sublinear = bool(sublinear)
        self.batch_size = int(batch_size)
        self.max_chars = check_int(max_chars, "ngram: max_chars", 16, error=InputError)
        fam = lambda r: "none" if r is None else f"{r[0]}-{r[1]}"  # noqa: E731
        self.identity = (
            f"ngram/v{PREPROCESSING_VERSION} dim={self.dim} word={fam(self.word_ngrams)} char={fam(self.char_ngrams)} "
            f"tf={'sublinear' if self.sublinear else 'raw'} norm=nfkc-casefold-ws hash=fnv1a-fmix64-signed "
            f"max_chars={self.max_chars}"
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
        long_rows = [i for i, t in enumerate(texts) if len(t) > self.max_chars]
        if not long_rows:
            return self._embed(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        short_rows = [i for i, t in enumerate(texts) if len(t) <= self.max_chars]
        if short_rows:
            out[short_rows] = self._embed([texts[i] for i in short_rows])
        for i in long_rows:  # one segment at a time: the temporaries are one segment's
            segments = text_segments(texts[i], self.max_chars)
            for segment in segments:
                out[i] += self._embed([segment])[0]
            log.info("ngram: a text of %s characters (normalised) was embedded in %d segments of at most %s "
                     "characters (max_chars)", f"{len(texts[i]):,}", len(segments), f"{self.max_chars:,}")
        return l2_normalise(out)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows of normalised texts, each embedded whole."""
        n = len(texts)
        families = []
        if self.word_ngrams is not None:
            tokens = [_WORD.findall(t) for t in texts]
            families.append([word_ngram_hashes(tokens, k) for k in range(self.word_ngrams[0], self.word_ngrams[1] + 1)])
        if self.char_ngrams is not None:
            families.append([char_ngram_hashes(texts, k) for k in range(self.char_ngrams[0], self.char_ngrams[1] + 1)])
        docs, feats, weights = [], [], []
        for parts in families:
            # n-grams of different n never share a hash (n is mixed in), so one family is one bag
            d, f, w = feature_weights(*_concat_ragged(parts), self.sublinear)
            # each family gets unit weight per document before the families are added
            norm = np.sqrt(np.bincount(d, weights=w * w, minlength=n))
            docs.append(d)
            feats.append(f)
            weights.append(w / np.maximum(norm[d], 1e-12))
        out = hashed_counts(np.concatenate(docs), np.concatenate(feats), np.concatenate(weights), n, self.dim)
        return l2_normalise(out)
