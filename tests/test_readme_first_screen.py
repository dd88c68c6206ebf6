"""The README's first screen leads to a result: its commands, run as written, end in the accuracy split.

The first screen is README.md's first ``FIRST_SCREEN`` lines. Its ``bash`` blocks are the install, the
first result and the test command; the first-result block is run here line by line in bash, in a
temporary folder (the demo is written there), and must exit 0 and print the accuracy split (slow tier:
the scan embeds the text demo). The default tier checks what the first screen holds, the report's
accuracy lines and the demo's text predictions.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from planted_scan import make_scan
from typer.testing import CliRunner

from sibscan.cli import app

ROOT = Path(__file__).resolve().parents[1]
FIRST_SCREEN = 60
TEST_COMMAND = "python -m pytest -q"  # what .ci/run runs after "# README: test command"


def first_screen() -> str:
    return "".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines(keepends=True)[:FIRST_SCREEN])


def shell_blocks(text: str) -> list:
    """The commands of each complete ```bash block: one per line, comments and blank lines dropped."""
    blocks = []
    for body in re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, flags=re.M | re.S):
        lines = [re.sub(r"\s+#.*$", "", ln).strip() for ln in body.replace("\\\n", " ").splitlines()]
        blocks.append([ln for ln in lines if ln and not ln.startswith("#")])
    return blocks


def first_result_block(blocks: list) -> list:
    """The block that makes the demo and reports on it (the one a newcomer runs for a result)."""
    found = [b for b in blocks if any("make_demo.py" in c for c in b)]
    assert len(found) == 1, f"expected one first-screen block running examples/make_demo.py, got {found}"
    return found[0]


def test_report_prints_the_accuracy_split_and_what_was_not_assessed(tmp_path):
    """``sibscan report --predictions`` shows the split on the terminal, not only inside the files; with no
    cutoff it splits off the exact twins and says the near copies were not assessed."""
    t = make_scan(tmp_path, cutoff=None)
    labels = t["test"].labels
    preds = [labels[i] if i % 2 == 0 else "zzz" for i in range(len(labels))]
    f = tmp_path / "preds.csv"
    f.write_text("id,prediction\n" + "".join(f"te{i},{p}\n" for i, p in enumerate(preds)))
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--predictions", str(f), "--format", "md"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("sibling rate not assessed (no cutoff")
    assert lines[1] == "accuracy:"
    assert re.match(r"  all test rows +50\.0 %  n=30  95 % CI ", lines[2]), lines[2]
    assert re.match(r"  exact twins +\d+\.\d %  n= ?\d+  95 % CI ", lines[3]), lines[3]
    assert lines[4].lstrip().startswith("not exact twins")
    assert lines[5].lstrip().startswith("difference (exact twins − not)") and lines[5].endswith(" pp")
    split = lines[1:next(i for i, ln in enumerate(lines) if ln.startswith("wrote "))]
    assert split[-1].startswith("  near copies: not assessed (no cutoff)"), split
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--predictions", str(f), "--format", "md", "--cutoff", "0.9"])
    assert res.exit_code == 0 and "  flagged rows " in res.stdout and "not assessed" not in res.stdout, res.output
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--format", "md"])
    assert res.exit_code == 0 and "accuracy:" not in res.stdout


def test_the_demo_text_predictions_score_the_planted_copies_better(tmp_path):
    import runpy

    runpy.run_path(str(ROOT / "examples" / "make_demo.py"), run_name="make_demo")["main"](["make_demo.py", str(tmp_path)])
    first = (tmp_path / "text_predictions.csv").read_text(encoding="utf-8")
    rows = [ln.split(",") for ln in first.splitlines()]
    assert rows[0] == ["id", "prediction", "label"]
    test_ids = [f"q{i}" for i in range(len((tmp_path / "text_test.jsonl").read_text().splitlines()))]
    assert [r[0] for r in rows[1:]] == test_ids
    correct = np.array([r[1] == r[2] for r in rows[1:]])
    assert correct[:20].all() and 0.5 < correct[20:].mean() < 0.7  # the planted copies, then the rest
    runpy.run_path(str(ROOT / "examples" / "make_demo.py"), run_name="make_demo")["main"](["make_demo.py", str(tmp_path)])
    assert (tmp_path / "text_predictions.csv").read_text(encoding="utf-8") == first  # deterministic
