"""Image encoders at the images' own scale, on ONNX Runtime, fed by reused decode buffers."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.encoders.scale import choose_image_size, median_short_side
from sibscan.errors import InputError, SibscanError
from sibscan.items import Items

PIL = pytest.importorskip("PIL.Image")


def _image(path, w, h, seed=0):
    rng = np.random.default_rng(seed)
    PIL.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    return str(path)


# --- the size rule --------------------------------------------------------------------------------
@pytest.mark.parametrize("side, size", [(32, 96), (20, 96), (8, 96), (48, 96), (56, 112), (64, 128), (100, 192),
                                        (111.9, 208), (112, 224), (500, 224), (None, 224), (0, 224),
                                        (float("nan"), 224)])
def test_choose_image_size(side, size):
    assert choose_image_size(side, 224) == size


def test_median_short_side_from_recorded_sizes_and_from_files(tmp_path):
    recorded = Items("train", "image", ids=["a", "b", "c"], paths=["x", "y", "z"],
                     extra={"width": np.array([32, 500, 64]), "height": np.array([40, 30, 64])})
    assert median_short_side(recorded) == 32.0  # min sides 32, 30, 64
    paths = [_image(tmp_path / f"{i}.png", w, h, i) for i, (w, h) in enumerate([(40, 32), (32, 50), (90, 96)])]
    (tmp_path / "bad.png").write_bytes(b"not an image")
    items = Items("train", "image", ids=list("abcd"), paths=paths + [str(tmp_path / "bad.png")])
    assert median_short_side(items) == 32.0  # the unreadable file is left out here (the encoder reports it)


def test_image_size_override_is_refused_for_an_encoder_that_does_not_scale():
    from sibscan.encoders.build import check_image_size

    check_image_size("effnet", 64)
    with pytest.raises(SibscanError, match="pixels keeps its own input size: drop --image-size"):
        check_image_size("pixels", 64)


# --- decode buffers --------------------------------------------------------------------------------
def test_to_pixels_equals_torchvision_resize_and_centre_crop(tmp_path):
    transforms = pytest.importorskip("torchvision.transforms")
    from sibscan.encoders.imagebatch import to_pixels

    for w, h, size in [(50, 37, 24), (37, 50, 32), (33, 33, 64), (80, 31, 31)]:
        im = PIL.open(_image(tmp_path / f"{w}x{h}.png", w, h, w)).convert("RGB")
        ref = transforms.CenterCrop(size)(transforms.Resize(size, transforms.InterpolationMode.BICUBIC)(im))
        np.testing.assert_array_equal(to_pixels(im, size), np.asarray(ref).transpose(2, 0, 1))


def test_pixel_batches_keep_order_and_reuse_two_buffers(tmp_path):
    from sibscan.encoders.imagebatch import pixel_batches, to_pixels

    paths = [_image(tmp_path / f"{i}.png", 20 + i, 24, i) for i in range(7)]
    seen, got = set(), []
    for start, px in pixel_batches(paths, 16, 3, threads=2):
        seen.add(px.__array_interface__["data"][0])
        got.append((start, px.copy()))
    assert [s for s, _ in got] == [0, 3, 6] and len(seen) == 2
    ref = np.stack([to_pixels(PIL.open(p).convert("RGB"), 16) for p in paths])
    np.testing.assert_array_equal(np.concatenate([px for _, px in got]), ref)
    (tmp_path / "bad.png").write_bytes(b"broken")
    with pytest.raises(InputError, match="bad.png"):
        list(pixel_batches(paths[:2] + [str(tmp_path / "bad.png")], 16, 2, threads=2))


# --- effnet: size in the identity, ONNX Runtime = PyTorch -------------------------------------------
@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    skdata = pytest.importorskip("skimage.data")
    d = tmp_path_factory.mktemp("rt-photos")
    out = []
    for name in ("chelsea", "astronaut", "coffee", "rocket"):
        im = PIL.fromarray(getattr(skdata, name)()).convert("RGB")
        im.thumbnail((96, 96), PIL.BICUBIC)
        im.save(d / f"{name}.jpg", quality=90)
        out.append(str(d / f"{name}.jpg"))
    return out


def test_effnet_onnx_runtime_agrees_with_pytorch(photos):
    pytest.importorskip("timm")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from sibscan.encoders import get_encoder
    from sibscan.encoders.onnxrt import cache_root

    onnx = get_encoder("effnet", device="cpu", image_size=48, runtime="onnx")
    eager = get_encoder("effnet", device="cpu", image_size=48, runtime="torch")
    assert onnx.identity == eager.identity and "size=48" in onnx.identity
    assert get_encoder("effnet", device="cpu", image_size=64).identity != onnx.identity
    a, b = onnx.encode(photos, batch_size=3), eager.encode(photos, batch_size=3)
    assert (onnx.runtime_used, eager.runtime_used) == ("onnxruntime", "torch")
    assert a.shape == b.shape == (len(photos), 1280)
    assert (np.sum(a * b, axis=1) >= 0.999).all()
    exported = list(cache_root().rglob("*.onnx"))
    assert exported, "the exported model is cached beside the user cache"
    stamp = {p: p.stat().st_mtime_ns for p in exported}
    again = get_encoder("effnet", device="cpu", image_size=48, runtime="onnx")
    np.testing.assert_allclose(again.encode(photos[:2]), a[:2], atol=1e-5)
    assert {p: p.stat().st_mtime_ns for p in exported} == stamp, "a second encoder reuses the export"


def test_effnet_image_size_bounds():
    pytest.importorskip("timm")
    from sibscan.encoders import get_encoder

    with pytest.raises(SibscanError, match="--image-size"):
        get_encoder("effnet", device="cpu", image_size=16)
    with pytest.raises(SibscanError, match="unknown runtime 'tensorrt' for effnet; available"):
        get_encoder("effnet", device="cpu", runtime="tensorrt")
