"""The n-gram index built as Ray tasks is byte-identical to the local build (local Ray, 2 CPUs).

Marked slow: starting a local Ray takes 10-60 s on a loaded 2-core machine (``local_ray`` in
conftest.py: skipped with Ray's reason where its node cannot start)."""
from __future__ import annotations

import json

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'sibscan[ray]')")

from sibscan.contamination import build_index  # noqa: E402


@pytest.mark.slow  # starts a local Ray
def test_ray_index_identical_to_local(local_ray, tmp_path):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(500)]
    folder = tmp_path / "corpus"
    folder.mkdir()
    for f in range(3):
        lines = [json.dumps({"text": " ".join(rng.choice(words, int(rng.integers(5, 80))))}) for _ in range(60)]
        (folder / f"part{f}.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    local = build_index(folder, tmp_path / "local", n=4, shard_size=500, progress=False)
    remote = build_index(folder, tmp_path / "ray", n=4, shard_size=500, engine="ray", progress=False)
    assert len(local.manifest["shards"]) >= 4  # several map batches and reduce ranges
    assert local.manifest["shards"] == remote.manifest["shards"]
    for shard in local.manifest["shards"]:
        for name in local.layout.files(shard):  # hashes with position tags, bucket counts
            assert (local.path / name).read_bytes() == (remote.path / name).read_bytes()
    for key in ("n_docs", "n_words", "n_ngrams", "n_stored", "skipped"):
        assert local.manifest[key] == remote.manifest[key], key
    assert remote.manifest["engine"] == "ray" and len(remote.manifest["skipped"]) == 1
