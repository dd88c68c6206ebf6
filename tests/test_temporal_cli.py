"""``sibscan temporal``: the JSON contract, archive mode (resume, skip, Ray), bad input."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.temporal import ArchiveConfig, ClassifierSpec, classifier_spec, run_archive
from temporal_data import aeon_dataset

runner = CliRunner()

CONTRACT = ("acc_original_mean", "acc_original_std", "acc_permuted_mean", "acc_permuted_std", "runs", "classifier",
            "time_matters", "time_matters_2std")


def test_json_contract(tmp_path):
    train, test = aeon_dataset("ItalyPowerDemand")
    res = runner.invoke(app, ["temporal", str(train), str(test), "--classifier", "euclidean-1nn", "--runs", "3",
                              "--json", "--out", str(tmp_path / "r.json"), "--no-progress"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(CONTRACT) <= set(out)
    assert out["classifier"] == "euclidean-1nn" and out["runs"] == 3
    assert out["acc_original_std"] == pytest.approx(float(np.std(out["acc_original"])))  # population std
    assert out["time_matters"] is False and out["time_matters_2std"] is False  # invariant classifier
    assert json.loads((tmp_path / "r.json").read_text()) == out
    text = runner.invoke(app,
                         ["temporal", str(train), str(test), "-c", "euclidean-1nn", "--runs", "2", "--no-progress"])
    assert text.exit_code == 0 and "verdict: time does not matter" in text.output


@pytest.mark.parametrize("args, message", [
    (["--classifier", "minirockit"], "unknown classifier 'minirockit'; available: catch22, cif, dtw-1nn"),
    (["--runs", "0"], "--runs must be an integer >= 1, got 0"),  # the bound declared on its field
    (["--normalisation", "minmax"], "Invalid value for '--normalisation'"),  # a parser choice: lists demean, znorm
    (["--param", "n_kernels"], "--param takes KEY=VALUE"),
    (["--augment", "0.1"], "apply to --archive only"),
])
def test_options_are_checked_before_reading(tmp_path, args, message):
    res = runner.invoke(app,
                        ["temporal", str(tmp_path / "missing_TRAIN.tsv"), str(tmp_path / "missing_TEST.tsv"), *args])
    assert res.exit_code != 0 and message in res.output, res.output


def test_bad_data_gets_one_line(tmp_path):
    (tmp_path / "v_TRAIN.tsv").write_text("1\t0.1\t0.2\t0.3\n2\t0.4\t0.5\tNaN\n")  # the archive pads with NaN
    (tmp_path / "v_TEST.tsv").write_text("1\t0.1\t0.2\t0.3\n")
    res = runner.invoke(app, ["temporal", str(tmp_path / "v_TRAIN.tsv"), str(tmp_path / "v_TEST.tsv")])
    assert res.exit_code == 1 and "error:" in res.output and "equal-length series" in res.output
    assert "Traceback" not in res.output
    (tmp_path / "s_TRAIN.tsv").write_text("1\t0.1\t0.2\n2\t0.4\t0.5\n")
    (tmp_path / "s_TEST.tsv").write_text("1\t0.3\t0.2\n")
    res = runner.invoke(app, ["temporal", str(tmp_path / "s_TRAIN.tsv"), str(tmp_path / "s_TEST.tsv"),
                              "-c", "euclidean-1nn"])
    assert res.exit_code == 1 and "too small for 5 stratified re-splits" in res.output, res.output


def _archive(tmp_path):
    root = tmp_path / "archive"
    for name in ("GunPoint", "ItalyPowerDemand"):
        (root / name).mkdir(parents=True)
        for src in aeon_dataset(name):
            shutil.copy(src, root / name / src.name)
    (root / "Ragged").mkdir()
    (root / "Ragged" / "Ragged_TRAIN.tsv").write_text("1\t0.1\t0.2\t0.3\n2\t0.4\t0.5\tNaN\n")
    (root / "Ragged" / "Ragged_TEST.tsv").write_text("1\t0.1\t0.2\t0.3\n")
    return root


def test_archive_runs_resumes_and_skips(tmp_path):
    root, out = _archive(tmp_path), tmp_path / "out"
    args = ["temporal", "--archive", str(root), "--out", str(out), "-c", "euclidean-1nn", "--runs", "2",
            "--json", "--no-progress"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["n_complete"] == 2 and summary["skipped"][0]["dataset"] == "Ragged"
    assert "equal-length" in summary["skipped"][0]["reason"]
    assert summary["shares"]["euclidean-1nn"] == {"n": 2, "does_not_matter": 2, "does_not_matter_2std": 2,
                                                  "share": 1.0, "share_2std": 1.0}
    unit = out / "runs" / "GunPoint" / "run1.json"
    stamp = unit.stat().st_mtime_ns
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and json.loads(again.output) == summary
    assert unit.stat().st_mtime_ns == stamp  # resumed: nothing recomputed
    for name in ("temporal.json", "temporal.md", "temporal.html"):
        assert (out / name).is_file()
    other = runner.invoke(app, [*args[:-4], "-c", "rotation-forest", "--runs", "2"])
    assert other.exit_code == 1 and "other options" in other.output
    res = runner.invoke(app, ["temporal", "--archive", str(root), "--out", str(out), "--datasets", "Nope"])
    assert res.exit_code == 1 and "available: GunPoint, ItalyPowerDemand, Ragged" in res.output


def test_archive_augment_reports_wilcoxon_and_ranks(tmp_path):
    root = _archive(tmp_path)
    ridge = ClassifierSpec("ridge", "sklearn.linear_model:RidgeClassifier")  # any estimator by "module:Class"
    config = ArchiveConfig(classifiers=(classifier_spec("euclidean-1nn"), ridge), runs=1, augment=(0.2, 0.5))
    s = run_archive(root, tmp_path / "aug", config, datasets=["GunPoint", "ItalyPowerDemand"], progress=False)
    assert s["levels"] == ["pad0.2", "pad0.5"]
    for clf in ("euclidean-1nn", "ridge"):
        for level in s["levels"]:
            t = s["wilcoxon"][clf][level]
            assert t["n"] == 2 and (t["p_value"] is None or 0 < t["p_value"] <= 1)
        ranks = s["mean_rank"][clf]
        assert set(ranks) == {"original", "pad0.2", "pad0.5"} and all(1 <= r <= 2 for r in ranks.values())
    for v in s["variants"]:  # two classifiers: their mean ranks sum to 3
        assert s["mean_rank"]["euclidean-1nn"][v] + s["mean_rank"]["ridge"][v] == pytest.approx(3)
    html = (tmp_path / "aug" / "temporal.html").read_text()
    assert "<svg" in html and "mean rank" in html
    euclid = [r for r in s["datasets"] if r["classifier"] == "euclidean-1nn" and r["dataset"] == "GunPoint"][0]
    assert euclid["pad0.5"] < euclid["original"]  # misalignment hurts lock-step Euclidean 1-NN


@pytest.mark.slow  # starts a local Ray
def test_archive_ray_equals_local(tmp_path, local_ray):
    root = _archive(tmp_path)
    config = ArchiveConfig.build(["euclidean-1nn"], runs=2)
    local = run_archive(root, tmp_path / "local", config, progress=False)
    remote = run_archive(root, tmp_path / "ray", config, engine="ray", progress=False)
    assert remote["datasets"] == [dict(r, seconds=remote["datasets"][i]["seconds"])
                                  for i, r in enumerate(local["datasets"])]
    assert remote["skipped"] == local["skipped"]


def test_report_shows_the_temporal_section_of_its_own_data(tmp_path):
    train, test = aeon_dataset("ItalyPowerDemand")
    scan = tmp_path / "scan"
    res = runner.invoke(app, ["scan", "--train", str(train), "--test", str(test), "--out", str(scan), "--no-verify",
                              "--baseline-pairs", "2000", "--no-progress"])
    assert res.exit_code == 0, res.output
    other_train, other_test = aeon_dataset("GunPoint")
    res = runner.invoke(app, ["temporal", str(other_train), str(other_test), "-c", "euclidean-1nn", "--runs", "2",
                              "--scan", str(scan), "--no-progress"])
    assert res.exit_code == 1 and "is not the train split scanned" in res.output
    res = runner.invoke(app, ["temporal", str(train), str(test), "-c", "euclidean-1nn", "--runs", "2",
                              "--scan", str(scan), "--json", "--no-progress"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.output)
    res = runner.invoke(app, ["report", str(scan)])
    assert res.exit_code == 0, res.output
    report = json.loads((scan / "report.json").read_text())
    sec = report["audits"]["temporal"]["data"]
    for key in CONTRACT:
        assert sec[key] == result[key]  # one quantity, one value
    assert sec["verdict"] == "time does not matter (within 1 std)"
    md = (scan / "report.md").read_text()
    assert "## Temporal information" in md and f"{result['acc_original_mean']:.3f} ± {result['acc_original_std']:.3f}" in md
    assert "<h2>Temporal information</h2>" in (scan / "report.html").read_text()
