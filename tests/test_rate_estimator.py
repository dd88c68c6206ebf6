"""The design-based sibling-rate estimator (issue 30): strata over the whole test set, siblings below the
candidate range estimated rather than assumed away, the labeller's error measured by control pairs, and
the interval's invariants (lo x n >= exact twins + answered 'same' at or above the cutoff; estimate in
[lo, hi]) as properties."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sibscan.calibration.sampling import Population, make_draw
from sibscan.stats import ControlAnswers
from sibscan.verdict.rate import estimate_rate, score_strata


# --- the invariants, as properties ---------------------------------------------------------------
@st.composite
def _answered_sets(draw):
    n = draw(st.integers(1, 300))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    score = rng.uniform(-0.2, 1.0, n)
    score[rng.random(n) < draw(st.sampled_from([0.0, 0.05, 0.3]))] = np.nan  # items without a neighbour
    score[rng.random(n) < 0.1] = np.round(np.nanmedian(np.r_[score, 0.5]), 2) if n > 20 else 0.5  # ties
    exact = rng.random(n) < draw(st.sampled_from([0.0, 0.02, 0.2]))
    m = draw(st.integers(0, n))
    labelled = rng.choice(n, m, replace=False)
    same = rng.random(m) < draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    cutoff = draw(st.one_of(st.none(), st.floats(-0.3, 1.1)))
    controls = draw(st.one_of(st.none(), st.builds(
        lambda a, b, c, d: ControlAnswers(n_same=a, same_answered_same=min(b, a), n_different=c,
                                          different_answered_same=min(d, c)),
        st.integers(0, 20), st.integers(0, 20), st.integers(0, 20), st.integers(0, 20))))
    trusted = rng.random(m) < draw(st.sampled_from([0.0, 0.5, 1.0]))  # an oracle's answers among them
    return score, exact, labelled, same, cutoff, controls, trusted


@settings(max_examples=60, deadline=None)
@given(_answered_sets())
def test_lower_end_holds_what_is_known_and_estimate_lies_inside(data):
    score, exact, labelled, same, cutoff, controls, trusted = data
    est = estimate_rate(score, exact, labelled, same, cutoff=cutoff, controls=controls, fast=True, trusted=trusted)
    n = len(score)
    usable = ~exact[labelled] & np.isfinite(score[labelled])
    known = int(exact.sum())  # + answered "same" at or above the cutoff + an oracle's "same" anywhere
    above = score[labelled] >= cutoff if cutoff is not None else np.zeros(len(same), bool)
    known += int((same & usable & (above | trusted)).sum())
    assert est.lo * n >= known - 1e-9
    assert est.lo <= est.estimate <= est.hi <= 1.0
    assert np.all((est.p_same >= 0) & (est.p_same <= 1)) and est.n_known == known - int(exact.sum())


def test_an_oracles_answers_carry_no_labeller_error():
    # one 'same' among 40 low-scoring 'different' answers: from a person it may be a slip (3 % of 40 is one),
    # from an oracle (made from a planted truth) it is a sibling, and the lower end counts it
    rng = np.random.default_rng(3)
    score = np.r_[rng.uniform(0.0, 0.5, 40), rng.uniform(0.9, 1.0, 20)]  # every item labelled
    labelled = np.arange(60)
    same = np.r_[np.arange(40) == 7, np.ones(20, bool)]
    exact = np.zeros(len(score), bool)
    person = estimate_rate(score, exact, labelled, same, cutoff=0.9)
    oracle = estimate_rate(score, exact, labelled, same, cutoff=0.9, trusted=np.ones(len(same), bool))
    assert person.siblings[0] == 20 and oracle.siblings == (21, 21, 21), (person.siblings, oracle.siblings)
    assert person.p_same[7] < 1 and oracle.p_same[7] == 1 and oracle.p_same[:40].sum() == 1
    assert "oracle answers" in oracle.method and "oracle" not in person.method
    with pytest.raises(ValueError, match="trusted and same must have the same length"):
        estimate_rate(score, exact, labelled, same, trusted=np.ones(3, bool))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 5000), st.integers(1, 3000))
def test_strata_cover_the_whole_test_set_in_score_order(seed, n):
    rng = np.random.default_rng(seed)
    score = np.where(rng.random(n) < 0.05, np.nan, rng.beta(2, 5, n))
    h = score_strata(score)
    ok = np.isfinite(score)
    assert np.all(h[ok] >= 0) and np.all(h[~ok] == -1)  # every scored item has a stratum, the lowest included
    order = np.argsort(score[ok], kind="stable")
    assert np.all(np.diff(h[ok][order]) >= 0)  # strata are score intervals
    sizes = np.bincount(h[ok])
    assert len(sizes) <= 1 or sizes[1:].min() >= 10  # no tiny stratum above the lowest


# --- what the old estimator got wrong ------------------------------------------------------------
def test_siblings_scoring_among_the_unrelated_are_estimated_not_read_as_errors():
    # the image case: 2,000 items, 20 siblings at the top and 60 more scoring like unrelated items
    # (3 % of the low region). 30 answers on the top and 300 random ones below, all true. The monotone
    # curve read the low 'same' answers as labeller slips and its interval ended below the truth.
    rng = np.random.default_rng(1)
    n = 2000
    score = rng.uniform(0.2, 0.85, n)
    score[:20] = rng.uniform(0.95, 1.0, 20)
    truth = np.zeros(n, bool)
    truth[:20] = True
    truth[rng.choice(np.arange(20, n), 60, replace=False)] = True
    order = np.argsort(-score)
    lab = np.unique(np.r_[order[:30], rng.choice(order[30:], 300, replace=False)])
    est = estimate_rate(score, np.zeros(n, bool), lab, truth[lab], cutoff=0.95)
    assert est.lo <= truth.mean() <= est.hi, (est.lo, truth.mean(), est.hi)
    assert est.p_same[~np.isin(np.arange(n), lab) & (score < 0.85)].mean() > 0.01  # the low region holds some


def _population(score):
    n = len(score)
    ids = np.array([f"i{i}" for i in range(n)])
    return Population(query_id=ids, neighbour_id=ids, query_index=np.arange(n), neighbour_index=np.arange(n),
                      score=score, exact=np.zeros(n, bool), score_kind="verified")


def test_an_all_different_low_region_narrows_with_answers_there():
    # nothing is assumed away: 50 pairs drawn as calibrate draws them leave an upper end of a few
    # percent over the 1,980 low items; 450 narrow it
    rng = np.random.default_rng(0)
    n = 2000
    score = rng.uniform(0.2, 0.85, n)
    score[:20] = rng.uniform(0.95, 1.0, 20)
    pop = _population(score)
    few, many = make_draw(pop, 0.9, 50, seed=1).rows, make_draw(pop, 0.9, 450, seed=1).rows
    a = estimate_rate(score, np.zeros(n, bool), few, few < 20, cutoff=0.95)
    b = estimate_rate(score, np.zeros(n, bool), many, many < 20, cutoff=0.95)
    for e in (a, b):
        assert e.lo <= 20 / n <= e.hi, (e.lo, e.hi)
    assert b.hi < a.hi and b.hi - b.lo < 0.6 * (a.hi - a.lo)


# --- the labeller's error --------------------------------------------------------------------------
def _low_prevalence_answers(seed=3):
    # 3,000 items, 15 siblings at the top; 200 random answers from a labeller who says 'same' about 4 %
    # of unrelated pairs
    rng = np.random.default_rng(seed)
    n = 3000
    score = rng.uniform(0.1, 0.8, n)
    score[:15] = rng.uniform(0.95, 1.0, 15)
    lab = np.r_[np.arange(15), rng.choice(np.arange(15, n), 200, replace=False)]
    same = (lab < 15) | (rng.random(len(lab)) < 0.04)
    return score, lab, same


def test_without_controls_the_method_says_what_was_assumed():
    score, lab, same = _low_prevalence_answers()
    est = estimate_rate(score, np.zeros(len(score), bool), lab, same, cutoff=0.95)
    d = est.to_dict()
    assert "not measured" in d["method"] and "at most 10%" in d["method"] and d["labeller_error"]["controls"] == 0
    assert est.lo <= 15 / len(score) <= est.hi


def test_control_answers_measure_the_false_same_rate():
    score, lab, same = _low_prevalence_answers()
    n = len(score)
    # 100 known-different controls, 4 answered 'same': the low region's 'same' answers are the labeller's
    # slips, and the interval's upper end falls; 100 controls answered 'same' 25 times say the labeller
    # is worse than the assumption allows: the low answers cannot all be siblings either
    none = estimate_rate(score, np.zeros(n, bool), lab, same, cutoff=0.95)
    measured = estimate_rate(score, np.zeros(n, bool), lab, same, cutoff=0.95,
                             controls=ControlAnswers(n_same=100, same_answered_same=97, n_different=100,
                                                     different_answered_same=4))
    assert "measured on 200 control answers" in measured.to_dict()["method"]
    fs = measured.labeller_error["false_same"]
    assert fs[0] < 0.04 < fs[2] and fs[2] < 0.12
    assert measured.hi < none.hi and measured.lo <= 15 / n <= measured.hi
    with pytest.raises(TypeError, match="controls must be"):
        estimate_rate(score, np.zeros(n, bool), lab, same, controls={"n_same": 3})


# --- the draw follows the estimator's strata -----------------------------------------------------
def test_first_draw_puts_two_pairs_in_every_stratum_below_the_range_included():
    rng = np.random.default_rng(0)
    n = 3000
    score = rng.beta(2, 6, n)
    score[:30] = rng.uniform(0.95, 1.0, 30)
    draw = make_draw(_population(score), 0.9, 20, seed=0)
    h = score_strata(score)
    drawn = np.bincount(h[draw.rows], minlength=h.max() + 1)
    assert drawn.min() >= 2 and drawn.sum() == 20
    assert (score[draw.rows] < 0.9).sum() >= 2 * (len(drawn) - 2)  # the strata under the range are drawn too


# --- what more labels buy ------------------------------------------------------------------------
def test_the_width_forecast_narrows_with_more_answers_and_counts_them():
    from sibscan.calibration.forecast import forecast_width

    rng = np.random.default_rng(5)
    score = np.r_[rng.uniform(0.0, 0.8, 560), rng.uniform(0.9, 1.0, 40)]
    truth = np.r_[np.zeros(560, bool), np.ones(40, bool)]
    pop = _population(score)
    draw = make_draw(pop, 0.5, 60, seed=0)
    rows = draw.rows[:60]
    exact = np.zeros(len(score), bool)
    now = estimate_rate(score, exact, pop.query_index[rows], truth[rows], fast=True)
    fc = forecast_width(pop, draw, rows, truth[rows], score, exact, more=(50, 200, 200, 0), reps=2, step=50)
    assert [f["labels"] for f in fc] == [110, 260]  # repeats and zero dropped
    assert now.hi - now.lo > fc[0]["width"] > fc[1]["width"] > 0, (now.hi - now.lo, fc)
    assert all(f["half_width"] == f["width"] / 2 for f in fc)
    assert len(draw.rows) == 60  # the calibration's draw is not changed
    # no room for 5,000 more: no forecast for it
    assert [f["labels"] for f in forecast_width(pop, draw, rows, truth[rows], score, exact, more=(50, 5000), reps=1,
                                                step=50)] == [110]


def test_calibrate_says_what_more_labels_would_buy(tmp_path):
    from _helpers import oracle_file
    from sibscan.calibration import calibrate
    from planted_scan import planted_scan

    p = planted_scan(tmp_path / "scan", n_train=300, n_test=150, seed=3, modality="text", dim=48)
    cal = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal, ui="none", n_pairs=20, controls=0)
    res = calibrate(p.path, calibration_dir=cal, ui="none", n_pairs=20, controls=0,
                    labels=oracle_file(tmp_path, p, cal, labeller="simulated"))
    assert res.estimates["narrow_enough"] is False
    fc = res.estimates["width_forecast"]
    # 150 test items, 20 answered: room for 50 and 100 more, not for 200
    assert [f["labels"] for f in fc] == [res.estimates["rate"]["n_labels"] + k for k in (50, 100)]
    said = [a for a in res.advice if "simulated from these answers, the width after 50 more about" in a]
    assert len(said) == 1 and f"100 more about {100 * fc[1]['width']:.1f} pp" in said[0], res.advice
