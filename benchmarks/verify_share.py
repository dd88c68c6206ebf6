"""Verification's share of a whole image scan at benchmark-like proportions (issue 14's time target).

    python -m benchmarks.verify_share                    # 3,000 train x 600 test 32-px images
    python -m benchmarks.verify_share --quick            # tiny, for the tests
    python -m benchmarks.verify_share --configs default,imagefuse --images 3600,14400   # two sizes, one file
    python -m benchmarks.verify_share --configs default --option k=5 --option k_view=3   # other scan options
    python -m benchmarks.verify_share --device cuda --configs default,imagefuse --name verify_share_cuda  # on a GPU

``benchmarks.quality`` measures the share on about as many train as test images; a real benchmark
(CIFAR-like, 50k / 10k) embeds about six train images per test item, and a scan verifies more than
the test items' candidates: the train→test and test→test directions (``--k-reverse`` each) and a
verified random-pair baseline.  Here a CIFAR-sized case (:func:`benchmarks.scan_e2e.write_image32_case`:
five sixths train, random crops of the shipped photographs and placed digits, 5 % of test planted) is
scanned by :func:`sibscan.scan.run_scan`, exactly as the CLI does, once per ``--configs`` entry:

* ``default`` — the default verifier (``imagecorr``) on every candidate of the union of views;
* ``imagematch`` — ``--verifier imagematch`` on the same candidates;
* ``cascade`` — ``--cascade --verifier imagematch``;
* ``imagefuse`` — ``--verifier imagefuse`` (the verifier that meets the quality targets) on every candidate.

``--option KEY=VALUE`` (repeatable) sets a scan option (a :class:`sibscan.config.ScanConfig` field:
``k``, ``k_view``, ``verified_baseline_pairs`` ...) for every configuration: what fewer candidates or
random pairs would save, counted in the same pairs.

Reported per configuration, from the scan's own clock (``manifest["timings"]``): embedding
(``encode``), the extra views, verification (``verify``: the cascade's windows scoring included) and
the baseline (it verifies random pairs), the pairs verified (rows of the neighbours table with a
verified score, plus the baseline's verified random pairs), the pairs handed to the verifier (the
manifest's ``pairs_verified``: each pair once, see :mod:`sibscan.stages.pairverify`; a train→test pair counts
only when no test→train row holds it), and the shares verify / (verify +
encode) and (verify + baseline) / total.  Every scan embeds its own items (its own cache).
Results: ``benchmarks/results/verify_share.json``, one run per size and configurations under ``runs``
(key ``CONFIGS_IMAGES``, e.g. ``default+imagefuse_3600``, or ``--key``), each run replacing only its own
key (:func:`benchmarks._common.write_run`).
"""
from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from benchmarks._common import comma_list, keyed_runs, print_table, write_run

#: scan options of each configuration
CONFIGS: Dict[str, dict] = {
    "default": {},
    "imagematch": {"verifier": "imagematch"},
    "cascade": {"verifier": "imagematch", "cascade": True},
    "imagefuse": {"verifier": "imagefuse"},
}


def verified_pairs(scan_dir: Path) -> Dict[str, int]:
    """Rows with a verified score per direction of a finished scan, and the baseline's verified pairs."""
    from sibscan.store.scandir import ScanDir

    sd = ScanDir(scan_dir)
    nb = sd.neighbours()
    out: Dict[str, int] = {}
    ok = np.isfinite(np.asarray(nb["verified"], np.float64))
    for qs, ns in sorted(set(zip(nb["query_split"].tolist(), nb["neighbour_split"].tolist()))):
        out[f"{qs}>{ns}"] = int((ok & nb.mask(qs, ns)).sum())
    base = sd.baseline() or {}
    out["baseline"] = int(base.get("n_pairs", 0)) if base.get("score") == "verified" else 0
    return out


def run_config(name: str, case: dict, out: Path, extra: dict, device: str = "cpu") -> dict:
    from sibscan.config import ScanConfig
    from sibscan.scan import run_scan

    opts = {k: v for k, v in case.items() if k in ("train", "test")}
    cfg = ScanConfig(out=str(out), device=device, progress=False, **opts).merged({**CONFIGS[name], **extra})
    load_before = os.getloadavg()
    t = time.perf_counter()
    man = run_scan(cfg).manifest
    wall = time.perf_counter() - t
    tm = man["timings"]
    pairs = verified_pairs(out)
    verify, encode, base = tm.get("verify", 0.0), tm.get("encode", 0.0), tm.get("baseline", 0.0)
    return {"config": name, "device": device, "options": {**CONFIGS[name], **extra},
            "verifier": (man.get("verifier") or {}).get("identity"),
            "encoder": man["encoder"]["identity"], "n_train": man["inputs"]["train"]["n_items"],
            "n_test": man["inputs"]["test"]["n_items"], "seconds": wall, "timings": tm, "pairs_verified": pairs,
            # a scan made before the manifest counted them (each row then went to the verifier) says null
            "pairs_to_verifier": {**man["pairs_verified"], "baseline": pairs["baseline"]} if "pairs_verified" in man
            else None, "share_verify_of_verify_and_encode": verify / (verify + encode) if verify + encode else None,
            "share_verify_and_baseline_of_total": (verify + base) / tm["total"] if tm.get("total") else None,
            "load_average_before": load_before, "load_average_after": os.getloadavg()}


#: scan options the benchmark sets itself: where the scan writes and reads, on what device, and the
#: options that define each configuration (CONFIGS); an --option for one would change what is measured
#: (verify=false skips the step it times; index and precomputed features skip the search or the encoding)
OWNED = ("calibration", "cache_dir", "cascade", "cutoff", "device", "features_id", "force", "index", "out",
         "progress", "test", "test_features", "train", "train_features", "verifier", "verify")


def _empty(value) -> bool:
    """No value: null, NaN or an infinity, blank text, an empty list or mapping (each would reach the scan
    as "not given" or fail inside it, not as the option asked for)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, (list, dict)) and not value


def _option(text: str) -> tuple:
    """``--option KEY=VALUE``: the value as JSON where it parses (numbers, true/false), else as text."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--option takes KEY=VALUE (a scan option), got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except ValueError:
        return key.strip(), value


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.verify_share", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--images", type=comma_list(int), default=None,
                    help="images in all, five sixths train (default 3600; --quick 60); a comma list runs "
                         "each size, all in one NAME.json")
    ap.add_argument("--configs", type=comma_list(str, tuple(CONFIGS)), default="default,cascade",
                    help=f"comma list of {', '.join(CONFIGS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where the scans embed, search and verify (default cpu; cuda: the GPU check)")
    ap.add_argument("--name", default="verify_share", help="results file stem (benchmarks/results/NAME.json)")
    ap.add_argument("--key", default=None, help="the run's key in the results file, for one --images size "
                                                "(default CONFIGS_IMAGES, e.g. default+cascade_3600)")
    ap.add_argument("--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                    help="a scan option for every configuration (repeatable), e.g. k=5")
    args = ap.parse_args(argv)
    wanted = args.configs
    if args.device == "cuda":  # refused before any image is written, as the scan would refuse it
        from sibscan.device import resolve_device
        from sibscan.errors import SibscanError

        try:
            resolve_device("cuda")
        except SibscanError as exc:
            ap.error(str(exc))
    sizes = args.images if args.images is not None else [60 if args.quick else 3600]
    small = [n for n in sizes if n < 12]
    if small:
        ap.error(f"--images {small[0]}: give at least 12 images")
    if args.key is not None and len(sizes) > 1:
        ap.error(f"--key names one run; --images gives {len(sizes)} sizes (leave --key out: one key a size)")
    extra = {"verified_baseline_pairs": 200, "baseline_pairs": 5000} if args.quick else {}
    from sibscan.config import OWNER

    unknown = sorted({k for k, _ in args.option} - set(OWNER))
    if unknown:
        ap.error(f"unknown scan option(s) {', '.join(unknown)}; valid: {', '.join(sorted(OWNER))}")
    owned = sorted({k for k, _ in args.option} & set(OWNED))
    if owned:
        ap.error(f"--option {', '.join(owned)}: set by the benchmark itself (where it writes and reads, or what "
                 f"defines each configuration: {', '.join(OWNED)}); choose configurations with --configs")
    empty = sorted(k for k, v in args.option if _empty(v))
    if empty:
        ap.error(f"--option {', '.join(empty)}: give a value (null, NaN, infinities, blank text and empty lists "
                 "or mappings would reach the scan as no value)")
    extra.update(dict(args.option))
    name = args.name + ("_quick" if args.quick else "")
    keyed_runs(name)  # a file of another form is refused before any image is written
    done: Dict[str, dict] = {}
    for n_images in sizes:
        key = args.key or "+".join(wanted) + f"_{n_images}" + "".join(f"_{k}={v}" for k, v in args.option)
        done[key] = _run_size(args, n_images, wanted, extra, name, key)
        print(f"wrote {write_run(name, key, done[key])}, run {key}")
    return done


def _run_size(args: argparse.Namespace, n_images: int, wanted: List[str], extra: dict, name: str, key: str) -> dict:
    """Every configuration on the case of ``n_images``: this run's payload (written under ``key`` after every
    configuration, so a stopped run keeps the finished ones)."""
    from benchmarks.scan_e2e import write_image32_case

    results: List[dict] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sibscan-share-") as tmp:
        case = write_image32_case(Path(tmp) / "data", n_images, seed=args.seed)
        for config in wanted:
            print(f"scanning with {config}: {case['n_train']} train, {case['n_test']} test ...", flush=True)
            results.append(run_config(config, case, Path(tmp) / f"scan-{config}", extra, args.device))
            r = results[-1]
            tm = r["timings"]
            print_table([{"config": config, "scan s": r["seconds"], "encode s": tm.get("encode", 0.0),
                          "views s": tm.get("views", 0.0), "verify s": tm.get("verify", 0.0),
                          "baseline s": tm.get("baseline", 0.0), "rows verified": sum(r["pairs_verified"].values()),
                          "pairs to verifier": sum(r["pairs_to_verifier"].values()) if r["pairs_to_verifier"]
                          else "not counted", "verify/(verify+encode)": f"{r['share_verify_of_verify_and_encode']:.0%}",
                          "(verify+baseline)/total": f"{r['share_verify_and_baseline_of_total']:.0%}",
                          "load": f"{r['load_average_before'][0]:.1f}-{r['load_average_after'][0]:.1f}"}])
            write_run(name, key, {"quick": args.quick, "seed": args.seed, "images": n_images, "device": args.device,
                                  "results": results, "complete": False})
    return {"quick": args.quick, "seed": args.seed, "images": n_images, "device": args.device, "results": results,
            "seconds": time.perf_counter() - t0, "complete": True}


if __name__ == "__main__":
    main()
