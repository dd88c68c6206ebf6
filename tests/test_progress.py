"""Progress both ways (sibscan/progress.py): named tqdm bars on a terminal; off one, a line per stage and a
timed line with items/s and ETA — also while a slow encoder runs with stderr redirected to a file."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from sibscan import progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_off_a_terminal_a_timed_line_with_rate_and_eta(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    monkeypatch.setenv("SIBSCAN_PROGRESS_INTERVAL", "0.1")
    with progress.stage("encode: embedding both splits"):
        with progress.task("random-pair baseline"), progress.bar(1000, "verify images", "pair") as bar:
            for _ in range(10):
                time.sleep(0.05)
                bar.update(100)
        with progress.bar(5, "inner loop", transient=True) as inner:  # transient: terminal only
            time.sleep(0.25)
            inner.update(5)
    lines = log.getvalue().splitlines()
    assert lines[0] == "sibscan: encode: embedding both splits …"
    ticks = [ln for ln in lines if re.fullmatch(r"random-pair baseline: verify images: [\d,]+/1,000 pairs \(\d+ %\), "
                                                r"[\d,.]+ pairs/s, ETA \d+:\d\d", ln)]
    assert 2 <= len(ticks) <= 7, lines  # every 0.1 s of a 0.5 s loop, never more often
    assert re.fullmatch(r"random-pair baseline: verify images: 1,000/1,000 pairs in 0:0\d \([\d,.]+ pairs/s\)",
                        lines[-1] if
                        "inner" not in lines[-1] else "")
    assert not any("inner loop" in ln for ln in lines)


def test_quiet_silences_everything(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    monkeypatch.setenv("SIBSCAN_PROGRESS_INTERVAL", "0.05")
    progress.set_quiet(True)
    try:
        with progress.stage("load"), progress.bar(10, "embed") as bar:
            time.sleep(0.15)
            bar.update(10)
        progress.message("wrote report.json")
    finally:
        progress.set_quiet(False)
    assert log.getvalue() == ""


def test_on_a_terminal_bars_say_what_they_do(monkeypatch, tmp_path):
    from sibscan.config import ScanConfig
    from sibscan.scan import run_scan

    texts = [f"sentence number {i} about the {w} and the {v} of things" for i, (w, v) in
             enumerate(zip(["cat", "dog", "sea", "sun", "sky", "map"] * 5, ["way", "end", "top", "art", "law"] * 6))]
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    run_scan(ScanConfig(train=texts[:24], test=texts[20:], out=str(tmp_path / "s"), encoder="ngram",
                        baseline_pairs=300, verified_baseline_pairs=300))
    out = term.getvalue()
    assert "embed train (ngram)" in out and "embed test (ngram)" in out
    assert "test → train: verify texts" in out
    # the baseline's verification says whose pairs it scores (it was an unexplained second "verify" bar)
    assert re.search(r"random-pair baseline: verify texts (\d+)/\1 pair", out), out[-2000:]
    assert "sibscan: load" not in out  # stage lines are for logs; a terminal has the bars


SLOW_ENCODER = '''
import time
from sibscan.encoders.base import register_encoder
from sibscan.encoders.numeric import ZNormEncoder

@register_encoder
class SlowZNorm(ZNormEncoder):
    name = "slow-znorm"
    def encode(self, batch):
        time.sleep(0.12)
        return super().encode(batch)
'''


@pytest.mark.slow  # seconds (default tier under 3 minutes on a cold clone)
def test_a_slow_scan_logged_to_a_file_reports_at_every_interval(tmp_path):
    """The issue's case: stderr is a file (nohup, CI). The interval is 30 s in use, 0.3 s here."""
    rng = np.random.default_rng(0)
    for name, n in (("train", 96), ("test", 24)):
        x = rng.normal(size=(n, 8))
        (tmp_path / f"{name}.csv").write_text("\n".join([",".join(f"f{i}" for i in range(8))] +
                                                        [",".join(map(repr, map(float, row))) for row in x]) + "\n")
    (tmp_path / "slowenc.py").write_text(SLOW_ENCODER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SIBSCAN_PROGRESS_INTERVAL": "0.3"}
    code = "import slowenc; from sibscan.cli import main; main()"
    # --device cpu: nothing here needs torch, and asking it about a GPU would import it (seconds) first
    with open(tmp_path / "stderr.log", "w") as err:
        proc = subprocess.run([sys.executable, "-c", code, "scan", str(tmp_path / "train.csv"),
                               str(tmp_path / "test.csv"),
                               "--out", str(tmp_path / "scan"), "--encoder", "slow-znorm", "--batch-size", "8",
                               "--no-verify", "--baseline-pairs", "300", "--device", "cpu", "--json"],
                              stdout=subprocess.PIPE, stderr=err, env=env, timeout=120, text=True)
    log = (tmp_path / "stderr.log").read_text()
    assert proc.returncode == 0, log
    ticks = [re.fullmatch(r"embed train \(slow-znorm\): ([\d,]+)/96 items \(\d+ %\), ([\d.]+) items/s(, ETA \d+:\d\d)?", ln)
             for ln in log.splitlines()]
    # each line's count / rate is the time it was written, from the start of embedding train
    at = [int(m.group(1).replace(",", "")) / float(m.group(2)) for m in ticks if m and float(m.group(2)) > 0]
    assert len(at) >= 3, log  # 12 batches of 0.12 s: about 1.5 s
    assert at[0] < 0.3 * 1.5 and all(0.3 * 0.6 < b - a < 0.3 * 1.7 for a, b in zip(at, at[1:])), (at, log)
    assert re.search(r"^embed train \(slow-znorm\): 96/96 items in 0:0\d \([\d.]+ items/s\)$", log, re.M), log
    for stage in ("load", "fingerprint", "encode", "search", "baseline"):
        assert sum(ln.startswith(f"sibscan: {stage}:") for ln in log.splitlines()) == 1, log
    assert "\r" not in log  # no bar redraws in a file


def test_no_tick_lands_after_the_closing_line(monkeypatch):
    """A tick whose wait ended while the bar was closing wrote after close() returned (after the "… in
    m:ss" line, or into the next command's output); now it writes before the closing line or not at all."""
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    monkeypatch.setenv("SIBSCAN_PROGRESS_INTERVAL", "0.01")
    late = 0
    for _ in range(40):
        with progress.bar(1, "verify images", "pair") as bar:
            end = time.perf_counter() + 0.03
            while time.perf_counter() < end:  # busy work that holds the GIL, as the verifiers' loops do
                pass
            bar.update(1)
        written = len(log.getvalue())
        time.sleep(0.02)
        late += len(log.getvalue()) != written
    assert late == 0, f"{late} of 40 bars wrote after close()"
    # and each bar, open longer than the interval, said that it finished (a tick cut off by close() counts)
    assert sum(ln.startswith("verify images: 1/1 pairs in ") for ln in log.getvalue().splitlines()) == 40
