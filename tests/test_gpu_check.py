"""benchmarks/gpu_check.sh in its dry run: runs on a CPU box, skips the CUDA steps and says so,
exercises the pipeline benchmark on the CPU, and writes nothing under benchmarks/results/."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # imports torch and timm and embeds a few images in a subprocess: ~20 s of CPU
def test_gpu_check_dry_run_skips_cuda_and_keeps_results_clean(tmp_path):
    pytest.importorskip("timm")
    pytest.importorskip("skimage")
    if shutil.which("bash") is None or shutil.which("timeout") is None:
        pytest.skip("needs bash and coreutils' timeout")
    results = ROOT / "benchmarks" / "results"
    before = {p.name: p.stat().st_mtime_ns for p in results.glob("*.json")}
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": sys.executable, "DRY_ENCODERS": "effnet"}
    proc = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--dry-run"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "SKIP cuda_tests (dry run, no CUDA GPU)" in proc.stdout
    assert "SKIP search_cuda (dry run, no CUDA GPU)" in proc.stdout
    assert "SKIP verify_share_cuda (dry run, no CUDA GPU)" in proc.stdout
    summary = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert summary["dry_run"] is True and "no GPU figure was measured" in summary["note"]
    assert summary["steps"] == {"cuda_tests": "skipped", "search_cuda": "skipped", "verify_share_cuda": "skipped",
                                "gpu_pipeline": "0", "windows_view": "0"}
    assert "verify_share_cuda" not in summary  # no share figure from a dry run
    (row,) = summary["pipeline"]
    assert row["encoder"] == "effnet" and row["device"] == "cpu"
    assert row["model_only_images_per_s"] > 0 and row["end_to_end_images_per_s"] > 0
    assert row["ratio"] == pytest.approx(row["end_to_end_images_per_s"] / row["model_only_images_per_s"])
    assert (tmp_path / "out" / "gpu_pipeline_cpu_quick.json").is_file()
    (view,) = summary["windows_view"]  # issue 31: the windows view through its index, tiny on the CPU
    assert view["kind"] == "auto" and view["view_seconds"] > 0
    assert {p.name: p.stat().st_mtime_ns for p in results.glob("*.json")} == before


def test_gpu_check_refuses_an_unknown_argument(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    proc = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--dryrun"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OUT": str(tmp_path)}, timeout=60)
    assert proc.returncode == 2 and "unknown argument --dryrun (use --dry-run or nothing)" in proc.stderr
