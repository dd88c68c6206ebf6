"""Verification stage: pair-correlation kernels against brute force, verifiers on planted copies."""
from __future__ import annotations

import codecs
import contextlib
import io

import numpy as np
import pytest

from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.kernels.lagcorr import series_lag_corr, series_lag_corr_reference
from sibscan.kernels.paircorr import image_pair_corr
from sibscan.kernels.paircorr_reference import blur_reference, image_pair_corr_reference
from sibscan.verify import default_verifier, get_verifier, list_verifiers
from sibscan.verify.images import describe_image_transform
import sibscan.kernels.textalign as textalign_module
from sibscan.kernels.textalign import (
    boilerplate_mask,
    lcs_length,
    longest_common_run,
    shingle_document_frequency,
    shingle_hashes,
    tokenize,
    word_diff,
)
from sibscan.verify.text import TextAlignVerifier


# -- image kernel ------------------------------------------------------------------------------
@pytest.mark.parametrize("channels,detail", [(1, 0.0), (3, 0.0), (1, 0.25), (3, 0.6)])
def test_image_kernel_matches_reference(channels, detail):
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    rng = np.random.default_rng(channels)
    q = rng.random((7, channels, 22, 22))
    d = rng.random((7, channels, 22, 22))
    d[0] = np.roll(q[0], (2, -1), axis=(1, 2))
    d[1] = q[1][..., ::-1] * 2.0 + 0.3
    d[2] = 0.7 * q[2] + 0.3 * d[2]
    q[3] = np.linspace(0.0, 1.0, 22)  # a ramp: its detail band is (nearly) flat
    q[4, 0], d[4, 0] = 0.5, np.linspace(0.0, 1.0, 22)[:, None]  # channel 0 flat on one side only
    fast = image_pair_corr(q, d, max_shift=3, scales=(1.0, 0.8), detail=detail, detail_sigma=2.0)
    ref = image_pair_corr_reference(q, d, max_shift=3, scales=(1.0, 0.8), detail=detail, detail_sigma=2.0)
    np.testing.assert_allclose(fast.score, ref.score, atol=2e-5)
    np.testing.assert_allclose(fast.ncc, ref.ncc, atol=2e-5)
    for field in ("flipped", "dy", "dx", "crop_query", "crop_database"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(ref, field), err_msg=field)
    if detail:
        assert not np.allclose(fast.score, fast.ncc)  # the detail band moved the scores


def test_blur_reference_is_a_normalised_mirrored_gaussian():
    x = np.random.default_rng(3).random((2, 9, 13))
    out = blur_reference(x, 5.0)  # radius 20: offsets reflect more than once in 9 and 13 pixels
    np.testing.assert_allclose(blur_reference(np.full((9, 13), 0.7), 5.0), 0.7)
    np.testing.assert_allclose(out.mean(), x.mean(), atol=0.05)
    assert out.std() < x.std() / 3
    # mirrored edges: blurring a left-right symmetric image keeps it symmetric
    sym = np.concatenate([x[0], x[0][:, ::-1]], axis=1)
    np.testing.assert_allclose(blur_reference(sym, 1.5), blur_reference(sym, 1.5)[:, ::-1], atol=1e-12)


def test_image_kernel_detail_tells_a_copy_from_a_look_alike():
    """Same coarse layout, different fine structure: the detail band pulls the look-alike down, not
    a copy whose brightness changed."""
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    rng = np.random.default_rng(4)
    yy, xx = np.mgrid[:32, :32] / 32.0
    layout = np.exp(-((yy - 0.4) ** 2 + (xx - 0.6) ** 2) / 0.05)
    base = layout + 0.15 * rng.random((32, 32))
    look_alike = layout + 0.15 * rng.random((32, 32))
    copy = np.clip(1.2 * base + 0.05, 0, 1.3) + 0.01 * rng.random((32, 32))
    q = np.stack([copy, look_alike])[:, None]
    d = np.stack([base, base])[:, None]
    plain = image_pair_corr(q, d, max_shift=2, scales=(1.0,))
    blended = image_pair_corr(q, d, max_shift=2, scales=(1.0,), detail=0.25)
    assert plain.score[1] > 0.9  # the whole-image NCC alone scores the look-alike high
    assert blended.score[0] > 0.97 and blended.score[1] < plain.score[1] - 0.1
    with pytest.raises(ValueError, match="detail must be in"):
        image_pair_corr(q, d, max_shift=2, detail=1.5)


def test_image_kernel_recovers_shift_flip_and_gain():
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    rng = np.random.default_rng(0)
    base = rng.random((3, 1, 32, 32))
    q = np.stack([np.roll(base[0], (1, 3), axis=(1, 2)), base[1][..., ::-1], 0.5 * base[2] + 0.2])
    res = image_pair_corr(q, base, max_shift=4, batch_size=2)
    assert res.score.min() > 0.999
    assert (res.dy[0], res.dx[0]) == (1, 3)  # the query is the database image moved 1 down, 3 right
    assert res.flipped.tolist() == [False, True, False]
    assert describe_image_transform(False, 1, 3, 1.0, 1.0, "test", "train") == "shifted 3 px right 1 px down"


def test_image_kernel_flat_is_nan_and_bad_shapes_raise():
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    q = np.ones((2, 1, 16, 16))
    d = np.random.default_rng(1).random((2, 1, 16, 16))
    assert np.isnan(image_pair_corr(q, d, max_shift=2).score).all()
    with pytest.raises(ValueError, match="same|shape"):
        image_pair_corr(q, d[:1], max_shift=2)
    with pytest.raises(ValueError, match="max_shift=8 does not fit"):
        image_pair_corr(q, d, max_shift=8)


@pytest.mark.cuda
def test_image_kernel_cuda_matches_cpu():
    rng = np.random.default_rng(2)
    q, d = rng.random((300, 1, 64, 64)), rng.random((300, 1, 64, 64))
    d[:100] = 0.8 * q[:100] + 0.2 * d[:100]
    cpu, gpu = image_pair_corr(q, d, device="cpu", detail=0.25), image_pair_corr(q, d, device="cuda", detail=0.25)
    np.testing.assert_allclose(cpu.score, gpu.score, atol=1e-4)
    np.testing.assert_allclose(cpu.ncc, gpu.ncc, atol=1e-4)


# -- registry --------------------------------------------------------------------------------------
def test_registry_has_the_three_verifiers():
    assert [c.name for c in list_verifiers("image")] == ["imagecorr", "imagefuse", "imagematch"]
    assert default_verifier("image") == "imagecorr"
    assert default_verifier("text") == "textalign"
    assert default_verifier("table") == "lagcorr"
    with pytest.raises(SibscanError, match="unknown verifier 'nope'; available: .*imagecorr.*lagcorr.*textalign"):
        get_verifier("nope")


# -- text ------------------------------------------------------------------------------------------
def _zen_words():
    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen; here it is data
        import this
    return tokenize(codecs.decode(this.s, "rot13"))


def test_word_diff_matches_words_as_the_verifier_does():
    # the labelling page and the report mark what differs the way textalign compares: casefolded
    a, b = word_diff("The quick  brown fox", "the QUICK red fox")
    assert a == [("The", False), ("quick", False), ("brown", True), ("fox", False)]
    assert b == [("the", False), ("QUICK", False), ("red", True), ("fox", False)]


def test_lcs_and_run_match_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(100):
        a, b = rng.integers(0, 4, rng.integers(0, 25)), rng.integers(0, 4, rng.integers(0, 25))
        table = np.zeros((len(a) + 1, len(b) + 1), int)
        run = 0
        for i in range(len(a)):
            for j in range(len(b)):
                table[i + 1, j + 1] = max(table[i, j + 1], table[i + 1, j], table[i, j] + (a[i] == b[j]))
        streak = np.zeros((len(a) + 1, len(b) + 1), int)
        for i in range(len(a)):
            for j in range(len(b)):
                streak[i + 1, j + 1] = streak[i, j] + 1 if a[i] == b[j] else 0
        run = streak.max() if streak.size else 0
        assert lcs_length(a.tolist(), b.tolist()) == table[-1, -1]
        length, ia, ib = longest_common_run(a, b)
        assert length == run
        np.testing.assert_array_equal(a[ia:ia + length], b[ib:ib + length])


def test_textalign_finds_planted_verbatim_span_in_paraphrase():
    rng = np.random.default_rng(4)
    words = _zen_words()
    original = list(rng.choice(words, 1500))
    # paraphrase: every word swapped for another from the same vocabulary, except the span
    paraphrase = [w if rng.random() < 0.3 else rng.choice(words) for w in original]
    span = original[700:740]
    paraphrase[900:940] = span  # the verbatim stretch moved, inside a long reworded text
    other = list(rng.choice(words, 1500))  # same vocabulary and style: a hard negative
    test = Items("test", "text", ids=["p", "o"], texts=[" ".join(paraphrase), " ".join(other).upper()])
    train = Items("train", "text", ids=["orig"], texts=[" ".join(original)])
    res = get_verifier("textalign", progress=False).verify(test, np.array([0, 1]), train, np.array([0, 0]))
    assert res.scores[0] == pytest.approx(1.0)
    assert res.scores[1] < 0.6
    assert res.details[0].startswith("40-word run: '" + " ".join(span[:8]))
    assert "test words 900-939, train words 700-739" in res.details[0]


def test_textalign_short_and_empty_texts_and_identity():
    v = get_verifier("textalign", progress=False)
    test = Items("test", "text", ids=["a", "b", "c"], texts=["The cat sat.", "", "Ｔｈｅ　ＣＡＴ sat"])
    train = Items("train", "text", ids=["x"], texts=["the cat sat"])
    res = v.verify(test, np.array([0, 1, 2]), train, np.array([0, 0, 0]))
    assert res.scores[0] == pytest.approx(1.0) and res.scores[2] == pytest.approx(1.0)  # NFKC + casefold
    assert np.isnan(res.scores[1]) and res.details[1] == "no words: similarity undefined"
    assert v.identity.startswith("textalign-v2(") and "boilerplate_df=auto" in v.identity
    assert v.identity != get_verifier("textalign", full_run=20).identity
    assert v.identity != get_verifier("textalign", boilerplate_df=10).identity
    assert v.identity != get_verifier("textalign", shingle=6).identity
    with pytest.raises(SibscanError, match="min_run <= full_run"):
        get_verifier("textalign", full_run=4, min_run=8)
    with pytest.raises(SibscanError, match="boilerplate_df must be 0 \\(no masking\\) or >= 2 documents, got 1"):
        get_verifier("textalign", boilerplate_df=1)


def _words(rng, n, vocab=5000):
    return [f"w{i}" for i in rng.integers(0, vocab, n)]


def test_textalign_masks_boilerplate_that_recurs_in_the_corpus():
    rng = np.random.default_rng(7)
    note = _words(rng, 50)  # e.g. numpy's "old polynomial API" note
    query = " ".join(_words(rng, 100) + note + _words(rng, 30))
    source = " ".join(_words(rng, 80) + note + _words(rng, 60))
    others = [" ".join(_words(rng, 90) + note + _words(rng, 20)) for _ in range(5)]
    unrelated = [" ".join(_words(rng, 150)) for _ in range(5)]
    test = Items("test", "text", ids=["q"], texts=[query])
    v = TextAlignVerifier(progress=False)
    # the note recurs in 6 train texts (>= max(3, ...)): boilerplate, the pair is unrelated
    common = Items("train", "text", ids=[f"t{i}" for i in range(6)], texts=[source] + others)
    res = v.verify(test, np.array([0]), common, np.array([0]))
    assert res.scores[0] < 0.5
    assert "50 test and 50 train words masked as boilerplate (8-word shingles in >= 3 texts)" in res.details[0]
    # the same pair when the note is in that one train text only: a real copied passage
    rare = Items("train", "text", ids=[f"t{i}" for i in range(6)], texts=[source] + unrelated)
    res = v.verify(test, np.array([0]), rare, np.array([0]))
    assert res.scores[0] == pytest.approx(1.0)
    assert res.details[0].startswith("50-word run: '" + " ".join(note[:8]))
    assert "masked" not in res.details[0]
    # masking off, or a threshold above the recurrence (6 train + 1 test texts), restores the old score
    assert TextAlignVerifier(boilerplate_df=0, progress=False).verify(test, [0], common, [0]).scores[0] == 1.0
    assert TextAlignVerifier(boilerplate_df=8, progress=False).verify(test, [0], common, [0]).scores[0] == 1.0
    # identical train texts count once: a text duplicated in the train set is not boilerplate
    dup = Items("train", "text", ids=[f"t{i}" for i in range(6)], texts=[source] * 4 + unrelated[:2])
    assert v.verify(test, np.array([0]), dup, np.array([2])).scores[0] == pytest.approx(1.0)
    # a query that is only boilerplate has nothing left to match
    bare = Items("test", "text", ids=["n"], texts=[" ".join(note)])
    assert v.verify(bare, np.array([0]), common, np.array([1])).scores[0] == 0.0


def test_textalign_corpus_is_cached_per_database_object():
    rng = np.random.default_rng(8)
    texts = [" ".join(_words(rng, 30)) for _ in range(4)]
    train = Items("train", "text", ids=list("abcd"), texts=texts)
    test = Items("test", "text", ids=["x"], texts=[texts[1]])
    v = TextAlignVerifier(progress=False)
    first = v.split(train)
    assert v.verify(test, np.array([0, 0]), train, np.array([1, 2])).scores[0] == pytest.approx(1.0)
    assert v.split(train) is first
    copy = Items("train", "text", ids=list("abcd"), texts=list(texts))
    assert v.split(copy) is not first
    np.testing.assert_array_equal(v.split(copy).ids, first.ids)


@pytest.mark.parametrize("chunk, alone", [(None, None), (7, None), (None, 9), (7, 9)])
def test_shingle_document_frequency_matches_brute_force(monkeypatch, chunk, alone):
    if chunk:  # documents hashed a few at a time must give the same counts
        monkeypatch.setattr(textalign_module, "_CHUNK_WORDS", chunk)
    if alone:  # documents of >= 9 words counted in chunks of their own (the sort-only path)
        monkeypatch.setattr(textalign_module, "_ALONE_WORDS", alone)
    rng = np.random.default_rng(9)
    docs = [rng.integers(0, 3, rng.integers(0, 15)) for _ in range(40)]
    docs += [docs[5].copy(), docs[5].copy(), np.array([1, 2], np.int64)]  # duplicates count once
    s = 3
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    hashes, df = shingle_document_frequency(np.concatenate(docs), offsets, s)
    assert np.all(np.diff(hashes.astype(np.float64)) >= 0) and len(np.unique(hashes)) == len(hashes)
    brute = {}
    for doc in {tuple(d.tolist()) for d in docs}:
        for g in {doc[i:i + s] for i in range(len(doc) - s + 1)}:
            brute[g] = brute.get(g, 0) + 1
    fast = dict(zip(hashes.tolist(), df.tolist()))
    assert len(fast) == len(brute)
    assert {g: fast[int(shingle_hashes(np.array(g), s)[0])] for g in brute} == brute
    # the mask: words covered by a shingle in >= 5 documents
    boiler = np.sort(hashes[df >= 5])
    for d in docs[:10]:
        expect = np.zeros(len(d), bool)
        for i in range(len(d) - s + 1):
            if brute[tuple(d[i:i + s].tolist())] >= 5:
                expect[i:i + s] = True
        np.testing.assert_array_equal(boilerplate_mask(d, boiler, s), expect)


# -- series ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("absolute", [False, True])
def test_series_kernel_matches_reference(absolute):
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((6, 2, 40)), rng.standard_normal((6, 2, 40))
    b[0] = np.roll(a[0], 3, axis=-1) * 4 + 1
    b[1] = -a[1]
    a[2, :, 30:] = np.nan  # padding
    b[3, 0, ::5] = np.nan  # missing values
    a[4] = 1.0  # constant: undefined
    fast = series_lag_corr(a, b, max_lag=5, absolute=absolute)
    ref = series_lag_corr_reference(a, b, max_lag=5, absolute=absolute)
    np.testing.assert_allclose(fast.score, ref.score, atol=1e-6)
    np.testing.assert_array_equal(fast.lag, ref.lag)
    np.testing.assert_array_equal(fast.negated, ref.negated)
    assert np.isnan(fast.score[4])


def test_series_kernel_tie_break_contract():
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    # a series against its own negation: r at lags -tau and +tau is the same number (the same pairs,
    # swapped), up to rounding that differs between the FFT path and the loop; both take -tau
    a = np.random.default_rng(8).standard_normal((4, 1, 30))
    fast = series_lag_corr(a, -a, max_lag=4)
    ref = series_lag_corr_reference(a, -a, max_lag=4)
    assert (fast.lag < 0).all(), fast.lag
    np.testing.assert_array_equal(fast.lag, ref.lag)


def test_lagcorr_finds_shifted_window():
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    rng = np.random.default_rng(6)
    walk = np.cumsum(rng.standard_normal((3, 2, 230)), axis=-1)
    train_vals = walk[:, :, :200].reshape(3, -1)
    test_vals = np.full((3, 2 * 200), np.nan)
    shifted = walk[:, :, 7:207]  # test[t] == train[t + 7]
    test_vals[0] = (3 * shifted[0] - 5).ravel()
    test_vals[1] = shifted[1].ravel()
    test_vals[2] = np.cumsum(rng.standard_normal((2, 200)), axis=-1).ravel()
    train = Items("train", "table", ids=list("abc"), values=train_vals, shape=(2, 200))
    test = Items("test", "table", ids=list("xyz"), values=test_vals, shape=(2, 200))
    res = get_verifier("lagcorr", device="cpu").verify(test, np.array([0, 1, 2]), train, np.array([0, 1, 2]))
    assert res.details[:2] == ["lag 7", "lag 7"]  # query[t] matches database[t + 7]
    assert res.scores[0] > 0.999 and res.scores[1] > 0.999
    assert res.scores[2] < res.scores[0]
    assert get_verifier("lagcorr", max_lag=3).identity != get_verifier("lagcorr").identity
    with pytest.raises(SibscanError, match="min_overlap must be in"):
        get_verifier("lagcorr", min_overlap=0)


def test_the_scan_device_reaches_the_verifier(monkeypatch):
    """``--device cpu`` keeps verification on the CPU (a torch verifier defaults to "auto", which on a GPU
    machine would pick CUDA) and ``--no-progress`` silences the verifier's own bar; a verifier without a
    device (textalign) builds without one."""
    pytest.importorskip("torch")
    import sibscan.verify.build as build
    from sibscan.options import VerifyOptions

    seen = []
    real = build.get_verifier
    monkeypatch.setattr(build, "get_verifier", lambda name, **kw: seen.append((name, kw)) or real(name, **kw))
    for name in ("imagecorr", "imagefuse"):  # imagefuse takes device through **options
        v = build.build_verifier(VerifyOptions(verifier=name), "image", "cpu", progress=False)
        assert str(v.device) == "cpu" and v.progress is False and seen[-1] == (name, {"device": "cpu", "progress": False})
    # --no-progress reaches textalign's own progress too; it has no device
    v = build.build_verifier(VerifyOptions(), "text", "cpu", progress=False)
    assert v.name == "textalign" and v.progress is False and seen[-1] == ("textalign", {"progress": False})
