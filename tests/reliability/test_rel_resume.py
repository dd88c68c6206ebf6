"""Case 1 of issue 13: re-running a scan after the rows were reordered must not resume on stale results."""
from __future__ import annotations

import json

import numpy as np

from rel_helpers import FAST, assert_one_line_error, cli, write_table
from sibscan.store.scandir import ScanDir


def _scan(d, out, *extra):
    return cli("scan", "--train", d / "train.csv", "--test", d / "test.csv", "--out", out, *FAST, *extra)


def test_reordered_test_rows_are_not_resumed_and_force_gives_the_truth(tmp_path):
    rng = np.random.default_rng(1)
    train = rng.normal(size=(30, 6)).cumsum(axis=1)
    test = np.vstack([train[:5], rng.normal(size=(5, 6)).cumsum(axis=1)])  # test rows 0-4 copy train rows 0-4
    write_table(tmp_path / "train.csv", train)
    write_table(tmp_path / "test.csv", test)
    out = tmp_path / "scan"
    assert _scan(tmp_path, out).exit_code == 0
    write_table(tmp_path / "test.csv", test[::-1])  # same content, other order: the copies are rows 5-9 now
    result = _scan(tmp_path, out)
    assert_one_line_error(result, "another row order", "--force")
    assert _scan(tmp_path, out, "--force").exit_code == 0
    top = ScanDir(out).neighbours().top1("test", "train")
    exact = {int(q) for q, e in zip(top["query_index"], top["exact"]) if e}
    assert exact == {5, 6, 7, 8, 9}  # the neighbours point at the rows as they are now


def test_force_refuses_to_keep_labels_whose_ids_now_name_other_items(tmp_path):
    rng = np.random.default_rng(2)
    train = rng.normal(size=(20, 5)).cumsum(axis=1)
    test = rng.normal(size=(6, 5)).cumsum(axis=1)
    write_table(tmp_path / "train.csv", train)
    write_table(tmp_path / "test.csv", test)
    out = tmp_path / "scan"
    assert _scan(tmp_path, out).exit_code == 0
    labels = out / "calibration" / "labels.jsonl"
    labels.parent.mkdir()
    labels.write_text(json.dumps({"query_id": "0", "neighbour_id": "3", "label": "same"}) + "\n")
    write_table(tmp_path / "test.csv", test[::-1])  # ids are row numbers: id "0" is another row now
    result = _scan(tmp_path, out, "--force")
    assert_one_line_error(result, "labels given to pairs by id", "name other items", "calibration")
    assert labels.read_text().count("\n") == 1  # the label survives, and so does the old scan
    assert ScanDir(out).exists()
    write_table(tmp_path / "test.csv", test)  # the same ids for the same rows: starting over keeps the labels
    assert _scan(tmp_path, out, "--force").exit_code == 0
    assert labels.exists()
