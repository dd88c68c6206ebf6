"""The faiss backend's CPU split: query row ranges searched side by side give faiss's own answer."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from sibscan.search import brute_force_search, search

pytestmark = pytest.mark.skipif(importlib.util.find_spec("faiss") is None,
                                reason="faiss is not installed (pip install 'sibscan[faiss]')")


@pytest.fixture()
def split(monkeypatch):
    """Split searches of a few dozen rows across two worker threads, counting faiss's calls."""
    import faiss

    from sibscan import searchfaiss

    calls = []
    knn = faiss.knn

    def counted(q, x, k, **kw):
        calls.append(q.shape[0])
        return knn(q, x, k, **kw)

    monkeypatch.setattr(searchfaiss, "SPLIT_MIN_ROWS", 8)
    monkeypatch.setattr(searchfaiss, "split_workers", lambda: 2)
    monkeypatch.setattr(faiss, "knn", counted)
    return calls


@pytest.mark.parametrize("k", [1, 5, 40])
def test_split_search_equals_brute_force_and_one_faiss_call(split, k):
    rng = np.random.default_rng(5)
    q = rng.standard_normal((90, 32)).astype(np.float32)
    x = rng.standard_normal((3000, 32)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    sims, ids = search(q, x, k, backend="faiss", progress=False)
    assert sorted(split) == [22, 22, 23, 23]  # four ranges (two per worker), every query row once
    ref_sims, ref_ids = brute_force_search(q, x, k)
    np.testing.assert_allclose(sims, ref_sims, atol=2e-6)
    assert (ids != ref_ids).mean() < 0.01
    split.clear()
    from sibscan import searchfaiss

    searchfaiss.SPLIT_MIN_ROWS = 10 ** 9  # restored by monkeypatch
    one_sims, one_ids = search(q, x, k, backend="faiss", progress=False)
    assert split == [90]
    np.testing.assert_array_equal(ids, one_ids)
    np.testing.assert_allclose(sims, one_sims, atol=1e-6)


def test_split_keeps_ties_in_index_order_and_drops_self(split):
    # integer vectors: exact ties; exclude_self searches k + 1 and drops each row's own index
    rng = np.random.default_rng(6)
    x = rng.integers(-1, 2, size=(60, 4)).astype(np.float32)
    sims, ids = search(x, x, 3, backend="faiss", exclude_self=True, progress=False)
    assert len(split) == 4
    ref_sims, ref_ids = brute_force_search(x, x, 3, exclude_self=True)
    np.testing.assert_array_equal(sims, ref_sims)
    assert not (ids == np.arange(60)[:, None]).any()


def test_a_worker_error_reaches_the_caller(split, monkeypatch):
    import faiss

    def broken(q, x, k, **kw):
        raise MemoryError("no room for the score tile")

    monkeypatch.setattr(faiss, "knn", broken)
    rng = np.random.default_rng(7)
    with pytest.raises(MemoryError, match="score tile"):
        search(rng.standard_normal((40, 8)).astype(np.float32),
               rng.standard_normal((100, 8)).astype(np.float32), 2, backend="faiss", progress=False)
