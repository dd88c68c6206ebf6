"""Issue 13, the outputs: report.md escapes what comes from the data, report.html shows no absolute
path of this machine by default, and every written file honours the umask."""
from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from rel_helpers import FAST, cli, write_table

HOSTILE = ("a|b", "<img src=x onerror=alert(1)>")


@pytest.fixture
def labelled_scan(tmp_path):
    rng = np.random.default_rng(0)
    train = rng.normal(size=(30, 6)).cumsum(axis=1)
    test = np.vstack([train[:4], rng.normal(size=(4, 6)).cumsum(axis=1)])
    write_table(tmp_path / "train.csv", train, [HOSTILE[i % 2] for i in range(30)])
    write_table(tmp_path / "test.csv", test, [HOSTILE[i % 2] for i in range(8)])
    out = tmp_path / "scan"
    result = cli("scan", "--train", tmp_path / "train.csv", "--test", tmp_path / "test.csv", "--out", out, *FAST)
    assert result.exit_code == 0, result.output
    return out


def test_report_md_escapes_labels(labelled_scan):
    assert cli("report", labelled_scan).exit_code == 0
    md = (labelled_scan / "report.md").read_text()
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    rows = [ln for ln in md.splitlines() if "a\\|b" in ln]
    assert rows, md
    for row in rows:  # the escaped pipe keeps the per-class row at its 6 cells
        cells = [c for c in row.replace("\\|", "").split("|")[1:-1]]
        assert len(cells) == 6, row


def test_report_html_shows_paths_relative_to_the_inputs(labelled_scan):
    root = str(labelled_scan.parent)
    assert cli("report", labelled_scan).exit_code == 0
    page = (labelled_scan / "report.html").read_text()
    assert root not in page
    assert f"{labelled_scan.parent.name}/train.csv" in page  # named by the folder that holds it
    assert cli("report", labelled_scan, "--absolute-paths").exit_code == 0
    assert root in (labelled_scan / "report.html").read_text()


def test_outputs_honour_the_umask(tables):
    old = os.umask(0o002)  # a group-shared project: files must come out group-writable
    try:
        out = tables / "scan"
        result = cli("scan", "--train", tables / "train.csv", "--test", tables / "test.csv", "--out", out, *FAST)
        assert result.exit_code == 0, result.output
        assert cli("report", out).exit_code == 0
    finally:
        os.umask(old)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 10
    modes = {p.relative_to(out).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert set(modes.values()) == {0o664}, modes  # not the 0o600 of a temporary file


def test_user_written_notes_are_escaped_in_markdown_and_html(labelled_scan):
    """The definition of 'same' and a note naming identities are shared by report.md and report.html
    (markdown.notes): each renderer escapes them its own way."""
    import json

    from sibscan.report.html import render_html
    from sibscan.report.markdown import render_markdown

    assert cli("report", labelled_scan).exit_code == 0
    report = json.loads((labelled_scan / "report.json").read_text())
    report["headline"].update(definition="the same row | <img src=x onerror=alert(1)>", note="made for encoder `a|b`")
    md = render_markdown(report)
    assert "<img" not in md and "'Same' means: the same row \\| &lt;img src=x onerror=alert(1)&gt;." in md
    assert "Note: made for encoder \\`a\\|b\\`." in md
    page = render_html(report)
    assert "<img src=x" not in page and "the same row | &lt;img src=x onerror=alert(1)&gt;" in page
