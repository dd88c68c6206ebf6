"""Synthetic data for the contamination benchmark: texts assembled from a shared phrase pool, so
clean benchmark examples share innocent n-grams with the corpus (at n = 5 most of their n-grams
occur in it), and leaks planted into corpus documents as verbatim copies, partial spans and
paraphrases (a quarter of the words swapped)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List

import numpy as np

LEAK_TYPES = ("verbatim", "partial", "paraphrased")
PARTIAL_SHARE = 0.4  # a partial leak is a contiguous span of 40 % of the example's words
SWAP_SHARE = 0.25  # a paraphrase swaps a quarter of the words


@dataclass
class Pool:
    """A vocabulary (Zipf-distributed pseudo-words) and a pool of 2,000 phrases of 16–30 words."""

    words: np.ndarray
    probs: np.ndarray
    phrases: List[List[str]]

    @classmethod
    def make(cls, rng: np.random.Generator, n_words: int = 5000, n_phrases: int = 2000) -> "Pool":
        words = np.array([f"w{i}" for i in range(n_words)])
        p = 1.0 / np.arange(1, n_words + 1) ** 1.1
        p /= p.sum()
        phrases = [list(rng.choice(words, int(rng.integers(16, 31)), p=p)) for _ in range(n_phrases)]
        return cls(words, p, phrases)

    def text(self, rng: np.random.Generator, n_words: int) -> List[str]:
        out: List[str] = []
        while len(out) < n_words:
            out.extend(self.phrases[int(rng.integers(len(self.phrases)))])
        return out[:n_words]

    def paraphrase(self, rng: np.random.Generator, words: List[str]) -> List[str]:
        out = list(words)
        for i in rng.choice(len(out), int(round(SWAP_SHARE * len(out))), replace=False):
            out[int(i)] = str(rng.choice(self.words, p=self.probs))
        return out


@dataclass
class Planted:
    """Corpus documents, benchmark examples, and which examples leaked how."""

    corpus: List[str]
    example_ids: List[str]
    example_texts: List[str]
    kind: np.ndarray  # (n_examples,) str: "clean" or a leak type
    controls: List[str]

    def examples(self) -> Dict[str, str]:
        return dict(zip(self.example_ids, self.example_texts))


def plant(seed: int, *, n_docs: int, doc_words: int, n_clean: int, n_leaks: Dict[str, int], example_words: int,
          n_controls: int = 0) -> Planted:
    """Build one planted benchmark (deterministic in ``seed``).

    Each leaked example is inserted into a different corpus document, at a random word position;
    controls are further clean texts from the same pool (outside the corpus by construction).
    """
    rng = np.random.default_rng(seed)
    pool = Pool.make(rng)
    docs = [pool.text(rng, doc_words) for _ in range(n_docs)]
    kinds = ["clean"] * n_clean + [k for k in LEAK_TYPES for _ in range(n_leaks.get(k, 0))]
    rng.shuffle(kinds)
    texts = [pool.text(rng, example_words) for _ in kinds]
    targets = rng.choice(n_docs, sum(k != "clean" for k in kinds), replace=False)
    t = 0
    for words, kind in zip(texts, kinds):
        if kind == "clean":
            continue
        if kind == "verbatim":
            piece = words
        elif kind == "partial":
            span = int(round(PARTIAL_SHARE * len(words)))
            a = int(rng.integers(0, len(words) - span + 1))
            piece = words[a:a + span]
        else:
            piece = pool.paraphrase(rng, words)
        doc = docs[int(targets[t])]
        at = int(rng.integers(0, len(doc) + 1))
        docs[int(targets[t])] = doc[:at] + piece + doc[at:]
        t += 1
    controls = [" ".join(pool.text(rng, example_words)) for _ in range(n_controls)]
    return Planted(corpus=[" ".join(d) for d in docs], example_ids=[f"ex{i:05d}" for i in range(len(kinds))],
                   example_texts=[" ".join(w) for w in texts], kind=np.array(kinds), controls=controls)


def random_docs(seed: int, n_docs: int, doc_words: int, n_vocab: int = 50_000) -> Iterator[str]:
    """A stream of documents of random words (mostly distinct n-grams), generated lazily so a
    corpus many times larger than memory can be streamed."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"v{i}" for i in range(n_vocab)])
    for _ in range(n_docs):
        yield " ".join(vocab[rng.integers(0, n_vocab, doc_words)])
