"""The whole calibration of one scan: baseline, draw, labels, fit, ``cutoff.json``."""
from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Callable, List, Optional, TextIO

import numpy as np

from sibscan.errors import CompatibilityError, SibscanError
from sibscan.scandir import ScanDir
from sibscan.stats import check_int

from .baseline import baseline_warning, expected_chance_siblings, format_expected, scan_baseline
from .fit import design_estimates, fit
from .labels import Identity, LabelStore
from .record import LABELS_FILE, Calibration, write_calibration
from .sampling import Draw, Population, extend_draw, make_draw
from .session import LabelSession

__all__ = ["calibrate", "describe", "UIS", "DRAW_FILE"]

log = logging.getLogger("sibscan.calibration")

UIS = ("web", "terminal", "none")
DRAW_FILE = "draw.json"


def _identity(manifest: dict) -> Identity:
    enc = (manifest.get("encoder") or {}).get("identity") or ""
    ver = (manifest.get("verifier") or {}).get("identity") if manifest.get("verifier") else None
    return Identity(str(manifest.get("dataset_fingerprint") or ""), enc, ver)


def _verifier_of(manifest: dict):
    """The scan's verifier rebuilt from its manifest, or None when it cannot be (not installed, other identity)."""
    from sibscan.verify import get_verifier, verifier_class

    want = manifest.get("verifier") or {}
    try:
        cls = verifier_class(want.get("name", ""))
    except SibscanError:
        return None
    if not cls.available()[0]:
        return None
    verifier = get_verifier(cls.name)
    return verifier if verifier.identity == want.get("identity") else None


def _baseline(sd: ScanDir, manifest: dict, identity: Identity) -> dict:
    """The scan's baseline.json; when the scan stopped before writing it, the same baseline computed by the
    same function the scan calls (and written there), or, where the scan's verifier cannot be rebuilt,
    the embedding-similarity baseline for this calibration only (with a warning)."""
    baseline = sd.baseline()
    if baseline is not None:
        if baseline.get("encoder_identity") not in ("", None, identity.encoder_identity):
            raise CompatibilityError(f"{sd.baseline_path} was made with encoder {baseline['encoder_identity']!r}, the scan "
                                     f"with {identity.encoder_identity!r}; re-run 'sibscan scan' to recompute it")
        return baseline
    verifier = _verifier_of(manifest) if identity.verifier_identity is not None else None
    as_scan = verifier is not None or identity.verifier_identity is None
    if not as_scan:
        warnings.warn(f"{sd.path} has no baseline.json; computing the embedding-similarity baseline "
                      "(the verified baseline needs 'sibscan scan' to finish)", stacklevel=3)
    params = manifest.get("parameters") or {}
    splits = {s: sd.items(s) for s in ("train", "test")}
    doc_index = None
    if params.get("chunk_words"):  # the scan embedded chunks: its documents' rows, cut again the same way
        from sibscan.loaders.text import chunk_items

        doc_index = {s: chunk_items(items, params["chunk_words"], params.get("chunk_stride")).extra["doc_index"]
                     for s, items in splits.items()}
    fps = {s: sd.fingerprints(s) for s in splits}
    baseline = scan_baseline(
        {s: sd.embeddings(s) for s in splits}, n_pairs=params.get("baseline_pairs", 100_000),
        n_verified_pairs=params.get("verified_baseline_pairs", 20_000), seed=params.get("seed", 0),
        encoder_identity=identity.encoder_identity, verifier=verifier, splits=splits,
        fingerprints=None if any(v is None for v in fps.values()) else fps, doc_index=doc_index)
    if as_scan:
        sd.write_baseline(baseline)
    return baseline


def _draw(cal_dir: Path, pop: Population, lo: float, n_pairs: int, seed: int, identity: Identity, store: LabelStore,
          force: bool) -> Draw:
    path = cal_dir / DRAW_FILE
    if path.exists():
        draw = Draw.load(path, pop)
        if draw.identity != identity.to_dict() and not force:
            raise CompatibilityError(f"{path} was drawn from another scan ({Identity(**draw.identity).mismatch(identity.to_dict())}); "
                                     "calibrate into a new --out directory, or pass --force")
        if len(draw.rows) < n_pairs:
            index = pop.index_of()
            known = {index[k]: r["label"] for k, r in store.current().items() if k in index and r["label"] != "skip"}
            draw = extend_draw(draw, pop, n_pairs - len(draw.rows), labels_by_row=known)
    else:
        draw = make_draw(pop, lo, n_pairs, seed=seed, identity=identity.to_dict())
    draw.save(path, pop)
    return draw


def calibrate(
    scan_dir: str | Path,
    *,
    calibration_dir: Optional[str | Path] = None,
    labels: Optional[str | Path] = None,
    ui: str = "web",
    n_pairs: int = 60,
    seed: int = 0,
    target_precision: Optional[float] = None,
    force: bool = False,
    port: int = 0,
    open_browser: bool = True,
    echo: Callable[[str], None] = lambda s: None,
    stdin: Optional[TextIO] = None,
    stdout: Optional[TextIO] = None,
) -> Calibration:
    """Calibrate the cutoff of a finished scan.

    Draws ``n_pairs`` nearest-neighbour pairs (or continues an earlier draw in ``calibration_dir``,
    extending it when ``n_pairs`` grew), imports ``labels``, lets a person label the pending pairs
    (``ui``), fits the cutoff and writes ``calibration_dir/cutoff.json``.

    Parameters
    ----------
    scan_dir : path
        A scan directory written by ``sibscan scan``.
    calibration_dir : path, optional
        Default ``scan_dir/calibration``. Holds ``labels.jsonl``, ``draw.json``, ``cutoff.json``.
    labels : path, optional
        A labels JSONL file made elsewhere, appended after validation.
    ui : {"web", "terminal", "none"}
        How to label the pending pairs; ``"none"`` fits from the labels there are.
    target_precision : float, optional
        Put the cutoff at the lowest score reaching this precision instead of at P(same) = 0.5.
    force : bool
        Use labels/draws made under another encoder, verifier or dataset anyway.
    port, open_browser, echo, stdin, stdout
        Web server port (0 = random), whether to open a browser, where messages go, and the
        streams of the terminal UI.

    Returns
    -------
    Calibration
    """
    if ui not in UIS:
        raise SibscanError(f"unknown --ui {ui!r}; available: {', '.join(UIS)}")
    if target_precision is not None and not 0.0 < target_precision < 1.0:
        raise SibscanError(f"--target-precision is a fraction in (0, 1), got {target_precision}")
    check_int(seed, "--seed", 0)
    check_int(port, "--port", 0, 65535)
    sd = ScanDir(scan_dir)
    manifest = sd.manifest()
    identity = _identity(manifest)
    cal_dir = Path(calibration_dir) if calibration_dir is not None else sd.path / "calibration"
    store = LabelStore(cal_dir / LABELS_FILE, identity, force=force)
    if labels is not None:
        added = store.import_file(labels)
        echo(f"imported {added} label records from {labels}")
    pop = Population.from_neighbours(sd.neighbours(), "verified" if manifest.get("verifier") else "similarity")
    if len(pop) == 0:
        raise SibscanError(f"{sd.path} has no test->train neighbours to calibrate on; re-run 'sibscan scan' with both splits")
    baseline = _baseline(sd, manifest, identity)
    lo = float(baseline["quantiles"]["0.99"])
    draw = _draw(cal_dir, pop, lo, n_pairs, seed, identity, store, force)
    session = LabelSession(pop, draw, store, sd.items("test"), sd.items("train"))
    pending = len(session) - session.state()["done"]
    if ui != "none" and pending:
        echo(f"{pending} of {len(session)} pairs to label (scores {draw.lo:.4f} to 1.0, the similarity stays hidden until you answer)")
        if ui == "web":
            from .web import run_web

            run_web(session, port=port, open_browser=open_browser, echo=echo)
        else:
            from .terminal import run_terminal

            run_terminal(session, stdin=stdin, stdout=stdout)
    cal = fit_calibration(pop, draw, store, baseline, identity, manifest, target_precision=target_precision, seed=seed)
    write_calibration(cal_dir, cal)
    return cal


def fit_calibration(pop: Population, draw: Draw, store: LabelStore, baseline: dict, identity: Identity, manifest: dict,
                    *, target_precision: Optional[float] = None, seed: int = 0) -> Calibration:
    """Fit the cutoff from the labels in ``store`` and estimate its precision, recall and the sibling rate."""
    index = pop.index_of()
    cur = store.current()
    scores, same, rows = [], [], []
    for key, rec in cur.items():
        if rec["label"] == "skip":
            continue
        r = index.get(key)
        s = pop.score[r] if r is not None else rec.get("score")
        if s is None or not np.isfinite(s):
            continue
        scores.append(float(s))
        same.append(rec["label"] == "same")
        rows.append(-1 if r is None else r)
    scores_a, same_a = np.asarray(scores, dtype=np.float64), np.asarray(same, dtype=bool)
    rows_a = np.asarray(rows, dtype=np.int64)
    in_pop = rows_a >= 0
    res = fit(scores_a, same_a, pop.score, lo=draw.lo, target_precision=target_precision, seed=seed)
    strata = draw.stratum(pop.score)
    est = design_estimates(pop.score, strata, draw.n_strata, rows_a[in_pop], same_a[in_pop],
                           res.cutoff, seed=seed)
    n_train = int(((manifest.get("inputs") or {}).get("train") or {}).get("n_items") or baseline.get("n_train") or 0)
    advice: List[str] = list(res.advice)
    for k, st in enumerate(est["strata"]):
        if st["N"] and not st["n"] and len(scores_a):
            advice.append(f"label a few pairs scoring between {draw.edges[k]:.4f} and {draw.edges[k + 1]:.4f} "
                          f"({st['N']} nearest-neighbour pairs there have no label; the sibling-rate interval is wide for it)")
    if res.cutoff is not None:
        est["expected_chance_siblings"] = expected_chance_siblings(baseline, res.cutoff, n_train, len(pop))
        est["flagged_rate"] = est["flagged"] / len(pop)
        warn = baseline_warning(baseline, res.cutoff)
        if warn:
            est["warning"] = warn
    counts = store.counts()
    summary = {k: v for k, v in baseline.items() if k != "histogram"}
    return Calibration(
        cutoff=res.cutoff, interval=res.interval, score=pop.score_kind, encoder_identity=identity.encoder_identity,
        verifier_identity=identity.verifier_identity, dataset_fingerprint=identity.dataset_fingerprint,
        n_labels=counts, estimates=est, baseline=summary, status=res.status, advice=advice, rule=res.rule,
        extra={"draw": {"lo": draw.lo, "edges": draw.edges.tolist(), "n_drawn": int(len(draw.rows)), "seed": draw.seed},
               "curve": {"x": res.curve.x.tolist(), "p": res.curve.p.tolist()} if res.curve is not None else None,
               "n_labelled_outside_population": int((~in_pop).sum())},
    )


def describe(cal: Calibration) -> List[str]:
    """Lines for people: the cutoff, its interval, the estimates and any advice."""
    lines = []
    n = cal.n_labels
    lines.append(f"labels: {n.get('same', 0)} same, {n.get('different', 0)} different, {n.get('skip', 0)} skipped")
    if cal.cutoff is not None:
        iv = f" (95% interval {cal.interval[0]:.4f} to {cal.interval[1]:.4f})" if cal.interval else ""
        lines.append(f"cutoff: {cal.cutoff:.4f} on the {cal.score} score{iv}, rule {cal.rule}")
    else:
        lines.append("cutoff: none")
    e = cal.estimates or {}
    if e.get("sibling_rate"):
        lo, mid, hi = e["sibling_rate"]
        lines.append(f"sibling rate: {100 * mid:.2f}% (95% interval {100 * lo:.2f}% to {100 * hi:.2f}%) of {e['n_population']} test items")
    if e.get("precision") is not None or e.get("recall") is not None:
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        lines.append(f"at the cutoff: precision {fmt(e.get('precision'))}, recall {fmt(e.get('recall'))}, "
                     f"{e.get('flagged')} pairs flagged")
    if e.get("expected_chance_siblings") is not None:
        lines.append(f"about {format_expected(e['expected_chance_siblings'])} chance siblings expected at this cutoff (random-pair baseline)")
    if e.get("warning"):
        lines.append(f"warning: {e['warning']}")
    if cal.status != "ok":
        lines.append(f"the labels cannot support a cutoff yet: {cal.status}")
    for a in cal.advice:
        lines.append(f"  - {a}")
    if cal.path is not None:
        lines.append(f"written: {Path(cal.path) / 'cutoff.json'}")
    return lines
