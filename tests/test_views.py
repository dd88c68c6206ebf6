"""Candidates from more than one view: the windows kernel against brute force, the union of views in the
neighbours table, and a scan in which only the windows view finds a mirrored copy."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.config import ScanConfig
from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.kernels.windows import (VIEW_CELLS, VIEW_SCALES, WINDOW_SCALES, mirror, window_boxes, window_pair_scores,
                                     window_topk, window_vectors)
from sibscan.options import SearchOptions
from sibscan.store.neighbourtable import Neighbours
from sibscan.stages.views import add_view_candidates, default_views, resolve_views


def _smooth(rng, side=64):
    x = rng.normal(size=(8, 8)).repeat(side // 8, 0).repeat(side // 8, 1)
    return x + 0.1 * rng.normal(size=(side, side))


def test_a_crop_matches_the_window_it_was_cut_from():
    rng = np.random.default_rng(0)
    img = _smooth(rng)
    boxes = window_boxes()
    # the window (top 0.2, left 0.3, side 0.5) of a 64-px image, blown up 2x by pixel repetition
    box = np.array([[0.2, 0.3, 0.5]])
    y, x = round(0.2 * 64), round(0.3 * 64)
    crop = img[y:y + 32, x:x + 32].repeat(2, 0).repeat(2, 1)
    want = window_vectors(img[None], box, 12)[0, 0]
    got = window_vectors(crop[None], boxes, 12)[0, 0]
    assert float(want @ got) > 0.97  # cell edges round differently at 64 and 32 px
    # and the crop's whole image finds that window among all of the source's, up to the grid's step
    scores = window_vectors(img[None], boxes, 12)[0] @ got
    assert scores.max() > 0.8 and scores.max() > np.sort(scores)[len(scores) // 2] + 0.3


def test_window_vectors_are_normalised_cell_means():
    rng = np.random.default_rng(1)
    img = rng.uniform(0, 255, size=(2, 32, 32))
    v = window_vectors(img, np.array([[0.0, 0.0, 1.0], [0.5, 0.5, 0.5]]), 4)
    ref = img[:, 16:, 16:].reshape(2, 4, 4, 4, 4).mean(axis=(2, 4)).reshape(2, 16)  # 4 px cells of the corner window
    ref -= ref.mean(axis=1, keepdims=True)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(v[:, 1], ref, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(v, axis=2), 1.0, atol=1e-5)
    assert not window_vectors(np.full((1, 32, 32), 7.0), window_boxes(), 4).any()  # a flat image: zeros


def test_window_vectors_cut_in_chunks_are_each_images_own(monkeypatch):
    """Images are cut _CUT_CHUNK at a time; an image's vectors must not depend on its chunk-mates:
    chunks of 3 over 8 images (flat and noisy ones included) give, bit for bit, each image cut alone."""
    import sibscan.kernels.windows as windows

    rng = np.random.default_rng(5)
    gray = rng.integers(0, 256, size=(8, 64, 64)).astype(np.uint8)
    gray[2] = 7  # flat: zero vectors
    boxes = window_boxes()
    alone = np.concatenate([window_vectors(g[None], boxes, 12) for g in gray])
    monkeypatch.setattr(windows, "_CUT_CHUNK", 3)
    chunked = window_vectors(gray, boxes, 12)
    assert chunked.flags.c_contiguous and chunked.dtype == alone.dtype
    np.testing.assert_array_equal(chunked, alone)
    assert not chunked[2].any() and chunked[0].any()


def test_mirror_is_the_flipped_image():
    rng = np.random.default_rng(2)
    img = _smooth(rng)
    boxes = window_boxes()
    np.testing.assert_allclose(mirror(window_vectors(img[None], boxes, 12)[:, :1], 12),
                               window_vectors(img[None, :, ::-1], boxes, 12)[:, :1], atol=1e-5)


def test_window_scores_and_topk_against_brute_force():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(5, 4, 9)).astype(np.float32)
    d = rng.normal(size=(11, 4, 9)).astype(np.float32)
    ref = np.empty((5, 11), np.float32)
    for i in range(5):
        for j in range(11):
            best = -np.inf
            for qq in (q[i], mirror(q[i], 3)):
                best = max(best, max(float(qq[0] @ w) for w in d[j]), max(float(w @ d[j][0]) for w in qq))
            ref[i, j] = best
    np.testing.assert_allclose(window_pair_scores(q, d, 3), ref, rtol=1e-5, atol=1e-5)
    blocks = [(a, d[a:a + 4]) for a in range(0, 11, 4)]
    sims, idx = window_topk(q, blocks, 3, 3, max_floats=50)  # a tiny budget: queries one at a time
    order = np.argsort(-ref, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_allclose(sims, np.take_along_axis(ref, order, axis=1), rtol=1e-5)


def _tiny_texture_case(seed=2, n_train=60, n_query=12):
    """Heavy crops of 32-px cells of one fine texture (every train image a look-alike of every other):
    each query is a 17-px square cut half-way between two of the old grid's positions at half the side,
    blown up to 32 px, mirrored and noised; all shown at the view's 64 px."""
    gaussian_filter = pytest.importorskip("scipy.ndimage", reason="the planted crops are made with scipy (pip install -e '.[dev]')").gaussian_filter
    from scipy.ndimage import zoom

    rng = np.random.default_rng(seed)
    field = gaussian_filter(rng.normal(size=(320, 192)), 0.6)
    field = (field - field.mean()) / field.std()
    cells = [field[y:y + 32, x:x + 32] for y in range(0, 320, 32) for x in range(0, 192, 32)][:n_train]
    up = lambda a: zoom(a, 64 / a.shape[0], order=3)[:64, :64]  # noqa: E731
    train = np.stack([np.clip(128 + 40 * up(c), 0, 255) for c in cells]).astype(np.uint8)
    queries, sources = [], []
    for _ in range(n_query):
        s = int(rng.integers(n_train))
        o = int((1 / 24 + rng.integers(0, 5) / 12) * 32)
        q = up(zoom(cells[s][o:o + 17, o:o + 17], 2, order=3)[:32, :32])[:, ::-1]
        queries.append(np.clip(128 + 40 * q + rng.normal(0, 15, q.shape), 0, 255))
        sources.append(s)
    return train, np.stack(queries).astype(np.uint8), np.array(sources)


def test_the_view_finds_heavy_crops_of_tiny_images_between_the_old_grid_positions():
    """The view's grid (positions about a cell apart) puts the source of every heavy crop of a 32-px
    texture cell in the top 5; the grid it replaced (136 windows of 12 x 12, positions two cells apart
    at half the side) left some below look-alike cells (issue 14: small32's crop-flip-jpeg misses)."""
    pytest.importorskip("faiss", reason="the windows view's index is faiss (pip install 'sibscan[faiss]')")
    from sibscan.stages.views import windows_topk_gray

    train, test, sources = _tiny_texture_case()
    old = window_boxes(WINDOW_SCALES)
    old_idx = window_topk(window_vectors(test, old, 12), [(0, window_vectors(train, old, 12))], 5, 12)[1]
    assert (old_idx != sources[:, None]).all(axis=1).sum() >= 3  # the case is hard for the old grid
    idx = windows_topk_gray(train, test, 5)[1]
    assert (idx == sources[:, None]).any(axis=1).all()


def _gray_images(rng, n):
    return np.clip(128 + 40 * np.stack([_smooth(rng) for _ in range(n)]), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("n_train", [13, 3])
def test_windows_view_search_on_a_flat_index_is_the_brute_force_reference(n_train, monkeypatch):
    """Both directions through a faiss flat index give exactly the candidates of every pair scored
    (issue 31: the view compared every pair, 2,269 s on CIFAR-10); tiny blocks cross every block edge,
    and the first window search (4 k windows a row) is too short, so the widening loop runs."""
    pytest.importorskip("faiss", reason="the windows view's index is faiss (pip install 'sibscan[faiss]')")
    import sibscan.search.windows as ws
    from sibscan.stages.views import windows_topk_gray

    rng = np.random.default_rng(5)
    test, train = _gray_images(rng, 7), _gray_images(rng, n_train)
    train[-1] = test[0, :, ::-1]  # a mirrored copy (test 0 is a crop of it at scale 1)
    test[5] = np.kron(train[0][16:48, 16:48], np.ones((2, 2), np.uint8))  # a zoom into train 0's centre
    boxes = window_boxes(VIEW_SCALES)
    want = ws.windows_view_reference(train, test, 5, boxes, VIEW_CELLS)
    assert want[1].shape[1] == min(5, n_train)
    monkeypatch.setattr(ws, "_ADD_BLOCK", 2)
    monkeypatch.setattr(ws, "_QUERY_BLOCK", 3)
    sims, idx = windows_topk_gray(train, test, 5)
    np.testing.assert_array_equal(idx, want[1])
    np.testing.assert_allclose(sims, want[0], rtol=0, atol=1e-5)
    assert idx[0, 0] == n_train - 1 and sims[0, 0] > 0.99  # the mirror is found
    assert 0 in idx[5]  # the zoom finds its source
    assert window_vectors(test[:2], boxes, VIEW_CELLS).flags.c_contiguous  # no 77 MB copy per query slice


def test_the_reference_joins_both_directions_of_the_pair_scores():
    """The reference's crop and wide scores are the two halves of :func:`window_pair_scores` (whose max
    the view used to rank every pair by): each test image's candidates come from its crop top k and the
    train images whose wide top k kept it."""
    from sibscan.search.windows import windows_view_reference

    rng = np.random.default_rng(8)
    test, train = _gray_images(rng, 6), _gray_images(rng, 9)
    boxes = window_boxes(VIEW_SCALES)
    both = window_pair_scores(window_vectors(test, boxes, VIEW_CELLS), window_vectors(train, boxes, VIEW_CELLS),
                              VIEW_CELLS)
    sims, idx = windows_view_reference(train, test, 9, boxes, VIEW_CELLS)  # k = every train image: every pair
    for t in range(len(test)):
        np.testing.assert_allclose(sims[t], both[t, idx[t]], rtol=0, atol=1e-5)
        assert sorted(idx[t]) == list(range(len(train)))


def test_an_ivf_index_past_the_flat_size_still_finds_copies_and_crops(monkeypatch):
    pytest.importorskip("faiss", reason="the windows view's index is faiss (pip install 'sibscan[faiss]')")
    import sibscan.search.windows as ws
    from sibscan.stages.views import windows_topk_gray

    rng = np.random.default_rng(6)
    train, test = _gray_images(rng, 300), _gray_images(rng, 20)
    for t in range(10):  # mirrored copies and zooms into a train image's centre, with noise
        src = train[10 * t]
        test[t] = src[:, ::-1] if t % 2 else np.kron(src[16:48, 16:48], np.ones((2, 2), np.uint8))
        test[t] = np.clip(test[t] + rng.normal(0, 4, test[t].shape), 0, 255).astype(np.uint8)
    monkeypatch.setattr(ws, "FLAT_MAX_PAIRS", 1000)  # 300 x 293 windows, 40 query rows: IVF
    built = []
    real = ws.build_index
    monkeypatch.setattr(ws, "build_index", lambda *a, **kw: built.append(real(*a, **kw)) or built[-1])
    idx = windows_topk_gray(train, test, 5)[1]
    assert {type(i).__name__ for i in built} == {"IndexIVFScalarQuantizer"}
    assert all(10 * t in idx[t] for t in range(10))


def test_the_windows_view_prints_progress_with_an_eta_off_a_terminal(monkeypatch, capsys):
    """Off a terminal the view's bars write timed lines with an ETA, and a closing line each (issue 31:
    the view printed nothing for 38 minutes on CIFAR-10)."""
    pytest.importorskip("faiss", reason="the windows view's index is faiss (pip install 'sibscan[faiss]')")
    import time

    import sibscan.search.windows as ws
    from sibscan.progress import task
    from sibscan.stages.views import windows_topk_gray

    monkeypatch.setenv("SIBSCAN_PROGRESS_INTERVAL", "0.02")
    monkeypatch.setattr(ws, "_QUERY_BLOCK", 1)
    monkeypatch.setattr(ws, "_ADD_BLOCK", 1)
    real_blocks = ws._window_blocks

    def slow_blocks(*a):  # each image's windows take longer than the interval
        for block in real_blocks(*a):
            time.sleep(0.03)
            yield block

    monkeypatch.setattr(ws, "_window_blocks", slow_blocks)
    rng = np.random.default_rng(3)
    with task("view windows"):
        windows_topk_gray(_gray_images(rng, 6), _gray_images(rng, 4), 3, progress=True)
    lines = capsys.readouterr().err.splitlines()
    for desc in ("train windows", "test windows"):
        mine = [line for line in lines if line.startswith(f"view windows: {desc}: ")]
        assert any("ETA" in line for line in mine), (desc, lines)
        assert mine[-1].startswith(f"view windows: {desc}: ") and " in 0:00 " in mine[-1], (desc, lines)


def _items(split, n):
    return Items(split, "table", np.array([f"{split}{i}" for i in range(n)]), values=np.zeros((n, 2)))


def test_union_is_deduplicated_labelled_and_ranked_by_the_encoders_similarity():
    rng = np.random.default_rng(4)
    emb = {"train": rng.normal(size=(6, 3)).astype(np.float32), "test": rng.normal(size=(2, 3)).astype(np.float32)}
    emb = {s: e / np.linalg.norm(e, axis=1, keepdims=True) for s, e in emb.items()}
    splits = {"train": _items("train", 6), "test": _items("test", 2)}
    fps = {"train": np.arange(12, dtype=np.uint64).reshape(6, 2), "test": np.arange(100, 104, dtype=np.uint64).reshape(2, 2)}
    main = {0: [1, 2], 1: [3, 4]}
    rows = [(q, r, n) for q, ns in main.items() for r, n in enumerate(ns)]
    nb = Neighbours({"query_split": ["test"] * 4, "query_id": [f"test{q}" for q, _, _ in rows],
                     "query_index": [q for q, _, _ in rows], "rank": [r for _, r, _ in rows],
                     "neighbour_split": ["train"] * 4, "neighbour_id": [f"train{n}" for *_, n in rows],
                     "neighbour_index": [n for *_, n in rows],
                     "similarity": [float(emb["test"][q] @ emb["train"][n]) for q, _, n in rows],
                     "exact": [False] * 4, "view": ["enc"] * 4})
    found = {"windows": (None, np.array([[2, 5], [0, -1]]))}
    out = add_view_candidates(nb, found, emb, splits, fps, "enc")
    got = {(int(q), int(n)): v for q, n, v in zip(out["query_index"], out["neighbour_index"], out["view"])}
    assert got == {(0, 1): "enc", (0, 2): "enc+windows", (0, 5): "windows", (1, 3): "enc", (1, 4): "enc", (1, 0): "windows"}
    for q in (0, 1):
        m = out["query_index"] == q
        sims = out["similarity"][m]
        np.testing.assert_allclose(sims, emb["train"][out["neighbour_index"][m]] @ emb["test"][q], rtol=1e-5)
        assert list(out["rank"][m]) == list(range(m.sum())) and (np.diff(sims) <= 0).all()
        assert list(out["embedding_rank"][m]) == list(out["rank"][m])


def test_views_default_and_validation(tmp_path):
    assert default_views("image", True) == ("pixels",)  # issue 31: windows earned 3 of 286 ciFAIR partners
    assert default_views("image", False) == () and default_views("text", True) == ()
    assert resolve_views(SearchOptions(), "image", True, "effnet") == ("pixels",)
    assert resolve_views(SearchOptions(), "image", True, "pixels") == ()  # the encoder is not added twice
    assert resolve_views(SearchOptions(extra_views="windows,pixels"), "image", True, "pixels") == ("windows",)
    assert resolve_views(SearchOptions(extra_views="none"), "image", True, "effnet") == ()
    assert resolve_views(SearchOptions(directions="train-test"), "image", True, "effnet") == ()
    with pytest.raises(SibscanError, match="view 'pixels' is for image items but the data is text"):
        resolve_views(SearchOptions(extra_views="pixels"), "text", True, "ngram")
    base = dict(train=str(tmp_path), test=str(tmp_path), out=str(tmp_path / "o"))
    with pytest.raises(SibscanError, match=r"unknown view 'windws' in --extra-views; available: none, windows, "):
        ScanConfig(**base, extra_views="windws").check()
    with pytest.raises(SibscanError, match="--extra-views 'none' stands alone"):
        ScanConfig(**base, extra_views="none,pixels").check()
    with pytest.raises(SibscanError, match="--extra-views cannot be combined with --chunk-words"):
        ScanConfig(**base, extra_views="ngram", chunk_words=50).check()
    with pytest.raises(SibscanError, match="--k-view"):
        ScanConfig(**base, k_view=0).check()


def test_scan_finds_a_mirrored_copy_only_through_the_windows_view(flip_and_crop_folders):
    pytest.importorskip("torch", reason="the windows view is a default only with the image verifier, which runs on torch")
    pytest.importorskip("faiss", reason="the windows view's index is faiss (pip install 'sibscan[faiss]')")
    from sibscan.scan import run_scan
    from sibscan.store.scandir import ScanDir

    tmp_path = flip_and_crop_folders
    res = run_scan(ScanConfig(train=str(tmp_path / "train"), test=str(tmp_path / "test"), out=str(tmp_path / "out"),
                              encoder="pixels", k=2, progress=False, extra_views="windows"))
    assert res.manifest["views"] == ["pixels", "windows"] and "views" in res.manifest["timings"]
    nb = ScanDir(tmp_path / "out").neighbours().direction("test", "train")
    row = {(q, n): (v, s) for q, n, v, s in zip(nb["query_id"], nb["neighbour_id"], nb["view"], nb["score"])}
    view, score = row[("flip5.png", "5.png")]
    assert "windows" in view and "pixels" not in view.split("+") and score > 0.99  # pixels missed it, verified
    assert "windows" in row[("crop3.png", "3.png")][0]
    top = ScanDir(tmp_path / "out").neighbours().top1()
    assert dict(zip(top["query_id"], top["neighbour_id"])) == {"flip5.png": "5.png", "crop3.png": "3.png"}


def test_a_scan_made_on_another_windows_grid_is_not_resumed(flip_and_crop_folders):
    pytest.importorskip("torch", reason="the windows view is a default only with the image verifier, which runs on torch")
    pytest.importorskip("faiss", reason="the windows view's index is faiss (pip install 'sibscan[faiss]')")
    # the windows view's grid changed once (136 windows of 12 x 12 cells → 293 of 8 x 8): a scan folder
    # whose candidates came from the old grid must not be resumed onto (its manifest carried no grid)
    import json

    from sibscan.scan import run_scan

    tmp_path = flip_and_crop_folders
    cfg = dict(train=str(tmp_path / "train"), test=str(tmp_path / "test"), out=str(tmp_path / "out"),
               encoder="pixels", k=2, progress=False, extra_views="windows")
    res = run_scan(ScanConfig(**cfg))
    assert res.manifest["view_identities"]["windows"].startswith("windows-v3(cells=8,")
    manifest = tmp_path / "out" / "manifest.json"
    old = json.loads(manifest.read_text())
    old.pop("view_identities")  # as a scan written before the grid changed
    old["stages"] = [s for s in old["stages"] if s != "report"]
    manifest.write_text(json.dumps(old))
    with pytest.raises(SibscanError, match=r"made by an older sibscan, whose manifest.json does not record which "
                                           r"candidate views made its candidates, so it cannot be resumed; pass --force "
                                           r"to start over") as err:
        run_scan(ScanConfig(**cfg))
    assert "other options" not in str(err.value)  # no option differs: the folder predates the record
    again = run_scan(ScanConfig(**cfg, force=True))
    assert again.manifest["view_identities"] == res.manifest["view_identities"]
