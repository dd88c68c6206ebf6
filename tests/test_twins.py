"""The twin report: a planted fixture with known counts, a brute-force reference, properties,
predictions/accuracy split, the test-suite assertion, and the ``sibscan twins`` command."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.errors import InputError, SibscanError
from sibscan.items import Items
from sibscan.predictions import accuracy_split, correct_mask, read_predictions
from sibscan.stats import wilson_interval
from sibscan.twins import assert_no_twins, decimals_sweep, find_twins, group_ids

runner = CliRunner()


def planted():
    """Train 40 x 8, test 20 x 8 with known twins (see the expected counts in the tests)."""
    rng = np.random.default_rng(7)
    tr = rng.standard_normal((40, 8))
    te = rng.standard_normal((20, 8))
    ytr = np.array(["a", "b"] * 20)
    yte = np.array(["a", "b"] * 10)
    te[0:5] = tr[0:5]
    yte[0:5] = ytr[0:5]
    te[5:8] = tr[5:8] + rng.uniform(-1e-9, 1e-9, (3, 8))  # float noise, absorbed at 6 decimals
    yte[5:8] = np.where(ytr[5:8] == "a", "b", "a")  # conflicting labels
    tr[11], ytr[11] = tr[10], ytr[10]  # duplicate within train, same label
    tr[12], ytr[12] = tr[0], ("b" if ytr[0] == "a" else "a")  # second train copy of test 0, other label
    tr[14], ytr[14] = tr[13], ("b" if ytr[13] == "a" else "a")  # within-train conflict
    te[9] = te[8]  # duplicate within test
    te[10:12] = 2.5 * tr[20:22] + 4.0  # rescaled copies: only z-normalisation finds them
    te[12, 3] = np.nan
    tr[30] = te[12]  # NaN at the same position: a twin
    te[13], tr[31] = te[12], te[12]
    te[13, 4] = np.nan  # NaN elsewhere: not a twin of train 31
    tr[31, 4] = 0.0
    train = Items("train", "table", ids=[f"r{i}" for i in range(40)], labels=ytr, values=tr, source="train.csv")
    test = Items("test", "table", ids=[f"t{i}" for i in range(20)], labels=yte, values=te, source="test.csv")
    return train, test


def test_planted_counts_both_directions():
    train, test = planted()
    r = find_twins(train, test)
    assert (r.n_train, r.n_test, r.row_length) == (40, 20, 8)
    assert r.test_twin_indices == [0, 1, 2, 3, 4, 5, 6, 7, 12]
    assert r.test_rows_with_train_twin == 9 and r.test_twin_pct == pytest.approx(45.0)
    assert r.train_twin_indices == [0, 1, 2, 3, 4, 5, 6, 7, 12, 30]
    assert r.train_rows_with_test_twin == 10 and r.train_twin_pct == pytest.approx(25.0)
    assert r.test_twin_train_index[:5] == [0, 1, 2, 3, 4] and r.test_twin_train_index[-1] == 30
    assert r.duplicate_rows_within_train == 3 and r.duplicate_rows_within_test == 1
    assert r.duplicate_rows == 13 and r.distinct_rows == 47  # 60 rows: 9 test copies + 3 + 1
    assert r.conflicting_label_test_indices == [0, 5, 6, 7]
    assert r.twin_rows_with_conflicting_label == 4
    assert r.test_twins_without_same_label_indices == [5, 6, 7]
    # cross-split: test 0, 5, 6, 7; within train: 13/14; within test: 8/9 (labels a, b)
    assert r.groups_with_conflicting_labels == 6 and r.cross_split_groups_with_conflicting_labels == 4
    assert r.median_distinct_values_in_twin_rows == 8.0


def test_znorm_finds_rescaled_copies_only():
    train, test = planted()
    assert not {10, 11} & set(find_twins(train, test).test_twin_indices)
    assert {10, 11} <= set(find_twins(train, test, znorm=True).test_twin_indices)


def test_noise_not_absorbed_at_high_precision():
    train, test = planted()
    assert not {5, 6, 7} & set(find_twins(train, test, decimals=12).test_twin_indices)


def test_distinct_values_tell_on_off_patterns():
    tr = np.zeros((5, 30))
    tr[:, ::3] = 1.0
    r = find_twins(tr, tr[:2])
    assert r.median_distinct_values_in_twin_rows == 2.0 and r.row_length == 30


def brute_force(tr, te, ytr, yte, decimals=6):
    q1, q2 = np.round(tr, decimals) + 0.0, np.round(te, decimals) + 0.0
    eq = lambda u, v: bool(np.all((u == v) | (np.isnan(u) & np.isnan(v))))  # noqa: E731
    twins_of_test = [[j for j in range(len(q1)) if eq(q2[i], q1[j])] for i in range(len(q2))]
    test_has = [i for i, t in enumerate(twins_of_test) if t]
    train_has = [j for j in range(len(q1)) if any(eq(q1[j], q2[i]) for i in range(len(q2)))]
    conflict = [i for i in test_has if any(ytr[j] != yte[i] for j in twins_of_test[i])]
    no_same = [i for i in test_has if all(ytr[j] != yte[i] for j in twins_of_test[i])]
    within_tr = sum(any(eq(q1[j], q1[k]) for k in range(j)) for j in range(len(q1)))
    within_te = sum(any(eq(q2[j], q2[k]) for k in range(j)) for j in range(len(q2)))
    return test_has, train_has, conflict, no_same, within_tr, within_te


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 25), st.integers(1, 25), st.integers(1, 3))
def test_matches_bruteforce_and_directions_agree(seed, n1, n2, d):
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 1.0, 1.0000000001, 2.0, np.nan])
    tr, te = rng.choice(pool, (n1, d)), rng.choice(pool, (n2, d))
    ytr, yte = rng.choice(["x", "y"], n1), rng.choice(["x", "y"], n2)
    train = Items("train", "table", ids=np.arange(n1), labels=ytr, values=tr)
    test = Items("test", "table", ids=np.arange(n2), labels=yte, values=te)
    r = find_twins(train, test)
    test_has, train_has, conflict, no_same, within_tr, within_te = brute_force(tr, te, ytr, yte)
    assert r.test_twin_indices == test_has and r.train_twin_indices == train_has
    assert r.conflicting_label_test_indices == conflict and r.test_twins_without_same_label_indices == no_same
    assert (r.duplicate_rows_within_train, r.duplicate_rows_within_test) == (within_tr, within_te)
    back = find_twins(Items("train", "table", ids=np.arange(n2), labels=yte, values=te),
                      Items("test", "table", ids=np.arange(n1), labels=ytr, values=tr))
    assert back.test_twin_indices == r.train_twin_indices and back.train_twin_indices == r.test_twin_indices
    assert back.groups_with_conflicting_labels == r.groups_with_conflicting_labels
    relabelled = find_twins(Items("train", "table", ids=np.arange(n1), values=tr), te)
    assert relabelled.test_twin_indices == r.test_twin_indices  # hashing ignores the label


def test_decimals_sweep_flat_and_climbing():
    train, test = planted()
    flat = decimals_sweep(train, test, (3, 4, 6))
    assert flat["verdict"] == "flat" and flat["test_rows_with_train_twin"] == [9, 9, 9]
    rng = np.random.default_rng(0)
    tr = rng.uniform(0, 1, (200, 2))
    te = tr + rng.uniform(-0.004, 0.004, tr.shape)
    climbing = decimals_sweep(tr, te, (1, 2, 6))
    assert climbing["verdict"] == "climbing", climbing
    assert climbing["test_rows_with_train_twin"][0] > climbing["test_rows_with_train_twin"][-1]
    assert decimals_sweep(tr, te + 5, (2, 6))["verdict"] == "none"


def test_group_ids_share_copies():
    train, test = planted()
    g_tr, g_te = group_ids(train, test)
    assert g_tr[0] == g_tr[12] == g_te[0] and g_tr[10] == g_tr[11] and g_te[8] == g_te[9]
    assert g_tr[1] != g_tr[2] and len(set(g_tr) | set(g_te)) == 47


def test_assert_no_twins_arrays_and_items():
    train, test = planted()
    with pytest.raises(AssertionError, match=r"9 of 20 test rows \(45\.00%\) have an exact twin in train, above "
                                             r"the allowed 0%; first test->train rows: 0->0, 1->1"):
        assert_no_twins(train.values, test.values)
    assert assert_no_twins(train, test, max_rate=0.45).test_rows_with_train_twin == 9  # at the limit passes
    with pytest.raises(AssertionError, match="above the allowed 44%"):
        assert_no_twins(train, test, max_rate=0.44)
    assert_no_twins(np.arange(10.0), np.arange(10.0) + 0.5)  # 1-D: one value per row
    with pytest.raises(SibscanError, match=r"max_rate is a fraction in \[0, 1\] \(0.01 = 1 %\), got 50"):
        assert_no_twins(train, test, max_rate=50)
    with pytest.warns(FutureWarning, match="max_pct is deprecated: limits are fractions now; use max_rate 0.5"):
        assert assert_no_twins(train, test, max_pct=50).test_rows_with_train_twin == 9
    with pytest.raises(SibscanError, match="max_pct is a percentage between 0 and 100"):
        assert_no_twins(train, test, max_pct=-1)


def test_width_mismatch_names_both_files():
    train, test = planted()
    narrow = Items("test", "table", ids=np.arange(3), values=np.ones((3, 7)), source="narrow.csv")
    with pytest.raises(InputError, match=r"narrow\.csv: test rows have 7 values but train rows \(train\.csv\) have 8"):
        find_twins(train, narrow)


# ----------------------------------------------------------------------------------- predictions

def test_read_predictions_formats(tmp_path):
    test = Items("test", "table", ids=["a", "b", "c"], labels=["1", "2", "1"], values=np.zeros((3, 1)))
    (tmp_path / "p.txt").write_text("1\n2\n2\n")
    assert read_predictions(tmp_path / "p.txt", test).tolist() == ["1", "2", "2"]
    (tmp_path / "p.csv").write_text("id,prediction\nc,1\na,1.0\nb,3\n")
    assert read_predictions(tmp_path / "p.csv", test).tolist() == ["1.0", "3", "1"]
    (tmp_path / "p.jsonl").write_text('{"id": "b", "pred": 2}\n{"id": "a", "pred": 1}\n{"id": "c", "pred": 1}\n')
    assert read_predictions(tmp_path / "p.jsonl", test).tolist() == ["1", "2", "1"]
    assert correct_mask(read_predictions(tmp_path / "p.csv", test), test.labels).tolist() == [True, False, True]


def test_read_predictions_errors(tmp_path):
    test = Items("test", "table", ids=["a", "b", "c"], values=np.zeros((3, 1)))
    (tmp_path / "short.txt").write_text("1\n2\n")
    with pytest.raises(InputError, match=r"short\.txt: has 2 predictions for 3 test rows"):
        read_predictions(tmp_path / "short.txt", test)
    (tmp_path / "miss.csv").write_text("id,prediction\na,1\nb,2\n")
    with pytest.raises(InputError, match=r"miss\.csv: 1 of 3 test ids have no prediction \(first: 'c'\)"):
        read_predictions(tmp_path / "miss.csv", test)
    (tmp_path / "extra.csv").write_text("id,prediction\na,1\nb,2\nc,3\nz,4\n")
    with pytest.raises(InputError, match=r"extra\.csv: 1 id is not in the test split \(first: 'z'\)"):
        read_predictions(tmp_path / "extra.csv", test)


def test_accuracy_split_and_wilson():
    scipy_stats = pytest.importorskip("scipy.stats")
    correct = np.array([1, 1, 1, 1, 0, 1, 0, 1, 0, 0], dtype=bool)
    mask = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    acc = accuracy_split(correct, mask)
    assert acc["all"]["accuracy"] == 0.6 and acc["masked"]["accuracy"] == 1.0
    assert acc["rest"] == {**acc["rest"], "n": 6, "correct": 2}
    assert acc["difference"] == pytest.approx(1.0 - 2 / 6)
    ref = scipy_stats.binomtest(8, 10).proportion_ci(method="wilson")
    assert wilson_interval(8, 10) == pytest.approx((ref.low, ref.high), abs=1e-6)
    empty = accuracy_split(correct, np.zeros(10, bool))["masked"]
    assert np.isnan(empty["accuracy"]) and empty["ci"] is None and wilson_interval(0, 0) is None
    # none or all: the bound at the edge is exact, not a rounding residue (printed as 0.00000000000000017 %)
    assert [wilson_interval(0, n)[0] for n in (7, 150, 10_000)] == [0.0, 0.0, 0.0]
    assert [wilson_interval(n, n)[1] for n in (7, 150, 10_000)] == [1.0, 1.0, 1.0]
    assert wilson_interval(0, 150)[1] == pytest.approx(scipy_stats.binomtest(0, 150).proportion_ci(method="wilson").high)


# ------------------------------------------------------------------------------------------- CLI

def write_ucr(path, values, labels):
    path.write_text("".join("\t".join([str(y)] + [repr(float(v)) for v in row]) + "\n"
                            for y, row in zip(labels, values)))
    return path


@pytest.fixture
def ucr_pair(tmp_path):
    train, test = planted()
    ytr = np.where(train.labels == "a", 1, 2)
    yte = np.where(test.labels == "a", 1, 2)
    return write_ucr(tmp_path / "X_TRAIN.tsv", train.values, ytr), write_ucr(tmp_path / "X_TEST.tsv", test.values, yte), yte


def test_cli_summary_and_json(ucr_pair):
    tr, te, _ = ucr_pair
    result = runner.invoke(app, ["twins", str(tr), str(te)])
    assert result.exit_code == 0, result.output
    # 9 of 20 with its Wilson interval (z = 1.96: 0.2582-0.6579)
    assert "test rows with a train twin:         9 (45.00% of test; 95 % CI 25.82–65.79%)" in result.output
    assert "train rows with a test twin:        10 (25.00% of train)" in result.output
    result = runner.invoke(app, ["twins", str(tr), str(te), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    for key in ("n_train", "n_test", "duplicate_rows", "test_rows_with_train_twin", "test_twin_pct",
                "twin_rows_with_conflicting_label", "groups_with_conflicting_labels", "train_rows_with_test_twin",
                "train_twin_pct", "test_twin_indices"):
        assert key in out
    assert out["twin_rows_with_conflicting_label"] == 4 and out["duplicate_rows"] == 13


def test_cli_sweep_predictions_groups(ucr_pair, tmp_path):
    tr, te, yte = ucr_pair
    preds = yte.copy()
    preds[[8, 9, 10]] = 3  # wrong on three non-twin rows
    (tmp_path / "pred.txt").write_text("\n".join(map(str, preds)) + "\n")
    result = runner.invoke(app, ["twins", str(tr), str(te), "--decimals", "3,6,10", "--json",
                                 "--predictions", str(tmp_path / "pred.txt"), "--groups", str(tmp_path / "g.csv")])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["decimals_sweep"]["verdict"] == "climbing"  # noise rows drop out at 10 decimals
    assert out["decimals_sweep"]["test_rows_with_train_twin"] == [9, 9, 6]
    assert out["accuracy"]["twin_rows"]["accuracy"] == 1.0 and out["accuracy"]["rest"]["correct"] == 8
    lines = (tmp_path / "g.csv").read_text().splitlines()
    assert lines[0] == "split,index,id,group" and len(lines) == 61
    rows = [ln.split(",") for ln in lines[1:]]
    assert rows[0][3] == rows[12][3] == rows[40][3]  # train 0, train 12, test 0 share a group


def test_cli_max_rate_gate_and_the_deprecated_max_pct(ucr_pair):
    tr, te, _ = ucr_pair
    result = runner.invoke(app, ["twins", str(tr), str(te), "--max-rate", "0.1"])
    assert result.exit_code == 1
    assert "error: 9 of 20 test rows (45.00%) have an exact twin in train, above the allowed 10%" in result.output
    assert runner.invoke(app, ["twins", str(tr), str(te), "--max-rate", "0.5"]).exit_code == 0
    with pytest.warns(FutureWarning, match="--max-pct is deprecated: limits are fractions now; use --max-rate 0.1"):
        result = runner.invoke(app, ["twins", str(tr), str(te), "--max-pct", "10"])
    assert result.exit_code == 1 and "above the allowed 10%" in result.output


def test_cli_npy_with_label_files(tmp_path):
    train, test = planted()
    np.save(tmp_path / "xtr.npy", train.values)
    np.save(tmp_path / "xte.npy", test.values)
    (tmp_path / "ytr.txt").write_text("\n".join(train.labels) + "\n")
    (tmp_path / "yte.txt").write_text("\n".join(test.labels) + "\n")
    result = runner.invoke(app, ["twins", str(tmp_path / "xtr.npy"), str(tmp_path / "xte.npy"), "--json",
                                 "--labels-train", str(tmp_path / "ytr.txt"), "--labels-test",
                                 str(tmp_path / "yte.txt")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["test_twins_without_same_label_train_twin"] == 3


@pytest.mark.parametrize("args, message", [
    (["--decimals", "6,x"], "--decimals takes comma-separated integers"),
    (["--max-pct", "120"], "--max-pct is a percentage between 0 and 100"),
    (["--max-rate", "10"], "--max-rate is a fraction in [0, 1] (0.01 = 1 %), got 10"),
])
def test_cli_bad_options(ucr_pair, args, message):
    tr, te, _ = ucr_pair
    result = runner.invoke(app, ["twins", str(tr), str(te), *args])
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


def test_cli_bad_input_one_line(tmp_path, ucr_pair):
    tr, _, _ = ucr_pair
    (tmp_path / "narrow.tsv").write_text("1\t0.5\t0.5\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "text.csv").write_text("a,b\n1,hello\n")
    for other, message in [("narrow.tsv", "test rows have 2 values but train rows"),
                           ("empty.csv", "empty.csv: empty file"),
                           ("text.csv", "text.csv, row 2: column 'b' has a non-numeric cell 'hello'"),
                           ("missing.tsv", "missing.tsv: file not found")]:
        result = runner.invoke(app, ["twins", str(tr), str(tmp_path / other)])
        assert result.exit_code == 1, result.output
        assert message in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1


def test_find_twins_and_assert_no_twins_take_file_paths(tmp_path):
    import sibscan

    (tmp_path / "train.tsv").write_text("1\t0.5\t1.5\n2\t2.0\t3.0\n")
    (tmp_path / "test.tsv").write_text("3\t0.5\t1.5\n1\t9.0\t9.0\n")
    rep = sibscan.find_twins(str(tmp_path / "train.tsv"), tmp_path / "test.tsv")
    assert rep.to_dict()["test_rows_with_train_twin"] == 1
    with pytest.raises(AssertionError, match="1 of 2 test rows"):
        sibscan.assert_no_twins(str(tmp_path / "train.tsv"), str(tmp_path / "test.tsv"))
