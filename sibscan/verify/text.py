"""``textalign``: text pairs re-scored from their aligned words.

Both texts are tokenised the same way (Unicode NFKC, casefolded, ``\\w+`` words).  Two things are
measured on the word sequences:

* the **longest common run** of words (the longest verbatim stretch the two share), found by a
  binary search over the run length with 64-bit rolling hashes of all word n-grams (numpy,
  O(n log n) per step), and
* the **LCS F1**, ``2 * LCS / (n_query + n_database)``, where LCS is the longest common
  subsequence of words, computed bit-parallel (Hyyrö's algorithm on Python integers:
  ``n_query`` steps of ``n_database / 64`` machine words; a 10,000 x 10,000-word pair takes
  tens of milliseconds).

The verified similarity is::

    run_score = min(1, run / clip(min(n_query, n_database), min_run, full_run))
    verified  = max(lcs_f1, run_score)

so a verbatim stretch of ``full_run`` words (40 by default) scores 1 however long the texts
around it are, a short text found whole inside a long one scores 1 (if it has at least
``min_run`` words), and texts that are reworded throughout score by their word-level overlap.

**Boilerplate is not evidence.**  Text that recurs across many documents of the corpus (a license
header, numpy's "old polynomial API" note, a docstring template) would otherwise make two
unrelated documents share a 40-80-word run and score 1.  As plagiarism detectors do, a passage
counts as boilerplate when it is common, and a copied passage is rare: the **document
frequency** of every word ``shingle``-gram (8 words by default) is counted over the corpus, the
query split and the database split together (each split tokenised and counted once, cached on the
verifier per Items object; 64-bit rolling hashes, each document's distinct shingles, ``np.unique``
over the concatenation; documents of a split with identical word sequences count once, so a train
set holding the same text three times does not hide copies of it).  A shingle found in at least::

    boilerplate_df = max(3, ceil(0.002 * (n_query_split + n_database_split)))   (0: masking off)

documents is boilerplate.  The words of either text covered by a boilerplate shingle are
replaced by sentinels that match nothing before the run and the LCS are computed, and the lengths
in both formulas count only the unmasked words (a text that is all boilerplate scores 0).  A
40-word passage copied from a single train document stays a 40-word run; the same 40 words
shared by hundreds of docstrings are masked.  Both splits are counted because a small train split
may hold a template only twice while the test split holds it too.  Known limit: a passage copied
from a text that appears (near-verbatim, not identically) in ``boilerplate_df`` or more documents
is masked too.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import SibscanError
from ..items import Items
from .base import Verifier, VerifyResult, register_verifier

__all__ = ["TextAlignVerifier", "tokenize", "longest_common_run", "lcs_length", "shingle_hashes",
           "shingle_document_frequency", "boilerplate_mask"]

_WORD = re.compile(r"\w+")
_P = np.uint64(0x9E3779B97F4A7C15)  # odd: invertible mod 2**64
_DF_FRACTION = 0.002  # default boilerplate_df: max(_DF_MIN, ceil(_DF_FRACTION * n_database))
_DF_MIN = 3
_CHUNK_WORDS = 1 << 22  # database words hashed at a time (bounds the temporaries)


def tokenize(text: str) -> List[str]:
    """Words of ``text`` after NFKC normalisation and casefolding."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _prefix_hashes(ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Prefix hashes ``H[i] = sum_{j<i} (ids[j] + 1) * P**(i - j)`` (mod 2**64), vectorised,
    and the powers ``P**i``; both of shape (n + 1,)."""
    n = len(ids)
    with np.errstate(over="ignore"):
        powers = np.empty(n + 1, np.uint64)
        powers[0] = 1
        powers[1:] = np.cumprod(np.full(n, _P, np.uint64), dtype=np.uint64)
        inv = np.uint64(pow(int(_P), -1, 2**64))
        inv_powers = np.empty(n, np.uint64)
        inv_powers[0] = 1
        inv_powers[1:] = np.cumprod(np.full(n - 1, inv, np.uint64), dtype=np.uint64) if n > 1 else []
        acc = np.zeros(n + 1, np.uint64)
        acc[1:] = np.cumsum((ids.astype(np.uint64) + np.uint64(1)) * inv_powers, dtype=np.uint64)
        return powers * acc, powers


def _gram_hashes(prefix: np.ndarray, powers: np.ndarray, length: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return prefix[length:] - prefix[:-length] * powers[length]


def longest_common_run(a: np.ndarray, b: np.ndarray) -> Tuple[int, int, int]:
    """Longest stretch of equal consecutive tokens in ``a`` and ``b``.

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
    pa, wa = _prefix_hashes(a)
    pb, _ = _prefix_hashes(b)

    def find(length: int):
        ha, hb = _gram_hashes(pa, wa, length), _gram_hashes(pb, wa, length)
        common, ia, ib = np.intersect1d(ha, hb, assume_unique=False, return_indices=True)
        for k in range(len(common)):  # a hash collision is possible in principle: check the words
            i, j = int(ia[k]), int(ib[k])
            if np.array_equal(a[i:i + length], b[j:j + length]):
                return i, j
        return None

    lo, hi, best = 0, min(len(a), len(b)), (0, 0)
    while lo < hi:  # invariant: a run of length lo exists; none longer than hi
        mid = (lo + hi + 1) // 2
        hit = find(mid)
        if hit is None:
            hi = mid - 1
        else:
            lo, best = mid, hit
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
    from tqdm.auto import tqdm

    ids = np.asarray(ids, np.int64)
    offsets = np.asarray(offsets, np.int64)
    n_docs = len(offsets) - 1
    lengths = np.diff(offsets)
    doc_hash = np.zeros(n_docs, np.uint64)
    kept_h: List[np.ndarray] = []
    kept_d: List[np.ndarray] = []
    # chunk boundaries on document edges, about _CHUNK_WORDS words each
    starts = np.searchsorted(offsets, np.arange(0, offsets[-1], _CHUNK_WORDS), side="right") - 1
    edges = np.unique(np.concatenate([[0], starts, [n_docs]]).clip(0, n_docs))
    for c0, c1 in tqdm(list(zip(edges[:-1], edges[1:])), desc="textalign: boilerplate shingles", unit="chunk",
                       disable=not progress or None, leave=False):
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


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel).

    Hyyrö (2004): ``V`` holds one bit per position of ``b``; per token of ``a``,
    ``U = V & match``, ``V = (V + U) | (V - U)``; the LCS is the number of zero bits of ``V``.
    """
    if not len(a) or not len(b):
        return 0
    masks: Dict[int, int] = {}
    for j, tok in enumerate(b):
        masks[tok] = masks.get(tok, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for tok in a:
        match = masks.get(tok)
        if match is None:
            continue
        u = v & match
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def _snippet(words: Sequence[str], head: int = 8, tail: int = 4) -> str:
    if len(words) <= head + tail + 1:
        return " ".join(words)
    return " ".join(words[:head]) + " … " + " ".join(words[-tail:])


@dataclass
class _Split:
    """One split tokenised once (with the verifier's shared vocabulary) and its shingle counts."""

    items: Items
    n: int
    ids: np.ndarray  # (n_words,) int64, every document's token ids concatenated
    offsets: np.ndarray  # (n + 1,) int64
    hashes: np.ndarray  # (u,) uint64, sorted distinct shingle hashes
    df: np.ndarray  # (u,) int64, documents of this split holding each

    def doc(self, row: int) -> np.ndarray:
        return self.ids[self.offsets[row]:self.offsets[row + 1]]


@register_verifier
class TextAlignVerifier(Verifier):
    """Verified text similarity from the longest verbatim run of words and the word LCS F1,
    both computed with the database's boilerplate masked.

    Parameters
    ----------
    full_run : int
        A common run of this many words scores 1.
    min_run : int
        Texts shorter than this are scored against ``min_run`` (a 3-word text found inside a
        long one does not score 1).
    shingle : int
        Words per shingle for the boilerplate document frequency.
    boilerplate_df : int or None
        A shingle in at least this many documents of the query and database splits together is
        boilerplate.  None: ``max(3, ceil(0.002 * (n_query + n_database)))``; 0 turns masking off.
    progress : bool
        Show a progress bar on stderr (only when it is a terminal).
    """

    name = "textalign"
    modality = "text"
    description = "longest verbatim run of words and word-level LCS F1, corpus boilerplate masked"

    def __init__(self, full_run: int = 40, min_run: int = 8, shingle: int = 8, boilerplate_df: Optional[int] = None,
                 progress: bool = True):
        if int(min_run) < 1 or int(full_run) < int(min_run):
            raise SibscanError(f"textalign needs 1 <= min_run <= full_run, got min_run={min_run}, full_run={full_run}")
        if int(shingle) < 1:
            raise SibscanError(f"textalign needs shingle >= 1 words, got {shingle}")
        if boilerplate_df is not None and (int(boilerplate_df) < 0 or int(boilerplate_df) == 1):
            raise SibscanError(f"textalign boilerplate_df must be 0 (no masking) or >= 2 documents, got {boilerplate_df}")
        self.full_run = int(full_run)
        self.min_run = int(min_run)
        self.shingle = int(shingle)
        self.boilerplate_df = None if boilerplate_df is None else int(boilerplate_df)
        self.progress = progress
        df = "auto" if self.boilerplate_df is None else str(self.boilerplate_df)
        self.identity = (f"textalign-v2(full_run={self.full_run},min_run={self.min_run},shingle={self.shingle},"
                         f"boilerplate_df={df},tok=nfkc-casefold-w)")
        self._vocab: Dict[str, int] = {}  # one vocabulary for every split this verifier sees
        self._splits: Dict[int, _Split] = {}

    def threshold(self, n_database: int) -> int:
        """Document frequency from which a shingle is boilerplate (0: masking off)."""
        if self.boilerplate_df is not None:
            return self.boilerplate_df
        return max(_DF_MIN, math.ceil(_DF_FRACTION * n_database))

    def split(self, items: Items) -> _Split:
        """``items`` tokenised and its shingles counted; cached per Items object (and length)."""
        from tqdm.auto import tqdm

        n = len(items.texts)
        hit = self._splits.get(id(items))
        if hit is not None and hit.items is items and hit.n == n:
            return hit
        vocab = self._vocab
        lengths = np.zeros(n + 1, np.int64)
        parts: List[np.ndarray] = []
        for d, text in enumerate(tqdm(items.texts, desc=f"textalign: tokenise {items.split}", unit="text",
                                      disable=not self.progress or None, leave=False)):
            w = tokenize(text)
            parts.append(np.fromiter((vocab.setdefault(t, len(vocab)) for t in w), np.int64, len(w)))
            lengths[d + 1] = len(w)
        ids = np.concatenate(parts) if parts else np.empty(0, np.int64)
        offsets = np.cumsum(lengths)
        hashes, df = (shingle_document_frequency(ids, offsets, self.shingle, progress=self.progress)
                      if self.boilerplate_df != 0 else (np.empty(0, np.uint64), np.empty(0, np.int64)))
        if len(self._splits) >= 4:  # a scan verifies two or three splits
            self._splits.pop(next(iter(self._splits)))
        out = self._splits[id(items)] = _Split(items, n, ids, offsets, hashes, df)
        return out

    def boilerplate(self, queries: Items, database: Items) -> Tuple[np.ndarray, int]:
        """Sorted hashes (u,) uint64 of the shingles in >= threshold documents of the corpus
        (both splits, counted once when they are the same object), and the threshold."""
        sides = [self.split(database)] + ([self.split(queries)] if queries is not database else [])
        threshold = self.threshold(sum(s.n for s in sides))
        if threshold == 0:
            return np.empty(0, np.uint64), 0
        hashes = np.concatenate([s.hashes for s in sides])
        df = np.concatenate([s.df for s in sides])
        if len(sides) > 1:
            hashes, inverse = np.unique(hashes, return_inverse=True)
            df = np.bincount(inverse.ravel(), weights=df, minlength=len(hashes)).astype(np.int64)
        return hashes[df >= threshold], threshold

    def score_pair(self, a: np.ndarray, b: np.ndarray, mask_a: Optional[np.ndarray] = None,
                   mask_b: Optional[np.ndarray] = None) -> Tuple[float, int, int, int, float]:
        """``(verified, run, start_a, start_b, lcs_f1)`` of two token-id arrays.

        ``mask_a`` (n_a,) / ``mask_b`` (n_b,) bool mark boilerplate words: they match nothing and
        do not count in the lengths.  NaN when a text has no words, 0 when all are boilerplate.
        """
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        if len(a) == 0 or len(b) == 0:
            return float("nan"), 0, 0, 0, float("nan")
        if mask_a is not None and mask_a.any():
            a = np.where(mask_a, -1 - np.arange(len(a)), a)  # sentinels: negative, distinct
        if mask_b is not None and mask_b.any():
            b = np.where(mask_b, -1 - len(a) - np.arange(len(b)), b)
        na = len(a) - (int(mask_a.sum()) if mask_a is not None else 0)
        nb = len(b) - (int(mask_b.sum()) if mask_b is not None else 0)
        if na == 0 or nb == 0:
            return 0.0, 0, 0, 0, 0.0
        run, ia, ib = longest_common_run(a, b)
        f1 = 2.0 * lcs_length(a.tolist(), b.tolist()) / (na + nb)
        scale = min(max(min(na, nb), self.min_run), self.full_run)
        return max(f1, min(1.0, run / scale)), run, ia, ib, f1

    def verify(
        self, queries: Items, query_index: np.ndarray, database: Items, database_index: np.ndarray
    ) -> VerifyResult:
        """Score pairs ``(queries[query_index[i]], database[database_index[i]])``.

        Each whole split (``queries`` and ``database``) is tokenised once and its shingle document
        frequencies counted on the first call with that Items object; later calls reuse it.

        Returns
        -------
        VerifyResult
            ``scores`` (m,) float32 in [0, 1] (NaN where a text has no words); ``details`` like
            ``"40-word run: 'the quick …' (test words 120-159, train words 3400-3439); LCS F1 0.42"``,
            followed by ``"; 57 test and 57 train words masked as boilerplate"`` when some were.
        """
        from tqdm.auto import tqdm

        for items in (queries, database):
            if items.modality != "text":
                raise SibscanError(f"verifier textalign works on text, not {items.modality} items ({items.split})")
        qi = np.asarray(query_index, dtype=np.int64).ravel()
        di = np.asarray(database_index, dtype=np.int64).ravel()
        if len(qi) != len(di):
            raise ValueError(f"query_index has {len(qi)} pairs, database_index {len(di)}")
        qsplit, dsplit = self.split(queries), self.split(database)
        boiler, threshold = self.boilerplate(queries, database)
        words: Dict[int, List[str]] = {}
        masks: Dict[Tuple[int, int], np.ndarray] = {}

        def side(key: Tuple[int, int]) -> Tuple[np.ndarray, np.ndarray]:
            ids = (qsplit if key[0] == 0 else dsplit).doc(key[1])
            if key not in masks:  # each item masked once per call
                masks[key] = boilerplate_mask(ids, boiler, self.shingle)
            return ids, masks[key]

        m = len(qi)
        scores = np.empty(m, np.float32)
        details: List[str] = []
        for k in tqdm(range(m), desc="verify texts", unit="pair", disable=not self.progress or None):
            q, d = int(qi[k]), int(di[k])
            (a, ma), (b, mb) = side((0, q)), side((1, d))
            score, run, ia, ib, f1 = self.score_pair(a, b, ma, mb)
            scores[k] = score
            masked = ""
            if ma.any() or mb.any():
                masked = (f"; {int(ma.sum())} {queries.split} and {int(mb.sum())} {database.split} words masked as "
                          f"boilerplate ({self.shingle}-word shingles in >= {threshold} texts)")
            if np.isnan(score):
                details.append("no words: similarity undefined")
            elif run == 0:
                details.append(f"no common word; LCS F1 {f1:.2f}{masked}")
            else:
                if q not in words:
                    words[q] = tokenize(queries.texts[q])
                span = _snippet(words[q][ia:ia + run])
                details.append(
                    f"{run}-word run: '{span}' ({queries.split} words {ia}-{ia + run - 1}, "
                    f"{database.split} words {ib}-{ib + run - 1}); LCS F1 {f1:.2f}{masked}"
                )
        return VerifyResult(scores=scores, details=details)
