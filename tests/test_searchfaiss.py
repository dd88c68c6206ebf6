"""The faiss backend's CPU split: query row ranges searched side by side give faiss's own answer."""
from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

from sibscan.search.exact import brute_force_search, search

pytestmark = pytest.mark.skipif(importlib.util.find_spec("faiss") is None,
                                reason="faiss is not installed (pip install 'sibscan[faiss]')")


@pytest.fixture()
def split(monkeypatch):
    """Split searches of a few dozen rows across two worker threads, counting faiss's calls."""
    import faiss

    from sibscan.search import faissindex as searchfaiss

    calls = []
    knn = faiss.knn

    def counted(q, x, k, **kw):
        calls.append(q.shape[0])
        return knn(q, x, k, **kw)

    monkeypatch.setattr(searchfaiss, "SPLIT_MIN_ROWS", 8)
    monkeypatch.setattr(searchfaiss, "split_workers", lambda: 2)
    monkeypatch.setattr(faiss, "knn", counted)
    return calls


D = 512  # 250 rows x 512 = faiss's BLAS threshold (128,000): a 1,000-row query set is four BLAS ranges


def _unit(rng, rows, d=D):
    v = rng.standard_normal((rows, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("k", [1, 5, 40])
def test_split_search_equals_brute_force_and_one_faiss_call(split, k):
    rng = np.random.default_rng(5)
    q, x = _unit(rng, 1000), _unit(rng, 3000)
    sims, ids = search(q, x, k, backend="faiss", progress=False)
    assert sorted(split) == [250, 250, 250, 250]  # four ranges (two per worker), every query row once
    ref_sims, ref_ids = brute_force_search(q, x, k)
    np.testing.assert_allclose(sims, ref_sims, atol=2e-6)
    assert (ids != ref_ids).mean() < 0.01
    split.clear()
    from sibscan.search import faissindex as searchfaiss

    searchfaiss.SPLIT_MIN_ROWS = 10 ** 9  # restored by monkeypatch
    one_sims, one_ids = search(q, x, k, backend="faiss", progress=False)
    assert split == [1000]
    np.testing.assert_array_equal(ids, one_ids)
    np.testing.assert_allclose(sims, one_sims, atol=1e-6)


@pytest.mark.parametrize("d", [64, 128, 384, 512, 768, 1024])
@pytest.mark.parametrize("m", [300, 513, 1024, 1335, 2000, 5000])
def test_every_range_goes_through_faiss_blas(monkeypatch, d, m):
    """faiss runs a scalar loop (2-4x slower) on a call of rows x d under its BLAS threshold: no range
    of a split search may be that small."""
    import faiss

    from sibscan.search import faissindex as searchfaiss

    monkeypatch.setattr(searchfaiss, "split_workers", lambda: 2)
    bounds = searchfaiss.split_bounds(m, d, 2)
    rows = np.diff(bounds)
    assert bounds[0] == 0 and bounds[-1] == m and (rows > 0).all()
    if len(rows) > 1:
        assert (rows * d >= faiss.cvar.distance_compute_blas_threshold).all()
        assert (rows >= searchfaiss.SPLIT_MIN_ROWS).all()


def test_default_split_ranges_are_blas_sized(monkeypatch):
    # the text default (d=384) with 1,024 queries: 256-row ranges (98,304 < 128,000) were faiss's scalar loop
    import faiss

    from sibscan.search import faissindex as searchfaiss

    calls = []
    knn = faiss.knn
    monkeypatch.setattr(searchfaiss, "split_workers", lambda: 2)
    monkeypatch.setattr(faiss, "knn", lambda q, x, k, **kw: calls.append(q.shape[0]) or knn(q, x, k, **kw))
    rng = np.random.default_rng(8)
    searchfaiss.knn_cpu(_unit(rng, 1024, 384), _unit(rng, 200, 384), 3)
    assert len(calls) > 1 and sum(calls) == 1024
    assert min(calls) * 384 >= faiss.cvar.distance_compute_blas_threshold


def test_split_orders_ties_by_index_and_drops_self(split):
    # integer vectors (exact sums in any order) drawn from 150 distinct rows: every row has exact twins
    rng = np.random.default_rng(6)
    base = rng.integers(-1, 2, size=(150, D)).astype(np.float32)
    x = base[rng.integers(0, 150, size=1000)]
    sims, ids = search(x, x, 3, backend="faiss", exclude_self=True, progress=False)
    assert len(split) == 4
    ref_sims, ref_ids = brute_force_search(x, x, 4, exclude_self=True)
    np.testing.assert_array_equal(sims, ref_sims[:, :3])
    assert not (ids == np.arange(1000)[:, None]).any()
    # which of several rows tied across the 3rd place faiss keeps is its own choice; everywhere else the
    # ids must be the reference's, equal similarities in index order
    sure = ref_sims[:, 2] != ref_sims[:, 3]
    tied_inside = sure & (sims[:, 1:] == sims[:, :-1]).any(axis=1)
    assert tied_inside.sum() > 50  # the check below does see ties
    np.testing.assert_array_equal(ids[sure], ref_ids[sure, :3])
    assert (np.diff(ids[tied_inside], axis=1)[sims[tied_inside, 1:] == sims[tied_inside, :-1]] > 0).all()


def test_split_leaves_the_callers_faiss_threads_alone(split):
    import faiss

    before = faiss.omp_get_max_threads()
    rng = np.random.default_rng(9)
    search(_unit(rng, 1000), _unit(rng, 500), 2, backend="faiss", progress=False)
    assert len(split) == 4  # it did split
    assert faiss.omp_get_max_threads() == before


def test_a_worker_error_reaches_the_caller(split, monkeypatch):
    import faiss

    def broken(q, x, k, **kw):
        raise MemoryError("no room for the score tile")

    monkeypatch.setattr(faiss, "knn", broken)
    rng = np.random.default_rng(7)
    with pytest.raises(MemoryError, match="score tile"):
        search(_unit(rng, 1000), _unit(rng, 100), 2, backend="faiss", progress=False)


def test_an_error_cancels_the_ranges_not_started(split, monkeypatch):
    import faiss

    from concurrent.futures import ThreadPoolExecutor

    from sibscan.search import faissindex

    ran = []
    cancelled, first = threading.Event(), threading.Lock()

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)  # the ranges not started go first
            cancelled.set()
            super().shutdown(wait=wait)

    def first_fails(q, x, k, **kw):
        with first:  # one range fails: two workers could both see an empty list and both fail
            fails = not ran
            if fails:
                ran.append("failed")
        if fails:
            raise MemoryError("no room for the score tile")
        # the other workers stay busy until the caller has cancelled what had not started (however
        # slowly a loaded machine lets the caller see the error)
        cancelled.wait(10)
        ran.append(q.shape[0])
        return np.zeros((q.shape[0], k), np.float32), np.zeros((q.shape[0], k), np.int64)

    monkeypatch.setattr(faiss, "knn", first_fails)
    monkeypatch.setattr(faissindex, "ThreadPoolExecutor", Pool)
    rng = np.random.default_rng(7)
    with pytest.raises(MemoryError):
        search(_unit(rng, 1000), _unit(rng, 100), 2, backend="faiss", progress=False)
    assert len(ran) < 4  # four ranges: the last one queued never ran


def test_memory_estimate_counts_one_faiss_tile_per_concurrent_call(monkeypatch):
    # faiss allocates a 4,096 x 1,024 float32 tile per faiss.knn call, however few the query rows
    from sibscan.search import faissindex as searchfaiss
    from sibscan.search.exact import n_bytes_faiss_tile

    monkeypatch.setattr(searchfaiss, "split_workers", lambda: 2)
    tile = 4 * 4096 * 1024
    assert n_bytes_faiss_tile(10, 64, 5) == tile + 12 * 10 * 5  # one call
    assert n_bytes_faiss_tile(1000, D, 5) == 2 * tile + 12 * 1000 * 5  # four ranges, two at a time
