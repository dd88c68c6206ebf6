"""textalign's vectorised tokenisation (words -> 63-bit ids over the bytes) against simple references.

The verifier's scores and details depend only on which words are equal, so ids from one dictionary
vocabulary (the previous path) and ids hashed from the words must give the same results.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np
import pytest

import sibscan.kernels.textalign as textalign_module
import sibscan.verify.text as text_module
from sibscan.items import Items
from sibscan.kernels.textalign import batch_token_ids, tokenize, word_id_reference
from sibscan.verify.text import TextAlignVerifier

PIECES = ["a", "B", "z", "Q", "7", "0", "_", " ", "  ", "\t", "\n", "\r\n", ",", ".", "!", "'", '"', "-", "(", ")",
          "é", "E\u0301", "ß", "STRASSE", "\ufb01", "日本", "語", "Ⅻ", "½", "Σ", "σ", "ς", "😀", "\u00a0", "\u2028",
          "\u200b", "\ud800", "İ", "ǅ", "٣", "x²", "\u0301", "the", "The", "THE"]


def _random_texts(rng: np.random.Generator, n: int) -> List[str]:
    texts = ["", " ", "\n\t", "...", "_", "é"]
    for _ in range(n):
        k = int(rng.integers(0, 40))
        texts.append("".join(PIECES[i] for i in rng.integers(0, len(PIECES), k)))
    return texts


@pytest.mark.parametrize("token_bytes", [None, 5])
def test_batch_token_ids_are_the_reference_ids_of_tokenize_words(monkeypatch, token_bytes):
    if token_bytes:  # the bytes hashed a few words at a time must give the same ids
        monkeypatch.setattr(textalign_module, "_TOKEN_BYTES", token_bytes)
    texts = _random_texts(np.random.default_rng(3), 150)
    ids, offsets = batch_token_ids(texts)
    assert ids.dtype == np.int64 and offsets.shape == (len(texts) + 1,) and offsets[0] == 0
    assert np.all(ids >= 0)  # non-negative: the verifier's boilerplate sentinels are negative
    for d, text in enumerate(texts):
        expect = [word_id_reference(w) for w in tokenize(text)]
        assert ids[offsets[d]:offsets[d + 1]].tolist() == expect, repr(text)
    # one text at a time gives the same ids; an empty batch gives no words
    single = batch_token_ids(texts[7:8])
    np.testing.assert_array_equal(single[0], ids[offsets[7]:offsets[8]])
    empty_ids, empty_offsets = batch_token_ids([])
    assert len(empty_ids) == 0 and empty_offsets.tolist() == [0]


def test_distinct_words_get_distinct_ids_and_equal_words_equal_ids():
    texts = _random_texts(np.random.default_rng(4), 300)
    ids, _ = batch_token_ids(texts)
    words = [w for t in texts for w in tokenize(t)]
    by_word: Dict[str, int] = {}
    for w, i in zip(words, ids.tolist()):
        assert by_word.setdefault(w, i) == i
    assert len(set(by_word.values())) == len(by_word)


def _vocab_token_ids(texts):
    """The previous path: tokenize, then ids from one dictionary in order of first occurrence."""
    vocab: Dict[str, int] = _vocab_token_ids.vocab
    parts, lengths = [], [0]
    for text in texts:
        w = tokenize(text)
        parts.append(np.array([vocab.setdefault(t, len(vocab)) for t in w], np.int64))
        lengths.append(len(w))
    return (np.concatenate(parts) if parts else np.empty(0, np.int64)), np.cumsum(np.asarray(lengths, np.int64))


@pytest.mark.parametrize("boilerplate_df", [None, 0, 3])
def test_verifier_scores_and_details_equal_those_of_a_dictionary_vocabulary(monkeypatch, boilerplate_df):
    rng = np.random.default_rng(5)
    vocab = np.array([f"Wörd{i}," for i in range(60)])
    template = " ".join(vocab[rng.integers(0, 60, 30)])  # boilerplate in 8 of the train texts
    train = [" ".join(vocab[rng.integers(0, 60, int(rng.integers(0, 120)))]) for _ in range(30)]
    for i in range(8):
        train[i] = template + " " + train[i]
    test = [train[12][:200] + " extra words here", template + " différent", "", "!!!",
            " ".join(vocab[rng.integers(0, 60, 50)])]
    qi = np.repeat(np.arange(len(test)), 6)
    di = rng.integers(0, len(train), len(qi))
    di[:6] = [12, 0, 1, 2, 3, 4]

    def run():
        v = TextAlignVerifier(boilerplate_df=boilerplate_df, progress=False)
        q = Items("test", "text", ids=[str(i) for i in range(len(test))], texts=list(test))
        d = Items("train", "text", ids=[str(i) for i in range(len(train))], texts=list(train))
        first = v.verify(q, qi, d, di)
        again = v.verify(q, qi, d, di)  # the splits and the boilerplate set reused
        np.testing.assert_array_equal(first.scores, again.scores)
        assert first.details == again.details
        return first

    new = run()
    _vocab_token_ids.vocab = {}
    monkeypatch.setattr(text_module, "batch_token_ids", _vocab_token_ids)
    old = run()
    np.testing.assert_array_equal(new.scores, old.scores)
    assert new.details == old.details
    if boilerplate_df != 0:
        assert any("masked as boilerplate" in d for d in new.details)  # the masking path was exercised
