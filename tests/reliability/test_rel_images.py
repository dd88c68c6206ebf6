"""Cases 2 and 5 of issue 13: deep images are scaled by their own range and fingerprinted at their
own depth; everything of an image folder that is not scanned is listed with its reason."""
from __future__ import annotations

import os

import numpy as np
import pytest

from rel_helpers import cli

Image = pytest.importorskip("PIL.Image")

from sibscan.fingerprint import pixel_fingerprint  # noqa: E402
from sibscan.imageio import open_image  # noqa: E402
from sibscan.loaders.images import load_images  # noqa: E402


def _photo(rng, size=24):
    return rng.integers(0, 256, (size, size, 3), dtype=np.uint8)


def test_unrelated_16_bit_and_float_images_are_not_twins(tmp_path):
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        (tmp_path / split / "a").mkdir(parents=True)
    Image.fromarray(rng.integers(0, 4096, (32, 32)).astype(np.uint16)).save(tmp_path / "train/a/12bit.png")
    Image.fromarray(rng.integers(0, 4096, (32, 32)).astype(np.uint16)).save(tmp_path / "test/a/12bit.png")
    Image.fromarray(rng.random((32, 32)).astype(np.float32)).save(tmp_path / "train/a/float.tif")
    Image.fromarray(rng.random((32, 32)).astype(np.float32)).save(tmp_path / "test/a/float.tif")
    for k in range(3):
        Image.fromarray(_photo(rng)).save(tmp_path / f"train/a/rgb{k}.png")
    result = cli("twins", tmp_path / "train", tmp_path / "test", "--json")
    assert result.exit_code == 0, result.output
    assert '"test_rows_with_train_twin": 0' in result.output  # before: both deep pairs counted as twins


def test_deep_images_use_their_range_and_keep_their_depth_in_the_fingerprint(tmp_path):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4096, (16, 16)).astype(np.uint16)  # 12 bits in 16
    Image.fromarray(a).save(tmp_path / "a.png")
    Image.fromarray(a + 1).save(tmp_path / "b.png")  # the same picture one level brighter
    im_a, im_b = open_image(tmp_path / "a.png"), open_image(tmp_path / "b.png")
    rgb = np.asarray(im_a)
    assert rgb.min() == 0 and rgb.max() == 255 and 60 < rgb.mean() < 200  # neither white nor black
    np.testing.assert_array_equal(np.asarray(im_b), rgb)  # same 8-bit view (range-scaled) ...
    assert pixel_fingerprint(im_a) != pixel_fingerprint(im_b)  # ... but other data at 16 bits
    f = rng.random((16, 16)).astype(np.float32)
    Image.fromarray(f).save(tmp_path / "f.tif")
    view = np.asarray(open_image(tmp_path / "f.tif"))[..., 0].astype(float)
    assert np.corrcoef(view.ravel(), f.ravel())[0, 1] > 0.999


def test_everything_not_scanned_in_an_image_folder_is_listed(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    root = tmp_path / "imgs"
    (root / "cats").mkdir(parents=True)
    for k in range(2):
        Image.fromarray(_photo(rng)).save(root / "cats" / f"c{k}.png")
    (root / "locked").mkdir()
    Image.fromarray(_photo(rng)).save(root / "locked" / "hidden.png")
    (root / "cats" / "gone.png").symlink_to(tmp_path / "nowhere.png")
    os.mkfifo(root / "cats" / "pipe.png")
    (root / "cats" / "folder.png").mkdir()
    (root / "linked").symlink_to(root / "cats", target_is_directory=True)
    if os.geteuid() != 0:
        (root / "locked").chmod(0)
    else:  # root reads any folder: make this one fail as it would for a user
        real = os.scandir

        def scandir(path="."):
            if os.fspath(path).endswith("locked"):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path)

        monkeypatch.setattr(os, "scandir", scandir)
    try:
        items = load_images(root, "train")
    finally:
        (root / "locked").chmod(0o755)
    assert len(items) == 2  # and the FIFO did not block the walk
    reasons = {os.path.basename(s.where): s.reason for s in items.skipped}
    assert "cannot read folder" in reasons["locked"]
    assert reasons["gone.png"] == "dangling symbolic link"
    assert "FIFO" in reasons["pipe.png"]
    assert "folder named like an image" in reasons["folder.png"]
    assert "not followed" in reasons["linked"]


def test_a_fifo_in_a_listing_is_refused_not_read(tmp_path):
    rng = np.random.default_rng(3)
    Image.fromarray(_photo(rng)).save(tmp_path / "ok.png")
    os.mkfifo(tmp_path / "pipe.png")
    (tmp_path / "list.csv").write_text("path\nok.png\npipe.png\n")
    items = load_images(tmp_path / "list.csv", "test")  # would block forever opening the FIFO
    assert len(items) == 1 and "FIFO" in items.skipped[0].reason


def test_twins_lists_the_images_it_left_out(tmp_path):
    rng = np.random.default_rng(4)
    for split in ("train", "test"):
        (tmp_path / split / "a").mkdir(parents=True)
        Image.fromarray(_photo(rng)).save(tmp_path / split / "a" / "x.png")
    (tmp_path / "test" / "a" / "broken.png").write_bytes(b"not a png")
    result = cli("twins", tmp_path / "train", tmp_path / "test")
    assert result.exit_code == 0, result.output
    assert "skipped (not compared): 0 train, 1 test" in result.output and "broken.png" in result.output


def test_scan_prints_why_a_sub_folder_was_not_scanned(tmp_path, monkeypatch):
    """Issue 32: the reason was only in manifest.json; the summary counted the skip without it."""
    rng = np.random.default_rng(5)
    for split in ("train", "test"):
        (tmp_path / split / "a").mkdir(parents=True)
        for k in range(3):
            Image.fromarray(_photo(rng)).save(tmp_path / split / "a" / f"x{k}.png")
    (tmp_path / "train" / "locked").mkdir()
    real = os.scandir

    def scandir(path="."):  # fails as an unreadable folder does for a user (root reads any)
        if isinstance(path, (str, os.PathLike)) and os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = cli("scan", tmp_path / "train", tmp_path / "test", "--out", tmp_path / "s", "--encoder", "pixels",
                 "--no-verify", "--baseline-pairs", "50", "--no-progress")
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "skipped (not compared)" in ln)
    assert "1 train, 0 test" in line and "locked" in line and "cannot read folder" in line, line
