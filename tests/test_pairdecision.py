"""Hand labels decide the pairs they answer (sibscan.verdict.pairdecision), in every output of a scan."""
from __future__ import annotations

import json

import numpy as np
import pytest

from _helpers import write_jsonl, write_labels
from planted_scan import make_scan
from sibscan.verdict.pairdecision import DIFFERENT, NONE, SAME, PairLabels, flag_items, labels_phrase, pair_is_sibling
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours


# --- the rule, against a brute-force reference ------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_flag_items_matches_a_loop_over_every_pair(seed):
    rng = np.random.default_rng(seed)
    n, m, cutoff = 40, 160, 0.6
    qi = rng.integers(0, n, m)
    score = rng.uniform(0, 1, m).astype(np.float32)
    score[rng.random(m) < 0.05] = np.nan
    label = rng.choice([SAME, DIFFERENT, NONE], size=m, p=[0.1, 0.2, 0.7]).astype(np.int8)
    exact = rng.random(n) < 0.1
    fl = flag_items(qi, score, label, exact, cutoff)
    for i in range(n):
        rows = np.flatnonzero(qi == i)
        sib = [label[r] == SAME or (label[r] != DIFFERENT and score[r] >= cutoff) for r in rows]
        by = [score[r] >= cutoff for r in rows]
        assert fl.flagged[i] == (exact[i] or any(sib))
        assert fl.by_score[i] == (exact[i] or any(by))
        if any(sib):  # the pair shown is the best-scoring sibling pair
            best = max((r for r, s in zip(rows, sib) if s), key=lambda r: np.nan_to_num(score[r], nan=-np.inf))
            assert score[fl.row[i]] == score[best] or (np.isnan(score[fl.row[i]]) and np.isnan(score[best]))
    # the per-item form a sweep counts by says the same at every cutoff
    for c in (0.2, 0.6, 0.9):
        f = flag_items(qi, score, label, exact, c)
        assert np.array_equal(f.flagged, exact | f.same | (np.nan_to_num(f.score_left, nan=-np.inf) >= c))
    assert not flag_items(qi, score, label, exact, None).flagged[~exact].any()  # no cutoff: not assessed


def test_the_pair_rule_and_its_words():
    s = np.array([0.95, 0.95, 0.3, 0.3, 0.95], np.float32)
    lab = np.array([NONE, DIFFERENT, SAME, NONE, SAME], np.int8)
    assert pair_is_sibling(s, lab, 0.9).tolist() == [True, False, True, False, True]
    assert not pair_is_sibling(s, lab, None).any()
    assert labels_phrase({"above_cutoff_labelled_different": 2, "below_cutoff_labelled_same": 1}) == (
        "2 test items above the cutoff labelled different by hand are not flagged; 1 below it labelled same by hand "
        "is flagged")
    # no "it" to refer to when nothing above the cutoff was set aside
    assert labels_phrase({"above_cutoff_labelled_different": 0, "below_cutoff_labelled_same": 1}) == (
        "1 test item below the cutoff labelled same by hand is flagged")
    assert labels_phrase({"above_cutoff_labelled_different": 0, "below_cutoff_labelled_same": 3}) == (
        "3 test items below the cutoff labelled same by hand are flagged")
    assert labels_phrase({"above_cutoff_labelled_different": 0, "below_cutoff_labelled_same": 0}) == ""


def test_latest_answer_counts_and_other_data_is_left_out():
    recs = [{"query_id": "a", "neighbour_id": "b", "label": "same", "dataset_fingerprint": "d"},
            {"query_id": "a", "neighbour_id": "b", "label": "undo", "dataset_fingerprint": "d"},
            {"query_id": "a", "neighbour_id": "c", "label": "same", "dataset_fingerprint": "d"},
            {"query_id": "a", "neighbour_id": "c", "label": "different", "dataset_fingerprint": "d"},
            {"query_id": "e", "neighbour_id": "f", "label": "skip", "dataset_fingerprint": "d"},
            {"query_id": "g", "neighbour_id": "h", "label": "different", "dataset_fingerprint": "other"},
            {"query_split": "train", "query_id": "t", "neighbour_split": "test", "neighbour_id": "q", "label": "same"}]
    lab = PairLabels.from_records(recs, "d")
    assert lab.lookup(["a", "a", "e", "g", "q"], ["b", "c", "f", "h", "t"]).tolist() == [NONE, DIFFERENT, NONE, NONE, SAME]


# --- a scan folder: report, check, split and the per-item table agree --------------------------------
def _labelled_scan(tmp_path):
    """make_scan (cutoff 0.9; tests 0-3 exact, 4-8 at 0.91-0.99, 9 at 0.89, 12 at 0.905 by its rank-1 pair),
    test 6 given a second pair above the cutoff, and labels made on another encoder's scan of the same data."""
    path = tmp_path / "scan"
    make_scan(path)
    sd = ScanDir(path)
    nb = sd.neighbours()
    cols = {k: v.copy() for k, v in nb.columns.items()}
    second = (cols["query_split"] == "test") & (cols["neighbour_split"] == "train") & (cols["query_id"] == "te6") & \
        (cols["rank"] == 1)
    cols["verified"][second] = 0.92
    cols.pop("score", None)
    sd.write_neighbours(Neighbours(cols))
    nb = sd.neighbours()
    top = nb.top1("test", "train")
    partner = dict(zip(top["query_id"].tolist(), top["neighbour_id"].tolist()))
    other = {"dataset_fingerprint": "abcd", "encoder_identity": "minilm-other", "verifier_identity": None}
    recs = [{**other, "query_id": q, "neighbour_id": partner[q], "label": lab}
            for q, lab in (("te4", "different"), ("te12", "different"), ("te6", "different"), ("te9", "same"),
                           ("te7", "skip"))]
    recs.append({**other, "dataset_fingerprint": "elsewhere", "query_id": "te5", "neighbour_id": partner["te5"],
                 "label": "different"})  # made for other data: decides nothing here
    write_labels(path / "calibration", recs)
    rank1 = nb.direction("test", "train")
    rank1 = rank1.select((rank1["query_id"] == "te6") & (rank1["rank"] == 1))
    return path, partner, str(rank1["neighbour_id"][0])


def test_labels_decide_the_flags_of_report_check_and_split(tmp_path):
    from sibscan.check import check
    from sibscan.groups import sibling_groups
    from sibscan.report import build_report, render_html, render_markdown
    from sibscan.report.items import flagged_csv

    path, partner, te6_second = _labelled_scan(tmp_path)
    rep = build_report(path)
    head = rep["headline"]
    # by score: 4 exact + tests 4-8 + test 12 = 10; labels take out 4 and 12, put in 9 (0.89, below)
    assert head["decided_by_labels"] == {"above_cutoff_labelled_different": 2, "below_cutoff_labelled_same": 1,
                                         "train_side_labelled_same": 0}
    assert head["flagged"]["count"] == 9 == rep["sibling_rate"]["test_to_train"]["any"]["count"] == len(rep["flagged"])
    said = ("2 test items above the cutoff labelled different by hand "
            "are not flagged; 1 below it labelled same by hand is flagged")
    assert said in head["text"] and said in render_markdown(rep)
    # the cutoff is the scan's, not a calibration: the sentence says why there is no interval without
    # denying the labels it has just counted
    assert head["state"] == "baseline_only" and head["n_answers"] == 4
    assert "no hand labels" not in head["text"] and "the cutoff in use carries no calibrated rate, so no sibling-rate interval" \
        in head["text"]
    items = {r["test_id"]: r for r in rep["flagged"]}
    assert "te4" not in items and "te12" not in items and {"te5", "te7", "te9"} <= set(items)
    assert items["te9"]["hand_label"] == "same" and items["te9"]["why"].startswith("labelled same by hand")
    # test 6's nearest pair was labelled different: its next pair (0.92, above the cutoff) flags it
    assert items["te6"]["train_id"] == te6_second != partner["te6"] and items["te6"]["hand_label"] is None
    assert "nearest pair was labelled different" in items["te6"]["why"]
    assert "hand_label" in flagged_csv(rep["flagged"]).splitlines()[0]
    # the pairs listed just above the cutoff say which a person set aside, in the JSON and the HTML
    above = {p["test_id"]: p["hand_label"] for p in rep["near_cutoff"]["above"]}
    assert above["te4"] == "different" and above["te5"] is None
    assert "labelled different by hand" in render_html(rep)
    # the CI gate counts the same items and says what the labels did
    ok = check(path, max_rate=0.5)
    assert ok.passed and ok.headline["flagged"]["count"] == 9 and "9 of 30 test items" in ok.message and said in ok.message
    assert "no hand labels" not in ok.message and "carries no calibrated rate" in ok.message
    bad = check(path, max_rate=0.1)
    assert not bad.passed and not {"te4", "te12"} & {p["test_id"] for p in bad.offending}
    # split: a pair labelled different never joins a group, one labelled same does
    g = sibling_groups(path, sources=False)
    where = {(s, i): grp for s, i, grp in zip(g.split, g.ids, g.group)}
    assert where[("test", "te9")] == where[("train", partner["te9"])]
    assert where[("test", "te4")] != where[("train", partner["te4"])]
    assert where[("test", "te5")] == where[("train", partner["te5"])]


def test_the_per_item_table_and_scan_rate_agree_with_the_report(tmp_path):
    from sibscan.calibration.summary import scan_headline
    from sibscan.report.items import scan_items

    path, _, _ = _labelled_scan(tmp_path)
    table = scan_items(path)
    assert sum(v is True for v in table.columns["sibling"]) == 9 == scan_headline(path)["flagged"]["count"]
    not_flagged = dict(zip(table.columns["test_id"], table.columns["why"]))["te4"]
    assert not_flagged.startswith("not a sibling: labelled different by hand")


def test_calibration_prints_the_count_the_report_flags(tmp_path):
    from sibscan.calibration import calibrate, describe
    from planted_scan import planted_scan, write_oracle_labels
    from sibscan.report import build_report

    planted = planted_scan(tmp_path / "scan", n_train=300, n_test=150, rate=0.1, seed=3)
    calibrate(planted.path, ui="none", n_pairs=40)
    oracle = write_oracle_labels(planted, planted.path / "calibration" / "draw.json", tmp_path / "oracle.jsonl")
    # and one pair far below any cutoff that a person called "same" (the lowest-scoring nearest pair)
    top = ScanDir(planted.path).neighbours().top1("test", "train")
    low = int(np.argmin(top["score"]))
    rec = json.loads(oracle.read_text().splitlines()[0])
    rec.update(query_id=str(top["query_id"][low]), neighbour_id=str(top["neighbour_id"][low]), label="same")
    write_jsonl(oracle, [rec], append=True)
    cal = calibrate(planted.path, ui="none", n_pairs=40, labels=oracle)
    head = build_report(planted.path)["headline"]
    assert cal.cutoff is not None and cal.estimates["decided_by_labels"]["below_cutoff_labelled_same"] >= 1
    assert cal.estimates["flagged"] == head["flagged"]["count"]
    assert cal.estimates["decided_by_labels"] == head["decided_by_labels"]
    line = next(s for s in describe(cal) if s.startswith("at the cutoff"))
    assert labels_phrase(head["decided_by_labels"]) in line


def test_the_scan_summary_counts_what_the_report_flags(tmp_path, monkeypatch):
    """A real scan run with ``--calibration cal1`` (a path relative to where it runs) prints the count its
    report gives from another directory: the scan passes the calibration's answers to its summary, and
    records the calibration's resolved path, so the report finds the same answers."""
    from typer.testing import CliRunner

    from sibscan.cli import app
    from sibscan.verdict.record import Calibration, write_calibration
    from sibscan.report import build_report

    rng = np.random.default_rng(0)
    train = rng.normal(size=(60, 32)).cumsum(axis=1)
    near = train[:12] * 3.0 + 1.0 + rng.normal(scale=0.05, size=(12, 32))
    test = np.vstack([near, rng.normal(size=(18, 32)).cumsum(axis=1)])
    for name, x in (("train", train), ("test", test)):
        (tmp_path / f"{name}.csv").write_text("\n".join(",".join(repr(float(v)) for v in row) for row in x) + "\n")
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    common = ["--train", "train.csv", "--test", "test.csv", "--no-progress", "--json"]
    first = runner.invoke(app, ["scan", *common, "--out", "scan0", "--cutoff", "0.98"])
    assert first.exit_code == 0, first.output
    sd = ScanDir(tmp_path / "scan0")
    m = sd.manifest()
    by_score = m["summary"]["siblings"]
    top = sd.neighbours().top1("test", "train")
    above = [(q, t) for q, t, sc in zip(top["query_id"], top["neighbour_id"], top["score"]) if sc >= 0.98][:3]
    assert len(above) == 3
    ver = (m.get("verifier") or {}).get("identity")
    write_calibration(tmp_path / "cal1", Calibration(0.98, None, "verified" if ver else "similarity",
                                                     m["encoder"]["identity"], ver, m["dataset_fingerprint"]))
    ident = {"dataset_fingerprint": m["dataset_fingerprint"], "encoder_identity": m["encoder"]["identity"],
             "verifier_identity": ver}
    write_labels(tmp_path / "cal1", ({**ident, "query_id": str(q), "neighbour_id": str(t), "label": "different"}
                                     for q, t in above))
    second = runner.invoke(app, ["scan", *common, "--out", "scan1", "--calibration", "cal1"])
    assert second.exit_code == 0, second.output
    printed = json.loads(second.stdout[second.stdout.index("{"):])["siblings"]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    head = build_report(tmp_path / "scan1")["headline"]
    off = head["decided_by_labels"]["above_cutoff_labelled_different"]
    assert off >= 1 and printed == head["flagged"]["count"] == by_score - off < by_score
    assert ScanDir(tmp_path / "scan1").manifest()["cutoff"]["calibration"] == str((tmp_path / "cal1").resolve())
    # a calibrated cutoff whose answers cannot be read is said, not counted silently without them
    (tmp_path / "cal1" / "labels.jsonl").rename(tmp_path / "moved.jsonl")
    with pytest.warns(UserWarning, match="has no labels.jsonl"):
        build_report(tmp_path / "scan1")


def test_the_per_item_table_reads_the_label_decisions_once_not_per_item(tmp_path, monkeypatch):
    """``Flags.unflagged_by_labels`` is a whole-array computation: read per item it made the table O(n^2)
    (200k test items: 3.5 s, 400k: 14 s).  It is read once, and only items with something to say get a why."""
    from sibscan.verdict.pairdecision import Flags
    from sibscan.report import items as items_mod
    from sibscan.report.items import scan_items

    path, _, _ = _labelled_scan(tmp_path)
    reads, worded = [], []
    prop = Flags.unflagged_by_labels
    monkeypatch.setattr(Flags, "unflagged_by_labels", property(lambda self: reads.append(1) or prop.fget(self)))
    why = items_mod._why
    monkeypatch.setattr(items_mod, "_why", lambda *a: worded.append(1) or why(*a))
    table = scan_items(path)
    assert len(table) == 30 and len(reads) == 1
    said = [w for w in table.columns["why"] if w]
    assert len(worded) == len(said) == 11  # 9 flagged, te4 and te12 kept off by their labels
    assert list(table.columns["hand_label"]).count("different") >= 1 and None in list(table.columns["hand_label"])


def test_a_same_label_on_a_pair_found_only_from_the_train_side_flags_its_test_item(tmp_path):
    """Report, check and split read one set of answers: a "same" pair that is only among a train item's
    test candidates flags its test item in the headline as it links the pair in the groups."""
    from sibscan.groups import sibling_groups
    from sibscan.report import build_report

    path, _, _ = _labelled_scan(tmp_path)
    nb = ScanDir(path).neighbours()
    tt = nb.direction("test", "train")
    have = set(zip(tt["query_id"].tolist(), tt["neighbour_id"].tolist()))
    flagged_before = {r["test_id"] for r in build_report(path)["flagged"]}
    rt = nb.direction("train", "test")
    only = [(q, t) for t, q in zip(rt["query_id"].tolist(), rt["neighbour_id"].tolist())
            if (q, t) not in have and q not in flagged_before]
    assert only, "the fixture has a pair found only from the train side"
    te, tr = ("te22", "tr4") if ("te22", "tr4") in only else only[0]
    write_labels(path / "calibration",
                 [{"dataset_fingerprint": "abcd", "query_id": te, "neighbour_id": tr, "label": "same"}], append=True)
    rep = build_report(path)
    flagged = {r["test_id"]: r for r in rep["flagged"]}
    assert rep["headline"]["flagged"]["count"] == 10 == len(flagged) and te in flagged
    assert flagged[te]["train_id"] == tr and flagged[te]["hand_label"] == "same"
    g = sibling_groups(path, sources=False, linkage="single")  # complete linkage may keep te's other pairs apart
    where = {(s, i): grp for s, i, grp in zip(g.split, g.ids, g.group)}
    assert where[("test", te)] == where[("train", tr)]
    assert rep["sibling_rate"]["test_to_train"]["any"]["count"] == 10


def test_row_labels_match_a_lookup_per_row_and_a_report_decides_the_pairs_once(tmp_path, monkeypatch):
    from sibscan.verdict.pairdecision import row_labels
    from sibscan.report import build_report

    path, _, _ = _labelled_scan(tmp_path)
    nb = ScanDir(path).neighbours()
    from sibscan.verdict.labelfile import read_label_file
    labels = PairLabels.from_records(read_label_file(path / "calibration" / "labels.jsonl"), "abcd")
    answer = dict(zip(zip(labels.test_ids.tolist(), labels.train_ids.tolist()), labels.label.tolist()))
    want = []
    for qs, q, ns, t in zip(nb["query_split"], nb["query_id"], nb["neighbour_split"], nb["neighbour_id"]):
        key = (q, t) if (qs, ns) == ("test", "train") else (t, q) if (qs, ns) == ("train", "test") else None
        want.append(answer.get(key, NONE) if key else NONE)
    got = row_labels(nb, labels)
    assert got.tolist() == want and (got != NONE).sum() >= 4
    # one lookup of the whole table and one decision at the cutoff per direction per report (it was ~5 of
    # each): every module that holds the functions is patched, so a call from anywhere counts
    looked = _count_calls(monkeypatch, "row_labels")
    decided = _count_calls(monkeypatch, "flag_items")
    build_report(path)
    # test->train, train->test
    assert len(looked) == 1 and decided == ["sibscan.verdict.testscores", "sibscan.verdict.verdict"]


def _count_calls(monkeypatch, name):
    """Patch ``sibscan.verdict.pairdecision.<name>`` in every loaded sibscan module that imported it; returns the
    list the calls append their caller module's name to."""
    import sys

    from sibscan.verdict import pairdecision

    real, calls = getattr(pairdecision, name), []
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("sibscan") and getattr(mod, name, None) is real:
            def counted(*a, _where=mod_name, **kw):
                calls.append(_where)
                return real(*a, **kw)
            monkeypatch.setattr(mod, name, counted)
    return calls


def test_flagged_at_matches_flag_items_at_every_cutoff():
    """A sweep (Flags.flagged_at) counts what deciding every pair again at that cutoff would flag."""
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(seed=st.integers(0, 2 ** 32 - 1), c0=st.floats(0, 1),
                      cutoffs=st.lists(st.floats(-0.1, 1.1), min_size=1, max_size=5))
    def prop(seed, c0, cutoffs):
        rng = np.random.default_rng(seed)
        n, m = 12, 30
        qi = rng.integers(0, n, m)
        # ties on a few values (a cutoff landing on a score) mixed with any scores, and NaN
        score = np.where(rng.random(m) < 0.5, rng.choice([0.25, 0.5, 0.75, np.nan], m), rng.uniform(0, 1, m))
        score = score.astype(np.float32)
        cutoffs = cutoffs + [0.25, 0.5, 0.75]
        label = rng.choice([SAME, DIFFERENT, NONE], size=m).astype(np.int8)
        exact = rng.random(n) < 0.1
        added = (label == SAME) & (rng.random(m) < 0.5)
        f = flag_items(qi, score, label, exact, c0, added=added)
        for c in cutoffs + [c0]:
            fc = flag_items(qi, score, label, exact, c, added=added)
            assert np.array_equal(f.flagged_at(c), fc.flagged)
            # by score: a loop over the rows the scores found (a row a label added is not one of them)
            by = exact.copy()
            for r in range(m):
                if not added[r] and score[r] >= c:
                    by[qi[r]] = True
            assert np.array_equal(fc.by_score, by)
            # each item the labels decided is counted once, by the pair shown for it
            d = fc.decided()
            assert d["above_cutoff_labelled_different"] == int((by & ~fc.flagged).sum())
            assert d["below_cutoff_labelled_same"] + d["train_side_labelled_same"] == int((fc.flagged & ~by).sum())
            assert d["train_side_labelled_same"] == sum(1 for i in np.flatnonzero(fc.flagged & ~by) if added[fc.row[i]])
    prop()


def test_calibrating_and_deciding_read_one_latest_answer_per_pair_in_either_orientation(tmp_path):
    """(test a, train b) same; (train b, test a) different; (train b, test a) undo: the pair has no answer,
    for the calibration's store and for the report's labels alike (the store keyed pairs by orientation)."""
    from sibscan.calibration.labels import Identity, LabelStore
    from sibscan.verdict.pairdecision import pair_key

    ident = {"dataset_fingerprint": "d", "encoder_identity": "e", "verifier_identity": None}
    fwd = {**ident, "query_split": "test", "query_id": "a", "neighbour_split": "train", "neighbour_id": "b"}
    back = {**ident, "query_split": "train", "query_id": "b", "neighbour_split": "test", "neighbour_id": "a"}
    cases = {("same", "different", "undo"): NONE, ("same", "different"): DIFFERENT, ("different", "same"): SAME,
             ("same", "undo"): NONE}
    for i, (answers, want) in enumerate(cases.items()):
        recs = [{**(fwd if j % 2 == 0 and j < 1 else back), "label": lab} for j, lab in enumerate(answers)]
        path = write_jsonl(tmp_path / f"labels{i}.jsonl", recs)
        current = LabelStore(path, Identity("d", "e", None)).current()
        from_store = current[pair_key(fwd)]["label"] if pair_key(fwd) in current else None
        got = PairLabels.from_records(recs, "d").lookup(["a"], ["b"])[0]
        assert got == want and from_store == {SAME: "same", DIFFERENT: "different", NONE: None}[want], answers
        assert list(current) in ([], [("test", "a", "train", "b")])  # keyed in the test -> train orientation


def test_answers_without_a_fingerprint_count_only_in_a_calibration_of_this_data(tmp_path):
    """Records without a dataset fingerprint (older files) are kept for a calibration of this data, and
    left out of one made for other data (applied with --force), where ids like "0", "1" name other items."""
    from sibscan.verdict.labelfile import scan_labels
    from sibscan.verdict.record import Calibration, write_calibration
    from sibscan.verdict.cutoff import Cutoff

    recs = [{"query_id": "0", "neighbour_id": "1", "label": "same"},
            {"query_id": "2", "neighbour_id": "3", "label": "different", "dataset_fingerprint": "here"}]
    for fp, want in (("here", [SAME, DIFFERENT]), ("elsewhere", [NONE, DIFFERENT])):
        cal = tmp_path / fp
        write_calibration(cal, Calibration(0.9, None, "similarity", "enc", None, fp))
        write_labels(cal, recs)
        labels = scan_labels(tmp_path, Cutoff(0.9, "calibrated", {"calibration": str(cal)}), "here")
        assert labels.lookup(["0", "2"], ["1", "3"]).tolist() == want, fp


def _table(rows):
    """A neighbours table from (query_split, query_id, query_index, neighbour_split, neighbour_id,
    neighbour_index, rank, similarity) rows."""
    cols = list(zip(*rows))
    names = ["query_split", "query_id", "query_index", "neighbour_split", "neighbour_id", "neighbour_index", "rank",
             "similarity"]
    return Neighbours({**dict(zip(names, map(np.array, cols))), "exact": np.zeros(len(rows), bool)})


def test_a_same_row_added_from_the_train_side_is_not_counted_by_score():
    """Test 0's only test -> train pair scores 0.5; the pair (te0, tr1) was found only from the train side
    at 0.95 and labelled same.  Without labels that row does not exist for test 0, so the scores alone do
    not flag it: the label does, through a pair only the train side found (not "below the cutoff": it
    scores above it)."""
    from sibscan.verdict.testscores import TestScores

    nb = _table([("test", "te0", 0, "train", "tr0", 0, 0, 0.5), ("train", "tr1", 1, "test", "te0", 0, 0, 0.95)])
    labels = PairLabels(np.array(["te0"]), np.array(["tr1"]), np.array([SAME], np.int8))
    top = nb.top1("test", "train")
    score, exact = np.array([0.5], np.float32), np.zeros(1, bool)
    fl = TestScores.from_neighbours(score, exact, top, nb, labels).flags(0.9)
    assert fl.flagged.tolist() == [True] and fl.by_score.tolist() == [False] and fl.row_added.tolist() == [True]
    assert fl.decided() == {"above_cutoff_labelled_different": 0, "below_cutoff_labelled_same": 0,
                            "train_side_labelled_same": 1}
    assert labels_phrase(fl.decided()) == ("1 test item is flagged through a pair labelled same by hand that only "
                                           "the train side found")
    # without the label nothing flags it, by score or otherwise
    bare = TestScores.from_neighbours(score, exact, top, nb, None).flags(0.9)
    assert not bare.flagged.any() and not bare.by_score.any()


def test_a_pair_both_sides_found_is_not_said_to_be_found_by_the_train_side_only():
    """(te0, tr0) is in both directions, the train side's copy a last bit higher: the test side found the
    pair, so a "same" answer flags it as "below the cutoff", not "only the train side found"."""
    from sibscan.verdict.testscores import TestScores

    hi = float(np.nextafter(np.float32(0.85), np.float32(1)))
    nb = _table([("test", "te0", 0, "train", "tr0", 0, 0, 0.85), ("train", "tr0", 0, "test", "te0", 0, 0, hi)])
    labels = PairLabels(np.array(["te0"]), np.array(["tr0"]), np.array([SAME], np.int8))
    top = nb.top1("test", "train")
    fl = TestScores.from_neighbours(np.array([0.85], np.float32), np.zeros(1, bool), top, nb, labels).flags(0.9)
    assert fl.flagged.tolist() == [True] and fl.row_added.tolist() == [False]
    assert fl.decided() == {"above_cutoff_labelled_different": 0, "below_cutoff_labelled_same": 1,
                            "train_side_labelled_same": 0}


def test_an_item_flagged_through_a_train_side_pair_above_the_cutoff_is_not_called_below_it(tmp_path):
    """make_scan, train 50's train -> test row moved to test 22 at 0.96 (test 22's own rows all below 0.58),
    the pair labelled same: the headline, check and the item's why say the same thing, and none says
    "below the cutoff"."""
    from sibscan.check import check
    from sibscan.report import build_report

    path = tmp_path / "scan"
    make_scan(path)
    sd = ScanDir(path)
    cols = {k: v.copy() for k, v in sd.neighbours().columns.items()}
    tr50 = (cols["query_split"] == "train") & (cols["neighbour_split"] == "test") & (cols["query_id"] == "tr50")
    cols["neighbour_id"][tr50], cols["neighbour_index"][tr50], cols["similarity"][tr50] = "te22", 22, 0.96
    own = (cols["query_split"] == "test") & (cols["neighbour_split"] == "train") & (cols["query_id"] == "te22")
    cols["similarity"][own], cols["verified"][own] = 0.5, np.nan
    assert "tr50" not in set(cols["neighbour_id"][own].tolist())
    cols.pop("score", None)
    sd.write_neighbours(Neighbours(cols))
    bare = build_report(path)["headline"]
    write_labels(path / "calibration", [{"dataset_fingerprint": "abcd", "query_split": "train", "query_id": "tr50",
                                         "neighbour_split": "test", "neighbour_id": "te22", "label": "same"}])
    rep = build_report(path)
    head = rep["headline"]
    assert head["decided_by_labels"] == {"above_cutoff_labelled_different": 0, "below_cutoff_labelled_same": 0,
                                         "train_side_labelled_same": 1}
    assert head["flagged"]["count"] == bare["flagged"]["count"] + 1
    said = "1 test item is flagged through a pair labelled same by hand that only the train side found"
    assert said in head["text"] and "below" not in head["text"].split("flagged at")[1].split(")")[0]
    why = {r["test_id"]: r["why"] for r in rep["flagged"]}["te22"]
    assert why.startswith("labelled same by hand, a pair only the train side found (verified score 0.9600 >= cutoff")
    res = check(path, max_rate=0.01)
    assert said in res.message
    assert "below the cutoff" not in res.message


def test_a_same_pair_found_only_from_the_test_side_flags_its_train_item(tmp_path):
    """Both directions count a "same" pair whichever side found it, as the groups link it."""
    from sibscan.groups import sibling_groups
    from sibscan.report import build_report

    path, _, _ = _labelled_scan(tmp_path)
    nb = ScanDir(path).neighbours()
    rt = nb.direction("train", "test")
    seen_from_train = set(zip(rt["neighbour_id"].tolist(), rt["query_id"].tolist()))
    tt = nb.direction("test", "train")
    below = tt.select(tt["score"] < 0.9)
    rep = build_report(path)
    flagged = {r["test_id"] for r in rep["flagged"]}
    only = [(q, t) for q, t in zip(below["query_id"].tolist(), below["neighbour_id"].tolist())
            if (q, t) not in seen_from_train and q not in flagged]
    assert ("te4", "tr47") in only, "the fixture has a test -> train pair below the cutoff that no train item found"
    te, tr = "te4", "tr47"
    before = rep["sibling_rate"]
    write_labels(path / "calibration",
                 [{"dataset_fingerprint": "abcd", "query_id": te, "neighbour_id": tr, "label": "same"}], append=True)
    after = build_report(path)["sibling_rate"]
    assert after["test_to_train"]["any"]["count"] == before["test_to_train"]["any"]["count"] + 1
    assert after["train_to_test"]["any"]["count"] == before["train_to_test"]["any"]["count"] + 1
    g = sibling_groups(path, sources=False, linkage="single")
    where = {(s, i): grp for s, i, grp in zip(g.split, g.ids, g.group)}
    assert where[("test", te)] == where[("train", tr)]


def test_the_reason_for_no_interval_names_the_cutoff_in_use_and_counts_answers_of_this_table(tmp_path):
    """(a) --cutoff X beside the scan's own calibration: the cutoff is not calibrated (there is a calibrated
    cutoff of this data); (b) answers about pairs the table lacks are not counted; (c) a calibration that
    differs only in encoder is not "calibrated on other data"."""
    from sibscan.verdict.record import Calibration, write_calibration
    from sibscan.report import build_report

    path, _, _ = _labelled_scan(tmp_path)
    write_labels(path / "calibration", [{"dataset_fingerprint": "abcd", "query_id": "te0", "neighbour_id": "tr999",
                                         "label": "different"}], append=True)  # (b): no row holds (te0, tr999)
    write_calibration(path / "calibration", Calibration(0.95, None, "verified", "znorm-v1", "lagcorr-v1", "abcd"))
    head = build_report(path, cutoff=0.9)["headline"]
    assert head["n_answers"] == 4 and head["cutoff_source"] == "uncalibrated"
    assert "(given by hand; the cutoff in use is not calibrated, so no sibling-rate interval" in head["text"]
    assert "no calibrated cutoff of this data" not in head["text"]
    other = tmp_path / "other-encoder"
    write_calibration(other, Calibration(0.9, None, "verified", "minilm-other", "lagcorr-v1", "abcd"))
    (other / "labels.jsonl").write_text((path / "calibration" / "labels.jsonl").read_text())
    with pytest.warns(UserWarning):
        head = build_report(path, calibration=other, force=True)["headline"]
    assert head["cutoff_rule"] == "calibrated for another encoder" and head["n_answers"] == 4
    assert "(calibrated for another encoder; that calibration's interval is not this scan's, so no sibling-rate" \
        in head["text"] and "other data" not in head["text"]


def test_a_cutoff_given_by_hand_reports_beside_an_unreadable_calibration_record(tmp_path):
    """--cutoff X does not use the scan's own calibration: a truncated cutoff.json there is warned about
    (its unmarked answers decide nothing, whose data they are about is unknown), not a failure."""
    from sibscan.report import build_report

    path, partner, _ = _labelled_scan(tmp_path)
    write_labels(path / "calibration", [{"query_id": "te5", "neighbour_id": partner["te5"], "label": "different"}],
                 append=True)  # unmarked: data unknown, so left out
    (path / "calibration" / "cutoff.json").write_text('{"cutoff": 0.9, "interv')
    with pytest.warns(UserWarning, match="cutoff.json"):
        rep = build_report(path, cutoff=0.9)
    assert rep["headline"]["n_answers"] == 4 and rep["headline"]["flagged"]["count"] == 9


def test_the_scan_reads_only_the_train_side_rows_of_test_items_answered_same(tmp_path, monkeypatch):
    """The held table leaves train -> test rows on disk (memory bound); a "same" answer at the end of a scan
    reads only the rows of the test items answered same, never the whole table, and the printed summary
    counts what they decide: a pair below the cutoff that only the train side found, labelled same, flags
    its test item in the summary as in the report (and not without the label)."""
    from typer.testing import CliRunner

    from sibscan.verdict.record import Calibration, write_calibration
    from sibscan.cli import app
    from sibscan.store.neighbourtable import Neighbours as Table
    from sibscan.report import build_report

    rng = np.random.default_rng(0)
    train = rng.normal(size=(40, 16)).cumsum(axis=1)
    test = np.vstack([train[:6] * 2.0 + rng.normal(scale=0.05, size=(6, 16)), rng.normal(size=(14, 16)).cumsum(axis=1)])
    for name, x in (("train", train), ("test", test)):
        (tmp_path / f"{name}.csv").write_text("\n".join(",".join(repr(float(v)) for v in row) for row in x) + "\n")
    monkeypatch.chdir(tmp_path)
    common = ["--train", "train.csv", "--test", "test.csv", "--no-progress", "--json", "--k", "1"]
    runner = CliRunner()
    first = runner.invoke(app, ["scan", *common, "--out", "scan0", "--cutoff", "0.99"])
    assert first.exit_code == 0, first.output
    # a train -> test pair below the cutoff whose test item is not flagged and did not find that train item
    nb0 = ScanDir(tmp_path / "scan0").neighbours()
    tt, rt = nb0.direction("test", "train"), nb0.direction("train", "test")
    found = set(zip(tt["query_id"].tolist(), tt["neighbour_id"].tolist()))
    best = dict(zip(tt["query_id"].tolist(), tt["score"].tolist()))
    te, tr = next((q, t) for t, q, sc, ex in zip(rt["query_id"].tolist(), rt["neighbour_id"].tolist(),
                                                 rt["score"].tolist(), rt["exact"].tolist())
                  if (q, t) not in found and sc < 0.99 and best[q] < 0.99 and not ex)
    # the calibration is applied with --force (one scan, no identities to copy): only its cutoff and its
    # answer matter here
    write_calibration(tmp_path / "cal", Calibration(0.99, None, "verified", "any-encoder", None, None))
    write_labels(tmp_path / "cal",
                 [{"query_split": "train", "query_id": tr, "neighbour_split": "test", "neighbour_id": te,
                                     "label": "same"}])
    loads, matched = [], []
    load, load_matching = Table.load, Table.load_matching
    monkeypatch.setattr(Table, "load", staticmethod(lambda path, skip=(): loads.append(list(skip)) or load(path, skip)))
    monkeypatch.setattr(Table, "load_matching", staticmethod(
        lambda *a: matched.append(load_matching(*a)) or matched[-1]))
    with pytest.warns(UserWarning, match="applied anyway"):
        second = runner.invoke(app, ["scan", *common, "--out", "scan1", "--calibration", "cal", "--force"])
    assert second.exit_code == 0, second.output
    assert [] not in loads  # the whole table (train -> test included) is never read
    assert len(matched) == 1
    got = matched[0]
    assert set(got["query_split"]) == {"train"} and set(got["neighbour_id"]) == {te}
    assert len(got) == int((rt["neighbour_id"] == te).sum()) < len(rt)
    # the summary counts what the report flags, one more than without the answer
    without = ScanDir(tmp_path / "scan0").manifest()["summary"]["siblings"]
    summary = ScanDir(tmp_path / "scan1").manifest()["summary"]["siblings"]
    rep = build_report(tmp_path / "scan1")  # the forced calibration is the scan's recorded cutoff now
    assert summary == rep["headline"]["flagged"]["count"] == without + 1
    assert te in {r["test_id"] for r in rep["flagged"]}


def test_load_matching_streams_the_table_and_keeps_only_the_rows_asked_for(tmp_path):
    """A 120k-row table with a 240-byte detail per row (~29 MB in that column): the rows of three test
    items from the train side come back equal to a full read's, and the peak held is a few blocks, not a
    column (reading each column whole to keep a few rows peaked above the column's size)."""
    import tracemalloc

    from sibscan.store.neighbourtable import Neighbours as Table

    n = 120_000
    rng = np.random.default_rng(0)
    train = rng.random(n) < 0.5
    qi, ni = np.arange(n) % 5000, rng.integers(0, 4000, n)
    te = np.char.add("te", ni.astype(str))
    tr = np.char.add("tr", qi.astype(str))
    cols = {"query_split": np.where(train, "train", "test"), "neighbour_split": np.where(train, "test", "train"),
            "query_id": np.where(train, tr, te), "neighbour_id": np.where(train, te, tr),
            "query_index": np.where(train, qi, ni), "neighbour_index": np.where(train, ni, qi),
            "rank": np.zeros(n, np.int32), "similarity": rng.random(n).astype(np.float32),
            "exact": np.zeros(n, bool),
            "detail": np.char.add(np.char.add("shift ", np.arange(n).astype(str)), "." * 50)}
    path = tmp_path / "neighbours.npz"
    Table(cols).save(path)
    want_ids = np.array(["te7", "te123", "te3999"])
    full = Table.load(path)
    ref = full.select((full["query_split"] == "train") & (full["neighbour_split"] == "test")
                      & np.isin(full["neighbour_id"], want_ids))
    del full
    tracemalloc.start()
    got = Table.load_matching(path, "train", "test", "neighbour_id", want_ids, block_rows=4096)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert 0 < len(got) == len(ref) < 200
    for k in ref.columns:
        a, b = np.asarray(got[k]), np.asarray(ref[k])
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k
    assert peak < 4 << 20, f"peak {peak / 2 ** 20:.1f} MiB while keeping {len(got)} rows"


def _recorded_with(path, cal):
    """Rewrite make_scan's manifest as if the scan had been run with ``--calibration cal``."""
    man = json.loads((path / "manifest.json").read_text())
    man["cutoff"].update(source="calibrated", calibration=str(cal))
    (path / "manifest.json").write_text(json.dumps(man))


def test_an_unreadable_record_of_the_calibration_in_use_stops_the_report(tmp_path):
    """The warning for an unreadable cutoff.json is for one the cutoff does not come from (a cutoff given by
    hand): a scan recorded with --calibration cal1 whose cal1/cutoff.json later breaks is refused, not
    reported with its answers half read."""
    from sibscan.errors import SibscanError
    from sibscan.report import build_report

    path = tmp_path / "scan"
    make_scan(path)
    cal = tmp_path / "cal1"
    write_labels(cal, [{"query_id": "te9", "neighbour_id": "tr15", "label": "same"}])
    (cal / "cutoff.json").write_text('{"cutoff": 0.9, "interv')
    _recorded_with(path, cal)
    with pytest.raises(SibscanError, match="cutoff.json") as err:
        build_report(path)
    assert "the calibration the cutoff in use comes from" in str(err.value) and "--cutoff X" in str(err.value)


def test_an_in_memory_calibration_does_not_stop_on_the_scans_own_unreadable_record(tmp_path):
    """A calibrated cutoff with no recorded folder is not the scan's own calibration/cutoff.json: that file
    being unreadable warns (as for a cutoff given by hand), it does not refuse."""
    from sibscan.calibration.summary import scan_headline
    from sibscan.verdict.record import Calibration

    path = tmp_path / "scan"
    make_scan(path)
    write_labels(path / "calibration", [{"query_id": "te9", "neighbour_id": "tr15", "label": "same",
                                         "dataset_fingerprint": "abcd"}])
    (path / "calibration" / "cutoff.json").write_text("{")
    cal = Calibration(0.93, None, "verified", "znorm-v1", "lagcorr-v1", "abcd")  # make_scan's identities
    with pytest.warns(UserWarning, match="not valid JSON"):
        h = scan_headline(path, calibration=cal)
    assert h["cutoff"] == pytest.approx(0.93)


def test_the_warning_for_an_unreadable_own_record_says_what_happens_to_its_answers(tmp_path):
    """With a dataset fingerprint unmarked answers decide nothing; without one every answer is kept (what
    from_records does), and the warning says that instead."""
    from sibscan.verdict.labelfile import scan_labels
    from sibscan.verdict.cutoff import Cutoff

    write_labels(tmp_path / "calibration", [{"query_id": "a", "neighbour_id": "b", "label": "same"}])
    (tmp_path / "calibration" / "cutoff.json").write_text('{"cutoff": 0.9, "interv')
    by_hand = Cutoff(0.9, "uncalibrated", {})
    with pytest.warns(UserWarning, match="without a dataset fingerprint decide nothing here"):
        assert scan_labels(tmp_path, by_hand, "abcd").lookup(["a"], ["b"]).tolist() == [NONE]
    with pytest.warns(UserWarning, match="every answer in it decides its pair") as got:
        assert scan_labels(tmp_path, by_hand, None).lookup(["a"], ["b"]).tolist() == [SAME]
    assert "decide nothing" not in str(got[0].message)


def test_answers_about_pairs_the_table_lacks_are_not_called_no_labels(tmp_path):
    """--cutoff X with a labels.jsonl that answers only pairs the table does not hold: n_answers is 0, but
    there are hand labels of this data; the sentence says none answers a pair of this table."""
    from sibscan.report import build_report

    path = tmp_path / "scan"
    make_scan(path)
    write_labels(path / "calibration", [{"dataset_fingerprint": "abcd", "query_id": "te0", "neighbour_id": "tr999",
                                         "label": "different"}])
    head = build_report(path, cutoff=0.9)["headline"]
    assert head["n_answers"] == 0 and head["n_answers_read"] == 1
    assert "no hand label answers a pair of this table, so no sibling-rate interval" in head["text"]
    assert "no hand labels of this data" not in head["text"]
    (path / "calibration" / "labels.jsonl").unlink()
    head = build_report(path, cutoff=0.9)["headline"]
    assert head["n_answers_read"] == 0 and "no hand labels of this data, so no sibling-rate interval" in head["text"]
