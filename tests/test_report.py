"""Every number of the report JSON against an independent (plain Python) computation on a planted scan."""
from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np
import pytest
from _helpers import write_labels
from planted_scan import CUTOFF, make_scan
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.errors import InputError, SibscanError
from sibscan.items import Items
from sibscan.report import build_report, render_html, render_markdown, write_reports
from sibscan.report.sections import sweep
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours


def wilson(k, n, z=1.959963984540054):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [c - h, c + h]


def best_scores(nb, qs, ns, n):
    """Brute force: each query's max deciding score (verified where present, else similarity)."""
    best = [None] * n
    for i in range(len(nb)):
        if nb["query_split"][i] == qs and nb["neighbour_split"][i] == ns:
            v = float(nb["verified"][i])
            s = float(nb["similarity"][i]) if math.isnan(v) else v
            q = int(nb["query_index"][i])
            best[q] = s if best[q] is None else max(best[q], s)
    return best


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    truth = make_scan(d)
    rng = np.random.default_rng(5)
    correct = rng.random(30) < 0.7
    correct[:9] = True  # siblings are answered right: the gap the report must show
    report = build_report(d, correct=correct)
    return d, truth, correct, report


def _rec(report_part, k, n):
    assert report_part["count"] == k and report_part["n"] == n
    assert report_part["rate"] == pytest.approx(k / n)
    assert report_part["ci"] == pytest.approx(wilson(k, n))


def test_sibling_rates_match_brute_force(planted):
    d, t, _, r = planted
    train_fp = {tuple(x) for x in t["fp_train"].tolist()}
    test_fp = {tuple(x) for x in t["fp_test"].tolist()}
    nb = t["neighbours"]
    exact = [tuple(x) in train_fp for x in t["fp_test"].tolist()]
    best = best_scores(nb, "test", "train", 30)
    near = [not e and b is not None and b >= np.float32(CUTOFF) for e, b in zip(exact, best)]
    tt = r["sibling_rate"]["test_to_train"]
    _rec(tt["exact"], sum(exact), 30)
    _rec(tt["near"], sum(near), 30)
    _rec(tt["any"], sum(exact) + sum(near), 30)
    assert (sum(exact), sum(near)) == (4, 6)  # planted: 4 twins, 5 near + test 12 lifted by verification
    # the calibrated interval: rate at its high end, then at its low end
    rate_at = lambda c: sum(e or (b is not None and b >= c) for e, b in zip(exact, best)) / 30  # noqa: E731
    assert tt["at_interval"] == pytest.approx([rate_at(0.93), rate_at(0.88)])
    from sibscan.calibration.baseline import expected_chance_siblings

    assert tt["expected_chance_siblings"] == pytest.approx(
        expected_chance_siblings(ScanDir(d).baseline(), CUTOFF, 60, 30))
    rt = r["sibling_rate"]["train_to_test"]
    ex_rt = [tuple(x) in test_fp for x in t["fp_train"].tolist()]
    best_rt = best_scores(nb, "train", "test", 60)
    near_rt = [not e and b is not None and b >= CUTOFF for e, b in zip(ex_rt, best_rt)]
    _rec(rt["exact"], sum(ex_rt), 60)
    _rec(rt["near"], sum(near_rt), 60)
    ww = r["sibling_rate"]["within_test"]
    fps = t["fp_test"].tolist()
    dup = [fps.count(x) > 1 for x in fps]
    best_ww = best_scores(nb, "test", "test", 30)
    _rec(ww["exact"], sum(dup), 30)
    _rec(ww["near"], sum(not e and b is not None and b >= CUTOFF for e, b in zip(dup, best_ww)), 30)
    assert ww["n_exact_groups"] == 1


def test_per_class_conflicts_and_sources(planted):
    d, t, _, r = planted
    test, train = t["test"], t["train"]
    tt_any = set()
    train_fp = {tuple(x) for x in t["fp_train"].tolist()}
    best = best_scores(t["neighbours"], "test", "train", 30)
    for i in range(30):
        if tuple(t["fp_test"][i].tolist()) in train_fp or (best[i] is not None and best[i] >= np.float32(CUTOFF)):
            tt_any.add(i)
    for row in r["per_class"]:
        members = [i for i in range(30) if test.labels[i] == row["label"]]
        k = sum(i in tt_any for i in members)
        assert (row["n_test"], row["siblings"]) == (len(members), k)
        assert row["ci"] == pytest.approx(wilson(k, len(members)))
    # conflicts: union-find in plain Python over exact fingerprints and edges at the cutoff
    nodes = [("train", i) for i in range(60)] + [("test", i) for i in range(30)]
    parent = {x: x for x in nodes}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)

    fp = {("train", i): tuple(t["fp_train"][i].tolist()) for i in range(60)}
    fp.update({("test", i): tuple(t["fp_test"][i].tolist()) for i in range(30)})
    by_fp = defaultdict(list)
    for x in nodes:
        by_fp[fp[x]].append(x)
    for members in by_fp.values():
        for m in members[1:]:
            union(members[0], m)
    nb = t["neighbours"]
    for i in range(len(nb)):
        if nb["exact"][i] or nb["score"][i] >= CUTOFF:
            union((nb["query_split"][i], int(nb["query_index"][i])),
                  (nb["neighbour_split"][i], int(nb["neighbour_index"][i])))
    label = {("train", i): train.labels[i] for i in range(60)}
    label.update({("test", i): test.labels[i] for i in range(30)})
    comps = defaultdict(set)
    for x in nodes:
        comps[find(x)].add(label[x])
    bad = [labs for labs in comps.values() if len(labs) > 1]
    lc = r["label_conflicts"]
    assert lc["n_groups"] == len(bad) >= 2  # planted: te1 vs tr1, te20 vs te21 (labels random)
    for c in ("a", "b", "c"):
        assert lc["per_class"].get(c, 0) == sum(c in labs for labs in bad)
    assert any(g["exact"] and {m["id"] for m in g["members"]} == {"te1", "tr1"} for g in lc["groups"])
    ss = r["shared_sources"]
    shared = [i for i in range(30) if test.groups[i] in set(train.groups)]
    assert ss["available"] and ss["count"] == len(shared) == 3 and ss["n_sources_shared"] == 1
    assert ss["top"][0] == {"source": train.groups[40], "n_test": 3, "n_train": 3}


def test_accuracy_split_and_sweep(planted):
    d, t, correct, r = planted
    train_fp = {tuple(x) for x in t["fp_train"].tolist()}
    exact = np.array([tuple(x) in train_fp for x in t["fp_test"].tolist()])
    best = np.array([-np.inf if b is None else b for b in best_scores(t["neighbours"], "test", "train", 30)])
    sib = exact | (best >= np.float32(CUTOFF))
    acc = r["accuracy"]["siblings"]
    assert acc["all"]["n"] == 30 and acc["all"]["accuracy"] == pytest.approx(correct.mean())
    assert acc["masked"]["accuracy"] == pytest.approx(correct[sib].mean())
    assert acc["rest"]["accuracy"] == pytest.approx(correct[~sib].mean())
    assert acc["difference"] == pytest.approx(correct[sib].mean() - correct[~sib].mean())
    assert r["accuracy"]["exact_twins"]["masked"]["n"] == 4
    shared = np.array([g == t["train"].groups[40] for g in t["test"].groups])
    assert r["accuracy"]["shared_sources"]["masked"]["accuracy"] == pytest.approx(correct[shared].mean())
    sw = r["sweep"]
    assert len(sw["cutoff"]) == 101 and sw["cutoff"][-1] == 1.0 and sw["cutoff"][0] <= np.nanmin(best[np.isfinite(best)])
    for j in (0, 37, 60, 90, 100):
        c = sw["cutoff"][j]
        m = exact | (best >= c)
        assert sw["n_sibling"][j] == m.sum() and sw["sibling_rate"][j] == pytest.approx(m.mean())
        if m.any() and (~m).any():
            assert sw["gap"][j] == pytest.approx(correct[m].mean() - correct[~m].mean())
    assert sw["n_sibling"][-1] >= 4  # exact twins stay siblings at cutoff 1


def test_sweep_random_against_loop():
    rng = np.random.default_rng(1)
    s = rng.uniform(-1, 1, 200)
    s[rng.random(200) < 0.1] = np.nan
    ex = rng.random(200) < 0.05
    ok = rng.random(200) < 0.6
    cuts = np.linspace(-1, 1, 17)
    out = sweep(s, ex, cuts, ok)
    for j, c in enumerate(cuts):
        m = ex | (np.nan_to_num(s, nan=-np.inf) >= c)
        assert out["n_sibling"][j] == m.sum()
        exp = correct_gap = None
        if m.any() and (~m).any():
            correct_gap = ok[m].mean() - ok[~m].mean()
        exp = correct_gap
        assert (out["gap"][j] is None) == (exp is None)
        if exp is not None:
            assert out["gap"][j] == pytest.approx(exp)


def test_pairs_histogram_and_manifest(planted):
    d, t, _, r = planted
    scores = [p["score"] for p in r["closest_pairs"]]
    # the closest near pairs first, exact twins (te0-te3) after them: here 26 near pairs fill the 20 places
    assert scores == sorted(scores, reverse=True) and len(scores) == 20 and not any(p["exact"] for p in r["closest_pairs"])
    assert [p["test_id"] for p in r["closest_pairs"][:5]] == ["te8", "te7", "te6", "te5", "te4"]
    above, below = r["near_cutoff"]["above"], r["near_cutoff"]["below"]
    assert above[0]["test_id"] == "te12" and all(p["score"] >= CUTOFF - 1e-6 for p in above)
    assert below[0]["test_id"] == "te9" and below[0]["score"] == pytest.approx(0.89) and below[0]["label_match"] is not None
    assert [p["score"] for p in below] == sorted([p["score"] for p in below], reverse=True)
    h = r["histogram"]
    assert sum(h["nn_counts"]) == 30 and len(h["edges"]) == len(h["nn_counts"]) + 1
    assert h["baseline_density"] is not None
    widths = np.diff(h["edges"])  # fine bins where the test items' scores are, coarse over the rest
    assert widths.min() > 0 and np.dot(h["baseline_density"], widths) == pytest.approx(1.0)
    assert np.dot(h["nn_density"], widths) == pytest.approx(1.0)
    assert r["schema_version"] == 3 and r["manifest"]["encoder"]["identity"] == "znorm-v1"
    assert r["cutoff"]["value"] == CUTOFF and r["cutoff"]["source"] == "calibrated"
    json.dumps(r, allow_nan=False)


def test_markdown_and_html_come_from_the_json(planted, tmp_path):
    d, t, correct, _ = planted
    written = write_reports(d, out=tmp_path, correct=correct)
    rep = json.loads(written["json"].read_text())
    md = written["md"].read_text()
    assert md == render_markdown(rep)
    assert (f"accuracy {100 * correct.mean():.1f} % (n=30); 10 of 30 test items (33.3 %) flagged at verified "
            "similarity ≥ 0.9000 (recorded by the scan; no hand labels of this data, so no sibling-rate interval") in md
    assert rep["headline"]["state"] == "baseline_only" and rep["headline"]["lo"] is None and rep["headline"]["text"] in md
    page = written["html"].read_text()
    sd = ScanDir(d)
    assert page == render_html(rep, sd.items("test"), sd.items("train"))
    assert page.count('<svg class="plot') == 2 and "class=\"baseline\"" in page and "class=\"interval\"" in page
    assert 'class="spark"' in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")


def test_cutoff_override_and_no_cutoff(tmp_path):
    make_scan(tmp_path, cutoff=None)
    r = build_report(tmp_path)
    assert r["cutoff"]["source"] == "none" and r["sibling_rate"]["test_to_train"]["near"]["count"] is None
    assert r["sibling_rate"]["test_to_train"]["exact"]["count"] == 4 and r["near_cutoff"] is None
    assert r["headline"]["state"] == "not_assessed" and r["headline"]["estimate"] is None
    assert "sibling rate not assessed (no cutoff" in render_markdown(r)
    r2 = build_report(tmp_path, cutoff=0.95)
    # 0.95, 0.97, 0.99
    assert r2["cutoff"]["source"] == "uncalibrated" and r2["sibling_rate"]["test_to_train"]["near"]["count"] == 3
    with pytest.raises(SibscanError, match=r"--cutoff is a similarity in \[-1, 1\], got 3"):
        build_report(tmp_path, cutoff=3)


def test_predictions_file_and_bad_correct(tmp_path):
    t = make_scan(tmp_path)
    labels = t["test"].labels
    preds = [labels[i] if i % 2 == 0 else "zzz" for i in range(30)]
    f = tmp_path / "preds.csv"
    f.write_text("id,prediction\n" + "".join(f"te{i},{p}\n" for i, p in enumerate(preds)))
    r = build_report(tmp_path, predictions=f)
    assert r["accuracy"]["siblings"]["all"]["accuracy"] == pytest.approx(0.5)
    with pytest.raises(InputError, match=r"correct has shape \(3,\); expected \(30,\)"):
        build_report(tmp_path, correct=np.ones(3, bool))
    res = CliRunner().invoke(app,
                             ["report", str(tmp_path), "--predictions", str(f), "--format", "md", "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("accuracy 50.0 % (n=30); 10 of 30 test items (33.3 %) flagged") and (tmp_path / "o" / "report.md").exists()
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--format", "pdf"])
    assert res.exit_code == 1 and "unknown report format pdf; available: json, md, html" in res.output
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nope")])
    assert res.exit_code == 1 and "is not a sibscan scan directory" in res.output


def test_text_and_image_gallery(tmp_path):
    make_scan(tmp_path / "text", modality="text", sources=False)
    write_reports(tmp_path / "text", formats=["html"])
    page = (tmp_path / "text" / "report.html").read_text()
    assert "<mark>(copy)</mark>" in page and "Shared sources" not in page
    Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed (pip install 'sibscan[images]')")

    paths = []
    for i, colour in enumerate([(200, 10, 10), (10, 200, 10), (10, 10, 200)]):
        p = tmp_path / f"im{i}.png"
        Image.new("RGB", (40, 30), colour).save(p)
        paths.append(str(p))
    sd = ScanDir(tmp_path / "img")
    sd.write_items(Items("train", "image", ["a", "b"], paths=paths[:2]))
    sd.write_items(Items("test", "image", ["x"], paths=paths[2:]))
    sd.write_neighbours(Neighbours({
        "query_split": ["test"], "query_id": ["x"], "query_index": [0], "rank": [0], "neighbour_split": ["train"],
        "neighbour_id": ["a"], "neighbour_index": [0], "similarity": [0.5], "exact": [False]}))
    sd.write_manifest({"status": "complete", "cutoff": {"value": 0.9, "source": "uncalibrated"}})
    write_reports(sd.path, formats=["html", "md"])
    page = (sd.path / "report.html").read_text()
    # the one pair, shown once (the closest pair, and not again just below the cutoff), two sides; 40 x 30
    # images scaled up 4x by whole pixels (PNG)
    assert page.count("data:image/png;base64,") == 2 and page.count('width="160" height="120"') == 2


def test_report_uses_the_scans_own_calibration_when_it_has_a_cutoff(tmp_path):
    """`sibscan calibrate SCAN` then `sibscan report SCAN`: the report picks up SCAN/calibration."""
    from sibscan.calibration import calibrate
    from planted_scan import oracle_labels, planted_scan
    from sibscan.report import build_report
    from sibscan.store.scandir import ScanDir as _ScanDir

    planted = planted_scan(tmp_path / "scan", n_train=300, n_test=150, rate=0.1, seed=3)
    scan = planted.path
    assert build_report(scan)["cutoff"]["source"] == "none"
    sd = _ScanDir(scan)
    m = sd.manifest()
    top = sd.neighbours().top1()
    pairs = list(zip(top["query_id"].tolist(), top["neighbour_id"].tolist()))
    labels = write_labels(tmp_path,
                          ({"query_id": q, "neighbour_id": t, "label": lab,
                            "dataset_fingerprint": m["dataset_fingerprint"],
                                      "encoder_identity": m["encoder"]["identity"], "verifier_identity": None}
                                     for (q, t), lab in zip(pairs, oracle_labels(planted, pairs))))
    cal = calibrate(scan, labels=str(labels), ui="none")
    after = build_report(scan)
    assert after["cutoff"]["source"] == "calibrated"
    assert after["cutoff"]["value"] == pytest.approx(cal.cutoff)
    assert build_report(scan, cutoff=0.5)["cutoff"]["source"] == "uncalibrated"  # a hand-given cutoff still wins


def test_markdown_says_when_the_calibration_cannot_support_its_cutoff(tmp_path):
    from planted_scan import planted_scan
    from sibscan.report import build_report, render_markdown

    planted = planted_scan(tmp_path / "scan", n_train=200, n_test=100, rate=0.1, seed=5)
    rep = build_report(planted.path, cutoff=0.9)
    assert "cannot support" not in render_markdown(rep)
    rep["cutoff"].update(source="calibrated", status="interval [0.65, 0.93] is wider than 0.1")
    assert "labels cannot support this cutoff yet (interval [0.65, 0.93] is wider than 0.1)" in render_markdown(rep)


def test_every_output_counts_chance_siblings_against_the_train_items_searched(tmp_path):
    """One n_train for the expected number of chance siblings (scandir.train_items_searched): the report's
    headline and test_to_train, the headline calibrate and split print, and the scan summary agree.  Where
    the manifest does not record it (written by other code), the rows of items/train.npz are counted: the
    old code gave calibrate and split 0 there (no count) while the report counted the items it loaded."""
    from sibscan.calibration.baseline import expected_chance_siblings
    from sibscan.calibration.summary import scan_headline
    from sibscan.verdict.cutoff import resolve_cutoff
    from sibscan.verdict.headline import headline
    from sibscan.stages.summary import summarise
    from sibscan.store.scandir import train_items_searched
    from sibscan.split import groups_and_headline
    from sibscan.verdict.testscores import test_scores
    from sibscan.verdict import Verdict

    make_scan(tmp_path)
    sd = ScanDir(tmp_path)
    want = expected_chance_siblings(sd.baseline(), CUTOFF, 60, 30)
    manifest = sd.manifest()
    assert train_items_searched(manifest) == 60
    summary = summarise(Verdict.open(tmp_path))
    assert summary["expected_chance_siblings"] == pytest.approx(want)
    del manifest["inputs"]["train"]["n_items"]
    sd.write_manifest(manifest)
    assert train_items_searched(manifest) is None and train_items_searched(manifest, tmp_path) == 60
    rep = build_report(tmp_path)
    assert rep["headline"]["expected_chance_siblings"] == pytest.approx(want)
    assert rep["sibling_rate"]["test_to_train"]["expected_chance_siblings"] == pytest.approx(want)
    assert scan_headline(tmp_path)["expected_chance_siblings"] == pytest.approx(want)  # calibrate's
    assert groups_and_headline(tmp_path)[1]["expected_chance_siblings"] == pytest.approx(want)  # split's
    # nothing to count against: no count is stated (not 0)
    at, scores = resolve_cutoff(manifest, scan_dir=tmp_path), test_scores(tmp_path)
    (tmp_path / "items" / "train.npz").rename(tmp_path / "train.npz")
    assert train_items_searched(manifest, tmp_path) is None
    assert headline(at, scores, baseline=sd.baseline(), n_train=None)["expected_chance_siblings"] is None


def test_one_chance_count_in_the_report_or_one_refusal(tmp_path):
    """test_to_train states the headline's expected chance siblings (it computed its own, and could leave it
    out while the headline stated it); a baseline without a quantile or a tail is refused in one line, with
    no warning before it."""
    import warnings

    make_scan(tmp_path)
    sd = ScanDir(tmp_path)
    b = sd.baseline()
    rep = build_report(tmp_path)
    expected = rep["headline"]["expected_chance_siblings"]
    assert expected is not None and rep["sibling_rate"]["test_to_train"]["expected_chance_siblings"] == expected
    # a baseline without a quantile the readers need is refused where it is read, in one line (calibrate
    # and a resumed scan raised KeyError '0.999' tracebacks; the report warned and went on)
    sd.write_baseline({**b, "quantiles": {q: v for q, v in b["quantiles"].items() if q != "0.999"}})
    with pytest.raises(SibscanError, match=r"baseline.json is corrupt or truncated \(no 0.999 quantile\); delete it"):
        build_report(tmp_path)
    from sibscan.calibration import calibrate

    with pytest.raises(SibscanError, match=r"no 0.999 quantile"):  # was KeyError: '0.999'
        calibrate(tmp_path, ui="none")
    sd.write_baseline({k: v for k, v in b.items() if k != "tail"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused in one line, with no warning before it
        with pytest.raises(SibscanError, match="baseline has no usable tail"):
            build_report(tmp_path)


def test_the_share_over_the_cutoffs_interval_reads_as_one_value_when_it_does_not_move(planted):
    import copy

    rep = copy.deepcopy(planted[3])
    tt = rep["sibling_rate"]["test_to_train"]
    md = render_markdown(rep)
    line = next(ln for ln in md.splitlines() if "Over the cutoff's interval" in ln)
    assert " runs " in line  # the planted scan's share moves over the interval
    tt["at_interval"] = [0.189, 0.189]
    line = next(ln for ln in render_markdown(rep).splitlines() if "Over the cutoff's interval" in ln)
    assert line.endswith("the share flagged stays at 18.9 %.") and "18.9 % to 18.9 %" not in line


def test_predictions_label_column_is_the_truth_when_the_scan_has_no_labels(tmp_path):
    """`report --help` promises "id, prediction[, label]": an unlabelled scan is scored against the file's labels."""
    from sibscan.store.scandir import load_items

    t = make_scan(tmp_path)
    test, fp = load_items(tmp_path, "test")
    ScanDir(tmp_path).write_items(Items("test", "table", test.ids, values=test.values, groups=test.groups), fp)
    labels = t["test"].labels
    rows = [(f"te{i}", labels[i] if i % 2 == 0 else "zzz", labels[i]) for i in range(30)]
    with_label = tmp_path / "with_label.csv"
    with_label.write_text("id,prediction,label\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--predictions", str(with_label), "--format", "md",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("accuracy 50.0 % (n=30)")
    bare = tmp_path / "bare.csv"
    bare.write_text("id,prediction\n" + "".join(f"{a},{b}\n" for a, b, _ in rows))
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--predictions", str(bare)])
    assert res.exit_code == 1 and "no label column" in res.output and "scan with --label FIELD" in res.output
    assert "Traceback" not in res.output
    with_label.write_text("id,prediction,label\n" + "".join(f"{a},{b},{'' if a == 'te3' else c}\n" for a, b, c in rows))
    with pytest.raises(InputError, match=r"with_label\.csv: test id 'te3' has an empty label"):
        build_report(tmp_path, predictions=with_label)


def test_html_title_and_notebook_view_count_in_number(planted):
    """The HTML title and the notebook view said "1 test items" for one (fmt.plural, as the other outputs)."""
    import copy

    from sibscan.report.notebook import render_notebook

    d, _, _, rep = planted
    one = copy.deepcopy(rep)
    one["scan"]["n_test"] = 1
    one["flagged"] = one["flagged"][:1]
    sd = ScanDir(d)
    assert "<title>sibscan report — table, 1 test item</title>" in render_html(one, sd.items("test"), sd.items("train"))
    assert "; 1 test item flagged" in render_notebook(one)
