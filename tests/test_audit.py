"""``sibscan audit``: each check on data built to fail it and on data that passes, the JSON contract,
several seeds, and bad input (one line naming the file and the fix)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.audit import AuditConfig, run_audit
from sibscan.cli import app
from sibscan.errors import InputError, SibscanError

runner = CliRunner()


def write_csv(path, ids, values, field="prediction", status=None):
    head = "id," + field + (",status" if status is not None else "")
    rows = [f"{i},{v}" + (f",{s}" if status is not None else "") for i, v, s in
            zip(ids, values, status if status is not None else [None] * len(ids))]
    path.write_text(head + "\n" + "\n".join(rows) + "\n")
    return path


def regression(tmp_path, n=200, seed=0):
    """Targets around 5 and predictions off by 0.2 to 1 (4 to 20 %): every check passes."""
    rng = np.random.default_rng(seed)
    y = rng.normal(5.0, 1.0, n)
    p = y + rng.choice([-1.0, 1.0], n) * rng.uniform(0.2, 1.0, n)
    ids = [f"s{i}" for i in range(n)]
    return ids, y, p, write_csv(tmp_path / "targets.csv", ids, y, "target")


def audit(*args):
    res = runner.invoke(app, ["audit", *map(str, args), "--json"])
    return res, (json.loads(res.stdout) if res.stdout.strip().startswith("{") else None)


def test_json_contract_and_exit_code_on_passing_data(tmp_path):
    ids, y, p, t = regression(tmp_path)
    pred = write_csv(tmp_path / "pred.csv", ids, p)
    res, out = audit("--predictions", pred, "--targets", t)
    assert res.exit_code == 0, res.output
    assert out["passed"] is True and out["task"] == "regression"
    assert set(out["checks"]) == {"nan_free", "not_targets", "near_perfect_share", "denominator"}
    for check in out["checks"].values():
        assert set(check) == {"passed", "detail"} and check["passed"] is True
    assert out["metrics"]["rmse"]["mean"] == pytest.approx(np.sqrt(np.mean((p - y) ** 2)), rel=1e-9)


def test_nan_free_fails_on_nan_and_inf(tmp_path):
    ids, y, p, t = regression(tmp_path)
    p = p.astype(object)
    p[3], p[17] = "nan", "inf"
    res, out = audit("--predictions", write_csv(tmp_path / "pred.csv", ids, p), "--targets", t)
    assert res.exit_code == 1 and out["passed"] is False
    nan = out["checks"]["nan_free"]
    assert nan["passed"] is False and nan["detail"]["rows"] == 2 and nan["detail"]["first"] == ["s3", "s17"]
    assert out["metrics"]["rmse"]["mean"] is None  # undefined, not computed over a quietly smaller set


def test_nan_free_for_class_labels(tmp_path):
    t = write_csv(tmp_path / "t.csv", ["a", "b", "c"], ["cat", "dog", "cat"], "label")
    good = run_audit(AuditConfig(predictions=[write_csv(tmp_path / "p.csv", ["a", "b", "c"], ["cat", "cat", "dog"])],
                                 targets=t))
    bad = run_audit(AuditConfig(predictions=[write_csv(tmp_path / "q.csv", ["a", "b", "c"], ["cat", "", "dog"])],
                                targets=t))
    assert good.checks["nan_free"].passed and not bad.checks["nan_free"].passed
    assert bad.checks["nan_free"].detail["first"] == ["b"]


def test_not_targets_fails_when_predictions_are_the_targets(tmp_path):
    ids, y, p, t = regression(tmp_path)
    res, out = audit("--predictions", write_csv(tmp_path / "pred.csv", ids, y + 1e-9), "--targets", t)
    assert res.exit_code == 1
    assert out["checks"]["not_targets"]["passed"] is False and out["checks"]["not_targets"]["detail"]["identical"]
    # a tighter tolerance sees the 1e-9 difference
    res, out = audit("--predictions", tmp_path / "pred.csv", "--targets", t, "--rtol", "0", "--atol", "1e-12")
    assert out["checks"]["not_targets"]["passed"] is True


def test_not_targets_for_labels(tmp_path):
    t = write_csv(tmp_path / "t.csv", list("abcd"), [1, 2, 1, 2], "target")
    same = run_audit(AuditConfig(predictions=[write_csv(tmp_path / "p.csv", list("abcd"), [1, 2, 1, 2])], targets=t))
    assert same.task == "classification" and not same.checks["not_targets"].passed
    other = run_audit(AuditConfig(predictions=[write_csv(tmp_path / "q.csv", list("abcd"), [1, 2, 2, 2])], targets=t))
    assert other.checks["not_targets"].passed


def forecast_arrays(tmp_path, n=40, steps=12, grid=8, init=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, steps, grid)).cumsum(axis=1) + 3.0
    p = y + rng.normal(scale=0.3, size=y.shape)
    p[:, :init] = y[:, :init]  # the given initial condition, copied
    np.save(tmp_path / "y.npy", y)
    return y, p


def test_init_window_kept_passes_and_changed_fails(tmp_path):
    y, p = forecast_arrays(tmp_path)
    np.save(tmp_path / "good.npy", p)
    bad = p.copy()
    bad[5, 1, 2] += 0.25
    np.save(tmp_path / "bad.npy", bad)
    res, out = audit(tmp_path / "good.npy", "--targets", tmp_path / "y.npy", "--init-steps", 3)
    assert res.exit_code == 0, res.output
    assert out["task"] == "forecast" and out["checks"]["init_window"]["passed"] is True
    res, out = audit(tmp_path / "bad.npy", "--targets", tmp_path / "y.npy", "--init-steps", 3)
    assert res.exit_code == 1
    d = out["checks"]["init_window"]["detail"]
    assert d["samples_changed"] == 1 and d["first"] == ["5"] and d["max_abs_diff"] == pytest.approx(0.25)


def test_init_window_is_left_out_of_not_targets_and_metrics(tmp_path):
    y, p = forecast_arrays(tmp_path)
    np.save(tmp_path / "p.npy", p)
    r = run_audit(AuditConfig(predictions=[tmp_path / "p.npy"], targets=tmp_path / "y.npy", init_steps=3))
    e = p[:, 3:] - y[:, 3:]
    assert r.metrics["rmse"]["mean"] == pytest.approx(np.sqrt(np.mean(e ** 2)))
    assert r.checks["not_targets"].detail["compared"] == "predicted window"


def test_near_perfect_share_five_percent_fails_and_half_percent_passes(tmp_path):
    ids, y, p, t = regression(tmp_path)
    five = p.copy()
    five[:10] = y[:10] * (1 + 1e-5)  # 10 of 200 = 5 % near-perfect (relative error 1e-5 < 1e-3)
    res, out = audit("--predictions", write_csv(tmp_path / "five.csv", ids, five), "--targets", t)
    npf = out["checks"]["near_perfect_share"]
    assert res.exit_code == 1 and npf["passed"] is False
    assert npf["detail"]["share"] == pytest.approx(0.05) and npf["detail"]["count"] == 10
    assert out["checks"]["not_targets"]["passed"] is True  # 190 samples differ: not a copy of the targets
    half = p.copy()
    half[:1] = y[:1]
    res, out = audit("--predictions", write_csv(tmp_path / "half.csv", ids, half), "--targets", t)
    assert out["checks"]["near_perfect_share"]["passed"] is True
    assert out["checks"]["near_perfect_share"]["detail"]["share"] == pytest.approx(0.005)


def test_denominator_counts_missing_duplicate_extra_and_failed(tmp_path):
    ids, y, p, t = regression(tmp_path, n=20)
    rows_ids = ids[1:] + ["s5", "zz"]  # s0 missing, s5 twice, zz unknown
    vals = list(p[1:]) + [p[5], 1.0]
    status = ["ok"] * 19 + ["ok", "ok"]
    status[6] = "timeout"  # s7
    pred = write_csv(tmp_path / "pred.csv", rows_ids, vals, status=status)
    res, out = audit("--predictions", pred, "--targets", t)
    assert res.exit_code == 1
    d = out["checks"]["denominator"]["detail"]
    assert d["missing"] == {"count": 1, "first": ["s0"]}
    assert d["duplicate"] == {"count": 1, "first": ["s5"]}
    assert d["extra"] == {"count": 1, "first": ["zz"]}
    assert d["failed"]["by_status"] == {"timeout": 1} and d["failed"]["first"] == ["s7"]
    assert d["scored"] == 18  # 20 targets - s0 missing - s7 timed out
    assert out["metrics"]["rmse"]["n"] == {"pred.csv": 18}


def test_denominator_by_position(tmp_path):
    ids, y, p, t = regression(tmp_path, n=10)
    (tmp_path / "short.txt").write_text("\n".join(map(str, p[:8])) + "\n")
    r = run_audit(AuditConfig(predictions=[tmp_path / "short.txt"], targets=t))
    d = r.checks["denominator"].detail
    assert not r.checks["denominator"].passed and d["matched_by"] == "position"
    assert d["missing"]["count"] == 2 and d["missing"]["first"] == ["s8", "s9"]
    (tmp_path / "full.txt").write_text("\n".join(map(str, p)) + "\n")
    assert run_audit(AuditConfig(predictions=[tmp_path / "full.txt"], targets=t)).checks["denominator"].passed


def test_several_seeds_mean_std_and_warning(tmp_path):
    ids, y, _, t = regression(tmp_path)
    rng = np.random.default_rng(1)
    files, rmses = [], []
    for s in range(3):
        p = y + rng.choice([-1.0, 1.0], len(y)) * rng.uniform(0.2, 0.5 + 0.2 * s, len(y))
        rmses.append(np.sqrt(np.mean((p - y) ** 2)))
        files.append(write_csv(tmp_path / f"seed{s}.csv", ids, p))
    # --predictions a b c: the option takes one, the rest are positional; both forms add up
    res, out = audit("--predictions", files[0], files[1], files[2], "--targets", t, "--seeds", "0,1,2")
    assert res.exit_code == 0, res.output
    assert out["n_runs"] == 3 and out["warnings"] == []
    m = out["metrics"]["rmse"]
    assert m["mean"] == pytest.approx(np.mean(rmses)) and m["std"] == pytest.approx(np.std(rmses, ddof=1))
    assert out["reporting"]["seeds"] == {"n_runs": 3, "values": ["0", "1", "2"]}
    # a folder is its files; two runs draw the warning
    (tmp_path / "runs").mkdir()
    for f in files[:2]:
        (tmp_path / "runs" / f.name).write_text(f.read_text())
    res = runner.invoke(app, ["audit", str(tmp_path / "runs"), "--targets", str(t)])
    assert res.exit_code == 0 and "only 2 runs" in res.stderr and "± " in res.stdout


def test_one_seed_failing_fails_the_check(tmp_path):
    ids, y, p, t = regression(tmp_path)
    a = write_csv(tmp_path / "a.csv", ids, p)
    bad = p.astype(object)
    bad[0] = "nan"
    b = write_csv(tmp_path / "b.csv", ids, bad)
    r = run_audit(AuditConfig(predictions=[a, b], targets=t))
    c = r.checks["nan_free"]
    assert not c.passed and c.detail["runs"]["a.csv"]["passed"] and not c.detail["runs"]["b.csv"]["passed"]


def test_val_split(tmp_path):
    rng = np.random.default_rng(0)
    train, val, test = (rng.normal(size=(n, 6)) for n in (30, 10, 12))
    val[:2] = test[:2]  # two test items copied into validation
    labels = lambda n: np.array(["1", "2"] * n)[:n]  # noqa: E731
    for name, X in (("train", train), ("val", val), ("test", test)):
        (tmp_path / f"{name}.tsv").write_text("".join(f"{lab}\t" + "\t".join(f"{v:.6f}" for v in row) + "\n"
                                                      for lab, row in zip(labels(len(X)), X)))
    (tmp_path / "pred.csv").write_text("prediction\n" + "\n".join(labels(12)[::-1]) + "\n")
    base = dict(predictions=[tmp_path / "pred.csv"], targets=tmp_path / "test.tsv")
    no_val = run_audit(AuditConfig(**base, train=tmp_path / "train.tsv"))
    assert not no_val.checks["val_split"].passed and no_val.checks["val_split"].detail["validation_split"] is False
    leaky = run_audit(AuditConfig(**base, val=tmp_path / "val.tsv")).checks["val_split"]
    assert not leaky.passed and leaky.detail["val_test"]["test_rows_with_twin"] == 2
    assert leaky.detail["val_test"]["first_test_ids"] == ["0", "1"]
    (tmp_path / "val.tsv").write_text("".join((tmp_path / "val.tsv").read_text().splitlines(True)[2:]))
    clean = run_audit(AuditConfig(**base, val=tmp_path / "val.tsv", train=tmp_path / "train.tsv"))
    assert clean.checks["val_split"].passed and clean.checks["val_split"].detail["train_test"]["test_rows_with_twin"] == 0
    assert clean.reporting["validation_split"] == "yes"


@pytest.mark.parametrize("args, match", [
    (["--max-perfect-share", "5"], "fraction in"),
    (["--published", "acc=0.8"], "unknown metric 'acc' in --published; available: accuracy"),
    (["--reported", "3"], "add --selection"),
])
def test_bad_options_refused_before_reading(tmp_path, args, match):
    res = runner.invoke(app, ["audit", str(tmp_path / "nope.csv"), "--targets", str(tmp_path / "nope.csv"), *args])
    assert res.exit_code == 1 and match in res.stderr and "Traceback" not in res.output


def test_a_bad_task_is_refused_by_the_parser_with_the_choices(tmp_path):
    res = runner.invoke(app, ["audit", str(tmp_path / "nope.csv"), "--task", "regresion"], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "'regresion' is not one of 'auto', 'classification', 'regression'" in res.output


def test_bad_input_names_file_and_row(tmp_path):
    ids, y, p, t = regression(tmp_path, n=5)
    vals = list(map(str, p))
    vals[2] = "high"
    pred = write_csv(tmp_path / "pred.csv", ids, vals)
    with pytest.raises(InputError, match=r"pred\.csv: a regression audit needs numeric predictions; row 3: 'high'"):
        run_audit(AuditConfig(predictions=[pred], targets=t, task="regression"))
    (tmp_path / "odd.csv").write_text("id,score\na,1\n")
    res = runner.invoke(app, ["audit", str(tmp_path / "odd.csv"), "--targets", str(t)])
    assert res.exit_code == 1 and "odd.csv, row 1: the header names no predictions field; expected one of prediction" in res.stderr
    with pytest.raises(SibscanError, match="--init-steps applies to forecasts"):
        run_audit(AuditConfig(predictions=[write_csv(tmp_path / "ok.csv", ids, p)], targets=t, init_steps=2))


def test_readme_worked_example(tmp_path, monkeypatch):
    """The README's "Audit an evaluation" console blocks, run on the demo data, print what they show."""
    import runpy
    import shlex
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Audit an evaluation", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```console\n")[1:]]
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(root / "examples" / "make_demo.py"), run_name="make_demo")["main"](["make_demo.py", "demo"])
    last = None
    for block in blocks:
        steps = []  # (command, expected output lines)
        for line in block.replace("\\\n", "").splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        for command, expected in steps:
            if command == "echo $?":
                assert [str(last.exit_code)] == expected
                continue
            args = shlex.split(command)
            assert args[0] == "sibscan"
            last = runner.invoke(app, args[1:])
            assert (last.stdout + last.stderr).splitlines() == expected, last.output


def test_help_shows_every_default():
    import re

    res = runner.invoke(app, ["audit", "--help"])
    assert res.exit_code == 0
    shown = re.findall(r"\[default: ([^\]]*)\]", res.stdout)
    # --decimals is the scan's declaration (LoadOptions), shown in its Inputs panel after audit's own
    assert shown == ["auto", "1e-05", "1e-08", "0.001", "0.01", "auto", "0.0", "6"]
