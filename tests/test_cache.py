"""The embedding cache: hits embed nothing, interrupted runs resume, identities and dims are kept apart."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.store.cache import EmbeddingCache, embed
from sibscan.encoders.base import Encoder, l2_normalise
from sibscan.errors import CompatibilityError
from sibscan.items import Items


class CountingEncoder(Encoder):
    """A deterministic fake: the vector of row ``x`` is a fixed random projection of ``x``."""

    name = "counting"
    modality = "table"

    def __init__(self, dim: int = 8, identity: str = "counting(v1)", fail_after: int | None = None, batch_size: int = 16):
        self.dim = dim
        self.identity = identity
        self.batch_size = batch_size
        self.calls = 0
        self.encoded = 0
        self.fail_after = fail_after
        self.proj = np.random.default_rng(0).standard_normal((4, dim))

    def encode(self, batch):
        if self.fail_after is not None and self.encoded >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls += 1
        self.encoded += len(batch)
        return l2_normalise(np.asarray(batch) @ self.proj)


def _items(n: int, seed: int = 1) -> tuple[Items, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((n, 4))
    fp = rng.integers(0, 2**63, size=(n, 2), dtype=np.uint64)
    return Items("train", "table", ids=[f"r{i}" for i in range(n)], values=values), fp


def _reference(items: Items, enc: CountingEncoder) -> np.ndarray:
    return l2_normalise(items.values @ enc.proj)


def test_second_run_embeds_nothing(tmp_path):
    items, fp = _items(100)
    enc = CountingEncoder()
    first = embed(items, enc, cache_dir=tmp_path, fingerprints=fp, block_size=32, progress=False)
    assert enc.encoded == 100
    np.testing.assert_allclose(first, _reference(items, enc), atol=2e-3)  # float16 storage
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    again = CountingEncoder()
    second = embed(items, again, cache_dir=tmp_path, fingerprints=fp, block_size=32, progress=False)
    assert again.calls == 0
    np.testing.assert_array_equal(first, second)


def test_only_missing_items_are_embedded_and_duplicates_once(tmp_path):
    items, fp = _items(60)
    enc = CountingEncoder()
    embed(items.subset(np.arange(40)), enc, cache_dir=tmp_path, fingerprints=fp[:40], progress=False)
    assert enc.encoded == 40
    # 20 new rows, two of which repeat a new row's fingerprint (exact twins): 18 distinct to embed
    fp2 = fp.copy()
    fp2[58] = fp2[45]
    items.values[58] = items.values[45]
    fp2[59] = fp2[45]
    items.values[59] = items.values[45]
    enc2 = CountingEncoder()
    out = embed(items, enc2, cache_dir=tmp_path, fingerprints=fp2, progress=False, dtype="float16")
    assert enc2.encoded == 18
    np.testing.assert_allclose(out, _reference(items, enc2), atol=2e-3)
    np.testing.assert_array_equal(out[58], out[45])


def test_interrupted_run_resumes_after_last_finished_block(tmp_path):
    items, fp = _items(100)
    enc = CountingEncoder(fail_after=50, batch_size=25)
    with pytest.raises(KeyboardInterrupt):
        embed(items, enc, cache_dir=tmp_path, fingerprints=fp, block_size=25, progress=False)
    # blocks of 25: the first two blocks were committed, the third never started
    assert len(EmbeddingCache(tmp_path, enc)) == 50
    resumed = CountingEncoder(batch_size=25)
    out = embed(items, resumed, cache_dir=tmp_path, fingerprints=fp, block_size=25, progress=False)
    assert resumed.encoded == 50
    np.testing.assert_allclose(out, _reference(items, resumed), atol=2e-3)


def test_interruption_inside_a_block_leaves_no_partial_block(tmp_path):
    items, fp = _items(40)
    enc = CountingEncoder(fail_after=30, batch_size=10)  # dies inside the second 20-item block
    with pytest.raises(KeyboardInterrupt):
        embed(items, enc, cache_dir=tmp_path, fingerprints=fp, block_size=20, progress=False)
    cache = EmbeddingCache(tmp_path, enc)
    assert len(cache) == 20 and cache.n_shards == 1
    assert not list(cache.path.glob("*.tmp*")), "temporary files must not survive"


def test_identity_change_uses_a_separate_cache(tmp_path):
    items, fp = _items(30)
    embed(items, CountingEncoder(identity="counting(v1)"), cache_dir=tmp_path, fingerprints=fp, progress=False)
    other = CountingEncoder(identity="counting(v2)")
    embed(items, other, cache_dir=tmp_path, fingerprints=fp, progress=False)
    assert other.encoded == 30
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2
    # and dtype is part of the key too
    f32 = CountingEncoder(identity="counting(v1)")
    out = embed(items, f32, cache_dir=tmp_path, fingerprints=fp, dtype="float32", progress=False)
    assert f32.encoded == 30
    np.testing.assert_allclose(out, _reference(items, f32), atol=1e-6)


def test_dimension_mismatch_is_a_compatibility_error(tmp_path):
    items, fp = _items(10)
    embed(items, CountingEncoder(dim=8), cache_dir=tmp_path, fingerprints=fp, progress=False)
    with pytest.raises(CompatibilityError, match=r"holds 8-dim vectors but encoder .* gives 16-dim vectors; delete .* or pass another --cache-dir"):
        embed(items, CountingEncoder(dim=16), cache_dir=tmp_path, fingerprints=fp, progress=False)


def test_encoder_returning_wrong_width_is_refused(tmp_path):
    items, fp = _items(10)
    enc = CountingEncoder(dim=8)
    enc.dim = 5  # declares 5, returns 8
    with pytest.raises(CompatibilityError, match=r"returned an array of shape \(10, 8\) for 10 items, but declares dim=5"):
        embed(items, enc, cache_dir=tmp_path, fingerprints=fp, progress=False)


def test_files_are_committed_atomically(tmp_path):
    items, fp = _items(50)
    enc = CountingEncoder()
    embed(items, enc, cache_dir=tmp_path, fingerprints=fp, block_size=20, progress=False)
    cache = EmbeddingCache(tmp_path, enc)
    names = sorted(p.name for p in cache.path.iterdir())
    assert "meta.json" in names
    assert len([n for n in names if n.endswith(".emb.npy")]) == 3 == len([n for n in names if n.endswith(".fp.npy")])
    assert not [n for n in names if ".tmp" in n]
    # an embeddings file without its fingerprints (crash between the two renames) is ignored
    emb = sorted(cache.path.glob("*.emb.npy"))[0]  # the first 20-item block
    emb.with_name(emb.name.replace(".emb.npy", ".fp.npy")).unlink()
    cache.refresh()
    assert len(cache) == 30
    again = CountingEncoder()
    out = embed(items, again, cache_dir=tmp_path, fingerprints=fp, block_size=20, progress=False)
    assert again.encoded == 20
    np.testing.assert_allclose(out, _reference(items, again), atol=2e-3)


def test_lookup_matches_brute_force(tmp_path):
    items, fp = _items(200, seed=3)
    enc = CountingEncoder()
    cache = EmbeddingCache(tmp_path, enc)
    cache.add(fp[:120:2], np.ones((60, 8), np.float32) / np.sqrt(8))
    cache.add(fp[1:120:2], np.ones((60, 8), np.float32) / np.sqrt(8))
    cache.refresh()
    pos = cache.find(fp)
    brute = np.array([any((fp[i] == fp[j]).all() for j in range(120)) for i in range(200)])
    np.testing.assert_array_equal(pos >= 0, brute)


def test_no_cache_dir_embeds_everything(tmp_path):
    items, _ = _items(33)
    enc = CountingEncoder()
    out = embed(items, enc, cache_dir=None, block_size=10, progress=False)
    assert enc.encoded == 33
    np.testing.assert_allclose(out, _reference(items, enc), atol=1e-6)
    assert not list(tmp_path.iterdir())


def test_bad_fingerprints_shape(tmp_path):
    items, fp = _items(5)
    with pytest.raises(ValueError, match=r"fingerprints have shape \(4, 2\), expected \(5, 2\)"):
        embed(items, CountingEncoder(), cache_dir=tmp_path, fingerprints=fp[:4], progress=False)
