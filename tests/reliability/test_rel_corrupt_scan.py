"""Issue 13: truncated or garbled scan files are refused in one line naming the file and the fix."""
from __future__ import annotations

import shutil

import pytest

from rel_helpers import FAST, assert_one_line_error, cli


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    import numpy as np

    from rel_helpers import write_table

    d = tmp_path_factory.mktemp("corrupt")
    rng = np.random.default_rng(0)
    train = rng.normal(size=(30, 6)).cumsum(axis=1)
    write_table(d / "train.csv", train)
    write_table(d / "test.csv", np.vstack([train[:3], rng.normal(size=(5, 6)).cumsum(axis=1)]))
    result = cli("scan", "--train", d / "train.csv", "--test", d / "test.csv", "--out", d / "scan", *FAST)
    assert result.exit_code == 0, result.output
    return d


@pytest.mark.parametrize("name, fix", [
    ("manifest.json", "--force"),
    ("baseline.json", "delete it and re-run"),
    ("neighbours.npz", "delete it and re-run"),
    ("items/test.npz", "re-run the same 'sibscan scan'"),
    ("embeddings/train.npy", "re-run the same 'sibscan scan'"),
])
@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_damaged_scan_file_is_refused_by_name(finished, tmp_path, name, fix, damage):
    scan = tmp_path / "scan"
    shutil.copytree(finished / "scan", scan)
    path = scan / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x00garbage" * (len(data) // 8 + 1))
    if name.startswith("embeddings"):  # read when the baseline has to be recomputed
        (scan / "baseline.json").unlink()
        result = cli("calibrate", scan, "--ui", "none")
    else:
        result = cli("report", scan)
    assert_one_line_error(result, str(path), "corrupt or truncated", fix)
    if name == "manifest.json":  # resuming refuses the same way; --force starts over
        args = ("scan", "--train", finished / "train.csv", "--test", finished / "test.csv", "--out", scan, *FAST)
        assert_one_line_error(cli(*args), str(path), "--force")
        assert cli(*args, "--force").exit_code == 0
