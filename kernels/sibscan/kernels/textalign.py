"""Text primitives (private): normalisation, word tokens, verbatim runs, word LCS, shingles, word diff.

Shared by the exact text fingerprint (:func:`normalise_text`), the ``textalign`` verifier (runs,
LCS, boilerplate shingles; see :mod:`sibscan.verify.text` for how it scores), the weight-free text
encoders, and the side-by-side views of the labelling page and the HTML report (:func:`word_diff`).
Words are compared the way the verifier compares them: NFKC, casefolded.

* :func:`longest_common_run` — the longest stretch of equal consecutive tokens, by a binary search
  over the run length with 64-bit rolling hashes of all token n-grams (numpy, O(n) per step:
  the shorter side's grams in a bit table, the longer side's looked up);
* :func:`lcs_length` — the longest common subsequence, bit-parallel (Hyyrö's algorithm on Python
  integers: ``min(n_a, n_b)`` steps of ``max(n_a, n_b) / 64`` machine words; 10,000 x 10,000 words
  in tens of ms);
* :func:`shingle_document_frequency` — in how many documents each word shingle occurs (vectorised);
* :func:`batch_token_ids` — the words of many texts as 63-bit ids in one vectorised pass (the
  words :func:`tokenize` finds, each id a hash of the word's UTF-8 bytes: no vocabulary to build,
  equal in every split and process).
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..progress import bar

__all__ = ["batch_token_ids", "boilerplate_mask", "lcs_length", "longest_common_run", "normalise_text",
           "shingle_document_frequency", "shingle_hashes", "tokenize", "word_diff", "word_id_reference"]

_WORD = re.compile(r"\w+")
_WS = re.compile(r"\s+")
_NONWORD = re.compile(r"\W+")
# bytes that can be inside a word once non-word characters are spaces: ASCII \w and UTF-8 of the rest
_WORD_BYTE = np.zeros(256, bool)
_WORD_BYTE[[ord(c) for c in "0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"]] = True
_WORD_BYTE[0x80:] = True
_TOKEN_BYTES = (1 << 21) - (1 << 12)  # bytes hashed at a time: a chunk's powers fit a 2**21 table (~16 MB)
_P = np.uint64(0x9E3779B97F4A7C15)  # odd: invertible mod 2**64
_CHUNK_WORDS = 1 << 22  # database words hashed at a time (bounds the temporaries)
_HORNER_MAX = 16  # shingles up to this many words are hashed by Horner's rule, longer ones from prefix sums
_ALONE_WORDS = 1 << 16  # a document this long is counted in a chunk of its own (one plain sort, no lexsort)


def normalise_text(text: str) -> str:
    """Unicode NFKC, case folding, whitespace runs collapsed to one space, ends stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def tokenize(text: str) -> List[str]:
    """Words of ``text`` after NFKC normalisation and casefolding."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


_POWERS = np.ones(1, np.uint64)  # P**i, grown on demand (shared by every hash of this module)
_INV_POWERS = np.ones(1, np.uint64)  # P**-i (mod 2**64)
_CACHE_POWERS = 1 << 22  # longest table kept between calls (4 M entries: 64 MB for both)


def _power_table(base: int, n: int) -> np.ndarray:
    """``base**i`` (mod 2**64) for ``i < n`` by doubling (``log2 n`` vectorised products)."""
    out = np.empty(max(n, 1), np.uint64)
    out[0] = 1
    k = 1
    with np.errstate(over="ignore"):
        while k < n:
            m = min(k, n - k)
            out[k:k + m] = out[:m] * np.uint64(pow(base, k, 2**64))
            k += m
    return out[:n]


def _powers(n: int) -> Tuple[np.ndarray, np.ndarray]:
    """``P**i`` and ``P**-i`` (mod 2**64) for ``i < n``, each (n,) uint64."""
    global _POWERS, _INV_POWERS
    if len(_POWERS) >= n:
        return _POWERS[:n], _INV_POWERS[:n]
    want = n
    if n <= _CACHE_POWERS:  # grow to a power of two: calls with slowly rising n do not recompute
        n = min(_CACHE_POWERS, max(1 << (n - 1).bit_length(), 1 << 16))
    powers = _power_table(int(_P), n)
    inv_powers = _power_table(pow(int(_P), -1, 2**64), n)
    if n <= _CACHE_POWERS:
        _POWERS, _INV_POWERS = powers, inv_powers
    return powers[:want], inv_powers[:want]


def _prefix_hashes(ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Prefix hashes ``H[i] = sum_{j<i} (ids[j] + 1) * P**(i - j)`` (mod 2**64), vectorised,
    and the powers ``P**i``; both of shape (n + 1,)."""
    n = len(ids)
    powers, inv_powers = _powers(n + 1)
    with np.errstate(over="ignore"):
        acc = np.zeros(n + 1, np.uint64)
        acc[1:] = np.cumsum((ids.astype(np.uint64) + np.uint64(1)) * inv_powers[:n], dtype=np.uint64)
        return powers * acc, powers


def _horner_grams(ids: np.ndarray, length: int) -> np.ndarray:
    """The hashes :func:`_gram_hashes` gives every ``length``-gram, by Horner's rule over ``length``
    shifted views (no power tables, no prefix sums: cheaper for the short shingles)."""
    n = len(ids) - length + 1
    with np.errstate(over="ignore"):
        x = ids.astype(np.uint64) + np.uint64(1)
        h = np.zeros(n, np.uint64)
        for t in range(length):
            h += x[t:t + n]
            h *= _P
    return h


def _gram_hashes(prefix: np.ndarray, powers: np.ndarray, length: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return prefix[length:] - prefix[:-length] * powers[length]


def longest_common_run(a: np.ndarray, b: np.ndarray) -> Tuple[int, int, int]:
    """Longest stretch of equal consecutive tokens in ``a`` and ``b``.

    A binary search over the run length.  Per step the shorter side's n-gram hashes mark a bit
    table (about 64 slots per gram, by the hashes' high bits) and the longer side's n-grams are
    looked up in it; only table hits are sorted and compared exactly.  After a length is found, only the longer
    side's positions that matched it are tried for longer runs.  Cost: O(n_long) numpy work per
    step and ``log2(n_short)`` steps, so a 200-word text against a 1-million-word one takes tens
    of milliseconds.

    Parameters
    ----------
    a, b : ndarray of shape (n_a,), (n_b,), integer token ids

    Returns
    -------
    (length, start_a, start_b)
        ``a[start_a:start_a + length] == b[start_b:start_b + length]``; ``(0, 0, 0)`` if none.
    """
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if not len(a) or not len(b):
        return 0, 0, 0
    swap = len(a) > len(b)
    short, long_ = (b, a) if swap else (a, b)
    ps, powers = _prefix_hashes(short)
    pl, _ = _prefix_hashes(long_)
    bits = min(24, max(10, int(len(short)).bit_length() + 6))
    table = np.zeros(1 << bits, bool)
    shift = np.uint64(64 - bits)
    cand: Optional[np.ndarray] = None  # starts in long_ that can still begin a longer run (None: all)

    def find(length: int):
        hs = _gram_hashes(ps, powers, length)
        with np.errstate(over="ignore"):
            if cand is None:
                starts = None
                hl = _gram_hashes(pl, powers, length)
            else:
                starts = cand[cand <= len(long_) - length]
                hl = pl[starts + length] - pl[starts] * powers[length]
        table[:] = False
        table[hs >> shift] = True
        maybe = np.flatnonzero(table[hl >> shift])  # the longer side's grams that may occur in the shorter
        if not len(maybe):
            return None, None
        table[:] = False
        table[hl[maybe] >> shift] = True
        order = np.flatnonzero(table[hs >> shift])  # and the shorter side's grams they may equal
        order = order[np.argsort(hs[order], kind="stable")]
        sorted_hs = hs[order]
        at = np.minimum(np.searchsorted(sorted_hs, hl[maybe]), len(order) - 1)
        equal = sorted_hs[at] == hl[maybe]
        hits, at = maybe[equal], at[equal]
        hit_starts = hits if starts is None else starts[hits]
        for k in range(len(hits)):  # a hash collision is possible in principle: check the words
            i, j = int(order[at[k]]), int(hit_starts[k])
            if np.array_equal(short[i:i + length], long_[j:j + length]):
                return (j, i) if swap else (i, j), hit_starts
        return None, None

    lo, hi, best = 0, len(short), (0, 0)
    while lo < hi:  # invariant: a run of length lo exists; none longer than hi
        mid = (lo + hi + 1) // 2
        hit, starts = find(mid)
        if hit is None:
            hi = mid - 1
        else:  # a longer run starts where a run of length mid does
            lo, best, cand = mid, hit, starts
    return lo, best[0], best[1]


def shingle_hashes(ids: np.ndarray, shingle: int) -> np.ndarray:
    """Rolling hashes of every ``shingle``-word window of one token sequence.

    Parameters
    ----------
    ids : ndarray of shape (n,), integer token ids
    shingle : int

    Returns
    -------
    ndarray of shape (max(0, n - shingle + 1),), uint64
        The hash of ``ids[i:i + shingle]`` at ``i``; equal windows hash equal wherever they are.
    """
    ids = np.asarray(ids, np.int64)
    if len(ids) < shingle:
        return np.empty(0, np.uint64)
    if shingle <= _HORNER_MAX:
        return _horner_grams(ids, shingle)
    prefix, powers = _prefix_hashes(ids)
    return _gram_hashes(prefix, powers, shingle)


def shingle_document_frequency(ids: np.ndarray, offsets: np.ndarray, shingle: int,
                               progress: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """In how many documents each word ``shingle``-gram occurs.

    Documents with identical word sequences count once.  Vectorised: the documents are hashed
    in chunks of about 4 M words over their concatenation, each document's distinct shingles
    kept (one ``lexsort``), and the kept hashes counted with one ``np.unique``.

    Parameters
    ----------
    ids : ndarray of shape (n_words,), integer
        The token ids of all documents, concatenated.
    offsets : ndarray of shape (n_docs + 1,), int64
        Document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``.
    shingle : int
        Words per shingle.

    Returns
    -------
    (hashes, df)
        ``hashes`` (u,) uint64, sorted, distinct shingle hashes; ``df`` (u,) int64, the number of
        distinct documents holding each.
    """
    ids = np.asarray(ids, np.int64)
    offsets = np.asarray(offsets, np.int64)
    n_docs = len(offsets) - 1
    lengths = np.diff(offsets)
    doc_hash = np.zeros(n_docs, np.uint64)
    kept_h: List[np.ndarray] = []
    kept_d: List[np.ndarray] = []
    # chunk boundaries on document edges, about _CHUNK_WORDS words each
    starts = np.searchsorted(offsets, np.arange(0, offsets[-1], _CHUNK_WORDS), side="right") - 1
    alone = np.flatnonzero(lengths >= _ALONE_WORDS)
    edges = np.unique(np.concatenate([[0], starts, alone, alone + 1, [n_docs]]).clip(0, n_docs))
    chunks = list(zip(edges[:-1], edges[1:]))
    with bar(len(chunks), "textalign: boilerplate shingles", "chunk", enabled=progress, transient=True) as progress_bar:
        for c0, c1 in chunks:
            progress_bar.update()
            w0, w1 = offsets[c0], offsets[c1]
            if w1 == w0:
                continue
            prefix, powers = _prefix_hashes(ids[w0:w1])
            local = offsets[c0:c1 + 1] - w0
            with np.errstate(over="ignore"):
                doc_hash[c0:c1] = prefix[local[1:]] - prefix[local[:-1]] * powers[lengths[c0:c1]]
            if w1 - w0 < shingle:
                continue
            h = _gram_hashes(prefix, powers, shingle)  # start i = local word position
            if c1 - c0 == 1:  # one document: its distinct shingles by one (fast, unstable) sort
                h = np.sort(h)
                new = np.ones(len(h), bool)
                new[1:] = h[1:] != h[:-1]
                kept_h.append(h[new])
                kept_d.append(np.full(int(new.sum()), c0, np.int64))
                continue
            doc = np.repeat(np.arange(c0, c1, dtype=np.int64), lengths[c0:c1])[: len(h)]
            ok = np.arange(len(h)) + shingle <= offsets[doc + 1] - w0  # window inside its document
            h, doc = h[ok], doc[ok]
            order = np.lexsort((h, doc))
            h, doc = h[order], doc[order]
            new = np.ones(len(h), bool)
            new[1:] = (h[1:] != h[:-1]) | (doc[1:] != doc[:-1])
            kept_h.append(h[new])
            kept_d.append(doc[new])
    if not kept_h:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    # identical documents (same hash and length) count once: keep the first of each
    _, first = np.unique(np.stack([doc_hash, lengths.astype(np.uint64)], axis=1), axis=0, return_index=True)
    distinct = np.zeros(n_docs, bool)
    distinct[first] = True
    h, doc = np.concatenate(kept_h), np.concatenate(kept_d)
    hashes, df = np.unique(h[distinct[doc]], return_counts=True)
    return hashes, df.astype(np.int64)


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser (a bijection): spreads a polynomial hash over all bits."""
    with np.errstate(over="ignore"):
        h = h ^ (h >> np.uint64(33))
        h = h * np.uint64(0xFF51AFD7ED558CCD)
        h = h ^ (h >> np.uint64(33))
        h = h * np.uint64(0xC4CEB93FE53B4A3B)
        return h ^ (h >> np.uint64(33))


def _word_hashes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """63-bit ids of the byte strings ``data[starts[k]:ends[k]]`` (polynomial hash, mixed, top bit
    cleared so an id is a non-negative int64), hashed about ``_TOKEN_BYTES`` bytes at a time."""
    out = np.empty(len(starts), np.int64)
    k = 0
    while k < len(starts):
        k1 = max(k + 1, int(np.searchsorted(starts, starts[k] + _TOKEN_BYTES, side="left")))
        b0, b1 = int(starts[k]), int(ends[k1 - 1])
        prefix, powers = _prefix_hashes(data[b0:b1])
        s, e = starts[k:k1] - b0, ends[k:k1] - b0
        with np.errstate(over="ignore"):
            h = prefix[e] - prefix[s] * powers[e - s]
        out[k:k1] = (_fmix64(h) >> np.uint64(1)).view(np.int64)
        k = k1
    return out


def word_id_reference(word: str) -> int:
    """The id :func:`batch_token_ids` gives ``word`` (one word, pure Python; the tests' reference)."""
    p, m = int(_P), (1 << 64) - 1
    h = 0
    for byte in word.encode("utf-8"):
        h = ((h + byte + 1) * p) & m
    for mul in (0xFF51AFD7ED558CCD, 0xC4CEB93FE53B4A3B):
        h ^= h >> 33
        h = (h * mul) & m
    h ^= h >> 33
    return h >> 1


def batch_token_ids(texts: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """The words of every text (exactly :func:`tokenize`'s) as ids, vectorised over the bytes.

    Each text is normalised (NFKC, casefolded) and, if it is not ASCII, its non-word runs are
    replaced by spaces with one ``re.sub``; the texts are joined with spaces as UTF-8 bytes, word
    bytes are classified with a lookup table, and each word's id is a 64-bit polynomial hash of
    its bytes (mixed, top bit cleared).  No Python object is made per word: a 1-million-word text
    costs a few numpy passes over its bytes instead of a million strings and dictionary lookups.
    Distinct words get equal ids with probability about ``n_distinct**2 / 2**64``.

    Parameters
    ----------
    texts : sequence of str, length n_docs

    Returns
    -------
    ids : ndarray of shape (n_words,), int64, non-negative
        All documents' word ids concatenated; each equals :func:`word_id_reference` of the word
        :func:`tokenize` finds there.
    offsets : ndarray of shape (n_docs + 1,), int64
        Document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``.
    """
    parts: List[bytes] = []
    for text in texts:
        norm = unicodedata.normalize("NFKC", text).casefold()
        parts.append(norm.encode("ascii") if norm.isascii() else _NONWORD.sub(" ", norm).encode("utf-8"))
    n_docs = len(parts)
    if not n_docs:
        return np.empty(0, np.int64), np.zeros(1, np.int64)
    doc_start = np.zeros(n_docs, np.int64)  # byte where each document starts in the joined bytes
    np.cumsum(np.fromiter(map(len, parts), np.int64, n_docs)[:-1] + 1, out=doc_start[1:])
    data = np.frombuffer(b" ".join(parts), np.uint8)
    del parts
    is_word = np.zeros(len(data) + 2, np.int8)
    is_word[1:-1] = _WORD_BYTE[data]
    edges = np.flatnonzero(np.diff(is_word))
    del is_word
    starts, ends = edges[0::2], edges[1::2]
    offsets = np.zeros(n_docs + 1, np.int64)
    offsets[1:] = np.searchsorted(starts, np.r_[doc_start[1:], len(data) + 1], side="left")
    return _word_hashes(data, starts, ends), offsets


def boilerplate_mask(ids: np.ndarray, boilerplate: np.ndarray, shingle: int) -> np.ndarray:
    """Which words of a text lie inside a boilerplate shingle.

    Parameters
    ----------
    ids : ndarray of shape (n,), integer token ids
    boilerplate : ndarray of shape (u,), uint64, sorted
        Hashes of the boilerplate shingles.
    shingle : int

    Returns
    -------
    ndarray of shape (n,), bool
    """
    n = len(ids)
    h = shingle_hashes(ids, shingle)
    if not len(h) or not len(boilerplate):
        return np.zeros(n, bool)
    pos = np.minimum(np.searchsorted(boilerplate, h), len(boilerplate) - 1)
    hit = (boilerplate[pos] == h).astype(np.int64)
    delta = np.zeros(n + 1, np.int64)
    delta[: len(h)] += hit
    delta[shingle: shingle + len(h)] -= hit
    return np.cumsum(delta[:n]) > 0


def _token_ids(a: Sequence, b: Sequence) -> Tuple[np.ndarray, np.ndarray]:
    """Both sequences as int64 id arrays (integer arrays kept; other tokens mapped by one dict)."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.dtype.kind in "iu" and b_arr.dtype.kind in "iu":
        return a_arr.astype(np.int64, copy=False), b_arr.astype(np.int64, copy=False)
    vocab: Dict = {}
    for seq in (a, b):
        new = [t for t in dict.fromkeys(seq) if t not in vocab]
        vocab.update(zip(new, range(len(vocab), len(vocab) + len(new))))
    return (np.fromiter(map(vocab.__getitem__, a), np.int64, len(a)),
            np.fromiter(map(vocab.__getitem__, b), np.int64, len(b)))


def lcs_length(a: Sequence, b: Sequence) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel).

    Hyyrö (2004): ``V`` holds one bit per position of the longer sequence; per token of the
    shorter, ``U = V & match``, ``V = (V + U) | (V - U)``; the LCS is the number of zero bits of
    ``V``.  Cost: ``min(n_a, n_b)`` steps on integers of ``max(n_a, n_b)`` bits; the match masks
    are built only for the shorter side's distinct tokens, from numpy bit buffers (a 200-word text
    against a 1-million-word one takes tens of milliseconds; callers bound ``n_a * n_b``).

    Parameters
    ----------
    a, b : sequence of shape (n_a,), (n_b,)
        Token ids (integer arrays or lists) or any hashable tokens.
    """
    if not len(a) or not len(b):
        return 0
    a, b = _token_ids(a, b)
    if len(a) > len(b):
        a, b = b, a  # iterate over the shorter; bits over the longer
    n = len(b)
    toks = np.unique(a)
    order = np.flatnonzero(np.isin(b, toks))  # positions of b whose token occurs in a
    order = order[np.argsort(b[order], kind="stable")]
    sorted_b = b[order]
    lo, hi = np.searchsorted(sorted_b, toks, "left"), np.searchsorted(sorted_b, toks, "right")
    masks: Dict[int, int] = {}
    buf = np.zeros((n + 7) // 8, np.uint8)
    for tok, i0, i1 in zip(toks.tolist(), lo.tolist(), hi.tolist()):
        if i1 == i0:
            continue
        pos = order[i0:i1]
        buf[:] = 0
        np.bitwise_or.at(buf, pos >> 3, (1 << (pos & 7)).astype(np.uint8))
        masks[tok] = int.from_bytes(buf.tobytes(), "little")
    full = (1 << n) - 1
    v = full
    for tok in a.tolist():
        match = masks.get(tok)
        if match is None:
            continue
        u = v & match
        v = ((v + u) | (v - u)) & full
    return n - v.bit_count()


def word_diff(a: str, b: str) -> Tuple[List[Tuple[str, bool]], List[Tuple[str, bool]]]:
    """The whitespace-separated words of ``a`` and ``b``, each flagged where the two texts differ.

    Words are matched as the verifier matches them (NFKC, casefolded: ``"The"`` equals ``"the"``);
    the words come back as written.

    Returns
    -------
    (list of (word, changed), list of (word, changed))
        ``changed`` is True for words outside the longest matching blocks.
    """
    wa, wb = a.split(), b.split()
    fold = lambda words: [unicodedata.normalize("NFKC", w).casefold() for w in words]  # noqa: E731
    fa, fb = [True] * len(wa), [True] * len(wb)
    for i, j, n in difflib.SequenceMatcher(a=fold(wa), b=fold(wb), autojunk=False).get_matching_blocks():
        fa[i:i + n] = [False] * n
        fb[j:j + n] = [False] * n
    return list(zip(wa, fa)), list(zip(wb, fb))
