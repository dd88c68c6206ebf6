"""Encoder throughput (items/s) for every registered encoder, CPU or CUDA.

    python -m benchmarks.encoders                          # CPU, small sizes
    python -m benchmarks.encoders --quick                  # tiny sizes, for the tests
    python -m benchmarks.encoders --device cuda --decoded  # GPU: CLIP ViT-B-32 from decoded tensors
    python -m benchmarks.encoders --small-only             # CPU: only the 32-px JPEG case

Rows and their references (measured in the same run, same data):

* ``clip`` / ``effnet`` *decoded*: sibscan's ``encode_tensors`` on uint8 pixels already at the
  model's input size (normalised on the device, bf16 autocast on CUDA), against a bare
  ``model(x)`` loop on float inputs already on the device under the same precision — the ratio is
  the share of the raw model speed sibscan keeps. CLIP here is ViT-B-32 with random weights (the
  speed does not depend on the weights); the issue's target on one H200 is >= 20,000 images/s.
* ``clip`` / ``effnet`` *files*: ``encode(paths)`` — decoding JPEG files (a thread pool one batch ahead on the CPU, on
the GPU with CUDA) and
  preprocessing — against the decoded row of the same encoder.
* ``minilm`` / ``clip-text``: ``encode(texts)`` against sentence-transformers' own ``encode`` /
  a bare ``encode_text`` loop.
* ``effnet`` *32-px files* (CPU): the 32-px JPEG case of :func:`small_jpeg_case` — the default
  scan's effnet (input size from the data, ONNX Runtime) against the previous default (256/224,
  PyTorch eager), and ONNX Runtime against PyTorch eager on the same images (speed ratio and the
  smallest per-item cosine); ``--small-only`` runs just this case (``encoders_32px.json``).
* weight-free encoders (``pixels``, ``phash``, ``ngram``, ``minhash``, ``znorm``, ``raw``): items/s,
  no reference.

Writes ``benchmarks/results/encoders.json`` (``encoders_cuda.json`` with ``--device cuda``; a
``--quick`` run adds ``_quick`` to the name).
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

from benchmarks import _common

TARGET_CLIP_CUDA = 20_000.0


def _rate(n: int, fn: Callable[[], object], repeat: int) -> float:
    return n / _common.best_time(fn, repeat=repeat)


def _photo_files(folder: Path, n: int) -> List[str]:
    """``n`` JPEG files cut from scikit-image's sample photos (different crops, 256 x 256)."""
    from PIL import Image
    from skimage import data

    photos = [Image.fromarray(getattr(data, k)()).convert("RGB") for k in ("chelsea", "astronaut", "coffee", "rocket")]
    paths = []
    for i in range(n):
        im = photos[i % len(photos)]
        off = (i // len(photos)) % 32
        w, h = im.size
        side = min(w, h) - 32
        im.crop((off, off, off + side, off + side)).resize((256, 256), Image.BICUBIC).save(folder / f"{i}.jpg", quality=90)
        paths.append(str(folder / f"{i}.jpg"))
    return paths


def _sentences(n: int) -> List[str]:
    rng = np.random.default_rng(0)
    words = ("the model data test train image copy near exact sibling score cut rate label "
             "class text word bank river market frog violin flour salt city").split()
    return [" ".join(rng.choice(words, size=int(rng.integers(8, 40)))) for _ in range(n)]


def _bare_image_rate(enc, n: int, batch: int, repeat: int) -> float:
    """A bare forward loop: float inputs already on the device, the encoder's precision."""
    import torch

    h, w = enc.input_size
    x = torch.randn(min(n, batch), 3, h, w, device=enc.device)
    steps = max(1, n // len(x))

    def run():
        with torch.inference_mode(), enc.autocast():
            for _ in range(steps):
                out = enc._forward(x)
            if enc.on_cuda:
                torch.cuda.synchronize()
        return out

    run()  # warm-up (CUDA kernels, allocator)
    return _rate(steps * len(x), run, repeat)


def _decoded_rate(enc, n: int, batch: int, repeat: int) -> float:
    import torch

    h, w = enc.input_size
    x = torch.randint(0, 256, (min(n, batch * 4), 3, h, w), dtype=torch.uint8)
    if enc.on_cuda:
        x = x.pin_memory()
    steps = max(1, n // len(x))

    def run():
        for _ in range(steps):
            enc.encode_tensors(x, batch_size=batch)

    enc.encode_tensors(x[:batch], batch_size=batch)  # warm-up
    return _rate(steps * len(x), run, repeat)


def small_jpeg_case(n: int, n_previous: int, n_runtime: int, repeat: int, threads: Optional[int] = None) -> dict:
    """The 32-px JPEG case (CIFAR-sized images) on the CPU: the default scan's effnet against the
    previous default, and ONNX Runtime against PyTorch eager on the same images.

    Rows (images/s, decoding included in every one):

    * ``default``: effnet as a scan builds it now — input size from the train images
      (:func:`sibscan.encoders.scale.image_size_for`: 32 px -> 96), ``runtime="auto"``;
    * ``previous``: effnet as the scan ran before issue 16 — timm's eval transform (short side to
      256, crop 224), PyTorch eager, decoded in the calling thread
      (:func:`benchmarks.image_scale.previous_default_encode`), on ``n_previous`` of the images;
    * ``onnx`` / ``torch`` at the chosen size and at 224 px, same images (``n_runtime`` at 224), with
      the smallest per-item cosine between the two runtimes' embeddings.
    """
    from benchmarks.gpu_pipeline import jpeg_files
    from benchmarks.image_scale import previous_default_encode
    from sibscan.encoders import get_encoder
    from sibscan.encoders.onnxrt import onnx_available
    from sibscan.encoders.scale import image_size_for
    from sibscan.items import Items

    out: Dict[str, object] = {"images": n, "side_px": 32, "format": "JPEG quality 90"}
    rows: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="sibscan-32px-") as tmp:
        paths = jpeg_files(Path(tmp), n, size=32)
        items = Items("train", "image", ids=[Path(p).stem for p in paths], paths=paths)
        size = image_size_for(items, 224)
        out["chosen_size"] = size
        enc = get_encoder("effnet", device="cpu", image_size=size)
        enc.encode(paths[:8])  # export / load the runtime outside the timing
        default = _rate(n, lambda: enc.encode(paths), repeat)
        old = get_encoder("effnet", device="cpu", image_size=224, runtime="torch")
        previous_default_encode(old, paths[:4])
        previous = _rate(n_previous, lambda: previous_default_encode(old, paths[:n_previous]), repeat)
        rows.append(_row(f"effnet default scan ({size} px, {enc.runtime_used})", "32-px files", "cpu", n, default,
                         "previous default (256/224, torch eager)", previous))
        rows.append(_row("effnet previous default (256/224, torch eager)", "32-px files", "cpu", n_previous, previous))
        out["default_images_per_s"], out["previous_images_per_s"] = default, previous
        out["default_over_previous"] = default / previous
        out["runtime_used"] = enc.runtime_used
        if onnx_available():
            out["onnx_vs_torch"] = {}
            for s, m in ((size, n), (224, n_runtime)):
                sub = paths[:m]
                ort = get_encoder("effnet", device="cpu", image_size=s, runtime="onnx")
                eager = get_encoder("effnet", device="cpu", image_size=s, runtime="torch")
                a, b = ort.encode(sub), eager.encode(sub)  # warm-up, and the embeddings compared
                r_ort = _rate(m, lambda: ort.encode(sub), repeat)
                r_eager = _rate(m, lambda: eager.encode(sub), repeat)
                cos = np.sum(a * b, axis=1)
                out["onnx_vs_torch"][f"{s}px"] = {"images": m, "onnx_images_per_s": r_ort,
                                                  "torch_images_per_s": r_eager, "ratio": r_ort / r_eager,
                                                  "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean())}
                rows.append({**_row(f"effnet onnxruntime ({s} px)", "32-px files", "cpu", m, r_ort,
                                    "torch eager, same images", r_eager), "min_cosine": float(cos.min())})
    out["rows"] = rows
    return out


def _row(encoder: str, mode: str, device: str, n: int, rate: float, ref_name: str = "", ref: Optional[float] = None,
         target: Optional[float] = None) -> Dict[str, object]:
    return {
        "encoder": encoder, "mode": mode, "device": device, "n": n, "items_per_s": rate,
        "reference": ref_name, "reference_items_per_s": ref if ref is not None else "",
        "ratio": (rate / ref) if ref else "", "target_items_per_s": target if target is not None else "",
    }


def main(argv: Optional[List[str]] = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    ap.add_argument("--decoded", action="store_true", help="only CLIP from decoded tensors (the GPU target)")
    ap.add_argument("--model", default="ViT-B-32", help="open_clip architecture for the clip rows")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--images", type=int, default=None, help="images per measurement")
    ap.add_argument("--texts", type=int, default=None, help="texts per measurement")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (for the tests)")
    ap.add_argument("--small-only", action="store_true",
                    help="only the 32-px JPEG case (CPU; writes encoders_32px.json)")
    args = ap.parse_args(argv)

    from sibscan.device import resolve_device
    from sibscan.encoders import get_encoder, list_encoders

    device = resolve_device(args.device)
    cuda = device.startswith("cuda")
    if args.quick:
        n_img, n_txt, repeat, batch = 4, 16, 1, args.batch_size or 4
    elif cuda:
        n_img, n_txt, repeat, batch = 65_536, 20_000, 3, args.batch_size or 1024
    else:
        n_img, n_txt, repeat, batch = 64, 512, 2, args.batch_size or 32
    n_img = args.images or n_img
    n_txt = args.texts or n_txt
    repeat = args.repeat or repeat
    rows: List[Dict[str, object]] = []
    if args.small_only or not cuda:
        n_small = 16 if args.quick else (args.images or 1024)
        small = small_jpeg_case(n_small, max(4, n_small // 8), max(8, n_small // 8), repeat=repeat)
        _common.print_table(small["rows"], ["encoder", "mode", "n", "items_per_s", "reference",
                                            "reference_items_per_s", "ratio", "min_cosine"])
        if args.small_only:
            payload = {"args": vars(args), "device": "cpu", "small_jpeg": small,
                       "load_average": os.getloadavg()}
            print(f"wrote {_common.write_results('encoders_32px' + ('_quick' if args.quick else ''), payload)}")
            return payload

    clip = get_encoder("clip", model=args.model, pretrained="none", device=device, batch_size=batch)
    bare = _bare_image_rate(clip, n_img, batch, repeat)
    decoded = _decoded_rate(clip, n_img, batch, repeat)
    rows.append(_row(f"clip {args.model} (random init)", "decoded", device, n_img, decoded, "bare model(x)", bare,
                     TARGET_CLIP_CUDA if cuda else None))

    if not args.decoded:
        with tempfile.TemporaryDirectory() as tmp:
            n_files = n_img if not cuda else min(n_img, 4096)
            paths = _photo_files(Path(tmp), n_files)
            rows.append(_row(f"clip {args.model} (random init)", "files", device, n_files,
                             _rate(n_files, lambda: clip.encode(paths), repeat), "decoded", decoded))
            eff = get_encoder("effnet", device=device, batch_size=batch)
            eff_decoded = _decoded_rate(eff, n_img, batch, repeat)
            rows.append(_row("effnet", "decoded", device, n_img, eff_decoded, "bare model(x)",
                             _bare_image_rate(eff, n_img, batch, repeat)))
            rows.append(_row("effnet", "files", device, n_files, _rate(n_files, lambda: eff.encode(paths), repeat),
                             "decoded", eff_decoded))
            texts = _sentences(n_txt)
            mini = get_encoder("minilm", device=device, batch_size=batch)
            st_rate = _rate(n_txt, lambda: mini.model.encode(texts, batch_size=batch, show_progress_bar=False), repeat)
            rows.append(_row("minilm", "texts", device, n_txt, _rate(n_txt, lambda: mini.encode(texts), repeat),
                             "sentence-transformers encode", st_rate))
            ctext = get_encoder("clip-text", model=args.model, pretrained="none", device=device, batch_size=batch)
            rows.append(_row(f"clip-text {args.model} (random init)", "texts", device, n_txt,
                             _rate(n_txt, lambda: ctext.encode(texts), repeat)))
            rng = np.random.default_rng(0)
            table = rng.standard_normal((n_txt * 8, 64))
            for cls in list_encoders():
                if not cls.weight_free:
                    continue
                try:
                    enc = get_encoder(cls.name)
                except Exception as exc:  # an encoder that needs options: report, do not stop the run
                    rows.append({**_row(cls.name, cls.modality, "cpu", 0, float("nan")),
                                 "reference": f"skipped: {exc}"})
                    continue
                batch_in = {"image": paths, "text": texts * 8, "table": table}[cls.modality]
                rows.append(_row(cls.name, cls.modality, "cpu", len(batch_in),
                                 _rate(len(batch_in), lambda: enc.encode(batch_in), repeat)))

    _common.print_table(rows)
    payload = {"args": vars(args), "device": device, "rows": rows}
    if not cuda:
        payload["small_jpeg"] = small
    if cuda:
        payload["clip_decoded_meets_target"] = bool(rows[0]["items_per_s"] >= TARGET_CLIP_CUDA)
    # a --quick run (the tests') never overwrites the real measurement
    name = ("encoders_cuda" if cuda else "encoders") + ("_quick" if args.quick else "")
    print(f"wrote {_common.write_results(name, payload)}")
    return payload


if __name__ == "__main__":
    main()
