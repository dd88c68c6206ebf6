"""Issue 13, 'memory bounded by the block size', in the encode stage: the embedding cache looks rows up
through bucket files (:mod:`sibscan.cachelookup`) instead of a sorted index of every key, and the
train→test stream's last block no longer grows past the block size.

The lookup must answer what the whole index answers (:meth:`EmbeddingCache.find`, kept as the
brute-force reference), with many buckets and answer ranges; its memory must not grow with the rows
asked (the whole index held 28 bytes per cached key and sorted copies of the keys asked).
"""
from __future__ import annotations

import hashlib
import tracemalloc

import numpy as np
import pytest

import sibscan.cache as cache_module
import sibscan.cachelookup as lookup
from sibscan.cache import EmbeddingCache, embed
from sibscan.candidates import _fold_tail
from sibscan.diskarray import NpyWriter
from sibscan.encoders.base import Encoder, l2_normalise
from sibscan.items import Items


class _Projection(Encoder):
    name, modality = "projection", "table"

    def __init__(self, dim: int = 8):
        self.dim, self.identity, self.batch_size, self.encoded = dim, f"projection({dim})", 64, 0
        self.proj = np.random.default_rng(0).standard_normal((4, dim))

    def encode(self, batch):
        self.encoded += len(batch)
        return l2_normalise(np.asarray(batch) @ self.proj)


def _keys_of(values: np.ndarray) -> np.ndarray:
    """A hash per row that equal rows share (what content keys are)."""
    digests = b"".join(hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in np.ascontiguousarray(values))
    return np.frombuffer(digests, dtype="<u8").reshape(-1, 2).copy()


@pytest.fixture
def small_buckets(monkeypatch):
    """Buckets of ~64 keys and answer ranges of 50 rows: every path of the lookup runs on a few hundred rows."""
    monkeypatch.setattr(lookup, "BUCKET_ROWS", 64)
    monkeypatch.setattr(lookup, "RANGE_ROWS", 50)
    monkeypatch.setattr(cache_module, "RANGE_ROWS", 50)


def test_lookup_answers_what_the_whole_index_answers(tmp_path, small_buckets):
    rng = np.random.default_rng(4)
    values = rng.standard_normal((420, 4))
    values[300:360] = values[:60]  # rows whose key an earlier row has
    keys = _keys_of(values)
    enc = _Projection()
    cache = EmbeddingCache(tmp_path, enc)
    cache.add(keys[:100:2], enc.encode(values[:100:2]))
    cache.add(keys[10:200:3], -enc.encode(values[10:200:3]))  # keys in two shards: the first shard's rows win
    cache.refresh()
    found = cache.locate(keys, tmp_path / "work")
    pos = cache.find(keys)
    answers = np.concatenate(list(found.blocks()))
    np.testing.assert_array_equal(answers["row"], np.arange(len(keys)))
    hit = answers["shard"] >= 0
    np.testing.assert_array_equal(hit, pos >= 0)
    _, shard_of, row_of = cache._key_index()
    np.testing.assert_array_equal(answers["shard"][hit], shard_of[pos[hit]])
    np.testing.assert_array_equal(answers["at"][hit], row_of[pos[hit]])
    np.testing.assert_array_equal(cache.rows(answers["shard"][hit], answers["at"][hit]), cache.get(pos[hit]))
    # each missing key once, at its first row; later rows with that key point there
    missing = np.flatnonzero(~hit)
    _, first = np.unique(cache_module.fingerprint_keys(keys[missing]), return_index=True)
    np.testing.assert_array_equal(np.concatenate(list(found.new_rows(7))), np.sort(missing[first]))
    assert [len(b) for b in found.new_rows(7)][:-1] == [7] * (-(-len(first) // 7) - 1)
    assert found.n_missing == len(missing) and found.n_new == len(first)
    np.testing.assert_array_equal(answers["at"][missing], [missing[(keys[missing] == keys[i]).all(1)][0] for i in missing])


def test_embed_through_buckets_gives_the_rows_the_whole_index_gives(tmp_path, small_buckets):
    rng = np.random.default_rng(5)
    values = rng.standard_normal((330, 4))
    values[200:260] = values[20:80]
    keys = _keys_of(values)
    items = Items("train", "table", ids=[f"r{i}" for i in range(len(values))], values=values)
    warm = Items("train", "table", ids=[f"w{i}" for i in range(150)], values=values[::2][:150])
    embed(warm, _Projection(), cache_dir=tmp_path, fingerprints=keys[::2][:150], block_size=40, progress=False)
    with NpyWriter(tmp_path / "keys.npy", np.uint64, (2,)) as writer:  # keys on disk, read a block at a time
        writer.append(keys)
        on_disk = writer.close()
    enc = _Projection()
    got = embed(items, enc, cache_dir=tmp_path, fingerprints=on_disk, block_size=32, progress=False,
                out=tmp_path / "emb.npy")
    cached = {tuple(k) for k in keys[::2][:150].tolist()}
    assert enc.encoded == len({tuple(k) for k in keys.tolist()} - cached)  # each missing key once
    cache = EmbeddingCache(tmp_path, enc)
    np.testing.assert_array_equal(np.asarray(got), cache.get(cache.find(keys)))  # the whole index's rows
    assert not [p for p in cache.path.iterdir() if p.name.startswith(".lookup-")]


def test_embed_memory_does_not_grow_with_the_rows(tmp_path, small_buckets, monkeypatch):
    """The whole index held the keys asked, their sorted copies and 28 bytes per cached key: about 100
    bytes a row; through buckets the peak stays about the same."""
    monkeypatch.setattr(lookup, "BUCKET_ROWS", 1024)
    monkeypatch.setattr(lookup, "RANGE_ROWS", 1000)
    monkeypatch.setattr(cache_module, "RANGE_ROWS", 1000)
    monkeypatch.setattr(cache_module, "_GATHER_BYTES", 8 * 4 * 1000)
    peaks = {}
    for n in (2_000, 8_000):
        values = np.random.default_rng(n).standard_normal((n, 4))
        with NpyWriter(tmp_path / f"keys{n}.npy", np.uint64, (2,)) as writer:
            writer.append(_keys_of(values))
            keys = writer.close()
        items = Items("train", "table", ids=np.arange(n).astype(str), values=values)
        enc = _Projection()
        for run in range(2):  # the first run fills the cache; the second finds every row there
            tracemalloc.start()
            embed(items, enc, cache_dir=tmp_path / f"c{n}", fingerprints=keys, block_size=1000, progress=False,
                  out=tmp_path / f"emb{n}-{run}.npy")
            peaks[n, run] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    for run in range(2):
        assert peaks[8_000, run] - peaks[2_000, run] < 6_000 * 16, peaks  # well under 16 bytes a row


@pytest.mark.parametrize("n, block", [(50_000, 16384), (200_000, 16384), (16384 + 5, 16384), (40, 3), (7, 16384),
                                      (16384 * 3, 16384)])
def test_no_streamed_block_is_longer_than_the_block_size(n, block):
    """The last short block used to be joined to the whole block before it (up to 4,095 rows more than
    the block size: the 50k and 200k scans' largest blocks, 17,232 and 19,776 rows); now only the
    tile before it moves, and the rows and their order are the same."""
    rows = np.arange(n)
    blocks = list(_fold_tail((s, rows[s:s + block]) for s in range(0, n, block)))
    assert np.array_equal(np.concatenate([b for _, b in blocks]), rows)
    assert all(s == b[0] for s, b in blocks)
    if block >= 4096:
        assert max(len(b) for _, b in blocks) <= block
        assert len(blocks[-1][1]) >= min(4096, n)  # never a handful of queries on their own
