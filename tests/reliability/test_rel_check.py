"""Case 8 of issue 13: ``sibscan check`` on a scan that did not finish must fail the gate."""
from __future__ import annotations

import json

from rel_helpers import FAST, assert_one_line_error, cli


def test_check_fails_on_a_scan_whose_status_is_still_running(tables):
    out = tables / "scan"
    args = ("scan", "--train", tables / "train.csv", "--test", tables / "test.csv", "--out", out, *FAST)
    assert cli(*args).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["status"] = "running"  # what a scan killed after its search leaves behind
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = cli("check", out, "--max-exact", "1.0")  # a limit every complete scan passes
    assert_one_line_error(result, "incomplete scan", "'running'", "re-running the same 'sibscan scan'")
    assert cli(*args).exit_code == 0  # resuming finishes it
    result = cli("check", out, "--max-exact", "1.0")
    assert result.exit_code == 0, result.output
