"""Detection quality of the image encoder per input size, on planted siblings at two image scales.

    python -m benchmarks.image_scale            # both sets, every size (~15 min on 2 idle cores)
    python -m benchmarks.image_scale --quick    # tiny, for the tests

Sets (planted siblings of real items, hard negatives in, as in :mod:`benchmarks.quality`):

* ``images`` — :func:`benchmarks.planted.image_set`: 128-px photo tiles and 64-px digits, the set
  on which the previous default (effnet at 224 px) reached recall 0.817 at precision >= 0.95 with
  ``imagecorr-v1`` verification (``benchmarks/results/quality.json`` of 2026-11-29, commit 754287b);
* ``images-32px`` — :func:`small_image_set`: everything 32 x 32 px and stored as JPEG, like CIFAR:
  scikit-learn's 8 x 8 digits upscaled to 32 px and 128-px photo tiles downsampled to 32 px, the
  siblings made by :data:`benchmarks.planted.IMAGE_TRANSFORMS` at that scale.

For each set, effnet embeds train and test at every size of :data:`SIZES`, at the size the scan
chooses from the data (``auto``, :func:`sibscan.encoders.scale.image_size_for`), and as the
encoder did before it scaled (``previous``: timm's eval transform — short side to 256, centre crop
224 — in PyTorch eager).  Each is scored as :func:`benchmarks.quality.evaluate` does it: recall at
precision >= 0.95 (the oracle's cutoff) and ROC AUC, from the embedding alone and with the top-5
candidates re-scored by the ``imagecorr`` verifier; with the seconds spent embedding and
verifying.  At the ``auto`` size it also scores what the default scan does (:func:`scan_defaults`,
read from :mod:`sibscan.options` and :mod:`sibscan.stages.views`, so the row follows the defaults): the
encoder's top ``--k`` joined with each default extra view's top ``--k-view``, verified by the
default verifier (results key ``scan``; ``--no-scan-row`` leaves it out), with the seconds the views
and that verification took.  Results: ``benchmarks/results/image_scale.json``, one run per sets, sizes
and modes under ``runs`` (key ``--key``, default e.g. ``images-32px+images_auto_previous``), each run
replacing only its own key (:func:`benchmarks._common.write_run`).
"""
from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np

from benchmarks._common import finite, keyed_runs, print_table, write_run
from benchmarks.planted import IMAGE_TRANSFORMS, PlantedSet, _image_transform, _truth, dedupe_pool, image_set
from benchmarks.quality import VERIFIERS, PairScores, evaluate, union_candidates, view_candidates

SIZES = (32, 48, 64, 96, 128, 224)
QUICK_SIZES = (32, 64)
#: sample photographs of scikit-image that load offline
PHOTOS = ("astronaut", "chelsea", "coffee", "camera", "rocket", "cat", "immunohistochemistry", "retina", "brick",
          "grass", "gravel", "coins", "clock", "moon", "page", "text", "cell", "colorwheel", "logo")
SET_SIZES = {"quick": (40, 2, 20), "default": (600, 20, 200)}


# ------------------------------------------------------------------------------------------------
# the 32-px set
# ------------------------------------------------------------------------------------------------
def _small_pool(size: int, tile: int = 128):
    """(arrays, groups): photo tiles downsampled to ``size`` and digits upscaled to ``size``, uint8 RGB."""
    import skimage.data
    from PIL import Image
    from sklearn.datasets import load_digits

    arrays, groups = [], []
    for name in PHOTOS:
        try:
            a = np.asarray(getattr(skimage.data, name)())
        except Exception:  # noqa: BLE001 - a sample that needs a download is skipped
            continue
        if a.dtype == bool:
            a = a.astype(np.uint8) * 255
        if a.ndim == 2:
            a = np.repeat(a[:, :, None], 3, axis=2)
        a = np.ascontiguousarray(a[:, :, :3]).astype(np.uint8)
        for y in range(0, a.shape[0] - tile + 1, tile):
            for x in range(0, a.shape[1] - tile + 1, tile):
                t = a[y:y + tile, x:x + tile]
                if t.std() > 12:
                    arrays.append(np.asarray(Image.fromarray(t).resize((size, size), Image.Resampling.LANCZOS)))
                    groups.append(f"photo:{name}")
    digits = load_digits()
    for img, label in zip((digits.images / 16.0 * 255).clip(0, 255).astype(np.uint8), digits.target):
        big = np.asarray(Image.fromarray(255 - img).resize((size, size), Image.Resampling.BILINEAR))
        arrays.append(np.repeat(big[:, :, None], 3, axis=2))
        groups.append(f"digit:{label}")
    return arrays, np.asarray(groups)


def small_image_set(root: Path, *, size: int = 32, n_train: int = 600, per_transform: int = 20, n_clean: int = 200,
                    seed: int = 0, quality: int = 90) -> PlantedSet:
    """A planted set of ``size``-px images stored as JPEG (quality ``quality``), like CIFAR-10.

    Half photo tiles, half digits where the pool allows; the pool is de-duplicated (pixels cosine
    0.985) before the split; siblings by :data:`benchmarks.planted.IMAGE_TRANSFORMS` at ``size`` px
    (a thumbnail is then 13-22 px), saved as JPEG too (the ``jpeg`` transform at its own low
    quality, ``exact`` as the train file's bytes).
    """
    from PIL import Image

    from sibscan.encoders import get_encoder
    from sibscan.items import Items

    rng = np.random.default_rng(seed)
    root = Path(root)
    arrays, groups = _small_pool(size)
    is_tile = np.char.startswith(groups.astype(str), "photo:")
    tiles, digits = np.flatnonzero(is_tile), np.flatnonzero(~is_tile)
    need = n_train + n_clean
    pick = np.sort(np.concatenate([rng.permutation(tiles)[:need], rng.permutation(digits)[:2 * need]]))
    pool_dir = root / "pool"
    pool_dir.mkdir(parents=True, exist_ok=True)
    pool_paths = []
    for j, i in enumerate(pick):
        p = pool_dir / f"p{j:05d}.png"
        Image.fromarray(arrays[i]).save(p)
        pool_paths.append(str(p))
    keep = pick[dedupe_pool(get_encoder("pixels", device="cpu").encode(pool_paths), 0.985)]
    kt, kd = keep[is_tile[keep]], keep[~is_tile[keep]]
    n_tile = min(len(kt), need // 2)
    use = np.concatenate([rng.permutation(kt)[:n_tile], rng.permutation(kd)[:need - n_tile]])
    n_planted = per_transform * len(IMAGE_TRANSFORMS)
    n_train = min(n_train, len(use) - n_clean)
    order = rng.permutation(len(use))
    train_rows, clean_rows = use[order[:n_train]], use[order[n_train:n_train + n_clean]]
    sources = rng.choice(n_train, size=n_planted, replace=False)

    train_dir, test_dir = root / "train", root / "test"
    train_dir.mkdir(parents=True, exist_ok=True)
    test_dir.mkdir(parents=True, exist_ok=True)
    train_paths = []
    for j, r in enumerate(train_rows):
        p = train_dir / f"tr{j:05d}.jpg"
        Image.fromarray(arrays[r]).save(p, quality=quality)
        train_paths.append(str(p))
    test_paths = []
    for j, (s, t) in enumerate(zip(sources, np.repeat(np.asarray(IMAGE_TRANSFORMS), per_transform))):
        p = test_dir / f"te{j:05d}.jpg"
        if t == "exact":
            p.write_bytes(Path(train_paths[s]).read_bytes())
        else:
            im, _, opts = _image_transform(str(t), arrays[train_rows[s]], rng)
            im.save(p, format="JPEG", **(opts or {"quality": quality}))
        test_paths.append(str(p))
    for j, r in enumerate(clean_rows, start=len(sources)):
        p = test_dir / f"te{j:05d}.jpg"
        Image.fromarray(arrays[r]).save(p, quality=quality)
        test_paths.append(str(p))
    source, transform = _truth(per_transform, IMAGE_TRANSFORMS, sources, len(clean_rows))
    train_groups = groups[train_rows]
    test_groups = np.concatenate([groups[train_rows[sources]], groups[clean_rows]])
    hard = (source < 0) & np.isin(test_groups, train_groups)
    train = Items("train", "image", ids=[Path(p).stem for p in train_paths], labels=train_groups, paths=train_paths,
                  source=str(train_dir))
    test = Items("test", "image", ids=[Path(p).stem for p in test_paths], labels=test_groups, paths=test_paths,
                 source=str(test_dir))
    notes = {"size": size, "format": f"JPEG quality {quality}", "pool_after_dedupe": int(len(keep)),
             "train_photo_tiles": int(np.char.startswith(train_groups.astype(str), "photo:").sum()),
             "hard_negatives": "digits of the same class; tiles of the same photograph"}
    return PlantedSet(f"images-{size}px", "image", train, test, source, transform, hard, notes)


# ------------------------------------------------------------------------------------------------
# embedding at a size, and as before
# ------------------------------------------------------------------------------------------------
def previous_default_encode(enc, paths: Sequence[str], batch_size: int = 32) -> np.ndarray:
    """effnet as it embedded before it scaled to the data: timm's eval transform (short side to
    256, bicubic, centre crop 224), PyTorch eager, batches of 32, decoded in the calling thread."""
    import torch

    from sibscan.imageio import open_image

    parts = []
    with torch.inference_mode():
        for start in range(0, len(paths), batch_size):
            x = torch.stack([enc.classify_transform(open_image(p)) for p in paths[start:start + batch_size]])
            parts.append(enc._forward(x).float())
    out = torch.nn.functional.normalize(torch.cat(parts), dim=1).numpy()
    return np.ascontiguousarray(out, dtype=np.float32)


def _embed(ps: PlantedSet, mode: str):
    """(identity, train, test, seconds) of effnet in ``mode``: a size, "auto" or "previous"."""
    from sibscan.encoders import get_encoder
    from sibscan.encoders.scale import image_size_for

    if mode == "previous":
        enc = get_encoder("effnet", device="cpu", image_size=224, runtime="torch")
        t = time.perf_counter()
        tr, te = previous_default_encode(enc, ps.train.paths), previous_default_encode(enc, ps.test.paths)
        return "effnet before issue 16 (timm eval transform 256/224, PyTorch)", tr, te, time.perf_counter() - t
    size = image_size_for(ps.train, 224) if mode == "auto" else int(mode)
    enc = get_encoder("effnet", device="cpu", image_size=size)
    enc.encode(ps.train.paths[:2])  # export / load the runtime outside the timing
    t = time.perf_counter()
    tr, te = enc.encode(ps.train.paths), enc.encode(ps.test.paths)
    return enc.identity, tr, te, time.perf_counter() - t


def scan_defaults() -> dict:
    """What a default image scan does with its candidates, read from the scan's own defaults:
    ``encoder``, ``k`` (encoder's test→train top-k), ``views`` (extra views), ``k_view`` (each
    view's top-k) and ``verifier``."""
    from sibscan.encoders.build import default_encoder
    from sibscan.options import SearchOptions
    from sibscan.verify import default_verifier
    from sibscan.stages.views import resolve_views

    search, encoder = SearchOptions(), default_encoder("image")
    return {"encoder": encoder, "k": search.k, "k_view": search.k_view,
            "views": list(resolve_views(search, "image", True, encoder)), "verifier": default_verifier("image")}


def score_scan(ps: PlantedSet, tr: np.ndarray, te: np.ndarray, *, n_labels: int, n_verified_random: int,
               seed: int, verifier: Optional[str] = None, cascade: bool = False) -> dict:
    """The default scan's candidates on embeddings ``tr``/``te`` (effnet's, shapes (n_train, d) and
    (n_test, d)): its top-k, then joined with the default views' top-k_view, each verified by the
    default verifier (or ``verifier``; with ``cascade``, only the pairs the scan's ``--cascade``
    keeps) and scored as :func:`benchmarks.quality.evaluate` does.  The verifier starts with no
    cached pairs, so its seconds are the whole union's (and the random pairs')."""
    from benchmarks.quality import cascade_candidates
    from sibscan.verify import get_verifier

    d = scan_defaults()
    if verifier:
        d["verifier"] = verifier
    d["cascade"] = cascade
    if d["encoder"] != "effnet":
        raise SystemExit(f"the default image encoder is {d['encoder']}, not effnet: the scan row would not "
                         f"describe the default scan; run with --no-scan-row")
    found, view_seconds = view_candidates(ps, {"effnet": (tr, te)}, d["views"], max(d["k"], d["k_view"]))
    cand = union_candidates(found["effnet"][:, :d["k"]], *(found[v][:, :d["k_view"]] for v in d["views"]))
    out: Dict[str, object] = {"defaults": d, "view_seconds": view_seconds,
                              "candidate_pairs": int(sum(len(set(r[r >= 0].tolist())) for r in cand))}
    if cascade:
        cand, info = cascade_candidates(ps, cand, tr, te)
        out["cascade_seconds"], out["cascade_pairs"] = info["cascade_seconds"], int(sum(len(set(r.tolist())) for r in cand))
    pairs = PairScores(ps, get_verifier(d["verifier"]))
    common = dict(n_labels=n_labels, n_verified_random=n_verified_random, seed=seed)
    for key, kw in (("views", {"candidates": cand}), ("encoder_only", {})):
        r = evaluate(ps, tr, te, pairs, k=d["k"], **common, **kw)
        out[key] = {"recall_at_p95": r["metrics"]["recall_at_p95"], "auc": r["metrics"]["auc"],
                    "nn_is_source": r["nn_is_source"], "source_in_candidates": r["source_in_candidates"],
                    "per_transform_auc": {t: v["auc"] for t, v in r["per_transform"].items()}}
    out["verify_seconds"], out["verified_pairs"] = pairs.seconds, pairs.pairs
    return out


def run_set(ps: PlantedSet, modes: Sequence[str], *, k: int, n_labels: int, n_verified_random: int, seed: int,
            scan_row: bool = True, scan_verifier: Optional[str] = None, scan_cascade: bool = False) -> dict:
    from sibscan.encoders.scale import median_short_side
    from sibscan.verify import get_verifier

    print(f"\n## {ps.name}: {len(ps.train)} train, {len(ps.test)} test ({int(ps.planted.sum())} planted, "
          f"{int((~ps.planted).sum())} clean); median short side {median_short_side(ps.train):g} px", flush=True)
    pairs = PairScores(ps, get_verifier(VERIFIERS["image"]))
    out: Dict[str, object] = {"n_train": len(ps.train), "n_test": len(ps.test), "n_planted": int(ps.planted.sum()),
                              "median_short_side": median_short_side(ps.train), "notes": ps.notes, "modes": {}}
    rows = []
    for mode in modes:
        identity, tr, te, secs = _embed(ps, mode)
        before = (pairs.seconds, pairs.pairs)
        entry = {"identity": identity, "encode_seconds": secs, "encode_items_per_s": (len(tr) + len(te)) / secs}
        for verified in (False, True):
            r = evaluate(ps, tr, te, pairs if verified else None, k=k, n_labels=n_labels,
                         n_verified_random=n_verified_random, seed=seed)
            entry["verified" if verified else "embedding"] = {
                "recall_at_p95": r["metrics"]["recall_at_p95"], "auc": r["metrics"]["auc"],
                "nn_is_source": r["nn_is_source"],
                "per_transform_auc": {t: v["auc"] for t, v in r["per_transform"].items()}}
        entry["verify_seconds_new_pairs"] = pairs.seconds - before[0]
        entry["verified_new_pairs"] = pairs.pairs - before[1]
        out["modes"][mode] = entry
        rows.append({"size": mode,
                     "identity size": identity.split("size=")[1].split(",")[0] if "size=" in identity
                     else "224 (crop of 256)",
                     "R@P95": entry["embedding"]["recall_at_p95"], "AUC": entry["embedding"]["auc"],
                     "R@P95 +verify": entry["verified"]["recall_at_p95"], "AUC +verify": entry["verified"]["auc"],
                     "embed img/s": entry["encode_items_per_s"], "embed s": secs,
                     "verify s (new pairs)": entry["verify_seconds_new_pairs"]})
        if scan_row and mode == "auto":
            sc = entry["scan"] = score_scan(ps, tr, te, n_labels=n_labels, n_verified_random=n_verified_random,
                                            seed=seed, verifier=scan_verifier, cascade=scan_cascade)
            d, size = sc["defaults"], rows[-1]["identity size"]
            for key, label in (("encoder_only", f"auto, scan: effnet top-{d['k']}"),
                               ("views", f"auto, scan: effnet top-{d['k']} + {'+'.join(d['views'])} top-{d['k_view']}"
                                         f"{', cascade' if d['cascade'] else ''}")):
                rows.append({"size": f"{label}, {d['verifier']}", "identity size": size,
                             "R@P95 +verify": sc[key]["recall_at_p95"], "AUC +verify": sc[key]["auc"],
                             "source in cand.": sc[key]["source_in_candidates"]})
            rows[-1].update({"views s": sum(sc["view_seconds"].values()),
                             "verify s (all pairs)": sc["verify_seconds"] + sc.get("cascade_seconds", 0.0),
                             "pairs verified": sc["verified_pairs"]})
    out["verify_pairs_per_s"] = pairs.pairs / pairs.seconds if pairs.seconds else None
    print_table(rows, list(dict.fromkeys(c for r in rows for c in r)))
    return out


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.image_scale", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sets, two sizes (for the tests)")
    ap.add_argument("--sets", default="images,images-32px", help="comma list of images, images-32px")
    ap.add_argument("--sizes", default=None, help="comma list of fixed input sizes (default: "
                    "32,48,64,96,128,224; '' for none: only the size the scan chooses and the previous default)")
    ap.add_argument("--no-previous", action="store_true",
                    help="leave out the previous default (224 px in PyTorch eager: the slowest mode by far)")
    ap.add_argument("--k", type=int, default=5, help="candidates verified per test item in the per-size rows")
    ap.add_argument("--no-scan-row", action="store_true",
                    help="leave out the default scan's candidates (top-k joined with the extra views) at the auto size")
    ap.add_argument("--verifier", default=None, help="the scan row's verifier (default: the scan's default)")
    ap.add_argument("--cascade", action="store_true", help="the scan row verifies only what the scan's --cascade keeps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="image_scale", help="results file stem")
    ap.add_argument("--key", default=None, help="the run's key in the results file (default SETS_SIZES[_previous], "
                                                "e.g. images+images-32px_32-48-64-96-128-224_previous)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    bad = set(wanted) - {"images", "images-32px"}
    if bad:
        ap.error(f"unknown set(s) {', '.join(sorted(bad))}; available: images, images-32px")
    sizes = ([int(s) for s in args.sizes.split(",") if s.strip()] if args.sizes is not None
             else list(QUICK_SIZES if args.quick else SIZES))
    modes = [str(s) for s in sizes] + ["auto"] + ([] if args.no_previous else ["previous"])
    stem = args.name + ("_quick" if args.quick else "")
    key = args.key or "+".join(wanted) + "_" + ("-".join(map(str, sizes)) or "auto") + \
        ("" if args.no_previous else "_previous")
    keyed_runs(stem)  # a file of another form is refused before the sets are made
    n_train, per, n_clean = SET_SIZES["quick" if args.quick else "default"]
    common = dict(k=args.k, n_labels=40 if args.quick else 60, n_verified_random=80 if args.quick else 500,
                  seed=args.seed, scan_row=not args.no_scan_row, scan_verifier=args.verifier, scan_cascade=args.cascade)
    t0, load_before = time.perf_counter(), os.getloadavg()
    results: Dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="sibscan-scale-") as tmp:
        for name in wanted:
            if name == "images":
                ps = image_set(Path(tmp) / "images", n_train=n_train, per_transform=per, n_clean=n_clean,
                               seed=args.seed)
            else:
                ps = small_image_set(Path(tmp) / "small", n_train=n_train, per_transform=per, n_clean=n_clean,
                                     seed=args.seed)
            results[ps.name] = run_set(ps, modes, **common)
    payload = {"quick": args.quick, "sizes": sizes, "k": args.k, "seed": args.seed, "sets": results,
               "seconds": time.perf_counter() - t0, "load_average_before": load_before,
               "load_average_after": os.getloadavg()}
    path = write_run(stem, key, finite(payload))
    print(f"\nwrote {path}, run {key} ({payload['seconds']:.0f} s)")
    return payload


if __name__ == "__main__":
    main()
