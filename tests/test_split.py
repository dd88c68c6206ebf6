"""Sibling groups and the leak-free re-split: components against brute force, no sibling across the boundary."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from _helpers import write_labels
from hypothesis import given, settings
from hypothesis import strategies as st
from planted_scan import make_scan
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.errors import SibscanError
from sibscan.groups import connected_components, sibling_groups
from sibscan.split import resplit


def components_reference(n, edges):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    roots = [find(i) for i in range(n)]
    first = {}
    return [first.setdefault(r, len(first)) for r in roots]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n),
                                                      st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60))))
def test_components_match_reference(case):
    n, edges = case
    a = np.array([e[0] for e in edges], np.int64)
    b = np.array([e[1] for e in edges], np.int64)
    ref = components_reference(n, edges)
    assert connected_components(n, a, b, method="numpy").tolist() == ref
    assert connected_components(n, a, b).tolist() == ref  # scipy where installed, else numpy again


def test_components_scipy_path_matches_numpy():
    pytest.importorskip("scipy.sparse.csgraph", reason="scipy is not installed (it is in the dev extra)")
    edges = np.random.default_rng(1).integers(0, 300, size=(2, 400))
    np.testing.assert_array_equal(connected_components(300, *edges, method="scipy"),
                                  connected_components(300, *edges, method="numpy"))


def test_components_long_chain_numpy():
    n = 5000
    perm = np.random.default_rng(0).permutation(n)
    labels = connected_components(n, perm[:-1], perm[1:], method="numpy")
    assert (labels == 0).all()
    with pytest.raises(ValueError, match=r"edge end points must lie in \[0, 3\)"):
        connected_components(3, [0], [3])


def test_groups_and_resplit_leave_no_sibling_across(tmp_path):
    t = make_scan(tmp_path)
    g = sibling_groups(tmp_path)
    row = {(s, i): k for k, (s, i) in enumerate(zip(g.split, g.ids))}
    assert g.group[row[("test", "te0")]] == g.group[row[("train", "tr0")]]
    assert g.group[row[("test", "te4")]] == g.group[row[("train", "tr10")]]
    assert g.group[row[("test", "te20")]] == g.group[row[("test", "te21")]]
    assert g.group[row[("test", "te25")]] == g.group[row[("train", "tr40")]]  # shared source
    assert g.group[row[("test", "te9")]] != g.group[row[("train", "tr15")]]  # just below the cutoff
    res = resplit(g, test_size=0.25, seed=3)
    assert res.twins_left == 0 and res.siblings_left == 0 and res.groups_on_both_sides == 0
    assert set(res.train).isdisjoint(res.test) and len(res.train) + len(res.test) == 90
    # independent check of the boundary: no planted pair, twin or sibling edge crosses it
    side = np.zeros(90, bool)
    side[res.test] = True
    nb = t["neighbours"]
    for i in range(len(nb)):
        if nb["exact"][i] or nb["score"][i] >= 0.9:
            a = row[(nb["query_split"][i], nb["query_id"][i])]
            b = row[(nb["neighbour_split"][i], nb["neighbour_id"][i])]
            assert side[a] == side[b]
    fps = np.concatenate([t["fp_train"], t["fp_test"]])
    test_fp = {tuple(x) for x in fps[res.test].tolist()}
    assert not any(tuple(x) in test_fp for x in fps[res.train].tolist())
    # most items sit in mixed-class groups here, so balance is only as good as the largest group allows
    biggest = int(np.bincount(g.group).max())
    for c in res.class_balance:
        assert abs(c["n_test"] - 0.25 * c["n"]) <= biggest, c
    assert abs(res.test_fraction - 0.25) < 0.06


def test_resplit_class_balance_on_many_singletons(tmp_path):
    make_scan(tmp_path, n_train=600, n_test=200, sources=False)
    res = resplit(sibling_groups(tmp_path), test_size=0.3, seed=0)
    for c in res.class_balance:
        assert abs(c["n_test"] - 0.3 * c["n"]) <= 2, c
    with pytest.raises(SibscanError, match=r"--test-size is a fraction in \(0, 1\), got 1.5"):
        resplit(sibling_groups(tmp_path), test_size=1.5)


def test_split_cli(tmp_path):
    make_scan(tmp_path / "scan")
    out = tmp_path / "groups.csv"
    r = CliRunner().invoke(app, ["split", str(tmp_path / "scan"), "--out", str(out), "--resplit", str(tmp_path / "rs"),
                                 "--test-size", "0.2", "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert "twins left across the boundary: 0, siblings left: 0" in r.output
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 90 and set(rows[0]) == {"split", "id", "label", "source", "group", "group_size"}
    te0 = next(x for x in rows if x["id"] == "te0")
    tr0 = next(x for x in rows if x["id"] == "tr0")
    assert te0["group"] == tr0["group"] and te0["group_size"] >= "2"
    new_test = list(csv.DictReader((tmp_path / "rs" / "test.csv").open()))
    new_train = list(csv.DictReader((tmp_path / "rs" / "train.csv").open()))
    assert not {x["group"] for x in new_test} & {x["group"] for x in new_train}
    r = CliRunner().invoke(app,
                           ["split", str(tmp_path / "scan"), "--out", str(out), "--resplit", str(tmp_path / "rs"),
                            "--test-size", "0"])
    assert r.exit_code == 1 and "error: --test-size is a fraction in (0, 1), got 0.0" in r.output
    # without --resplit too (it was accepted, and ignored), and before anything is written
    r = CliRunner().invoke(app,
                           ["split", str(tmp_path / "scan"), "--out", str(tmp_path / "g2.csv"), "--test-size", "1.5"])
    assert r.exit_code == 1 and "error: --test-size is a fraction in (0, 1), got 1.5" in r.output
    assert not (tmp_path / "g2.csv").exists()


def test_split_reads_the_labels_once_and_warns_once(tmp_path):
    """split --cutoff X beside an unreadable calibration record: the groups and the headline use the same
    answers, read once, so the warning about the record comes once (it came twice)."""
    import json
    import warnings

    make_scan(tmp_path / "scan")
    cal = tmp_path / "scan" / "calibration"
    write_labels(cal, [{"query_id": "te9", "neighbour_id": "tr15", "label": "same", "dataset_fingerprint": "abcd"}])
    (cal / "cutoff.json").write_text('{"cutoff": 0.9, "interv')
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        r = CliRunner().invoke(app,
                               ["split", str(tmp_path / "scan"), "--out", str(tmp_path / "g.csv"), "--cutoff", "0.9",
                                     "--json"])
    assert r.exit_code == 0, r.output
    assert sum("cutoff.json" in str(w.message) for w in got) == 1
    head = json.loads(r.stdout)["headline"]
    assert head["n_answers"] == 1 and head["decided_by_labels"]["below_cutoff_labelled_same"] == 1
    rows = {x["id"]: x["group"] for x in csv.DictReader((tmp_path / "g.csv").open())}
    assert rows["te9"] == rows["tr15"]  # the same answer links the pair in the groups
