"""The terminal labeller, driven through piped input (in-process streams and a real subprocess)."""
from __future__ import annotations

import io
import subprocess
import sys

from _helpers import label_session, read_labels

from sibscan.calibration import calibrate
from planted_scan import planted_scan
from sibscan.calibration.terminal import run_terminal


def test_piped_answers_undo_quit_and_resume(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=120, n_test=60, seed=7, modality="text")
    cal_dir = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal_dir, ui="none", n_pairs=8)
    s = label_session(p.path, cal_dir)
    out = io.StringIO()
    assert run_terminal(s, stdin=io.StringIO("y\nmaybe\nn\nu\ns\nq\n"), stdout=out) == "quit"
    text = out.getvalue()
    assert "please answer y, n, s, u or q" in text and "undid the answer to pair #1" in text
    assert "[[" in text  # differing words are marked on a non-terminal stream
    assert "-> same (score 0." in text and "test  te" in text
    recs = read_labels(cal_dir)
    assert [r["label"] for r in recs] == ["same", "different", "undo", "skip"]
    assert recs[2]["query_id"] == recs[1]["query_id"]
    # end of input also quits, keeping everything; a new run continues with pair 2
    s2 = label_session(p.path, cal_dir)
    assert s2.state()["done"] == 2 and s2.next_pending() == 2
    assert run_terminal(s2, stdin=io.StringIO("n\n"), stdout=io.StringIO()) == "quit"
    assert [r["label"] for r in read_labels(cal_dir)] == ["same", "different", "undo", "skip", "different"]


def test_table_rows_show_values_and_sparkline(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=60, n_test=30, seed=8, dim=20, modality="table")
    cal_dir = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal_dir, ui="none", n_pairs=3)
    out = io.StringIO()
    assert run_terminal(label_session(p.path, cal_dir), stdin=io.StringIO("y\ny\ny\n"), stdout=out) == "done"
    assert "… (20 values)" in out.getvalue() and any(ch in out.getvalue() for ch in "▁▂▃▄▅▆▇█")
    assert len(read_labels(cal_dir)) == 3


def test_cli_terminal_with_piped_stdin(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=120, n_test=60, seed=9, modality="text")
    cal_dir = tmp_path / "cal"
    answers = "".join("y\n" if i % 2 else "n\n" for i in range(6))
    res = subprocess.run([sys.executable, "-m", "sibscan", "calibrate", str(p.path), "--ui", "terminal",
                          "--n-pairs", "6",
                          "--out", str(cal_dir), "--controls", "0"], input=answers, capture_output=True, text=True,
                          timeout=120)
    assert res.returncode == 0, res.stderr
    assert "all 6 pairs labelled" in res.stdout and "labels: 3 same, 3 different, 0 skipped" in res.stdout
    assert [r["label"] for r in read_labels(cal_dir)] == ["different", "same"] * 3
    assert all(r["labeller"] and r["score_kind"] == "similarity" for r in read_labels(cal_dir))


def test_pairs_to_label_and_pairs_labelled_agree_when_the_scan_has_fewer(tmp_path):
    """--n-pairs 60 on a scan with 12 test items: the header and the closing line name the same count (the
    header said '60 of 60 pairs to label', the end 'all 12 pairs labelled') and the header says why."""
    import re

    p = planted_scan(tmp_path / "scan", n_train=40, n_test=12, seed=11, modality="table")
    said: list = []
    out = io.StringIO()
    calibrate(p.path, calibration_dir=tmp_path / "cal", ui="terminal", n_pairs=60, stdin=io.StringIO("n\n" * 60),
              stdout=out, echo=said.append, definition="the same row of values")
    header = next(line for line in said if "pairs to label" in line)
    m = re.match(r"(\d+) of (\d+) pairs to label \(not 60: only (\d+) test items have a nearest train pair to label", header)
    assert m is not None, header
    done = re.search(r"all (\d+) pairs labelled", out.getvalue())
    assert done is not None, out.getvalue()[-300:]
    assert m.group(1) == m.group(2) == m.group(3) == done.group(1) and int(done.group(1)) <= 12
