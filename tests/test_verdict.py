"""One verdict (issue 30): the sibling decision of a scan at a cutoff lives in sibscan.verdict.Verdict, and
every output prints the same sentence from it: the scan summary, calibrate, report.json / .md / .html,
check, split and Scan.rate."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import sibscan
from _helpers import oracle_file
from planted_scan import planted_scan
from sibscan.cli import app
from sibscan.verdict import Verdict

runner = CliRunner()
WIDE = {"COLUMNS": "4000"}  # a sentence is one line on the terminal too


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A planted scan calibrated with 60 oracle labels through the CLI, and what calibrate printed."""
    tmp = tmp_path_factory.mktemp("verdict")
    planted = planted_scan(tmp / "scan", n_train=300, n_test=150, rate=0.1, seed=3)
    cal_dir = planted.path / "calibration"
    res = runner.invoke(app, ["calibrate", str(planted.path), "--ui", "none"], env=WIDE)
    assert res.exit_code == 0, res.output
    labels = oracle_file(tmp, planted, cal_dir)
    res = runner.invoke(app, ["calibrate", str(planted.path), "--ui", "none", "--labels", str(labels)], env=WIDE)
    assert res.exit_code == 0, res.output
    return planted.path, res.stdout


def test_every_output_prints_the_verdicts_sentence(calibrated, tmp_path):
    path, calibrate_out = calibrated
    verdict = Verdict.open(path)
    text = verdict.sentence
    assert verdict.headline["state"] in ("calibrated", "needs_labels") and "60" in text, text
    outputs = {"calibrate": calibrate_out}
    res = runner.invoke(app, ["report", str(path), "--out", str(tmp_path / "rep")], env=WIDE)
    assert res.exit_code == 0, res.output
    outputs["report (stdout)"] = res.stdout
    outputs["report.json"] = json.loads((tmp_path / "rep" / "report.json").read_text())["headline"]["text"]
    outputs["report.md"] = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "report.html").read_text()
    outputs["report.html"] = html.replace("&#x27;", "'").replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&")
    res = runner.invoke(app, ["check", str(path), "--max-rate", "1.0"], env=WIDE)
    assert res.exit_code == 0, res.output
    outputs["check"] = res.stdout
    res = runner.invoke(app, ["split", str(path), "--out", str(tmp_path / "groups.csv")], env=WIDE)
    assert res.exit_code == 0, res.output
    outputs["split"] = res.stdout
    outputs["Scan.rate"] = sibscan.Scan(path).rate["text"]
    missing = [name for name, out in outputs.items() if text not in out]
    assert not missing, (text, {name: outputs[name][:400] for name in missing})


def test_the_scan_summary_prints_the_verdicts_sentence(tmp_path):
    d = tmp_path
    values = np.random.default_rng(0).normal(size=(41, 12)).cumsum(axis=1)  # random walks: no two alike
    rows = [f"{i}," + ",".join(f"{v:.6f}" for v in row) for i, row in enumerate(values)]
    header = "id," + ",".join(f"v{j}" for j in range(12)) + "\n"
    (d / "train.csv").write_text(header + "\n".join(rows[:40]) + "\n")
    (d / "test.csv").write_text(header + "\n".join(rows[:5] + rows[40:]) + "\n")  # five copies and a fresh walk
    res = runner.invoke(app,
                        ["scan", str(d / "train.csv"), str(d / "test.csv"), "--out", str(d / "s"), "--cutoff", "0.99",
                              "--id", "id", "--no-verify", "--baseline-pairs", "200", "-q"], env=WIDE)
    assert res.exit_code == 0, res.output
    text = Verdict.open(d / "s").sentence
    assert f"  {text}." in res.stdout.splitlines(), (text, res.stdout)
    assert text.startswith("5 of 6 test items"), text  # the five copies; item 100 is no copy


def test_a_verdict_reads_each_part_once(calibrated, monkeypatch):
    """Opened once, a verdict resolves the cutoff and reads the labels once, however many outputs read it."""
    import sibscan.verdict.verdict as vmod

    calls = []
    real = vmod.cutoff_and_labels
    monkeypatch.setattr(vmod, "cutoff_and_labels", lambda *a, **k: calls.append(1) or real(*a, **k))
    verdict = Verdict.open(calibrated[0])
    for _ in range(3):
        verdict.headline, verdict.flags, verdict.sentence
    from sibscan.report.compute import build_report
    from sibscan.groups import group_table

    report = build_report(verdict)
    group_table(verdict)
    assert calls == [1] and report["headline"] == verdict.headline
    with pytest.raises(TypeError, match="Verdict carries its cutoff"):
        build_report(verdict, cutoff=0.5)


def test_the_report_crosses_into_the_verdict_package_once():
    """build_report reads the decision from one Verdict: its module imports nothing else of sibscan.verdict
    (before, it assembled the cutoff, labels, scores, flags per direction and chance count from seven
    modules itself)."""
    import ast
    import inspect

    import sibscan.report.compute as compute

    names = set()
    for node in ast.walk(ast.parse(inspect.getsource(compute))):
        if isinstance(node, ast.ImportFrom) and node.module and "verdict" in node.module:
            names |= {f"{node.module}.{a.name}" for a in node.names}
    assert names == {"verdict.Verdict"}, names
