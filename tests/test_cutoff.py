"""The one cutoff policy: precedence, its record, and the same refusal from every command."""
from __future__ import annotations

import numpy as np
import pytest
from planted_scan import make_scan
from typer.testing import CliRunner

from sibscan.verdict.record import Calibration, write_calibration
from sibscan.cli import app
from sibscan.stats import check_cutoff_value
from sibscan.verdict.cutoff import Cutoff, resolve_cutoff
from sibscan.errors import CompatibilityError, SibscanError
from sibscan.store.scandir import ScanDir

runner = CliRunner()


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    make_scan(d, cutoff=0.9, cutoff_source="uncalibrated")
    return d


def _calibration(path, manifest, cutoff=0.95):
    cal = Calibration(cutoff, (cutoff - 0.01, cutoff + 0.01), "verified", manifest["encoder"]["identity"],
                      manifest["verifier"]["identity"], manifest["dataset_fingerprint"], n_labels={"same": 9})
    write_calibration(path, cal)
    return path


def test_precedence_hand_calibration_own_manifest_none(scan, tmp_path):
    manifest = ScanDir(scan).manifest()
    recorded = resolve_cutoff(manifest, scan_dir=scan)
    assert (recorded.value, recorded.kind, recorded.evidence["score"]) == (0.9, "uncalibrated", "verified")
    given = _calibration(tmp_path / "cal", manifest)
    assert resolve_cutoff(manifest, calibration=str(given)).record()["source"] == "calibrated"
    assert resolve_cutoff(manifest, cutoff=0.5, scan_dir=scan).kind == "uncalibrated"
    own = _calibration(scan / "calibration", manifest, cutoff=0.97)
    try:
        picked = resolve_cutoff(manifest, scan_dir=scan)
        assert (picked.value, picked.kind, picked.evidence["calibration"]) == (0.97, "calibrated", str(own))
        assert resolve_cutoff(manifest).value == 0.9  # the own calibration only where a scan_dir is passed
    finally:
        for f in own.iterdir():
            f.unlink()
        own.rmdir()
    assert resolve_cutoff({**manifest, "cutoff": None}).kind == "none"
    with pytest.raises(SibscanError, match="give --cutoff or --calibration, not both"):
        resolve_cutoff(manifest, cutoff=0.5, calibration=str(given))
    with pytest.raises(CompatibilityError, match="recalibrate this scan"):
        resolve_cutoff({**manifest, "dataset_fingerprint": "other"}, calibration=str(given))


def test_a_folder_without_cutoff_json_has_no_calibration_and_an_unreadable_one_is_refused(scan, tmp_path):
    # the one loader of "this folder's cutoff.json if there is one" (resolve_cutoff's own calibration,
    # the calibration a refit replaces, the fingerprint of a calibration's answers)
    from sibscan.verdict.record import calibration_in

    assert calibration_in(tmp_path / "empty") is None
    assert calibration_in(_calibration(tmp_path / "cal", ScanDir(scan).manifest())).cutoff == 0.95
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cutoff.json").write_text("{")
    with pytest.raises(SibscanError, match=r"is not valid JSON .*; rewrite it with 'sibscan calibrate SCAN_DIR'"):
        calibration_in(tmp_path / "bad")  # a re-run scan reads its own calibration too: the fix, not only the fault
    (tmp_path / "bad" / "cutoff.json").write_text("{}")
    with pytest.raises(SibscanError, match=r"not a sibscan calibration \(missing cutoff, .*\); rewrite it with"):
        calibration_in(tmp_path / "bad")
    (tmp_path / "bad" / "cutoff.json").write_text("null")  # valid JSON, not a record: one line, no TypeError
    with pytest.raises(SibscanError, match="not a sibscan calibration .*JSON NoneType"):
        calibration_in(tmp_path / "bad")


def test_record_round_trip_and_the_old_name_for_a_hand_given_cutoff():
    c = Cutoff(0.8, "uncalibrated", {"score": "similarity", "interval": None})
    assert Cutoff.from_record(c.record()) == Cutoff(0.8, "uncalibrated", {**c.evidence, **{
        k: None for k in ("calibration", "n_labels", "estimates", "status", "rule", "definition", "labeller")},
        "forced": False, "mismatches": []})
    assert Cutoff.from_record({"value": 0.8, "source": "user"}).kind == "uncalibrated"  # reports of schema 1
    assert check_cutoff_value(np.float32(0.5)) == 0.5
    for bad in (3, -1.5, float("nan")):
        with pytest.raises(SibscanError, match=r"--cutoff is a similarity in \[-1, 1\]"):
            check_cutoff_value(bad)


def test_cutoff_3_is_refused_the_same_way_by_scan_report_check_and_split(scan, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text("a,b\n1,2\n3,5\n")
    commands = {
        "scan": ["scan", "--train", str(data), "--test", str(data), "--out", str(tmp_path / "out")],
        "report": ["report", str(scan), "--out", str(tmp_path / "rep")],
        "check": ["check", str(scan), "--max-exact", "0.5"],
        "split": ["split", str(scan), "--out", str(tmp_path / "groups.csv")],
    }
    for name, args in commands.items():
        res = runner.invoke(app, [*args, "--cutoff", "3"])
        assert res.exit_code == 1, (name, res.output)
        assert res.output.strip() == "error: --cutoff is a similarity in [-1, 1], got 3", (name, res.output)
    assert not (tmp_path / "out").exists() and not (tmp_path / "rep").exists() and not (tmp_path / "groups.csv").exists()
