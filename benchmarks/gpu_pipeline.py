"""Image pipeline efficiency: end-to-end images/s from JPEG files against the model's own images/s.

    python -m benchmarks.gpu_pipeline --device cuda            # the GPU check (benchmarks/gpu_check.sh)
    python -m benchmarks.gpu_pipeline --device cpu --quick     # tiny, on the CPU (the script's dry run)

For effnet (EfficientNet-Lite0, shipped weights) and CLIP ViT-B/32 (random weights: the speed does
not depend on them), both at 224 px, in one run on the same device:

* *model-only*: a bare ``model(x)`` loop on float inputs already on the device at the input size,
  under the encoder's precision (bf16 autocast on CUDA) — the model's own images/s;
* *end-to-end*: ``encoder.encode(paths)`` on 224 x 224 JPEG files (quality 90) cut from
  scikit-image's sample photos — reading, decoding (on the GPU with ``torchvision.io.decode_jpeg``
  when on CUDA), resizing, normalising, the model and the copy back;
* their ratio (target on a GPU: >= 0.7 for CLIP ViT-B/32).

Results: ``benchmarks/results/gpu_pipeline.json`` (``gpu_pipeline_cpu_quick.json`` etc. for other
runs; ``SIBSCAN_BENCH_RESULTS`` redirects the folder).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from benchmarks import _common

#: end-to-end / model-only for CLIP ViT-B/32 on a GPU (issue 16)
TARGET_RATIO = 0.7
SIZE = 224


def jpeg_files(folder: Path, n: int, size: int = SIZE) -> List[str]:
    """``n`` distinct ``size`` x ``size`` JPEGs (quality 90): shifted crops of four sample photos."""
    from PIL import Image
    from skimage import data

    photos = [Image.fromarray(getattr(data, k)()).convert("RGB") for k in ("chelsea", "astronaut", "coffee", "rocket")]
    paths = []
    for i in range(n):
        im = photos[i % len(photos)]
        off = (i // len(photos)) % 97
        side = min(im.size) - 100
        p = folder / f"{i:06d}.jpg"
        im.crop((off, off, off + side, off + side)).resize((size, size), Image.BICUBIC).save(p, quality=90)
        paths.append(str(p))
    return paths


def model_only_rate(enc, n: int, batch: int, repeat: int) -> float:
    """Images/s of a bare forward loop on float inputs already on the device (the encoder's precision)."""
    import torch

    h, w = enc.input_size
    x = torch.randn(min(n, batch), 3, h, w, device=enc.device)
    steps = max(1, n // len(x))

    def run():
        with torch.inference_mode(), enc.autocast():
            for _ in range(steps):
                enc._forward(x)
            if enc.on_cuda:
                torch.cuda.synchronize()

    run()  # warm-up: kernels, allocator, cuDNN autotuning
    return steps * len(x) / _common.best_time(run, repeat)


def end_to_end_rate(enc, paths: Sequence[str], batch: int, repeat: int) -> float:
    """Images/s of ``enc.encode(paths)`` (the result back on the host)."""
    enc.encode(list(paths[: 2 * batch]), batch_size=batch)  # warm-up: decoder, runtime, buffers
    return len(paths) / _common.best_time(lambda: enc.encode(list(paths), batch_size=batch), repeat)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu_pipeline", description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda | cpu | auto")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (the dry run and the tests)")
    ap.add_argument("--images", type=int, default=None, help="JPEG files for the end-to-end rate")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--encoders", default="effnet,clip", help="comma list of effnet, clip")
    args = ap.parse_args(argv)

    from sibscan.device import resolve_device
    from sibscan.encoders import get_encoder

    device = resolve_device(args.device)
    cuda = device.startswith("cuda")
    wanted = [e.strip() for e in args.encoders.split(",") if e.strip()]
    bad = set(wanted) - {"effnet", "clip"}
    if bad:
        ap.error(f"unknown encoder(s) {', '.join(sorted(bad))}; available: effnet, clip")
    if args.quick:
        n, batch, repeat = 8, args.batch_size or 4, 1
    elif cuda:
        n, batch, repeat = 8192, args.batch_size or 512, 3
    else:
        n, batch, repeat = 128, args.batch_size or 32, 2
    n, repeat = args.images or n, args.repeat or repeat
    t0, load_before = time.perf_counter(), os.getloadavg()
    rows: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="sibscan-pipeline-") as tmp:
        paths = jpeg_files(Path(tmp), n)
        for name in wanted:
            # runtime="torch": on the CPU the model-only loop is PyTorch too, so the ratio is the pipeline's
            if name == "clip":
                label = "clip ViT-B-32 (random init)"
                enc = get_encoder("clip", model="ViT-B-32", pretrained="none", device=device, batch_size=batch,
                                  runtime="torch")
            else:
                label = "effnet"
                enc = get_encoder("effnet", device=device, batch_size=batch, image_size=SIZE, runtime="torch")
            model = model_only_rate(enc, n, batch, repeat)
            e2e = end_to_end_rate(enc, paths, batch, repeat)
            row = {"encoder": label, "device": device, "input": f"{SIZE}x{SIZE} JPEG q90", "images": n,
                   "batch": batch, "model_only_images_per_s": model, "end_to_end_images_per_s": e2e,
                   "ratio": e2e / model}
            if name == "clip":
                row["target_ratio"] = TARGET_RATIO
            rows.append(row)
    _common.print_table(rows, ["encoder", "device", "images", "batch", "model_only_images_per_s",
                               "end_to_end_images_per_s", "ratio"])
    payload = {"args": vars(args), "device": device, "rows": rows, "seconds": time.perf_counter() - t0,
               "load_average_before": load_before, "load_average_after": os.getloadavg()}
    clip = [r for r in rows if r["encoder"].startswith("clip")]
    if cuda and clip:
        payload["clip_meets_target"] = bool(clip[0]["ratio"] >= TARGET_RATIO)
    name = "gpu_pipeline" + ("" if cuda else "_cpu") + ("_quick" if args.quick else "")
    print(f"wrote {_common.write_results(name, payload)}")
    return payload


if __name__ == "__main__":
    main()
