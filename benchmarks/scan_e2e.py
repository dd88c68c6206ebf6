"""A whole ``sibscan scan`` end to end, per modality, against a bare encode + top-k pipeline.

    python -m benchmarks.scan_e2e            # default sizes
    python -m benchmarks.scan_e2e --quick    # tiny, for the tests

Each case writes a planted dataset to disk in the form a user hands to ``sibscan scan`` —

* ``table``: CSV files of class-structured series (random-walk prototypes per class plus noise;
  5 % of test rows are planted copies of train rows: exact, noisy, rescaled);
* ``text``: JSONL of Python documentation paragraphs and numpydoc docstrings
  (:func:`benchmarks.planted.text_set`);
* ``image``: folders of photo tiles and digits (:func:`benchmarks.planted.image_set`);
* ``image32``: CIFAR-sized folders of 32 x 32 JPEGs (:func:`write_image32_case`: random crops of the
  shipped photographs and placed digits, 5 % of test planted by
  :data:`benchmarks.planted.IMAGE_TRANSFORMS`), ``--image32 N`` images in all (default 6,000) —

and runs :func:`sibscan.scan.run_scan` with the modality's default encoder and verifier, exactly as
the CLI does.  Reported: items/s over the whole scan, the per-stage seconds from
``manifest["timings"]``, and the reference measured in the same run: the bare pipeline (the same
encoder on the same items in memory, then one matrix product and a top-k, test → train only).
``overhead`` = scan seconds / bare seconds: what loading, fingerprints, the cache, three search
directions, verification, the baseline and the atomic writes cost on top.  Results:
``benchmarks/results/scan_e2e.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from benchmarks._common import print_table, write_results

SIZES = {
    "quick": {"table": (400, 100, 64), "text": (60, 3, 30), "image": (40, 2, 20), "image32": (60,)},
    "default": {"table": (20000, 2000, 128), "text": (800, 25, 250), "image": (600, 20, 200), "image32": (6000,)},
}
CASES = ("table", "text", "image", "image32")
#: scan options changed in quick mode only (the tests): a weight-free text encoder, a smaller verified baseline
QUICK_OPTIONS = {"text": {"encoder": "ngram"}, "all": {"verified_baseline_pairs": 200, "baseline_pairs": 5000}}


def write_table_case(root: Path, n_train: int, n_test: int, length: int, seed: int = 0) -> Dict[str, object]:
    """CSV train/test of class-structured series with 5 % of test rows planted; returns the scan options."""
    rng = np.random.default_rng(seed)
    n_classes = 8
    protos = np.cumsum(rng.normal(size=(n_classes, length)), axis=1)

    def rows(n: int) -> tuple:
        cls = rng.integers(0, n_classes, n)
        x = protos[cls] + np.cumsum(rng.normal(scale=0.3, size=(n, length)), axis=1)
        return x, cls

    train, train_cls = rows(n_train)
    test, test_cls = rows(n_test)
    n_plant = max(3, n_test // 20)
    src = rng.choice(n_train, n_plant, replace=False)
    kind = np.arange(n_plant) % 3
    test[:n_plant] = train[src]
    test[:n_plant][kind == 1] += rng.normal(scale=0.02, size=((kind == 1).sum(), length))
    test[:n_plant][kind == 2] = test[:n_plant][kind == 2] * 1.5 + 0.3
    test_cls[:n_plant] = train_cls[src]
    root.mkdir(parents=True, exist_ok=True)
    header = "label," + ",".join(f"t{i}" for i in range(length))
    for name, x, c in (("train", train, train_cls), ("test", test, test_cls)):
        np.savetxt(root / f"{name}.csv", np.column_stack([c, x]), delimiter=",", fmt=["%d"] + ["%.6f"] * length,
                   header=header, comments="")
    return {"train": str(root / "train.csv"), "test": str(root / "test.csv"), "label": "label",
            "n_train": n_train, "n_test": n_test, "planted": int(n_plant)}


def write_text_case(root: Path, n_train: int, per_transform: int, n_clean: int, seed: int = 0) -> Dict[str, object]:
    from benchmarks.planted import text_set

    ps = text_set(n_train=n_train, per_transform=per_transform, n_clean=n_clean, seed=seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, items in (("train", ps.train), ("test", ps.test)):
        with open(root / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            for i, t, lab in zip(items.ids, items.texts, items.labels):
                fh.write(json.dumps({"id": str(i), "text": t, "label": str(lab)}) + "\n")
    return {"train": str(root / "train.jsonl"), "test": str(root / "test.jsonl"), "label": "label", "id": "id",
            "n_train": len(ps.train), "n_test": len(ps.test), "planted": int(ps.planted.sum())}


def write_image_case(root: Path, n_train: int, per_transform: int, n_clean: int, seed: int = 0) -> Dict[str, object]:
    from benchmarks.planted import image_set

    ps = image_set(root, n_train=n_train, per_transform=per_transform, n_clean=n_clean, seed=seed)
    return {"train": str(root / "train"), "test": str(root / "test"), "n_train": len(ps.train),
            "n_test": len(ps.test), "planted": int(ps.planted.sum())}


def write_image32_case(root: Path, n_images: int, seed: int = 0, side: int = 32) -> Dict[str, object]:
    """``n_images`` JPEGs of ``side`` x ``side`` px (quality 90), five sixths train, like CIFAR-10.

    Every item is a fresh random crop (a sixth to a half of the short side, at a random place, flipped
    half the time) of a photograph shipped with scikit-image, downsampled to ``side``, or one of
    scikit-learn's digits scaled to 14-30 px on a random background; 5 % of the test items are
    planted siblings of random train items made by :data:`benchmarks.planted.IMAGE_TRANSFORMS`.
    """
    import skimage.data
    from PIL import Image
    from sklearn.datasets import load_digits

    from benchmarks.image_scale import PHOTOS
    from benchmarks.planted import IMAGE_TRANSFORMS, _image_transform

    rng = np.random.default_rng(seed)
    photos = []
    for name in PHOTOS:
        try:
            a = np.asarray(getattr(skimage.data, name)())
        except Exception:  # noqa: BLE001 - a sample that needs a download is left out
            continue
        a = (a.astype(np.uint8) * 255 if a.dtype == bool else a)
        a = np.repeat(a[:, :, None], 3, axis=2) if a.ndim == 2 else a[:, :, :3]
        photos.append(np.ascontiguousarray(a).astype(np.uint8))
    digits = (255 - (load_digits().images / 16.0 * 255).clip(0, 255)).astype(np.uint8)

    def item() -> np.ndarray:
        if rng.random() < 0.5:
            a = photos[rng.integers(len(photos))]
            short = min(a.shape[:2])
            s = int(rng.integers(max(side, short // 6), short // 2 + 1))
            y, x = int(rng.integers(0, a.shape[0] - s + 1)), int(rng.integers(0, a.shape[1] - s + 1))
            im = Image.fromarray(a[y:y + s, x:x + s]).resize((side, side), Image.Resampling.LANCZOS)
            return np.asarray(im.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if rng.random() < 0.5 else im)
        d = int(rng.integers(14, side - 1))
        canvas = np.full((side, side, 3), rng.integers(120, 256, size=3), np.uint8)
        glyph = np.asarray(Image.fromarray(digits[rng.integers(len(digits))]).resize((d, d), Image.Resampling.BILINEAR))
        y, x = (int(v) for v in rng.integers(0, side - d + 1, size=2))
        canvas[y:y + d, x:x + d] = np.minimum(canvas[y:y + d, x:x + d], glyph[:, :, None])
        return canvas

    n_test = max(1, n_images // 6)
    n_train = n_images - n_test
    n_plant = min(n_test, max(len(IMAGE_TRANSFORMS), n_test // 20))
    train_arrays = []
    for split, n in (("train", n_train), ("test", n_test)):
        folder = root / split
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            if split == "test" and i < n_plant:
                t = IMAGE_TRANSFORMS[i % len(IMAGE_TRANSFORMS)]
                im, _, opts = _image_transform(t, train_arrays[rng.integers(n_train)], rng)
                im.save(folder / f"{split}{i:06d}.jpg", format="JPEG", **(opts or {"quality": 90}))
                continue
            a = item()
            if split == "train":
                train_arrays.append(a)
            Image.fromarray(a).save(folder / f"{split}{i:06d}.jpg", quality=90)
    return {"train": str(root / "train"), "test": str(root / "test"), "n_train": n_train, "n_test": n_test,
            "planted": n_plant}


def bare_pipeline(train, test, encoder) -> float:
    """Seconds of the reference: encode both splits in memory, one matrix product, top-10 (test → train)."""
    t = time.perf_counter()
    a = encoder.encode(train.content)
    b = encoder.encode(test.content)
    sims = b @ a.T
    k = min(10, sims.shape[1])
    np.argpartition(-sims, k - 1, axis=1)[:, :k]
    return time.perf_counter() - t


def run_case(modality: str, case: Dict[str, object], out: Path, overrides: Optional[dict] = None,
             bare_reference: bool = True) -> dict:
    from sibscan.config import ScanConfig
    from sibscan.encoders import get_encoder
    from sibscan.encoders.build import build_encoder
    from sibscan.loaders import load_split
    from sibscan.scan import run_scan

    opts = {k: v for k, v in case.items() if k in ("train", "test", "label", "id")}
    cfg = ScanConfig(out=str(out), device="cpu", progress=False, **opts).merged(dict(overrides or {}))
    load_before = os.getloadavg()
    t = time.perf_counter()
    res = run_scan(cfg)
    wall = time.perf_counter() - t
    load_after = os.getloadavg()
    man = res.manifest
    n_items = man["inputs"]["train"]["n_items"] + man["inputs"]["test"]["n_items"]
    # the reference, on the same loaded items with the same encoder
    cfg_loaded = cfg.merged({"modality": man["modality"]})
    train, test = load_split(cfg_loaded.load, "train"), load_split(cfg_loaded.load, "test")
    if modality in ("image", "image32"):  # the encoder the scan built, at the input size it chose from the train images
        encoder = build_encoder(cfg_loaded.encoding, train)
        if encoder.identity != man["encoder"]["identity"]:
            raise RuntimeError(f"the bare reference would embed with {encoder.identity}, the scan with "
                               f"{man['encoder']['identity']}")
    else:
        encoder = get_encoder(man["encoder"]["name"], device="cpu")
    bare = bare_pipeline(train, test, encoder) if bare_reference else None
    return {
        "modality": modality,
        "n_train": man["inputs"]["train"]["n_items"],
        "n_test": man["inputs"]["test"]["n_items"],
        "planted": case["planted"],
        "encoder": man["encoder"]["name"],
        "encoder_identity": man["encoder"]["identity"],
        "verifier": (man.get("verifier") or {}).get("name"),
        "seconds": wall,
        "items_per_s": n_items / wall,
        "timings": man["timings"],
        "options": dict(overrides or {}),
        "bare_seconds": bare,
        "bare_items_per_s": n_items / bare if bare else None,
        "overhead": wall / bare if bare else None,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "exact_test_twins": man["summary"]["exact_test_rows_with_train_twin"],
    }


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.scan_e2e", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--cases", default="table,text,image", help=f"comma list of {', '.join(CASES)}")
    ap.add_argument("--image32", type=int, default=None, help="images in the image32 case (default 6000; --quick 60)")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare-pipeline reference "
                                                           "(halves the time of a big case)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="scan_e2e", help="results file stem (benchmarks/results/NAME.json)")
    args = ap.parse_args(argv)
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = sorted(set(wanted) - set(CASES))
    if bad:
        ap.error(f"unknown case(s) {', '.join(bad)}; available: {', '.join(CASES)}")
    size = SIZES["quick" if args.quick else "default"]
    if args.image32 is not None:
        if args.image32 < 12:
            ap.error(f"--image32 {args.image32}: give at least 12 images")
        size = {**size, "image32": (args.image32,)}
    writers = {"table": write_table_case, "text": write_text_case, "image": write_image_case,
               "image32": write_image32_case}
    results: List[dict] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sibscan-e2e-") as tmp:
        for modality in wanted:
            case = writers[modality](Path(tmp) / modality, *size[modality], seed=args.seed)
            print(f"scanning {modality}: {case['n_train']} train, {case['n_test']} test ...", flush=True)
            overrides = {**QUICK_OPTIONS["all"], **QUICK_OPTIONS.get(modality, {})} if args.quick else {}
            results.append(run_case(modality, case, Path(tmp) / f"scan-{modality}", overrides,
                                    bare_reference=not args.no_bare))
    # every stage the scan clocked (the candidate views included), in the scan's order; the rest is "other"
    stages = [s for s in ("load", "fingerprint", "models", "encode", "search", "views", "verify", "baseline")
              if any(s in r["timings"] for r in results)]
    stages += sorted({s for r in results for s in r["timings"] if s != "total"} - set(stages))
    rows = [{"case": r["modality"], "encoder": r["encoder"], "verifier": r["verifier"] or "-",
             "items": r["n_train"] + r["n_test"], "scan s": r["seconds"], "items/s": r["items_per_s"],
             **{f"{s} s": r["timings"].get(s, 0.0) for s in stages},
             "other s": r["seconds"] - sum(r["timings"].get(s, 0.0) for s in stages),
             "bare s": r["bare_seconds"] or "-", "scan/bare": r["overhead"] or "-",
             "load": f"{r['load_average_before'][0]:.1f}-{r['load_average_after'][0]:.1f}"} for r in results]
    print_table(rows)
    # with bytecode writing off (PYTHONDONTWRITEBYTECODE) every run compiles torch/timm from source:
    # tens of seconds of the "models" stage that a normal install pays once
    payload = {"quick": args.quick, "seed": args.seed, "cases": results, "seconds": time.perf_counter() - t0,
               "dont_write_bytecode": sys.dont_write_bytecode}
    path = write_results(args.name, payload)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
