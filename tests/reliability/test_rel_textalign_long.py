"""Issue 13, 'a 44 MB single-line text hung textalign': the cost of verifying one pair is bounded.

The longest run is searched over the whole texts in O(n) numpy work per step; the LCS (n_a * n_b
bit operations) runs whole only below ``LCS_CELLS`` word pairs, and in windows around the run
above it, with the windows named in the detail.  The timing claim (1-million-word train text
against a 200-word test text) is measured by ``python -m benchmarks.verify_long``, not here.
"""
from __future__ import annotations

import numpy as np
import pytest

import sibscan.verify.text as text_module
from sibscan.items import Items
from sibscan.kernels.textalign import lcs_length, longest_common_run
from sibscan.verify import get_verifier

VOCAB = np.array([f"w{i}" for i in range(3000)])


def _pair(rng, n_long, n_short, planted, at):
    long_words = VOCAB[rng.integers(0, len(VOCAB), n_long)]
    short_words = np.concatenate([VOCAB[rng.integers(0, len(VOCAB), n_short - planted)], long_words[at:at + planted]])
    train = Items("train", "text", ids=["long"], texts=[" ".join(long_words)])
    test = Items("test", "text", ids=["short"], texts=[" ".join(short_words)])
    return train, test


@pytest.fixture
def small_cap(monkeypatch):
    """LCS_CELLS lowered to 2**16, and every LCS call's size recorded."""
    sizes = []

    def recording(a, b):
        sizes.append(len(a) * len(b))
        return lcs_length(a, b)

    monkeypatch.setattr(text_module, "LCS_CELLS", 1 << 16)
    monkeypatch.setattr(text_module, "lcs_length", recording)
    return sizes


def test_long_train_text_finds_the_planted_run_with_the_lcs_cost_capped(small_cap):
    rng = np.random.default_rng(0)
    train, test = _pair(rng, n_long=30_000, n_short=200, planted=60, at=21_000)
    res = get_verifier("textalign", progress=False).verify(test, np.array([0]), train, np.array([0]))
    assert res.scores[0] == 1.0  # a 60-word verbatim run scores 1 however long the train text is
    assert "60-word run" in res.details[0] and "train words 21000-21059" in res.details[0], res.details[0]
    assert small_cap and max(small_cap) <= 1 << 16
    # the window is named: the whole 200-word test text, 327 train words centred on the run
    assert "over test words 0-199 and train words 20867-21193" in res.details[0], res.details[0]
    assert "aligned in windows" in res.details[0]


def test_two_long_texts_are_aligned_in_equal_windows_and_their_f1_is_exact_there(small_cap):
    rng = np.random.default_rng(1)
    train, test = _pair(rng, n_long=5_000, n_short=4_000, planted=50, at=3_000)
    verifier = get_verifier("textalign", progress=False)
    res = verifier.verify(test, np.array([0]), train, np.array([0]))
    assert max(small_cap) <= 1 << 16
    a, b = verifier.split(test).doc(0), verifier.split(train).doc(0)
    _, run, ia, ib, f1, span = verifier.score_pair(a, b)
    assert run == 50 and ib == 3_000 and span is not None
    a0, a1, b0, b1 = span
    assert a1 - a0 == b1 - b0 == 256  # sqrt(2**16) words of each, centred on the run
    assert a0 <= ia and ia + run <= a1 and b0 <= ib and ib + run <= b1
    assert f1 == pytest.approx(2 * lcs_length(a[a0:a1], b[b0:b1]) / (a1 - a0 + b1 - b0))
    assert f"LCS F1 {f1:.2f} over test words {a0}-{a1 - 1} and train words {b0}-{b1 - 1}" in res.details[0]


def test_pairs_below_the_cap_are_aligned_whole():
    rng = np.random.default_rng(2)
    train, test = _pair(rng, n_long=2_000, n_short=200, planted=30, at=500)
    verifier = get_verifier("textalign", progress=False)
    res = verifier.verify(test, np.array([0]), train, np.array([0]))
    a, b = verifier.split(test).doc(0), verifier.split(train).doc(0)
    *_, f1, span = verifier.score_pair(a, b)
    assert span is None and "windows" not in res.details[0]
    assert f1 == pytest.approx(2 * lcs_length(a, b) / (len(a) + len(b)))


def test_run_and_lcs_agree_with_a_reference_when_one_side_is_much_longer():
    rng = np.random.default_rng(3)
    for _ in range(20):
        b = rng.integers(0, 6, rng.integers(200, 600))
        start = int(rng.integers(0, len(b) - 15))
        a = np.concatenate([rng.integers(0, 6, 5), b[start:start + 15], rng.integers(0, 6, 5)])
        for x, y in ((a, b), (b, a)):  # the shorter side first and second
            length, ix, iy = longest_common_run(x, y)
            assert length >= 15
            np.testing.assert_array_equal(x[ix:ix + length], y[iy:iy + length])
            assert not _has_run(x, y, length + 1)
        assert lcs_length(a, b) == lcs_length(b, a) == _lcs_dp(a, b)
        assert lcs_length([str(t) for t in a], [str(t) for t in b]) == _lcs_dp(a, b)  # any hashable tokens


def _has_run(x, y, length):
    grams = {tuple(x[i:i + length]) for i in range(len(x) - length + 1)}
    return any(tuple(y[j:j + length]) in grams for j in range(len(y) - length + 1))


def _lcs_dp(a, b):
    prev = [0] * (len(b) + 1)
    for ta in a:
        cur = [0]
        for j, tb in enumerate(b):
            cur.append(prev[j] + 1 if ta == tb else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]
