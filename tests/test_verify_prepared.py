"""imagecorr with each image prepared once: the same scores as the per-pair path, whatever the tiling."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.items import Items
from sibscan.verify.pairtiles import pair_tiles

torch = pytest.importorskip("torch", reason="the image verifier runs on torch (pip install 'sibscan[torch]')")

#: the prepared path may differ from the per-pair one in float32 rounding only (its matrix products
#: see other batch shapes); 1e-6 is the contract (measured: at most 3e-7 on the 32-px scan benchmark)
TOLERANCE = 1e-6


def _images(rng, n: int, size: int = 40) -> np.ndarray:
    """Smooth random scenes with edges, values in [0, 1]: (n, 1, size, size)."""
    y, x = np.mgrid[0:size, 0:size] / size
    out = np.empty((n, 1, size, size), np.float32)
    for i in range(n):
        a, b, c = rng.random(3) * 6
        img = np.sin(a * x + b * y + c) + (x > rng.random()) * rng.random() + 0.2 * rng.random((size, size))
        out[i, 0] = (img - img.min()) / (img.max() - img.min())
    return out


def _pairs(rng, images: np.ndarray, m: int):
    """Pair rows (query, database) with planted copies: shifted, mirrored, centre-cropped."""
    n = len(images)
    qi, di = rng.integers(0, n, m), rng.integers(0, n, m)
    db = images.copy()
    db[1] = np.roll(images[0], (2, -1), axis=(1, 2))
    db[2] = images[3][..., ::-1]
    qi[:2], di[:2] = (0, 3), (1, 2)
    return qi, di, db


@pytest.fixture
def one_thread():
    """torch on one thread, as the verifier runs it (many small products: two threads on a loaded
    machine run them several times slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("budget", [1 << 30, 600_000])
def test_prepared_sides_match_the_per_pair_path(budget, one_thread):
    from sibscan.kernels.paircorr import check_detail, image_corr_result, image_pair_corr, image_variants
    from sibscan.kernels.paircorr_sides import prepare_database, prepare_queries, side_bytes, side_pair_corr

    rng = np.random.default_rng(4)
    images = _images(rng, 24)
    qi, di, db = _pairs(rng, images, 150)
    s, scales, detail = 3, (1.0, 0.9, 0.8), 0.25
    per_pair = image_pair_corr(images[qi], db[di], max_shift=s, scales=scales, detail=detail, batch_size=64)
    variants = image_variants(True, scales)
    sigma = check_detail(detail, None, images.shape[-1])
    best, arg = np.empty(len(qi), np.float32), np.empty(len(qi), np.int64)
    band = np.empty(len(qi), np.float32)
    per_q, per_d = side_bytes(1, images.shape[-1], s, variants, True)
    tiles = list(pair_tiles(qi, di, per_q, per_d, budget))
    for rows, q_ids, d_ids in tiles:
        qside = prepare_queries(torch.as_tensor(images[q_ids]), s, variants, True, batch_size=7)
        dside = prepare_database(torch.as_tensor(db[d_ids]), s, variants, True, batch_size=5)
        best[rows], arg[rows], band[rows] = side_pair_corr(
            qside, np.searchsorted(q_ids, qi[rows]), dside, np.searchsorted(d_ids, di[rows]), s, variants, sigma,
            True, batch_size=11)
    prepared = image_corr_result(best, arg, variants, s, 2 * s + 1, band, detail)
    assert (len(tiles) > 1) == (budget < 1 << 30)
    np.testing.assert_allclose(prepared.score, per_pair.score, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(prepared.ncc, per_pair.ncc, atol=TOLERANCE, rtol=0)
    for name in ("flipped", "dy", "dx", "crop_query", "crop_database"):
        np.testing.assert_array_equal(getattr(prepared, name), getattr(per_pair, name), err_msg=name)
    assert per_pair.score[:2].min() > 0.99 and per_pair.flipped[1] and (per_pair.dy[0], per_pair.dx[0]) != (0, 0)


def test_pair_tiles_cover_every_pair_once_within_the_budget():
    rng = np.random.default_rng(0)
    qi, di = rng.integers(0, 40, 500), rng.integers(100, 400, 500)
    seen = np.zeros(500, int)
    held = []
    for rows, q_ids, d_ids in pair_tiles(qi, di, per_query=10, per_database=3, budget=200):
        seen[rows] += 1
        assert np.isin(qi[rows], q_ids).all() and np.isin(di[rows], d_ids).all()
        assert len(q_ids) * 10 <= 150 and len(d_ids) * 3 <= 50  # 3/4 of the budget held, 1/4 streamed
        if not held or held[-1] is not q_ids:
            held.append(q_ids)
    assert (seen == 1).all()
    # the queries take less memory in all (40 * 10 < 300 * 3): they are held, each in one block only
    assert len(held) == 3 and len(np.concatenate(held)) == len(np.unique(qi))
    assert list(pair_tiles(np.array([], int), np.array([], int), 1, 1, 10)) == []


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from PIL import Image

    rng = np.random.default_rng(1)
    root = tmp_path_factory.mktemp("imgs")
    paths = []
    for i, img in enumerate(_images(rng, 10, size=32)):
        rgb = np.repeat((img[0] * 255).astype(np.uint8)[:, :, None], 3, axis=2)
        paths.append(str(root / f"{i}.png"))
        Image.fromarray(rgb).save(paths[-1])
    return paths


def test_imagecorr_scores_do_not_depend_on_how_pairs_share_a_call(folder):
    from sibscan.verify.images import ImageCorrVerifier

    items = Items("test", "image", ids=[str(i) for i in range(len(folder))], paths=folder)
    rng = np.random.default_rng(2)
    qi, di = rng.integers(0, 10, 60), rng.integers(0, 10, 60)
    whole = ImageCorrVerifier(device="cpu", progress=False).verify(items, qi, items, di)
    small = ImageCorrVerifier(device="cpu", progress=False, batch_size=4)
    small.prepared_bytes = 300_000  # many tiles: images prepared again per held block
    tiled = small.verify(items, qi, items, di)
    single = [ImageCorrVerifier(device="cpu", progress=False).verify(items, qi[i:i + 1], items, di[i:i + 1])
              for i in range(0, 60, 7)]
    np.testing.assert_allclose(tiled.scores, whole.scores, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose([r.scores[0] for r in single], whole.scores[::7], atol=TOLERANCE, rtol=0)
    assert tiled.details == whole.details and [r.details[0] for r in single] == whole.details[::7]
    assert whole.details[int(np.flatnonzero(qi == di)[0])] == "aligned"


def test_imagecorr_keeps_decoded_images_between_calls(folder, tmp_path, monkeypatch):
    from PIL import Image

    from sibscan.verify.images import ImageCorrVerifier

    verifier = ImageCorrVerifier(device="cpu", progress=False)
    calls = []
    real = verifier.load_array
    monkeypatch.setattr(verifier, "load_array", lambda p: calls.append(p) or real(p))
    first = verifier.load_arrays(folder[:4])
    again = verifier.load_arrays(folder[2:6])
    assert calls == folder[:4] + folder[4:6]  # the two already decoded are not decoded again
    np.testing.assert_array_equal(again[:2], first[2:])
    # a rewritten file is decoded again
    path = str(tmp_path / "rewritten.png")
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(path)
    verifier.load_arrays([path])
    Image.fromarray(np.full((20, 20, 3), 9, np.uint8)).save(path)
    assert verifier.load_arrays([path]).max() == pytest.approx(9 / 255)
    assert calls.count(path) == 2
    # the store keeps at most decoded_bytes, least recently used out first
    verifier._decoded.clear()
    verifier.decoded_bytes = 3 * first[0].nbytes
    verifier.load_arrays(folder[:3])
    verifier.load_arrays(folder[:1])  # folder[0] is now the most recently used
    verifier.load_arrays(folder[3:5])  # two more: the two least recently used (1, 2) go
    assert [key[0] for key in verifier._decoded] == [folder[0], folder[3], folder[4]]
    # an empty call leaves the store alone
    verifier.load_arrays([])
    assert len(verifier._decoded) == 3


def test_imagecorr_decodes_a_file_replaced_with_the_same_size_and_old_mtime(tmp_path):
    # cp -p, rsync -t and tar restore the modification time; BMP keeps the size: only the inode's
    # change time (and, for a replacing rename, the inode) says the pixels are new
    import os
    import time

    from PIL import Image

    from sibscan.verify.images import ImageCorrVerifier

    path = str(tmp_path / "same.bmp")
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(path)
    verifier = ImageCorrVerifier(device="cpu", progress=False)
    assert verifier.load_arrays([path]).max() == 0
    before = os.stat(path)
    time.sleep(0.01)  # a later ctime, on a file system with coarse timestamps too
    Image.fromarray(np.full((32, 32, 3), 200, np.uint8)).save(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert verifier.load_arrays([path]).max() == pytest.approx(200 / 255)


def test_prepared_sides_are_filled_batch_by_batch_without_concatenating(monkeypatch):
    """The side is preallocated and each batch written into it (peak: the side plus one batch); a
    concatenation of all batches held twice the side.  Small batches give the one-batch tensors."""
    from sibscan.kernels import paircorr_sides
    from sibscan.kernels.paircorr import image_variants

    rng = np.random.default_rng(3)
    images = torch.as_tensor(_images(rng, 11, size=24))
    variants = image_variants(True, (1.0, 0.9))
    whole_q = paircorr_sides.prepare_queries(images, 2, variants, True, batch_size=64)
    whole_d = paircorr_sides.prepare_database(images, 2, variants, True, batch_size=64)

    def no_cat(*args, **kw):
        raise AssertionError("torch.cat holds all the batches and the side at once")

    monkeypatch.setattr(torch, "cat", no_cat)
    parts_q = paircorr_sides.prepare_queries(images, 2, variants, True, batch_size=4)
    parts_d = paircorr_sides.prepare_database(images, 2, variants, True, batch_size=4)
    for whole, parts in ((whole_q, parts_q), (whole_d, parts_d)):
        for name in ("spectra", "norms", "zoomed"):
            a, b = getattr(whole, name), getattr(parts, name)
            assert a.keys() == b.keys() and a
            for key in a:
                assert b[key].shape[0] == 11
                torch.testing.assert_close(b[key], a[key], atol=1e-6, rtol=0)


@pytest.mark.parametrize("options",
                         [{"colour": "rgb"}, {"detail": 0.0}, {"flip": False, "scales": (1.0,), "max_shift": 0}])
def test_imagecorr_options_match_the_per_pair_path(folder, options, one_thread):
    from sibscan.kernels.paircorr import image_pair_corr
    from sibscan.verify.images import ImageCorrVerifier

    items = Items("test", "image", ids=[str(i) for i in range(len(folder))], paths=folder)
    rng = np.random.default_rng(5)
    qi, di = rng.integers(0, 10, 30), rng.integers(0, 10, 30)
    verifier = ImageCorrVerifier(device="cpu", progress=False, **options)
    got = verifier.verify(items, qi, items, di)
    arrays = verifier.load_arrays(folder)
    ref = image_pair_corr(arrays[qi], arrays[di], max_shift=verifier.max_shift, flip=verifier.flip,
                          scales=verifier.scales, detail=verifier.detail)
    np.testing.assert_allclose(got.scores, ref.score, atol=TOLERANCE, rtol=0)
