"""``textalign``: text pairs re-scored from their aligned words (primitives in :mod:`sibscan.kernels.textalign`).

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
query split and the database split together (each split tokenised once, its words as 63-bit hashes
of their bytes, and counted once when first needed — never when the splits hold fewer texts than
the threshold — cached on the verifier per Items object; 64-bit rolling hashes, each document's
distinct shingles, ``np.unique`` over the concatenation; documents of a split with identical word sequences count once,
so a train
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
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import SibscanError
from ..items import Items
from ..kernels.textalign import (batch_token_ids, boilerplate_mask, lcs_length, longest_common_run,
                                 shingle_document_frequency, tokenize)
from .base import Verifier, VerifyResult, register_verifier
from ..progress import bar as progress_bar

__all__ = ["TextAlignVerifier"]

_DF_FRACTION = 0.002  # default boilerplate_df: max(_DF_MIN, ceil(_DF_FRACTION * n_database))
_DF_MIN = 3
LCS_CELLS = 1 << 26  # word pairs one LCS may cost (n_a * n_b); a larger pair is aligned in windows


def _window(n: int, centre: int, width: int) -> int:
    """Start of a ``width``-word window of an ``n``-word text centred on ``centre`` (kept inside)."""
    return int(min(max(centre - width // 2, 0), max(n - width, 0)))


def _snippet(words: Sequence[str], head: int = 8, tail: int = 4) -> str:
    if len(words) <= head + tail + 1:
        return " ".join(words)
    return " ".join(words[:head]) + " … " + " ".join(words[-tail:])


@dataclass
class _Split:
    """One split tokenised once (word ids are hashes of the words: equal across splits) and, when
    first needed, its shingle counts."""

    items: Items
    n: int
    ids: np.ndarray  # (n_words,) int64, every document's token ids concatenated
    offsets: np.ndarray  # (n + 1,) int64
    counts: Optional[Tuple[np.ndarray, np.ndarray]] = None  # (hashes (u,) uint64 sorted, df (u,) int64)

    def doc(self, row: int) -> np.ndarray:
        return self.ids[self.offsets[row]:self.offsets[row + 1]]

    def shingle_counts(self, shingle: int, progress: bool) -> Tuple[np.ndarray, np.ndarray]:
        """Sorted distinct shingle hashes of this split and how many of its documents hold each."""
        if self.counts is None:
            self.counts = shingle_document_frequency(self.ids, self.offsets, shingle, progress=progress)
        return self.counts


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
        Show progress on stderr (a bar on a terminal, a line every 30 s off one; see sibscan.progress).
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
            raise SibscanError("textalign boilerplate_df must be 0 (no masking) or >= 2 documents, got "
                               f"{boilerplate_df}")
        self.full_run = int(full_run)
        self.min_run = int(min_run)
        self.shingle = int(shingle)
        self.boilerplate_df = None if boilerplate_df is None else int(boilerplate_df)
        self.progress = progress
        df = "auto" if self.boilerplate_df is None else str(self.boilerplate_df)
        self.identity = (f"textalign-v2(full_run={self.full_run},min_run={self.min_run},shingle={self.shingle},"
                         f"boilerplate_df={df},tok=nfkc-casefold-w)")
        self._splits: Dict[int, _Split] = {}
        self._boiler: Optional[Tuple[_Split, _Split, np.ndarray, int]] = None  # the last boilerplate() result

    def threshold(self, n_database: int) -> int:
        """Document frequency from which a shingle is boilerplate (0: masking off)."""
        if self.boilerplate_df is not None:
            return self.boilerplate_df
        return max(_DF_MIN, math.ceil(_DF_FRACTION * n_database))

    def split(self, items: Items) -> _Split:
        """``items`` tokenised and its shingles counted; cached per Items object (and length)."""
        n = len(items.texts)
        hit = self._splits.get(id(items))
        if hit is not None and hit.items is items and hit.n == n:
            return hit
        step = 8192  # texts tokenised per batch (one vectorised pass each; the bar moves per batch)
        parts: List[Tuple[np.ndarray, np.ndarray]] = []
        with progress_bar(n, f"textalign: tokenise {items.split}", "text", enabled=self.progress,
                          transient=True) as bar:
            for t0 in range(0, n, step):
                parts.append(batch_token_ids(items.texts[t0:t0 + step]))
                bar.update(min(step, n - t0))
        ids = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.int64)
        lengths = np.concatenate([np.diff(p[1]) for p in parts]) if parts else np.empty(0, np.int64)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if len(self._splits) >= 4:  # a scan verifies two or three splits
            self._splits.pop(next(iter(self._splits)))
        out = self._splits[id(items)] = _Split(items, n, ids, offsets)
        return out

    def boilerplate(self, queries: Items, database: Items) -> Tuple[np.ndarray, int]:
        """Sorted hashes (u,) uint64 of the shingles in >= threshold documents of the corpus
        (both splits, counted once when they are the same object), and the threshold."""
        qsplit, dsplit = self.split(queries), self.split(database)
        last = self._boiler
        if last is not None and last[0] is qsplit and last[1] is dsplit:  # every verify call of a scan stage
            return last[2], last[3]
        sides = [dsplit] + ([qsplit] if queries is not database else [])
        threshold = self.threshold(sum(s.n for s in sides))
        if threshold == 0 or threshold > sum(s.n for s in sides):
            # no shingle can be in more documents than there are: nothing to count
            boiler = np.empty(0, np.uint64)
        else:
            counts = [s.shingle_counts(self.shingle, self.progress) for s in sides]
            hashes = np.concatenate([c[0] for c in counts])
            df = np.concatenate([c[1] for c in counts])
            if len(sides) > 1:
                hashes, inverse = np.unique(hashes, return_inverse=True)
                df = np.bincount(inverse.ravel(), weights=df, minlength=len(hashes)).astype(np.int64)
            boiler = hashes[df >= threshold]
        self._boiler = (qsplit, dsplit, boiler, threshold)
        return boiler, threshold

    def score_pair(self, a: np.ndarray, b: np.ndarray, mask_a: Optional[np.ndarray] = None,
                   mask_b: Optional[np.ndarray] = None
                   ) -> Tuple[float, int, int, int, float, Optional[Tuple[int, int, int, int]]]:
        """``(verified, run, start_a, start_b, lcs_f1, lcs_span)`` of two token-id arrays.

        ``mask_a`` (n_a,) / ``mask_b`` (n_b,) bool mark boilerplate words: they match nothing and
        do not count in the lengths.  NaN when a text has no words, 0 when all are boilerplate.
        The run is searched over the whole texts.  The LCS costs ``n_a * n_b`` bit operations, so
        a pair above ``LCS_CELLS`` is aligned in windows around the longest run instead (the
        shorter text whole if it fits, the longer cut to ``LCS_CELLS // n_short`` words; else
        ``sqrt(LCS_CELLS)`` words of each), ``lcs_f1`` is the windows' F1 and ``lcs_span`` is
        ``(a0, a1, b0, b1)``, the windows' word ranges (None when the texts were aligned whole).
        """
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        if len(a) == 0 or len(b) == 0:
            return float("nan"), 0, 0, 0, float("nan"), None
        ma = np.zeros(len(a), bool) if mask_a is None else np.asarray(mask_a, bool)
        mb = np.zeros(len(b), bool) if mask_b is None else np.asarray(mask_b, bool)
        if ma.any():
            a = np.where(ma, -1 - np.arange(len(a)), a)  # sentinels: negative, distinct
        if mb.any():
            b = np.where(mb, -1 - len(a) - np.arange(len(b)), b)
        na, nb = len(a) - int(ma.sum()), len(b) - int(mb.sum())
        if na == 0 or nb == 0:
            return 0.0, 0, 0, 0, 0.0, None
        run, ia, ib = longest_common_run(a, b)
        scale = min(max(min(na, nb), self.min_run), self.full_run)
        span = None
        if len(a) * len(b) > LCS_CELLS:  # bounded cost: windows around the run
            side = math.isqrt(LCS_CELLS)
            if min(len(a), len(b)) <= side:  # the shorter whole (the lengths differ here), the longer cut
                wa = len(a) if len(a) < len(b) else LCS_CELLS // len(b)
                wb = len(b) if len(b) < len(a) else LCS_CELLS // len(a)
            else:
                wa = wb = side
            a0, b0 = _window(len(a), ia + run // 2, wa), _window(len(b), ib + run // 2, wb)
            span = (a0, a0 + wa, b0, b0 + wb)
            a, b = a[a0:a0 + wa], b[b0:b0 + wb]
            na, nb = wa - int(ma[a0:a0 + wa].sum()), wb - int(mb[b0:b0 + wb].sum())
        lcs = lcs_length(a, b)
        f1 = 2.0 * lcs / (na + nb) if na + nb else 0.0
        return max(f1, min(1.0, run / scale)), run, ia, ib, f1, span

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
        qi, di = self.pair_index(queries, query_index, database, database_index)
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
        with progress_bar(m, "verify texts", "pair", enabled=self.progress) as bar:
            for k in range(m):
                q, d = int(qi[k]), int(di[k])
                (a, ma), (b, mb) = side((0, q)), side((1, d))
                score, run, ia, ib, f1, span = self.score_pair(a, b, ma, mb)
                scores[k] = score
                f1_text = f"LCS F1 {f1:.2f}"
                if span is not None:
                    f1_text += (f" over {queries.split} words {span[0]}-{span[1] - 1} and {database.split} words "
                                f"{span[2]}-{span[3] - 1} (a pair over {LCS_CELLS:,} word pairs is aligned in windows)")
                masked = ""
                if ma.any() or mb.any():
                    masked = (f"; {int(ma.sum())} {queries.split} and {int(mb.sum())} {database.split} words masked as "
                              f"boilerplate ({self.shingle}-word shingles in >= {threshold} texts)")
                if np.isnan(score):
                    details.append("no words: similarity undefined")
                elif run == 0:
                    details.append(f"no common word; {f1_text}{masked}")
                else:
                    if q not in words:
                        words[q] = tokenize(queries.texts[q])
                    span = _snippet(words[q][ia:ia + run])
                    details.append(
                        f"{run}-word run: '{span}' ({queries.split} words {ia}-{ia + run - 1}, "
                        f"{database.split} words {ib}-{ib + run - 1}); {f1_text}{masked}"
                    )
                bar.update()
        return VerifyResult(scores=scores, details=details)
