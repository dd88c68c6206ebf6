"""The Ray engine gives exactly the local engine's results (local Ray with 2 CPUs)."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.search.exact import search
from sibscan.store.shards import ShardedEmbeddings

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'sibscan[ray]')")

from sibscan.search import search_ray  # noqa: E402


pytestmark = pytest.mark.slow  # starts a local Ray (``local_ray`` in conftest.py)


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_ray_equals_local_on_shards(local_ray, tmp_path, backend):
    rng = np.random.default_rng(0)
    x = unit(rng, 3000, 16)
    x[2500] = x[10]  # an exact copy across shards: tie order must survive the merge
    q = np.concatenate([x[:5], unit(rng, 45, 16)])
    sh = ShardedEmbeddings.from_array(tmp_path / "s", x, dtype="float16", shard_rows=700)
    local = search(q, sh, 4, backend=backend, block_size=256, progress=False)
    remote = search_ray(q, sh, 4, backend=backend, block_size=256, progress=False)
    np.testing.assert_array_equal(remote[1], local[1])
    np.testing.assert_array_equal(remote[0], local[0])
    assert (local[1][:5, 0] == np.arange(5)).all()


def test_ray_equals_local_in_memory_and_exclude_self(local_ray):
    rng = np.random.default_rng(1)
    x = unit(rng, 1500, 8)
    x[900] = x[3]
    local = search(x, x, 3, backend="numpy", block_size=100, exclude_self=True, progress=False)
    remote = search_ray(x, x, 3, backend="numpy", block_size=100, exclude_self=True, progress=False)
    np.testing.assert_array_equal(remote[1], local[1])
    np.testing.assert_array_equal(remote[0], local[0])
    assert local[1][3, 0] == 900 and local[1][900, 0] == 3


def test_ray_k_larger_than_database(local_ray):
    rng = np.random.default_rng(2)
    x, q = unit(rng, 3, 4), unit(rng, 2, 4)
    s, i = search_ray(q, x, 5, backend="numpy", progress=False)
    assert (i[:, 3:] == -1).all() and np.isneginf(s[:, 3:]).all()

