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
