"""CUDA search tests (tensor-core bf16/fp16 path vs fp32 brute force); skipped without a GPU.

Kept apart from test_search.py so that the GPU machine runs them with numpy, torch and pytest only
(see benchmarks/gpu_check.sh).
"""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.search.exact import brute_force_search, search


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def ties(rng, n, d):
    return rng.integers(-1, 2, size=(n, d)).astype(np.float32)


@pytest.mark.cuda
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_cuda_half_path_equals_fp32_brute_force(precision):
    rng = np.random.default_rng(10)
    x = unit(rng, 20000, 128)
    # queries near some rows (siblings) and unrelated ones
    q = np.concatenate([x[:300] + 0.05 * unit(rng, 300, 128), unit(rng, 200, 128)])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    sims, ids = search(q, x, 5, backend="torch", device="cuda", precision=precision, block_size=4096,
                       progress=False)
    ref_s, ref_i = brute_force_search(q, x, 5)
    np.testing.assert_array_equal(ids[:, 0], ref_i[:, 0])
    np.testing.assert_allclose(sims, ref_s, atol=1e-5)
    assert (ids[:300, 0] == np.arange(300)).all()


@pytest.mark.cuda
def test_cuda_uncertified_rows_are_searched_again_in_fp32():
    from sibscan.kernels.topk import iter_array_blocks
    from sibscan.kernels.topk_torch import search_blocks_torch

    rng = np.random.default_rng(11)
    x = unit(rng, 5000, 64)
    x[1000:1100] = x[7] + 1e-2 * unit(rng, 100, 64)  # near-ties (1 - 5e-5) that bf16 cannot order
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[[7, 1050, 3]] + 0.0
    stats = {}
    sims, ids = search_blocks_torch(q, lambda: iter_array_blocks(x, 1024), 3, device="cuda", half="bf16",
                                    margin=0, stats=stats)
    ref_s, ref_i = brute_force_search(q, x, 3)
    assert stats["uncertified_rows"] >= 2
    np.testing.assert_array_equal(ids[:, 0], ref_i[:, 0])
    np.testing.assert_allclose(sims, ref_s, atol=1e-5)


@pytest.mark.cuda
def test_cuda_exclude_self_and_ties():
    rng = np.random.default_rng(12)
    x = ties(rng, 3000, 6)
    sims, ids = search(x, x, 4, backend="torch", device="cuda", exclude_self=True, precision="fp32",
                       block_size=512, progress=False)
    ref_s, ref_i = brute_force_search(x, x, 4, exclude_self=True)
    np.testing.assert_array_equal(ids, ref_i)
    np.testing.assert_array_equal(sims, ref_s)


@pytest.mark.cuda
def test_cuda_torch_tensor_database_and_shards(tmp_path):
    import torch

    from sibscan.store.shards import ShardedEmbeddings

    rng = np.random.default_rng(14)
    q, x = unit(rng, 100, 64), unit(rng, 9000, 64)
    ref_s, ref_i = brute_force_search(q, x, 3)
    on_gpu = torch.as_tensor(x, device="cuda")
    sims, ids = search(q, on_gpu, 3, device="cuda", block_size=2048, progress=False)
    np.testing.assert_array_equal(ids[:, 0], ref_i[:, 0])
    np.testing.assert_allclose(sims, ref_s, atol=1e-5)
    sh = ShardedEmbeddings.from_array(tmp_path / "s", x, dtype="float32", shard_rows=4000)
    sims, ids = search(q, sh, 3, device="cuda", block_size=2048, progress=False)
    np.testing.assert_array_equal(ids[:, 0], ref_i[:, 0])
    np.testing.assert_allclose(sims, ref_s, atol=1e-5)
