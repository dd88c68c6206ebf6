"""The whole calibration of one scan: baseline, draw, labels, fit, ``cutoff.json``.

The cutoff is fitted at the lowest score from which P(same)'s 95 % lower bound per run of answers
reaches 0.5 (:mod:`.fit`); the sibling rate and its interval come
from the one estimator, :func:`sibscan.verdict.rate.estimate_rate`, and what every output prints from
:func:`sibscan.verdict.headline.headline` (:func:`.summary.headline_of` gives a calibration's).
"""
from __future__ import annotations

import logging
from dataclasses import asdict
import warnings
from pathlib import Path
from typing import Callable, List, Optional, TextIO

import numpy as np

from sibscan import fmt, labeller
from sibscan.errors import CompatibilityError, SibscanError, user_stacklevel
from sibscan.verdict.pairdecision import PairLabels
from sibscan.verdict.headline import narrow_enough
from sibscan.verdict.testscores import TestScores, test_scores
from sibscan.store.scandir import ScanDir, train_items_searched
from sibscan.stats import ControlAnswers, check_int
from sibscan.loaders.text import chunk_items
from sibscan.verify import get_verifier, verifier_class

from .baseline import (baseline_warning, expected_chance_siblings, extrapolated, left_out_neighbours,
                       neighbour_pair_keys, scan_baseline)
from .controlanswers import ANSWERS_FILE, DEFAULT_SHARE, ControlStore, check_share, controls_of, read_controls
from .controls import ControlPlan, cosine, estimate_with_controls, interleave
from .fit import fit
from sibscan.verdict.cutoffrule import POINT_RULE, same_rule
from .forecast import forecast_width
from .labels import Identity, LabelStore
from ..verdict.record import CUTOFF_FILE, LABELS_FILE, Calibration, calibration_in, write_calibration
from .sampling import Draw, Population, extend_draw, make_draw
from .session import LabelSession
from sibscan.options import UIS
from .terminal import run_terminal
from .web import run_web

#: the further answers calibrate's advice forecasts the rate's width for, when it is not narrow enough yet
FORECAST_MORE = (50, 100, 200)

__all__ = ["calibrate", "default_definition", "DEFINITIONS", "DRAW_FILE"]

log = logging.getLogger("sibscan.calibration")

DRAW_FILE = "draw.json"

#: the written definition of "same" per modality, unless ``--definition`` says otherwise
DEFINITIONS = {
    "image": "the same photograph or picture, possibly resized, cropped, shifted, flipped, re-compressed or with "
             "changed colours",
    "text": "the same text, possibly re-formatted, re-cased, truncated or with a few words changed",
    "table": "the same series or row of values, possibly rescaled, offset, shifted in time or with a little noise",
}
#: a scan interactively labelled starts with this many pairs drawn by the prior, then one at a time
_SEED_PAIRS = 12


def default_definition(modality: str) -> str:
    """The definition of "same" used when none is given (one per modality)."""
    return DEFINITIONS.get(modality, DEFINITIONS["table"])


def _identity(manifest: dict) -> Identity:
    enc = (manifest.get("encoder") or {}).get("identity") or ""
    ver = (manifest.get("verifier") or {}).get("identity") if manifest.get("verifier") else None
    return Identity(str(manifest.get("dataset_fingerprint") or ""), enc, ver)


def _verifier_of(manifest: dict):
    """The scan's verifier rebuilt from its manifest, or None when it cannot be (not installed, other identity)."""
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
    the embedding-similarity baseline for this calibration only (with a warning).  One an older sibscan
    made by leaving out each item's nearest neighbours is computed again where it can be the scan's own."""
    baseline = sd.baseline()
    if baseline is not None and left_out_neighbours(baseline) and \
            (identity.verifier_identity is None or _verifier_of(manifest) is not None):
        warnings.warn(f"{sd.baseline_path} left out each item's nearest neighbours (an older sibscan), which "
                      "undercounts chance siblings on small sets; computing it again", stacklevel=user_stacklevel(3))
        baseline = None
    if baseline is not None:
        if baseline.get("encoder_identity") not in ("", None, identity.encoder_identity):
            raise CompatibilityError(f"{sd.baseline_path} was made with encoder {baseline['encoder_identity']!r}, the "
                                     f"scan with {identity.encoder_identity!r}; re-run 'sibscan scan' to recompute it")
        return baseline
    verifier = _verifier_of(manifest) if identity.verifier_identity is not None else None
    as_scan = verifier is not None or identity.verifier_identity is None
    if not as_scan:
        warnings.warn(f"{sd.path} has no baseline.json; computing the embedding-similarity baseline "
                      "(the verified baseline needs 'sibscan scan' to finish)", stacklevel=user_stacklevel(3))
    params = manifest.get("parameters") or {}
    splits = {s: sd.items(s) for s in ("train", "test")}
    doc_index = _doc_index(manifest, splits)
    fps = {s: sd.fingerprints(s) for s in splits}
    baseline = scan_baseline(
        {s: sd.embeddings(s) for s in splits}, n_pairs=params.get("baseline_pairs", 100_000),
        n_verified_pairs=params.get("verified_baseline_pairs", 20_000), seed=params.get("seed", 0),
        encoder_identity=identity.encoder_identity, verifier=verifier, splits=splits,
        fingerprints=None if any(v is None for v in fps.values()) else fps, doc_index=doc_index, k=params.get("k"))
    if as_scan:
        sd.write_baseline(baseline)
    return baseline


def _doc_index(manifest: dict, splits: dict) -> Optional[dict]:
    """``{split: ndarray}``, the document of each embedding row where the scan embedded chunks of its
    texts (cut again the same way), else None."""
    params = manifest.get("parameters") or {}
    if not params.get("chunk_words"):
        return None

    return {s: chunk_items(items, params["chunk_words"], params.get("chunk_stride")).extra["doc_index"]
            for s, items in splits.items()}


def _control_plan(cal_dir: Path, share: float, seed: int, sd: ScanDir, manifest: dict, identity: Identity,
                  pop: Population, draw: Draw, splits: dict, definition: str, nb) -> Optional[ControlPlan]:
    """The control pairs of this calibration (None with ``share`` 0): known-"different" ones found by the
    embedding similarity of items (a chunked text by its first chunk, as the baseline represents it)."""
    if share == 0:
        return None
    docs = _doc_index(manifest, splits)
    first = {s: np.unique(d, return_index=True)[1] for s, d in docs.items()} if docs else {"test": None, "train": None}
    fps = {s: sd.fingerprints(s) for s in splits}
    # a scan directory without its embeddings (written by hand, or by a test) gets known-"same" controls only
    embedded = all(sd.embeddings_path(s).exists() for s in splits)
    return ControlPlan(cal_dir, share=share, seed=seed, identity=identity, pop=pop, draw=draw, test=splits["test"],
                       train=splits["train"], definition=definition,
                       similarity=cosine(sd.embeddings("test"), sd.embeddings("train"), first["test"], first["train"])
                       if embedded else None,
                       fingerprints=None if any(v is None for v in fps.values()) else fps,
                       near=neighbour_pair_keys(nb, len(splits["train"])))


def _draw(cal_dir: Path, pop: Population, lo: float, first: int, seed: int, identity: Identity, store: LabelStore,
          force: bool, labelled_rows: np.ndarray, definition: str) -> Draw:
    """The calibration's draw: read back (or made with ``first`` pairs by the prior), with the
    labelled pairs of this population that it lacks (imported answers) added as a phase of their own."""
    path = cal_dir / DRAW_FILE
    if path.exists():
        draw = Draw.load(path, pop)
        if draw.identity.get("dataset_fingerprint") is None or \
                {k: draw.identity.get(k) for k in identity.to_dict()} != identity.to_dict():
            if not force:
                drawn_from = Identity(**{k: draw.identity.get(k) for k in identity.to_dict()})
                raise CompatibilityError(f"{path} was drawn from another scan "
                                         f"({drawn_from.mismatch(identity.to_dict())}); "
                                         "calibrate into a new --out directory (and bring the labels with --labels), "
                                         "or pass --force")
    else:
        draw = make_draw(pop, lo, max(first, 1) if not len(labelled_rows) else max(first - len(labelled_rows), 1),
                         seed=seed, identity={**identity.to_dict(), "definition": definition})
    missing = np.setdiff1d(labelled_rows, draw.rows)
    if len(missing):
        draw.rows = np.concatenate([draw.rows, missing.astype(np.int64)])
        draw.phases.append(int(len(missing)))
    draw.save(path, pop)
    return draw


#: where a calibration's definition of "same" came from (cutoff.json's ``definition_source``), first that applies
DEFINITION_SOURCES = ("--definition", "the answers", "the draw", "the default")


def _resolve_definition(given: Optional[str], before: Optional[Calibration], store: LabelStore, drawn: Optional[str],
                        default: str) -> tuple:
    """The calibration's definition of "same" and where it came from (:data:`DEFINITION_SOURCES`):
    ``--definition`` (now, or in an earlier run of this calibration: ``before``); else the one the answers
    were given under (imported ones included; the most answered where they differ); else the one the draw
    was made under; else the modality's default.  Answers travel with their definition: a labels file made
    under its own wording keeps it, never replaced by the default."""
    if given:
        return given, "--definition"
    extra = before.extra if before is not None else {}
    if extra.get("definition_source") == "--definition" and extra.get("definition"):
        return extra["definition"], "--definition"
    answered = {d: k for d, k in store.definitions().items() if d}  # None: not recorded with the answer
    if answered:
        return max(answered, key=lambda d: (answered[d], d == drawn)), "the answers"
    if drawn:
        return drawn, "the draw"
    return default, "the default"


def _check_definition(store: LabelStore, definition: str, source: str, drawn: Optional[str], default: str) -> None:
    """Warn when answers (or the draw) were given under another definition of "same" than the calibration's,
    with both wordings, one line each (as a warning only: it was also echoed, so the command printed it twice)."""
    others = [(f"{k} {'answer was' if k == 1 else 'answers were'} given under", d)
              for d, k in store.definitions().items() if d and d != definition]  # None: not recorded
    if drawn and drawn not in (definition, default):  # a draw made under the default wording chose none
        others.append(("the draw was made under", drawn))
    if others:
        lines = [f"this calibration's (from {source}): {definition!r}"] + [f"{what}: {d!r}" for what, d in others]
        msg = ("the definition of 'same' differs (cutoff.json lists every definition answers were given under; the "
               "estimate mixes them):\n  " + "\n  ".join(lines))
        warnings.warn(msg, stacklevel=user_stacklevel(3))


def calibrate(
    scan_dir: str | Path,
    *,
    calibration_dir: Optional[str | Path] = None,
    labels: Optional[str | Path] = None,
    ui: str = "web",
    n_pairs: int = 60,
    seed: int = 0,
    target_precision: Optional[float] = None,
    definition: Optional[str] = None,
    controls: float = DEFAULT_SHARE,
    force: bool = False,
    port: int = 0,
    open_browser: bool = True,
    echo: Callable[[str], None] = lambda s: None,
    stdin: Optional[TextIO] = None,
    stdout: Optional[TextIO] = None,
) -> Calibration:
    """Calibrate the cutoff of a finished scan and estimate its sibling rate.

    With ``ui="none"`` all ``n_pairs`` pairs are drawn at once (to label elsewhere and import with
    ``labels``); with a UI the first few are drawn by the prior and each next one adaptively, where
    the rate's interval shrinks most, until ``n_pairs`` are answered (the UIs let the person stop
    earlier or go on).  An earlier draw in ``calibration_dir`` is continued, and extended when
    ``n_pairs`` grew.  Labels imported from another scan of the same data (another encoder) carry
    over for the pairs this scan scores too.

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
    n_pairs : int
        Pairs to label.
    target_precision : float, optional
        Put the cutoff at the lowest score at which the flagged pairs reach this precision (P(same) at its
        95 % lower bound) instead of where that lower bound reaches 0.5 (:mod:`.fit`).
    definition : str, optional
        The written definition of "same" (default: the one the answers were given under, imported ones
        included, else the one the draw was made under, else :data:`DEFINITIONS` of the modality); stored
        with every answer and printed in the report.  Answers given under another wording are kept with it
        and named in a warning, both wordings one line each.
    controls : float
        The share of control pairs among the pairs shown (:mod:`.controls`: pairs whose answer is known,
        measuring the labeller's error), from 0 (none) to 0.5; default 0.1, one in ten.  Their answers go
        to ``controls.jsonl``, never to ``labels.jsonl``; with ``ui="none"`` they are listed in
        ``controls.json`` for a labelling made elsewhere (a labels file answers one by its ``control_id``).
    force : bool
        Use labels/draws made for other data anyway.
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
    share = check_share(controls)
    if n_pairs < 1:
        raise SibscanError(f"--n-pairs must be at least 1, got {n_pairs}")
    if definition is not None and not definition.strip():
        raise SibscanError("--definition must say what 'same' means, e.g. 'the same photo after a crop or "
                           "re-compression'")
    sd = ScanDir(scan_dir)
    manifest = sd.manifest()
    identity = _identity(manifest)
    cal_dir = Path(calibration_dir) if calibration_dir is not None else sd.path / "calibration"
    ts = test_scores(sd.path)
    pop = Population.from_neighbours(ts.nb, "verified" if manifest.get("verifier") else "similarity", exact=ts.exact)
    if len(pop) == 0:
        raise SibscanError(f"{sd.path} has no test->train neighbours to calibrate on; re-run 'sibscan scan' with both "
                           "splits")
    drawn = Draw.definition_of(cal_dir / DRAW_FILE)
    default = default_definition(manifest.get("modality") or sd.items("test").modality)
    store = LabelStore(cal_dir / LABELS_FILE, identity, force=force)
    if labels is not None:
        imp = store.import_file(labels)
        index = pop.index_of()
        here = sum(1 for k in imp.pairs if k in index)
        echo(f"imported {imp.added} new label records from {labels}: {here} of its {len(imp.pairs)} pairs are pairs "
             "this scan scores (carried over)"
             + ("" if here == len(imp.pairs) else f"; {len(imp.pairs) - here} are not (kept in labels.jsonl, not used)")
             + ("" if not imp.other_encoder else f"; {imp.other_encoder} records were made under another encoder or "
                                                 "verifier"))
    # after the import: the answers' definition travels with them
    before = _previous_fit(cal_dir)
    definition, source = _resolve_definition(definition.strip() if definition else None, before, store, drawn, default)
    store.definition = definition  # what new answers are recorded under
    _check_definition(store, definition, source, drawn, default)
    if labels is not None and imp.controls:
        made = read_controls(cal_dir)
        known = made["controls"] if made["identity"] == identity.to_dict() else []
        added, unknown = ControlStore(cal_dir / ANSWERS_FILE, identity, definition=definition).import_records(
            imp.controls, known, source=f"import:{Path(labels).name}")
        echo(f"imported {added} answers on control pairs into {ANSWERS_FILE} (never counted as labels of pairs)"
             + ("" if not unknown else f"; {unknown} answer control pairs this calibration does not hold (not used)"))
    baseline = _baseline(sd, manifest, identity)
    lo = float(baseline["quantiles"]["0.99"])
    index = pop.index_of()
    labelled = np.asarray(sorted({index[k] for k, r in store.current().items() if k in index and r["label"] != "skip"}),
                          np.int64)
    first = n_pairs if ui == "none" else min(n_pairs, _SEED_PAIRS)
    draw = _draw(cal_dir, pop, lo, first, seed, identity, store, force, labelled, definition)
    splits = {s: sd.items(s) for s in ("train", "test")}
    plan = _control_plan(cal_dir, share, seed, sd, manifest, identity, pop, draw, splits, definition, ts.nb)
    if ui == "none" and len(draw.rows) < n_pairs:
        current = {index[k]: r["label"] for k, r in store.current().items() if k in index and r["label"] != "skip"}
        p_same = curve_sd = None
        if current:
            rows = np.fromiter(current, np.int64)
            est = estimate_with_controls(ts.score, ts.exact, pop.query_index[rows],
                                         np.array([current[r] == "same" for r in rows]), controls_of(cal_dir),
                                         fast=True)
            p_same, curve_sd = est.p_same[pop.query_index], est.curve_sd[pop.query_index]
        draw = extend_draw(draw, pop, n_pairs - len(draw.rows), labels_by_row=current or None, p_same=p_same,
                           curve_sd=curve_sd)
        draw.save(cal_dir / DRAW_FILE, pop)
    if ui == "none":
        interleave(plan, [], draw.rows, 0)  # the controls among the drawn pairs, listed in controls.json
    else:
        session = LabelSession(pop, draw, store, splits["test"], splits["train"], scores=(ts.score, ts.exact),
                               target=n_pairs, on_extend=lambda d: d.save(cal_dir / DRAW_FILE, pop),
                               definition=definition, controls=plan)
        st = session.state()
        pending = st["total"] - st["done"]
        if pending > 0 and session.next_pending() is not None:
            fewer = ("" if session.target >= n_pairs else f" (not {n_pairs}: only {session.most} test items have a "
                     "nearest train pair to label; exact twins need none)")
            echo(f"{pending} of {st['total']} pairs to label{fewer}; 'same' means: {definition}")
            echo("the score stays hidden until you answer; pairs come from every score stratum of the test set, below "
                 f"the candidate range (scores under {fmt.score(draw.lo)}) included, to find siblings the range misses")
            if ui == "web":
                run_web(session, port=port, open_browser=open_browser, echo=echo)
            else:
                run_terminal(session, stdin=stdin, stdout=stdout)
    cal = fit_calibration(pop, draw, store, baseline, identity, manifest, ts, target_precision=target_precision,
                          seed=seed, definition=definition, n_train=train_items_searched(manifest, sd.path),
                          controls=controls_of(cal_dir))
    cal.extra["definition_source"] = source
    if before is not None and not same_rule(before.rule, cal.rule):
        cut = lambda c: "none" if c is None else fmt.score(c)  # noqa: E731
        echo(f"the rule changed: {cal_dir / CUTOFF_FILE} was fitted by '{before.rule or POINT_RULE}' (cutoff "
             f"{cut(before.cutoff)}); refitted by '{cal.rule}': cutoff {cut(cal.cutoff)}")
    write_calibration(cal_dir, cal)
    return cal


def _previous_fit(cal_dir: Path) -> Optional[Calibration]:
    """The cutoff.json this calibration replaces (None when there is none, or it cannot be read: it is rewritten)."""
    try:
        return calibration_in(cal_dir)
    except SibscanError:
        return None


def fit_calibration(pop: Population, draw: Draw, store: LabelStore, baseline: dict, identity: Identity, manifest: dict,
                    ts: Optional[TestScores] = None, *, target_precision: Optional[float] = None, seed: int = 0,
                    definition: Optional[str] = None, n_train: Optional[int] = None,
                    controls: Optional[ControlAnswers] = None) -> Calibration:
    """Fit the cutoff from the labels in ``store`` and estimate the sibling rate, precision and recall.

    ``controls``: the labeller's answers on control pairs (:func:`.controls.controls_of`), recorded in
    ``cutoff.json`` and passed to the rate's estimator.

    ``n_train``: the train items searched, for the expected number of chance siblings
    (:func:`sibscan.store.scandir.train_items_searched`; by default the manifest's record of them).

    Only answers about pairs of this population count (an answer about another pair says nothing
    about the test item's nearest neighbour here); exact twins are siblings without an answer.
    """
    index = pop.index_of()
    rows, same, used = [], [], []
    for key, rec in store.current().items():
        r = index.get(key)
        if r is None or rec["label"] == "skip" or not np.isfinite(pop.score[r]) or pop.exact[r]:
            continue
        rows.append(r)
        same.append(rec["label"] == "same")
        used.append(rec)
    rows_a, same_a = np.asarray(rows, np.int64), np.asarray(same, bool)
    n_outside = sum(1 for k, rec in store.current().items() if k not in index and rec["label"] != "skip")
    # answers about exact twins (siblings without an answer) or pairs without a score: kept, counted apart
    n_not_needed = sum(1 for k, rec in store.current().items() if rec["label"] != "skip" and k in index
                       and (pop.exact[index[k]] or not np.isfinite(pop.score[index[k]])))
    # the answers this fit uses, as every output counts them (the headline's "calibrated with N hand labels");
    # answers about pairs this scan does not score stay in labels.jsonl, counted apart
    n_labels = {"same": int(same_a.sum()), "different": int((~same_a).sum()),
                "skip": sum(1 for k, rec in store.current().items() if k in index and rec["label"] == "skip")}
    if ts is None:  # scores of the population alone (every test item has a neighbour)
        score = np.full(int(pop.query_index.max()) + 1 if len(pop) else 0, np.nan)
        score[pop.query_index] = pop.score
        exact = np.zeros(len(score), bool)
        exact[pop.query_index] = pop.exact
        ts = TestScores(score.astype(np.float32), exact, None)
    # the pairs the advice may name: no current answer (a skipped pair was passed on, and is not offered again)
    answered = np.fromiter({index[k] for k in store.current() if k in index}, np.int64)
    unlabelled = np.ones(len(pop), bool)
    unlabelled[answered] = False
    res = fit(pop.score[rows_a], same_a, pop.score[~pop.exact], lo=draw.lo, target_precision=target_precision,
              seed=seed, unlabelled=pop.score[unlabelled & ~pop.exact])
    n_test = len(ts)
    est = {"n_population": n_test, "precision": None, "recall": None, "flagged": None}
    advice: List[str] = list(res.advice)
    if len(rows_a):
        trusted = np.array([labeller.kind(rec) == labeller.ORACLE for rec in used], bool)
        r = estimate_with_controls(ts.score, ts.exact, pop.query_index[rows_a], same_a, controls, cutoff=res.cutoff,
                                   trusted=trusted)
        est["rate"] = r.to_dict()
        est["sibling_rate"] = [r.lo, r.estimate, r.hi]
        est["siblings"] = list(r.siblings)
        est["narrow_enough"] = narrow_enough(r.estimate, r.lo, r.hi)
        est["precision"], est["recall"] = r.precision_recall(ts.score, ts.exact, res.cutoff)
        if not est["narrow_enough"]:
            # what more labels would buy, simulated from these answers (.forecast.forecast_width)
            fc = forecast_width(pop, draw, rows_a, same_a, ts.score, ts.exact, more=FORECAST_MORE, cutoff=res.cutoff,
                                controls=controls, trusted=trusted)
            est["width_forecast"] = fc
            buys = ", ".join(f"{f['labels'] - r.n_labels} more about {100 * f['width']:.1f} pp" for f in fc)
            advice.append(f"the rate's interval ({fmt.pct(r.lo)} to {fmt.pct(r.hi)}, {100 * (r.hi - r.lo):.1f} pp "
                          "wide) is wider than max(0.5 pp, 25 % of the estimate): label more pairs (--n-pairs) to "
                          "narrow it"
                          + (f"; simulated from these answers, the width after {buys}" if fc else ""))
        below = pop.score < draw.lo
        est["below_range"] = {"n": int((below & ~pop.exact).sum()), "labelled": int(below[rows_a].sum()),
                              "same": int((below[rows_a] & same_a).sum())}
    if n_train is None:
        n_train = train_items_searched(manifest)
    if res.cutoff is not None:
        # what the report will flag at this cutoff: the pairs answered here decided by their answers
        labelled = ts.with_labels(PairLabels.from_records(store.current().values(), identity.dataset_fingerprint))
        fl = labelled.flags(res.cutoff)
        est["flagged"] = int(fl.flagged.sum())
        est["decided_by_labels"] = fl.decided()
        est["flagged_rate"] = est["flagged"] / n_test if n_test else None
        est["expected_chance_siblings"] = (expected_chance_siblings(baseline, res.cutoff, n_train, n_test)
                                           if n_train else None)
        est["chance_extrapolated"] = extrapolated(baseline, res.cutoff)
        warn = baseline_warning(baseline, res.cutoff)
        if warn:
            est["warning"] = warn
    summary = {k: v for k, v in baseline.items() if k != "histogram"}
    return Calibration(
        cutoff=res.cutoff, interval=res.interval, score=pop.score_kind, encoder_identity=identity.encoder_identity,
        verifier_identity=identity.verifier_identity, dataset_fingerprint=identity.dataset_fingerprint,
        n_labels=n_labels, estimates=est, baseline=summary, status=res.status, advice=advice, rule=res.rule,
        # who gave the answers the fit used: what every output calls them ("hand labels", "oracle labels")
        extra={"labeller": labeller.of_records(used), "definition": definition,
               "definitions": {str(k): v for k, v in store.definitions().items()},
               "draw": {"lo": draw.lo, "edges": draw.edges.tolist(), "n_drawn": int(len(draw.rows)), "seed": draw.seed},
               "curve": {"x": res.curve.x.tolist(), "p": res.curve.p.tolist(), "lower": res.curve.lower.tolist()}
               if res.curve is not None else None,
               "n_labelled_outside_population": int(n_outside), "n_labelled_not_needed": int(n_not_needed),
               "n_labels_used": int(len(rows_a)),
               # the labeller's answers on control pairs: the measured error rates' evidence (all 0: none answered)
               "controls": asdict(controls or ControlAnswers())},
    )
