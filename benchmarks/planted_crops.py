"""Planted image siblings that are hard for a verifier: heavy crops, zooms, small rotations and
colour shifts of real photographs, against featureless scenes and other parts of the same photos.

Two cases, both cut from the photographs that ship inside installed packages (scikit-image's
sample data, scikit-learn's ``china.jpg``/``flower.jpg``, matplotlib's ``grace_hopper.jpg`` when
matplotlib is installed; nothing is downloaded):

* :func:`crops_set` — every photo (longest side at most 640 px) is cut into a grid of ``cell`` x
  ``cell`` px cells (96 by default); an item is one cell.
* :func:`small_set` — the same, with every photo first shrunk by ``cell / 32`` so that items are
  32 x 32, as in common small-image benchmarks; the siblings' crops are upscaled back to 32 px.

Cells are split by structure (the standard deviation of the luminance minus its Gaussian blur,
sigma 2 px at the cell's resolution): *textured* cells (above :data:`TEXTURED`) and *featureless*
ones (below :data:`FEATURELESS`: sky, flat walls, out-of-focus backgrounds, dark backgrounds,
microscope background).  Train holds textured and featureless cells; each planted test item is
made from one textured train cell by one of :data:`CROP_TRANSFORMS`; the clean test items are the
hard negatives: featureless cells (whose nearest train item is another featureless cell) and
textured cells of photos that have cells in train.  No test cell overlaps a train cell (a grid
cell belongs to one split), so a clean item shares no pixels with train; the ``zoom-out`` and
``rotate`` siblings take their surroundings from the photo, as a wider shot would.

Planted sources are textured: a crop of a featureless cell has nothing that tells it apart from
any other featureless cell, which is exactly what the featureless negatives test.

``photos=`` restricts a set to some photographs: ``"fit"`` or ``"heldout"``, the two disjoint halves
of :data:`PHOTO_SPLIT` (``imagefuse`` is fitted on one and evaluated on the other), or a list of names.
A seed alone does not hold anything out: every seed cuts the same photographs into the same cells.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from sibscan.items import Items

from benchmarks.planted import PlantedSet, _photo_arrays

__all__ = ["CROP_TRANSFORMS", "FEATURELESS", "PHOTO_SPLIT", "TEXTURED", "alignment_accuracy", "alignment_matches",
           "crops_set", "photo_cells", "photo_names", "small_set", "structure"]

#: how each planted sibling is made from its train cell
CROP_TRANSFORMS = ("crop", "zoom-out", "rotate", "colour", "crop-flip-jpeg")
#: cells with a structure score (grey levels) at or above this are textured ...
TEXTURED = 4.0
#: ... and below this featureless
FEATURELESS = 3.0
#: photos left out: ``cat`` is ``chelsea`` again; ``brick`` is periodic (any crop of it matches
#: every other brick cell, so a clean brick cell would be a true sibling); drawings and masks
_EXCLUDE = ("cat", "brick", "colorwheel", "logo", "logo2")
#: two disjoint halves of the photographs, chosen by hand so that each has textured and featureless
#: cells of several kinds (96-px cells textured / featureless: fit 133 / 52, heldout 138 / 45) and a
#: texture of each pair of look-alikes (gravel / grass, page / text); ``imagefuse`` is fitted on
#: ``fit``, evaluated on ``heldout``
PHOTO_SPLIT = {
    "fit": ("camera", "china", "flower", "cell", "gravel", "hubble_deep_field", "chelsea", "page", "coins"),
    "heldout": ("rocket", "retina", "clock", "moon", "grass", "immunohistochemistry", "astronaut", "coffee", "text"),
}


def photo_names(photos: Union[None, str, Sequence[str]]) -> Optional[Tuple[str, ...]]:
    """The photographs ``photos`` names: None (all), ``"fit"``/``"heldout"`` (:data:`PHOTO_SPLIT`),
    ``"all"``, or names."""
    if photos is None or photos == "all":
        return None
    if isinstance(photos, str):
        if photos not in PHOTO_SPLIT:
            raise ValueError(f"unknown photo half {photos!r}; available: all, {', '.join(PHOTO_SPLIT)}")
        return PHOTO_SPLIT[photos]
    return tuple(photos)


def _all_photos(photos: Union[None, str, Sequence[str]] = None) -> List[Tuple[str, np.ndarray]]:
    """(name, HxWx3 uint8) of every shipped photograph (or those ``photos`` names, see
    :func:`photo_names`), longest side at most 640 px."""
    from PIL import Image

    wanted = photo_names(photos)
    photos = [(n, a) for n, a in _photo_arrays() if n not in _EXCLUDE]
    try:
        from sklearn.datasets import load_sample_images

        sample = load_sample_images()
        photos += [(Path(f).stem, np.asarray(a)) for f, a in zip(sample.filenames, sample.images)]
    except ImportError:
        pass
    if wanted is not None:
        photos = [(n, a) for n, a in photos if n in wanted]
        if not photos:
            raise ValueError(f"none of the photos {', '.join(wanted)} is installed")
    out = []
    for name, a in photos:
        im = Image.fromarray(a)
        f = 640 / max(im.size)
        if f < 1:
            im = im.resize((round(im.size[0] * f), round(im.size[1] * f)), Image.LANCZOS)
        out.append((name, np.asarray(im)))
    return out


def structure(gray: np.ndarray, sigma: float = 2.0) -> float:
    """Structure of a grayscale region: std of ``gray - gaussian(gray, sigma)`` (grey levels)."""
    from scipy.ndimage import gaussian_filter

    g = np.asarray(gray, np.float64)
    return float((g - gaussian_filter(g, sigma)).std())


def _gray(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64) @ np.array([0.299, 0.587, 0.114])


def photo_cells(photos, cell: int):
    """Every grid cell of every photo: list of (photo index, y, x, structure)."""
    cells = []
    for p, (_, a) in enumerate(photos):
        g = _gray(a)
        h, w = g.shape
        for y in range(0, h - cell + 1, cell):
            for x in range(0, w - cell + 1, cell):
                cells.append((p, y, x, structure(g[y:y + cell, x:x + cell])))
    return cells


def _window(photo: np.ndarray, cy: float, cx: float, side: float):
    """The square of ``side`` px centred near (cy, cx), moved to lie inside the photo; or None."""
    h, w = photo.shape[:2]
    if side > min(h, w):
        return None
    y0 = min(max(cy - side / 2, 0), h - side)
    x0 = min(max(cx - side / 2, 0), w - side)
    return x0, y0, x0 + side, y0 + side


def _colour_shift(im, rng: np.random.Generator):
    """Gamma, hue rotation, saturation and brightness changed together (a re-graded photo)."""
    from PIL import Image

    a = np.asarray(im, np.float64) / 255.0
    a = a ** rng.choice([rng.uniform(0.6, 0.8), rng.uniform(1.25, 1.6)])
    hsv = np.asarray(Image.fromarray((a * 255).round().astype(np.uint8)).convert("HSV"), np.float64)
    hsv[..., 0] = (hsv[..., 0] + rng.uniform(20, 60) * rng.choice([-1, 1])) % 256
    hsv[..., 1] = np.clip(hsv[..., 1] * rng.uniform(0.5, 1.5), 0, 255)
    hsv[..., 2] = np.clip(hsv[..., 2] * rng.uniform(0.8, 1.2), 0, 255)
    return Image.fromarray(hsv.round().astype(np.uint8), "HSV").convert("RGB")


def _make_sibling(kind: str, photo: np.ndarray, y: int, x: int, cell: int, rng: np.random.Generator):
    """The planted copy of the cell at (y, x) under ``kind``: (PIL image of cell x cell px, suffix,
    save options, description of the transform)."""
    from PIL import Image

    im = Image.fromarray(photo)
    size = (cell, cell)
    if kind in ("crop", "crop-flip-jpeg", "colour"):
        f = rng.uniform(0.6, 0.9) if kind == "colour" else rng.uniform(0.5, 0.8)
        side = f * cell
        oy, ox = rng.uniform(0, cell - side, size=2)
        out = im.crop((x + ox, y + oy, x + ox + side, y + oy + side)).resize(size, Image.BICUBIC)
        if kind == "colour":
            return _colour_shift(out, rng), ".png", {}, f"crop {f:.2f}, colour"
        if kind == "crop-flip-jpeg":
            q = int(rng.integers(25, 51))
            return out.transpose(Image.FLIP_LEFT_RIGHT), ".jpg", {"quality": q}, f"crop {f:.2f}, flip, jpeg {q}"
        return out, ".png", {}, f"crop {f:.2f}"
    if kind == "zoom-out":
        # the train cell is the centre-ish f of a wider shot
        for f in (rng.uniform(0.5, 0.8), 0.85, 0.9):
            side = cell / f
            off = rng.uniform(0, side - cell, size=2)
            box = _window(photo, y - off[0] + side / 2, x - off[1] + side / 2, side)
            if box is not None and box[0] <= x and box[1] <= y and box[2] >= x + cell and box[3] >= y + cell:
                return im.crop(box).resize(size, Image.BICUBIC), ".png", {}, f"zoom out {f:.2f}"
        return None
    if kind == "rotate":
        angle = rng.uniform(3, 10) * rng.choice([-1, 1])
        f = rng.uniform(0.8, 0.95)
        # rotate a window twice the cell around the cell's centre, keep the central f of the cell
        box = _window(photo, y + cell / 2, x + cell / 2, 2 * cell)
        if box is None:
            return None
        wide = im.crop(box).rotate(angle, resample=Image.BICUBIC)
        cy, cx = y + cell / 2 - box[1], x + cell / 2 - box[0]
        half = f * cell / 2
        out = wide.crop((cx - half, cy - half, cx + half, cy + half)).resize(size, Image.BICUBIC)
        return out, ".png", {}, f"rotate {angle:+.1f} deg, crop {f:.2f}"
    raise ValueError(f"unknown transform {kind!r}; available: {', '.join(CROP_TRANSFORMS)}")


def _shrink(a: np.ndarray, factor: float) -> np.ndarray:
    from PIL import Image

    im = Image.fromarray(a)
    return np.asarray(im.resize((max(1, round(im.size[0] / factor)), max(1, round(im.size[1] / factor))), Image.BOX))


def crops_set(root: Path, *, n_train: int = 240, per_transform: int = 20, n_clean: int = 120, seed: int = 0,
              cell: int = 96, shrink_to: int = 0, name: str = "crops",
              photos: Union[None, str, Sequence[str]] = None) -> PlantedSet:
    """Heavy crops, zooms, rotations and colour shifts of photo cells; files written under ``root``.

    Parameters
    ----------
    root : Path
    n_train : int
        Train cells (about a fifth of them featureless, as far as the photos allow).
    per_transform : int
        Planted siblings per transform of :data:`CROP_TRANSFORMS`.
    n_clean : int
        Clean test cells: half featureless (as far as the photos allow), half textured.
    cell : int
        Grid cell side at the photos' resolution.
    shrink_to : int
        When > 0, photos are first shrunk so that a cell is ``shrink_to`` px (the 32-px case).
    photos : None, str or sequence of str
        Only these photographs (:func:`photo_names`: ``"fit"``, ``"heldout"`` or names); all by default.

    Returns
    -------
    PlantedSet
        ``hard`` marks every clean item (each is a featureless cell or a cell of a photo in train);
        ``notes["featureless"]`` says which clean items are featureless.
    """
    from PIL import Image

    rng = np.random.default_rng(seed)
    root = Path(root)
    photos = _all_photos(photos)
    if shrink_to:
        photos = [(n, _shrink(a, cell / shrink_to)) for n, a in photos]
        cell = shrink_to
    names = [n for n, _ in photos]
    cells = photo_cells(photos, cell)
    tex_cut, flat_cut = TEXTURED, FEATURELESS  # measured at the cell's own resolution
    textured = [c for c in cells if c[3] >= tex_cut]
    flat = [c for c in cells if c[3] < flat_cut]
    order_t, order_f = rng.permutation(len(textured)), rng.permutation(len(flat))
    n_flat_clean = min(n_clean // 2, len(flat) // 2)
    n_flat_train = min(max(1, n_train // 5), len(flat) - n_flat_clean)
    n_tex_clean = n_clean - n_flat_clean
    n_tex_train = min(n_train - n_flat_train, len(textured) - n_tex_clean)
    n_planted = per_transform * len(CROP_TRANSFORMS)
    if n_tex_train < n_planted or n_tex_clean < 1:
        raise ValueError(f"{len(textured)} textured cells cannot hold {n_tex_train} train + {n_tex_clean} clean "
                         f"with {n_planted} planted")
    tex = [textured[i] for i in order_t]
    fl = [flat[i] for i in order_f]
    train_cells = tex[:n_tex_train] + fl[:n_flat_train]
    clean_cells = tex[n_tex_train:n_tex_train + n_tex_clean] + fl[n_flat_train:n_flat_train + n_flat_clean]

    def crop(c):
        p, y, x, _ = c
        return photos[p][1][y:y + cell, x:x + cell]

    train_dir, test_dir = root / "train", root / "test"
    train_dir.mkdir(parents=True, exist_ok=True)
    test_dir.mkdir(parents=True, exist_ok=True)
    train_paths = []
    for j, c in enumerate(train_cells):
        path = train_dir / f"tr{j:05d}.png"
        Image.fromarray(crop(c)).save(path)
        train_paths.append(str(path))
    # planted: sources are distinct textured train cells; a transform that does not fit a cell
    # (a zoom-out at the photo's edge) takes the next unused source
    candidates = list(rng.permutation(n_tex_train))
    sources, kinds, details, test_paths = [], [], [], []
    for kind in CROP_TRANSFORMS:
        made = 0
        while made < per_transform:
            if not candidates:
                raise ValueError(f"ran out of source cells for {kind!r}")
            s = int(candidates.pop())
            p, y, x, _ = train_cells[s]
            out = _make_sibling(kind, photos[p][1], y, x, cell, rng)
            if out is None:
                continue
            im, suffix, opts, what = out
            path = test_dir / f"te{len(test_paths):05d}{suffix}"
            im.save(path, **opts)
            test_paths.append(str(path))
            sources.append(s), kinds.append(kind), details.append(what)
            made += 1
    for c in clean_cells:
        path = test_dir / f"te{len(test_paths):05d}.png"
        Image.fromarray(crop(c)).save(path)
        test_paths.append(str(path))
    n_clean_used = len(clean_cells)
    source = np.concatenate([np.asarray(sources, np.int64), np.full(n_clean_used, -1, np.int64)])
    transform = np.concatenate([np.asarray(kinds, dtype=object), np.full(n_clean_used, "", dtype=object)]).astype(str)
    label = lambda c: f"photo:{names[c[0]]}" if c[3] >= tex_cut else "featureless"  # noqa: E731
    train_labels = np.array([label(c) for c in train_cells])
    test_labels = np.concatenate([train_labels[np.asarray(sources)], [label(c) for c in clean_cells]])
    featureless = np.concatenate([np.zeros(len(sources), bool), [c[3] < flat_cut for c in clean_cells]])
    hard = (source < 0) & (featureless | np.isin(test_labels, train_labels))
    train = Items("train", "image", ids=[Path(p).stem for p in train_paths], labels=train_labels, paths=train_paths,
                  source=str(train_dir))
    test = Items("test", "image", ids=[Path(p).stem for p in test_paths], labels=test_labels, paths=test_paths,
                 source=str(test_dir))
    notes = {
        "photos": names, "cell_px": cell, "shrunk": bool(shrink_to),
        "train": {"textured": n_tex_train, "featureless": n_flat_train},
        "clean": {"textured": n_tex_clean, "featureless": n_flat_clean},
        "structure_cut": {"textured": tex_cut, "featureless": flat_cut},
        "featureless": featureless.tolist(),
        "transform_details": details,
        "hard_negatives": "featureless cells (sky, flat walls, blurred and dark backgrounds) and other cells of "
                          "the photos in train",
    }
    return PlantedSet(name, "image", train, test, source, transform, hard, notes)


def small_set(root: Path, *, n_train: int = 240, per_transform: int = 20, n_clean: int = 120, seed: int = 0,
              cell: int = 96, photos: Union[None, str, Sequence[str]] = None) -> PlantedSet:
    """:func:`crops_set` at 32 x 32 px: photos shrunk by ``cell / 32`` first (area filter)."""
    return crops_set(root, n_train=n_train, per_transform=per_transform, n_clean=n_clean, seed=seed, cell=cell,
                     shrink_to=32, name="small32", photos=photos)


def alignment_matches(kind: str, planted: str, found: str) -> bool:
    """Whether the transform a verifier reports for a planted pair (``found``, as
    :func:`sibscan.verify.imagematch.describe_match` writes it with splits test and train) is the one
    planted (``kind`` of :data:`CROP_TRANSFORMS` and its ``transform_details`` entry ``planted``): the
    same side inside the other (test inside train, but train inside test for a zoom-out), the scale
    within 0.1 of the planted share of the side, the mirror, and no rotation, or for ``rotate`` one
    that undoes the planted one (the opposite sign).
    """
    import re

    share = float(re.search(r"(?:crop|zoom out) ([0-9.]+)", planted).group(1))
    m = re.search(r"crop ([0-9.]+) \((\w+) inside", found)
    scale, inner = (float(m.group(1)), m.group(2)) if m else (1.0, "")
    if scale < 1.0 and inner != ("train" if kind == "zoom-out" else "test"):
        return False
    if abs(scale - share) > 0.1 + 1e-9 or ("flipped" in found) != (kind == "crop-flip-jpeg"):
        return False
    angle = re.search(r"rotated ([-+0-9.]+) deg", found)
    if kind != "rotate":
        return angle is None
    return angle is not None and float(angle.group(1)) * float(re.search(r"rotate ([-+0-9.]+)", planted).group(1)) < 0


def alignment_accuracy(ps: PlantedSet, verifier) -> dict:
    """Share of the planted pairs (test item, its source) for which ``verifier`` (one that reports the
    transform it found, as ``imagematch`` and ``imagefuse`` do) finds the planted transform, overall and
    per transform."""
    idx = np.flatnonzero(ps.planted)
    found = verifier.verify(ps.test, idx, ps.train, ps.source[idx]).details
    ok = np.array([alignment_matches(ps.transform[i], ps.notes["transform_details"][i], f) for i, f in zip(idx, found)])
    kinds = ps.transform[idx]
    return {"pairs": int(len(idx)), "accuracy": float(ok.mean()) if len(ok) else None,
            "per_transform": {k: float(ok[kinds == k].mean()) for k in CROP_TRANSFORMS if (kinds == k).any()}}
