"""The cutoff rule: the lowest score from which P(same)'s 95 % lower bound per run of answers reaches 0.5.

The label sets below are the shapes seen in the quality benchmark's crop sets (seed 2, all photos):
a pooled block of 3 'same' + 1 'different' (point estimate 0.75) or 2 + 2 (0.5) just under a long
run of 'same'.  The point-estimate rule put the cutoff under those blocks and flagged pairs a person
had answered "different"; the lower bound puts it above them.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import time

from sibscan.calibration.fit import (BOUND, CONFIDENCE, Curve, find_cutoff, fit, fit_curve, min_same_run,
                                     same_lower_bound)
from sibscan.verdict.cutoffrule import POINT_RULE, RULE, precision_rule, same_rule

LOW_DIFF = [0.0, 0.004, 0.01, 0.014, 0.02, 0.027, 0.045, 0.053, 0.07, 0.08, 0.113, 0.126]
HIGH_SAME = [0.357, 0.365, 0.374, 0.507, 0.544, 0.589, 0.624, 0.67, 0.704, 0.785, 0.832, 0.874, 0.921, 0.957, 0.98]


def _labels(*groups):
    """(scores, same) from (scores, answer) groups."""
    s = np.concatenate([np.asarray(g, float) for g, _ in groups])
    y = np.concatenate([np.full(len(g), a, bool) for g, a in groups])
    return s, y


def _point_flip(scores, same):
    """The previous rule: midpoint below the first labelled score whose point estimate is >= 0.5 (None when
    that is the lowest, or there is none: no flip)."""
    c = fit_curve(scores, same)
    up = np.flatnonzero(c.p >= 0.5)
    return (c.x[up[0] - 1] + c.x[up[0]]) / 2 if len(up) and up[0] > 0 else None


def test_jeffreys_lower_bound_matches_scipy():
    beta = pytest.importorskip("scipy.stats").beta
    rng = np.random.default_rng(0)
    for n in [1, 2, 3, 5, 10, 38, 60]:
        for k in {1, n // 2, n - 1, n} | set(rng.integers(1, n + 1, 2).tolist()):
            k = max(1, min(int(k), n))
            assert same_lower_bound(k, n) == pytest.approx(beta.ppf(0.05, k + 0.5, n - k + 0.5), abs=1e-9), (k, n)
    assert same_lower_bound(0, 0) == 0.0 == same_lower_bound(0, 40)  # no 'same': 0, as Brown, Cai & DasGupta set it
    # 'same' answers in a row needed for 0.5 and for 0.95
    assert min_same_run() == 3 and same_lower_bound(2, 2) < 0.5 <= same_lower_bound(3, 3)
    assert min_same_run(0.95) == 38


def test_a_mixed_block_under_the_same_run_is_not_flagged():
    # 3 same + 1 different pooled at P = 0.75 (crops, seed 2): the point rule flagged the 'different' at 0.319
    s, y = _labels((LOW_DIFF, False), ([0.075], True), ([0.255, 0.262, 0.268], True), ([0.319], False),
                   (HIGH_SAME, True))
    res = fit(s, y, s, lo=0.0, seed=0)
    assert _point_flip(s, y) == pytest.approx((0.126 + 0.255) / 2)  # the old cutoff, 0.19: under the 0.319 'different'
    assert res.status == "ok" and res.rule == RULE == "P(same) >= 0.5 by its 95 % lower bound per run of answers"
    assert res.cutoff == pytest.approx((0.319 + 0.357) / 2)
    assert not (s[~y] >= res.cutoff).any()  # no pair answered 'different' is flagged


def test_two_and_two_is_not_enough():
    # 2 same + 2 different pooled at P = 0.5 (small32, seed 2): the point rule flagged at P >= 0.5
    s, y = _labels((LOW_DIFF, False), ([0.258], False), ([0.261], True), ([0.297], False), ([0.319], True),
                   ([0.367], False), ([0.48, 0.497] + HIGH_SAME[3:], True))
    res = fit(s, y, s, lo=0.0, seed=0)
    assert _point_flip(s, y) == pytest.approx((0.258 + 0.261) / 2)
    assert res.cutoff == pytest.approx((0.367 + 0.48) / 2) and not (s[~y] >= res.cutoff).any()


def test_one_wrong_answer_high_up_does_not_move_the_cutoff_above_it():
    # a labeller's slip at 0.95 pools with the 'same' run below it (29 of 30): P stays high there, and the
    # bound of that block holds above it (P does not fall as the score rises) though the 3 answers above are few
    high = np.linspace(0.4, 0.94, 29).tolist()
    s, y = _labels((LOW_DIFF, False), (high, True), ([0.95], False), ([0.96, 0.97, 0.98], True))
    res = fit(s, y, s, lo=0.0, seed=0)
    assert res.cutoff == pytest.approx((0.126 + 0.4) / 2) and res.status == "ok"


def test_not_enough_same_answers_says_so_and_what_to_label():
    s, y = _labels((LOW_DIFF, False), ([0.3], True), ([0.5], False), ([0.9, 0.95], True))
    res = fit(s, y, s, lo=0.0, seed=0)
    assert res.cutoff is None and res.interval is None
    assert res.status.startswith("not enough labels: no score from which P(same)'s 95 % lower bound per run of answers "
                                 "reaches 0.5")
    assert "at least 3 'same' answers" in res.status and "scoring 0.9000 to 0.9500, holds 2 'same' of 2" in res.status
    # every pair the population holds is labelled: the advice says so instead of asking for pairs there are not
    assert res.advice == ["every pair the scan scores is labelled already: the scores do not separate 'same' from "
                          "'different' well enough for the rule"] and res.asks == []
    # with 20 unlabelled pairs from 0.5 up it names them
    pop = np.concatenate([s, np.linspace(0.5, 1.0, 20)])
    res = fit(s, y, pop, lo=0.0, seed=0)
    assert res.advice == ["label about 10 more pairs scoring 0.5000 to 1.0000"] and res.asks[0].n == 10
    # one more 'same' up there is enough (with 3 'different' and 3 'same', min_per_side holds too)
    s2, y2 = np.append(s, 0.97), np.append(y, True)
    assert fit(s2, y2, s2, lo=0.0, seed=0).cutoff == pytest.approx(0.7)


def test_target_precision_reads_the_lower_bound():
    s, y = _labels((LOW_DIFF, False), ([0.3], False), (np.linspace(0.4, 0.99, 30), True))
    pop = np.concatenate([s, np.linspace(0.4, 0.99, 200)])
    res = fit(s, y, pop, lo=0.0, target_precision=0.95, seed=0)
    # 30 'same' in a row bound P at 0.94: no cutoff reaches 0.95 at 95 % confidence; 38 are needed
    assert res.cutoff is None and res.rule == precision_rule(0.95)
    assert res.status.startswith("not enough labels: no cutoff reaches precision 0.95 by the 95 % lower bound per run")
    assert "38 'same' answers" in res.status
    res = fit(s, y, pop, lo=0.0, target_precision=0.9, seed=0)
    # brute force: the lowest candidate (a labelled score or a midpoint) whose flagged pairs' mean bound reaches 0.9
    c = fit_curve(s, y)
    bound = c.lower[np.clip(np.searchsorted(c.x, pop, side="right") - 1, 0, None)]
    cands = np.unique(np.concatenate([c.x, (c.x[1:] + c.x[:-1]) / 2]))
    want = next(v for v in cands if bound[pop >= v].mean() >= 0.9)
    assert res.status == "ok" and res.cutoff == pytest.approx(want)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.booleans()), min_size=2, max_size=40))
def test_the_bound_never_flags_more_than_the_point_estimate(pairs):
    s = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    c = fit_curve(s, y)
    assert (c.lower <= c.p + 1e-12).all() and (np.diff(c.lower) >= 0).all()
    cut, point = find_cutoff(c), _point_flip(s, y)
    # where the point estimate is 0.5 or more from the lowest labelled score it sees no flip, but the bound
    # can still cross 0.5 higher up (test_the_bound_crossing_above_a_pooled_half_gives_a_cutoff)
    if cut is not None and point is not None:
        assert cut >= point - 1e-12


def test_the_bound_crossing_above_a_pooled_half_gives_a_cutoff():
    # the lowest answers pool to P = 0.5 (3 of 6) but bound it at 0.2: the bound crosses 0.5 at the 'same' run
    # above, so the rule gives a cutoff (the point-estimate guard refused it as "every pair was 'same'")
    s, y = _labels(([0.10, 0.11, 0.12, 0.13, 0.14, 0.15], None), (np.linspace(0.6, 0.99, 30), True))
    y[:6] = [True, False, True, False, True, False]
    c = fit_curve(s, y)
    assert c.p[0] == 0.5 and c.lower[0] < 0.5
    res = fit(s, y, s, lo=0.0, seed=0)
    assert res.cutoff == pytest.approx((0.15 + 0.6) / 2)
    # 'every labelled pair was same' only when it is
    s2 = np.linspace(0.6, 0.99, 30)
    res2 = fit(s2, np.ones(30, bool), s2, lo=0.0, seed=0)
    assert res2.cutoff is None and "every labelled pair down to score 0.6000 was 'same'" in res2.status
    # answers whose P stays under 0.5 everywhere are not 'every pair was different' when some are 'same'
    s3, y3 = _labels((LOW_DIFF, False), ([0.5], True), ([0.6, 0.7], False))
    res3 = fit(s3, y3, s3, lo=0.0, seed=0)
    assert res3.cutoff is None and "was 'different'" not in res3.status and "not enough labels" in res3.status


def test_a_curve_without_its_bound_reads_the_point_estimate():
    c = Curve(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.0, 0.0, 1.0, 1.0]))
    assert find_cutoff(c) == pytest.approx(0.25)


@pytest.mark.parametrize("k", [1, 2])
def test_a_clean_set_with_few_siblings_says_so_once(k):
    # 60 'different' below 0.5 and k perfectly separated 'same' above 0.9: no cutoff, and one plain advice
    rng = np.random.default_rng(k)
    s, y = _labels((rng.uniform(0.0, 0.5, 60), False), (np.linspace(0.92, 0.98, k), True))
    res = fit(s, y, s, lo=0.0, seed=0)
    assert res.cutoff is None and len(res.advice) == 1
    assert f"the labels found only {k} sibling" in res.advice[0] and "needs a run of at least 3 'same' answers" in res.advice[0]
    assert "no cutoff can be fitted" in res.advice[0]


def test_not_enough_labels_points_at_the_mixed_run_when_a_different_is_on_top():
    # the highest labelled pair is 'different' inside the top run: the range above it holds no labelled pair
    s, y = _labels((LOW_DIFF, False), ([0.6, 0.7], True), ([0.75], False), ([0.8, 0.85], True), ([0.9], False))
    res = fit(s, y, s, lo=0.0, seed=0)
    assert res.cutoff is None and res.status.startswith("not enough labels")
    c = fit_curve(s, y)
    a = c.x[c.p == c.p[-1]][0]
    assert a < 0.9 and res.asks == []
    pop = np.concatenate([s, np.linspace(0.7, 1.0, 12)])
    res = fit(s, y, pop, lo=0.0, seed=0)
    assert res.advice == [f"label about 10 more pairs scoring {a:.4f} to 1.0000"]


def test_target_precision_quotes_the_run_its_target_needs():
    # no run reaches the bound at all: the message quotes the 38 'same' answers 0.95 needs, not the 3 of 0.5
    s, y = _labels((LOW_DIFF, False), ([0.3], True), ([0.5], False), ([0.9, 0.95], True))
    res = fit(s, y, s, lo=0.0, target_precision=0.95, seed=0)
    assert res.cutoff is None and "at least 38 'same' answers" in res.status and "reaches 0.95" in res.status


def test_the_level_is_named_from_one_constant():
    assert CONFIDENCE == 0.95 and BOUND == "95 % lower bound per run of answers"
    assert BOUND in RULE and BOUND in precision_rule(0.9)


def test_min_same_run_bisects_to_the_stepping_answer():
    def stepping(target):
        n = 1
        while same_lower_bound(n, n) < target:
            n += 1
        return n
    assert [min_same_run(t) for t in (0.5, 0.8, 0.9, 0.95)] == [stepping(t) for t in (0.5, 0.8, 0.9, 0.95)] == [3, 9, 18, 38]
    t = time.perf_counter()
    n = min_same_run(0.9999)
    assert time.perf_counter() - t < 1.0
    assert same_lower_bound(n - 1, n - 1) < 0.9999 <= same_lower_bound(n, n)


@pytest.mark.parametrize("target", [None, 0.9])
def test_labels_high_from_the_lowest_score_point_below_it(target):
    # every answer 'same' but three in the middle: the lowest run already bounds P(same) at 0.84, so the flip lies
    # below the lowest labelled score; the message said "not enough labels ... no score ... reaches 0.5" and
    # advised labelling 0.74-1.0 (and "18 'same' answers above the cutoff" with a target), which never helps
    s = np.linspace(0.3, 0.95, 60)
    y = np.ones(60, bool)
    y[[30, 35, 40]] = False
    c = fit_curve(s, y)
    assert c.lower[0] >= 0.5 and find_cutoff(c, s, target) is None
    below = np.linspace(0.2, 0.29, 12)  # unlabelled pairs under the lowest labelled one
    pop = np.concatenate([below, s])
    res = fit(s, y, pop, lo=0.2, target_precision=target, seed=0)
    assert res.cutoff is None and not res.status.startswith("not enough labels") and "'same' answers above" not in res.status
    assert res.status.startswith("no flip observed at or below the lowest labelled score "
                                 f"0.3000: P(same) is high already there (its {BOUND} is 0.84")
    assert res.advice == ["label about 10 more pairs scoring 0.2000 to 0.3000 (below the lowest labelled one; "
                          "pairs above it cannot place the cutoff)"]
    # with none there the advice says so
    assert fit(s, y, s, lo=0.2, target_precision=target, seed=0).advice == [
        "every pair scoring 0.3000 or less is labelled already: the flip lies below every pair the scan scores, so no "
        "cutoff can be placed"]
    # following the advice: 'different' answers between lo and the lowest labelled score place the cutoff there
    answered = np.linspace(0.2, 0.29, 5)
    s2, y2 = np.concatenate([answered, s]), np.concatenate([np.zeros(5, bool), y])
    res2 = fit(s2, y2, s2, lo=0.2, target_precision=target, seed=0)
    assert res2.cutoff is not None
    if target is None:
        assert res2.cutoff == pytest.approx((0.29 + 0.3) / 2) and res2.status == "ok"
    # labels that start below lo point under the lowest one, not at an empty range
    assert fit(s, y, pop, lo=0.5, target_precision=target, seed=0).advice[0].startswith(
        # the 10 nearest
        f"label about 10 more pairs scoring {below[-10]:.4f} to 0.3000 (below the lowest labelled one")


def test_a_rule_name_without_the_bound_is_the_point_estimate():
    bound, first_bound = precision_rule(0.9), "precision >= 0.9 at 95 % confidence"
    # the point-estimate target-precision rule was stored as "precision >= 0.9": never the bound rule
    assert not same_rule("precision >= 0.9", bound) and not same_rule(bound, "precision >= 0.9")
    assert not same_rule("precision >= 0.9", first_bound)
    assert not same_rule(None, RULE) and not same_rule(POINT_RULE, RULE) and not same_rule("P(same) >= 0.5", RULE)
    # one rule under its names: the bound rules' first name, no name for the point estimate, the same name twice
    assert same_rule(first_bound, bound) and same_rule("P(same) >= 0.5 at 95 % confidence", RULE)
    assert same_rule(None, POINT_RULE) and same_rule("precision >= 0.9", "precision >= 0.9")
    assert same_rule(RULE, RULE) and same_rule(bound, bound)
    assert not same_rule(bound, precision_rule(0.95)) and not same_rule(RULE, bound)


def test_the_headline_words_every_rule_name_old_and_new():
    # the headline reads rule names through the one reader the refit's "rule changed" check uses
    from sibscan.verdict.headline import _rule_phrase

    flip = "where hand labels flip from different to same"
    bound = f"the lowest score from which P(same) of the hand labels, by its {BOUND}, is 0.5 or more"
    words = {None: flip, "": flip, POINT_RULE: flip, RULE: bound, "P(same) >= 0.5 at 95 % confidence": bound,
             "P(same) >= 0.5": bound, precision_rule(0.9): f"the lowest reaching {precision_rule(0.9)}",
             "precision >= 0.9": "the lowest reaching precision >= 0.9",
             "P(same) = 0.5 at 95 % confidence": "P(same) = 0.5 at 95 % confidence", "by hand": "by hand"}
    assert {rule: _rule_phrase(rule) for rule in words} == words
