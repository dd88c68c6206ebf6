"""Cases 3 and 7 of issue 13: the embedding cache keys on everything that changes an item, and a
shard corrupted in place is refused, never reused."""
from __future__ import annotations

import re

import numpy as np

from rel_helpers import FAST, assert_one_line_error, cli, write_table
from sibscan.store.cache import EmbeddingCache, embed
from sibscan.encoders import get_encoder
from sibscan.items import Items


def _scan(train, test, out, *extra):
    return cli("scan", "--train", train, "--test", test, "--out", out, *FAST, *extra)


def test_shared_cache_does_not_mix_rows_that_znorm_or_rounding_call_twins(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 6)).cumsum(axis=1)
    write_table(tmp_path / "a.csv", x)
    write_table(tmp_path / "b.csv", 3.0 * x + 1.0)  # z-normalised: the same rows; raw: other vectors
    write_table(tmp_path / "c.csv", np.round(x, 2) + 0.004)  # at --decimals 2: the same rows as a.csv
    write_table(tmp_path / "test.csv", rng.normal(size=(5, 6)).cumsum(axis=1))
    shared = tmp_path / "cache"
    for name, flags in (("b", ("--znorm",)), ("c", ("--decimals", "2"))):
        for first in ("a", name):  # the shared cache first holds a.csv's embeddings
            assert _scan(tmp_path / f"{first}.csv", tmp_path / "test.csv", tmp_path / f"{name}-{first}", *flags,
                         "--cache-dir", shared).exit_code == 0
        alone = _scan(tmp_path / f"{name}.csv", tmp_path / "test.csv", tmp_path / f"{name}-alone", *flags)
        assert alone.exit_code == 0
        got = np.load(tmp_path / f"{name}-{name}" / "embeddings" / "train.npy")
        want = np.load(tmp_path / f"{name}-alone" / "embeddings" / "train.npy")
        np.testing.assert_array_equal(got, want)


def test_shard_corrupted_in_place_is_refused_with_the_files_to_delete(tables):
    out = tables / "scan"
    args = ("--train", tables / "train.csv", "--test", tables / "test.csv")
    assert cli("scan", *args, "--out", out, *FAST).exit_code == 0
    shard = sorted((out / "cache").glob("*/*.emb.npy"))[0]
    data = bytearray(shard.read_bytes())
    data[-8:] = bytes(b ^ 0xFF for b in data[-8:])  # same size, other bytes
    shard.write_bytes(bytes(data))
    result = cli("scan", *args, "--out", tables / "again", "--cache-dir", out / "cache", *FAST)
    assert_one_line_error(result, shard.name, "is corrupt", "fail their checksum", "delete")
    folder = shard.parent
    for name in re.search(r"delete (\S+), (\S+) and (\S+) in", result.output).groups():
        (folder / name).unlink()
    result = cli("scan", *args, "--out", tables / "again", "--cache-dir", out / "cache", *FAST)
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(np.load(tables / "again" / "embeddings" / "train.npy"),
                                  np.load(out / "embeddings" / "train.npy"))


def test_truncated_or_garbled_cache_files_are_refused(tmp_path):
    enc = get_encoder("raw", dim=4)
    items = Items("train", "table", ids=[str(i) for i in range(10)],
                  values=np.random.default_rng(0).normal(size=(10, 4)))
    embed(items, enc, cache_dir=tmp_path, progress=False)
    cache = EmbeddingCache(tmp_path, enc)
    emb = next(cache.path.glob("*.emb.npy"))
    fp = next(cache.path.glob("*.fp.npy"))
    for path, cut in ((fp, 40), (emb, 20)):
        original = path.read_bytes()
        path.write_bytes(original[:-cut])
        try:
            embed(items, enc, cache_dir=tmp_path, progress=False)
        except Exception as exc:  # noqa: BLE001 - checked below
            assert type(exc).__name__ == "SibscanError" and "is corrupt" in str(exc) and "delete" in str(exc), exc
        else:
            raise AssertionError(f"a truncated {path.name} was reused")
        path.write_bytes(original)
