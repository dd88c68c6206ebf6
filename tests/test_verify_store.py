"""imagecorr keeps prepared images between calls: bitwise the scores of preparing every tile afresh."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.items import Items

torch = pytest.importorskip("torch", reason="the image verifier runs on torch (pip install 'sibscan[torch]')")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """14 small scenes, shifted, mirrored and cropped copies among them, as PNG files."""
    from PIL import Image

    rng = np.random.default_rng(7)
    root = tmp_path_factory.mktemp("store")
    y, x = np.mgrid[0:40, 0:40] / 40
    scenes = []
    for _ in range(10):
        a, b, c = rng.random(3) * 6
        img = np.sin(a * x + b * y + c) + (x > rng.random()) * rng.random() + 0.3 * rng.random((40, 40))
        scenes.append((img - img.min()) / (img.max() - img.min()))
    scenes += [np.roll(scenes[0], (2, -1), axis=(0, 1)), scenes[1][:, ::-1], scenes[2][4:36, 4:36], scenes[3] * 0.5]
    paths = []
    for i, img in enumerate(scenes):
        paths.append(str(root / f"{i}.png"))
        Image.fromarray((np.asarray(img) * 255).astype(np.uint8)).convert("RGB").save(paths[-1])
    return paths


def _fresh_tiles(verifier, queries: Items, qi, database: Items, di) -> tuple:
    """The scores of the code before the store: every tile's images prepared afresh (the reference)."""
    from sibscan.kernels.paircorr import check_detail, image_corr_result, image_variants
    from sibscan.kernels.paircorr_sides import prepare_database, prepare_queries, side_bytes, side_pair_corr
    from sibscan.verify.pairtiles import pair_tiles

    s, variants = verifier.max_shift, image_variants(verifier.flip, verifier.scales)
    sigma, detail = check_detail(verifier.detail, None, verifier.size), verifier.detail > 0
    best, arg = np.empty(len(qi), np.float32), np.empty(len(qi), np.int64)
    band = np.full(len(qi), np.nan, np.float32)
    per_q, per_d = side_bytes(1, verifier.size, s, variants, detail)
    with verifier.torch_threads():
        for rows, q_ids, d_ids in pair_tiles(qi, di, per_q, per_d, verifier.prepared_bytes):
            qside = prepare_queries(verifier._tensor(queries, q_ids), s, variants, detail, batch_size=verifier.batch_size)
            dside = prepare_database(verifier._tensor(database, d_ids), s, variants, detail, batch_size=verifier.batch_size)
            best[rows], arg[rows], band[rows] = side_pair_corr(
                qside, np.searchsorted(q_ids, qi[rows]), dside, np.searchsorted(d_ids, di[rows]), s, variants, sigma,
                detail, batch_size=verifier.batch_size)
    res = image_corr_result(best, arg, variants, s, 2 * s + 1, band, verifier.detail)
    return res.score, verifier._details(res, queries.split, database.split)


@pytest.mark.parametrize("prepared_bytes", [256 << 20, 1_200_000])
def test_scores_with_the_store_are_bitwise_those_of_fresh_tiles(folder, prepared_bytes):
    from sibscan.verify.images import ImageCorrVerifier

    train = Items("train", "image", ids=[str(i) for i in range(10)], paths=folder[:10])
    test = Items("test", "image", ids=[str(i) for i in range(4)], paths=folder[10:])
    rng = np.random.default_rng(3)
    verifier = ImageCorrVerifier(device="cpu", progress=False, batch_size=8)
    reference = ImageCorrVerifier(device="cpu", progress=False, batch_size=8)
    verifier.prepared_bytes = reference.prepared_bytes = prepared_bytes  # 1.2 MB: 3 query, 8 database slots
    # a scan's calls: test→train candidates, test→test, train→test, then random pairs; the same images again
    calls = [(test, np.repeat(np.arange(4), 10), train, np.tile(np.arange(10), 4)),
             (test, np.array([0, 0, 1, 2]), test, np.array([1, 3, 2, 3])),
             (test, rng.integers(0, 4, 40), train, rng.integers(0, 10, 40)),
             (test, rng.integers(0, 4, 50), train, rng.integers(0, 10, 50))]
    for queries, qi, database, di in calls:
        got = verifier.verify(queries, qi, database, di)
        want, details = _fresh_tiles(reference, queries, qi, database, di)
        np.testing.assert_array_equal(got.scores, want)
        assert got.details == details
    store = verifier._prepared
    if prepared_bytes < 100 << 20:  # the stores were full: images went out and came back
        assert store["query"].capacity == 3 and store["database"].capacity == 8
        assert len(store["query"]) == 3 and len(store["database"]) == 8
    else:  # every test image as a query; the train images and three test images as the database
        assert len(store["query"]) == 4 and len(store["database"]) == 13
    # planted copies score as copies: the store serves the images asked for, not others
    copies = verifier.verify(test, np.arange(3), train, np.arange(3))
    assert copies.scores.min() > 0.95


def test_store_evicts_least_recently_used_and_never_the_images_asked_for():
    from sibscan.kernels.paircorr_sides import prepare_database
    from sibscan.verify.preparedstore import PreparedStore

    rng = np.random.default_rng(0)
    images = {k: torch.as_tensor(rng.random((1, 1, 20, 20), dtype=np.float32)) for k in "abcdef"}
    prepared = []

    def prepare(x):
        prepared.append(len(x))
        return prepare_database(x, 1, [(False, 1.0, 1.0)], False)

    store = PreparedStore(3, prepare)
    load = lambda keys: lambda pos: torch.cat([images[keys[p]] for p in pos])  # noqa: E731
    keys = ["a", "b", "a"]  # a file asked twice takes one slot, prepared once
    slots = store.slots(keys, load(keys))
    assert slots[0] == slots[2] != slots[1] and prepared == [2] and len(store) == 2
    keys = ["c", "a"]
    store.slots(keys, load(keys))  # b is now the least recently used
    keys = ["d", "c"]
    slots = store.slots(keys, load(keys))
    assert prepared == [2, 1, 1] and "b" not in store._slot and set(store._slot) == {"a", "c", "d"}
    one = prepare_database(images["d"], 1, [(False, 1.0, 1.0)], False)
    torch.testing.assert_close(store.side.spectra[1.0][slots[0]], one.spectra[1.0][0], atol=0, rtol=0)
    with pytest.raises(ValueError, match="4 images asked of a store of 3 slots"):
        store.slots(list("abef"), load(list("abef")))
