"""Metrics named by formula: the three nRMSE definitions against independent NumPy loops on a case
built so that they differ, the classification metrics against counting loops, undefined stays undefined."""
from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.audit.metrics import (METRICS, compute_metrics, macro_f1, nrmse_global, nrmse_sample, nrmse_step,
                                   per_sample_error)
from sibscan.audit.seeds import aggregate_runs, runs_warning
from sibscan.cli import app


def fields():
    """3 samples x 4 steps x 5 points; sample scales 1, 10, 0.5 and growing error per step, so the
    step-wise, sample-wise and global normalisations weigh the errors differently."""
    rng = np.random.default_rng(3)
    scale = np.array([1.0, 10.0, 0.5])[:, None, None] * np.array([1.0, 2.0, 4.0, 8.0])[None, :, None]
    y = (rng.normal(size=(3, 4, 5)) + 2.0) * scale
    p = y + rng.normal(size=y.shape) * np.array([0.1, 0.2, 0.4, 0.8])[None, :, None]
    return p, y


def ref_step(p, y):
    vals = []
    for i in range(p.shape[0]):
        for t in range(p.shape[1]):
            vals.append(np.sqrt(np.mean((p[i, t] - y[i, t]) ** 2)) / np.sqrt(np.mean(y[i, t] ** 2)))
    return float(np.mean(vals))


def ref_sample(p, y):
    return float(np.mean([np.linalg.norm(p[i] - y[i]) / np.linalg.norm(y[i]) for i in range(len(p))]))


def ref_global(p, y):
    return float(np.sqrt(np.mean((p - y) ** 2)) / np.sqrt(np.mean(y ** 2)))


def test_three_nrmse_match_references_and_differ():
    p, y = fields()
    got = {"step": nrmse_step(p, y)[0], "sample": nrmse_sample(p, y)[0], "global": nrmse_global(p, y)[0]}
    assert got["step"] == pytest.approx(ref_step(p, y), rel=1e-12)
    assert got["sample"] == pytest.approx(ref_sample(p, y), rel=1e-12)
    assert got["global"] == pytest.approx(ref_global(p, y), rel=1e-12)
    values = sorted(got.values())
    assert values[1] > values[0] * 1.1 and values[2] > values[1] * 1.1, got  # three different numbers


def test_nrmse_shapes_series_and_scalars():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(6, 9)) + 3
    p = y + rng.normal(scale=0.1, size=y.shape)
    # (n, T): each step is one point, so the step-wise ratio is |e| / |y|
    assert nrmse_step(p, y)[0] == pytest.approx(np.mean(np.abs(p - y) / np.abs(y)))
    assert nrmse_sample(p, y)[0] == pytest.approx(ref_sample(p, y))
    assert per_sample_error(p, y) == pytest.approx(np.linalg.norm(p - y, axis=1) / np.linalg.norm(y, axis=1))


def test_zero_target_makes_a_normalised_error_undefined():
    p, y = fields()
    y[1, 2] = 0.0
    value, note = nrmse_step(p, y)
    assert value is None and "1 of 12 (sample, step) pairs" in note
    assert nrmse_sample(p, y)[0] is not None  # sample 1 as a whole is not zero
    out = compute_metrics(p, y, "forecast")
    assert out["nrmse_step"]["value"] is None and out["rmse"]["value"] == pytest.approx(np.sqrt(np.mean((p - y) ** 2)))


def ref_macro_f1(p, y):
    """Per class, by counting (scikit-learn's f1_score(average="macro") over the union of labels)."""
    scores = []
    for c in sorted(set(p) | set(y)):
        tp = sum(a == c and b == c for a, b in zip(p, y))
        fp = sum(a == c and b != c for a, b in zip(p, y))
        fn = sum(a != c and b == c for a, b in zip(p, y))
        scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores)


def test_classification_metrics_match_references():
    rng = np.random.default_rng(1)
    y = rng.choice(["a", "b", "c"], 300)
    p = np.where(rng.random(300) < 0.7, y, rng.choice(["a", "b", "c", "d"], 300))  # "d" is never a target
    out = compute_metrics(p, y, "classification")
    assert out["accuracy"]["value"] == pytest.approx(np.mean(p == y))
    assert out["macro_f1"]["value"] == pytest.approx(ref_macro_f1(p.tolist(), y.tolist()))
    lo, hi = out["accuracy"]["ci"]
    assert lo < out["accuracy"]["value"] < hi
    # numeric labels compare as numbers, as the accuracy split does: "1" equals "1.0"
    assert macro_f1(np.array(["1.0", "2"]), np.array(["1", "2.0"]))[0] == 1.0


def test_seeds_aggregate_and_warning():
    runs = {f"r{i}": compute_metrics(np.array([1.0, 2.0 + i]), np.array([1.5, 2.5]), "regression") for i in range(3)}
    agg = aggregate_runs(runs)
    vals = [runs[r]["rmse"]["value"] for r in runs]
    assert agg["rmse"]["mean"] == pytest.approx(np.mean(vals)) and agg["rmse"]["std"] == pytest.approx(np.std(vals, ddof=1))
    assert agg["rmse"]["formula"] == METRICS["rmse"].formula and agg["rmse"]["n_runs"] == 3
    one = aggregate_runs({"r0": runs["r0"]})
    assert one["rmse"]["std"] is None  # one run has no spread to report, not a spread of 0
    assert runs_warning(3) is None and "only 1 run" in runs_warning(1)


def test_cli_prints_the_three_definitions_side_by_side(tmp_path):
    p, y = fields()
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "y.npy", y)
    res = CliRunner().invoke(app, ["audit", str(tmp_path / "p.npy"), "--targets", str(tmp_path / "y.npy")])
    assert res.exit_code == 0, res.output
    for mid in ("nrmse_step", "nrmse_sample", "nrmse_global"):
        line = next(ln for ln in res.stdout.splitlines() if ln.strip().startswith(mid))
        assert METRICS[mid].formula in line
    assert f"{ref_global(p, y):.4f}" in res.stdout and f"{ref_step(p, y):.4f}" in res.stdout
