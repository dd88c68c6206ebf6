"""Model selection on the right split: a checkpoint chosen on test fails, one chosen on validation passes."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sibscan.audit.selection import selection_check
from sibscan.cli import app
from sibscan.errors import InputError, SibscanError

CSV = """epoch,val_accuracy,test_accuracy,val_loss,test_loss
1,0.70,0.69,0.90,0.95
2,0.78,0.74,0.60,0.66
3,0.81,0.76,0.50,0.58
4,0.80,0.79,0.52,0.49
5,0.79,0.77,0.55,0.52
"""


@pytest.fixture
def ckpts(tmp_path):
    path = tmp_path / "ckpts.csv"
    path.write_text(CSV)
    return path


def test_chosen_on_test_fails_with_the_difference(ckpts):
    c = selection_check(ckpts, reported="4", metric="accuracy")
    assert not c.passed
    d = c.detail
    assert d["chosen_on"] == "test" and d["best_on_validation"] == ["3"] and d["best_on_test"] == ["4"]
    assert d["test_at_reported"] == 0.79 and d["test_at_best_on_validation"] == 0.76
    assert d["difference"] == pytest.approx(0.03) and d["direction"] == "max"
    assert "best on test, not on validation" in c.summary


def test_chosen_on_validation_passes(ckpts):
    c = selection_check(ckpts, reported="3", metric="accuracy")
    assert c.passed and c.detail["chosen_on"] == "validation" and c.detail["difference"] == 0.0


def test_loss_is_minimised_and_reported_column(tmp_path, ckpts):
    c = selection_check(ckpts, reported="4", metric="loss")
    assert c.detail["direction"] == "min" and c.detail["best_on_validation"] == ["3"] and not c.passed
    marked = tmp_path / "marked.csv"
    marked.write_text("step,val,test,reported\n10,0.5,0.6,\n20,0.7,0.65,x\n30,0.6,0.7,\n")
    c = selection_check(marked, mode="max")
    assert c.passed and c.detail["reported"] == "20"
    with pytest.raises(SibscanError, match="--mode max or --mode min"):
        selection_check(marked)


def test_cli_selection_exit_code_and_json(ckpts):
    runner = CliRunner()
    res = runner.invoke(app, ["audit", "--selection", str(ckpts), "--reported", "4", "--metric", "accuracy", "--json"])
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["checks"]["selection"]["passed"] is False and out["checks"]["val_split"]["passed"] is True
    res = runner.invoke(app, ["audit", "--selection", str(ckpts), "--reported", "3", "--metric", "accuracy"])
    assert res.exit_code == 0, res.output
    assert "PASS  selection" in res.stdout


def test_selection_bad_input(tmp_path, ckpts):
    with pytest.raises(SibscanError, match="several metrics; choose one with --metric: accuracy, loss"):
        selection_check(ckpts, reported="3")
    with pytest.raises(SibscanError, match="no checkpoint '9' in column 'epoch'; available: 1, 2, 3, 4, 5"):
        selection_check(ckpts, reported="9", metric="accuracy")
    bad = tmp_path / "bad.csv"
    bad.write_text("epoch,val_acc,test_acc\n1,0.7,0.6\n2,oops,0.7\n")
    with pytest.raises(InputError, match=r"bad\.csv, row 3: column 'val_acc' holds 'oops', not a number"):
        selection_check(bad, reported="1")
