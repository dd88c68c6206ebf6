"""Chance siblings counted where the pairs are (issue 30): the baseline scores every (test, train) pair of
a small set, samples uniformly elsewhere (an item's nearest neighbours included), and says in one line,
without a cutoff, when random pairs reach the test items' best scores."""
from __future__ import annotations

import html
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import sibscan.calibration.baseline as baseline_module
from sibscan.calibration.baseline import compute_baseline, expected_chance_siblings, tail_probability
from sibscan.verdict.chance import NOTE_SHARE, chance_note, chance_sentence, pairs_described
from sibscan.cli import app
from sibscan.config import ScanConfig
from sibscan.report import write_reports
from sibscan.scan import run_scan
from sibscan.store.scandir import ScanDir

N_TRAIN, N_TEST = 40, 30


def _write(path, rows):
    path.write_text("\n".join(",".join(f"{v:.6f}" for v in r) for r in rows) + "\n")


@pytest.fixture(scope="module")
def alike(tmp_path_factory):
    """A small set of alike series (one curve, each item a little noise on it: a UCR Meat in miniature),
    where every item's top-k neighbours are the high tail of all pairs."""
    d = tmp_path_factory.mktemp("alike")
    rng = np.random.default_rng(0)
    curve = np.sin(np.linspace(0, 3 * np.pi, 48)) + np.linspace(0, 2, 48)
    _write(d / "train.csv", curve + 0.05 * rng.standard_normal((N_TRAIN, 48)))
    _write(d / "test.csv", curve + 0.05 * rng.standard_normal((N_TEST, 48)))
    return d


@pytest.fixture(scope="module")
def unrelated(tmp_path_factory):
    """Independent rows (300 train): a test item's best match is the best of many, reached by few pairs."""
    d = tmp_path_factory.mktemp("unrelated")
    rng = np.random.default_rng(1)
    _write(d / "train.csv", rng.standard_normal((300, 24)))
    _write(d / "test.csv", rng.standard_normal((50, 24)))
    return d


def _scan(d, out, **kw):
    lines = []
    res = run_scan(ScanConfig(train=str(d / "train.csv"), test=str(d / "test.csv"), out=str(out), verify=False,
                              progress=False, **kw), echo=lines.append)
    return res, lines


def _cosines(out) -> np.ndarray:
    sd = ScanDir(out)
    a, b = (np.asarray(sd.embeddings(s, mmap=False), np.float64) for s in ("test", "train"))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def test_small_alike_set_gets_the_all_pairs_chance_count(alike, tmp_path):
    """Leaving out each item's top-k neighbour pairs took away the high tail: the chance count at the 97th
    percentile of all pairs came out far below what all the pairs predict."""
    res, _ = _scan(alike, tmp_path / "scan")
    b = ScanDir(tmp_path / "scan").baseline()
    cos = _cosines(tmp_path / "scan")
    c = float(np.quantile(cos, 0.97))
    p = float((cos > c).mean())
    reference = N_TEST * (1 - (1 - p) ** N_TRAIN)  # every pair, brute force
    assert reference > 15  # the set is alike: most test items reach it by chance
    assert expected_chance_siblings(b, c, N_TRAIN, N_TEST) == pytest.approx(reference, rel=0.05)
    assert c < b["tail"]["threshold"]  # in the empirical part: the count is the pairs' own
    assert b["all_pairs"] and b["draw"] == "all" and b["n_pairs"] == N_TEST * N_TRAIN == b["n_possible"]
    assert b["max"] == pytest.approx(cos.max(), abs=1e-5) and b["mean"] == pytest.approx(cos.mean(), abs=1e-5)


def test_sample_does_not_leave_out_neighbour_pairs(alike, tmp_path, monkeypatch):
    """Where the pairs are sampled, a pair is as likely to be drawn whether or not it is an item's neighbour."""
    drawn = []
    real = baseline_module._normalised_dot

    def spy(test_emb, train_emb, ti, tj):
        drawn.append(np.asarray(ti, np.int64) * N_TRAIN + np.asarray(tj, np.int64))
        return real(test_emb, train_emb, ti, tj)

    monkeypatch.setattr(baseline_module, "ALL_PAIRS_MAX", 0, raising=False)  # a sample, as on a large set
    monkeypatch.setattr(baseline_module, "_normalised_dot", spy)
    _scan(alike, tmp_path / "scan", baseline_pairs=600)
    keys = np.concatenate(drawn)
    sd = ScanDir(tmp_path / "scan")
    qi, ni = sd.neighbour_pairs("test", "train")
    rq, rn = sd.neighbour_pairs("train", "test")
    near = np.union1d(qi * N_TRAIN + ni, rn * N_TRAIN + rq)
    assert len(near) > 300  # a quarter of all pairs and more: the old rule left them all out
    hit = np.isin(keys, near).sum()
    expected = 600 * len(near) / (N_TEST * N_TRAIN)  # a uniform draw of half the pairs: half of them
    assert 0.8 * expected <= hit <= 1.2 * expected, (hit, expected)
    b = sd.baseline()
    assert b["draw"] == "uniform" and not b["all_pairs"] and b["n_pairs"] == 600 == len(np.unique(keys))


def test_all_pairs_in_blocks_match_brute_force_and_a_train_index(tmp_path, monkeypatch):
    from sibscan.store.shards import ShardedEmbeddings

    monkeypatch.setattr(baseline_module, "_BLOCK_PAIRS", 7)  # blocks smaller than a row of train items
    rng = np.random.default_rng(3)
    tr, te = rng.standard_normal((11, 6)).astype(np.float32), rng.standard_normal((13, 6)).astype(np.float32)
    te[:2] = tr[:2]
    cos = (te / np.linalg.norm(te, axis=1, keepdims=True)) @ (tr / np.linalg.norm(tr, axis=1, keepdims=True)).T
    twins = np.zeros_like(cos, bool)
    twins[[0, 1], [0, 1]] = True
    b = compute_baseline(tr, te, n_pairs=10, exclude=lambda i, j: (i == j) & (i < 2))
    ref = np.sort(cos[~twins])
    assert b["all_pairs"] and b["n_pairs"] == 143 - 2 and b["n_excluded"] == 2
    assert b["max"] == pytest.approx(ref[-1], abs=1e-6) and b["mean"] == pytest.approx(ref.mean(), abs=1e-6)
    assert b["quantiles"]["0.9"] == pytest.approx(np.quantile(ref, 0.9), abs=1e-6)
    # a train index (float16 shards) read a block of rows at a time: what its rows in memory give
    sh = ShardedEmbeddings.from_array(tmp_path / "idx", tr, dtype="float16", shard_rows=4)
    tr16 = tr.astype(np.float16).astype(np.float32)
    for kw in ({}, {"all_pairs_max": 0, "n_pairs": 60}):  # every pair; a sample of the rows drawn
        on_disk, held = compute_baseline(sh, te, seed=2, **kw), compute_baseline(tr16, te, seed=2, **kw)
        assert on_disk["draw"] == held["draw"] == ("all" if not kw else "uniform")
        assert on_disk["mean"] == pytest.approx(held["mean"], abs=1e-6) and on_disk["max"] == pytest.approx(held["max"], abs=1e-6)


def test_note_without_a_cutoff_in_every_output_from_one_function(alike, tmp_path):
    out = tmp_path / "scan"
    res, _ = _scan(alike, out)
    note = res.summary["chance_note"]
    assert note and note.startswith("random pairs reach the median test item's best score (")
    # the same words in the scan's printed summary, report.json, report.md and report.html
    printed = CliRunner().invoke(app, ["scan", str(alike / "train.csv"), str(alike / "test.csv"), "--out",
                                       str(tmp_path / "cli"), "--no-verify", "--no-progress"])
    assert printed.exit_code == 0, printed.output
    assert f"  note: {note}" in printed.output
    write_reports(out, formats=("json", "md", "html"))
    report = json.loads((out / "report.json").read_text())
    assert report["chance"]["note"] == note and report["chance"]["sentence"] is None
    assert f"Note: {note}." in (out / "report.md").read_text()
    assert html.escape(f"Note: {note}.") in (out / "report.html").read_text()
    # the share it states is the baseline's own at the median best score
    b, best = ScanDir(out).baseline(), _cosines(out).max(axis=1)
    share = float(tail_probability(b, float(np.median(best))))
    assert share >= NOTE_SHARE and chance_note(b, best) == note


def test_no_note_where_random_pairs_stay_below_the_best_scores_nor_at_a_cutoff(alike, unrelated, tmp_path):
    res, _ = _scan(unrelated, tmp_path / "unrelated")
    assert res.summary["chance_note"] is None
    write_reports(tmp_path / "unrelated", formats=("json", "md"))
    assert json.loads((tmp_path / "unrelated" / "report.json").read_text())["chance"]["note"] is None
    assert "Note: random pairs" not in (tmp_path / "unrelated" / "report.md").read_text()
    # with a cutoff the chance count speaks instead, in the same words everywhere
    res, _ = _scan(alike, tmp_path / "cut", cutoff=0.99)
    assert "chance_note" not in res.summary
    sentence = res.summary["chance_sentence"]
    assert sentence.startswith("expected chance siblings at this cutoff (random-pair "
                               f"baseline, all {N_TEST * N_TRAIN:,} pairs): ")
    assert sentence.endswith(f"(found: {res.summary['siblings']:,})")
    write_reports(tmp_path / "cut", formats=("json", "md"))
    report = json.loads((tmp_path / "cut" / "report.json").read_text())
    assert report["chance"]["note"] is None and report["chance"]["sentence"] == sentence
    assert sentence[:1].upper() + sentence[1:] + "." in (tmp_path / "cut" / "report.md").read_text()


def test_pairs_described():
    assert pairs_described({"n_pairs": 3_600, "n_possible": 3_600, "all_pairs": True, "n_excluded": 0}) == "all 3,600 pairs"
    assert pairs_described({"n_pairs": 3_598, "n_possible": 3_600, "all_pairs": True, "n_excluded": 2}) == \
        "all 3,600 pairs, 2 exact twins left out"
    assert pairs_described({"n_pairs": 200_000, "n_possible": 5_000_000_000, "all_pairs": False}) == \
        "a random sample of 200,000 of 5.0e9 pairs"
    old = pairs_described({"n_pairs": 1_713, "n_possible": 3_600, "all_pairs": False, "neighbours_excluded": True})
    assert old.startswith("a sample of 1,713 of 3,600 pairs that left out each item's nearest neighbours") and "sibscan scan" in old
    assert pairs_described({"n_pairs": 500}) == "500 random pairs"
    assert chance_sentence(None, 3, extrapolated=False, baseline=None) is None
    assert chance_sentence(2.5, 3, extrapolated=True, baseline={}) == \
        "expected chance siblings at this cutoff (random-pair baseline, extrapolated beyond every random pair scored): 2.5 (found: 3)"


def test_an_older_baseline_that_left_out_neighbours_is_said_and_recomputed(alike, tmp_path):
    out = tmp_path / "scan"
    _scan(alike, out)
    sd = ScanDir(out)
    new = sd.baseline()
    old = {**new, "neighbours_excluded": True, "all_pairs": False, "n_pairs": 700}
    old.pop("draw")
    sd.write_baseline(old)
    write_reports(out, formats=("json",), cutoff=0.99)
    said = json.loads((out / "report.json").read_text())["chance"]
    assert "left out each item's nearest neighbours, made by an older sibscan" in said["sentence"]
    # the scan resumed there computes it again, and says why
    _, lines = _scan(alike, out)
    assert any(line.startswith("recomputing the random-pair baseline") for line in lines), lines
    assert ScanDir(out).baseline() == new
    # calibrate, finding one, does the same
    from sibscan.calibration import calibrate

    sd.write_baseline(old)
    with pytest.warns(UserWarning, match="left out each item's nearest neighbours"):
        calibrate(out, ui="none")
    assert ScanDir(out).baseline() == new


def test_verified_baseline_verifies_every_pair_only_where_they_are_few():
    """A verified pair costs a verification: every pair up to ALL_VERIFIED_MAX, a uniform sample of the
    verified budget beyond it (not the 2,000,000 of the embedding similarity)."""
    from types import SimpleNamespace

    from sibscan.calibration.baseline import ALL_VERIFIED_MAX, MIN_VERIFIED, scan_baseline

    asked = []

    class Stub:
        identity = "stub-v1"

        def verify(self, test, ti, train, tj):
            asked.append(len(ti))
            return SimpleNamespace(scores=np.cos(np.asarray(ti) + 0.5 * np.asarray(tj)).astype(np.float32))

    rng = np.random.default_rng(0)
    for n_test, n_train in ((50, 100), (60, 100)):  # 5,000 pairs; 6,000
        emb = {"train": rng.standard_normal((n_train, 4)), "test": rng.standard_normal((n_test, 4))}
        asked.clear()
        b = scan_baseline(emb, n_pairs=100_000, n_verified_pairs=20_000, seed=0, encoder_identity="e", verifier=Stub(),
                          splits={"train": None, "test": None}, k=10)
        few = n_test * n_train <= ALL_VERIFIED_MAX
        assert b["draw"] == ("all" if few else "uniform") and b["score"] == "verified" and b["n_compared"] == 10
        assert sum(asked) == b["n_pairs"] == (n_test * n_train if few else MIN_VERIFIED)
