"""The command line follows one convention everywhere (sibscan/cli/_common.py): defaults visible in every
--help, flags without a value metavar, data as positionals (the older --train/--test still work),
--json on every command that prints a result, --quiet silences stderr."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from _helpers import cli_commands
from sibscan.cli import app

runner = CliRunner()


COMMANDS = cli_commands()


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) or "sibscan" for p, _ in COMMANDS])
def test_every_help_shows_defaults_and_no_value_metavar_on_flags(path, cmd):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "<bool>" not in text
    assert not re.search(r"\[default: (None|\(\)|\s*)\]", text), text
    for p in cmd.params:
        if p.param_type_name != "option" or p.hidden or p.name == "help":
            continue
        is_flag = p.is_flag and not p.secondary_opts or p.count
        shown = p.show_default not in (False, None) and p.default is not None
        said = re.search(r"default: \S", p.help or "") or "required" in (p.help or "")
        assert p.required or is_flag or shown or said, f"{' '.join(path)} {p.opts[0]}: no default in its help"
        if p.is_flag:
            assert p.metavar == "", f"{' '.join(path)} {p.opts[0]} shows a value metavar"


def test_commands_that_print_a_result_take_json_and_all_take_quiet():
    for path, cmd in COMMANDS:
        if not path or getattr(cmd, "commands", None):
            continue
        opts = {o for p in cmd.params for o in p.opts}
        assert "--quiet" in opts, path
        if path not in (("calibrate",), ("check",)):  # their --json (with the rate's headline) is issue 12's
            assert "--json" in opts, path


@pytest.fixture
def tables(tmp_path):
    rng = np.random.default_rng(1)
    train = rng.normal(size=(30, 12)).cumsum(axis=1)
    test = np.vstack([train[:4], rng.normal(size=(8, 12)).cumsum(axis=1)])
    for name, x in (("train", train), ("test", test)):
        lines = [",".join(f"f{i}" for i in range(12))] + [",".join(repr(float(v)) for v in row) for row in x]
        (tmp_path / f"{name}.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def _fast(out):
    return ["--out", str(out), "--baseline-pairs", "300", "--verified-baseline-pairs", "100", "--no-verify"]


def test_positional_data_and_the_old_form_give_one_scan(tables):
    d = tables
    new = runner.invoke(app, ["scan", str(d / "train.csv"), str(d / "test.csv"), *_fast(d / "a"), "--json", "-q"])
    old = runner.invoke(app, ["scan", "--train", str(d / "train.csv"), "--test", str(d / "test.csv"), *_fast(d / "b"),
                              "--json", "-q"])
    assert new.exit_code == 0 and old.exit_code == 0, new.output + old.output
    assert new.stderr == "" and old.stderr == ""  # --quiet: nothing on stderr
    a, b = json.loads(new.stdout), json.loads(old.stdout)
    assert a["exact_test_rows_with_train_twin"] == b["exact_test_rows_with_train_twin"] == 4
    twice = runner.invoke(app, ["scan", str(d / "train.csv"), str(d / "test.csv"), "--train", str(d / "train.csv"),
                                *_fast(d / "c")])
    assert twice.exit_code == 1 and "train data given twice" in twice.output


def test_report_split_and_index_print_json(tables):
    d = tables
    assert runner.invoke(app, ["scan", str(d / "train.csv"), str(d / "test.csv"), *_fast(d / "s"), "-q"]).exit_code == 0
    rep = runner.invoke(app, ["report", str(d / "s"), "--json", "-q"])
    assert rep.exit_code == 0, rep.output
    out = json.loads(rep.stdout)
    assert out["n_flagged"] == 4 and set(out["written"]) == {"json", "md", "html", "csv"}
    assert out["headline"]["state"] == "not_assessed" and out["headline"]["estimate"] is None  # no cutoff: not a 0 %
    flagged = (d / "s" / "flagged.csv").read_text().splitlines()
    assert len(flagged) == 5 and flagged[0].startswith("test_id,train_id,similarity,score,exact,sibling")
    sp = runner.invoke(app, ["split", str(d / "s"), "--out", str(d / "g.csv"), "--json"])
    assert sp.exit_code == 0 and json.loads(sp.stdout)["n_items"] == 42
    ib = runner.invoke(app, ["index", "build", str(d / "train.csv"), "--out", str(d / "idx"), "--json", "-q"])
    assert ib.exit_code == 0 and json.loads(ib.stdout)["n_items"] == 30
    # a second table without an id column: automatic ids are named after their source and cannot collide
    ia = runner.invoke(app, ["index", "add", str(d / "idx"), str(d / "test.csv"), "--json", "-q"])
    assert ia.exit_code == 0, ia.output
    assert json.loads(ia.stdout) == {**json.loads(ib.stdout), "n_items": 42, "added": 12}
    again = runner.invoke(app, ["index", "add", str(d / "idx"), str(d / "test.csv"), "--json", "-q"])
    assert again.exit_code == 0 and json.loads(again.stdout)["n_items"] == 54
    from sibscan.index import TrainIndex

    ids = TrainIndex.open(d / "idx").items().ids
    assert list(ids[29:32]) == ["29", "test.csv:0", "test.csv:1"] and ids[-1] == "test.csv#2:11"
    info = runner.invoke(app, ["index", "info", str(d / "idx"), "--json"])
    assert json.loads(info.stdout)["n_items"] == 54


def test_twins_of_texts_leave_out_the_fields_about_numeric_rows(tmp_path):
    (tmp_path / "a.txt").write_text("the cat sat\na dog barked\nrain fell\n")
    (tmp_path / "b.txt").write_text("The  cat sat\nan owl hooted\n")
    out = runner.invoke(app, ["twins", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--json"])
    assert out.exit_code == 0, out.output
    rep = json.loads(out.stdout)
    assert rep["modality"] == "text" and rep["test_rows_with_train_twin"] == 1
    assert not {"row_length", "decimals", "znorm", "median_distinct_values_in_twin_rows"} & set(rep)
    assert rep["test_twin_ci"][0] < 0.5 < rep["test_twin_ci"][1]
    text = runner.invoke(app, ["twins", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]).stdout
    assert "(50.00% of test; 95 % CI" in text


def test_in_memory_tables_and_texts_reach_find_twins_and_jsonl_ids(tmp_path):
    pd = pytest.importorskip("pandas")
    from sibscan import find_twins
    from sibscan.loaders import load

    train = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0], "label": ["x", "y", "x"]})
    test = pd.DataFrame({"a": [1.0, 9.0], "b": [4.0, 9.0], "label": ["y", "x"]})
    rep = find_twins(train, test)  # the label column is a label, not a value of the rows
    assert rep.test_rows_with_train_twin == 1 and rep.twin_rows_with_conflicting_label == 1
    assert find_twins(["a b", "c d"], ["A  b", "e"]).test_rows_with_train_twin == 1
    (tmp_path / "t.jsonl").write_text('{"id": "doc7", "text": "a b"}\n{"id": "doc9", "text": "c d"}\n')
    assert load(tmp_path / "t.jsonl", "train").ids.tolist() == ["doc7", "doc9"]  # an id field names its record
    (tmp_path / "d.jsonl").write_text('{"id": 1, "text": "a b"}\n{"id": 1, "text": "c d"}\n')
    from sibscan.errors import InputError
    with pytest.raises(InputError, match=r"duplicate id '1' in column 'id' \(rows 1 and 2\)"):  # as --id id: refused,
        load(tmp_path / "d.jsonl", "train")  # never replaced by record numbers (README: duplicate ids are refused)


def test_the_console_command_prints_a_warning_as_one_line(tmp_path):
    """`sibscan report` on an unfinished scan warned as Python does ("…/compute.py:126: UserWarning: …" and
    the source line); the command prints "warning: …" only."""
    import subprocess
    import sys

    from planted_scan import make_scan
    from sibscan.store.scandir import ScanDir

    make_scan(tmp_path)
    sd = ScanDir(tmp_path)
    sd.write_manifest({**sd.manifest(), "status": "running"})
    proc = subprocess.run([sys.executable, "-m", "sibscan", "report", str(tmp_path), "--json"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if "is not complete" in ln]
    assert said == [f"warning: the scan in {tmp_path} is not complete (status 'running'); the report covers what it holds"]
    assert "UserWarning" not in proc.stderr and "warnings.warn" not in proc.stderr
