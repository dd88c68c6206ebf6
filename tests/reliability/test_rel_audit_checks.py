"""Issue 32, items 5 and 7: what the audit's prediction checks missed.

NaN in the targets made every metric "undefined … (see the nan_free check)" while nan_free passed
("no NaN/Inf in 60 predictions"); label predictions equal to the targets but for 1 % passed every check,
``not_targets`` firing only when all were equal.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from rel_helpers import cli


def _audit(*args):
    result = cli("audit", *args, "--json")
    return result, json.loads(result.stdout)


def test_nan_in_targets_is_named_by_nan_free_and_the_metrics(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.normal(size=(60, 6, 4)) + 3.0
    p = y + rng.normal(scale=0.3, size=y.shape)
    y[5, 2, 1] = np.nan
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "y.npy", y)
    result, out = _audit(tmp_path / "p.npy", "--targets", tmp_path / "y.npy")
    assert result.exit_code == 1, result.output
    nan = out["checks"]["nan_free"]
    assert nan["passed"] is False and nan["detail"]["target_rows_non_finite"] == 1
    assert nan["detail"]["target_first"] == ["5"] and nan["detail"]["rows"] == 0
    assert "1 of 60 targets hold NaN/Inf" in out["summaries"]["nan_free"]
    note = out["metrics"]["rmse"]["note"]
    assert "1 of 60 targets hold NaN/Inf" in note and "predictions" not in note


def _labels(tmp_path, n=2000, wrong=20):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 5, n)
    p = y.copy()
    off = rng.choice(n, wrong, replace=False)
    p[off] = (p[off] + 1) % 5
    (tmp_path / "t.csv").write_text("id,label\n" + "".join(f"s{i},{v}\n" for i, v in enumerate(y)))
    (tmp_path / "p.csv").write_text("id,prediction\n" + "".join(f"s{i},{v}\n" for i, v in enumerate(p)))
    return tmp_path / "p.csv", tmp_path / "t.csv"


@pytest.mark.parametrize("args, limit, source", [
    (("--max-agreement", "0.95"), 0.95, "--max-agreement"),
    (("--val-accuracy", "0.8"), 0.85, "validation accuracy 80.0 % + 5 points"),
    (("--val-accuracy", "0.8", "--max-agreement", "0.97"), 0.85, "validation accuracy"),
])
def test_agreement_above_the_limit_fails_not_targets(tmp_path, args, limit, source):
    pred, targets = _labels(tmp_path)
    result, out = _audit(pred, "--targets", targets, *args)
    assert result.exit_code == 1, result.output
    check = out["checks"]["not_targets"]
    assert check["passed"] is False and check["detail"]["identical"] is False
    assert check["detail"]["share_equal"] == pytest.approx(0.99) and check["detail"]["max_agreement"] == pytest.approx(limit)
    assert "99.0 % of predictions (1980 of 2000)" in out["summaries"]["not_targets"]
    assert source in out["summaries"]["not_targets"]


def test_agreement_within_the_limit_passes_and_no_limit_says_so(tmp_path):
    pred, targets = _labels(tmp_path)
    result, out = _audit(pred, "--targets", targets, "--val-accuracy", "0.97")
    assert result.exit_code == 0 and out["checks"]["not_targets"]["passed"], result.output
    result, out = _audit(pred, "--targets", targets)
    assert out["checks"]["not_targets"]["passed"] and out["checks"]["not_targets"]["detail"]["max_agreement"] is None
    assert "no limit on the share" in out["summaries"]["not_targets"]


def test_agreement_limit_must_be_a_fraction(tmp_path):
    pred, targets = _labels(tmp_path, n=10, wrong=1)
    result = cli("audit", pred, "--targets", targets, "--val-accuracy", "80")
    assert result.exit_code == 1 and "--val-accuracy is a fraction" in result.output


def test_agreement_limit_is_refused_for_numbers(tmp_path):
    rng = np.random.default_rng(2)
    y = rng.normal(size=(20, 4, 3)) + 3.0
    np.save(tmp_path / "p.npy", y + 0.1)
    np.save(tmp_path / "y.npy", y)
    result = cli("audit", tmp_path / "p.npy", "--targets", tmp_path / "y.npy", "--max-agreement", "0.5")
    assert result.exit_code == 1 and "--max-perfect-share" in result.output, result.output
