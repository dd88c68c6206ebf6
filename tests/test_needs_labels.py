"""A calibrated cutoff whose labels do not support it is in state ``needs_labels`` (issue 30, item 3): every
output says so with the one sentence, and ``sibscan check`` does not pass a ``--max-rate`` gate on it."""
from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sibscan.api import Scan
from sibscan.calibration import calibrate, describe
from sibscan.calibration.flow import DRAW_FILE
from sibscan.verdict.record import CUTOFF_FILE
from sibscan.calibration.summary import headline_of
from planted_scan import planted_scan
from sibscan.check import NEEDS_LABELS_EXIT, check
from sibscan.cli import app
from sibscan.verdict.cutoffrule import supported
from sibscan.fmt import pct as fmt_pct
from sibscan.verdict.headline import STATES
from sibscan.report import write_reports
from sibscan.store.scandir import ScanDir

ROOT = Path(__file__).resolve().parent.parent


def weak_labels(scan: Path, cal_dir: Path, out: Path, n_same: int = 3) -> Path:
    """The draw recorded in ``cal_dir`` answered "same" for its ``n_same`` highest-scoring pairs and "different"
    for the rest: a run of 3 "same" places a cutoff, but a bootstrap of 60 answers keeps all three in only about
    six resamples of ten, under the 80 % the fit asks for."""
    draw = json.loads((cal_dir / DRAW_FILE).read_text())
    top = ScanDir(scan).neighbours().top1()
    score = {(q, t): s for q, t, s in zip(top["query_id"], top["neighbour_id"], top["score"])}
    pairs = sorted(((p["query_id"], p["neighbour_id"]) for p in draw["pairs"]), key=lambda k: -score[k])
    with open(out, "w") as fh:
        for i, (q, t) in enumerate(pairs):
            fh.write(json.dumps({"dataset_fingerprint": draw["dataset_fingerprint"],
                                 "encoder_identity": draw["encoder_identity"],
                                 "verifier_identity": draw["verifier_identity"], "query_id": q, "neighbour_id": t,
                                 "label": "same" if i < n_same else "different"}) + "\n")
    return out


@pytest.fixture(scope="module")
def weak(tmp_path_factory):
    root = tmp_path_factory.mktemp("needs")
    planted = planted_scan(root / "scan", n_train=400, n_test=300, rate=0.1, seed=3, modality="text")
    cal_dir = planted.path / "calibration"
    calibrate(planted.path, calibration_dir=cal_dir, ui="none", n_pairs=60)
    labels = weak_labels(planted.path, cal_dir, root / "weak.jsonl")
    cal = calibrate(planted.path, calibration_dir=cal_dir, labels=labels, ui="none", n_pairs=60)
    return planted.path, cal


def test_a_cutoff_its_labels_do_not_support_is_needs_labels(weak):
    scan, cal = weak
    assert cal.cutoff is not None and cal.status.startswith("the rule finds a cutoff in only")
    assert not cal.ok and not supported(cal.status)
    head = headline_of(scan, cal)
    # the old code called it "calibrated"
    assert head["state"] == "needs_labels" and "needs_labels" in STATES
    assert head["estimate"] == pytest.approx(cal.estimates["rate"]["estimate"])  # the rate is still the estimator's
    assert head["lo"] <= head["estimate"] <= head["hi"]
    text = head["text"]
    assert f"estimated from 60 hand labels, which do not support the cutoff yet: {cal.status}; flagged at" in text
    assert text.endswith("provisional until more pairs are labelled ('sibscan calibrate SCAN_DIR')")
    assert "calibrated with" not in text


def test_needs_labels_reads_the_same_in_every_output(weak, tmp_path):
    scan, cal = weak
    text = headline_of(scan, cal)["text"]
    # calibrate's summary (the CLI's first line, and describe()), with the reason said once
    lines = describe(cal, headline_of(scan, cal))
    assert lines[0] == text and not any(line.startswith("the labels cannot support a cutoff yet") for line in lines)
    r = CliRunner().invoke(app, ["calibrate", str(scan), "--ui", "none"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == text
    # report.json / .md / .html
    written = write_reports(scan, ("json", "md", "html"), out=tmp_path)
    rep = json.loads(written["json"].read_text())
    assert rep["headline"]["state"] == "needs_labels" and rep["headline"]["text"] == text
    assert rep["sibling_rate"]["test_to_train"]["calibration_estimate"] == [rep["headline"][k] for k in ("lo", "estimate", "hi")]
    md = written["md"].read_text()
    assert text + "." in md and "Note: the calibration's labels cannot support" not in md  # said once, by the sentence
    assert html.escape(text) in written["html"].read_text()
    # check, as text and as JSON
    res = check(scan, max_rate=0.5)
    assert res.message.startswith(f"NEEDS LABELS: {text}: {fmt_pct(res.rates['siblings'])} is within the limit")
    r = CliRunner().invoke(app, ["check", str(scan), "--max-rate", "0.5", "--json"])
    assert json.loads(r.stdout)["headline"]["text"] == text
    # Scan.rate
    rate = Scan(scan).rate
    assert rate["state"] == "needs_labels" and rate["text"] == text


def test_check_does_not_pass_a_rate_gate_on_needs_labels(weak):
    scan, cal = weak
    res = check(scan, max_rate=0.5)  # the rate (8 %) is within the limit: on the old code, "OK" and exit 0
    assert not res.passed and res.needs_labels and res.exit_code == NEEDS_LABELS_EXIT == 3
    assert "is within the limit --max-rate 50.0 %. The gate does not pass on a cutoff its labels do not support (exit 3)" \
        in res.message
    assert res.to_dict()["needs_labels"] is True and res.to_dict()["exit_code"] == 3
    # over the limit it fails as any rate over its limit does
    res = check(scan, max_rate=0.01)
    assert not res.passed and not res.needs_labels and res.exit_code == 1 and res.message.startswith("FAIL: ")
    # exact twins do not depend on the cutoff: a gate on them alone is unaffected
    assert check(scan, max_exact=0.5).exit_code == 0
    # a cutoff given by hand is the way out the message names
    assert check(scan, max_rate=0.5, cutoff=cal.cutoff).exit_code == 0
    runner = CliRunner()
    r = runner.invoke(app, ["check", str(scan), "--max-rate", "0.5"])
    assert r.exit_code == 3 and r.stderr.startswith("NEEDS LABELS: ")
    text = " ".join(runner.invoke(app, ["check", "--help"], terminal_width=200).output.split())
    assert 'Exit 3, with a message starting "NEEDS LABELS:"' in text and "(headline state needs_labels)" in text


def test_a_failed_required_audit_check_still_exits_1(weak):
    scan, _ = weak
    res = check(scan, max_rate=0.5, require=["nan-free"])  # no audit recorded: the check is not assessed
    assert res.exit_code == 1 and not res.needs_labels and res.message.startswith("FAIL: --require nan-free")


def test_existing_records_still_read(weak, tmp_path):
    scan, cal = weak
    # a cutoff.json written before the state existed holds the same status: read as needs_labels
    d = json.loads((Path(cal.path) / CUTOFF_FILE).read_text())
    old = tmp_path / "old-cal"
    old.mkdir()
    (old / CUTOFF_FILE).write_text(json.dumps({k: v for k, v in d.items()
                                               if k not in ("labeller", "definitions", "rule")}))
    (old / "labels.jsonl").write_text((Path(cal.path) / "labels.jsonl").read_text())
    res = check(scan, max_rate=0.5, calibration=old)
    assert res.headline["state"] == "needs_labels" and res.exit_code == 3
    # one without a status at all (none was written then): nothing says the labels fall short
    (old / CUTOFF_FILE).write_text(json.dumps({k: v for k, v in d.items() if k != "status"}))
    assert check(scan, max_rate=0.5, calibration=old).headline["state"] == "calibrated"


def test_the_scan_summary_says_its_cutoff_needs_labels(weak):
    from sibscan.cli.scan import _fmt_summary
    from sibscan.verdict.cutoff import resolve_cutoff

    scan, _ = weak
    cut = resolve_cutoff(ScanDir(scan).manifest(), scan_dir=scan).record()
    summary = {"n_train": 400, "n_test": 300, "exact_test_rows_with_train_twin": 0, "exact_test_twin_pct": 0.0,
               "nn_score_quantiles": {}, "cutoff": cut, "siblings": 25, "sibling_pct": 8.3}
    assert "(calibrated by labels that do not support it yet, similarity score)" in _fmt_summary(summary, scan)
    cut["status"] = "ok"
    assert "(calibrated, similarity score)" in _fmt_summary(summary, scan)


def test_every_state_is_documented():
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| `state` |"))
    assert [s for s in STATES if f"`{s}`" not in row] == []


def test_the_honest_reporting_table_keeps_the_estimate_and_the_caveat(weak):
    from sibscan.report.honest import sibling_cell, sibling_rate_record

    scan, _ = weak
    rep = Scan(scan).report()
    rec = sibling_rate_record(rep["headline"])
    assert rec["state"] == "needs_labels" and rec["rate"] == rep["headline"]["estimate"]
    assert rec["kind"] == "estimated from 60 hand labels, which do not support the cutoff yet"
    assert sibling_cell(rec).startswith(f"{fmt_pct(rec['rate'])} (estimated from 60 hand labels, which do "
                                        f"not support the cutoff yet; {rep['headline']['flagged']['count']} "
                                        "of 300 flagged at the cutoff)")
