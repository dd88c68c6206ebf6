"""Issue 13, twins memory: a CSV train split is fingerprinted block by block while it is read, and the
counts come from :mod:`sibscan.kernels.twincount` instead of grouping both splits at once.

The counts are checked against the grouping of the concatenation (the implementation they replace),
and ``sibscan twins`` must print the same bytes whatever the block size and whether the train file
is streamed or loaded whole.
"""
from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import sibscan.kernels.twincount as twincount_module
import sibscan.loaders.prints as prints_module
from sibscan.cli import app
from sibscan.kernels.rowhash import group_fingerprints
from sibscan.kernels.twincount import twin_counts, twin_membership
from sibscan.loaders.prints import load_prints

runner = CliRunner()


def reference_counts(fp_tr, fp_te, code_tr=None, code_te=None):
    """The counts as ``find_twins`` computed them before: one grouping of both splits together."""
    n1 = len(fp_tr)
    group, counts, _ = group_fingerprints(np.concatenate([fp_tr, fp_te]))
    g_tr, g_te, n_groups = group[:n1], group[n1:], len(counts)
    c_tr = np.bincount(g_tr, minlength=n_groups)
    c_te = np.bincount(g_te, minlength=n_groups)
    first_train = np.full(n_groups, -1, dtype=np.int64)
    first_train[g_tr[::-1]] = np.arange(n1)[::-1]
    out = {"n_groups": n_groups, "distinct_train": int((c_tr > 0).sum()), "distinct_test": int((c_te > 0).sum()),
           "test_has": c_tr[g_te] > 0, "train_idx": np.flatnonzero(c_te[g_tr] > 0), "first_train": first_train[g_te]}
    if code_tr is not None:
        n_lab = int(max(code_tr.max(initial=-1), code_te.max(initial=-1))) + 1
        key_tr, key_te = g_tr * n_lab + code_tr, g_te * n_lab + code_te
        labels_per_group = np.bincount(np.unique(np.concatenate([key_tr, key_te])) // n_lab, minlength=n_groups)
        train_labels_per_group = np.bincount(np.unique(key_tr) // n_lab, minlength=n_groups)
        same = np.isin(key_te, key_tr)
        test_has = out["test_has"]
        out.update(conflict_idx=np.flatnonzero(test_has & (train_labels_per_group[g_te] > same)),
                   no_same_idx=np.flatnonzero(test_has & ~same),
                   groups_conflict=int((labels_per_group > 1).sum()),
                   cross_conflict=int(((labels_per_group > 1) & (c_tr > 0) & (c_te > 0)).sum()))
    return out


def fingerprints(rng, sizes, pool, shared=2):
    """Arrays of ``sizes`` fingerprints drawn from one ``pool`` of distinct ones (many copies within and
    across them); the first ``shared`` pool entries share their first lane, so a sort or a search on it
    alone would merge them (0: none do, the one-lane fast path of ``twincount``; 2 or more: its exact
    two-lane path wherever two of them are drawn)."""
    base = rng.integers(0, 2 ** 63, size=(pool, 2), dtype=np.uint64)
    base[1:shared, 0] = base[0, 0]
    return [base[rng.integers(0, pool, size=n)] for n in sizes]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("block", [1, 3, 64, None])
@pytest.mark.parametrize("shared", [0, 2, 40])
def test_counts_equal_the_grouping_of_both_splits(seed, block, shared):
    rng = np.random.default_rng(seed)
    n1, n2 = int(rng.integers(0, 60)), int(rng.integers(0, 25))
    fp_tr, fp_te = fingerprints(rng, (n1, n2), int(rng.integers(2, 40)), shared)
    n_lab = int(rng.integers(1, 4))
    code_tr, code_te = rng.integers(0, n_lab, n1), rng.integers(0, n_lab, n2)
    for codes in ((None, None), (code_tr, code_te)):
        got, want = twin_counts(fp_tr, fp_te, *codes, block=block), reference_counts(fp_tr, fp_te, *codes)
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    test_has, train_idx = twin_membership(fp_tr, fp_te, block=block)
    np.testing.assert_array_equal(test_has, want["test_has"])
    np.testing.assert_array_equal(train_idx, want["train_idx"])


def write_pair(tmp_path, ids=True):
    """Train and test CSVs with twins in both directions, copies within each split, label conflicts
    (across splits, within train across block boundaries, within test), a NaN cell, and ids."""
    rng = np.random.default_rng(3)
    tr = np.round(rng.normal(size=(23, 4)), 6)
    te = np.round(rng.normal(size=(9, 4)), 6)
    ytr = np.array(list("ab") * 12)[:23]
    yte = np.array(list("ba") * 5)[:9]
    tr[5] = tr[0]  # within train, same label
    tr[6], ytr[6] = tr[1], "b" if ytr[1] == "a" else "a"  # within train, another label
    tr[17], ytr[17] = tr[2], "c"  # a third label, far away (another block)
    te[0], te[1], te[2] = tr[0], tr[1], tr[3]  # test rows with train twins
    yte[2] = "c"
    te[3] = te[4]  # within test
    tr[20] = te[6]  # the reverse direction: a train row whose twin is test 6
    tr[9, 2] = te[6, 2] = np.nan
    tr[20] = te[6]

    def write(path, x, y, prefix):
        lines = [("id," if ids else "") + "c0,c1,c2,c3,label"]
        lines += [(f"{prefix}{i}," if ids else "") + ",".join("" if np.isnan(v) else f"{v:.6f}" for v in row) + f",{lab}"
                  for i, (row, lab) in enumerate(zip(x, y))]
        path.write_text("\n".join(lines) + "\n")

    write(tmp_path / "train.csv", tr, ytr, "r")
    write(tmp_path / "test.csv", te, yte, "t")
    return tmp_path / "train.csv", tmp_path / "test.csv"


@pytest.mark.parametrize("extra", [["--id", "id"], ["--decimals", "2,4,6", "--json"],
                                   ["--znorm", "--id", "id", "--decimals", "3,6", "--json"]])
def test_twins_output_is_the_same_whatever_the_block_size(tmp_path, monkeypatch, extra):
    train, test = write_pair(tmp_path, ids="--id" in extra)

    def run(tag):
        groups = tmp_path / f"groups_{tag}.csv"
        res = runner.invoke(app, ["twins", str(train), str(test), *extra, "--groups", str(groups)])
        assert res.exit_code == 0, res.output
        return res.output.replace(str(groups), "GROUPS"), groups.read_bytes()

    default = run("default")
    monkeypatch.setattr(prints_module, "_BLOCK_ROWS", 2)
    monkeypatch.setattr(twincount_module, "BLOCK_ROWS", 3)
    tiny = run("tiny")
    monkeypatch.setattr(prints_module, "_STREAMED", ())  # the whole file loaded, as before streaming
    whole = run("whole")
    assert default == tiny == whole
    assert ("test rows with a train twin:         4" in default[0] or '"test_rows_with_train_twin": 4' in default[0])


def test_streamed_prints_keep_codes_not_values(tmp_path, monkeypatch):
    train, _ = write_pair(tmp_path, ids=False)
    monkeypatch.setattr(prints_module, "_BLOCK_ROWS", 4)
    p = load_prints(train, "train", [6, 2])
    assert p.items is None and p.ids is None and (p.n, p.width) == (23, 4)
    assert sorted(p.fps) == [2, 6] and p.fps[6].shape == (23, 2)
    assert p.vocab[p.labels][[0, 1, 6, 17]].tolist() == ["a", "b", "a", "c"]
    whole = load_prints(train, "train", [6, 2], keep_items=True)
    np.testing.assert_array_equal(p.fps[6], whole.fps[6])
    np.testing.assert_array_equal(p.vocab[p.labels], whole.vocab[whole.labels])


def test_bad_rows_are_refused_with_their_file_line_when_streamed(tmp_path, monkeypatch):
    train, test = write_pair(tmp_path)
    monkeypatch.setattr(prints_module, "_BLOCK_ROWS", 4)
    lines = train.read_text().splitlines()
    lines[15] = lines[15].replace(",", ",x", 1)  # file line 16, the fourth block
    train.write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["twins", str(train), str(test), "--id", "id"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "train.csv, row 16" in res.output and "non-numeric cell" in res.output
    lines[15] = "r0,1,2,3,4,a"  # a duplicate id, named only with --id
    train.write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["twins", str(train), str(test), "--id", "id"])
    assert res.exit_code == 1 and "duplicate id 'r0'" in res.output
    train.write_text("id,label\nr1,a\nr2\n")
    res = runner.invoke(app, ["twins", str(train), str(test), "--id", "id"])
    assert res.exit_code == 1 and "row 3: has 1 cells, expected 2" in res.output


def test_find_twins_on_paths_streams_train_and_reports_the_same(tmp_path, monkeypatch):
    from sibscan.loaders import load
    from sibscan.twins import find_twins

    train, test = write_pair(tmp_path, ids=False)
    monkeypatch.setattr(prints_module, "_BLOCK_ROWS", 5)
    streamed = find_twins(str(train), str(test), decimals=4)
    assert streamed.to_dict() == find_twins(load(train, "train"), load(test, "test"), decimals=4).to_dict()
    assert streamed.test_rows_with_train_twin == 4 and streamed.train_rows_with_test_twin == 6
