"""Weight-free encoders (pixels, phash, ngram, minhash, znorm, raw), their kernels, and
``sibscan encoders``.  Planted siblings are real transforms of real items; the nearest neighbour is
checked by brute-force numpy argmax over the embeddings."""
from __future__ import annotations

import importlib.util
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.encoders import get_encoder, list_encoders
from sibscan.errors import InputError, SibscanError
from sibscan.kernels.minhash import (
    EMPTY,
    char_ngram_hashes,
    hash_strings,
    minhash_signatures,
    word_ngram_hashes,
)
from sibscan.kernels.phash import bits_to_vectors, dct_matrix, phash_bits

HAS_PIL = importlib.util.find_spec("PIL") is not None


# ---------------------------------------------------------------- planted images
def _pil():
    """PIL.Image, or a skip (the image encoders need the images extra)."""
    return pytest.importorskip("PIL.Image", reason="Pillow is not installed (pip install 'sibscan[images]')")


def _rgb(a):
    PIL = _pil()
    a = np.asarray(a)
    if a.dtype == bool:
        a = a.astype(np.uint8) * 255
    if a.ndim == 2:
        a = np.stack([a] * 3, axis=-1)
    return PIL.fromarray(a[..., :3].astype(np.uint8))


@pytest.fixture(scope="module")
def planted_images(tmp_path_factory):
    """Train: 10 real photos + hard negatives (other crops of the same photos, a mirror);
    test: each of 4 photos resized, re-encoded as JPEG q=20, and cropped by a few pixels."""
    PIL = _pil()
    skdata = pytest.importorskip("skimage.data", reason="scikit-image is not installed (it is in the dev extra)")
    root = tmp_path_factory.mktemp("planted")
    names = ["chelsea", "astronaut", "coffee", "camera", "rocket", "coins", "moon", "brick", "grass", "page"]
    photos = {n: _rgb(getattr(skdata, n)()) for n in names}
    train, truth, test = [], {}, []
    for n, im in photos.items():
        p = root / f"train_{n}.png"
        im.save(p, compress_level=1)  # lossless either way; the default level took ~4x as long
        train.append(str(p))
    # hard negatives: the same photo, a different region / mirrored
    for n in ("chelsea", "astronaut", "coffee", "camera"):
        im = photos[n]
        w, h = im.size
        half = im.crop((0, 0, w // 2, h)).resize((w, h))
        p = root / f"train_{n}_half.png"
        half.save(p, compress_level=1)
        train.append(str(p))
        mirror = im.transpose(PIL.Transpose.FLIP_TOP_BOTTOM)
        p = root / f"train_{n}_flip.png"
        mirror.save(p, compress_level=1)
        train.append(str(p))
    for n in ("chelsea", "astronaut", "coffee", "camera"):
        im = photos[n]
        w, h = im.size
        variants = {
            "resized": im.resize((w // 2, h // 2), PIL.Resampling.BILINEAR),
            "jpeg20": im,
            "cropped": im.crop((3, 4, w - 5, h - 2)),
        }
        for kind, v in variants.items():
            p = root / f"test_{n}_{kind}.jpg"
            v.save(p, quality=20 if kind == "jpeg20" else 90)
            test.append(str(p))
            truth[str(p)] = train.index(str(root / f"train_{n}.png"))
    return train, test, truth


@pytest.mark.parametrize("name", ["pixels", "phash"])
def test_image_encoders_find_planted_siblings(planted_images, name):
    train, test, truth = planted_images
    enc = get_encoder(name, device="cpu")
    tr, te = enc.encode(train), enc.encode(test)
    assert tr.shape == (len(train), enc.dim) and tr.dtype == np.float32
    assert np.allclose(np.linalg.norm(tr, axis=1), 1.0, atol=1e-5)
    sims = te @ tr.T
    nearest = sims.argmax(axis=1)
    expected = np.array([truth[p] for p in test])
    assert (nearest == expected).all(), [(test[i], train[nearest[i]]) for i in np.flatnonzero(nearest != expected)]
    # the sibling is clearly above every non-sibling for the same query
    others = sims.copy()
    others[np.arange(len(test)), expected] = -np.inf
    margin = sims[np.arange(len(test)), expected] - others.max(axis=1)
    assert (margin > 0.05).all(), margin


def test_pixels_options_and_identity(planted_images):
    train, _, _ = planted_images
    gray = get_encoder("pixels", size=16, color=False)
    assert gray.dim == 256 and "size=16 gray" in gray.identity
    assert gray.identity != get_encoder("pixels").identity
    emb = gray.encode(train[:2])
    assert emb.shape == (2, 256)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        get_encoder("pixels", colour=True)
    with pytest.raises(InputError, match="size must be an integer >= 2"):
        get_encoder("pixels", size=1)


def test_image_encoder_refuses_broken_file(tmp_path):
    _pil()
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"")
    with pytest.raises(InputError, match="bad.png: zero-byte image file"):
        get_encoder("pixels").encode([str(bad)])


def test_dct_matrix_matches_scipy():
    fft = pytest.importorskip("scipy.fft")
    x = np.random.default_rng(0).normal(size=(32, 32))
    assert np.allclose(dct_matrix(32) @ x, fft.dct(x, axis=0, norm="ortho"))


def test_phash_bits_match_brute_force_and_hamming_identity():
    fft = pytest.importorskip("scipy.fft")
    rng = np.random.default_rng(1)
    gray = rng.uniform(0, 255, size=(6, 32, 32))
    bits = phash_bits(gray, 8)
    for i in range(len(gray)):
        low = fft.dctn(gray[i], norm="ortho")[:8, :8].ravel()
        assert np.array_equal(bits[i], low > np.median(low))
    v = bits_to_vectors(bits)
    hamming = (bits[:, None, :] != bits[None, :, :]).sum(-1)
    assert np.allclose(v @ v.T, 1 - 2 * hamming / 64, atol=1e-6)


def test_phash_of_identical_pixels_is_identical(planted_images, tmp_path):
    train, _, _ = planted_images
    im = _pil().open(train[0])
    other = tmp_path / "same.bmp"
    im.save(other)
    enc = get_encoder("phash")
    a, b = enc.encode([train[0], str(other)])
    assert float(a @ b) == pytest.approx(1.0)


# ---------------------------------------------------------------- planted text
@pytest.fixture(scope="module")
def sentences():
    topics = pytest.importorskip("pydoc_data.topics").topics
    text = " ".join(topics[k] for k in sorted(topics))
    sents = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text)]
    sents = [s for s in sents if 12 <= len(s.split()) <= 40]
    # keep distinct sentences, deterministic order
    seen, out = set(), []
    for s in sents:
        key = " ".join(s.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out[:300]


def _perturb(s: str, rng) -> str:
    words = s.split()
    # case change, doubled spaces, a newline, a tab
    words = [w.upper() if rng.random() < 0.3 else w for w in words]
    seps = rng.choice(["  ", " ", "\n", "\t "], size=len(words) - 1)
    return "".join(w + sep for w, sep in zip(words, list(seps) + [""]))


def _edited(s: str) -> str:
    words = s.split()
    return " ".join(words[:-3] + ["zebra"] + words[-3:])  # one inserted word: a near, not exact, copy


@pytest.mark.parametrize("name", ["ngram", "minhash"])
def test_text_encoders_find_planted_siblings(sentences, name):
    rng = np.random.default_rng(0)
    train = sentences
    picks = rng.choice(len(train), size=25, replace=False)
    test = [_perturb(train[i], rng) for i in picks[:15]] + [_edited(train[i]) for i in picks[15:]]
    enc = get_encoder(name)
    tr, te = enc.encode(train), enc.encode(test)
    assert tr.shape == (len(train), enc.dim)
    sims = te @ tr.T
    assert (sims.argmax(axis=1) == picks).all()
    # whitespace/case changes vanish after normalisation: the copies score 1
    assert np.allclose(sims[np.arange(15), picks[:15]], 1.0, atol=1e-5)
    others = sims.copy()
    others[np.arange(len(test)), picks] = -np.inf
    assert (sims[np.arange(len(test)), picks] - others.max(axis=1) > 0.2).all()


def _char_shingles(s: str, n: int) -> set:
    return {s[i:i + n] for i in range(len(s) - n + 1)} if len(s) >= n else ({s} if s else set())


def test_minhash_cosine_estimates_jaccard(sentences):
    from sibscan.kernels.textalign import normalise_text

    enc = get_encoder("minhash", num_perm=512, bits=6)
    a = [sentences[i] for i in range(40)]
    b = [" ".join(s.split()[: len(s.split()) * 2 // 3]) for s in a]  # truncations: Jaccard ~0.4-0.7
    va, vb = enc.encode(a), enc.encode(b)
    est = (va * vb).sum(axis=1)
    true = np.array([
        len(x & y) / len(x | y)
        for x, y in ((_char_shingles(normalise_text(p), 5), _char_shingles(normalise_text(q), 5)) for p, q in zip(a, b))
    ])
    assert np.abs(est - true).mean() < 0.03
    assert np.abs(est - true).max() < 0.12


def test_minhash_signatures_equal_datasketch():
    datasketch = pytest.importorskip("datasketch")
    docs = ["the quick brown fox jumps", "", "abc", "lorem ipsum dolor sit amet, consectetur"]
    hashes, offsets = char_ngram_hashes(docs, 4)
    sig = minhash_signatures(hashes, offsets, num_perm=64, seed=7, block=5)
    for i in range(len(docs)):
        m = datasketch.MinHash(num_perm=64, seed=7, scheme="affine64", hashfunc=int)
        m.update_batch(hashes[offsets[i]:offsets[i + 1]].tolist())
        if offsets[i] == offsets[i + 1]:
            assert (sig[i] == EMPTY).all()
        else:
            assert np.array_equal(sig[i], m.hashvalues)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=30), min_size=1, max_size=6), st.integers(1, 4))
def test_char_ngram_hashes_match_brute_force(texts, n):
    hashes, offsets = char_ngram_hashes(texts, n)
    for i, t in enumerate(texts):
        grams = _char_shingles(t, n)
        got = hashes[offsets[i]:offsets[i + 1]]
        assert len(got) == (max(len(t) - n + 1, 0) if len(t) >= n else len(grams))
        assert len(set(got.tolist())) == len(grams)  # equal n-grams hash equal, distinct differ
    # minhash of a union is the slot-wise minimum
    sig = minhash_signatures(hashes, offsets, num_perm=16)
    union = minhash_signatures(hashes, np.array([0, len(hashes)]), num_perm=16)
    assert np.array_equal(union[0], sig.min(axis=0))


def test_word_ngrams_and_string_hashes():
    h = hash_strings(["a", "b", "a", "", "a\x00", "x" * 1000, "x" * 1000])
    assert h[0] == h[2] and h[5] == h[6] and len(set(h[[0, 1, 3, 4, 5]].tolist())) == 5
    w, off = word_ngram_hashes([["a", "b", "c"], ["b", "c"], []], 2)
    assert list(off) == [0, 2, 3, 3] and w[1] == w[2]


# ---------------------------------------------------------------- numeric rows
def test_znorm_is_pearson_and_scale_invariant():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 50))
    x[1] = 4.0 * x[0] - 7.0
    enc = get_encoder("znorm")
    e = enc.encode(x)
    assert enc.dim == 50
    assert float(e[0] @ e[1]) == pytest.approx(1.0, abs=1e-6)
    assert np.allclose(e @ e.T, np.corrcoef(x), atol=1e-5)
    with pytest.raises(InputError, match="rows have 40 values, this encoder was set up for 50"):
        enc.encode(x[:, :40])


def test_znorm_missing_values_and_padding():
    enc = get_encoder("znorm")
    x = np.arange(20, dtype=float)[None].repeat(3, 0)
    x[1, 5] = np.nan  # a missing value inside: fine
    x[2, -1] = np.nan  # one missing last value: still a missing value, not padding
    e = enc.encode(x)
    assert np.isfinite(e).all() and (e[0] @ e[1]) > 0.97 and (e[0] @ e[2]) > 0.9
    ragged = np.arange(20, dtype=float)[None].repeat(2, 0)
    ragged[1, 14:] = np.nan
    with pytest.raises(InputError, match="znorm needs rows of one length: row 1 has 14 values, row 0 has 20"):
        get_encoder("znorm").encode(ragged)
    flat = get_encoder("znorm").encode(np.ones((1, 10)))
    assert not flat.any()


def test_numeric_dim_is_the_row_length():
    enc = get_encoder("znorm", dim=12, device="cpu")
    assert enc.dim == 12 and "d=12" in enc.identity
    assert get_encoder("znorm", dim=13).identity != enc.identity  # caches of other widths never mix
    lazy = get_encoder("raw")
    with pytest.raises(SibscanError,
                       match=r"the raw encoder's dimension is the row length: build it with get_encoder\('raw', dim="):
        lazy.dim
    lazy.encode(np.ones((2, 7)))
    assert lazy.dim == 7 and "d=7" in lazy.identity


def test_raw_encoder():
    x = np.array([[3.0, 4.0, np.nan], [6.0, 8.0, 0.0]])
    e = get_encoder("raw").encode(x)
    assert np.allclose(e, [[0.6, 0.8, 0.0], [0.6, 0.8, 0.0]])
    with pytest.raises(InputError, match="row 0 holds an infinite value"):
        get_encoder("raw").encode(np.array([[np.inf, 1.0]]))


# ---------------------------------------------------------------- registry and CLI
def test_registry_errors():
    with pytest.raises(SibscanError, match=r"unknown encoder 'pixel'; available: .*phash, pixels, raw, znorm"):
        get_encoder("pixel")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        get_encoder("ngram", bogus=1)
    with pytest.raises(SibscanError, match="unknown device 'tpu'"):
        get_encoder("minhash", device="tpu")
    weightfree = {c.name: c for c in list_encoders() if c.weight_free}
    assert {"pixels", "phash", "ngram", "minhash", "znorm", "raw"} <= set(weightfree)
    numeric = {"znorm": {"dim": 5}, "raw": {"dim": 5}}
    names = ["ngram", "minhash", "znorm", "raw"] + (["pixels", "phash"] if HAS_PIL else [])
    idents = {n: get_encoder(n, **numeric.get(n, {})).identity for n in names}
    assert len(set(idents.values())) == len(idents)


def test_cli_encoders_table_and_json():
    runner = CliRunner()
    result = runner.invoke(app, ["encoders"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:5] == ["name", "modality", "dim", "weights", "usable"]
    row = next(ln for ln in lines if ln.startswith("pixels "))
    # a core install lists it too, as not usable here (no Pillow), its dimension unknown
    assert row.split()[1:5] == (["image", "3072", "none", "yes"] if HAS_PIL else ["image", "?", "none", "no"])
    assert next(ln for ln in lines if ln.startswith("znorm ")).split()[2] == "?"
    result = runner.invoke(app, ["encoders", "--modality", "text", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {r["modality"] for r in rows} == {"text"}
    ngram = next(r for r in rows if r["name"] == "ngram")
    assert ngram == {**ngram, "dim": 4096, "weight_free": True, "usable": True, "why": ""}
    result = runner.invoke(app, ["encoders", "--modality", "audio"], env={"COLUMNS": "200"})
    assert result.exit_code == 1  # a parser choice
    assert "'audio' is not one of 'table', 'text', 'image'" in result.output
