"""An audit of a scan: validation↔test siblings by a pairwise scan, the honest-reporting table in
report.md, ``sibscan check --require`` on the recorded audit, and the scan's own run record."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.config import ScanConfig
from sibscan.report import build_report
from sibscan.report.honest import sibling_cell
from sibscan.fmt import pct
from sibscan.scan import run_scan

runner = CliRunner()


def write_tsv(path, X, y):
    path.write_text("".join(f"{lab}\t" + "\t".join(f"{v:.6f}" for v in row) + "\n" for lab, row in zip(y, X)))


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """Train 60, test 20 (3 exact copies of train), validation 15 holding 2 exact copies of test rows
    and 1 rescaled copy (a sibling under z-normalised cosine, not an exact twin); a scan at cutoff 0.99."""
    d = tmp_path_factory.mktemp("scanned")
    rng = np.random.default_rng(0)
    tr = rng.normal(size=(60, 16)).cumsum(axis=1)
    te = rng.normal(size=(20, 16)).cumsum(axis=1)
    te[:3] = tr[:3]
    va = rng.normal(size=(15, 16)).cumsum(axis=1)
    va[:2] = te[5:7]
    va[2] = 3.0 * te[8] + 1.0
    y = lambda n: (np.arange(n) % 2 + 1)  # noqa: E731
    write_tsv(d / "train.tsv", tr, y(60))
    write_tsv(d / "test.tsv", te, y(20))
    write_tsv(d / "val.tsv", va, y(15))
    (d / "pred.csv").write_text("id,prediction\n" + "".join(f"{i},{(i % 2 + 1) if i % 5 else 2 - i % 2}\n"
                                                            for i in range(20)))
    run_scan(ScanConfig(train=str(d / "train.tsv"), test=str(d / "test.tsv"), out=str(d / "scan"), cutoff=0.99,
                        baseline_pairs=2000, verified_baseline_pairs=500, progress=False))
    res = runner.invoke(app, ["audit", str(d / "pred.csv"), "--scan", str(d / "scan"), "--val", str(d / "val.tsv"),
                              "--json"])
    return d, res


def test_audit_of_a_scan_finds_validation_siblings(scanned):
    d, res = scanned
    assert res.exit_code == 1, res.output  # the validation split shares items with test
    out = json.loads(res.stdout)
    assert out["task"] == "classification" and out["n_items"] == 20  # targets: the scan's test labels
    vs = out["checks"]["val_split"]
    assert vs["passed"] is False
    assert vs["detail"]["val_test"]["test_rows_with_twin"] == 2  # exact: test 5 and 6
    assert vs["detail"]["val_test_siblings"]["count"] == 3  # and the rescaled copy of test 8
    assert vs["detail"]["train_test"]["count"] == 3 and vs["detail"]["train_test"]["n"] == 20
    assert out["checks"]["denominator"]["passed"] and out["checks"]["nan_free"]["passed"]
    assert out["scan"]["dataset_fingerprint"] == json.loads((d / "scan" / "manifest.json").read_text())["dataset_fingerprint"]
    assert {"manifest.json", "audit.json", "audit.md", "val_test"} <= {p.name for p in (d / "scan" / "audits" / "evaluation").iterdir()}


def test_report_carries_the_honest_reporting_table(scanned):
    d, _ = scanned
    res = runner.invoke(app, ["report", str(d / "scan")])
    assert res.exit_code == 0, res.output
    md = (d / "scan" / "report.md").read_text()
    rep = json.loads((d / "scan" / "report.json").read_text())
    assert "#### Honest reporting" in md and "##### Limitations" in md
    assert "Validation split: " in md  # the failed check's limitation
    any_rate = rep["sibling_rate"]["test_to_train"]["any"]
    assert any_rate["count"] == 3
    # the table's sibling rate is the report's own
    assert "15.0 % (3 of 20, exact or near at cutoff 0.9900, uncalibrated)" in md
    assert rep["audits"]["evaluation"]["data"]["reporting"]["sibling_rate"]["rate"] == any_rate["rate"]
    assert "Honest reporting" in (d / "scan" / "report.html").read_text()  # an audit section in the HTML too
    # at another cutoff the table follows the report: it is rendered by the report, not left pre-rendered
    other = build_report(d / "scan", cutoff=0.5)
    sib = other["audits"]["evaluation"]["data"]["reporting"]["sibling_rate"]
    assert sib["rate"] == other["sibling_rate"]["test_to_train"]["any"]["rate"] and "cutoff 0.5000," in sib["kind"]


def test_check_require_gates_on_the_recorded_audit(scanned):
    d, _ = scanned
    scan = str(d / "scan")
    res = runner.invoke(app, ["check", scan, "--require", "nan-free,denominator"])
    assert res.exit_code == 0, res.output
    assert "nan-free passed" in res.stdout
    res = runner.invoke(app, ["check", scan, "--require", "nan-free,val-split", "--max-exact", "0.5"])
    assert res.exit_code == 1 and "--require val-split: failed" in res.stderr
    res = runner.invoke(app, ["check", scan, "--require", "init-window"])
    assert res.exit_code == 1 and "did not run this check" in res.stderr
    res = runner.invoke(app, ["check", scan, "--require", "nan_free,typo"])
    assert res.exit_code == 1 and "unknown audit check 'typo'; available: nan-free" in res.stderr


def test_check_require_without_or_with_a_stale_audit(scanned, tmp_path):
    d, _ = scanned
    copy = tmp_path / "scan"
    shutil.copytree(d / "scan", copy)
    audit = copy / "audits" / "evaluation" / "audit.json"
    data = json.loads(audit.read_text())
    data["scan"]["dataset_fingerprint"] = "0" * 32  # made for other data
    audit.write_text(json.dumps(data))
    res = runner.invoke(app, ["check", str(copy), "--require", "nan-free"])
    assert res.exit_code == 1 and "made for other scan data" in res.stderr
    shutil.rmtree(copy / "audits" / "evaluation")
    res = runner.invoke(app, ["check", str(copy), "--require", "denominator"])
    assert res.exit_code == 1 and "no audit recorded" in res.stderr


def test_scan_manifest_run_record_and_verify(scanned, tmp_path):
    d, _ = scanned
    m = json.loads((d / "scan" / "manifest.json").read_text())
    run = m["run"]
    assert [i["role"] for i in run["inputs"]] == ["train", "test"] and run["status"] == "complete"
    assert run["resumed"] is False and run["started"] and run["ended"] and run["environment"]["packages"]
    assert run["samples"]["test"] == {"attempted": 20, "loaded": 20, "skipped": 0}
    res = runner.invoke(app, ["audit", "--verify-run", str(d / "scan")])
    assert res.exit_code == 0 and res.stdout.startswith("OK: all 2 inputs match")
    # the same scan again resumes, and says so
    again = run_scan(ScanConfig(train=str(d / "train.tsv"), test=str(d / "test.tsv"), out=str(d / "scan"),
                                cutoff=0.99, baseline_pairs=2000, verified_baseline_pairs=500, progress=False))
    assert again.manifest["run"]["resumed"] is True and again.manifest["run"]["previous_started"] == run["started"]
    # an input edited afterwards: verify fails
    shutil.copy(d / "test.tsv", tmp_path / "keep.tsv")
    (d / "test.tsv").write_text((d / "test.tsv").read_text() + (d / "test.tsv").read_text().splitlines(True)[0])
    try:
        res = runner.invoke(app, ["audit", "--verify-run", str(d / "scan")])
        assert res.exit_code == 1 and "test" in res.stdout and "changed" in res.stdout
    finally:
        shutil.copy(tmp_path / "keep.tsv", d / "test.tsv")


def test_audit_states_the_count_the_scans_report_states(tmp_path):
    """The train→test note and ``train_test`` give the report's count, never None: without a cutoff the exact
    twins (near siblings not assessed), once calibrated the headline's flagged count beside its estimate."""
    from sibscan.calibration import calibrate
    from planted_scan import planted_scan, write_oracle_labels

    planted = planted_scan(tmp_path / "scan", n_train=300, n_test=150, rate=0.1, seed=3)
    scan = str(planted.path)

    def audit():
        res = runner.invoke(app, ["audit", "--scan", scan, "--json", "--force"])
        assert res.exit_code == 1, res.output  # no validation split
        out = json.loads(res.stdout)
        return out["checks"]["val_split"]["detail"], out["summaries"]["val_split"], build_report(scan)

    detail, summary, rep = audit()
    exact = rep["sibling_rate"]["test_to_train"]["exact"]
    assert rep["headline"]["state"] == "not_assessed"
    assert detail["train_test"]["count"] == exact["count"] == rep["headline"]["exact_twins"]["count"]
    assert f"train→test: {pct(exact['rate'])} ({exact['count']} of 150, exact twins only" in summary
    assert "None" not in summary
    assert detail["near_siblings"] == "not assessed: no validation data was given (--val FILE)"

    calibrate(planted.path, ui="none", n_pairs=60)  # 40 oracle answers do not support the cutoff (needs_labels)
    calibrate(planted.path, ui="none", n_pairs=60,
              labels=write_oracle_labels(planted, planted.path / "calibration" / "draw.json", tmp_path / "o.jsonl"))
    detail, summary, rep = audit()
    head = rep["headline"]
    assert head["state"] == "calibrated" and head["flagged"]["count"] > 0
    tt = detail["train_test"]
    assert (tt["count"], tt["n"], tt["rate"]) == (head["flagged"]["count"], 150, head["estimate"])
    assert f"{head['flagged']['count']} of 150 flagged at the cutoff" in summary and "None" not in summary
    # the report's own table says the same
    assert sibling_cell(tt) in rep["audits"]["evaluation"]["markdown"]


def test_val_siblings_not_assessed_says_the_scan_has_no_cutoff(scanned):
    d, _ = scanned
    run_scan(ScanConfig(train=str(d / "train.tsv"), test=str(d / "test.tsv"), out=str(d / "scan0"),
                        baseline_pairs=2000, verified_baseline_pairs=500, progress=False))
    res = runner.invoke(app, ["audit", "--scan", str(d / "scan0"), "--val", str(d / "val.tsv"), "--json"])
    assert res.exit_code == 1, res.output
    detail = json.loads(res.stdout)["checks"]["val_split"]["detail"]
    assert "val_test_siblings" not in detail and detail["val_test"]["test_rows_with_twin"] == 2
    assert detail["near_siblings"].startswith("not assessed: the scan has no cutoff")
    # train's 3 exact copies
    assert detail["train_test"]["count"] == 3 and detail["train_test"]["state"] == "exact_only"
