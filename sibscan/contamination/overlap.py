"""n-gram overlap of each example with each source, with provenance.

Per example and source:

* ``overlap_fraction`` — the share of the example's word n-grams found in the source (PaLM's
  definition, with its n), and
* ``longest_match_tokens`` — the longest run of words that occurs contiguously in one document
  of the source: consecutive matched n-grams whose stored position tags step by one (``r`` such
  matches cover ``r + n - 1`` words; see :func:`sibscan.kernels.ngramhash.longest_chained_run`),
  with the word where it starts.  Matches from different documents never join into one run.

An example shorter than ``n`` words has no n-gram: it is ``scorable=False`` and listed, never
counted as clean.  The example's headline values are those of its ``best_source`` (highest overlap,
then longest run, then the sources' order), None when no source matched any of its n-grams;
``matched_sources`` lists every source with at least one matched n-gram.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from ..errors import CompatibilityError
from ..kernels.ngramhash import batch_word_ids, longest_chained_run, ngram_hashes
from .index import NgramIndex

__all__ = ["SourceMatch", "ExampleOverlap", "example_ngrams", "overlap_with_sources"]


@dataclass
class SourceMatch:
    """One example against one source."""

    overlap_fraction: float
    longest_match_tokens: int
    run_start: int  # word index where the longest run starts
    matched_ngrams: int

    def to_dict(self) -> dict:
        return {"overlap_fraction": self.overlap_fraction, "longest_match_tokens": self.longest_match_tokens}


@dataclass
class ExampleOverlap:
    """One example against every source."""

    n_words: int
    n_ngrams: int
    per_source: Dict[str, SourceMatch]

    @property
    def scorable(self) -> bool:
        return self.n_ngrams > 0

    @property
    def best_source(self) -> Optional[str]:
        """The source the headline values come from; None when no source matched an n-gram (every
        source then scores 0, and naming the first would claim a provenance there is none of)."""
        return self._highest() if self.matched_sources else None

    @property
    def best(self) -> Optional[SourceMatch]:
        """The headline values: the best source's, or (no source matched) the zeros every source shares."""
        b = self._highest()
        return None if b is None else self.per_source[b]

    def _highest(self) -> Optional[str]:
        if not self.scorable or not self.per_source:
            return None
        order = list(self.per_source)
        return max(order, key=lambda s: (self.per_source[s].overlap_fraction,
                                         self.per_source[s].longest_match_tokens, -order.index(s)))

    @property
    def matched_sources(self) -> List[str]:
        return [s for s, m in self.per_source.items() if m.matched_ngrams > 0]


def example_ngrams(texts: Sequence[str], n: int):
    """Word ids, n-gram hashes and each n-gram's example of a list of texts.

    Returns
    -------
    lengths : ndarray of shape (n_texts,), int64 — words per text
    hashes : ndarray of shape (m,), uint64
    doc : ndarray of shape (m,), int64 — the text each n-gram belongs to
    pos : ndarray of shape (m,), int64 — the n-gram's first word within its text
    """
    ids, offsets = batch_word_ids(texts)
    hashes, starts = ngram_hashes(ids, offsets, n)
    doc = np.searchsorted(offsets, starts, side="right") - 1
    return np.diff(offsets), hashes, doc, starts - offsets[doc]


def overlap_with_sources(texts: Sequence[str], sources: Mapping[str, NgramIndex]) -> List[ExampleOverlap]:
    """Score every text against every source index (one pass over each index's shards).

    Parameters
    ----------
    texts : sequence of str
    sources : mapping name -> NgramIndex
        All built with the same ``n``.

    Returns
    -------
    list of ExampleOverlap, one per text
    """
    ns = {idx.n for idx in sources.values()}
    if len(ns) != 1:
        raise CompatibilityError(f"sources were indexed with different n ({sorted(ns)}); rebuild them with one --n")
    n = ns.pop()
    lengths, hashes, doc, pos = example_ngrams(texts, n)
    counts = np.bincount(doc, minlength=len(texts))
    bounds = np.concatenate([[0], np.cumsum(counts)])  # n-grams are in text order
    out = [ExampleOverlap(int(lengths[i]), int(counts[i]), {}) for i in range(len(texts))]
    for name, idx in sources.items():
        hit, tags = idx.lookup(hashes)
        matched = np.bincount(doc, weights=hit, minlength=len(texts)).astype(np.int64)
        for i, ex in enumerate(out):
            if not ex.scorable:
                continue
            run, start = longest_chained_run(hit[bounds[i]:bounds[i + 1]], tags[bounds[i]:bounds[i + 1]], n)
            ex.per_source[name] = SourceMatch(float(matched[i] / counts[i]), run, start, int(matched[i]))
    return out
