"""The reusable train index (build, add, scan --index) and the Ray engine inside a scan."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.config import ScanConfig
from sibscan.errors import CompatibilityError
from sibscan.index import TrainIndex
from sibscan.scan import run_scan
from sibscan.store.scandir import ScanDir

runner = CliRunner()


def _csv(path, X, start=0):
    lines = ["id," + ",".join(f"f{i}" for i in range(X.shape[1]))]
    lines += [f"r{start + i}," + ",".join(f"{v:.6f}" for v in row) for i, row in enumerate(X)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(50, 24)).cumsum(axis=1)
    b = rng.normal(size=(30, 24)).cumsum(axis=1)
    test = np.vstack([a[:5] * 2 + 1, b[:5], rng.normal(size=(10, 24)).cumsum(axis=1)])
    _csv(tmp_path / "a.csv", a)
    _csv(tmp_path / "b.csv", b, start=50)
    _csv(tmp_path / "ab.csv", np.vstack([a, b]))
    lines = ["id," + ",".join(f"f{i}" for i in range(24))] + [f"t{i}," + ",".join(f"{v:.6f}" for v in row) for i, row in enumerate(test)]
    (tmp_path / "test.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_index_build_add_then_scan_equals_plain_scan(data):
    r = runner.invoke(app, ["index", "build", str(data / "a.csv"), "--out", str(data / "idx"), "--id", "id"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["index", "add", str(data / "idx"), str(data / "b.csv")])
    assert r.exit_code == 0, r.output
    assert "now holds 80" in r.output
    idx = TrainIndex.open(data / "idx")
    assert len(idx.items()) == 80 and idx.embeddings().n == 80
    r = runner.invoke(app, ["index", "add", str(data / "idx"), str(data / "b.csv")])
    assert r.exit_code == 1 and "ids already in the index" in r.output

    via_index = run_scan(ScanConfig(index=str(data / "idx"), test=str(data / "test.csv"), id="id", out=str(data / "s1"),
                                    progress=False, cutoff=0.99))
    plain = run_scan(ScanConfig(train=str(data / "ab.csv"), test=str(data / "test.csv"), id="id", out=str(data / "s2"),
                                progress=False, cutoff=0.99))
    n1, n2 = ScanDir(data / "s1").neighbours(), ScanDir(data / "s2").neighbours()
    assert list(n1["neighbour_id"]) == list(n2["neighbour_id"])
    assert np.allclose(n1["score"], n2["score"], atol=1e-3)  # the cache stores float16
    assert via_index.summary["siblings"] == plain.summary["siblings"] >= 10


def test_index_refuses_another_encoder(data):
    TrainIndex.build(str(data / "a.csv"), data / "idx", load_options={"id": "id"}, progress=False)
    with pytest.raises(CompatibilityError, match="holds znorm embeddings; a scan with --encoder raw cannot use it"):
        run_scan(ScanConfig(index=str(data / "idx"), test=str(data / "test.csv"), encoder="raw", out=str(data / "s"),
                            progress=False))
    meta = json.loads((data / "idx" / "index.json").read_text())
    meta["encoder"]["identity"] = "znorm(other-preprocessing)"
    (data / "idx" / "index.json").write_text(json.dumps(meta))
    with pytest.raises(CompatibilityError, match="rebuild the index"):
        TrainIndex.open(data / "idx").encoder()


@pytest.mark.slow  # starts a local Ray
def test_ray_engine_scan_is_identical_to_local(data, local_ray):
    local = ScanConfig(train=str(data / "ab.csv"), test=str(data / "test.csv"), id="id", out=str(data / "local"),
                       progress=False, block_size=16, verify=False)
    run_scan(local)
    run_scan(local.merged({"out": str(data / "ray"), "engine": "ray"}))
    a, b = ScanDir(data / "local").neighbours(), ScanDir(data / "ray").neighbours()
    for col in ("query_split", "query_index", "neighbour_split", "neighbour_index", "rank"):
        assert np.array_equal(a[col], b[col]), col
    assert np.array_equal(a["similarity"], b["similarity"])
    for split in ("train", "test"):
        assert np.array_equal(ScanDir(data / "local").embeddings(split), ScanDir(data / "ray").embeddings(split))


@pytest.mark.slow  # starts a local Ray
def test_ray_block_encoder_embeds_blocks_on_workers_and_fills_the_cache(data, tmp_path, local_ray):
    import functools

    from sibscan.store.cache import embed
    from sibscan.encoders import get_encoder
    from sibscan.engines import ray_block_encoder
    from sibscan.fingerprint import fingerprint
    from sibscan.loaders import load

    items = load(str(data / "ab.csv"), "train", id="id")
    enc = get_encoder("znorm", dim=24)
    remote = ray_block_encoder(functools.partial(get_encoder, "znorm", dim=24), enc.identity, num_cpus=2)
    calls = []

    def counting(blocks, batch_size):
        for idx, emb in remote(blocks, batch_size):
            calls.append(len(idx))
            yield idx, emb

    got = embed(items, enc, cache_dir=tmp_path / "cache", fingerprints=fingerprint(items), block_size=16,
                progress=False, encode_blocks=counting)
    assert sorted(calls) == sorted([16] * 5)  # 80 distinct rows in blocks of 16, all on workers
    np.testing.assert_allclose(got, enc.encode(items.values), atol=2e-3)  # float16 cache
    # a worker whose encoder differs from the driver's is refused
    other = ray_block_encoder(functools.partial(get_encoder, "raw", dim=24), enc.identity + " (driver)")
    with pytest.raises(Exception, match="Ray worker built encoder"):
        list(other(iter([(np.arange(2), items.values[:2])]), None))


def test_index_build_and_add_say_what_they_skipped(tmp_path):
    """A corrupt image is skipped and said, as the scan says it (the index was silent about it)."""
    PIL = pytest.importorskip("PIL", reason="Pillow is not installed (pip install 'sibscan[images]')")  # noqa: F841
    from PIL import Image

    rng = np.random.default_rng(0)
    for folder, n in (("a", 4), ("b", 2)):
        (tmp_path / folder).mkdir()
        for i in range(n):
            Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(tmp_path / folder / f"{folder}{i}.png")
    (tmp_path / "a" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    r = runner.invoke(app,
                      ["index", "build", str(tmp_path / "a"), "--out", str(tmp_path / "idx"), "--encoder", "pixels"])
    assert r.exit_code == 0, r.output
    assert "4 image items" in r.output and "(skipped: 1 — listed in index.json)" in r.output
    r = runner.invoke(app, ["index", "add", str(tmp_path / "idx"), str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    assert "now holds 6" in r.output and "skipped" not in r.output  # nothing skipped by this add
    meta = TrainIndex.open(tmp_path / "idx").meta
    assert len(meta["skipped"]) == 1 and "broken.jpg" in json.dumps(meta["skipped"][0])
