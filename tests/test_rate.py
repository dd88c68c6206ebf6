"""One sibling rate everywhere (sibscan.verdict.rate): the estimator, the headline every output prints, the
states where nothing is assessed, bad label input, and how numbers near 1 are printed."""
from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pytest
from _helpers import oracle_file, read_labels, write_jsonl
from typer.testing import CliRunner

from sibscan import fmt
from sibscan.calibration import calibrate
from planted_scan import planted_scan
from sibscan.cli import app
from sibscan.verdict.headline import narrow_enough
from sibscan.verdict.rate import estimate_rate


# --- how numbers are printed ----------------------------------------------------------------------
def test_scores_near_one_keep_the_digits_that_tell_them_apart():
    assert fmt.score(0.9999) == "0.9999" and fmt.score(0.99996) == "0.99996" and fmt.score(0.9999999) == "0.9999999"
    assert fmt.score(1.0) == "1.0000" and fmt.score(0.907) == "0.9070" and fmt.score(None) == "n/a"
    assert fmt.scores([0.99991, 0.99996, 1.0]) == ["0.99991", "0.99996", "1.00000"]  # distinct values print distinct
    assert fmt.pct(0.0073) == "0.73 %" and fmt.pct(0.264) == "26.4 %" and fmt.pct(0.0004) == "0.040 %"
    assert fmt.pct(None) == "n/a" and fmt.count(0.004) == "< 0.01" and fmt.count(54.2) == "54.2"


# --- the estimator ----------------------------------------------------------------------------------
def test_all_different_answers_below_bound_the_rate_by_what_they_cover():
    # 2,000 items: 20 siblings at the top; 60 labels: 10 of the siblings, 20 of the highest-scoring
    # others and 30 anywhere below, all 'different'. The rate is estimated where the answers are: the
    # interval holds the 20, the answered siblings are siblings and the answered others are not. (The
    # monotone curve gave an upper end under 2 % here by reading the region below the answers as empty;
    # it also read real low-scoring siblings as slips, issue 30. 30 answers over 1,970 items bound it
    # at several percent: tests/test_rate_estimator.py shows more answers there narrowing it.)
    rng = np.random.default_rng(0)
    n = 2000
    score = rng.uniform(0.2, 0.85, n)
    score[:20] = rng.uniform(0.95, 1.0, 20)
    order = np.argsort(-score[20:]) + 20
    lab = np.r_[np.arange(10), order[:20], rng.choice(order[20:], 30, replace=False)]
    est = estimate_rate(score, np.zeros(n, bool), lab, lab < 20, cutoff=0.95)
    assert est.lo <= est.estimate <= est.hi
    assert est.lo <= 20 / n <= est.hi and est.lo * n >= 10
    assert est.p_same[lab[10:]].max() < 0.2 and est.p_same[:10].min() == 1.0


def test_exact_twins_count_without_labels_and_narrow_enough_rule():
    score = np.linspace(0.1, 0.9, 100)
    exact = np.zeros(100, bool)
    exact[:7] = True
    est = estimate_rate(score, exact, np.arange(40, 100), np.zeros(60, bool))
    assert est.n_exact == 7 and est.lo >= 0.07 - 1e-9 and est.estimate == pytest.approx(0.07, abs=0.02)
    assert narrow_enough(0.01, 0.006, 0.014) and not narrow_enough(0.01, 0.0, 0.03)
    assert narrow_enough(0.2, 0.16, 0.24) and narrow_enough(None, None, None) is None


# --- one figure in every output ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rate")
    p = planted_scan(tmp / "scan", n_train=400, n_test=300, rate=0.1, seed=3)
    calibrate(p.path, ui="none", n_pairs=60)
    labels = oracle_file(tmp, p, p.path / "calibration")
    cal = calibrate(p.path, labels=labels, ui="none", n_pairs=60)
    assert cal.status == "ok", cal.advice
    return p, tmp


def test_every_output_states_the_same_estimate_and_interval(calibrated, tmp_path):
    p, _ = calibrated
    runner = CliRunner()
    res = runner.invoke(app, ["calibrate", str(p.path), "--ui", "none", "--json"])
    assert res.exit_code == 0, res.output
    from_cal = json.loads(res.stdout)["headline"]
    res = runner.invoke(app, ["check", str(p.path), "--max-rate", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    from_check = json.loads(res.stdout)
    res = runner.invoke(app, ["report", str(p.path), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "report.json").read_text())
    head = rep["headline"]
    assert head["state"] == "calibrated" and head["n_labels"] == 60 and head["lo"] <= head["estimate"] <= head["hi"]
    assert head["lo"] <= p.true_rate <= head["hi"]
    assert head["definition"] and set(head) >= {"state", "estimate", "lo", "hi", "level", "n_labels", "cutoff",
                                                "definition"}
    assert from_cal == head and from_check["headline"] == head
    assert from_check["rates"]["siblings"] == head["estimate"]
    assert rep["sibling_rate"]["test_to_train"]["calibration_estimate"] == [head["lo"], head["estimate"], head["hi"]]
    # the printed figures: the same sentence in report.md, report.html and calibrate; check quotes them
    figures = [fmt.pct(head["estimate"]), fmt.pct(head["lo"]), fmt.pct(head["hi"])]
    md, page = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    assert head["text"] in md and f"interval {figures[1]} to {figures[2]}" in page and figures[0] in page
    res = runner.invoke(app, ["calibrate", str(p.path), "--ui", "none"])
    assert res.exit_code == 0 and head["text"] in res.output
    res = runner.invoke(app, ["check", str(p.path), "--max-rate", "0.01"])
    assert res.exit_code == 1 and f"sibling rate {figures[0]} (95% interval {figures[1]} to {figures[2]}" in res.output
    assert "the lowest score from which P(same) of the hand labels, by its 95 % lower bound per run of answers, is 0.5 or more" in head["text"] and fmt.score(head["cutoff"]) in head["text"]


def test_a_changed_definition_is_said_once_by_the_command(tmp_path):
    # the warning was also echoed: 'sibscan calibrate' printed the same line twice
    p = planted_scan(tmp_path / "scan", n_train=120, n_test=60, seed=7, dim=12)
    calibrate(p.path, ui="terminal", n_pairs=4, definition="the same row of values", stdin=io.StringIO("n\nn\n"),
              stdout=io.StringIO())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = CliRunner().invoke(app, ["calibrate", str(p.path), "--ui", "none", "--definition", "the same series"])
    assert res.exit_code == 0, res.output
    said = "2 answers were given under: 'the same row of values'"
    assert res.output.count(said) + sum(said in str(w.message) for w in caught) == 1, res.output


def test_calibrate_records_the_chance_count_the_report_states(calibrated):
    # both take n_train from scandir.train_items_searched (calibrate fell back to the baseline's own)
    from sibscan.calibration import load_calibration
    from sibscan.report import build_report

    p, _ = calibrated
    expected = load_calibration(p.path / "calibration").estimates["expected_chance_siblings"]
    assert expected is not None and expected == pytest.approx(build_report(p.path)["headline"]["expected_chance_siblings"])


def test_nothing_assessed_prints_no_rate(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=200, n_test=100, rate=0.1, seed=5)
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(p.path), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    head = rep["headline"]
    assert head["state"] == "not_assessed" and head["estimate"] is head["lo"] is head["hi"] is None
    assert head["flagged"] is None and rep["sibling_rate"]["test_to_train"]["any"]["rate"] is None
    for f in ("report.md", "report.html"):
        text = (tmp_path / "r" / f).read_text()
        assert "sibling rate not assessed" in text and "have a training sibling" not in text
    res = runner.invoke(app, ["check", str(p.path), "--max-rate", "0.5", "--json"])
    assert res.exit_code == 1 and "--max-rate needs a cutoff" in res.output
    res = runner.invoke(app, ["check", str(p.path), "--max-exact", "0.5", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["headline"]["state"] == "not_assessed"
    # calibrate with nothing answered (stdin closed): no rate before a single answer
    res = runner.invoke(app, ["calibrate", str(p.path), "--ui", "terminal"], input="")
    assert res.exit_code == 0, res.output
    assert "sibling rate not assessed" in res.output and "sibling rate: " not in res.output
    res = runner.invoke(app, ["calibrate", str(p.path), "--ui", "none", "--json"])
    assert json.loads(res.stdout)["headline"]["estimate"] is None


def test_baseline_only_gives_no_interval(calibrated):
    p, _ = calibrated
    from sibscan.calibration.summary import scan_headline

    head = scan_headline(p.path, cutoff=0.9)
    assert head["state"] == "baseline_only" and head["lo"] is None and head["hi"] is None
    assert head["estimate"] == head["flagged"]["rate"] and "no sibling-rate interval" in head["text"]


# --- bad label input ------------------------------------------------------------------------------
def test_labels_outside_the_draw_repeated_answers_and_other_encoders(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=200, n_test=100, rate=0.1, seed=6)
    cal_dir = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal_dir, ui="none", n_pairs=20)
    draw = json.loads((cal_dir / "draw.json").read_text())
    drawn = {(q["query_id"], q["neighbour_id"]) for q in draw["pairs"]}
    from sibscan.calibration.sampling import Population
    from sibscan.store.scandir import ScanDir

    pop = Population.from_neighbours(ScanDir(p.path).neighbours())
    # an undrawn pair of another test item than te0 and te1 (they get records of their own below)
    undrawn = next((q, t) for q, t in zip(pop.query_id, pop.neighbour_id) if (q, t) not in drawn
                   and q not in ("te0", "te1"))
    base = {k: draw[k] for k in ("dataset_fingerprint", "encoder_identity", "verifier_identity")}
    recs = [
        {**base, "query_id": undrawn[0], "neighbour_id": undrawn[1], "label": "same"},  # in the scan, not drawn
        {**base, "query_id": undrawn[0], "neighbour_id": undrawn[1], "label": "different"},  # answered again: wins
        {**base, "query_id": "te0", "neighbour_id": "no-such-train-item", "label": "same"},  # not a pair of this scan
        {**base, "encoder_identity": "another-encoder/v2", "query_id": "te1",  # another encoder's label of a pair here
         "neighbour_id": str(pop.neighbour_id[list(pop.query_id).index("te1")]), "label": "different"},
    ]
    f = write_jsonl(tmp_path / "mixed.jsonl", recs)
    said = []
    cal = calibrate(p.path, calibration_dir=cal_dir, labels=f, ui="none", n_pairs=20, echo=said.append)
    msg = " ".join(said)
    assert "imported 4 new label records" in msg and "2 of its 3 pairs are pairs this scan scores (carried over)" in msg
    assert "1 records were made under another encoder or verifier" in msg and "1 are not (kept in labels.jsonl, not used)" in msg
    lines = read_labels(cal_dir)
    assert [r["label"] for r in lines if r["query_id"] == undrawn[0]] == ["same", "different"]  # both kept
    assert cal.extra["n_labelled_outside_population"] == 1 and cal.extra["n_labels_used"] == 2
    # the later answer counts; the "same" about a pair this scan does not score is kept, not counted as used
    assert cal.n_labels == {"same": 0, "different": 2, "skip": 0}
    after = json.loads((cal_dir / "draw.json").read_text())
    assert undrawn in {(q["query_id"], q["neighbour_id"]) for q in after["pairs"]}  # answered pairs join the draw


def test_a_changed_definition_is_warned_and_recorded(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=120, n_test=60, seed=7, dim=12)
    cal_dir = tmp_path / "cal"
    # no control pairs: the piped answers are the pairs' (controls are tested in test_controls.py)
    calibrate(p.path, calibration_dir=cal_dir, ui="terminal", n_pairs=4, definition="the same row of values",
              stdin=io.StringIO("n\nn\n"), stdout=io.StringIO(), controls=0)
    with pytest.warns(UserWarning, match="the definition of 'same' differs (.|\n)*\n  2 "
                                         "answers were given under: 'the same row of values'"):
        cal = calibrate(p.path, calibration_dir=cal_dir, ui="terminal", n_pairs=4,
                        definition="the same series, rescaled",
                        stdin=io.StringIO("n\n"), stdout=io.StringIO(), controls=0)
    lines = read_labels(cal_dir)
    assert [r["definition"] for r in lines] == ["the same row of values"] * 2 + ["the same series, rescaled"]
    assert cal.extra["definition"] == "the same series, rescaled"
    assert cal.extra["definitions"] == {"the same row of values": 2, "the same series, rescaled": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one definition throughout: no warning
        calibrate(p.path, calibration_dir=tmp_path / "cal2", ui="terminal", n_pairs=4, definition="the same row",
                  stdin=io.StringIO("n\nn\n"), stdout=io.StringIO())
        calibrate(p.path, calibration_dir=tmp_path / "cal2", ui="none", n_pairs=4)  # the recorded one is kept


# --- the labelling screens ------------------------------------------------------------------------
def test_text_keeps_its_line_breaks():
    from sibscan.calibration.session import _with_breaks
    from sibscan.calibration.terminal import _mark
    from sibscan.kernels.textalign import word_diff

    a, b = "first line\nsecond line\n\n\n\nlast", "first line\nsecond LINE\n\nlast"
    wa, _ = word_diff(a, b)
    words = _with_breaks(a, wa)
    assert [w[2] for w in words] == [" ", "\n", " ", "\n\n", ""]
    assert _mark(words, tty=False, indent="  ") == "first line\n  second line\n  \n  last"


def test_terminal_image_preview(tmp_path, monkeypatch):
    Image = pytest.importorskip("PIL.Image")
    from sibscan.calibration.terminal import image_preview, truecolor

    Image.new("RGB", (40, 20), (255, 0, 0)).save(tmp_path / "a.png")
    Image.new("RGB", (20, 40), (0, 0, 255)).save(tmp_path / "b.png")
    art = image_preview(str(tmp_path / "a.png"), str(tmp_path / "b.png"), width=8)
    lines = art.splitlines()
    assert len(lines) == 8  # the taller image: 8 cells wide x 16 pixels high = 8 rows of half blocks
    assert "\x1b[38;2;255;0;0m\x1b[48;2;255;0;0m▀" in lines[0] and "\x1b[38;2;0;0;255m" in lines[-1]
    assert lines[0].count("▀") == 16

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLORTERM", "truecolor")
    assert truecolor(Tty()) and not truecolor(io.StringIO())
    monkeypatch.setenv("COLORTERM", "")
    assert not truecolor(Tty())


def test_counts_in_messages_agree_in_number():
    """'1 test items', '1 ids are', 'from 1 answers', 'between X to Y': counts of one are singular, spans read X to
    Y."""
    from sibscan.cli.scan import _fmt_summary

    assert fmt.plural(1, "test item") == "1 test item" and fmt.plural(0, "answer") == "0 answers"
    assert fmt.plural(1200, "id") == "1,200 ids" and fmt.plural(2, "match", "matches") == "2 matches"
    summary = {"n_train": 5, "n_test": 3, "exact_test_rows_with_train_twin": 1, "exact_test_twin_pct": 33.33,
               "cutoff": {"value": 0.9, "source": "calibrated", "score": "verified"}, "siblings": 1,
               "sibling_pct": 33.33}
    text = _fmt_summary(summary, "out")
    assert "exact twins: 1 test item (33.33 %) has a value-for-value copy" in text
    assert "verified score): 1 test item (33.33 %)" in text
