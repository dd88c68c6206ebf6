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

__all__ = ["WordIdCache", "word_ids", "batch_word_ids", "ngram_hashes", "sorted_member", "longest_hit_run",
           "ngram_coverage"]


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


def longest_hit_run(hit: np.ndarray, n: int) -> Tuple[int, int]:
    """Longest verbatim word run implied by matched n-grams of one text.

    Consecutive matched n-grams starting at ``s, s+1, …, s+r-1`` cover ``r + n - 1`` words.  (They
    may match in different corpus documents; the hashes do not say.  The run is a lower bound on
    the longest single match whenever the matches come from one document, and exact at ``r = 1``.)

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
