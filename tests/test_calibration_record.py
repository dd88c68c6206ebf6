"""A calibration kept in the repository (calibration/demo-series/), named from a config preset."""
from __future__ import annotations

import runpy
import shutil
from pathlib import Path

import pytest

from sibscan.config import ScanConfig, load_config_file
from sibscan.errors import CompatibilityError
from sibscan.scan import run_scan

# the kept calibration was fitted on the verified (lagcorr) score: a scan without torch cannot match it
pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    runpy.run_path(str(ROOT / "examples" / "make_demo.py"), run_name="make_demo")["main"](["make_demo.py", str(out)])
    return out


def test_preset_uses_the_kept_calibration(demo):
    cfg = ScanConfig().merged(load_config_file("demo-series")).merged(
        {"train": str(demo / "series_train.tsv"), "test": str(demo / "series_test.tsv"), "out": str(demo / "scan"),
         "progress": False})
    result = run_scan(cfg)
    cut = result.manifest["cutoff"]
    assert cut["source"] == "calibrated" and cut["calibration"].endswith("demo-series")
    assert cut["value"] == pytest.approx(0.9963, abs=5e-4)
    # the planted siblings: 10 exact copies and 10 rescaled noisy copies among 200 test rows
    assert result.summary["siblings"] == 20 and result.summary["exact_test_rows_with_train_twin"] == 10


def test_kept_calibration_refuses_other_data(demo, tmp_path):
    rows = (demo / "series_test.tsv").read_text().splitlines()
    (tmp_path / "test.tsv").write_text("\n".join(rows[:-1]) + "\n")  # one test row fewer: other data
    shutil.copy(demo / "series_train.tsv", tmp_path / "train.tsv")
    cfg = ScanConfig().merged(load_config_file("demo-series")).merged(
        {"train": str(tmp_path / "train.tsv"), "test": str(tmp_path / "test.tsv"), "out": str(tmp_path / "scan"),
         "progress": False})
    with pytest.raises(CompatibilityError, match="dataset"):
        run_scan(cfg)
    assert not (tmp_path / "scan").exists()  # refused before anything was written


def test_kept_calibration_says_oracle_labels_and_is_fitted_by_todays_rule(demo, tmp_path):
    """Its answers were written from the planted truth: every output says 'oracle labels', and the cutoff is
    described as the text demo's calibration (today's rule) describes its own."""
    import json

    from sibscan.calibration import load_calibration, resolve
    from sibscan.verdict.cutoffrule import RULE
    from sibscan.report import write_reports

    folder = resolve("demo-series")
    cal = load_calibration(folder)
    records = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines()]
    assert cal.rule == RULE and cal.status == "ok" and cal.extra["labeller"] == "oracle"
    assert records and all(r["labeller"] == "oracle" for r in records)
    assert "oracle labels" in (folder / "README.md").read_text()
    cfg = ScanConfig().merged(load_config_file("demo-series")).merged(
        {"train": str(demo / "series_train.tsv"), "test": str(demo / "series_test.tsv"), "out": str(tmp_path / "scan"),
         "progress": False})
    run_scan(cfg)
    written = write_reports(tmp_path / "scan", formats=["json", "md", "html"])
    head = json.loads(written["json"].read_text())["headline"]
    n = cal.extra["n_labels_used"]
    assert head["labeller"] == "oracle" and head["state"] == "calibrated" and head["n_labels"] == n
    said = f"calibrated with {n} oracle labels; flagged at verified similarity ≥ 0.9963, the lowest score from which " \
           "P(same) of the oracle labels, by its 95 % lower bound per run of answers, is 0.5 or more"
    for fmt in ("md", "html"):
        text = written[fmt].read_text()
        assert said in text and "hand label" not in text, fmt
