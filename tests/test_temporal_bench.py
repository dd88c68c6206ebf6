"""``python -m benchmarks.temporal --quick``: runs end to end and writes its results file."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("aeon", reason="the temporal benchmark needs aeon (pip install 'sibscan[temporal]')")


@pytest.mark.slow  # aeon's import and MiniRocket's first compile
def test_quick_benchmark(tmp_path, monkeypatch):
    import benchmarks.temporal as bench

    monkeypatch.setattr("benchmarks._common.RESULTS", tmp_path)
    res = bench.main(["--quick", "--work", str(tmp_path / "work")])
    saved = json.loads((tmp_path / "temporal_quick.json").read_text())
    assert saved["datasets_run"] == sorted(bench.QUICK_DATASETS) == res["datasets_run"]
    agreement = saved["agreement"]
    assert agreement["n"] == 3 and 0 <= agreement["agree"] <= 3
    for row in saved["per_dataset"]:
        assert set(row["sibscan"]) >= {"acc_original_mean", "acc_permuted_mean", "time_matters"}
        assert len(row["sibscan_runs"]["acc_original"]) == 2 and len(row["paper_runs"]["acc_original"]) == 2
    assert all(d in agreement["disagreements"] for d in saved["per_dataset"] if not d["agree"])
    sp = saved["speed"]
    assert sp["same_accuracies"] is True  # the wrapper scores exactly what aeon's own fit/predict scores
    assert sp["aeon_seconds"] > 0 and sp["wrapper_seconds"] > 0


def test_paper_rows_give_the_published_verdict_inputs():
    from benchmarks.temporal import paper_rows

    rows = paper_rows()
    assert len(rows) == 112
    gp = rows["GunPoint"]  # seeds 1 and 2 of cor_nor_seed*.csv
    assert gp["acc_original"] == [0.9933333333333333, 0.9933333333333333] and gp["acc_permuted"] == [0.96, 0.96]
    assert gp["time_matters"] is True
