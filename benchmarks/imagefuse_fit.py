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
A pair is positive when the test item is planted and the train item its source.  A logistic
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
from benchmarks.quality import SIZES, crop_size_key, union_candidates, view_candidates


def set_features(ps, k: int):
    """(features (m, len(FEATURES)), labels (m,)) of the union candidates of one planted set."""
    from sibscan.encoders import get_encoder
    from sibscan.verify.imagefuse import ImageFuseVerifier

    class Features(ImageFuseVerifier):
        pair_scores = ImageFuseVerifier.pair_features  # the verifier returns the model's inputs

    emb = {n: tuple(get_encoder(n, device="cpu").encode(s.content) for s in (ps.train, ps.test))
           for n in ("effnet", "pixels")}
    found, _ = view_candidates(ps, emb, ("windows",), k)
    cand = union_candidates(*(found[n][:, :k] for n in ("effnet", "windows", "pixels")))
    rows = [list(dict.fromkeys(r.tolist())) for r in cand]
    qi = np.repeat(np.arange(len(rows)), [len(r) for r in rows])
    ni = np.array([j for r in rows for j in r], dtype=np.int64)
    x = np.asarray(Features(progress=False).verify(ps.test, qi, ps.train, ni).scores, np.float64)
    y = ps.planted[qi] & (ps.source[qi] == ni)
    return x, y


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.imagefuse_fit", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1, help="planted sets' seed (not 0: the quality benchmark's)")
    ap.add_argument("--photos", default="fit", choices=("all", *PHOTO_SPLIT),
                    help="photographs the sets are cut from (default: the 'fit' half; 'all' as imagefuse-v1 was)")
    ap.add_argument("--k", type=int, default=10, help="candidates of each view per test item")
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
    x, y = np.concatenate(xs), np.concatenate(ys)
    model = LogisticRegression(C=1.0, max_iter=5000).fit(x, y)
    coef, intercept = [float(c) for c in model.coef_[0]], float(model.intercept_[0])
    print("COEF = (" + ", ".join(f"{c:.4f}" for c in coef) + f")\nINTERCEPT = {intercept:.4f}")
    photos = sorted({p for s in sets.values() for p in s["photos"]})
    payload = {"seed": args.seed, "photo_half": args.photos, "photos": photos, "k": args.k, "features": list(FEATURES),
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
