"""Verification benchmark: speed of each verifier and detection quality with/without it.

Speed: pairs/s of ``imagecorr`` (kernel on 64x64 arrays, and end to end with decoding),
``textalign`` and ``lagcorr``, and the verifier's share of a 10,000 x 100,000 image scan at k=10,
against the exact search time estimated from a float32 matmul rate measured in the same run.

Quality: real photos from scikit-image planted as near copies (shift, flip, crop, colour, JPEG)
of a train crop, with hard negatives (the other half of the same photo, all other photos).  Per
transform: ROC AUC and precision/recall of the plain pixel cosine (the embedding stand-in:
cosine of 32x32 normalised grayscale) and of the verified similarity.

Run ``python -m benchmarks.verify [--quick] [--device cpu|cuda]``; results go to
``benchmarks/results/verify.json``.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

PHOTOS = ("astronaut", "chelsea", "coffee", "camera", "rocket", "immunohistochemistry",
          "coins", "clock", "hubble_deep_field", "retina", "page", "moon")
TRANSFORMS = ("shift", "flip", "crop", "colour", "jpeg")


def _photo(name: str):
    from PIL import Image
    import skimage.data

    arr = getattr(skimage.data, name)()
    return Image.fromarray(arr).convert("RGB")


def _transform(im, box, kind: str, size: int):
    """The test copy of the crop ``box`` of ``im`` under one transform, at ``size`` px."""
    import io

    from PIL import Image, ImageEnhance, ImageOps

    x0, y0, x1, y1 = box
    side = x1 - x0
    if kind == "shift":  # the same photo framed a little differently
        dx, dy = round(0.05 * side), round(0.04 * side)
        return im.crop((x0 + dx, y0 + dy, x1 + dx, y1 + dy)).resize((size, size), Image.BILINEAR)
    base = im.crop(box).resize((size, size), Image.BILINEAR)
    if kind == "flip":
        return ImageOps.mirror(base)
    if kind == "crop":
        m = round(0.075 * side)
        return im.crop((x0 + m, y0 + m, x1 - m, y1 - m)).resize((size, size), Image.BILINEAR)
    if kind == "colour":
        out = ImageEnhance.Color(base).enhance(0.4)
        out = ImageEnhance.Brightness(out).enhance(1.15)
        return ImageEnhance.Contrast(out).enhance(0.75)
    if kind == "jpeg":
        buf = io.BytesIO()
        base.save(buf, "JPEG", quality=20)
        buf.seek(0)
        return Image.open(buf).convert("RGB")
    raise ValueError(f"unknown transform {kind!r}; available: {', '.join(TRANSFORMS)}")


def planted_photos(directory, photos=PHOTOS, transforms=TRANSFORMS, size: int = 96) -> Dict[str, list]:
    """Write a planted near-copy image set under ``directory``.

    Train: two non-overlapping square crops of each photo (``<photo>-A``, ``<photo>-B``).
    Test: crop A of each photo under each transform (``<photo>-<transform>``).

    Returns
    -------
    dict with ``train_paths``, ``train_ids``, ``test_paths``, ``test_ids``, ``test_photo``,
    ``test_transform`` (lists), ``size``.
    """
    directory = Path(directory)
    (directory / "train").mkdir(parents=True, exist_ok=True)
    (directory / "test").mkdir(parents=True, exist_ok=True)
    out: Dict[str, list] = {k: [] for k in ("train_paths", "train_ids", "test_paths", "test_ids",
                                            "test_photo", "test_transform")}
    for name in photos:
        im = _photo(name)
        W, H = im.size
        side = int(0.45 * min(W, H))
        top = (H - side) // 2
        margin = int(0.04 * W)
        boxes = {"A": (margin, top, margin + side, top + side),
                 "B": (W - margin - side, top, W - margin, top + side)}
        for half, box in boxes.items():
            path = directory / "train" / f"{name}-{half}.png"
            im.crop(box).resize((size, size)).save(path)
            out["train_paths"].append(str(path))
            out["train_ids"].append(f"{name}-{half}")
        for kind in transforms:
            path = directory / "test" / f"{name}-{kind}.png"
            _transform(im, boxes["A"], kind, size).save(path)
            out["test_paths"].append(str(path))
            out["test_ids"].append(f"{name}-{kind}")
            out["test_photo"].append(name)
            out["test_transform"].append(kind)
    out["size"] = [size]
    return out


def pixel_embeddings(paths, side: int = 32) -> np.ndarray:
    """The embedding stand-in: 32x32 grayscale, zero mean, unit norm; (n, side * side) float32."""
    from PIL import Image

    rows = []
    for p in paths:
        g = np.asarray(Image.open(p).convert("L").resize((side, side), Image.BILINEAR), np.float32).ravel()
        g = g - g.mean()
        rows.append(g / max(np.linalg.norm(g), 1e-12))
    return np.stack(rows)


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC AUC as the probability a positive outscores a negative (ties count half)."""
    pos, neg = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float((pos > neg).mean() + 0.5 * (pos == neg).mean())


def quality(directory, device: str = "cpu", quick: bool = False) -> List[Dict[str, object]]:
    """Per-transform AUC and precision/recall of pixel cosine vs verified similarity."""
    from sibscan.items import Items
    from sibscan.verify import get_verifier

    photos = PHOTOS[:6] if quick else PHOTOS
    data = planted_photos(directory, photos=photos)
    train = Items("train", "image", ids=data["train_ids"], paths=data["train_paths"])
    test = Items("test", "image", ids=data["test_ids"], paths=data["test_paths"])
    # every test item against every train item: the quality set is tiny, and every pair is labelled
    qi, di = np.meshgrid(np.arange(len(test)), np.arange(len(train)), indexing="ij")
    qi, di = qi.ravel(), di.ravel()
    truth = np.array(data["test_photo"])[qi] + "-A" == np.array(data["train_ids"])[di]
    emb_t, emb_r = pixel_embeddings(data["test_paths"]), pixel_embeddings(data["train_paths"])
    cosine = (emb_t[qi] * emb_r[di]).sum(1)
    verifier = get_verifier("imagecorr", device=device, progress=False)
    verified = np.nan_to_num(verifier.verify(test, qi, train, di).scores, nan=-1.0)
    kinds = np.array(data["test_transform"])[qi]
    rows = []
    for label, score in (("pixel cosine", cosine), ("imagecorr", verified)):
        # one cutoff for all transforms: the best F1 over the pooled pairs
        cuts = np.unique(score)
        f1 = [2 * (truth & (score >= c)).sum() / (truth.sum() + (score >= c).sum()) for c in cuts]
        cut = float(cuts[int(np.argmax(f1))])
        zero_fp = float(score[~truth].max())
        for kind in TRANSFORMS:
            sel = kinds == kind
            pos, neg = score[sel & truth], score[~truth]  # negatives: every wrong pair, all transforms
            flagged = (score >= cut) & sel
            tp = (flagged & truth).sum()
            rows.append({
                "score": label, "transform": kind, "auc": _auc(pos, neg),
                "precision": float(tp / max(flagged.sum(), 1)), "recall": float(tp / max(pos.size, 1)),
                "recall@0fp": float((pos > zero_fp).mean()), "cutoff": cut,
            })
    return rows


def _matmul_rate(device: str, n: int) -> float:
    """float32 GEMM rate in FLOP/s (the exact search's floor)."""
    import torch

    a = torch.randn(n, 512, device=device)
    b = torch.randn(512, 4 * n, device=device)
    (a @ b)
    if device != "cpu":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    reps = 3
    for _ in range(reps):
        a @ b
    if device != "cpu":
        torch.cuda.synchronize()
    return reps * 2 * n * 512 * 4 * n / (time.perf_counter() - t0)


def speed(directory, device: str = "cpu", quick: bool = False) -> List[Dict[str, object]]:
    """Pairs/s of each verifier, and imagecorr's share of a 10k x 100k scan at k=10."""
    from sibscan.items import Items
    from sibscan.kernels.paircorr import image_pair_corr
    from sibscan.verify import get_verifier

    rng = np.random.default_rng(0)
    rows = []
    m = 1000 if quick else 10_000
    q = rng.random((m, 1, 64, 64), dtype=np.float32)
    d = rng.random((m, 1, 64, 64), dtype=np.float32)
    detail = get_verifier("imagecorr", device=device, progress=False).detail  # the kernel as the verifier runs it
    image_pair_corr(q[:8], d[:8], device=device, detail=detail)  # warm-up
    sync = (lambda: __import__("torch").cuda.synchronize()) if device != "cpu" else (lambda: None)
    t0 = time.perf_counter()
    image_pair_corr(q, d, device=device, detail=detail)
    sync()
    kernel_rate = m / (time.perf_counter() - t0)
    rows.append({"verifier": "imagecorr (64x64 arrays)", "pairs": m, "pairs_per_s": kernel_rate})

    data = planted_photos(Path(directory) / "speed", photos=PHOTOS[:4])
    paths = data["train_paths"] * (25 if quick else 100)
    items = Items("train", "image", ids=[f"i{i}" for i in range(len(paths))], paths=paths)
    n = len(paths)
    verifier = get_verifier("imagecorr", device=device, progress=False)
    idx = np.arange(n)
    t0 = time.perf_counter()
    verifier.verify(items, idx, items, rng.permutation(n))
    e2e_rate = n / (time.perf_counter() - t0)
    rows.append({"verifier": "imagecorr (decode 96px PNGs + kernel)", "pairs": n, "pairs_per_s": e2e_rate})

    words = [f"w{i}" for i in range(5000)]
    mt = 200 if quick else 2000
    texts = [" ".join(rng.choice(words, 200)) for _ in range(mt)]
    titems = Items("train", "text", ids=[f"t{i}" for i in range(mt)], texts=texts)
    tv = get_verifier("textalign", progress=False)
    t0 = time.perf_counter()
    tv.verify(titems, np.arange(mt), titems, rng.permutation(mt))
    rows.append({"verifier": "textalign (200-word texts)", "pairs": mt, "pairs_per_s": mt / (time.perf_counter() - t0)})

    ms = 2000 if quick else 20_000
    vals = rng.standard_normal((ms, 500))
    sitems = Items("train", "table", ids=[f"s{i}" for i in range(ms)], values=vals)
    sv = get_verifier("lagcorr", device=device)
    t0 = time.perf_counter()
    sv.verify(sitems, np.arange(ms), sitems, rng.permutation(ms))
    rows.append({"verifier": "lagcorr (length 500, lag 50)", "pairs": ms,
                 "pairs_per_s": ms / (time.perf_counter() - t0)})

    rate = _matmul_rate(device, 1024 if quick else 4096)
    search_s = 2 * 10_000 * 100_000 * 512 / rate
    pairs = 10_000 * 10
    for r in rows[:2]:
        verify_s = pairs / r["pairs_per_s"]
        r["scan_10k_100k_verify_s"] = verify_s
        r["search_s (dim 512)"] = search_s
        r["verify_share"] = verify_s / (verify_s + search_s)
    rows.append({"verifier": "reference: float32 matmul", "pairs": "", "pairs_per_s": "",
                 "search_s (dim 512)": search_s, "gflops": rate / 1e9})
    return rows


def main(argv=None) -> None:
    from benchmarks._common import print_table, write_results
    from sibscan.device import resolve_device

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    args = ap.parse_args(argv)
    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        q_rows = quality(Path(tmp) / "quality", device=device, quick=args.quick)
        print("\nQuality (planted skimage photos; negatives: other half of the same photo, all other photos)")
        print_table(q_rows)
        s_rows = speed(tmp, device=device, quick=args.quick)
        print(f"\nSpeed on {device}; scan estimate: 10,000 test x 100,000 train, k=10 -> 100,000 pairs")
        print_table(s_rows)
    path = write_results("verify", {"quick": args.quick, "device": device, "quality": q_rows, "speed": s_rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
