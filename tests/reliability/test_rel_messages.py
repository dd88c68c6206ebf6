"""Issue 13: bad text and table content ends in one line naming the file, the row and the fix, and the
line says what is really wrong (not a traceback, not a row numbered within a batch, not a wrong cause)."""
from __future__ import annotations

import json

import numpy as np

from rel_helpers import FAST, assert_one_line_error, cli, write_table


def _scan(train, test, out, *extra):
    return cli("scan", "--train", train, "--test", test, "--out", out, *extra)


def test_lone_surrogate_in_jsonl_names_the_line(tmp_path):
    good = tmp_path / "train.jsonl"
    good.write_text("".join(json.dumps({"text": f"document number {i} about things"}) + "\n" for i in range(5)))
    bad = tmp_path / "test.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": "broken \\ud800 here"}\n')
    result = _scan(good, bad, tmp_path / "scan", "--encoder", "ngram", "--no-verify", "--no-progress")
    assert_one_line_error(result, f"{bad}, row 2", "lone UTF-16 surrogate", "fix or remove")


def test_zero_byte_jsonl_is_called_empty(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "ok.jsonl").write_text('{"text": "a b c"}\n')
    result = _scan(tmp_path / "ok.jsonl", tmp_path / "empty.jsonl", tmp_path / "scan", "--encoder", "ngram")
    assert_one_line_error(result, "empty.jsonl", "empty file")
    assert "'text' column" not in result.output


def test_text_csv_rows_are_file_lines_like_tables(tmp_path):
    (tmp_path / "t.csv").write_text("text,label\nfirst,a\n\"two\nlines\",b\ntoo,many,fields\n")
    result = cli("twins", tmp_path / "t.csv", tmp_path / "t.csv", "--text-field", "text")
    assert_one_line_error(result, "t.csv, row 5", "has 3 fields")  # line 5 of the file, as a table would say
    (tmp_path / "n.csv").write_text("a,b\n1,2\n3,4\nx,5\n")
    assert_one_line_error(cli("twins", tmp_path / "n.csv", tmp_path / "n.csv"), "n.csv, row 4", "non-numeric")


def test_infinite_value_is_named_by_file_and_item_not_by_row_in_a_batch(tmp_path):
    rng = np.random.default_rng(0)
    train = rng.normal(size=(6000, 4))
    train[5000, 2] = np.inf
    write_table(tmp_path / "train.csv", train)
    write_table(tmp_path / "test.csv", rng.normal(size=(5, 4)))
    result = _scan(tmp_path / "train.csv", tmp_path / "test.csv", tmp_path / "scan", *FAST)
    assert_one_line_error(result, str(tmp_path / "train.csv"), "item '5000'", "row 5000", "infinite value",
                          "column 2", "mark it missing")


def test_all_nan_row_is_not_called_padding(tmp_path):
    rng = np.random.default_rng(1)
    train = rng.normal(size=(20, 8))
    train[7] = np.nan
    write_table(tmp_path / "train.csv", train)
    write_table(tmp_path / "test.csv", rng.normal(size=(4, 8)))
    result = _scan(tmp_path / "train.csv", tmp_path / "test.csv", tmp_path / "scan", "--encoder", "znorm",
                   "--no-verify", "--no-progress")
    assert_one_line_error(result, "train.csv", "item '7'", "no values")
    assert "padding" not in result.output


def test_znorm_refuses_splits_of_other_series_lengths(tmp_path):
    rng = np.random.default_rng(2)
    write_table(tmp_path / "train.csv", rng.normal(size=(10, 8)))
    test = rng.normal(size=(3, 8))
    test[:, 5:] = np.nan  # every test series is 5 long, padded to 8
    write_table(tmp_path / "test.csv", test)
    result = _scan(tmp_path / "train.csv", tmp_path / "test.csv", tmp_path / "scan", "--encoder", "znorm",
                   "--no-verify", "--no-progress")
    assert_one_line_error(result, "test.csv", "item '0'", "has 5 values", "have 8")
