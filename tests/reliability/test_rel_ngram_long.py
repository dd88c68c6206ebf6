"""Issue 13, 'ngram peaked at 7.8 GB on a 44 MB single-line text': a very long text is embedded in
segments of at most ``max_chars`` characters, so the encoder's temporaries depend on ``max_chars``,
not on the text.  Data are built here (a single line of random words); the cap is lowered so the
texts stay small: the same code path runs at the default cap (1,048,576 characters) on longer texts.
"""
from __future__ import annotations

import logging
import tracemalloc

import numpy as np
import pytest

from sibscan.encoders import get_encoder
from sibscan.encoders.ngram import NgramEncoder, text_segments

CAP = 1 << 12  # characters per segment in these tests


def _line(rng: np.random.Generator, n_chars: int) -> str:
    vocab = np.array([f"wörd{i}" for i in range(5000)] + ["The", "a", "of,", "x.y"])
    words = vocab[rng.integers(0, len(vocab), n_chars // 5)]
    return " ".join(words)[:n_chars]


def _peak(encoder: NgramEncoder, text: str) -> int:
    tracemalloc.start()
    try:
        encoder.encode([text])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_encoder_memory_does_not_grow_with_one_long_line():
    rng = np.random.default_rng(0)
    short, long_ = _line(rng, 20_000), _line(rng, 80_000)
    capped, whole = NgramEncoder(max_chars=CAP), NgramEncoder(max_chars=len(long_))
    capped.encode([short])  # first-call imports and caches happen outside the measurement
    grow = _peak(capped, long_) - _peak(capped, short)
    # 60,000 more characters: the normalised copies of the text grow (a few bytes a character);
    # embedding it whole costs ~150 bytes a character (checked below, so this bound can fail)
    assert grow < 12 * 60_000, f"peak grew by {grow:,} bytes"
    grow_whole = _peak(whole, long_) - _peak(whole, short)
    assert grow_whole > 40 * 60_000, f"the uncapped encoder grew by only {grow_whole:,} bytes: the bound tests nothing"


def test_a_long_text_is_the_normalised_sum_of_its_segments_and_is_logged(caplog):
    rng = np.random.default_rng(1)
    text = _line(rng, 5 * CAP + 123)
    enc = NgramEncoder(max_chars=CAP)
    with caplog.at_level(logging.INFO, logger="sibscan.encoders"):
        row = enc.encode(["short text", text, ""])
    segments = text_segments(text.casefold(), CAP)
    assert len(segments) == 6 and all(len(s) <= CAP for s in segments)
    expect = enc.encode(segments).sum(axis=0)
    np.testing.assert_allclose(row[1], expect / np.linalg.norm(expect), atol=1e-6)
    np.testing.assert_allclose(row[0], enc.encode(["short text"])[0], atol=0)  # short texts unchanged
    assert not row[2].any()
    assert any("embedded in 6 segments" in r.getMessage() and f"{len(text):,} characters" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_the_cap_is_part_of_the_identity_and_texts_under_it_are_embedded_whole():
    default = get_encoder("ngram")
    assert "max_chars=1048576" in default.identity
    assert NgramEncoder(max_chars=CAP).identity != default.identity
    text = _line(np.random.default_rng(2), CAP)
    np.testing.assert_array_equal(NgramEncoder(max_chars=CAP).encode([text]), default.encode([text]))


@pytest.mark.parametrize("text, cap, expect", [
    ("aaaa bbbb cccc", 9, ["aaaa bbbb", "cccc"]),
    ("abcdefghij", 4, ["abcd", "efgh", "ij"]),  # a word longer than the cap is cut
    ("ab", 4, ["ab"]),
    ("", 4, [""]),
])
def test_text_segments(text, cap, expect):
    assert text_segments(text, cap) == expect
