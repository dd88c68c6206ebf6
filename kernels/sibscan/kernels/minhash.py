"""Hashed shingles and MinHash signatures, vectorised in numpy.

Strings are hashed to uint64 with a vectorised FNV-1a over their UTF-8 bytes followed by the
MurmurHash3 64-bit finaliser (``fmix64``); character and word n-grams are rolled up from those
hashes without slicing strings in Python.  MinHash follows datasketch's ``"affine64"`` scheme
exactly: each shingle hash is pre-mixed with ``fmix64`` and permutation ``k`` is
``a_k * h + b_k mod 2**64`` with odd ``a_k``, a bijection (no collisions added by the permutation).
The permutation parameters are drawn as datasketch draws them, so for the same shingle hashes and
seed the signatures equal ``datasketch.MinHash(scheme="affine64", hashfunc=...)`` bit for bit.

Every array of shingles is "ragged": one flat ``hashes`` array and ``offsets`` of shape
``(n_docs + 1,)`` such that document ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``.
"""
from __future__ import annotations

import hashlib
from typing import Sequence, Tuple

import numpy as np

__all__ = [
    "EMPTY",
    "char_ngram_hashes",
    "fmix64",
    "hash_strings",
    "jaccard_from_signatures",
    "minhash_permutations",
    "minhash_signatures",
    "word_ngram_hashes",
]

_U64 = np.uint64
_FNV_OFFSET = _U64(0xCBF29CE484222325)
_FNV_PRIME = _U64(0x100000001B3)
_ROLL = _U64(0x9E3779B97F4A7C15)  # odd multiplier for polynomial roll-ups of n-grams
#: the signature value of an empty document (no shingles): never equal to a real minimum
EMPTY = np.iinfo(np.uint64).max


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, an avalanching bijection on uint64 (wrapping arithmetic)."""
    h = np.asarray(h, dtype=_U64)
    with np.errstate(over="ignore"):
        h = h ^ (h >> _U64(33))
        h = h * _U64(0xFF51AFD7ED558CCD)
        h = h ^ (h >> _U64(33))
        h = h * _U64(0xC4CEB9FE1A85EC53)
        return h ^ (h >> _U64(33))


def hash_strings(strings: Sequence[str], chunk_bytes: int = 1 << 24, long_bytes: int = 256) -> np.ndarray:
    """Stable 64-bit hashes of strings (FNV-1a over UTF-8, then ``fmix64``).

    Parameters
    ----------
    strings : sequence of str, length n
    chunk_bytes : int
        Strings are grouped by length class (powers of two) and hashed a group at a time, padded to
        the group's longest string, about this many bytes per group (bounded memory).
    long_bytes : int
        Strings longer than this are hashed with BLAKE2b instead (one C call each beats a
        byte-column loop); still a fixed function of the string.

    Returns
    -------
    ndarray of shape (n,), uint64
    """
    encoded = [s.encode("utf-8") for s in strings]
    n = len(encoded)
    out = np.empty(n, dtype=_U64)
    if n == 0:
        return out
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    long_rows = np.flatnonzero(lengths > long_bytes)
    if len(long_rows):
        out[long_rows] = np.frombuffer(
            b"".join(hashlib.blake2b(encoded[i], digest_size=8).digest() for i in long_rows), dtype="<u8"
        )
    length_class = np.where(lengths > long_bytes, -1, np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64))
    for cls in np.unique(length_class[length_class >= 0]):
        rows_all = np.flatnonzero(length_class == cls)
        width = max(int(lengths[rows_all].max()), 1)
        step_rows = max(1, chunk_bytes // width)
        for start in range(0, len(rows_all), step_rows):
            idx = rows_all[start:start + step_rows]
            block = np.array([encoded[i] for i in idx], dtype=f"S{width}").view(np.uint8).reshape(len(idx), width)
            lens = lengths[idx]
            h = np.full(len(idx), _FNV_OFFSET, dtype=_U64)
            with np.errstate(over="ignore"):
                for j in range(width):
                    step = (h ^ block[:, j].astype(_U64)) * _FNV_PRIME
                    h = np.where(lens > j, step, h)
            # the length goes in too, so that trailing NUL bytes still change the hash
            out[idx] = fmix64(h ^ lens.astype(_U64))
    return out


def _roll(hashes: np.ndarray, doc: np.ndarray, n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Polynomial roll-up of ``n`` consecutive hashes that lie in the same document."""
    m = len(hashes) - n + 1
    if m <= 0:
        return np.empty(0, dtype=_U64), np.empty(0, dtype=np.int64)
    acc = np.zeros(m, dtype=_U64)
    with np.errstate(over="ignore"):
        for j in range(n):
            acc = acc * _ROLL + hashes[j:j + m]
    same = doc[: m] == doc[n - 1:]
    return fmix64(acc[same] ^ _U64(n)), doc[: m][same]


def _ragged(doc: np.ndarray, values: np.ndarray, n_docs: int) -> Tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(doc, minlength=n_docs)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return values, offsets


def _documents(docs: Sequence, n: int) -> Tuple[int, np.ndarray, np.ndarray]:
    """``(n_docs, length of each (n_docs,), document of each element (total,))`` of texts or token lists."""
    if n < 1:
        raise ValueError(f"n-gram length must be >= 1, got {n}")
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    return len(docs), lengths, np.repeat(np.arange(len(docs), dtype=np.int64), lengths)


def char_ngram_hashes(texts: Sequence[str], n: int = 5) -> Tuple[np.ndarray, np.ndarray]:
    """Hashes of every character ``n``-gram of each text (texts shorter than ``n`` give one
    shingle: the whole text, when not empty).

    Returns
    -------
    hashes : ndarray of shape (total,), uint64
    offsets : ndarray of shape (len(texts) + 1,), int64
    """
    n_docs, lengths, doc = _documents(texts, n)
    codes = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(_U64)
    codes = fmix64(codes + _U64(1))
    grams, gdoc = _roll(codes, doc, n)
    short = np.flatnonzero((lengths > 0) & (lengths < n))
    if len(short):
        extra = hash_strings([texts[i] for i in short])
        grams = np.concatenate([grams, extra])
        gdoc = np.concatenate([gdoc, short])
    order = np.argsort(gdoc, kind="stable")
    return _ragged(gdoc[order], grams[order], n_docs)


def word_ngram_hashes(token_lists: Sequence[Sequence[str]], n: int = 1) -> Tuple[np.ndarray, np.ndarray]:
    """Hashes of every word ``n``-gram of each token list (lists shorter than ``n`` give one
    shingle of all their words, when not empty).

    Returns
    -------
    hashes : ndarray of shape (total,), uint64
    offsets : ndarray of shape (len(token_lists) + 1,), int64
    """
    n_docs, lengths, doc = _documents(token_lists, n)
    word_hashes = hash_strings([t for tokens in token_lists for t in tokens])
    if n == 1:
        return _ragged(doc, word_hashes, n_docs)
    grams, gdoc = _roll(word_hashes, doc, n)
    short = np.flatnonzero((lengths > 0) & (lengths < n))
    if len(short):
        starts = np.concatenate([[0], np.cumsum(lengths)])[short]
        acc = np.zeros(len(short), dtype=_U64)
        with np.errstate(over="ignore"):
            for j in range(int(lengths[short].max())):
                live = lengths[short] > j
                acc = np.where(live, acc * _ROLL + word_hashes[np.minimum(starts + j, len(word_hashes) - 1)], acc)
        grams = np.concatenate([grams, fmix64(acc ^ _U64(n))])
        gdoc = np.concatenate([gdoc, short])
    order = np.argsort(gdoc, kind="stable")
    return _ragged(gdoc[order], grams[order], n_docs)


def minhash_permutations(num_perm: int, seed: int = 1) -> np.ndarray:
    """Permutation parameters ``(a, b)`` of shape (2, num_perm), uint64, ``a`` odd.

    Drawn exactly as datasketch's ``MinHash(scheme="affine64", seed=seed)`` draws them.
    """
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 63, num_perm, dtype=_U64) * _U64(2) + _U64(1)
    b = gen.randint(0, 1 << 64, num_perm, dtype=_U64)
    return np.array([a, b])


def minhash_signatures(
    hashes: np.ndarray,
    offsets: np.ndarray,
    num_perm: int = 128,
    seed: int = 1,
    block: int = 1 << 16,
) -> np.ndarray:
    """MinHash signatures of ragged sets of shingle hashes.

    Parameters
    ----------
    hashes : ndarray of shape (total,), uint64
        Shingle hashes of all documents, document after document.
    offsets : ndarray of shape (n_docs + 1,), int64
        Document ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``.
    num_perm : int
        Number of permutations (signature length).
    seed : int
        Seed of the permutations (datasketch-compatible).
    block : int
        Shingles per step; memory is about ``block * num_perm * 8`` bytes.

    Returns
    -------
    ndarray of shape (n_docs, num_perm), uint64
        Empty documents get :data:`EMPTY` in every slot.
    """
    hashes = np.asarray(hashes, dtype=_U64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n_docs = len(offsets) - 1
    a, b = minhash_permutations(num_perm, seed)
    out = np.full((n_docs, num_perm), EMPTY, dtype=_U64)
    if len(hashes) == 0:
        return out
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), np.diff(offsets))
    mixed = fmix64(hashes)
    for start in range(0, len(hashes), block):
        stop = min(start + block, len(hashes))
        with np.errstate(over="ignore"):
            phv = mixed[start:stop, None] * a[None, :] + b[None, :]
        d = doc_of[start:stop]
        # documents are contiguous: reduce each run of one document, then merge into out
        firsts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
        mins = np.minimum.reduceat(phv, firsts, axis=0)
        rows = d[firsts]
        out[rows] = np.minimum(out[rows], mins)
    return out


def jaccard_from_signatures(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Estimated Jaccard similarity: the fraction of equal slots, row by row.

    Parameters
    ----------
    sig_a, sig_b : ndarray of shape (n, num_perm), uint64

    Returns
    -------
    ndarray of shape (n,), float64
    """
    return (np.asarray(sig_a) == np.asarray(sig_b)).mean(axis=1)
