"""imagematch: the scale-searching structure match, held to a brute-force reference and to real crops."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the image verifier runs on torch (pip install 'sibscan[torch]')")
PIL = pytest.importorskip("PIL", reason="images need pillow (pip install 'sibscan[images]')")

from PIL import Image  # noqa: E402

from sibscan.errors import SibscanError  # noqa: E402
from sibscan.items import Items  # noqa: E402
from sibscan.kernels.alignmatch import patch_agreement, patch_agreement_reference  # noqa: E402
from sibscan.kernels.scalematch import MatchVariant, match_variants, preference, scale_match  # noqa: E402
from sibscan.kernels.scalematch_reference import scale_match_reference  # noqa: E402
from sibscan.verify import get_verifier, list_verifiers  # noqa: E402


def _smooth_images(n: int, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 1, size // 4, size // 4)).astype(np.float32)
    return torch.nn.functional.interpolate(torch.as_tensor(x), size=(size, size), mode="bilinear").numpy()


def test_scale_match_equals_brute_force_reference():
    q, d = _smooth_images(3, 20, 0), _smooth_images(4, 20, 1)
    d[2] = np.pad(q[1, :, 2:12, 4:14], ((0, 0), (5, 5), (3, 7)), mode="edge")  # a piece of q[1] inside d[2]
    qi, di = np.array([0, 1, 2, 1]), np.array([0, 2, 3, 1])
    variants = [MatchVariant("query", 1.0, 0.0, False), MatchVariant("query", 0.6, 0.0, False),
                MatchVariant("database", 0.8, 4.0, False), MatchVariant("query", 0.7, 0.0, True)]
    chosen = []
    for prefer in ({}, {"size_power": 0.5, "rotation_cost": 0.2}, {"size_power": 3.0, "rotation_cost": 1.0}):
        fast = scale_match(q, d, qi, di, variants, **prefer)
        ref = scale_match_reference(q, d, qi, di, variants, **prefer)
        np.testing.assert_allclose(fast.score, ref.score, atol=2e-4)
        np.testing.assert_array_equal(fast.variant, ref.variant)
        np.testing.assert_array_equal(fast.y, ref.y)
        np.testing.assert_array_equal(fast.x, ref.x)
        chosen.append(fast.variant.tolist())
    assert chosen[2] != chosen[0]  # a strong enough preference for large, unrotated templates changes the choice


def test_preference_ranks_by_ncc_or_by_evidence_with_a_rotation_cost():
    variants = [MatchVariant("query", 1.0, 0.0, False), MatchVariant("database", 0.5, 0.0, False),
                MatchVariant("query", 1.0, 8.0, False)]
    val = np.array([[0.90, 0.95, 0.93]], np.float32)
    assert preference(val, 64, variants) is val  # no weights: the NCC itself
    ranked = preference(val, 64, variants, size_power=0.5, rotation_cost=0.2)
    assert ranked.argmax() == 0  # the half-side and the rotated template scored higher by NCC alone
    np.testing.assert_allclose(ranked[0, 1], np.arctanh(0.95) * (32 / 64) ** 0.5, rtol=1e-6)


def test_patch_agreement_equals_brute_force_reference():
    q, d = _smooth_images(3, 24, 2), _smooth_images(4, 24, 3)
    d[2] = np.pad(q[1, :, 5:19, 5:19], ((0, 0), (5, 5), (3, 7)), mode="edge")  # q[1]'s centre inside d[2]
    d[3, :, :12] = 0.5  # half of it flat: those patches count as no evidence
    qi, di = np.array([0, 1, 2, 1, 0]), np.array([0, 2, 3, 1, 3])
    variants = [MatchVariant("query", 1.0, 0.0, False), MatchVariant("query", 0.6, 0.0, False),
                MatchVariant("database", 0.8, 4.0, False), MatchVariant("query", 0.7, 0.0, True)]
    match = scale_match(q, d, qi, di, variants)
    assert len(set(match.variant.tolist())) > 1  # several variants, so the grouping by variant is exercised
    for grid in (1, 3):
        fast = patch_agreement(q, d, qi, di, variants, match, grid=grid)
        ref = patch_agreement_reference(q, d, qi, di, variants, match, grid=grid)
        np.testing.assert_allclose(fast, ref, atol=2e-4)
    assert ((fast >= 0) & (fast <= 1)).all()
    with pytest.raises(ValueError, match="grid must be"):
        patch_agreement(q, d, qi, di, variants, match, grid=0)


def test_variants_and_shape_errors():
    v = match_variants([1.0, 0.5], [0, 5], True)
    assert v[0] == MatchVariant("query", 1.0, 0.0, False)
    assert len(v) == 2 * 2 + 2 * 2 * 2  # scale 1 one way, 0.5 both ways; two angles; mirror
    with pytest.raises(ValueError, match="scales must be in"):
        match_variants([1.5], [0], False)
    with pytest.raises(ValueError, match="shape"):
        scale_match(np.zeros((2, 1, 8, 9)), np.zeros((2, 1, 8, 9)), [0], [0], v)


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """A real photo (scikit-image's astronaut) at 96 px, a 0.6 crop of it, its zoom-out, a rotated
    crop; and two different featureless 'skies' (smooth gradients with sensor noise)."""
    data = pytest.importorskip("skimage.data", reason="needs scikit-image's sample photos")
    root = tmp_path_factory.mktemp("scene")
    photo = Image.fromarray(data.astronaut())  # 512 x 512
    src = photo.crop((150, 40, 342, 232)).resize((96, 96), Image.LANCZOS)
    paths = {"train": root / "train.png", "flat_a": root / "flat_a.png", "flat_b": root / "flat_b.png",
             "crop": root / "crop.png", "zoom": root / "zoom.png", "rotate": root / "rotate.png"}
    src.save(paths["train"])
    photo.crop((150 + 30, 40 + 50, 150 + 30 + 115, 40 + 50 + 115)).resize((96, 96), Image.BICUBIC).save(paths["crop"])
    photo.crop((150 - 80, 40 - 30, 342 + 40, 232 + 90)).resize((96, 96), Image.BICUBIC).save(paths["zoom"])
    photo.crop((100, 0, 392, 292)).rotate(6, resample=Image.BICUBIC).crop((55, 55, 237, 237)).resize(
        (96, 96), Image.BICUBIC).save(paths["rotate"])
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:96, 0:96]
    for k, (a, b) in (("flat_a", (0.4, 0.05)), ("flat_b", (0.3, 0.0))):
        sky = 120 + 60 * (a * yy + b * xx) / 96 + rng.normal(0, 0.6, (96, 96))
        Image.fromarray(np.clip(np.stack([sky, sky + 20, sky + 50], -1), 0, 255).astype(np.uint8)).save(paths[k])
    return paths


def test_imagematch_finds_heavy_crop_zoom_and_rotation_but_not_featureless(scene):
    assert "imagematch" in [c.name for c in list_verifiers("image")]
    train = Items("train", "image", ids=["src", "flat_a"], paths=[str(scene["train"]), str(scene["flat_a"])])
    test = Items("test", "image", ids=["crop", "zoom", "rotate", "flat_b"],
                 paths=[str(scene[k]) for k in ("crop", "zoom", "rotate", "flat_b")])
    ver = get_verifier("imagematch", device="cpu", progress=False)
    res = ver.verify(test, np.array([0, 1, 2, 3, 0]), train, np.array([0, 0, 0, 1, 1]))
    assert res.scores[:3].min() > 0.75, res.scores
    assert "(test inside train)" in res.details[0] and "(train inside test)" in res.details[1], res.details
    assert "rotated" in res.details[2], res.details[2]
    # two different featureless scenes, and a photo against one, stay far below every true copy
    assert res.scores[3:].max() < 0.5, (res.scores, res.details)
    # imagecorr, the grey-level verifier it replaces, scores the two skies as near-identical by their
    # whole-image correlation (their unrelated noise only pulls its detail band down: 0.82 in all)
    old = get_verifier("imagecorr", device="cpu", progress=False).verify(test, np.array([3]), train, np.array([1]))
    assert old.scores[0] > 0.75
    plain = get_verifier("imagecorr", device="cpu", progress=False, detail=0.0)
    assert plain.verify(test, np.array([3]), train, np.array([1])).scores[0] > 0.9
    # pairs taken in chunks of 4 (batch_size 1): each chunk searches its own queries only, the same scores
    chunked = get_verifier("imagematch", device="cpu", progress=False, batch_size=1).verify(
        test, np.array([0, 1, 2, 3, 0]), train, np.array([0, 0, 0, 1, 1]))
    np.testing.assert_allclose(chunked.scores, res.scores, atol=1e-6)
    assert chunked.details == res.details


def test_imagematch_options_identity_and_errors():
    ver = get_verifier("imagematch", device="cpu", progress=False)
    assert ver.identity.startswith("imagematch-v3(size=64,") and f"variants={len(ver.variants)}" in ver.identity
    assert ver.identity.endswith(",grid=4)")  # the full search by default
    coarse = get_verifier("imagematch", coarse=32, device="cpu", progress=False)
    assert coarse.identity.endswith(",grid=4,coarse=32,keep=6)")
    ranked = get_verifier("imagematch", size_power=0.5, rotation_cost=0.2, device="cpu", progress=False)
    assert ranked.identity.endswith(",grid=4,size_power=0.5,rotation_cost=0.2)")  # another alignment, another identity
    for bad, message in (({"coarse": 64}, "coarse must be"), ({"keep": 0}, "keep must be"),
                         ({"threads": 0}, "threads must be"),
                         ({"size_power": -1}, "size_power must lie"), ({"rotation_cost": 3}, "rotation_cost in")):
        with pytest.raises(SibscanError, match=message):
            get_verifier("imagematch", device="cpu", **bad)
    with pytest.raises(SibscanError, match="scales must lie in"):
        get_verifier("imagematch", scales=(0.3,), device="cpu")
    with pytest.raises(SibscanError, match="angles must lie in"):
        get_verifier("imagematch", angles=(45,), device="cpu")
    with pytest.raises(SibscanError, match="grid must lie in"):
        get_verifier("imagematch", grid=0, device="cpu")
    with pytest.raises(SibscanError, match="imagematch works on images, not table"):
        ver.verify(Items("q", "table", ids=["a"], values=np.zeros((1, 3))), [0],
                   Items("d", "table", ids=["b"], values=np.zeros((1, 3))), [0])


def test_coarse_to_fine_equals_exhaustive_search_where_the_best_variant_is_clear(scene):
    """Real crop, zoom-out and rotation of a photo, and seeded pieces of smooth random images at 64 px:
    the coarse (32 px) search keeps the exhaustive best among its favourites, so the answer is the same."""
    ver = get_verifier("imagematch", device="cpu", progress=False)
    photos = ver.load_arrays([str(scene[k]) for k in ("train", "crop", "zoom", "rotate")])
    q, d = _smooth_images(4, 64, 5), _smooth_images(4, 64, 6)  # 16 x 16 seeded noise, upsampled
    q[:3], d[0] = photos[1:], photos[0]
    shrunk = torch.nn.functional.interpolate(torch.as_tensor(q[3:4]), size=(38, 38), mode="area").numpy()[0]
    d[1, :, 13:51, 11:49] = shrunk  # q[3] shrunk to 0.6 inside another image
    d[2] = q[3, :, :, ::-1]  # mirrored
    qi, di = np.array([0, 1, 2, 3, 3]), np.array([0, 0, 0, 1, 2])
    full = scale_match(q, d, qi, di, ver.variants)
    fast = scale_match(q, d, qi, di, ver.variants, coarse=32, keep=6)
    np.testing.assert_array_equal(fast.variant, full.variant)
    np.testing.assert_array_equal(fast.y, full.y)
    np.testing.assert_array_equal(fast.x, full.x)
    np.testing.assert_allclose(fast.score, full.score, atol=1e-6)
    assert full.score.min() > 0.5, full.score  # every best variant is a clear match, not noise
    assert ver.variants[int(full.variant[4])].flip and ver.variants[int(full.variant[3])][:2] == ("query", 0.6)
    # keeping every variant is the exhaustive search; one kept is only ever as good or worse
    np.testing.assert_array_equal(scale_match(q, d, qi, di, ver.variants, coarse=32, keep=len(ver.variants)).variant,
                                  full.variant)
    assert (scale_match(q, d, qi, di, ver.variants, coarse=32, keep=1).score <= full.score + 1e-6).all()
    with pytest.raises(ValueError, match="coarse must be"):
        scale_match(q, d, qi, di, ver.variants, coarse=64)


def _pinned_case():
    """Seeded 64-px images and 24 pairs: a crop of q[1] inside d[2], a mirror, flat parts, random pairs."""
    q, d = _smooth_images(5, 64, 11), _smooth_images(7, 64, 12)
    d[2] = np.pad(q[1, :, 8:46, 12:50], ((0, 0), (13, 13), (10, 16)), mode="edge")
    q[3] = d[4, :, :, ::-1]
    q[4, :, :, :30] = 0.5
    d[6] = 0.5
    rng = np.random.default_rng(5)
    return q, d, np.r_[[1, 3, 4, 0], rng.integers(0, 5, 20)], np.r_[[2, 4, 6, 6], rng.integers(0, 7, 20)]


def test_search_equals_the_previous_implementation():
    """The search's speed-ups (one sampling grid per variant, integral images once per side, each pair's
    outer spectrum gathered once, the inverse FFT of the valid positions only) change no score: the
    exhaustive and coarse searches and the patch agreement of :func:`_pinned_case` equal the outputs
    of the code before them (commit e1d1287, one torch thread), kept in tests/data."""
    from pathlib import Path

    pinned = np.load(Path(__file__).parent / "data" / "scalematch_v3_e1d1287.npz")
    q, d, qi, di = _pinned_case()
    variants = get_verifier("imagematch", device="cpu", progress=False).variants
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        full = scale_match(q, d, qi, di, variants, batch_size=7)  # batches that split pairs of one image
        local = patch_agreement(q, d, qi, di, variants, full, grid=4)
        coarse = scale_match(q, d, qi, di, variants, batch_size=7, coarse=32, keep=6)
    finally:
        torch.set_num_threads(before)
    for prefix, res in (("", full), ("coarse_", coarse)):
        np.testing.assert_allclose(res.score, pinned[prefix + "score"], atol=1e-6)
        for key in ("variant", "y", "x"):
            np.testing.assert_array_equal(getattr(res, key), pinned[prefix + key])
    np.testing.assert_allclose(local, pinned["patches"], atol=1e-6)
    assert full.score[1] > 0.99 and len(set(full.variant.tolist())) > 5  # a real match among many variants
