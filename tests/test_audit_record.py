"""The run record: input hashes, environment, start/end, resumed only when the identity matches, and
``sibscan audit --verify`` that fails when an input changed."""
from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

from sibscan.audit import AuditConfig, run_audit, verify_run
from sibscan.runrecord import hash_path
from sibscan.cli import app
from sibscan.errors import SibscanError

runner = CliRunner()


@pytest.fixture
def run_inputs(tmp_path):
    t = tmp_path / "targets.csv"
    t.write_text("id,target\n" + "".join(f"{i},{i % 3}\n" for i in range(30)))
    p = tmp_path / "pred.csv"
    p.write_text("id,prediction\n" + "".join(f"{i},{(i * 7) % 3}\n" for i in range(30)))
    return p, t


def test_record_written_and_resumed_only_for_the_same_run(tmp_path, run_inputs):
    p, t = run_inputs
    out = tmp_path / "run"
    cfg = AuditConfig(predictions=[p], targets=t, out=out, model_revision="abc123", seeds=["7"])
    r = run_audit(cfg)
    m = json.loads((out / "manifest.json").read_text())
    rec = m["run"]
    assert m["kind"] == "audit" and m["status"] == "complete" and rec["status"] == "complete"
    assert {i["role"]: i["sha256"] for i in rec["inputs"]} == {
        "predictions": hashlib.sha256(p.read_bytes()).hexdigest(),
        "targets": hashlib.sha256(t.read_bytes()).hexdigest()}
    assert rec["model_revision"] == "abc123" and rec["seeds"] == ["7"] and rec["resumed"] is False
    assert rec["started"] and rec["ended"] and rec["environment"]["python"] and "numpy" in rec["environment"]["packages"]
    assert rec["samples"]["runs"]["pred.csv"]["scored"] == 30
    assert json.loads((out / "audit.json").read_text())["passed"] == r.passed
    assert "## Honest reporting" in (out / "audit.md").read_text()
    # the same run again: accepted and marked resumed
    again = run_audit(cfg)
    assert again.record["resumed"] is True and again.record["previous_started"] == rec["started"]
    # another run into the same folder: refused, unless forced
    t.write_text(t.read_text().replace("29,2", "29,1"))
    with pytest.raises(SibscanError, match="another run .inputs changed: targets targets.csv.; pass --force"):
        run_audit(cfg)
    forced = run_audit(AuditConfig(predictions=[p], targets=t, out=out, force=True))
    assert forced.record["resumed"] is False


def test_verify_passes_then_fails_when_an_input_changes(tmp_path, run_inputs):
    p, t = run_inputs
    out = tmp_path / "run"
    run_audit(AuditConfig(predictions=[p], targets=t, out=out))
    res = runner.invoke(app, ["audit", "--verify-run", str(out)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("OK: all 2 inputs match")
    p.write_text(p.read_text() + "30,1\n")
    res = runner.invoke(app, ["audit", "--verify-run", str(out), "--json"])
    assert res.exit_code == 1
    files = {f["role"]: f["status"] for f in json.loads(res.stdout)["files"]}
    assert files == {"predictions": "changed", "targets": "match"}
    t.unlink()
    assert {f["role"]: f["status"] for f in verify_run(out).files}["targets"] == "missing"


def test_folder_hash_sees_content_and_names(tmp_path):
    d = tmp_path / "imgs"
    (d / "a").mkdir(parents=True)
    (d / "a" / "1.txt").write_text("one")
    (d / "2.txt").write_text("two")
    h = hash_path(d)
    assert h["kind"] == "folder" and h["files"] == 2 and h["bytes"] == 6
    (d / "2.txt").write_text("tw0")
    h2 = hash_path(d)
    (d / "2.txt").rename(d / "3.txt")
    assert len({h["sha256"], h2["sha256"], hash_path(d)["sha256"]}) == 3


def test_verify_bad_folder(tmp_path):
    res = runner.invoke(app, ["audit", "--verify-run", str(tmp_path)])
    assert res.exit_code == 1 and "no manifest.json" in res.stderr and "Traceback" not in res.output
    (tmp_path / "manifest.json").write_text('{"sibscan_version": "0.1.0"}')
    with pytest.raises(SibscanError, match="has no run record"):
        verify_run(tmp_path)


def test_out_folder_of_something_else_is_refused(tmp_path, run_inputs):
    p, t = run_inputs
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(SibscanError, match="is not an audit folder"):
        run_audit(AuditConfig(predictions=[p], targets=t, out=tmp_path / "busy"))
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_environment_lists_a_package_installed_after_an_earlier_record(tmp_path, monkeypatch):
    """The package list is read once per state of sys.path's folders: installing into one shows up."""
    from sibscan.runrecord import environment

    def install(name, version):
        info = tmp_path / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")

    install("sibscan-probe-a", "1.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = environment()["packages"]
    assert first["sibscan-probe-a"] == "1.0" and "sibscan-probe-b" not in first
    assert environment()["packages"] == first
    install("sibscan-probe-b", "2.0")
    assert environment()["packages"]["sibscan-probe-b"] == "2.0"
