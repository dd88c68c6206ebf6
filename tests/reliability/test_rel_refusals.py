"""Issue 13: bad options and unusable paths are refused up front, in one line, before any work; an
operating-system failure mid-run (a full disk) is one line too, and loses nothing."""
from __future__ import annotations

import errno
import os

import pytest

from rel_helpers import FAST, assert_one_line_error, cli


def _scan(d, out, *extra):
    return cli("scan", "--train", d / "train.csv", "--test", d / "test.csv", "--out", out, *FAST, *extra)


@pytest.mark.parametrize("flags, needles", [
    (("--decimals", "400"), ("--decimals", "0..20")),
    (("--decimals", "-1"), ("--decimals", "0..20")),
    (("--cutoff", "nan"), ("--cutoff", "[-1, 1]")),
    (("--seed", "-5"), ("--seed", ">= 0")),
    (("--k", "0"), ("--k", ">= 1")),
])
def test_scan_refuses_out_of_range_options_before_any_work(tables, flags, needles):
    out = tables / "scan"
    assert_one_line_error(_scan(tables, out, *flags), *needles)
    assert not out.exists()


@pytest.mark.parametrize("decimals", ["400", "-1", "2,400"])
def test_twins_refuses_out_of_range_decimals(tables, decimals):
    assert_one_line_error(cli("twins", tables / "train.csv", tables / "test.csv", "--decimals", decimals),
                          "--decimals", "0..20")


def test_report_check_split_calibrate_refuse_bad_numbers_before_writing(tables):
    out = tables / "scan"
    assert _scan(tables, out).exit_code == 0
    before = sorted(p.name for p in out.rglob("*"))
    assert_one_line_error(cli("report", out, "--cutoff", "nan"), "--cutoff")
    assert_one_line_error(cli("check", out, "--cutoff", "nan", "--max-rate", "0.1"), "--cutoff")
    assert_one_line_error(cli("calibrate", out, "--seed", "-5", "--ui", "none"), "--seed")
    groups = tables / "groups.csv"
    assert_one_line_error(cli("split", out, "--out", groups, "--resplit", tables / "rs", "--seed", "-5"), "--seed")
    assert_one_line_error(cli("split", out, "--out", groups, "--resplit", tables / "rs", "--test-size", "1.5"),
                          "--test-size")
    assert not groups.exists()  # refused before the groups were written
    assert sorted(p.name for p in out.rglob("*")) == before


def test_file_valued_or_unwritable_out_is_refused_up_front(tables, monkeypatch):
    assert_one_line_error(_scan(tables, tables / "train.csv"), "--out", "is a file")
    assert_one_line_error(_scan(tables, tables / "train.csv" / "sub"), "--out", "is a file")
    assert_one_line_error(_scan(tables, tables / "scan", "--cache-dir", tables / "train.csv"), "--cache-dir",
                          "is a file")
    assert not (tables / "scan").exists()
    real = os.access
    monkeypatch.setattr(os, "access",
                        lambda p, mode, **kw: False if str(p) == str(tables / "ro") else real(p, mode, **kw))
    (tables / "ro").mkdir()
    assert_one_line_error(_scan(tables, tables / "ro" / "scan"), "--out", "cannot write into", "permission denied")
    assert not (tables / "ro" / "scan").exists()


def test_unreadable_input_is_refused_in_one_line(tables, monkeypatch):
    path = tables / "train.csv"
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads anything: fail the open as it fails for a user
        real = os.open
        monkeypatch.setattr(os, "open", lambda p, flags, *a, **kw: (_ for _ in ()).throw(
            PermissionError(errno.EACCES, "Permission denied", str(p))) if str(p) == str(path)
            else real(p, flags, *a, **kw))
    try:
        assert_one_line_error(_scan(tables, tables / "scan"), str(path), "cannot read", "Permission denied")
    finally:
        path.chmod(0o644)


def test_full_disk_is_one_line_and_keeps_what_was_finished(tables, monkeypatch):
    out = tables / "scan"
    real = os.fsync

    def fsync(fd):  # the disk fills up when the neighbours table is written
        if "neighbours" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    result = _scan(tables, out)
    assert_one_line_error(result, "No space left on device", "free some space", "re-run the same command")
    assert not list(out.rglob("*.tmp*"))  # no half-written temporaries left behind
    assert "encode" in (out / "manifest.json").read_text()  # the embeddings were finished and recorded
    monkeypatch.undo()
    result = _scan(tables, out)  # with space again, the same command resumes and completes
    assert result.exit_code == 0, result.output
    assert "resuming the scan" in result.output
