"""Fit ``imagefuse``'s coefficients on planted crop sets of photographs the held-out evaluation does not use.

    python -m benchmarks.imagefuse_fit            # the 'fit' half of the photographs, seed 1

For the planted sets ``crops`` and ``small32`` (:mod:`benchmarks.planted_crops`) made with ``--seed``
from the ``--photos`` half of :data:`benchmarks.planted_crops.PHOTO_SPLIT` (``fit``; ``python -m
benchmarks.quality --sets crops,small32 --photos heldout`` evaluates on the other half: no cell, photo
or pair of the fit occurs there),
each test item's candidates are the union a scan verifies, wider (effnet's top ``--k``, the
``windows`` and ``pixels`` views' top ``--k``); ``imagematch``'s search scores every candidate pair
and :meth:`sibscan.verify.imagefuse.ImageFuseVerifier.pair_features` gives the model's inputs, measured
at the alignment the search prefers (:data:`sibscan.verify.imagefuse.SIZE_POWER`, ``ROTATION_COST``).
A pair is positive when the test item is planted and the train item its source.

imagefuse-v6 adds ``imagecorr``'s score as an input, and whole-image siblings to learn it from (the crop
sets' are heavy crops, rotations and re-grades): the set ``wholes`` (:func:`wholes_set`) cuts
scikit-learn's ``china.jpg`` and ``flower.jpg`` (both in the ``fit`` half) into 128-px tiles, as the
quality benchmark's ``images`` set cuts its photographs, and gives each tile ``--whole-transforms`` of
that set's transforms (:data:`benchmarks.planted.IMAGE_TRANSFORMS` but ``exact``); every sibling is
paired with every tile (the other tiles of the same photograph are the negatives).  The ``images``
set uses neither photograph (its photos are :data:`benchmarks.planted._PHOTOS`, matplotlib's samples
and digits), so no item or pair of its evaluation occurs in the fit.  A logistic
regression (scikit-learn, L2, ``C=1``: its default) is fitted on all pairs of both sets together;
the coefficients go into ``benchmarks/results/imagefuse_fit.json`` and, by hand, into
:data:`sibscan.verify.imagefuse.COEF` (``tests/test_imagefuse.py`` holds the two equal).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from benchmarks._common import write_results
from benchmarks.planted_crops import PHOTO_SPLIT, crops_set, small_set
from benchmarks.quality import SIZES, crop_size_key, top_k, union_candidates, view_candidates


#: the photographs :func:`wholes_set` cuts (scikit-learn's samples, in the 'fit' half; not in the images set)
WHOLE_PHOTOS = ("china", "flower")


def wholes_set(root: Path, *, per_tile: int, seed: int, tile: int = 128):
    """Whole-image siblings of 128-px tiles of :data:`WHOLE_PHOTOS`: (train Items, test Items, source of
    each test item (n_test,) int64).  Each tile gets ``per_tile`` distinct transforms of the ``images``
    set's (:func:`benchmarks.planted._image_transform`), drawn with ``seed``."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    from benchmarks.planted import IMAGE_TRANSFORMS, _image_transform, _tiles
    from sibscan.items import Items

    sample = load_sample_images()
    photos = [(Path(f).stem, np.asarray(a)) for f, a in zip(sample.filenames, sample.images)]
    tiles, _ = _tiles([(n, a) for n, a in photos if n in WHOLE_PHOTOS], tile)
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    train, test, source = [], [], []
    for j, a in enumerate(tiles):
        p = root / f"tr{j:04d}.png"
        Image.fromarray(a).save(p)
        train.append(str(p))
        for t in rng.choice([t for t in IMAGE_TRANSFORMS if t != "exact"], per_tile, replace=False):
            im, suffix, opts = _image_transform(str(t), a, rng)
            p = root / f"te{len(test):04d}{suffix}"
            im.save(p, **opts)
            test.append(str(p)), source.append(j)
    return (Items("train", "image", ids=[Path(p).stem for p in train], paths=train),
            Items("test", "image", ids=[Path(p).stem for p in test], paths=test), np.asarray(source, np.int64))


def wholes_features(root: Path, per_tile: int, seed: int):
    """(features, labels, description) of every (sibling, tile) pair of :func:`wholes_set`."""
    from sibscan.verify.imagefuse import ImageFuseVerifier

    train, test, source = wholes_set(root, per_tile=per_tile, seed=seed)
    qi, ni = np.repeat(np.arange(len(test)), len(train)), np.tile(np.arange(len(train)), len(test))
    x, _ = ImageFuseVerifier(progress=False).features(test, qi, train, ni)
    return x, source[qi] == ni, {"n_train": len(train), "n_test": len(test), "photos": list(WHOLE_PHOTOS)}


def set_features(ps, k: int):
    """(features (m, len(FEATURES)), labels (m,)) of the union candidates of one planted set."""
    from sibscan.encoders import get_encoder
    from sibscan.verify.imagefuse import ImageFuseVerifier

    emb = {n: tuple(get_encoder(n, device="cpu").encode(s.content) for s in (ps.train, ps.test))
           for n in ("effnet", "pixels")}
    found, _ = view_candidates(ps, emb, ("windows",), k)
    cand = union_candidates(*(found[n][:, :k] for n in ("effnet", "windows", "pixels")))
    rows = [list(dict.fromkeys(r.tolist())) for r in cand]
    qi = np.repeat(np.arange(len(rows)), [len(r) for r in rows])
    ni = np.array([j for r in rows for j in r], dtype=np.int64)
    x, _ = ImageFuseVerifier(progress=False).features(ps.test, qi, ps.train, ni)
    y = ps.planted[qi] & (ps.source[qi] == ni)
    return x, y


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.imagefuse_fit", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1, help="planted sets' seed (not 0: the quality benchmark's)")
    ap.add_argument("--photos", default="fit", choices=("all", *PHOTO_SPLIT),
                    help="photographs the sets are cut from (default: the 'fit' half; 'all' as imagefuse-v1 was)")
    ap.add_argument("--k", type=int, default=10, help="candidates of each view per test item")
    ap.add_argument("--whole-transforms", type=int, default=3,
                    help="whole-image transforms per tile of the 'wholes' set (0: none, as v4 was fitted)")
    ap.add_argument("--name", default="imagefuse_fit")
    args = ap.parse_args(argv)
    from sklearn.linear_model import LogisticRegression

    from sibscan.verify.imagefuse import FEATURES, ROTATION_COST, SIZE_POWER

    t0 = time.perf_counter()
    n_train, per, n_clean = SIZES["default"][crop_size_key(args.photos)]
    xs, ys, sets = [], [], {}
    with tempfile.TemporaryDirectory(prefix="sibscan-imagefuse-") as tmp:
        for name, make in (("crops", crops_set), ("small32", small_set)):
            ps = make(Path(tmp) / name, n_train=n_train, per_transform=per, n_clean=n_clean, seed=args.seed,
                      photos=args.photos)
            x, y = set_features(ps, args.k)
            xs.append(x), ys.append(y)
            sets[name] = {"pairs": int(len(y)), "positive": int(y.sum()), "n_train": len(ps.train),
                          "n_test": len(ps.test), "photos": ps.notes["photos"]}
            print(f"{name}: {len(y)} pairs, {int(y.sum())} positive", flush=True)
        if args.whole_transforms:
            x, y, notes = wholes_features(Path(tmp) / "wholes", args.whole_transforms, args.seed)
            xs.append(x), ys.append(y)
            sets["wholes"] = {"pairs": int(len(y)), "positive": int(y.sum()), **notes}
            print(f"wholes: {len(y)} pairs, {int(y.sum())} positive", flush=True)
    x, y = np.concatenate(xs), np.concatenate(ys)
    model = LogisticRegression(C=1.0, max_iter=5000).fit(x, y)
    coef, intercept = [float(c) for c in model.coef_[0]], float(model.intercept_[0])
    print("COEF = (" + ", ".join(f"{c:.4f}" for c in coef) + f")\nINTERCEPT = {intercept:.4f}")
    photos = sorted({p for s in sets.values() for p in s["photos"]})
    payload = {"seed": args.seed, "photo_half": args.photos, "photos": photos, "k": args.k,
               "whole_transforms": args.whole_transforms, "features": list(FEATURES),
               "coef": coef, "intercept": intercept,
               # the alignment the inputs were measured at: the search's ranking of variants (imagefuse-v4)
               "search": {"size_power": SIZE_POWER, "rotation_cost": ROTATION_COST},
               "sets": sets, "regularisation": "L2, C=1 (scikit-learn LogisticRegression default)",
               "seconds": time.perf_counter() - t0}
    path = write_results(args.name, payload)
    print(f"wrote {path} ({payload['seconds']:.0f} s)")
    return payload


if __name__ == "__main__":
    main()
