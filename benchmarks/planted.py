"""Planted-sibling datasets made from real items that ship inside installed packages (no downloads).

Each builder returns a :class:`PlantedSet`: a train split, a test split in which some items are
siblings of train items made by a real transform (JPEG re-encoding, a crop, truncation, 10–25 % of
words swapped, a shifted window, …) and the rest are *clean* — real items that are not in train,
most of them hard negatives that share a class, a photo or a template with train items.

* images — tiles of scikit-image's sample photographs and matplotlib's sample images, and
  scikit-learn's 1,797 handwritten digits upscaled to 64 x 64 (files written under ``root``);
* text — paragraphs of Python's own documentation (``pydoc_data.topics``) and numpydoc docstrings
  of numpy / scipy / scikit-learn functions (they share the "Parameters ----------" boilerplate);
* rows — the UCR time series that aeon ships (ItalyPowerDemand, GunPoint, ArrowHead, OSULeaf) when
  aeon is installed, and the digits as 64-value rows.

The truth is ``source[i]``: the train row test item ``i`` was planted from (-1 for clean items),
with ``transform[i]`` naming the transform.  :func:`difficulty` measures whether the negatives are
hard (the best negative similarity must exceed the random-pair median, see :func:`check_difficulty`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from sibscan.items import Items

__all__ = [
    "PlantedSet", "IMAGE_TRANSFORMS", "TEXT_TRANSFORMS", "ROW_TRANSFORMS", "image_set", "text_set", "row_sets",
    "difficulty", "check_difficulty", "dedupe_pool", "aeon_datasets",
]

IMAGE_TRANSFORMS = ("exact", "thumbnail", "jpeg", "crop", "shift", "brightness", "grayscale", "flip", "caption")
TEXT_TRANSFORMS = ("exact", "format", "truncate", "sentence", "words", "template")
ROW_TRANSFORMS = ("exact", "noise-below-rounding", "noise-above-rounding", "rescale", "shift")


@dataclass
class PlantedSet:
    """A train split, a test split and the planted truth.

    Attributes
    ----------
    name : str
    modality : str
    train, test : Items
    source : ndarray of shape (n_test,), int64
        Train row each test item was made from; -1 for clean test items.
    transform : ndarray of shape (n_test,), str
        The transform that made the sibling ("" for clean items).
    hard : ndarray of shape (n_test,), bool
        Clean items that share a class, photo or template with some train item.
    notes : dict
        Where the items came from and the sizes.
    """

    name: str
    modality: str
    train: Items
    test: Items
    source: np.ndarray
    transform: np.ndarray
    hard: np.ndarray
    notes: Dict[str, object] = field(default_factory=dict)

    @property
    def planted(self) -> np.ndarray:
        return self.source >= 0

    def content_bytes(self, split: str) -> List[bytes]:
        """The raw content of each item (file bytes, UTF-8 text, float64 row bytes), for exact hashing."""
        items = self.train if split == "train" else self.test
        if self.modality == "image":
            return [Path(p).read_bytes() for p in items.paths]
        if self.modality == "text":
            return [t.encode("utf-8") for t in items.texts]
        return [np.ascontiguousarray(r).tobytes() for r in items.values]


# ------------------------------------------------------------------------------------------------
# shared helpers
# ------------------------------------------------------------------------------------------------
def dedupe_pool(emb: np.ndarray, threshold: float) -> np.ndarray:
    """Indices of a pool with near-copies removed: an item is dropped when its cosine similarity to
    an earlier kept item is at or above ``threshold`` (real collections carry their own duplicates;
    left in, they would be unplanted siblings counted as false positives).

    Parameters
    ----------
    emb : ndarray of shape (n, dim), L2-normalised rows
    threshold : float

    Returns
    -------
    ndarray of shape (m,), int64, sorted
    """
    emb = np.asarray(emb, np.float32)
    sims = emb @ emb.T
    np.fill_diagonal(sims, -np.inf)
    close = np.triu(sims >= threshold, k=1)  # close[i, j]: j (later) is a near-copy of i
    drop = np.zeros(len(emb), bool)
    for i in np.flatnonzero(close.any(axis=1)):  # only the rows that have near-copies at all
        if not drop[i]:
            drop |= close[i]
    return np.flatnonzero(~drop)


def _split_pool(n_pool: int, n_train: int, n_planted: int, n_clean: int, rng: np.random.Generator):
    """Shuffle a pool into train rows, planted sources (distinct train rows) and clean test rows."""
    n_train = min(n_train, n_pool - n_clean)
    if n_train < n_planted or n_train < 2:
        raise ValueError(f"pool of {n_pool} items is too small for {n_train} "
                         f"train, {n_planted} planted, {n_clean} clean")
    order = rng.permutation(n_pool)
    train_rows = order[:n_train]
    clean_rows = order[n_train:n_train + n_clean]
    sources = rng.choice(n_train, size=n_planted, replace=False)
    return train_rows, clean_rows, sources


def _truth(n_per: int, transforms: Sequence[str], sources: np.ndarray, n_clean: int):
    names = np.repeat(np.asarray(transforms, dtype=object), n_per)
    source = np.concatenate([sources, np.full(n_clean, -1)]).astype(np.int64)
    transform = np.concatenate([names, np.full(n_clean, "", dtype=object)]).astype(str)
    return source, transform


# ------------------------------------------------------------------------------------------------
# images
# ------------------------------------------------------------------------------------------------
_PHOTOS = ("astronaut", "chelsea", "coffee", "camera", "rocket", "cat", "hubble_deep_field", "immunohistochemistry",
           "retina", "brick", "grass", "gravel", "coins", "clock", "moon", "page", "text", "cell", "colorwheel", "logo")
_MPL_IMAGES = ("grace_hopper.jpg", "Minduka_Present_Blue_Pack.png", "logo2.png")


def _photo_arrays() -> List[Tuple[str, np.ndarray]]:
    """(name, HxWx3 uint8) of every sample photograph that loads offline."""
    import skimage.data

    out = []
    for name in _PHOTOS:
        try:
            a = np.asarray(getattr(skimage.data, name)())
        except Exception:  # noqa: BLE001 - a sample that needs a download (or is missing) is skipped
            continue
        out.append((name, a))
    try:
        import matplotlib
        from PIL import Image

        folder = Path(matplotlib.get_data_path()) / "sample_data"
        for fname in _MPL_IMAGES:
            if (folder / fname).exists():
                with Image.open(folder / fname) as im:
                    out.append((Path(fname).stem, np.asarray(im.convert("RGB"))))
    except ImportError:
        pass
    rgb = []
    for name, a in out:
        if a.dtype == bool:
            a = a.astype(np.uint8) * 255
        if a.ndim == 2:
            a = np.repeat(a[:, :, None], 3, axis=2)
        rgb.append((name, np.ascontiguousarray(a[:, :, :3]).astype(np.uint8)))
    return rgb


def _tiles(photos: List[Tuple[str, np.ndarray]], tile: int) -> Tuple[List[np.ndarray], List[str]]:
    """Non-overlapping ``tile`` x ``tile`` crops of each photo, keeping those with texture (std > 12)."""
    arrays, groups = [], []
    for name, a in photos:
        h, w = a.shape[:2]
        if min(h, w) < tile:
            continue
        for y in range(0, h - tile + 1, tile):
            for x in range(0, w - tile + 1, tile):
                t = a[y:y + tile, x:x + tile]
                if t.std() > 12:
                    arrays.append(t)
                    groups.append(f"photo:{name}")
    return arrays, groups


def _digit_images(size: int = 64) -> Tuple[List[np.ndarray], List[str]]:
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    imgs = (d.images / 16.0 * 255).clip(0, 255).astype(np.uint8)
    arrays = []
    for a in imgs:
        big = np.asarray(Image.fromarray(255 - a).resize((size, size), Image.BILINEAR))
        arrays.append(np.repeat(big[:, :, None], 3, axis=2))
    return arrays, [f"digit:{t}" for t in d.target]


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one bitmap size
        return ImageFont.load_default()


def _image_transform(name: str, a: np.ndarray, rng: np.random.Generator):
    """Apply transform ``name`` to HxWx3 uint8 ``a``; return (PIL image, file suffix, save options)."""
    from PIL import Image, ImageDraw, ImageEnhance

    im = Image.fromarray(a)
    h, w = a.shape[:2]
    if name == "exact":
        return im, ".png", {}
    if name == "thumbnail":
        f = rng.uniform(0.4, 0.7)
        return im.resize((max(8, round(w * f)), max(8, round(h * f))), Image.LANCZOS), ".png", {}
    if name == "jpeg":
        return im, ".jpg", {"quality": int(rng.integers(15, 31))}
    if name == "crop":
        f = rng.uniform(0.03, 0.08, size=4)  # of each side
        box = (round(w * f[0]), round(h * f[1]), w - round(w * f[2]), h - round(h * f[3]))
        return im.crop(box), ".png", {}
    if name == "shift":
        dy, dx = (rng.integers(2, 6, size=2) * rng.choice([-1, 1], size=2) * max(h, w) / 100).round().astype(int)
        dy, dx = int(dy) or 1, int(dx) or 1
        p = max(abs(dy), abs(dx))
        padded = np.pad(a, ((p, p), (p, p), (0, 0)), mode="edge")
        return Image.fromarray(padded[p - dy:p - dy + h, p - dx:p - dx + w]), ".png", {}
    if name == "brightness":
        im = ImageEnhance.Brightness(im).enhance(rng.choice([rng.uniform(0.6, 0.85), rng.uniform(1.15, 1.4)]))
        return ImageEnhance.Contrast(im).enhance(rng.uniform(0.7, 1.3)), ".png", {}
    if name == "grayscale":
        # saved as a one-channel file: of an already gray picture this is a pixel-exact copy in other bytes
        return im.convert("L"), ".png", {}
    if name == "flip":
        return im.transpose(Image.FLIP_LEFT_RIGHT), ".png", {}
    if name == "caption":
        im = im.copy()
        draw = ImageDraw.Draw(im, "RGBA")
        bar = max(6, h // 9)
        draw.rectangle((0, h - bar, w, h), fill=(0, 0, 0, 200))
        font = _font(max(6, bar - 2))
        draw.text((2, h - bar), f"IMG_{int(rng.integers(1000, 9999))} (c) stock", fill=(255, 255, 255, 255), font=font)
        draw.text((w // 4, h // 3), "SAMPLE", fill=(255, 255, 255, 110), font=_font(max(8, h // 6)))
        return im, ".png", {}
    raise ValueError(f"unknown image transform {name!r}; available: {', '.join(IMAGE_TRANSFORMS)}")


def image_set(root: Path, *, n_train: int = 600, per_transform: int = 20, n_clean: int = 200, seed: int = 0,
              tile: int = 128) -> PlantedSet:
    """Photos tiles + digits; siblings by :data:`IMAGE_TRANSFORMS`; files written under ``root``.

    About half of the items used are photo tiles and half digits (as far as the pool allows), so
    that both hard-negative kinds — same-class digits, tiles of the same photo — are in.
    """
    from PIL import Image

    from sibscan.encoders import get_encoder

    rng = np.random.default_rng(seed)
    root = Path(root)
    tiles, tile_groups = _tiles(_photo_arrays(), tile)
    digits, digit_groups = _digit_images()
    # no more tiles or digits than the split needs (with room for the dedupe): small sets stay fast
    pick = np.sort(rng.permutation(len(tiles))[: n_train + n_clean])
    tiles, tile_groups = [tiles[i] for i in pick], [tile_groups[i] for i in pick]
    pick = np.sort(rng.permutation(len(digits))[: 2 * (n_train + n_clean)])
    digits, digit_groups = [digits[i] for i in pick], [digit_groups[i] for i in pick]
    arrays = tiles + digits
    groups = np.asarray(tile_groups + digit_groups)
    # the pool is written once so that the dedupe (and later the encoders) read real files
    pool_dir = root / "pool"
    pool_dir.mkdir(parents=True, exist_ok=True)
    pool_paths = []
    for i, a in enumerate(arrays):
        p = pool_dir / f"p{i:05d}.png"
        if not p.exists():
            Image.fromarray(a).save(p)
        pool_paths.append(str(p))
    keep = dedupe_pool(get_encoder("pixels", device="cpu").encode(pool_paths), 0.985)
    n_tiles = int(np.searchsorted(keep, len(tiles)))
    # balance: as many tiles as digits in train/test where the pool allows
    n_planted = per_transform * len(IMAGE_TRANSFORMS)
    tile_rows, digit_rows = keep[:n_tiles], keep[n_tiles:]
    n_tile_use = min(len(tile_rows), (n_train + n_clean) // 2)
    use = np.concatenate([rng.permutation(tile_rows)[:n_tile_use],
                          rng.permutation(digit_rows)[:n_train + n_clean - n_tile_use]])
    train_rows, clean_rows, sources = _split_pool(len(use), n_train, n_planted, n_clean, rng)
    train_rows, clean_rows = use[train_rows], use[clean_rows]

    train_dir, test_dir = root / "train", root / "test"
    train_dir.mkdir(parents=True, exist_ok=True)
    test_dir.mkdir(parents=True, exist_ok=True)
    train_paths = []
    for j, r in enumerate(train_rows):
        p = train_dir / f"tr{j:05d}.png"
        Image.fromarray(arrays[r]).save(p)
        train_paths.append(str(p))
    test_paths, transforms = [], np.repeat(np.asarray(IMAGE_TRANSFORMS), per_transform)
    for j, (s, t) in enumerate(zip(sources, transforms)):
        if t == "exact":
            p = test_dir / f"te{j:05d}.png"
            p.write_bytes(Path(train_paths[s]).read_bytes())
        else:
            im, suffix, opts = _image_transform(t, arrays[train_rows[s]], rng)
            p = test_dir / f"te{j:05d}{suffix}"
            im.save(p, **opts)
        test_paths.append(str(p))
    for j, r in enumerate(clean_rows, start=len(sources)):
        p = test_dir / f"te{j:05d}.png"
        Image.fromarray(arrays[r]).save(p)
        test_paths.append(str(p))
    source, transform = _truth(per_transform, IMAGE_TRANSFORMS, sources, len(clean_rows))
    train_groups, test_groups = groups[train_rows], np.concatenate([groups[train_rows[sources]], groups[clean_rows]])
    hard = (source < 0) & np.isin(test_groups, train_groups)
    train = Items("train", "image", ids=[Path(p).stem for p in train_paths], labels=train_groups, paths=train_paths,
                  source=str(train_dir))
    test = Items("test", "image", ids=[Path(p).stem for p in test_paths], labels=test_groups, paths=test_paths,
                 source=str(test_dir))
    notes = {"pool": {"photo_tiles": len(tiles), "digits": len(digits), "after_dedupe": int(len(keep))},
             "train_photo_tiles": int(sum(g.startswith("photo") for g in train_groups)),
             "hard_negatives": "digits of the same class; tiles of the same photograph"}
    return PlantedSet("images", "image", train, test, source, transform, hard, notes)


# ------------------------------------------------------------------------------------------------
# text
# ------------------------------------------------------------------------------------------------
_DOC_MODULES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.ma", "scipy.stats", "scipy.signal", "scipy.linalg",
                "scipy.ndimage", "scipy.special", "scipy.optimize", "scipy.interpolate", "scipy.spatial.distance",
                "sklearn.metrics", "sklearn.preprocessing", "sklearn.utils", "sklearn.cluster", "sklearn.linear_model",
                "sklearn.decomposition", "sklearn.model_selection", "skimage.filters", "skimage.transform")
_WORD = re.compile(r"\S+")
_SENT = re.compile(r"(?<=[.!?])\s+")


def _pydoc_paragraphs(min_words: int, max_words: int) -> Tuple[List[str], List[str]]:
    from pydoc_data.topics import topics

    texts, groups = [], []
    for name in sorted(topics):
        for para in re.split(r"\n\s*\n", topics[name]):
            para = para.strip()
            n = len(para.split())
            if min_words <= n <= max_words and not para.startswith((">>>", "   ")):
                texts.append(para)
                groups.append(f"pydoc:{name}")
    return texts, groups


def _docstrings(min_words: int, max_words: int) -> Tuple[List[str], List[str]]:
    import importlib
    import inspect
    import warnings

    texts, groups = [], []
    for mod_name in _DOC_MODULES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        for name in sorted(vars(mod)):
            obj = getattr(mod, name, None)
            if name.startswith("_") or not callable(obj):
                continue
            doc = inspect.getdoc(obj) or ""
            if "Parameters\n----------" not in doc:
                continue
            n = len(doc.split())
            if min_words <= n <= max_words:
                texts.append(doc)
                groups.append(f"docstring:{mod_name}")
    return texts, groups


def _sentences(text: str) -> List[str]:
    return [s for s in _SENT.split(text) if s]


def _text_transform(name: str, text: str, rng: np.random.Generator, vocab: np.ndarray, other: str) -> str:
    words = text.split()
    if name == "exact":
        return text
    if name == "format":
        out = text
        ops = rng.choice(["space", "case", "punct"], size=2, replace=False)
        if "space" in ops:
            out = " ".join(out.split()) if rng.random() < 0.5 else re.sub(r" ", lambda m: "  " if rng.random() < 0.2 else " ", out)
        if "case" in ops:
            out = out.lower() if rng.random() < 0.7 else out.upper()
        if "punct" in ops:
            out = re.sub(r"[,;:]", "", out).replace(". ", "; ")
        return out if out != text else text + " "
    if name == "truncate":
        keep = max(5, int(len(words) * rng.uniform(0.6, 0.85)))
        return " ".join(words[:keep])
    if name == "sentence":
        sents = _sentences(text)
        if rng.random() < 0.5 and len(sents) > 2:
            drop = int(rng.integers(0, len(sents)))
            return " ".join(s for i, s in enumerate(sents) if i != drop)
        extra = _sentences(other)
        add = extra[int(rng.integers(0, len(extra)))] if extra else other
        pos = int(rng.integers(0, len(sents) + 1))
        return " ".join(sents[:pos] + [add] + sents[pos:])
    if name == "words":
        words = list(words)
        n = max(1, int(round(len(words) * rng.uniform(0.10, 0.25))))
        where = rng.choice(len(words), size=min(n, len(words)), replace=False)
        half = len(where) // 2
        # half replaced by words of other documents, half shuffled among themselves
        for i in where[:half]:
            words[i] = str(vocab[int(rng.integers(0, len(vocab)))])
        moved = where[half:]
        if len(moved) > 1:
            perm = rng.permutation(moved)
            vals = [words[i] for i in perm]
            for i, v in zip(moved, vals):
                words[i] = v
        return " ".join(words)
    if name == "template":
        # the same text filled with another value: every occurrence of one content word (an
        # identifier, a name, a number) replaced by another one
        cands = [w for w in set(re.findall(r"\b[A-Za-z_][A-Za-z_0-9]{3,}\b|\b\d+\b", text))]
        if not cands:
            return text + " (v2)"
        counts = {w: len(re.findall(rf"\b{re.escape(w)}\b", text)) for w in cands}
        top = sorted(cands, key=lambda w: (-counts[w], w))[: max(1, min(5, len(cands)))]
        target = top[int(rng.integers(0, len(top)))]
        words_only = [w for w in vocab if w.isalpha() and w != target] or ["value"]
        repl = str(int(target) + int(rng.integers(1, 50))) if target.isdigit() else \
            str(words_only[int(rng.integers(0, len(words_only)))])
        return re.sub(rf"\b{re.escape(target)}\b", lambda m: repl, text)
    raise ValueError(f"unknown text transform {name!r}; available: {', '.join(TEXT_TRANSFORMS)}")


def text_set(*, n_train: int = 800, per_transform: int = 25, n_clean: int = 250, seed: int = 0,
             min_words: int = 25, max_words: int = 220) -> PlantedSet:
    """pydoc paragraphs + numpydoc docstrings; siblings by :data:`TEXT_TRANSFORMS`."""
    from sibscan.encoders import get_encoder

    rng = np.random.default_rng(seed)
    p_texts, p_groups = _pydoc_paragraphs(min_words, max_words)
    d_texts, d_groups = _docstrings(min_words, max_words)
    texts = p_texts + d_texts
    groups = np.asarray(p_groups + d_groups)
    keep = dedupe_pool(get_encoder("ngram", device="cpu").encode(texts), 0.8)
    texts = [texts[i] for i in keep]
    groups = groups[keep]
    n_planted = per_transform * len(TEXT_TRANSFORMS)
    train_rows, clean_rows, sources = _split_pool(len(texts), n_train, n_planted, n_clean, rng)
    vocab = np.unique(np.asarray(" ".join(texts[i] for i in clean_rows[:50]).split() or ["word"]))
    train_texts = [texts[i] for i in train_rows]
    transforms = np.repeat(np.asarray(TEXT_TRANSFORMS), per_transform)
    test_texts = []
    for s, t in zip(sources, transforms):
        other = texts[int(clean_rows[int(rng.integers(0, len(clean_rows)))])] if len(clean_rows) else train_texts[0]
        test_texts.append(_text_transform(str(t), train_texts[s], rng, vocab, other))
    test_texts += [texts[i] for i in clean_rows]
    source, transform = _truth(per_transform, TEXT_TRANSFORMS, sources, len(clean_rows))
    train_groups = groups[train_rows]
    test_groups = np.concatenate([train_groups[sources], groups[clean_rows]])
    family = lambda g: np.char.partition(g.astype(str), ":")[:, 0]  # noqa: E731 - pydoc / docstring
    hard = (source < 0) & np.isin(test_groups, train_groups)
    train = Items("train", "text", ids=[f"tr{i:05d}" for i in range(len(train_texts))], labels=family(train_groups),
                  groups=train_groups, texts=train_texts, source="planted-text")
    test = Items("test", "text", ids=[f"te{i:05d}" for i in range(len(test_texts))], labels=family(test_groups),
                 groups=test_groups, texts=test_texts, source="planted-text")
    notes = {"pool": {"pydoc_paragraphs": len(p_texts), "docstrings": len(d_texts), "after_dedupe": int(len(keep))},
             "hard_negatives": "paragraphs of the same pydoc topic; numpydoc docstrings of the same module "
                               "(shared 'Parameters ----------' boilerplate)"}
    return PlantedSet("text", "text", train, test, source, transform, hard, notes)


# ------------------------------------------------------------------------------------------------
# rows (tables and time series)
# ------------------------------------------------------------------------------------------------
AEON_DATASETS = ("ItalyPowerDemand", "GunPoint", "ArrowHead", "OSULeaf")


def aeon_datasets() -> Dict[str, Tuple[Path, Path]]:
    """UCR datasets shipped inside the installed aeon package: name -> (train .ts, test .ts).

    aeon is not imported (only its data files are read), so its own dependencies need not load.
    """
    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        return {}
    base = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"
    out = {}
    for name in AEON_DATASETS:
        tr, te = base / name / f"{name}_TRAIN.ts", base / name / f"{name}_TEST.ts"
        if tr.exists() and te.exists():
            out[name] = (tr, te)
    return out


def _row_pools(datasets: Optional[Sequence[str]]) -> List[Tuple[str, np.ndarray, np.ndarray]]:
    from sibscan.loaders.ts_format import load_ts

    pools = []
    for name, (tr, te) in aeon_datasets().items():
        if datasets is not None and name not in datasets:
            continue
        a, b = load_ts(tr, "train"), load_ts(te, "test")
        values = np.concatenate([a.values, b.values])
        labels = np.concatenate([a.labels, b.labels]) if a.labels is not None else np.zeros(len(values), str)
        pools.append((f"ucr:{name}", values, labels))
    if datasets is None or "digits" in datasets:
        from sklearn.datasets import load_digits

        d = load_digits()
        pools.append(("digits-rows", d.data.astype(np.float64), d.target.astype(str)))
    return pools


def _row_transform(name: str, x: np.ndarray, rng: np.random.Generator, decimals: int = 6) -> np.ndarray:
    if name == "exact":
        return x.copy()
    if name == "noise-below-rounding":
        # far below the 10**-decimals rounding of the exact fingerprint
        return x + rng.uniform(-1, 1, size=x.shape) * 10.0 ** (-decimals - 3)
    if name == "noise-above-rounding":
        return x + rng.normal(size=x.shape) * 0.03 * (np.nanstd(x) or 1.0)
    if name == "rescale":
        return x * rng.uniform(0.5, 2.0) + rng.uniform(-1.0, 1.0) * (np.nanstd(x) or 1.0)
    if name == "shift":
        s = max(1, int(round(len(x) * rng.uniform(0.02, 0.05)))) * int(rng.choice([-1, 1]))
        out = np.roll(x, s)
        # the window moved: the samples that entered repeat the edge instead of wrapping around
        if s > 0:
            out[:s] = x[0]
        else:
            out[s:] = x[-1]
        return out
    raise ValueError(f"unknown row transform {name!r}; available: {', '.join(ROW_TRANSFORMS)}")


def row_sets(*, n_train: int = 600, per_transform: int = 20, n_clean: int = 200, seed: int = 0,
             datasets: Optional[Sequence[str]] = None) -> List[PlantedSet]:
    """One planted set per row dataset (the aeon-shipped UCR series present, and digits rows).

    Sizes shrink to what each pool allows (at most a quarter of the pool becomes clean test items).
    """
    from sibscan.encoders import get_encoder

    out = []
    for name, values, labels in _row_pools(datasets):
        rng = np.random.default_rng([seed, int(hashlib.md5(name.encode()).hexdigest()[:6], 16)])
        keep = dedupe_pool(get_encoder("znorm", device="cpu").encode(values), 0.995)
        values, labels = values[keep], labels[keep]
        n = len(values)
        nc = min(n_clean, n // 4)
        nt = min(n_train, n - nc)
        per = max(1, min(per_transform, nt // (2 * len(ROW_TRANSFORMS))))
        train_rows, clean_rows, sources = _split_pool(n, nt, per * len(ROW_TRANSFORMS), nc, rng)
        tv = values[train_rows]
        transforms = np.repeat(np.asarray(ROW_TRANSFORMS), per)
        planted = np.stack([_row_transform(str(t), tv[s], rng) for s, t in zip(sources, transforms)])
        test_values = np.concatenate([planted, values[clean_rows]])
        source, transform = _truth(per, ROW_TRANSFORMS, sources, len(clean_rows))
        test_labels = np.concatenate([labels[train_rows][sources], labels[clean_rows]])
        hard = (source < 0) & np.isin(test_labels, labels[train_rows])
        train = Items("train", "table", ids=[f"tr{i:05d}" for i in range(len(tv))], labels=labels[train_rows],
                      values=tv, source=name)
        test = Items("test", "table", ids=[f"te{i:05d}" for i in range(len(test_values))], labels=test_labels,
                     values=test_values, source=name)
        notes = {"pool": int(n), "length": int(values.shape[1]), "hard_negatives": "series of the same class"}
        out.append(PlantedSet(f"rows:{name}", "table", train, test, source, transform, hard, notes))
    return out


# ------------------------------------------------------------------------------------------------
# difficulty
# ------------------------------------------------------------------------------------------------
def difficulty(ps: PlantedSet, train_emb: np.ndarray, test_emb: np.ndarray, *, n_pairs: int = 20000,
               seed: int = 0) -> Dict[str, float]:
    """How hard the clean test items are under an encoder.

    Parameters
    ----------
    ps : PlantedSet
    train_emb : ndarray of shape (n_train, dim), L2-normalised
    test_emb : ndarray of shape (n_test, dim), L2-normalised

    Returns
    -------
    dict
        ``best_negative`` (the highest nearest-neighbour similarity of a clean test item),
        ``negative_nn_median``, ``random_median`` and ``random_q99`` (random test-train pairs),
        ``share_negatives_above_random_q99``.
    """
    rng = np.random.default_rng(seed)
    clean = ~ps.planted
    nn = (test_emb[clean] @ train_emb.T).max(axis=1)
    ti = rng.integers(0, len(test_emb), n_pairs)
    tj = rng.integers(0, len(train_emb), n_pairs)
    rand = np.einsum("ij,ij->i", test_emb[ti], train_emb[tj])
    q99 = float(np.quantile(rand, 0.99))
    return {
        "best_negative": float(nn.max()),
        "negative_nn_median": float(np.median(nn)),
        "random_median": float(np.median(rand)),
        "random_q99": q99,
        "share_negatives_above_random_q99": float((nn > q99).mean()),
    }


def check_difficulty(stats: Dict[str, float], name: str) -> None:
    """Raise ``AssertionError`` when the negatives are trivially different (best negative at or
    below the random-pair median): such a benchmark measures nothing."""
    if not stats["best_negative"] > stats["random_median"]:
        raise AssertionError(
            f"{name}: the best negative similarity {stats['best_negative']:.4f} is not above the random-pair "
            f"median {stats['random_median']:.4f}; the negatives are trivially different"
        )
