"""Issue 32, the smaller things seen in the same runs: a closed output pipe, --quiet and audit's
warning, text records' label column, the contamination work folder and terminal table."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from rel_helpers import FAST, cli


def test_a_closed_output_pipe_ends_quietly(tables):
    """``sibscan report DIR | head -1`` printed "error: Broken pipe"; now nothing on stderr, SIGPIPE's status."""
    out = tables / "scan"
    assert cli("scan", tables / "train.csv", tables / "test.csv", "--out", out, *FAST).exit_code == 0
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line: every write meets EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "sibscan", "report", str(out)], stdout=w,
                              stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(w)
    assert proc.stderr.decode() == "", proc.stderr.decode()
    assert proc.returncode == 141


def test_quiet_silences_audits_runs_warning(tmp_path):
    ids = [f"s{i}" for i in range(40)]
    rng = np.random.default_rng(0)
    y = rng.normal(size=40)
    (tmp_path / "t.csv").write_text("id,target\n" + "".join(f"{i},{v!r}\n" for i, v in zip(ids, y)))
    (tmp_path / "p.csv").write_text("id,prediction\n" + "".join(f"{i},{v + 0.3!r}\n" for i, v in zip(ids, y)))
    loud = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv")
    assert "only 1 run" in loud.stderr
    quiet = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv", "-q")
    assert quiet.exit_code == loud.exit_code and quiet.stderr == "", quiet.stderr
    as_json = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv", "-q", "--json")
    assert any("only 1 run" in w for w in json.loads(as_json.stdout)["warnings"])  # still in the result
