"""Case 4 of issue 13: two scans into one --out at once must not both succeed."""
from __future__ import annotations

import subprocess
import sys
import time

from sibscan.lock import LOCK_NAME, DirLock

from rel_helpers import FAST, assert_one_line_error, cli


def test_second_scan_into_a_locked_out_is_refused_naming_the_owner(tables):
    out = tables / "scan"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom sibscan.lock import DirLock\n"
         f"DirLock({str(out)!r}).acquire()\nprint('held', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = cli("scan", "--train", tables / "train.csv", "--test", tables / "test.csv", "--out", out, *FAST)
        assert_one_line_error(result, str(out), "another sibscan process", f"pid {holder.pid}", "--out")
        assert not (out / "manifest.json").exists()  # nothing of the refused scan was written
    finally:
        holder.kill()
        holder.wait()
    # the kernel dropped the dead holder's lock: the next scan runs (the stale lock file does not block it)
    assert (out / LOCK_NAME).exists()
    result = cli("scan", "--train", tables / "train.csv", "--test", tables / "test.csv", "--out", out, *FAST)
    assert result.exit_code == 0, result.output
    assert not (out / LOCK_NAME).exists()


def test_lock_is_exclusive_within_one_process_too(tmp_path):
    with DirLock(tmp_path / "d"):
        t0 = time.perf_counter()
        try:
            DirLock(tmp_path / "d").acquire()
        except Exception as exc:  # noqa: BLE001 - the refusal is a SibscanError
            assert "another sibscan process" in str(exc)
        else:
            raise AssertionError("a second lock on the same directory was granted")
        assert time.perf_counter() - t0 < 1.0  # refused at once, never waits


def test_refused_scan_with_bad_input_leaves_no_out(tmp_path, tables):
    (tmp_path / "empty.csv").write_text("")
    out = tmp_path / "never"
    result = cli("scan", "--train", tables / "train.csv", "--test", tmp_path / "empty.csv", "--out", out, *FAST)
    assert result.exit_code == 1, result.output
    assert not out.exists()
