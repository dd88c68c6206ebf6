"""64-bit hashes of word n-grams, membership in sorted hash arrays, and verbatim runs from hits.

A word gets a stable 64-bit id (BLAKE2b of its UTF-8 bytes, 8-byte digest): the same word hashes
the same in every process, on every machine and in every run, so an index built by one worker can
be queried by another.  An n-gram's hash is the polynomial rolling hash of its words' ids
(:func:`sibscan.kernels.textalign.shingle_hashes`, mod 2**64): equal n-grams hash equal wherever they
occur.  Two distinct n-grams collide with probability about 2**-64, so a corpus of 10**10 n-grams
gives a false match to a query n-gram with probability about 5e-10.

Everything here is vectorised over a batch of documents concatenated with offsets; the only
per-word Python step is the dictionary lookup that maps a word to its id (the cache is per call,
so its memory is bounded by the batch, not the corpus).
"""
from __future__ import annotations

import hashlib
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .textalign import shingle_hashes, tokenize

__all__ = ["WordIdCache", "word_ids", "batch_word_ids", "ngram_hashes", "ngram_position_tags", "sorted_member",
           "sorted_lookup", "longest_hit_run", "longest_chained_run", "ngram_coverage"]

TAG_BITS = 16
_TAG_MASK = (1 << TAG_BITS) - 1
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads a document's digest over the top bits


def _word_id(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


class WordIdCache(dict):
    """Word -> 64-bit id memo; a missing word is hashed once (``map(cache.__getitem__, words)``
    runs at C speed for words seen before)."""

    def __missing__(self, word: str) -> int:
        h = self[word] = _word_id(word)
        return h


def word_ids(words: Sequence[str], cache: Optional[WordIdCache] = None) -> np.ndarray:
    """Stable 64-bit ids of words.

    Parameters
    ----------
    words : sequence of str
    cache : WordIdCache, optional
        Memo shared across calls (a batch's worth; the caller bounds its size).

    Returns
    -------
    ndarray of shape (len(words),), uint64
    """
    memo = WordIdCache() if cache is None else cache
    return np.fromiter(map(memo.__getitem__, words), np.uint64, len(words))


def batch_word_ids(texts: Iterable[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Tokenise texts (:func:`sibscan.kernels.textalign.tokenize`: NFKC, casefold, ``\\w+``) and map
    every word to its id.

    Returns
    -------
    ids : ndarray of shape (n_words,), uint64
        All documents' word ids, concatenated.
    offsets : ndarray of shape (n_docs + 1,), int64
        Document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``.
    """
    cache = WordIdCache()
    parts: List[np.ndarray] = []
    lengths = [0]
    for text in texts:
        w = tokenize(text)
        parts.append(word_ids(w, cache))
        lengths.append(len(w))
    ids = np.concatenate(parts) if parts else np.empty(0, np.uint64)
    return ids, np.cumsum(np.asarray(lengths, np.int64))


def ngram_hashes(ids: np.ndarray, offsets: np.ndarray, n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Hashes of every word n-gram that lies inside one document.

    Parameters
    ----------
    ids : ndarray of shape (n_words,), uint64
        Word ids of all documents, concatenated.
    offsets : ndarray of shape (n_docs + 1,), int64
    n : int
        Words per n-gram.

    Returns
    -------
    hashes : ndarray of shape (m,), uint64
        In document order, then position order.
    starts : ndarray of shape (m,), int64
        Position in ``ids`` of each n-gram's first word.
    """
    ids = np.asarray(ids, np.uint64)
    offsets = np.asarray(offsets, np.int64)
    if len(ids) < n:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    h = shingle_hashes(ids.view(np.int64), n)  # the rolling hash reads ids as 64-bit words
    lengths = np.diff(offsets)
    doc_end = np.repeat(offsets[1:], lengths)[: len(h)]  # end of the document each start lies in
    starts = np.arange(len(h), dtype=np.int64)
    ok = starts + n <= doc_end
    return h[ok], starts[ok]


def ngram_position_tags(hashes: np.ndarray, starts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """16-bit position tags of n-grams: ``(digest(document) + position) mod 2**16``.

    Within one document consecutive n-grams get consecutive tags, so two matched n-grams of a query
    at positions ``i`` and ``i + 1`` whose stored tags differ by exactly 1 lie next to each other in
    one document, up to a ``2**-16`` chance that two different documents' tags line up (the
    document digest is the wrapping sum of its n-gram hashes, mixed).  This is what lets an index
    that stores no positions report a verbatim run that really occurs in one document.

    Parameters
    ----------
    hashes : ndarray of shape (m,), uint64
        From :func:`ngram_hashes`.
    starts : ndarray of shape (m,), int64
        From :func:`ngram_hashes`.
    offsets : ndarray of shape (n_docs + 1,), int64

    Returns
    -------
    ndarray of shape (m,), uint16
    """
    hashes = np.asarray(hashes, np.uint64)
    if not len(hashes):
        return np.empty(0, np.uint16)
    offsets = np.asarray(offsets, np.int64)
    doc = np.searchsorted(offsets, starts, side="right") - 1
    first = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])  # n-grams are in document order
    with np.errstate(over="ignore"):
        digest = np.add.reduceat(hashes, first) * _MIX  # uint64 arithmetic wraps
    base = (digest >> np.uint64(64 - TAG_BITS)).astype(np.int64)
    pos = starts - offsets[doc]
    return ((np.repeat(base, np.diff(np.r_[first, len(hashes)])) + pos) & _TAG_MASK).astype(np.uint16)


def sorted_member(table: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Which ``queries`` occur in ``table``.

    Parameters
    ----------
    table : ndarray of shape (u,), uint64, sorted ascending
    queries : ndarray of shape (m,), uint64

    Returns
    -------
    ndarray of shape (m,), bool
    """
    queries = np.asarray(queries, np.uint64)
    if not len(table) or not len(queries):
        return np.zeros(len(queries), bool)
    pos = np.searchsorted(table, queries)
    pos[pos == len(table)] = len(table) - 1
    return np.asarray(table[pos] == queries)


def sorted_lookup(table: np.ndarray, tags: np.ndarray, queries: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Membership of ``queries`` in a sorted distinct ``table`` and the stored tag of each hit.

    Parameters
    ----------
    table : ndarray of shape (u,), uint64, sorted ascending, distinct
    tags : ndarray of shape (u,), uint16
    queries : ndarray of shape (m,), uint64

    Returns
    -------
    hit : ndarray of shape (m,), bool
    tag : ndarray of shape (m,), uint16 (0 where not hit)
    """
    queries = np.asarray(queries, np.uint64)
    if not len(table) or not len(queries):
        return np.zeros(len(queries), bool), np.zeros(len(queries), np.uint16)
    pos = np.searchsorted(table, queries)
    pos[pos == len(table)] = len(table) - 1
    hit = np.asarray(table[pos] == queries)
    return hit, np.where(hit, np.asarray(tags[pos]), 0).astype(np.uint16)


def longest_chained_run(hit: np.ndarray, tags: np.ndarray, n: int) -> Tuple[int, int]:
    """Longest verbatim word run of one text that lies inside one corpus document.

    Matched n-grams at ``s, s+1, …, s+r-1`` form a run only where each next stored tag is the
    previous one plus 1 (:func:`ngram_position_tags`: the same document, the next position), so
    the ``r + n - 1`` words are a contiguous passage of one document.  An index keeps one tag per
    distinct n-gram (its first occurrence), so a run whose n-grams also occur earlier in other
    documents is reported shorter than it is, never longer (except with probability ``2**-16`` per
    joined pair, when two documents' tags line up by chance).

    Parameters
    ----------
    hit : ndarray of shape (n_ngrams,), bool
        Whether the n-gram starting at each word position matched.
    tags : ndarray of shape (n_ngrams,), uint16
        The matched n-grams' stored tags (ignored where not hit).
    n : int

    Returns
    -------
    (length_words, start_word)
        ``(0, 0)`` when nothing matched; the first of equally long runs.
    """
    hit = np.asarray(hit, bool)
    if not hit.any():
        return 0, 0
    t = np.asarray(tags).astype(np.int64)
    link = hit[:-1] & hit[1:] & (((t[1:] - t[:-1]) & _TAG_MASK) == 1)
    begins = hit.copy()
    begins[1:] &= ~link
    seg = np.cumsum(begins) - 1
    lengths = np.bincount(seg[hit], minlength=int(begins.sum()))
    k = int(np.argmax(lengths))
    return int(lengths[k]) + n - 1, int(np.flatnonzero(begins)[k])


def longest_hit_run(hit: np.ndarray, n: int) -> Tuple[int, int]:
    """Longest verbatim word run implied by matched n-grams of one text.

    Consecutive matched n-grams starting at ``s, s+1, …, s+r-1`` cover ``r + n - 1`` words.  They
    may match in different corpus documents (the hashes do not say), so this is an upper bound on
    the longest passage found in one document; :func:`longest_chained_run` gives a run inside one
    document.

    Parameters
    ----------
    hit : ndarray of shape (n_ngrams,), bool
        Whether the n-gram starting at each word position matched.
    n : int

    Returns
    -------
    (length_words, start_word)
        ``(0, 0)`` when nothing matched.
    """
    hit = np.asarray(hit, bool)
    if not hit.any():
        return 0, 0
    padded = np.concatenate([[False], hit, [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    begin, end = edges[::2], edges[1::2]
    k = int(np.argmax(end - begin))  # first of the longest, deterministic
    return int(end[k] - begin[k]) + n - 1, int(begin[k])


def ngram_coverage(hit: np.ndarray, n: int, n_words: int) -> np.ndarray:
    """Words covered by at least one matched n-gram.

    Parameters
    ----------
    hit : ndarray of shape (n_words - n + 1,), bool
    n : int
    n_words : int

    Returns
    -------
    ndarray of shape (n_words,), bool
    """
    delta = np.zeros(n_words + 1, np.int64)
    h = np.asarray(hit, np.int64)
    delta[: len(h)] += h
    delta[n: n + len(h)] -= h
    return np.cumsum(delta[:n_words]) > 0
