"""Precision of the verified score on real photos, judged by eye, and its recall of ciFAIR's pairs.

    python -m benchmarks.cifar10_precision --scan DIR                        # the measurement
    python -m benchmarks.cifar10_precision --scan DIR --make-sample FOLDER   # montages to label (done once)
    python -m benchmarks.cifar10_precision --scan DIR --make-sample FOLDER --labels-from TXT   # labels → jsonl
    python -m benchmarks.cifar10_precision --scan DIR --make-misses FOLDER   # montages of the missed ciFAIR pairs

The by-eye categories of the missed pairs are read from ``benchmarks/data/cifar10_misses.json``
(``--misses``): why each was missed and what differs between the test image and its listed partner.

``DIR`` is a finished default scan of CIFAR-10 (``sibscan scan --train …/train --test …/test --out DIR``);
``index_map.json`` and ``ciFAIR_duplicates_cifar10.csv`` are read from ``--meta`` (default
``/work/shared/data/cifar10``), with ``benchmarks.cifar10.read_meta``.

Labelling protocol (fixed before any pair was looked at; also written into the results):

* **Definition of "same"**: sibscan's default for images, ``default_definition('image')`` — "the same
  photograph or picture, possibly resized, cropped, shifted, flipped, re-compressed or with changed
  colours".  Two photographs of the same object or scene taken apart (another pose, another moment)
  are *different*.
* **Population**: each test item's top-1 pair, the train item whose (test, train) pair has the highest
  verified ``score`` among the neighbours table's rows in either direction (test queries train, train
  queries test), 10,000 pairs; the scan found no exact twins.
* **Strata** by that score, between quantiles of the 10,000 top-1 scores: [q90, q95), [q95, q97),
  [q97, q98), [q98, q99), [q99, q99.5), [q99.5, max]; below q90 nothing is sampled and no precision is
  estimated there (no cutoff under q90 flags fewer than 1,000 of 10,000 test items).  A uniform random
  sample without replacement in each stratum (``SAMPLE_SIZES``), seed ``SEED``; 200 pairs in all.
* **Blind labels**: montages show only a pair number and the two images side by side (test left, train
  right), 4x nearest-neighbour, 16 pairs per PNG, pairs in a shuffled order; no score, stratum or
  ciFAIR membership is shown.  Labels: ``same`` / ``different`` / ``unsure``; ``unsure`` counts as not
  same for precision and is reported apart.  Stored as ``benchmarks/data/cifar10_labels.jsonl``.

Estimates: precision of the pairs flagged at a cutoff ``c`` (top-1 pairs with score >= c) is the
design-weighted share of ``same``: in each stratum h the labelled pairs with score >= c estimate the
share p_h among that stratum's N_h(c) flagged pairs; precision = sum N_h(c) p_h / sum N_h(c).  The
95 % interval: each p_h drawn from its Jeffreys posterior Beta(same + ½, not same + ½), combined with
the same weights, 2.5 % and 97.5 % quantiles of ``DRAWS`` draws (seeded), widened to hold the point
estimate where every label in the flagged strata agrees.  ciFAIR recall at ``c``: the
share of the listed pairs whose test item's top-1 pair is the listed train item with score >= c
(``partner_recall``), and the share whose test item is flagged at all (``test_flagged``).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks._common import write_results
from benchmarks.cifar10 import SHARED_META, _find_meta, read_meta

NAME = "cifar10_precision"
LABELS = Path(__file__).resolve().parent / "data" / "cifar10_labels.jsonl"
MISSES = Path(__file__).resolve().parent / "data" / "cifar10_misses.json"
SEED = 31
DRAWS = 20000
#: stratum lower edges as quantiles of the top-1 scores (the last stratum runs to the maximum)
STRATA_Q = (0.90, 0.95, 0.97, 0.98, 0.99, 0.995)
SAMPLE_SIZES = (25, 30, 35, 40, 35, 35)
LABEL_VALUES = ("same", "different", "unsure")
PER_MONTAGE, UPSCALE = 16, 4
# : the planted sets' recall at precision >= 0.95 of the default
# scan's verified score (quoted, not re-run: docs/benchmarks.md)
PLANTED = {
    "images-32px: default scan (effnet top 10 + windows, pixels top 5), imagecorr": {
        "R@P95": 0.822,
        "source": "benchmarks/results/image_scale.json, run scan_views (imagecorr-v2; v3 scores equal)"},
    "images (128 px): the same": {"R@P95": 0.822, "source": "benchmarks/results/image_scale.json, run scan_views"},
    "planted crop sets crops / small32, imagecorr": {"R@P95": "0.06-0.35", "source": "docs/benchmarks.md, issue 14"},
    "planted crop sets crops / small32, imagefuse-v4 (not the default)": {
        "R@P95": "0.88-0.99", "source": "benchmarks/results/quality_crops_14c.json, every run"},
}


def top1_pairs(scan: Path) -> Tuple[List[str], List[str], np.ndarray]:
    """Each test item's top-1 train partner by verified score over both directions' rows.

    Returns (test ids, train ids, scores of shape (n_test,)), sorted by test id.
    """
    from sibscan.store.scandir import ScanDir

    nb = ScanDir(scan).neighbours()
    qs, ns = nb["query_split"], nb["neighbour_split"]
    tt, rt = (qs == "test") & (ns == "train"), (qs == "train") & (ns == "test")
    both = tt | rt
    te = np.where(tt, nb["query_id"], nb["neighbour_id"])[both]
    tr = np.where(tt, nb["neighbour_id"], nb["query_id"])[both]
    sc = np.asarray(nb["score"], np.float64)[both]
    order = np.lexsort((tr, -sc, te))  # per test id: highest score first, ties by train id
    te, tr, sc = te[order], tr[order], sc[order]
    first = np.r_[True, te[1:] != te[:-1]]
    return te[first].tolist(), tr[first].tolist(), sc[first]


def strata_edges(scores: np.ndarray) -> np.ndarray:
    """Lower edges of the strata, then +inf: shape (len(STRATA_Q) + 1,)."""
    return np.r_[np.quantile(scores, STRATA_Q), np.inf]


def stratum_of(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Stratum index of each score (-1 below the lowest edge)."""
    return np.searchsorted(edges, scores, side="right") - 1


def draw_sample(scores: np.ndarray, edges: np.ndarray, sizes: Sequence[int], seed: int) -> np.ndarray:
    """Row indices of the uniform per-stratum sample, in a shuffled (labelling) order."""
    rng = np.random.default_rng(seed)
    h = stratum_of(scores, edges)
    picked = [rng.choice(np.flatnonzero(h == k), size=min(n, int((h == k).sum())), replace=False)
              for k, n in enumerate(sizes)]
    rows = np.concatenate(picked)
    return rows[rng.permutation(len(rows))]


def precision_at(cut: float, scores: np.ndarray, edges: np.ndarray, s_scores: np.ndarray, s_same: np.ndarray,
                 draws: int = DRAWS, seed: int = SEED) -> dict:
    """Design-weighted precision of the pairs with score >= ``cut`` and its 95 % interval.

    ``scores``: every population pair's score, shape (N,); ``s_scores`` / ``s_same``: the labelled
    sample's scores and booleans (same or not), shape (n,).  Only strata at or above the lowest edge
    are estimable: a cutoff below it raises ValueError.
    """
    if cut < edges[0]:
        raise ValueError(f"cut {cut} is below the lowest sampled stratum ({edges[0]})")
    h_pop, h_s = stratum_of(scores, edges), stratum_of(s_scores, edges)
    weights, succ, fail = [], [], []
    for k in range(len(edges) - 1):
        n_flag = int(((h_pop == k) & (scores >= cut)).sum())
        if n_flag == 0:
            continue
        m = (h_s == k) & (s_scores >= cut)
        weights.append(n_flag)
        succ.append(int(s_same[m].sum()))
        fail.append(int((~s_same[m]).sum()))
    if not weights:
        return {"cutoff": cut, "flagged": 0, "precision": None, "low": None, "high": None, "labelled": 0}
    w = np.asarray(weights, np.float64) / sum(weights)
    s, f = np.asarray(succ, np.float64), np.asarray(fail, np.float64)
    n = s + f
    point = float(np.sum(w * np.where(n > 0, s / np.maximum(n, 1), 0.5)))
    rng = np.random.default_rng(seed)
    sims = rng.beta(s + 0.5, f + 0.5, size=(draws, len(w))) @ w
    lo, hi = np.quantile(sims, [0.025, 0.975])
    # Jeffreys' interval misses its own point when every label agrees (all same: upper < 1); widen it to the
    # point there, as Brown, Cai & DasGupta's boundary modification does
    lo, hi = min(lo, point), max(hi, point)
    return {"cutoff": cut, "flagged": int(sum(weights)), "precision": point, "low": float(lo), "high": float(hi),
            "labelled": int(n.sum()), "labelled_same": int(s.sum()),
            "strata_without_labels": int((n == 0).sum())}


def cifair_recall(cut: float, top1: Dict[str, Tuple[str, float]], listed: Sequence[Tuple[str, str]]) -> dict:
    """Shares of the listed (test id, train id) pairs found at ``cut``: partner = top-1 and flagged; test flagged."""
    partner = sum(1 for te, tr in listed if te in top1 and top1[te][0] == tr and top1[te][1] >= cut)
    flagged = sum(1 for te, _ in listed if te in top1 and top1[te][1] >= cut)
    n = len(listed)
    return {"partner_found": partner, "partner_recall": partner / n if n else None,
            "test_flagged": flagged, "test_flagged_share": flagged / n if n else None}


def missed_pairs(cut: float, top1: Dict[str, Tuple[str, float]], listed: Sequence[Tuple[str, str]]) -> List[Tuple[str, str]]:
    """The listed pairs not found at ``cut`` (the complement of ``cifair_recall``'s ``partner_found``)."""
    return [(a, b) for a, b in listed if not (a in top1 and top1[a][0] == b and top1[a][1] >= cut)]


def summarise_misses(cats: dict, result: dict, n_listed: int) -> dict:
    """Counts of the by-eye miss categories (``benchmarks/data/cifar10_misses.json``) for the results."""
    cut = (result.get("lowest_cutoff_precision_ge_095") or {}).get("cutoff")
    if cut is None or abs(cats["cutoff"] - cut) > 1e-6:
        raise SystemExit(f"cifar10_precision: the miss categories were judged at cutoff {cats['cutoff']}, the cutoff "
                         f"now is {cut}; make them again (--make-misses) and re-judge")
    found = result["lowest_cutoff_precision_ge_095"]["partner_found"]
    rows = cats["misses"]
    by: Dict[str, Dict[str, int]] = {"reason": {}, "change": {}, "reason_and_change": {}}
    for r in rows:
        for key, value in (("reason", r["reason"]), ("change", r["change"]),
                           ("reason_and_change", f"{r['reason']} | {r['change']}")):
            by[key][value] = by[key].get(value, 0) + 1
    return {"cutoff": cut, "missed": n_listed - found, "judged": len(rows), "sample": cats["sample"],
            "labeller": cats["labeller"], "counts": by, "pairs": rows}


def _ids(meta: Path):
    index, pairs = read_meta(meta)
    id_of = {s: {i: p.split("/", 1)[1] for i, p in index[s].items()} for s in index}
    orig = {s: {v: k for k, v in id_of[s].items()} for s in id_of}
    listed = [(id_of["test"][te], id_of["train"][tr]) for te, tr, _ in pairs]
    return orig, listed


def make_sample(scan: Path, folder: Path, meta: Path) -> Path:
    """Montages of the sample (pair number, test left, train right) and the key, in ``folder``."""
    from PIL import Image, ImageDraw

    te, tr, sc = top1_pairs(scan)
    edges = strata_edges(sc)
    rows = draw_sample(sc, edges, SAMPLE_SIZES, SEED)
    data = ScanSource.of(scan)
    folder.mkdir(parents=True, exist_ok=True)
    orig, _ = _ids(meta)
    key = [{"pair": p + 1, "test_id": te[r], "train_id": tr[r], "test_index": orig["test"][te[r]],
            "train_index": orig["train"][tr[r]]} for p, r in enumerate(rows.tolist())]
    (folder / "key.json").write_text(json.dumps(key))
    side, pad, label_h = 32 * UPSCALE, 8, 14
    cols = 4
    for start in range(0, len(key), PER_MONTAGE):
        chunk = key[start:start + PER_MONTAGE]
        nrows = (len(chunk) + cols - 1) // cols
        cell_w, cell_h = 2 * side + 3 * pad, side + label_h + pad
        sheet = Image.new("RGB", (cols * cell_w, nrows * cell_h), "white")
        draw = ImageDraw.Draw(sheet)
        for i, entry in enumerate(chunk):
            x, y = (i % cols) * cell_w, (i // cols) * cell_h
            draw.text((x + pad, y + 1), f"#{entry['pair']}", fill="black")
            for j, (split, ident) in enumerate((("test", entry["test_id"]), ("train", entry["train_id"]))):
                img = Image.open(data[split] / ident).convert("RGB").resize((side, side), Image.NEAREST)
                sheet.paste(img, (x + pad + j * (side + pad), y + label_h))
        sheet.save(folder / f"montage_{start // PER_MONTAGE + 1:02d}.png")
    return folder


def _paste_row(sheet, draw, x: int, y: int, title: str, paths: Sequence[Path], side: int, pad: int,
               label_h: int) -> None:
    from PIL import Image

    draw.text((x + pad, y + 1), title, fill="black")
    for j, path in enumerate(paths):
        img = Image.open(path).convert("RGB").resize((side, side), Image.NEAREST)
        sheet.paste(img, (x + pad + j * (side + pad), y + label_h))


def make_misses(scan: Path, folder: Path, meta: Path, cut: float, limit: int = 80, take: int = 60) -> Path:
    """Montages of the ciFAIR pairs missed at ``cut`` (all when at most ``limit``, else ``take`` drawn with SEED):
    test | listed train | the test item's top-1 train item, and the key."""
    from PIL import Image, ImageDraw

    te, tr, sc = top1_pairs(scan)
    top1 = {a: (b, float(s)) for a, b, s in zip(te, tr, sc)}
    orig, listed = _ids(meta)
    missed = missed_pairs(cut, top1, listed)
    if len(missed) > limit:
        rng = np.random.default_rng(SEED)
        missed = [missed[i] for i in sorted(rng.choice(len(missed), size=take, replace=False).tolist())]
    data = ScanSource.of(scan)
    folder.mkdir(parents=True, exist_ok=True)
    key = [{"miss": n + 1, "test_index": orig["test"][a], "train_index": orig["train"][b], "test_id": a,
            "train_id": b, "top1_train_id": top1.get(a, (None, None))[0], "top1_score": top1.get(a, (None, None))[1]}
           for n, (a, b) in enumerate(missed)]
    (folder / "misses_key.json").write_text(json.dumps({"cutoff": cut, "misses": key}))
    side, pad, label_h, cols = 32 * UPSCALE, 8, 14, 3
    for start in range(0, len(key), 12):
        chunk = key[start:start + 12]
        cell_w, cell_h = 3 * side + 4 * pad, side + label_h + pad
        sheet = Image.new("RGB", (cols * cell_w, ((len(chunk) + cols - 1) // cols) * cell_h), "white")
        draw = ImageDraw.Draw(sheet)
        for i, e in enumerate(chunk):
            paths = [data["test"] / e["test_id"], data["train"] / e["train_id"]]
            if e["top1_train_id"] is not None:
                paths.append(data["train"] / e["top1_train_id"])
            _paste_row(sheet, draw, (i % cols) * cell_w, (i // cols) * cell_h, f"#{e['miss']}", paths, side, pad,
                       label_h)
        sheet.save(folder / f"misses_{start // 12 + 1:02d}.png")
    return folder


class ScanSource:
    """The train and test folders a scan read, from its manifest."""

    @staticmethod
    def of(scan: Path) -> Dict[str, Path]:
        manifest = json.loads((scan / "manifest.json").read_text())
        return {s: Path(manifest["inputs"][s]["source"]) for s in ("train", "test")}


def write_labels(folder: Path, txt: Path, out: Path = LABELS) -> Path:
    """Join the by-eye labels (``TXT``: lines "pair label") with the key into the labels jsonl."""
    from sibscan.calibration.flow import default_definition

    key = {e["pair"]: e for e in json.loads((folder / "key.json").read_text())}
    labels = {}
    for ln, line in enumerate(txt.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        num, lab = (parts + ["", ""])[:2]
        if lab not in LABEL_VALUES or not num.isdigit() or int(num) not in key:
            raise SystemExit(f"cifar10_precision: {txt} line {ln}: '{line}' is not '<pair 1..{len(key)}> "
                             f"<{'|'.join(LABEL_VALUES)}>'")
        labels[int(num)] = lab
    missing = sorted(set(key) - set(labels))
    if missing:
        raise SystemExit(f"cifar10_precision: {txt} has no label for pairs {missing[:10]}; label every pair")
    definition = default_definition("image")
    with open(out, "w") as fh:
        for p in sorted(key):
            e = key[p]
            fh.write(json.dumps({"pair": p, "test_index": e["test_index"], "train_index": e["train_index"],
                                 "test_file": f"test/{e['test_id']}", "train_file": f"train/{e['train_id']}",
                                 "label": labels[p], "labeller": "agent, by eye", "definition": definition,
                                 "seed": SEED}) + "\n")
    return out


def read_labels(path: Path) -> List[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for i, r in enumerate(rows, 1):
        if r.get("label") not in LABEL_VALUES:
            raise SystemExit(f"cifar10_precision: {path} line {i}: label "
                             f"{r.get('label')!r} is not one of {LABEL_VALUES}")
    return rows


def cutoff_grid(scores: np.ndarray, edges: np.ndarray) -> List[float]:
    """Cutoffs: every stratum edge and the top-1 score quantiles between q90 and q99.9 in steps of 0.25 %."""
    # one probability per cutoff (rounded, so 0.97 from the steps and from STRATA_Q is one cutoff, not two)
    probs = np.unique(np.round(np.r_[STRATA_Q, np.arange(0.90, 0.99901, 0.0025)], 6))
    return [float(c) for c in np.unique(np.quantile(scores, probs)) if c >= edges[0]]


def evaluate(te: Sequence[str], tr: Sequence[str], sc: np.ndarray, labels: Sequence[dict],
             listed: Sequence[Tuple[str, str]]) -> dict:
    """The measurement on a population of top-1 pairs (test ids, train ids, scores) and labelled pairs.

    ``labels`` rows carry ``test_file`` / ``train_file`` ("test/<id>", "train/<id>") and ``label``.
    A labelled pair that is not its test item's top-1 pair in the population is an error.
    """
    top1 = {a: (b, float(s)) for a, b, s in zip(te, tr, sc)}
    edges = strata_edges(sc)
    s_scores, s_same, s_unsure = [], [], []
    for r in labels:
        a, b = r["test_file"].split("/", 1)[1], r["train_file"].split("/", 1)[1]
        if a not in top1 or top1[a][0] != b:
            raise SystemExit(f"cifar10_precision: labelled pair {r['test_file']} / {r['train_file']} is not the "
                             "test item's top-1 pair in this scan; label a sample of this scan (--make-sample)")
        s_scores.append(top1[a][1])
        s_same.append(r["label"] == "same")
        s_unsure.append(r["label"] == "unsure")
    s_scores_a, s_same_a = np.asarray(s_scores), np.asarray(s_same, bool)
    h_s = stratum_of(s_scores_a, edges)
    h_pop = stratum_of(sc, edges)
    strata = [{"low": float(edges[k]), "high": float(edges[k + 1]) if np.isfinite(edges[k + 1]) else None,
               "population": int((h_pop == k).sum()), "labelled": int((h_s == k).sum()),
               "same": int(s_same_a[h_s == k].sum()), "unsure": int(np.asarray(s_unsure)[h_s == k].sum())}
              for k in range(len(edges) - 1)]
    rows = []
    for c in cutoff_grid(sc, edges):
        p = precision_at(c, sc, edges, s_scores_a, s_same_a)
        p["precision_if_unsure_same"] = precision_at(c, sc, edges, s_scores_a, s_same_a | np.asarray(s_unsure, bool),
                                                     draws=1)["precision"]
        rows.append({**p, **cifair_recall(c, top1, listed)})
    best_point = next((r for r in rows if r["precision"] is not None and r["precision"] >= 0.95), None)
    best_low = next((r for r in rows if r["low"] is not None and r["low"] >= 0.95), None)
    return {"n_test": len(te), "edges": [float(e) for e in edges[:-1]], "strata": strata, "curve": rows,
            "lowest_cutoff_precision_ge_095": best_point, "lowest_cutoff_lower_bound_ge_095": best_low,
            "labels": {"n": len(labels), "same": int(s_same_a.sum()), "unsure": int(sum(s_unsure)),
                       "different": int(len(labels) - s_same_a.sum() - sum(s_unsure))}}


def main(argv: Optional[Sequence[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cifar10_precision", description=__doc__.splitlines()[0])
    ap.add_argument("--scan", required=True, help="a finished default scan of CIFAR-10")
    ap.add_argument("--meta", default=None, help="folder with index_map.json and the "
                                                 f"ciFAIR list (default {SHARED_META})")
    ap.add_argument("--labels", default=str(LABELS), help="the by-eye labels (jsonl)")
    ap.add_argument("--make-sample", default=None, help="write the blind montages and key to this folder and stop")
    ap.add_argument("--labels-from", default=None, help="with --make-sample: 'pair label' lines to write --labels from")
    ap.add_argument("--make-misses", default=None, help="write montages of the ciFAIR pairs missed at the "
                    "precision >= 0.95 cutoff to this folder and stop")
    ap.add_argument("--misses", default=str(MISSES), help="json of by-eye categories of the missed "
                                                          "ciFAIR pairs (test index → category)")
    args = ap.parse_args(argv)
    scan = Path(args.scan)
    if not (scan / "manifest.json").is_file():
        raise SystemExit(f"cifar10_precision: {scan} is not a scan folder (no manifest.json); pass --scan DIR")
    meta = _find_meta(args.meta, Path(SHARED_META))
    if args.make_sample:
        folder = Path(args.make_sample)
        if args.labels_from:
            print(f"wrote {write_labels(folder, Path(args.labels_from), Path(args.labels))}")
        else:
            print(f"wrote {make_sample(scan, folder, meta)}")
        return {}
    if not Path(args.labels).is_file():
        raise SystemExit(f"cifar10_precision: no labels at {args.labels}; label a sample (--make-sample) first")
    orig, listed = _ids(meta)
    labels = read_labels(Path(args.labels))
    te, tr, sc = top1_pairs(scan)
    result = evaluate(te, tr, sc, labels, listed)
    listed_set = set(listed)
    in_list = [(r["test_file"].split("/", 1)[1], r["train_file"].split("/", 1)[1]) in listed_set for r in labels]
    listed_tests = {a for a, _ in listed}
    result["sampled_same_not_listed_but_test_listed_with_another_train_item"] = sum(
        1 for r, y in zip(labels, in_list) if not y and r["label"] == "same"
        and r["test_file"].split("/", 1)[1] in listed_tests)
    result["sampled_same_not_in_cifair"] = [
        {"test_index": r["test_index"], "train_index": r["train_index"]} for r in labels
        if r["label"] == "same"
        and (r["test_file"].split("/", 1)[1], r["train_file"].split("/", 1)[1]) not in listed_set]
    result["sampled_by_cifair_and_label"] = {
        f"{'listed' if x else 'not listed'}, {v}": sum(1 for r, y in zip(labels, in_list) if y == x and r["label"] == v)
        for x in (True, False) for v in LABEL_VALUES}
    if args.make_misses:
        cut = (result["lowest_cutoff_precision_ge_095"] or {}).get("cutoff")
        if cut is None:
            raise SystemExit("cifar10_precision: no cutoff reaches precision 0.95; nothing to call missed")
        print(f"wrote {make_misses(scan, Path(args.make_misses), meta, cut)}")
        return result
    if Path(args.misses).is_file():
        result["missed_at_cutoff"] = summarise_misses(json.loads(Path(args.misses).read_text()), result, len(listed))
    result["planted"] = PLANTED
    from sibscan.calibration.flow import default_definition

    result["protocol"] = {"definition": default_definition("image"), "seed": SEED, "strata_quantiles": list(STRATA_Q),
                          "sample_sizes": list(SAMPLE_SIZES), "labeller": "agent, by eye",
                          "unsure": "counted as not same",
                          "interval": f"per-stratum Jeffreys Beta posteriors combined by weight, {DRAWS} draws",
                          "population": "each test item's top-1 (test, train) pair "
                                        "by verified score, both directions' rows"}
    result["scan"] = {"dir": str(scan), **{k: json.loads((scan / "manifest.json").read_text()).get(k)
                                           for k in ("created", "encoder", "verifier", "views")}}
    path = write_results(NAME, result)
    for key in ("lowest_cutoff_precision_ge_095", "lowest_cutoff_lower_bound_ge_095"):
        r = result[key]
        print(f"{key}: " + ("none on the grid" if r is None else
              f"cutoff {r['cutoff']:.4f}, precision {r['precision']:.3f} [{r['low']:.3f}, {r['high']:.3f}], "
              f"flagged {r['flagged']}, ciFAIR partner recall {r['partner_found']}/{len(listed)} "
              f"({r['partner_recall']:.3f}), test flagged {r['test_flagged']}/{len(listed)}"))
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
