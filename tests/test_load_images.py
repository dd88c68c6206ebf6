"""Loading images: folders with class sub-folders, listings, every format and colour mode, broken
files and a decompression bomb, and the exact pixel/bytes fingerprints."""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest

from sibscan.errors import InputError
from sibscan.items import Items
from sibscan.fingerprint import image_fingerprints
from sibscan.loaders.images import load_images

Image = pytest.importorskip("PIL.Image")
PngImagePlugin = pytest.importorskip("PIL.PngImagePlugin")
skdata = pytest.importorskip("skimage.data")


def _bomb_png(path, width=20000, height=20000):
    """A tiny PNG whose header claims ``width x height`` pixels (never decodable in memory)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def photos():
    chelsea = Image.fromarray(skdata.chelsea())
    return {
        "chelsea": chelsea,
        "astronaut": Image.fromarray(skdata.astronaut()).resize((128, 128)),
        "coffee": Image.fromarray(skdata.coffee()).resize((150, 100)),
        "camera": Image.fromarray(skdata.camera()).resize((128, 128)),  # mode L
    }


@pytest.fixture()
def image_folder(tmp_path, photos):
    root = tmp_path / "imgs"
    (root / "cat").mkdir(parents=True)
    (root / "other" / "deep").mkdir(parents=True)
    small = photos["chelsea"].resize((150, 100))
    small.save(root / "cat" / "a.png")
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "same pixels, other metadata")
    small.save(root / "cat" / "a_meta.png", pnginfo=info)
    small.save(root / "cat" / "a.bmp")
    small.save(root / "cat" / "a.webp", lossless=True)
    small.save(root / "cat" / "b.jpg", quality=85)
    photos["astronaut"].convert("CMYK").save(root / "other" / "cmyk.jpg")
    photos["camera"].save(root / "other" / "gray.png")
    rgba = photos["coffee"].convert("RGBA")
    rgba.putalpha(128)
    rgba.save(root / "other" / "deep" / "rgba.png")
    frames = [photos["coffee"].convert("P"), photos["astronaut"].resize((150, 100)).convert("P")]
    frames[0].save(root / "other" / "anim.gif", save_all=True, append_images=frames[1:], duration=100)
    # broken ones
    (root / "other" / "zero.png").write_bytes(b"")
    (root / "other" / "garbage.jpg").write_bytes(np.random.default_rng(0).bytes(3000))
    full = (root / "cat" / "b.jpg").read_bytes()
    (root / "cat" / "truncated.jpg").write_bytes(full[: len(full) // 3])
    _bomb_png(root / "other" / "bomb.png")
    (root / "other" / "notes.txt").write_text("not an image")
    return root


def test_folder_labels_ids_formats_and_skips(image_folder):
    items = load_images(image_folder, "train")
    assert items.modality == "image" and items.split == "train"
    ids = list(items.ids)
    assert ids == sorted(ids)
    assert set(ids) == {
        "cat/a.png", "cat/a_meta.png", "cat/a.bmp", "cat/a.webp", "cat/b.jpg",
        "other/cmyk.jpg", "other/gray.png", "other/deep/rgba.png", "other/anim.gif",
    }
    labels = dict(zip(items.ids, items.labels))
    assert labels["cat/a.png"] == "cat" and labels["other/deep/rgba.png"] == "other"
    assert all(p.startswith(str(image_folder)) for p in items.paths)
    skipped = {s.where.rsplit("/", 1)[-1]: s.reason for s in items.skipped}
    assert set(skipped) == {"zero.png", "garbage.jpg", "truncated.jpg", "bomb.png"}
    assert skipped["zero.png"] == "zero-byte image file"
    assert "decompression bomb" in skipped["bomb.png"] and ("400000000" in skipped["bomb.png"]
                                                            or "20000x20000" in skipped["bomb.png"])
    assert skipped["garbage.jpg"].startswith("corrupt or unsupported image")
    assert skipped["truncated.jpg"].startswith("corrupt or unsupported image")
    assert items.extra["width"][ids.index("cat/a.png")] == 150


def test_pixel_fingerprint_ignores_metadata_and_lossless_format(image_folder):
    items = load_images(image_folder, "train")
    fp = {i: tuple(f) for i, f in zip(items.ids, items.extra["pixel_fp"])}
    bfp = {i: tuple(f) for i, f in zip(items.ids, items.extra["bytes_fp"])}
    assert items.extra["pixel_fp"].dtype == np.uint64 and items.extra["pixel_fp"].shape == (len(items), 2)
    twins = ["cat/a.png", "cat/a_meta.png", "cat/a.bmp", "cat/a.webp"]
    assert len({fp[t] for t in twins}) == 1
    assert len({bfp[t] for t in twins}) == 4
    assert fp["cat/b.jpg"] != fp["cat/a.png"]  # lossy: other pixels
    assert len(set(fp.values())) == len(fp) - 3
    # brute-force reference: the hash of the decoded pixels
    from sibscan.imageio import open_image
    from sibscan.fingerprint import pixel_fingerprint

    for i, path in enumerate(items.paths):
        assert tuple(items.extra["pixel_fp"][i]) == pixel_fingerprint(open_image(path))


def test_image_fingerprints_reuses_or_computes(image_folder):
    items = load_images(image_folder, "test")
    assert np.array_equal(image_fingerprints(items), items.extra["pixel_fp"])
    bare = Items("test", "image", ids=items.ids, paths=items.paths)
    assert np.array_equal(image_fingerprints(bare), items.extra["pixel_fp"])
    with pytest.raises(InputError, match="image fingerprints need image items, got text"):
        image_fingerprints(Items("test", "text", ids=["a"], texts=["x"]))


def test_colour_modes_become_rgb(image_folder):
    from sibscan.imageio import open_image

    for name in ("other/cmyk.jpg", "other/gray.png", "other/deep/rgba.png", "other/anim.gif"):
        im = open_image(image_folder / name)
        assert im.mode == "RGB", name
    gif = np.asarray(open_image(image_folder / "other" / "anim.gif"))
    first = np.asarray(Image.open(image_folder / "other" / "anim.gif").convert("RGB"))
    assert np.array_equal(gif, first)


def test_listing_csv_with_columns_and_missing_files(tmp_path, photos):
    (tmp_path / "pics").mkdir()
    photos["chelsea"].save(tmp_path / "pics" / "c.jpg")
    photos["coffee"].save(tmp_path / "pics" / "k.png")
    listing = tmp_path / "list.csv"
    listing.write_text(
        "file,cls,key,who\n"
        "pics/c.jpg,cat,c1,p1\n"
        "pics/k.png,cup,k1,p2\n"
        "pics/missing.png,cup,m1,p3\n"
        ",cup,e1,p4\n"
    )
    items = load_images(listing, "test", label="cls", id="key", group="who")
    assert list(items.ids) == ["c1", "k1"] and list(items.labels) == ["cat", "cup"]
    assert list(items.groups) == ["p1", "p2"]
    assert items.paths[0] == str((tmp_path / "pics" / "c.jpg").resolve())
    reasons = sorted(s.reason for s in items.skipped)
    assert reasons[0].startswith("cannot read image") and reasons[1] == "empty image path"
    with pytest.raises(InputError, match=r"no label column 'label'; columns: file, cls, key, who"):
        load_images(listing, "test", label="label")
    # an id column's repeat is refused naming both lines of the listing, before any image is decoded
    listing.write_text("file,key\npics/c.jpg,c1\npics/k.png,c1\n")
    with pytest.raises(InputError, match=r"list.csv: duplicate id 'c1' in column 'key' \(rows 2 and 3\)"):
        load_images(listing, "test", id="key")


def test_listing_jsonl_and_parquet(tmp_path, photos):
    photos["camera"].save(tmp_path / "g.png")
    photos["astronaut"].save(tmp_path / "a.png")
    jl = tmp_path / "list.jsonl"
    jl.write_text("\n".join(json.dumps({"img": p, "y": y}) for p, y in [("g.png", 0), ("a.png", 1)]) + "\n")
    items = load_images(jl, "train", path_field="img", label="y")
    assert list(items.ids) == ["g.png", "a.png"] and list(items.labels) == ["0", "1"]
    with pytest.raises(InputError, match=r"no image path column \(tried path, file, .*\); columns: img, y"):
        load_images(jl, "train")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"path": ["a.png", "g.png"]}), tmp_path / "list.parquet")
    items = load_images(tmp_path / "list.parquet", "train")
    assert list(items.ids) == ["a.png", "g.png"] and items.labels is None


def test_bad_sources(tmp_path, photos):
    with pytest.raises(InputError, match="nowhere: no such file or folder"):
        load_images(tmp_path / "nowhere", "train")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"empty: no images found \(looked for .jpg"):
        load_images(empty, "train")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.png").write_bytes(b"")
    with pytest.raises(InputError, match=r"no readable images \(1 skipped; first: .*x.png: zero-byte image file\)"):
        load_images(broken, "train")
    with pytest.raises(InputError, match="label/id/group/path columns apply to listing files"):
        load_images(broken, "train", label="y")
    photos["camera"].save(tmp_path / "g.png")
    dup = tmp_path / "dup.csv"
    dup.write_text("path\ng.png\ng.png\n")
    with pytest.raises(InputError, match=r"dup.csv: duplicate id 'g.png' \(rows 0 and 1\)"):
        load_images(dup, "train")
    with pytest.raises(InputError, match=r"not a folder or an image listing"):
        load_images(tmp_path / "g.png", "train")


def test_flat_folder_has_no_labels(tmp_path, photos):
    photos["camera"].save(tmp_path / "g.png")
    photos["coffee"].save(tmp_path / "k.jpg")
    items = load_images(tmp_path, "train", workers=1)
    assert items.labels is None and list(items.ids) == ["g.png", "k.jpg"]
    (tmp_path / "sub").mkdir()
    photos["astronaut"].save(tmp_path / "sub" / "a.png")
    with pytest.warns(UserWarning, match="no labels taken from sub-folder names"):
        items = load_images(tmp_path, "train")
    assert items.labels is None and len(items) == 3


def test_csv_listing_of_images_is_detected_and_errors_name_the_options(tmp_path, photos):
    """A path,label CSV of image files (paths relative to the CSV's folder) is read as images without
    --modality; a missing column is named with its command-line option."""
    from sibscan.loaders import load, modality_of

    (tmp_path / "pics").mkdir()
    photos["chelsea"].save(tmp_path / "pics" / "c.jpg")
    photos["coffee"].save(tmp_path / "pics" / "k.png")
    listing = tmp_path / "list.csv"
    listing.write_text("path,label\npics/c.jpg,cat\npics/k.png,cup\n")
    assert modality_of(listing) == "image"
    items = load(listing, "train", label="label")
    assert items.modality == "image" and list(items.labels) == ["cat", "cup"]
    assert items.paths[1] == str((tmp_path / "pics" / "k.png").resolve())
    # a path column whose first row is not an image file stays a table (the table reader explains)
    (tmp_path / "t.csv").write_text("path,x\nnot-here.png,1\n")
    (tmp_path / "n.csv").write_text("file,x\n3,1\n")
    assert modality_of(tmp_path / "t.csv") == "table" and modality_of(tmp_path / "n.csv") == "table"
    # a table of features that names its images stays a table (it was read as images since detection came)
    (tmp_path / "feat.csv").write_text("filename,f1,f2,f3,label\npics/c.jpg,0.1,0.2,0.3,cat\n")
    assert modality_of(tmp_path / "feat.csv") == "table"
    (tmp_path / "one.csv").write_text("path,label,year\npics/c.jpg,cat,2020\n")  # one number: still a listing
    assert modality_of(tmp_path / "one.csv") == "image"
    with pytest.raises(InputError, match=r"no label column 'cls'; columns: path, label \(choose one with --label\)"):
        load(listing, "train", label="cls")
    with pytest.raises(InputError, match=r"no id column 'key'; columns: path, label \(choose one with --id\)"):
        load(listing, "train", id="key")
    with pytest.raises(InputError,
                       match=r"no path column 'img'; columns: path, label \(choose one with --path-field\)"):
        load(listing, "train", path_field="img")
