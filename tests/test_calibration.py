"""Calibration: baseline tail, draw, append-only labels, the fitted cutoff on planted data, records."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _helpers import label_session, oracle_file, read_labels, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sibscan.calibration import (
    DEFINITIONS, Calibration, baseline_warning, calibrate, compute_baseline, expected_chance_siblings, load_calibration,
    pava, resolve, tail_probability,
)
from sibscan.verdict import record as record_mod
from sibscan.calibration.sampling import allocate
from planted_scan import planted_scan
from sibscan.cli import app
from sibscan.errors import CompatibilityError, InputError, SibscanError

ENC = "planted-encoder/v1"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return planted_scan(tmp_path_factory.mktemp("cal") / "scan", n_train=400, n_test=300, rate=0.1, seed=3)


# --- baseline ------------------------------------------------------------------------------------
def test_baseline_summary_matches_brute_force():
    rng = np.random.default_rng(0)
    tr, te = rng.standard_normal((50, 8)), rng.standard_normal((40, 8))
    cos = (te / np.linalg.norm(te, axis=1, keepdims=True)) @ (tr / np.linalg.norm(tr, axis=1, keepdims=True)).T
    # few pairs (<= ALL_PAIRS_MAX): every (test, train) pair, once
    b = compute_baseline(tr, te, n_pairs=100, seed=5, encoder_identity="e")
    assert b["all_pairs"] and b["n_pairs"] == 2000 == b["n_possible"]
    assert b["mean"] == pytest.approx(cos.mean(), abs=1e-5) and b["max"] == pytest.approx(cos.max(), abs=1e-5)
    # more than all_pairs_max: distinct pairs drawn without replacement
    b = compute_baseline(tr, te, n_pairs=1500, seed=5, encoder_identity="e", all_pairs_max=0)
    flat = np.random.default_rng(5).choice(2000, size=1500, replace=False)
    ref = cos.ravel()[flat]
    assert b["score"] == "similarity" and b["n_pairs"] == 1500 and not b["all_pairs"] and len(np.unique(flat)) == 1500
    assert b["mean"] == pytest.approx(ref.mean(), abs=1e-5)
    assert b["quantiles"]["0.99"] == pytest.approx(np.quantile(ref, 0.99), abs=1e-5)
    assert b["max"] == pytest.approx(ref.max(), abs=1e-5)
    assert sum(b["histogram"]["counts"]) == 1500
    # the empirical part of the tail reproduces the sample's survival function
    for c in (-0.5, 0.0, 0.3, np.quantile(ref, 0.95)):
        assert tail_probability(b, c) == pytest.approx((ref > c).mean(), abs=0.01)


def test_baseline_leaves_out_twins_not_neighbours_and_scales_the_verified_sample():
    from sibscan.calibration.baseline import MIN_VERIFIED, scan_baseline, verified_budget

    rng = np.random.default_rng(1)
    tr, te = rng.standard_normal((30, 8)).astype(np.float32), rng.standard_normal((20, 8)).astype(np.float32)
    te[:5] = tr[:5]  # exact twins
    fps = {"train": np.stack([np.arange(30), np.zeros(30)], 1).astype(np.uint64),
           "test": np.stack([np.r_[np.arange(5), 100 + np.arange(15)], np.zeros(20)], 1).astype(np.uint64)}
    b = scan_baseline({"train": tr, "test": te}, n_pairs=100, n_verified_pairs=10, seed=0, encoder_identity="e",
                      fingerprints=fps, k=1)
    # all 600 pairs (at most ALL_PAIRS_MAX: n_pairs=100 does not make it a sample) but the 5 twins
    assert b["all_pairs"] and b["draw"] == "all" and b["n_excluded"] == 5 and b["n_pairs"] == 595 and b["max"] < 0.999
    assert b["n_compared"] == 30  # the embedding similarity: the best of all train items
    assert verified_budget(20_000, 100, 10) == MIN_VERIFIED and verified_budget(20_000, 10_000, 10) == 20_000
    assert verified_budget(20_000, 3_000, 10) == 15_000


def test_baseline_score_fn_and_errors():
    tr, te = np.ones((5, 3)), np.ones((4, 3))
    b = compute_baseline(tr, te, n_pairs=100, score_fn=lambda i, j: (i + j) / 10.0, verifier_identity="v")
    assert b["score"] == "verified" and b["verifier_identity"] == "v"
    with pytest.raises(SibscanError, match=r"score_fn returned shape \(3,\) for 20 pairs"):
        compute_baseline(tr, te, n_pairs=100, score_fn=lambda i, j: np.zeros(3))
    with pytest.raises(SibscanError, match="needs both splits non-empty"):
        compute_baseline(tr, te[:0])


def test_tail_never_zero_and_monotone():
    rng = np.random.default_rng(1)
    b = compute_baseline(rng.standard_normal((300, 16)), rng.standard_normal((300, 16)), n_pairs=20000)
    c = np.linspace(-1, 1.5, 400)
    p = tail_probability(b, c)
    assert np.all(p > 0) and np.all(np.diff(p) <= 1e-12)
    assert expected_chance_siblings(b, 1.0, 1000, 50) > 0
    assert expected_chance_siblings(b, -1.0, 1000, 50) == pytest.approx(50)


@pytest.mark.parametrize("d", [24, 64])
def test_expected_chance_siblings_against_simulated_nearest_neighbours(d):
    """Unrelated random data: the predicted count of chance NN above c matches the simulated count."""
    rng = np.random.default_rng(2)
    tr = rng.standard_normal((3000, d)).astype(np.float32)
    te = rng.standard_normal((400, d)).astype(np.float32)
    b = compute_baseline(tr, te, n_pairs=100_000, seed=0)
    nn = ((te / np.linalg.norm(te, axis=1, keepdims=True)) @ (tr / np.linalg.norm(tr, axis=1, keepdims=True)).T).max(1)
    for c in np.quantile(nn, [0.3, 0.7, 0.95]):  # all beyond the baseline's sample: the fitted tail extrapolates
        assert c > b["tail"]["threshold"]
        observed = (nn > c).sum()
        predicted = expected_chance_siblings(b, c, len(tr), len(te))
        assert 0.5 * observed <= predicted <= 2 * observed + 5, (c, observed, predicted)


def test_baseline_warning():
    b = {"quantiles": {"0.5": 0.1, "0.9": 0.3, "0.99": 0.5, "0.999": 0.6, "0.9999": 0.7}}
    assert baseline_warning(b, 0.65) is None
    with pytest.raises(AssertionError):
        assert baseline_warning(b, 0.55) is None
    assert "more than 1 in 1000 unrelated pairs" in baseline_warning(b, 0.55)
    assert baseline_warning(b, 0.4).startswith("cutoff 0.4000 is below the random-pair "
                                               "baseline's 99.9th percentile (0.6000)")


# --- fitting -------------------------------------------------------------------------------------
def _pava_reference(y, w):
    """Brute force: minimise weighted squared error over non-decreasing sequences by repeated pooling."""
    blocks = [[float(v), float(x), 1] for v, x in zip(y, w)]
    changed = True
    while changed:
        changed = False
        for i in range(len(blocks) - 1):
            if blocks[i][0] > blocks[i + 1][0] + 1e-15:
                a, b = blocks[i], blocks[i + 1]
                tw = a[1] + b[1]
                blocks[i:i + 2] = [[(a[0] * a[1] + b[0] * b[1]) / tw, tw, a[2] + b[2]]]
                changed = True
                break
    return np.repeat([b[0] for b in blocks], [b[2] for b in blocks])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0.1, 5)), min_size=1, max_size=30))
def test_pava_matches_reference(data):
    y, w = np.array([d[0] for d in data]), np.array([d[1] for d in data])
    got = pava(y, w)
    assert np.all(np.diff(got) >= -1e-12)
    np.testing.assert_allclose(got, _pava_reference(y, w), atol=1e-9)


def test_allocate_respects_room_and_total():
    N = np.array([50, 0, 3, 10])
    out = allocate(N, np.array([1.0, 1.0, 5.0, 1.0]), 20)
    assert out.sum() == 20 and np.all(out <= N) and out[1] == 0 and np.all(out[[0, 2, 3]] >= 1)
    assert allocate(N, np.ones(4), 1000).tolist() == N.tolist()


def test_rate_estimate_every_item_labelled_is_exact():
    from sibscan.verdict.rate import estimate_rate

    scores = np.array([0.1, 0.5, 0.6, 0.9, 0.95, 1.0])
    exact = np.array([False, False, False, False, False, True])
    est = estimate_rate(scores, exact, np.arange(5), np.array([False, True, False, True, True]))
    # every answer is kept as given up to the labeller's error: 3 'same' + 1 exact twin of 6
    assert est.siblings[1] == pytest.approx(4, abs=0.3) and est.lo <= 4 / 6 <= est.hi
    assert est.n_labels == 5 and est.n_exact == 1


# --- the whole flow on planted data --------------------------------------------------------------
def test_oracle_cutoff_separates_planted_siblings(planted, tmp_path):
    cal_dir = tmp_path / "cal"
    first = calibrate(planted.path, calibration_dir=cal_dir, ui="none", n_pairs=60, seed=0)
    assert first.status == "no labels yet" and first.cutoff is None
    labels = oracle_file(tmp_path, planted, cal_dir)
    cal = calibrate(planted.path, calibration_dir=cal_dir, labels=labels, ui="none", n_pairs=60, seed=0)
    assert cal.status == "ok", cal.advice
    from sibscan.store.scandir import ScanDir

    top = ScanDir(planted.path).neighbours().top1()
    is_sib = np.array([planted.sibling_of.get(q) == t for q, t in zip(top["query_id"], top["neighbour_id"])])
    assert is_sib.sum() == len(planted.sibling_of)
    flagged = top["score"] >= cal.cutoff
    assert (flagged & ~is_sib).sum() + (~flagged & is_sib).sum() <= 2  # the cutoff sits in the gap, give or take
    lo, mid, hi = cal.estimates["sibling_rate"]
    # 60 answers on 300 items, 10 % of them control pairs: 0.083-0.163 (the monotone curve's 0.06
    # width borrowed from regions without answers)
    assert lo <= planted.true_rate <= hi and hi - lo < 0.09
    assert cal.estimates["rate"]["n_labels"] == 60 and cal.extra["definition"] == DEFINITIONS["table"]
    assert cal.interval[0] <= cal.cutoff <= cal.interval[1]
    assert cal.n_labels["same"] + cal.n_labels["different"] == 60
    # model estimates: recall's denominator holds the low strata's posterior-mean siblings (a few per
    # hundred unanswered items until answers there say otherwise), so it reads 0.73 where the curve said > 0.8
    assert cal.estimates["precision"] > 0.8 and cal.estimates["recall"] > 0.6
    back = load_calibration(cal_dir)
    assert back.cutoff == pytest.approx(cal.cutoff) and back.encoder_identity == ENC and back.path == cal_dir
    assert back.baseline["quantiles"]["0.99"] == pytest.approx(cal.baseline["quantiles"]["0.99"])


def test_target_precision_rule(planted, tmp_path):
    # the 60 pairs of the prior draw hold 4 siblings: precision 0.9 at 95 % confidence needs a run of
    # min_same_run(0.9) 'same' answers, so the labels cannot support it and say so
    from sibscan.calibration.fit import min_same_run
    from sibscan.verdict.cutoffrule import precision_rule

    cal_dir = tmp_path / "cal"
    calibrate(planted.path, calibration_dir=cal_dir, ui="none")
    labels = oracle_file(tmp_path, planted, cal_dir)
    cal = calibrate(planted.path, calibration_dir=cal_dir, labels=labels, ui="none", target_precision=0.9)
    assert cal.rule == precision_rule(0.9) == "precision >= 0.9 by the 95 % lower bound per run of answers" and cal.cutoff is None
    assert cal.status.startswith("not enough labels: no cutoff reaches precision "
                                 "0.9 by the 95 % lower bound per run of answers")
    assert f"{min_same_run(0.9)} 'same' answers" in cal.status and any("--target-precision" in a for a in cal.advice)
    # every pair labelled (the population is 300 test items, 30 of them siblings): it is reached
    calibrate(planted.path, calibration_dir=cal_dir, ui="none", n_pairs=300)
    labels = oracle_file(tmp_path, planted, cal_dir, name="all.jsonl")
    cal = calibrate(planted.path, calibration_dir=cal_dir, labels=labels, ui="none", n_pairs=300, target_precision=0.9)
    assert cal.cutoff is not None and cal.status == "ok"
    with pytest.raises(SibscanError, match=r"--target-precision is a fraction in \(0, 1\), got 1.5"):
        calibrate(planted.path, calibration_dir=cal_dir, ui="none", target_precision=1.5)


def test_cannot_support_a_cutoff_says_why_and_where(planted, tmp_path):
    cal_dir = tmp_path / "cal"
    calibrate(planted.path, calibration_dir=cal_dir, ui="none")
    labels = oracle_file(tmp_path, planted, cal_dir, label="different")
    cal = calibrate(planted.path, calibration_dir=cal_dir, labels=labels, ui="none")
    assert cal.cutoff is None and "no flip observed" in cal.status and "too few 'same' labels (0" in cal.status
    assert any("more pairs scoring " in a for a in cal.advice)


def test_labels_append_only_resume_and_extend(planted, tmp_path):
    cal_dir = tmp_path / "cal"
    calibrate(planted.path, calibration_dir=cal_dir, ui="none", n_pairs=30)
    s = label_session(planted.path, cal_dir)
    for i in range(4):
        s.answer(s.next_pending(), "different")
    assert s.undo() == 3 and s.state()["done"] == 3 and s.next_pending() == 3
    before = (cal_dir / "labels.jsonl").read_text()
    assert len(before.splitlines()) == 5 and json.loads(before.splitlines()[-1])["label"] == "undo"
    # a new session on the same directory continues where the first stopped; the file only grows
    calibrate(planted.path, calibration_dir=cal_dir, ui="none", n_pairs=30)
    s2 = label_session(planted.path, cal_dir)
    assert s2.state()["done"] == 3 and s2.next_pending() == 3
    s2.answer(3, "same")
    assert (cal_dir / "labels.jsonl").read_text().startswith(before)
    # more pairs extend the same draw: the first 30 stay, in the same order
    old_pairs = json.loads((cal_dir / "draw.json").read_text())["pairs"]
    calibrate(planted.path, calibration_dir=cal_dir, ui="none", n_pairs=45)
    new = json.loads((cal_dir / "draw.json").read_text())
    assert len(new["pairs"]) == 45 and new["pairs"][:30] == old_pairs and new["phases"] == [30, 15]
    assert len({(p["query_id"], p["neighbour_id"]) for p in new["pairs"]}) == 45


def test_import_validation_and_refusals(planted, tmp_path):
    cal_dir = tmp_path / "cal"
    calibrate(planted.path, calibration_dir=cal_dir, ui="none")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "te1", "neighbour_id": "tr1", "label": "same"}\n{oops\n')
    with pytest.raises(InputError, match=r"bad.jsonl, row 2: not valid JSON"):
        calibrate(planted.path, calibration_dir=cal_dir, labels=bad, ui="none")
    bad.write_text('{"query_id": "te1", "neighbour_id": "tr1", "label": "maybe"}\n')
    with pytest.raises(InputError, match=r"row 1: unknown label 'maybe'; use one of: same, different, skip, undo"):
        calibrate(planted.path, calibration_dir=cal_dir, labels=bad, ui="none")
    other = oracle_file(tmp_path, planted, cal_dir, name="other.jsonl", dataset_fingerprint="other-data")
    with pytest.raises(CompatibilityError,
                       match=r"other.jsonl, row 1: label made for other data \(dataset fingerprint 'other-data'"):
        calibrate(planted.path, calibration_dir=cal_dir, labels=other, ui="none")
    assert not (cal_dir / "labels.jsonl").exists()  # validated before anything is appended
    good = oracle_file(tmp_path, planted, cal_dir)
    calibrate(planted.path, calibration_dir=cal_dir, labels=good, ui="none")
    calibrate(planted.path, calibration_dir=cal_dir, labels=good, ui="none")  # importing twice adds nothing
    assert len((cal_dir / "labels.jsonl").read_text().splitlines()) == 60


def test_check_compatible_and_force(planted, tmp_path):
    cal_dir = tmp_path / "cal"
    calibrate(planted.path, calibration_dir=cal_dir, ui="none")
    calibrate(planted.path, calibration_dir=cal_dir, labels=oracle_file(tmp_path, planted, cal_dir), ui="none")
    cal = load_calibration(cal_dir)
    manifest = json.loads((planted.path / "manifest.json").read_text())
    assert cal.check_compatible(manifest) == []
    other = {**manifest, "encoder": {"name": "clip", "identity": "clip/other"}}
    with pytest.raises(CompatibilityError,
                       match=r"another encoder identity 'planted-encoder/v1' \(scan: 'clip/other'\); recalibrate"):
        cal.check_compatible(other)
    with pytest.warns(UserWarning, match="applied anyway"):
        assert len(cal.check_compatible({**other, "dataset_fingerprint": "x"}, force=True)) == 2
    with pytest.raises(CompatibilityError, match="verifier identity None"):
        cal.check_compatible({**manifest, "verifier": {"name": "v", "identity": "v/1"}})


def test_verified_score_kind(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=200, n_test=100, seed=4, verifier=True)
    cal_dir = tmp_path / "cal"
    with pytest.warns(UserWarning, match="has no baseline.json; computing the embedding-similarity baseline"):
        calibrate(p.path, calibration_dir=cal_dir, ui="none", n_pairs=30)
    with pytest.warns(UserWarning, match="has no baseline.json"):  # the fallback is not written into the scan
        cal = calibrate(p.path, calibration_dir=cal_dir, labels=oracle_file(tmp_path, p, cal_dir), ui="none")
    assert not (p.path / "baseline.json").exists()
    assert cal.score == "verified" and cal.verifier_identity == "planted-verifier/v1"
    rec = read_labels(cal_dir)[0]
    assert rec["verifier_identity"] == "planted-verifier/v1" and rec["source"] == "import:oracle.jsonl"


def test_resolve_kept_calibration_then_path(tmp_path, monkeypatch):
    kept = tmp_path / "repo_calibration"
    (kept / "ucr-powercons").mkdir(parents=True)
    record_mod.write_calibration(kept / "ucr-powercons", Calibration(0.9, (0.88, 0.92), "similarity", ENC, None, "fp"))
    monkeypatch.setattr(record_mod, "CALIBRATIONS_DIR", kept)
    assert resolve("ucr-powercons") == kept / "ucr-powercons"
    assert resolve(str(kept / "ucr-powercons")) == kept / "ucr-powercons"
    assert load_calibration(resolve("ucr-powercons")).interval == (0.88, 0.92)
    with pytest.raises(SibscanError, match=r"no calibration 'nope'.*kept in the repository: ucr-powercons"):
        resolve("nope")
    with pytest.raises(SibscanError, match="holds no calibration"):
        load_calibration(tmp_path)


# --- CLI -----------------------------------------------------------------------------------------
def test_cli_calibrate(planted, tmp_path):
    cal_dir = tmp_path / "cal"
    runner = CliRunner()
    res = runner.invoke(app, ["calibrate", str(planted.path), "--ui", "none", "--out", str(cal_dir)])
    assert res.exit_code == 0, res.output
    assert "cutoff: none (rule P(same) >= 0.5 by its 95 % lower bound per run of answers)" in res.output
    assert "cannot support a cutoff yet: no labels yet" in res.output
    labels = oracle_file(tmp_path, planted, cal_dir)
    res = runner.invoke(app,
                        ["calibrate", str(planted.path), "--ui", "none", "--out", str(cal_dir), "--labels",
                         str(labels)])
    assert res.exit_code == 0, res.output
    assert "imported 60 new label records" in res.output and "60 of its 60 pairs are pairs this scan scores" in res.output
    said = [x for x in res.output.splitlines() if not x.startswith("imported ")]  # the labels', the controls' answers
    assert "sibling rate " in said[0] and "calibrated with 60 hand labels" in res.output
    assert "cutoff: 0." in res.output and "expected chance siblings at this cutoff" in res.output
    # the rule is named with the cutoff
    assert "rule P(same) >= 0.5 by its 95 % lower bound per run of answers" in res.output
    res = runner.invoke(app, ["calibrate", str(planted.path), "--ui", "paper", "--out", str(cal_dir)],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "'paper' is not one of 'web', 'terminal', 'none'" in res.output  # a parser choice
    res = runner.invoke(app, ["calibrate", str(tmp_path / "missing"), "--ui", "none"])
    assert res.exit_code == 1 and "is not a sibscan scan directory" in res.output


def test_baseline_drops_the_pairs_it_is_told_are_exact_twins():
    from sibscan.calibration import compute_baseline

    rng = np.random.default_rng(0)
    emb = rng.normal(size=(20, 16)).astype(np.float32)
    # test == train: a random pair (i, i) is an exact twin and scores 1.0
    with_twins = compute_baseline(emb, emb, n_pairs=4000, seed=1)
    without = compute_baseline(emb, emb, n_pairs=4000, seed=1, exclude=lambda ti, tj: ti == tj)
    assert with_twins["max"] == pytest.approx(1.0, abs=1e-5) and with_twins["all_pairs"]  # 400 pairs <= 4000
    assert without["max"] < 0.99
    assert without["n_excluded"] == 20 and without["n_pairs"] == 400 - 20


def test_calibrate_computes_the_scans_own_baseline_when_the_scan_stopped_before_it(tmp_path):
    # one baseline function: what calibrate fills in is what the scan wrote (exact twins left out, verified)
    from sibscan.config import ScanConfig
    from sibscan.scan import run_scan

    rng = np.random.default_rng(0)
    train = np.cumsum(rng.standard_normal((80, 24)), axis=1)
    test = np.cumsum(rng.standard_normal((40, 24)), axis=1)
    test[:30] = train[:30]  # exact twins: the scan's baseline leaves them out
    for name, rows in (("train", train), ("test", test)):
        (tmp_path / f"{name}.csv").write_text("\n".join(",".join(f"{v:.6f}" for v in r) for r in rows) + "\n")
    out = tmp_path / "scan"
    run_scan(ScanConfig(train=str(tmp_path / "train.csv"), test=str(tmp_path / "test.csv"), out=str(out),
                        baseline_pairs=3000, verified_baseline_pairs=1000, progress=False))
    written = json.loads((out / "baseline.json").read_text())
    assert written["n_excluded"] > 0  # verified where torch is installed (lagcorr), else the similarity
    (out / "baseline.json").unlink()
    calibrate(out, ui="none")
    assert json.loads((out / "baseline.json").read_text()) == written


def _scan_whose_calibration_gives_no_cutoff(tmp_path: Path):
    """A planted scan whose own calibration (every pair answered 'different') gives no cutoff, and that calibration."""
    planted = planted_scan(tmp_path / "scan", n_train=200, n_test=100, rate=0.1, seed=5)
    own = planted.path / "calibration"
    calibrate(planted.path, ui="none")
    cal = calibrate(planted.path, labels=oracle_file(tmp_path, planted, own, label="different"), ui="none")
    assert cal.cutoff is None
    return planted, own


def test_a_calibration_without_a_cutoff_is_named_where_the_scans_cutoff_is_used(tmp_path):
    # the scan's own calibration gave no cutoff: report and check say so and which cutoff they use, never silently
    from sibscan.check import check as run_check
    from sibscan.verdict.cutoff import resolve_cutoff
    from sibscan.report import build_report
    from sibscan.store.scandir import ScanDir

    planted, own = _scan_whose_calibration_gives_no_cutoff(tmp_path)
    note = build_report(planted.path)["headline"]["note"]
    assert note.startswith(f"the calibration in {own} gives no cutoff (") and note.endswith("so no cutoff is used")
    manifest = {**ScanDir(planted.path).manifest(), "cutoff": {"value": 0.8, "source": "uncalibrated"}}
    at = resolve_cutoff(manifest, scan_dir=planted.path)
    assert at.value == 0.8 and at.evidence["note"].endswith("so the scan's recorded cutoff is used")
    assert note in run_check(planted.path, max_exact=1.0).message
    res = CliRunner().invoke(app, ["report", str(planted.path), "--format", "md"])
    assert res.exit_code == 0, res.output
    assert f"note: {note}" in res.output


@pytest.mark.filterwarnings("ignore:the calibration behind the cutoff:UserWarning")  # asserted on the first report
def test_a_scan_calibrated_elsewhere_says_its_own_calibration_gives_no_cutoff(tmp_path):
    # the scan ran with --calibration OTHER (recorded kind "calibrated"), then 'sibscan calibrate SCAN_DIR' gave no
    # cutoff: check used OTHER's cutoff and rate without the note report printed, and a forced OTHER's mismatch
    # note replaced it in the headline
    from sibscan.verdict.cutoffrule import RULE
    from sibscan.check import check as run_check
    from sibscan.report import build_report
    from sibscan.store.scandir import ScanDir

    planted, own = _scan_whose_calibration_gives_no_cutoff(tmp_path)
    sd = ScanDir(planted.path)
    other = str(tmp_path / "other")
    recorded = {"value": 0.8, "source": "calibrated", "calibration": other, "score": "similarity",
                "n_labels": {"same": 12, "different": 48}, "status": "ok", "rule": RULE,
                "estimates": {"rate": {"estimate": 0.1, "lo": 0.06, "hi": 0.15}}}
    sd.write_manifest({**sd.manifest(), "cutoff": recorded})
    said = f"the calibration in {own} gives no cutoff ("
    with pytest.warns(UserWarning, match=r"the calibration behind the cutoff \(.*other\) has no labels.jsonl"):
        head = build_report(planted.path)["headline"]  # OTHER is not on disk: no hand labels, said once
    assert head["state"] == "calibrated" and head["note"].startswith(said)
    assert head["note"].endswith("so the scan's recorded cutoff is used")
    msg = run_check(planted.path, max_rate=1.0).message
    assert "calibrated with 60 hand labels" in msg and head["note"] in msg
    # applied with --force to other data: both notes, the scan's own calibration's first
    sd.write_manifest({**sd.manifest(), "cutoff": {**recorded, "forced": True, "mismatches": ["another encoder"]}})
    head = build_report(planted.path)["headline"]
    assert head["state"] == "baseline_only" and head["note"].startswith(said)
    assert head["note"].endswith(f"; the calibration in {other} was made for another encoder and applied "
                                 "with --force: its cutoff is used, its rate estimate is not this data's")
    assert head["note"] in run_check(planted.path, max_rate=1.0).message


def test_recalibrating_a_point_estimate_calibration_says_the_rule_changed(planted, tmp_path):
    from sibscan.verdict.cutoffrule import RULE, precision_rule

    cal_dir = tmp_path / "cal"
    calibrate(planted.path, calibration_dir=cal_dir, ui="none")
    cal = calibrate(planted.path, calibration_dir=cal_dir, labels=oracle_file(tmp_path, planted, cal_dir), ui="none")
    assert cal.cutoff is not None
    old = json.loads((cal_dir / "cutoff.json").read_text())
    (cal_dir / "cutoff.json").write_text(json.dumps({**old, "rule": "P(same) = 0.5", "cutoff": 0.123}))
    said: list = []
    cal2 = calibrate(planted.path, calibration_dir=cal_dir, ui="none", echo=said.append)
    changed = [s for s in said if s.startswith("the rule changed")]
    assert changed == [f"the rule changed: {cal_dir / 'cutoff.json'} was fitted by 'P(same) = 0.5' (cutoff 0.1230); "
                       f"refitted by '{RULE}': cutoff {cal2.cutoff:.4f}"]
    # the same rule under its first name is not a change; nor is a second run
    (cal_dir / "cutoff.json").write_text(json.dumps({**old, "rule": "P(same) >= 0.5 at 95 % confidence"}))
    said.clear()
    calibrate(planted.path, calibration_dir=cal_dir, ui="none", echo=said.append)
    assert not [s for s in said if s.startswith("the rule changed")]
    # a point-estimate --target-precision calibration ("precision >= 0.9", no bound in its name) refitted by the
    # bound rule of the same target is a change (the names differ only by the bound)
    (cal_dir / "cutoff.json").write_text(json.dumps({**old, "rule": "precision >= 0.9", "cutoff": 0.456}))
    said.clear()
    cal3 = calibrate(planted.path, calibration_dir=cal_dir, ui="none", echo=said.append, target_precision=0.9)
    cut3 = "none" if cal3.cutoff is None else f"{cal3.cutoff:.4f}"
    assert [s for s in said if s.startswith("the rule changed")] == [
        f"the rule changed: {cal_dir / 'cutoff.json'} was fitted by 'precision >= 0.9' (cutoff 0.4560); "
        f"refitted by '{precision_rule(0.9)}': cutoff {cut3}"]


def test_imported_labels_of_pairs_this_scan_does_not_score_are_not_counted_as_used(tmp_path):
    """Labels from another scan of the same data (another verifier) answer some pairs this scan does not
    score: kept, not used — and every output counts the answers used, as cutoff.json's n_labels_used and
    the rate estimate do (the headline said 'calibrated with' every answer in the file)."""
    from sibscan.report import build_report
    from sibscan.store.scandir import ScanDir

    planted = planted_scan(tmp_path / "scan", n_train=300, n_test=150, rate=0.1, seed=3)
    scan = str(planted.path)
    calibrate(planted.path, ui="none", n_pairs=60)  # 40 do not support the cutoff (needs_labels)
    labels = oracle_file(tmp_path, planted, planted.path / "calibration")
    first = json.loads(labels.read_text().splitlines()[0])
    nb = ScanDir(scan).neighbours().top1("test", "train")
    scored = set(zip(nb["query_id"].tolist(), nb["neighbour_id"].tolist()))
    other = [(f"te{i}", f"tr{i + 1}") for i in range(60)]
    other = [p for p in other if p not in scored][:25]
    write_jsonl(labels, [{**first, "verifier_identity": "another-verifier/v1", "query_id": q, "neighbour_id": t,
                          "label": "different"} for q, t in other], append=True)
    runner = CliRunner()
    res = runner.invoke(app, ["calibrate", scan, "--ui", "none", "--n-pairs", "60", "--labels", str(labels)])
    assert res.exit_code == 0, res.output
    assert "; 25 are not (kept in labels.jsonl, not used)" in res.stderr
    cal = load_calibration(planted.path / "calibration")
    used = cal.extra["n_labels_used"]
    assert cal.extra["n_labelled_outside_population"] == 25 and used == cal.estimates["rate"]["n_labels"] == 60
    assert cal.n_labels["same"] + cal.n_labels["different"] == used  # was 65: the file's answers, used or not
    assert f"calibrated with {used} hand labels" in res.stdout
    assert (f"labels: {cal.n_labels['same']} same, {cal.n_labels['different']} different, 0 skipped; 25 more in "
            "labels.jsonl not used") in res.stdout
    assert build_report(scan)["headline"]["n_labels"] == used
    chk = runner.invoke(app, ["check", scan, "--max-rate", "0.9"])
    assert chk.exit_code == 0 and f"calibrated with {used} hand labels" in chk.stdout, chk.output


def test_calibrate_help_describes_the_labels_file_it_reads(planted, tmp_path):
    """The error for a bad --labels line sends the user to 'calibrate --help': the help names every required
    field and the identity fields, and what it says about a line without a dataset fingerprint holds."""
    import re

    from sibscan.verdict.labelfile import _REQUIRED

    runner = CliRunner()
    text = " ".join(runner.invoke(app, ["calibrate", "--help"], terminal_width=200).output.split())
    text = re.sub(r"[│╭╮╰╯─]", " ", text)
    for field in (*_REQUIRED, "dataset_fingerprint", "encoder_identity", "verifier_identity"):
        assert field in text, field
    assert "refused unless --force" in " ".join(text.split())
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"query_id": "te5", "neighbour_id": "tr11", "label": "same"}\n')
    args = ["calibrate", str(planted.path), "--ui", "none", "--out", str(tmp_path / "cal"), "--labels", str(bare)]
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and "label made for other data (dataset fingerprint None" in r.output
    r = runner.invoke(app, args + ["--force"])
    assert r.exit_code == 0, r.output
    assert "imported 1 new label record" in r.output


def test_answers_about_exact_twins_are_counted_apart_and_said(tmp_path):
    """Answers about exact twins (siblings without an answer) were in neither the used count nor the
    unused one: calibrate now counts them apart and says so."""
    from planted_scan import make_scan
    from sibscan.store.scandir import ScanDir

    make_scan(tmp_path)
    calibrate(tmp_path, ui="none")
    draw = json.loads((tmp_path / "calibration" / "draw.json").read_text())
    ident = {k: draw[k] for k in ("dataset_fingerprint", "encoder_identity", "verifier_identity")}
    nb = ScanDir(tmp_path).neighbours().top1("test", "train")
    twins = [(q, t) for q, t, e in zip(nb["query_id"].tolist(), nb["neighbour_id"].tolist(), nb["exact"].tolist()) if e]
    assert len(twins) >= 3
    labels = tmp_path / "twins.jsonl"
    write_jsonl(labels, [{**ident, "query_id": q, "neighbour_id": t, "label": "same"} for q, t in twins[:3]])
    res = CliRunner().invoke(app, ["calibrate", str(tmp_path), "--ui", "none", "--labels", str(labels)])
    assert res.exit_code == 0, res.output
    assert load_calibration(tmp_path / "calibration").extra["n_labelled_not_needed"] == 3
    assert "; 3 about exact twins or unscored pairs, which need no answer" in res.stdout
