"""The windows view's cost as the splits grow, and the cascade's windows scoring of candidate pairs.

    python -m benchmarks.windows_speed                   # 500 x 2,500 and 2,000 x 10,000 (a few minutes on 2 cores)
    python -m benchmarks.windows_speed --quick           # tiny, for the tests

The windows view (:func:`sibscan.stages.views.windows_topk_gray`) searches each direction through a faiss
index of the other split's windows (:mod:`sibscan.search.windows`; ``--kind`` flat, ivf or auto: flat up
to ``FLAT_MAX_VECTORS`` windows), so its time grows like a search (it compared every pair before);
the cascade (:func:`sibscan.stages.views.pair_window_scores_gray`) scores only ``--pairs-per-item``
candidate pairs per test item.  Both run on 64-px grey images made here (smooth random images:
decoding is not the view's search cost and is left out).  As a reference measured in the same run,
the scan's default image encoder (effnet, CPU) embeds ``--encode-images`` random 96-px PNG files
(decoding included, as in a scan); its images per second are reported beside the view's seconds (the effnet time for n
images is not projected).  Results: ``benchmarks/results/windows_speed.json``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from benchmarks._common import print_table, write_results


def _gray(n: int, rng: np.random.Generator) -> np.ndarray:
    """Smooth random 64 x 64 grey images (8 x 8 blocks plus noise), uint8: shape (n, 64, 64)."""
    x = rng.normal(size=(n, 8, 8)).repeat(8, 1).repeat(8, 2) + 0.2 * rng.normal(size=(n, 64, 64))
    return np.clip(128 + 40 * x, 0, 255).astype(np.uint8)


def _encode_rate(n: int, rng: np.random.Generator) -> Optional[float]:
    """effnet images per second on ``n`` random 96-px RGB PNG files, decoding included as in a scan
    (None when effnet cannot run here)."""
    from PIL import Image

    from sibscan.encoders import encoder_class, get_encoder

    ok, _ = encoder_class("effnet").available()
    if not ok or n <= 0:
        return None
    enc = get_encoder("effnet", device="cpu")
    with tempfile.TemporaryDirectory(prefix="sibscan-wspeed-") as tmp:
        paths = []
        for i in range(n):
            paths.append(str(Path(tmp) / f"{i:05d}.png"))
            Image.fromarray(np.clip(128 + 40 * rng.normal(size=(96, 96, 3)), 0, 255).astype(np.uint8)).save(paths[-1])
        enc.encode(paths[:8])  # load and warm
        t = time.perf_counter()
        enc.encode(paths)
        return n / (time.perf_counter() - t)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    from sibscan.kernels.windows import VIEW_CELLS, VIEW_SCALES, window_boxes
    from sibscan.stages.views import pair_window_scores_gray
    from sibscan.search.windows import windows_view_search

    ap = argparse.ArgumentParser(prog="python -m benchmarks.windows_speed", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--sizes", default=None, help="comma list of TESTxTRAIN (default 500x2500,2000x10000)")
    ap.add_argument("--k", type=int, default=5, help="the view's top-k (the scan's --k-view)")
    ap.add_argument("--pairs-per-item", type=int, default=13, help="candidate pairs per test item the cascade scores "
                    "(13: the union of views on the planted crop sets)")
    ap.add_argument("--encode-images", type=int, default=None, help="images effnet embeds for the reference rate")
    ap.add_argument("--kind", default="auto", choices=("auto", "flat", "ivf"), help="the view's index (default auto)")
    ap.add_argument("--name", default="windows_speed", help="results file stem")
    args = ap.parse_args(argv)
    sizes = args.sizes or ("20x60" if args.quick else "500x2500,2000x10000")
    shapes = [tuple(int(v) for v in s.lower().split("x")) for s in sizes.split(",") if s.strip()]
    n_encode = args.encode_images if args.encode_images is not None else (0 if args.quick else 256)
    rng = np.random.default_rng(0)
    rows = []
    for n_test, n_train in shapes:
        train, test = _gray(n_train, rng), _gray(n_test, rng)
        load = os.getloadavg()[0]  # the machine is shared: the 1-minute load as the size starts
        t, c = time.perf_counter(), time.process_time()
        windows_view_search(train, test, args.k, window_boxes(VIEW_SCALES), VIEW_CELLS, kind=args.kind, progress=False)
        view, view_cpu = time.perf_counter() - t, time.process_time() - c
        qi = np.repeat(np.arange(n_test), args.pairs_per_item)
        ni = rng.integers(0, n_train, len(qi))
        t = time.perf_counter()
        pair_window_scores_gray(test, qi, train, ni)
        cascade = time.perf_counter() - t
        rows.append({"n_test": n_test, "n_train": n_train, "kind": args.kind, "view_seconds": view,
                     "view_ns_per_pair": view / (n_test * n_train) * 1e9,
                     "view_cpu_seconds": view_cpu, "load_1min": load, "cascade_pairs": len(qi),
                     "cascade_seconds": cascade, "cascade_us_per_pair": cascade / len(qi) * 1e6})
        print_table([rows[-1]])
        # written after every size, so a run stopped at a larger size keeps the smaller ones
        write_results(args.name + ("_quick" if args.quick else ""), {"quick": args.quick, "k": args.k,
                      "pairs_per_item": args.pairs_per_item, "rows": rows, "complete": False})
    rate = _encode_rate(n_encode, rng)
    if rate:
        print(f"reference, same run: effnet (CPU, 96 px) embeds {rate:.1f} images/s ({n_encode} images)")
    payload = {"quick": args.quick, "k": args.k, "pairs_per_item": args.pairs_per_item, "rows": rows,
               "effnet_images_per_s": rate, "effnet_images": n_encode if rate else 0, "complete": True}
    path = write_results(args.name + ("_quick" if args.quick else ""), payload)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
