"""Sibling groups that do not chain: complete linkage against its definition, a chain A~B~C in a scan."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planted_scan import make_scan

from sibscan.verdict.cutoff import resolve_cutoff
from sibscan.errors import SibscanError
from sibscan.groups import complete_linkage, connected_components, sibling_groups
from sibscan.report import build_report
from sibscan.report.markdown import render_markdown
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours
from sibscan.split import resplit


def test_a_chain_does_not_become_one_group():
    atoms = np.arange(3)
    # A~B 0.99, B~C 0.95, A and C never pair
    assert complete_linkage(atoms, [0, 1], [1, 2], [0.99, 0.95]).tolist() == [0, 0, 1]
    assert complete_linkage(atoms, [1, 0], [2, 1], [0.99, 0.95]).tolist() == [0, 1, 1]  # the stronger pair wins
    assert connected_components(3, [0, 1], [1, 2]).tolist() == [0, 0, 0]  # single linkage chains
    # a photo with two copies that pair with each other too: one group
    assert complete_linkage(atoms, [0, 0, 1], [1, 2, 2], [0.99, 0.95, 0.9]).tolist() == [0, 0, 0]
    # atoms (exact twins, shared sources) stay whole: B and B' are one atom, A pairs with B' only
    assert complete_linkage(np.array([0, 1, 1, 2]), [0], [2], [0.97]).tolist() == [0, 0, 0, 1]


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 14).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(0, n - 1), min_size=n, max_size=n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.5, 1.0)), max_size=40))))
def test_complete_linkage_groups_pair_completely(case):
    n, atom_of, pairs = case
    atoms = connected_components(n, np.arange(n), np.asarray(atom_of))  # arbitrary atoms
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    s = np.array([p[2] for p in pairs])
    group = complete_linkage(atoms, a, b, s)
    linked = {(min(atoms[x], atoms[y]), max(atoms[x], atoms[y])) for x, y in zip(a.tolist(), b.tolist())}
    for g in np.unique(group):
        members = sorted(set(atoms[group == g].tolist()))
        assert all((u, v) in linked for i, u in enumerate(members) for v in members[i + 1:])
    assert (group[atoms.argsort()] == group[atoms.argsort()]).all()
    for x in range(n):  # one atom, one group; groups never join what single linkage keeps apart
        assert len(set(group[atoms == atoms[x]].tolist())) == 1
    single = connected_components(n, np.concatenate([a, np.arange(n)]), np.concatenate([b, np.asarray(atom_of)]))
    assert all(len(set(single[group == g].tolist())) == 1 for g in np.unique(group))


def _chain_scan(path):
    """The planted scan plus a triangle te10 ~ te13 (0.98), te13 ~ tr50 (0.97), te10 ~ tr50 (0.96), and a
    chain through tr50: te11 ~ tr50 (0.95), te11 unrelated to te10 and te13."""
    make_scan(path)
    sd = ScanDir(path)
    nb = sd.neighbours()
    q, ns, n = ["te10", "te13", "te10", "te11"], ["test", "train", "train", "train"], ["te13", "tr50", "tr50", "tr50"]
    chain = Neighbours({"query_split": ["test"] * 4, "query_id": q, "query_index": [int(x[2:]) for x in q],
                        "rank": [0] * 4, "neighbour_split": ns, "neighbour_id": n,
                        "neighbour_index": [int(x[2:]) for x in n], "similarity": [0.5] * 4,
                        "verified": [0.98, 0.97, 0.96, 0.95], "exact": [False] * 4})
    sd.write_neighbours(Neighbours.concat([nb, chain]))
    return sd


def test_a_chain_in_a_scan_is_cut_and_the_report_says_why(tmp_path):
    sd = _chain_scan(tmp_path)
    single = sibling_groups(tmp_path, linkage="single", sources=False)
    g = sibling_groups(tmp_path, sources=False)
    row = {(s, i): k for k, (s, i) in enumerate(zip(g.split, g.ids))}
    te10, te11, te13, tr50 = (row[("test", "te10")], row[("test", "te11")], row[("test", "te13")],
                              row[("train", "tr50")])
    assert single.group[te10] == single.group[te11] == single.group[tr50] == single.group[te13]
    assert g.group[te10] == g.group[te13] == g.group[tr50] != g.group[te11]
    assert g.dropped == 1 and single.dropped == 0
    # the planted siblings stay grouped as before
    assert g.group[row[("test", "te4")]] == g.group[row[("train", "tr10")]]
    assert g.group[row[("test", "te0")]] == g.group[row[("train", "tr0")]]
    big = g.largest()
    assert big["size"] == 3 and big["linkage"] == "complete" and big["pairs_measured"] == 3
    assert big["min_pair_score"] == pytest.approx(0.96) and "scored at or above the cutoff" in big["reason"]
    # every sentence quoting the reason names the linkage itself ("(single linkage: single linkage: ..." was printed)
    assert single.largest()["size"] == 4 and single.largest()["reason"].startswith("connected through 4 sibling pairs")
    # the re-split counts the pair complete linkage left between groups when it crosses
    res = resplit(g, test_size=0.25, seed=3)
    side = np.zeros(len(g), bool)
    side[res.test] = True
    assert res.siblings_left == int(side[te11] != side[tr50])
    assert resplit(single, test_size=0.25, seed=3).siblings_left == 0
    report = build_report(sd.path)
    lc = report["label_conflicts"]
    assert lc["linkage"] == "complete" and lc["pairs_between_groups"] == 1 and lc["largest_group"]["size"] == 3
    assert "Sibling groups (complete linkage): the largest" in render_markdown(report)
    with pytest.raises(SibscanError, match="unknown --linkage 'average'; available: complete, single"):
        sibling_groups(tmp_path, linkage="average")
    assert resolve_cutoff(sd.manifest()).value == 0.9
