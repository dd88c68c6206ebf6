"""Issue 13, 'memory bounded by the block size', in the encode stage: the embedding cache looks rows up
through bucket files (:mod:`sibscan.store.cachelookup`) instead of a sorted index of every key, and the
train→test stream hands on no part of more train rows than the block size.

The lookup must answer what the whole index answers (:meth:`EmbeddingCache.find`, kept as the
brute-force reference), with many buckets and answer ranges; its memory must not grow with the rows
asked (the whole index held 28 bytes per cached key and sorted copies of the keys asked).
"""
from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import sibscan.store.cache as cache_module
import sibscan.store.cachelookup as lookup
from sibscan.store.cache import EmbeddingCache, embed
import sibscan.stages.candidates as candidates
from sibscan.store.diskarray import NpyWriter
from sibscan.encoders.base import Encoder, l2_normalise
from sibscan.items import Items
from sibscan.options import SearchOptions


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
    np.testing.assert_array_equal(answers["at"][missing],
                                  [missing[(keys[missing] == keys[i]).all(1)][0] for i in missing])


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


@pytest.mark.parametrize("n, block", [(50, 8), (45, 8), (48, 8), (5, 8), (50, 100)])
def test_no_streamed_part_holds_more_train_rows_than_the_block_size(n, block, monkeypatch):
    """The last short block is still searched with the block before it (the tiles of a whole search,
    the same floats), but its rows are made and verified a block at a time: the part used to hold up to
    4,095 train rows more than the block size (the 50k and 200k scans' largest, 17,232 and 19,776 rows,
    set the train→test stream's peak)."""
    fold = candidates._fold_tail
    monkeypatch.setattr(candidates, "_fold_tail", lambda blocks: fold(blocks, small=5))  # a tail under 5 rows folds
    rng = np.random.default_rng(n)
    emb = {s: l2_normalise(rng.normal(size=(m, 4)).astype(np.float32)) for s, m in (("train", n), ("test", 6))}
    splits = {s: Items(s, "table", ids=np.arange(len(e)).astype(str), values=e.astype(np.float64))
              for s, e in emb.items()}
    fps = {s: rng.integers(0, 2**63, size=(len(e), 2), dtype=np.uint64) for s, e in emb.items()}
    options = SearchOptions(backend="numpy")
    parts = list(candidates.reverse_blocks(emb, splits, fps, options, None, progress=False, block_rows=block))
    assert max(len(np.unique(p["query_index"])) for p in parts) <= block
    whole = candidates.neighbours_table(emb, splits, fps, options, directions=["train-test"], progress=False)
    for name in ("query_index", "neighbour_index", "rank", "similarity", "exact"):
        np.testing.assert_array_equal(np.concatenate([p[name] for p in parts]), whole[name], err_msg=name)


def test_a_fully_cached_embed_writes_nothing_into_the_cache(tmp_path, monkeypatch):
    # a read-only or shared cache must stay usable: the lookup's bucket files go to the system temp
    # folder (they were made inside the cache folder, where a kill -9 also left them behind)
    import sibscan.store.cache as cache_mod

    rng = np.random.default_rng(9)
    values = rng.standard_normal((60, 4))
    items = Items("train", "table", ids=[f"r{i}" for i in range(len(values))], values=values)
    embed(items, _Projection(), cache_dir=tmp_path / "c", fingerprints=_keys_of(values), progress=False)
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "c").rglob("*"))
    seen = []
    real = cache_mod.EmbeddingCache.locate
    monkeypatch.setattr(cache_mod.EmbeddingCache, "locate",
                        lambda self, keys, work: (seen.append(Path(work)), real(self, keys, work))[1])
    enc = _Projection()
    embed(items, enc, cache_dir=tmp_path / "c", fingerprints=_keys_of(values), progress=False)
    assert enc.encoded == 0 and seen
    assert all(tmp_path / "c" not in w.parents for w in seen) and not any(w.exists() for w in seen)
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "c").rglob("*")) == before
