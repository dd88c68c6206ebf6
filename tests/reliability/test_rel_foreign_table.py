"""Issue 32, item 2: a neighbours table copied from another scan is refused wherever it is read.

The scan records in its manifest what ``neighbours.npz`` was computed from and stores the same digest
in the table; a table from another scan (other train rows here) stored another, and report, check,
split, calibrate and the Python API read it as the scan's own (10 % where the scan's own gave 74.5 %).
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import sibscan
from rel_helpers import FAST, assert_one_line_error, cli, write_table


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """``own``: a scan whose table was replaced by that of ``other`` (another train set, same test set)."""
    d = tmp_path_factory.mktemp("foreign")
    rng = np.random.default_rng(3)
    train = rng.normal(size=(30, 6)).cumsum(axis=1)
    write_table(d / "train.csv", train)
    write_table(d / "other_train.csv", rng.normal(size=(30, 6)).cumsum(axis=1))
    write_table(d / "test.csv", np.vstack([train[:4], rng.normal(size=(6, 6)).cumsum(axis=1)]))
    for name, train_file in (("own", "train.csv"), ("other", "other_train.csv")):
        result = cli("scan", d / train_file, d / "test.csv", "--out", d / name, *FAST)
        assert result.exit_code == 0, result.output
    return d


@pytest.fixture
def mixed(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    shutil.copy(scans / "other" / "neighbours.npz", scan / "neighbours.npz")
    return scan


@pytest.mark.parametrize("command", [
    ("report", "{scan}", "--cutoff", "0.99"),
    ("check", "{scan}", "--max-rate", "0.2", "--cutoff", "0.99"),
    ("split", "{scan}", "--out", "{tmp}/split", "--cutoff", "0.99"),
    ("calibrate", "{scan}", "--ui", "none", "--labels", "{tmp}/labels.jsonl"),
])
def test_foreign_neighbours_table_is_refused_by_every_command(mixed, tmp_path, command):
    fingerprint = json.loads((mixed / "manifest.json").read_text())["dataset_fingerprint"]
    (tmp_path / "labels.jsonl").write_text(json.dumps({"query_id": "0", "neighbour_id": "0", "label": "same",
                                                       "dataset_fingerprint": fingerprint}) + "\n")
    result = cli(*(a.format(scan=mixed, tmp=tmp_path) for a in command))
    assert_one_line_error(result, "neighbours.npz", "another scan", "--force")


def test_foreign_neighbours_table_is_refused_by_the_python_api(mixed):
    with pytest.raises(sibscan.SibscanError, match="neighbours.npz.*force=True"):
        sibscan.Scan(mixed).report(cutoff=0.99)


def test_own_table_is_read_and_resumed(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    result = cli("report", scan, "--cutoff", "0.99")
    assert result.exit_code == 0, result.output
    again = cli("scan", scans / "train.csv", scans / "test.csv", "--out", scan, *FAST)
    assert again.exit_code == 0 and "resuming" in again.output, again.output


def test_force_recomputes_a_foreign_table(scans, mixed):
    result = cli("scan", scans / "train.csv", scans / "test.csv", "--out", mixed, "--force", *FAST)
    assert result.exit_code == 0, result.output
    assert cli("report", mixed, "--cutoff", "0.99").exit_code == 0
