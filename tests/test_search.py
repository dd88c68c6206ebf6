"""Search backends against the brute-force reference, sharded (out-of-core) search, errors, CUDA."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sibscan.errors import InputError, SibscanError
from sibscan.kernels.topk import ResultHeap, block_topk_numpy, merge_topk
from sibscan.kernels.topk_torch import block_topk_torch
from sibscan.search.exact import brute_force_search, plan_blocks, search
from sibscan.store.shards import ShardedEmbeddings

HAS_TORCH = importlib.util.find_spec("torch") is not None
#: the backends installed here (a core install has numpy only)
BACKENDS = ["numpy"] + (["torch"] if HAS_TORCH else []) + (["faiss"] if importlib.util.find_spec("faiss") else [])


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def ties(rng, n, d):
    """Small integer vectors: every product is exact in fp32, so ties are exact ties."""
    return rng.integers(-1, 2, size=(n, d)).astype(np.float32)


def assert_same(sims, ids, ref_sims, ref_ids, exact=False):
    assert sims.shape == ref_sims.shape and ids.shape == ref_ids.shape
    if exact:
        np.testing.assert_array_equal(ids, ref_ids)
        np.testing.assert_array_equal(sims, ref_sims)
    else:
        np.testing.assert_allclose(sims, ref_sims, atol=2e-6)
        # a different index is only allowed where the reference has an equal-similarity neighbour
        diff = ids != ref_ids
        assert diff.mean() < 0.01, f"{diff.sum()} of {diff.size} neighbours differ"


# ------------------------------------------------------------------------------ vs brute force
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 5])
def test_backend_matches_brute_force_random(backend, k):
    rng = np.random.default_rng(0)
    q, x = unit(rng, 70, 24), unit(rng, 3000, 24)
    got = search(q, x, k, backend=backend, block_size=700, progress=False)
    assert_same(*got, *brute_force_search(q, x, k))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k,block", [(1, 97), (3, 1000), (7, 5000), (40, 300)])
def test_ties_go_to_the_lower_index(backend, k, block):
    rng = np.random.default_rng(1)
    q, x = ties(rng, 50, 5), ties(rng, 2500, 5)
    got = search(q, x, k, backend=backend, block_size=block, progress=False)
    assert_same(*got, *brute_force_search(q, x, k), exact=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exclude_self_with_exact_duplicates(backend):
    rng = np.random.default_rng(2)
    x = unit(rng, 300, 8)
    x[10] = x[20] = x[250] = x[5]  # four copies: copies of row 20 outrank it (lower index first)
    sims, ids = search(x, x, 3, backend=backend, exclude_self=True, block_size=64, progress=False)
    ref = brute_force_search(x, x, 3, exclude_self=True)
    assert_same(sims, ids, *ref)
    assert (ids != np.arange(300)[:, None]).all()
    assert ids[20].tolist() == [5, 10, 250] and np.allclose(sims[20], 1.0)
    assert ids[5].tolist() == [10, 20, 250]


@pytest.mark.parametrize("backend", BACKENDS)
def test_k_larger_than_database_pads(backend):
    rng = np.random.default_rng(3)
    q, x = unit(rng, 4, 6), unit(rng, 3, 6)
    sims, ids = search(q, x, 5, backend=backend, progress=False)
    assert ids.shape == (4, 5) and (ids[:, 3:] == -1).all() and np.isneginf(sims[:, 3:]).all()
    assert sorted(ids[0, :3].tolist()) == [0, 1, 2]
    assert_same(sims, ids, *brute_force_search(q, x, 5))
    sims, ids = search(x, x, 4, backend=backend, exclude_self=True, progress=False)
    assert (ids[:, 2:] == -1).all() and (ids[:, :2] >= 0).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_memmap_database(backend, tmp_path):
    rng = np.random.default_rng(4)
    q, x = unit(rng, 20, 16), unit(rng, 900, 16)
    np.save(tmp_path / "x.npy", x)
    mm = np.load(tmp_path / "x.npy", mmap_mode="r")
    got = search(q, mm, 4, backend=backend, block_size=128, progress=False)
    assert_same(*got, *brute_force_search(q, x, 4))


# ------------------------------------------------------------------------------------ kernels
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 400), st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_block_topk_equals_stable_argsort(m, b, k, seed):
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    import torch

    rng = np.random.default_rng(seed)
    scores = rng.integers(-3, 4, size=(m, b)).astype(np.float32)  # many ties
    ref = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    vals, idx = block_topk_numpy(scores, k)
    np.testing.assert_array_equal(idx, ref)
    tv, ti = block_topk_torch(torch.from_numpy(scores), k)
    np.testing.assert_array_equal(ti.numpy(), ref)
    np.testing.assert_array_equal(tv.numpy(), np.take_along_axis(scores, ref, axis=1))


def test_block_topk_torch_boundary_ties_tail_and_duplicate_rows():
    """The topk-then-order selection: a tie at the k-th value across candidate groups (the pick
    ``torch.topk`` makes there is undefined, so the row must take the exact fallback), a tail past
    the last full group, and exact duplicate database rows searched through blocks that split them."""
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")

    rng = np.random.default_rng(21)
    scores = rng.standard_normal((6, 32 * 12 + 7)).astype(np.float32)
    scores[0, [3, 40, 100, 390]] = 9.0        # four equal best values, one in the tail: k=3 keeps the first three
    scores[1, [5, 70]] = 8.0                  # k-th and (k+1)-th equal in two different groups
    scores[1, [1, 2]] = 9.0
    scores[2, 384:] = 10.0                    # the whole tail is best
    for k in (2, 3, 5, 11):
        ref = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        vals, idx = block_topk_torch(torch.from_numpy(scores), k)
        np.testing.assert_array_equal(idx.numpy(), ref)
        np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(scores, ref, axis=1))

    x = unit(rng, 700, 8)
    x[[10, 250, 251, 690]] = x[500]           # exact copies on both sides of block edges
    q = np.concatenate([x[[500, 3]], unit(rng, 5, 8)])
    for k, block in ((5, 251), (40, 33), (9, 700)):
        sims, ids = search(q, x, k, backend="torch", block_size=block, progress=False)
        assert_same(sims, ids, *brute_force_search(q, x, k))  # BLAS rounding may differ from the reference's
        np.testing.assert_array_equal(ids[0, :5], [10, 250, 251, 500, 690])  # copies: lower index first


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(200, 3000), st.integers(2, 8), st.integers(0, 2**31 - 1))
def test_block_topk_fast_path_equals_stable_argsort(m, b, k, seed):
    """Continuous scores take the grouped fast path; copied top values plant ties at the k-th place."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((m, b)).astype(np.float32)
    rows = rng.random(m) < 0.5
    kth = -np.sort(-scores, axis=1)[:, k - 1]
    cols = rng.integers(0, b, size=m)
    scores[rows, cols[rows]] = kth[rows]  # an equal value elsewhere (maybe at a lower column)
    ref = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    vals, idx = block_topk_numpy(scores, k)
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_array_equal(vals, np.take_along_axis(scores, ref, axis=1))


def test_block_topk_tie_inside_one_group_goes_to_the_lower_column():
    """Three equal runner-up values inside the winning group: only k + 1 of them are kept as the best
    candidates, so the k-th place must be decided among all equal values (lowest column wins)."""
    rng = np.random.default_rng(0)
    b, k = 1024, 2
    ng = b // 32
    scores = rng.uniform(0, 1, size=(64, b)).astype(np.float32)
    for r in range(64):
        members = rng.permutation(32)[:4] * ng + r % ng  # four columns of one interleaved group
        scores[r, members[0]] = 10.0
        scores[r, members[1:]] = 5.0
    ref = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    vals, idx = block_topk_numpy(scores, k)
    np.testing.assert_array_equal(idx, ref)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(1, 9), st.lists(st.integers(1, 120), min_size=1, max_size=6),
       st.integers(0, 2**31 - 1))
def test_result_heap_merge_in_any_order(n, k, cuts, seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(-2, 3, size=(5, n)).astype(np.float32)
    ref = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    bounds = sorted({0, n, *[c % n for c in cuts]})
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        v, i = block_topk_numpy(scores[:, a:b], k)
        parts.append((v, i + a))
    heap = ResultHeap(5, k)
    for v, i in parts[::-1]:  # reverse order: the merge must not depend on arrival order
        heap.add_result(v, i)
    sims, ids = heap.finalize()
    np.testing.assert_array_equal(ids[:, : ref.shape[1]], ref)
    assert (ids[:, ref.shape[1]:] == -1).all()
    s2, i2 = merge_topk(sims, ids, sims[:, :0], ids[:, :0], k)
    np.testing.assert_array_equal(i2, ids)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 30), st.integers(2, 30), st.integers(0, 2**31 - 1))
def test_both_directions_agree(m, n, seed):
    """If b is a's top-1 with similarity s, b's own top-1 in the reverse search scores >= s."""
    rng = np.random.default_rng(seed)
    a, b = unit(rng, m, 6), unit(rng, n, 6)
    s_ab, i_ab = search(a, b, 1, backend=BACKENDS[-1], progress=False)
    s_ba, _ = search(b, a, 1, backend="numpy", progress=False)
    assert (s_ba[i_ab[:, 0], 0] >= s_ab[:, 0] - 1e-6).all()
    # and the pair similarity is the same read from either side
    full = a @ b.T
    np.testing.assert_allclose(s_ab[:, 0], full[np.arange(m), i_ab[:, 0]], atol=1e-6)


# ------------------------------------------------------------------------------------- shards
def test_shards_roundtrip_blocks_and_take(tmp_path):
    rng = np.random.default_rng(5)
    x = unit(rng, 1000, 12)
    sh = ShardedEmbeddings.create(tmp_path / "s", 12, dtype="float32", shard_rows=300)
    sh.append(x[:450])
    sh.append(x[450:])
    again = ShardedEmbeddings(tmp_path / "s")
    assert again.shape == (1000, 12) and again.shard_bounds == [(0, 300), (300, 450), (450, 750), (750, 1000)]
    np.testing.assert_array_equal(again.read(), x)
    starts = [s for s, blk in again.iter_blocks(200)]
    assert starts == [0, 200, 300, 450, 650, 750, 950]  # blocks never cross a shard boundary
    idx = np.array([999, 0, 301, 301, 450])
    np.testing.assert_array_equal(again.take(idx), x[idx])
    meta = json.loads((tmp_path / "s" / "index.json").read_text())
    assert meta["n"] == 1000 and meta["dtype"] == "float32"


@pytest.mark.parametrize("backend", BACKENDS)
def test_float16_shards_equal_in_memory_search(backend, tmp_path):
    rng = np.random.default_rng(6)
    q, x = unit(rng, 40, 32), unit(rng, 2000, 32)
    sh = ShardedEmbeddings.from_array(tmp_path / "s", x, dtype="float16", shard_rows=512)
    x16 = x.astype(np.float16).astype(np.float32)
    got = search(q, sh, 5, backend=backend, block_size=200, progress=False)
    assert_same(*got, *brute_force_search(q, x16, 5))


def test_memory_bounded_sharded_search_equals_in_memory(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    rng = np.random.default_rng(7)
    q, x = unit(rng, 64, 16), unit(rng, 5000, 16)
    sh = ShardedEmbeddings.from_array(tmp_path / "s", x, dtype="float32", shard_rows=1500)
    qb, rows, est = plan_blocks(64, 5000, 16, memory_limit=64 * 1024)
    assert rows < 5000 and est <= 2 * 64 * 1024 + 64 * 16 * 8
    small = search(q, sh, 3, backend="torch", memory_limit=64 * 1024, progress=False)
    whole = search(q, x, 3, backend="torch", progress=False)
    np.testing.assert_array_equal(small[1], whole[1])
    np.testing.assert_allclose(small[0], whole[0], atol=1e-6)


def test_shard_errors(tmp_path):
    sh = ShardedEmbeddings.create(tmp_path / "s", 4)
    with pytest.raises(InputError, match=r"shape \(2, 3\), expected \(rows, 4\)"):
        sh.append(np.zeros((2, 3)))
    bad = np.zeros((3, 4))
    bad[1, 2] = np.nan
    with pytest.raises(InputError, match="row 1 of the appended block is not finite"):
        sh.append(bad)
    with pytest.raises(SibscanError, match="already holds shards"):
        ShardedEmbeddings.create(tmp_path / "s", 4)
    with pytest.raises(SibscanError, match="not a shard directory"):
        ShardedEmbeddings(tmp_path / "nothing")
    with pytest.raises(SibscanError, match="unknown shard dtype 'int8'"):
        ShardedEmbeddings.create(tmp_path / "t", 4, dtype="int8")


# ------------------------------------------------------------------------------------- errors
def test_search_errors():
    rng = np.random.default_rng(8)
    q, x = unit(rng, 5, 8), unit(rng, 20, 8)
    with pytest.raises(InputError, match="queries have dimension 8 but the database has 6; embed both"):
        search(q, x[:, :6], 2, progress=False)
    bad = q.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InputError, match="query row 3 contains NaN"):
        search(bad, x, 2, progress=False)
    xb = x.copy()
    xb[17, 0] = np.inf
    for backend in BACKENDS:
        with pytest.raises(InputError, match="database row 17 contains NaN or inf"):
            search(q, xb, 2, backend=backend, block_size=5, progress=False)
    # finite values whose squared norm overflows float32: similarities of inf - inf = NaN, which no top-k orders
    xh = x.copy()
    xh[11] = [3e38, 3e38, -3e38, -3e38, 0, 0, 0, 0]
    for backend in BACKENDS:
        with pytest.raises(InputError, match="database row 11 contains NaN or inf, or values so large its squared norm"):
            search(q, xh, 2, backend=backend, block_size=5, progress=False)
    with pytest.raises(InputError, match="query row 0 contains NaN or inf, or values so large"):
        search(np.full((1, 8), 1e19, np.float32), x, 2, progress=False)  # squared norm 8e38
    with pytest.raises(SibscanError, match="unknown search backend 'fais'; available: auto, torch, faiss, numpy"):
        search(q, x, 2, backend="fais")
    with pytest.raises(SibscanError, match="k must be an integer >= 1, got 0"):
        search(q, x, 0)
    with pytest.raises(SibscanError, match="exclude_self needs the queries to be the database rows"):
        search(q, x, 2, exclude_self=True)
    with pytest.raises(SibscanError, match="numpy backend runs on the CPU only"):
        search(q, x, 2, backend="numpy", device="cuda")
    with pytest.raises(InputError, match="must be a 2-D array"):
        search(q[0], x, 2)
    with pytest.raises(SibscanError, match="unknown device 'tpu'"):
        search(q, x, 2, backend=BACKENDS[-1], device="tpu")


def test_empty_queries_and_auto_backend():
    rng = np.random.default_rng(9)
    x = unit(rng, 10, 4)
    s, i = search(np.empty((0, 4), np.float32), x, 3, progress=False)
    assert s.shape == (0, 3) and i.shape == (0, 3)
    q = unit(rng, 3, 4)
    assert_same(*search(q, x, 2, progress=False), *brute_force_search(q, x, 2))


@pytest.mark.parametrize("half", ["bf16", "fp16"])
def test_half_precision_path_on_cpu_equals_fp32(half):
    """The tensor-core algorithm (half candidates, fp32 re-scoring, certificate) runs on the CPU too."""
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    from sibscan.kernels.topk import iter_array_blocks
    from sibscan.kernels.topk_torch import search_blocks_torch

    rng = np.random.default_rng(13)
    x = unit(rng, 4000, 32)
    x[1000:1040] = x[7] + 1e-2 * unit(rng, 40, 32)  # near-ties only fp32 can order
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = np.concatenate([x[[7, 1020]], x[:50] + 0.05 * unit(rng, 50, 32), unit(rng, 30, 32)])
    stats = {}
    sims, ids = search_blocks_torch(q, lambda: iter_array_blocks(x, 1500), 3, device="cpu", half=half,
                                    margin=2, stats=stats)
    ref_s, ref_i = brute_force_search(q, x, 3)
    assert 2 <= stats["uncertified_rows"] < len(q)
    np.testing.assert_array_equal(ids, ref_i)
    np.testing.assert_allclose(sims, ref_s, atol=1e-6)


@pytest.mark.skipif("faiss" not in BACKENDS, reason="faiss is not installed (pip install 'sibscan[faiss]')")
@pytest.mark.parametrize("m", [1, 7, 40])
@pytest.mark.parametrize("k", [1, 2, 6, 30])
def test_faiss_single_block_keeps_the_lower_index_of_ties(m, k):
    # no block_size: an in-memory float32 database is searched by faiss in one call; the rows span
    # several of faiss's internal database tiles (1,024 rows) and both of its kernels (< and >= 20 queries)
    rng = np.random.default_rng(11)
    q, x = ties(rng, m, 4), ties(rng, 5000, 4)
    got = search(q, x, k, backend="faiss", progress=False)
    assert_same(*got, *brute_force_search(q, x, k), exact=True)


def test_auto_backend_on_the_cpu_is_faiss_when_installed():
    from sibscan.search.exact import resolve_backend

    assert resolve_backend("auto", "cpu") == ("faiss" if "faiss" in BACKENDS else "numpy")


def test_nan_rows_are_found_by_the_cheap_check():
    from sibscan.search.exact import _bad_rows

    x = np.ones((6, 5), np.float32)
    x[1, 2], x[3, 0], x[4] = np.nan, np.inf, 3e38  # row 4: finite, but its squared norm overflows float32
    x[5] = 1e18  # large, but its squared norm (5e36) and so its similarities fit float32
    assert _bad_rows(x).tolist() == [False, True, False, True, True, False]
    assert _bad_rows(x.astype(np.float64)).tolist() == [False, True, False, True, True, False]
    half = np.full((2, 5), 300, np.float16)  # squared norm 450,000: over float16's range, not float32's
    assert _bad_rows(half).tolist() == [False, False]


@pytest.mark.parametrize("k", [1, 4])
def test_numpy_tiles_within_a_block_keep_the_lower_index_of_ties(k, monkeypatch):
    # tiles of 40 database rows inside blocks of 1,000 (and 3 query rows a product): ties across
    # tile and block edges still go to the lower index, exactly as the stable full sort
    from sibscan.kernels import topk

    monkeypatch.setattr(topk, "TILE_MIN_ROWS", 40)
    monkeypatch.setattr(topk, "TILE_BYTES", 4 * 3 * 40)
    rng = np.random.default_rng(12)
    q, x = ties(rng, 50, 5), ties(rng, 2500, 5)
    got = topk.search_blocks_numpy(q, lambda: topk.iter_array_blocks(x, 1000), k, query_block=3)
    assert_same(*got, *brute_force_search(q, x, k), exact=True)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20), st.integers(100, 3000), st.integers(13, 120), st.integers(0, 2**31 - 1))
def test_block_topk_large_k_equals_stable_argsort(m, b, k, seed):
    """k at or above the number of groups (b // 32 <= k) takes the k + 1 best of the whole row, not a
    full sort; integer scores put many ties at the k-th place."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(-6, 7, size=(m, b)).astype(np.float32)
    scores[: m // 2] += rng.standard_normal((m // 2, b)).astype(np.float32)  # and some rows without ties
    ref = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    vals, idx = block_topk_numpy(scores, k)
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_array_equal(vals, np.take_along_axis(scores, ref, axis=1))


@pytest.mark.parametrize("k", [2, 10, 31, 32, 50, 100, 300])
@pytest.mark.parametrize("m", [1, 700, 4096, 20000])
def test_numpy_tiles_have_room_to_skip_groups(k, m):
    """A tile narrower than k + 1 groups made every row fully sorted (6x slower at k >= 32): tiles
    widen with k, and their query rows shrink so the scores stay within TILE_BYTES."""
    from sibscan.kernels import topk

    qb, cols = topk.tile_shape(m, k, 4096)
    assert 1 <= qb <= min(m, 4096)
    assert cols // topk.GROUP >= topk.TILE_GROUPS_PER_K * (k + 1) >= 4 * (k + 1)
    assert cols >= topk.TILE_MIN_ROWS
    assert qb * cols * 4 <= topk.TILE_BYTES


@pytest.mark.parametrize("k", [32, 50])
def test_numpy_search_with_large_k_sorts_no_full_row(k, monkeypatch):
    from sibscan.kernels import topk

    widths = []
    argsort = np.argsort

    def counted(a, *args, **kw):
        widths.append(np.shape(a)[-1])
        return argsort(a, *args, **kw)

    monkeypatch.setattr(np, "argsort", counted)
    rng = np.random.default_rng(13)
    q, x = unit(rng, 4096, 8), unit(rng, 6000, 8)  # continuous scores: no ties
    got = topk.search_blocks_numpy(q, lambda: topk.iter_array_blocks(x, 6000), k)
    assert widths and max(widths) <= k + 1  # only the k + 1 best candidates were ever sorted
    monkeypatch.setattr(np, "argsort", argsort)
    ref = brute_force_search(q[:300], x, k)
    np.testing.assert_array_equal(got[1][:300], ref[1])


def test_numpy_search_fills_placeholders_whatever_the_scores(recwarn):
    """Scores of -inf (or NaN) defeat a strict "beats the running k-th" test: rows must still get ids."""
    from sibscan.kernels import topk

    x = np.full((3, 2), 3e38, np.float32)
    q = np.array([[-1.0, -1.0]], np.float32)  # every score -inf
    for k in (1, 2, 3):
        sims, ids = topk.search_blocks_numpy(q, lambda: topk.iter_array_blocks(x, 10), k)
        assert ids.tolist() == [list(range(k))]
    x = np.zeros((2000, 4), np.float32)
    x[:, 0] = np.linspace(-1, 1, 2000)
    x[5] = [3e38, 3e38, -3e38, -3e38]  # its score is inf - inf = NaN
    sims, ids = topk.search_blocks_numpy(np.ones((1, 4), np.float32), lambda: topk.iter_array_blocks(x, 2000), 3)
    assert (ids >= 0).all()


def test_tensor_databases_reject_rows_whose_squared_norm_overflows_float32():
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")
    rng = np.random.default_rng(14)
    q, x = unit(rng, 3, 8), unit(rng, 20, 8)
    for row in ([3e38, 3e38, -3e38, -3e38, 0, 0, 0, 0], [1e19] * 8):
        xb = x.astype(np.float64)
        xb[11] = row
        for dtype in (torch.float32, torch.float64):
            with pytest.raises(InputError, match="database row 11 contains NaN or inf, or values so large"):
                search(q, torch.tensor(xb, dtype=dtype), 2, backend="torch", progress=False)
    # large but fine: float16 values whose squared norm only float16 cannot hold, and integers
    half = torch.full((20, 8), 300.0, dtype=torch.float16)
    assert search(q, half, 2, backend="torch", progress=False)[1].shape == (3, 2)
    assert search(q, torch.ones((20, 8), dtype=torch.int64), 2, backend="torch", progress=False)[1].shape == (3, 2)
