"""The fit's advice names pairs that exist and are unlabelled (issue 30, item 3): "label about N more pairs
scoring A to B" only where the scan holds N unanswered pairs scoring A to B."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_needs_labels import weak  # noqa: F401 - the fixture: a text scan whose 60 labels do not support its cutoff

from sibscan import fmt
from sibscan.calibration.advice import Unlabelled
from sibscan.calibration.fit import fit
from sibscan.store.scandir import ScanDir

ADVICE = re.compile(r"label about (\d+) more pairs scoring (-?[\d.]+) to (-?[\d.]+)")


def _printed_range_count(scores: np.ndarray, a: str, b: str) -> int:
    """Pairs whose score prints within the printed range ``a`` to ``b`` (the advice's words, as a person reads them)."""
    d = len(a.split(".")[-1])
    lo, hi = float(a) - 0.5 * 10 ** -d, float(b) + 0.5 * 10 ** -d
    return int(((scores >= lo) & (scores <= hi)).sum())


def test_the_advice_on_a_weak_calibration_names_pairs_there_are(weak):  # noqa: F811
    """On the old code: "label about 10 more pairs scoring 0.8044 to 0.9198", a range holding 5 unlabelled pairs."""
    scan, cal = weak
    top = ScanDir(scan).neighbours().top1()
    labelled = {(r["query_id"], r["neighbour_id"]) for r in _labels(cal)}
    free = np.array([s for q, t, s in zip(top["query_id"], top["neighbour_id"], top["score"])
                     if (q, t) not in labelled])
    said = [m for a in cal.advice for m in ADVICE.finditer(a)]
    assert said, cal.advice
    for m in said:
        assert int(m.group(1)) <= _printed_range_count(free, m.group(2), m.group(3)), m.group(0)
    # the range the rule asked about holds fewer than asked, and the advice says how many (5 with the old
    # draw, 4 with the draw over the estimator's strata)
    short = [m for a in cal.advice
             for m in re.finditer(r"\((-?[\d.]+) to (-?[\d.]+) holds only (\d+) unlabelled pairs\)", a)]
    assert short, cal.advice
    for m in short:
        assert int(m.group(3)) == _printed_range_count(free, m.group(1), m.group(2)), m.group(0)


def _labels(cal) -> list:
    return [json.loads(line) for line in (Path(cal.path) / "labels.jsonl").read_text().splitlines()]


def test_ask_widens_cuts_or_gives_up():
    u = Unlabelled(np.array([0.1, 0.2, 0.5, 0.52, 0.6, 0.95]))
    assert u.ask(2, 0.45, 0.55).phrase == "label about 2 more pairs scoring 0.4500 to 0.5500"
    wide = u.ask(4, 0.45, 0.55, "both")  # the nearest unanswered pairs on either side come in
    assert (wide.n, wide.lo, wide.hi) == (4, 0.2, 0.6)
    assert wide.phrase == "label about 4 more pairs scoring 0.2000 to 0.6000 (0.4500 to 0.5500 holds only 2 unlabelled pairs)"
    down = u.ask(4, 0.45, 0.55, "down")
    assert (down.n, down.lo, down.hi) == (4, 0.1, 0.55)
    few = u.ask(10, 0.45, 0.55, "down")  # only four lie at or below 0.55
    assert few.n == 4 and few.phrase.startswith("label the 4 unlabelled pairs left scoring 0.1000 to 0.5500 (every "
                                                 "pair scoring 0.5500 or less is labelled then; about 10 would help)")
    assert Unlabelled(np.array([0.9])).ask(3, 0.1, 0.5, "down") is None
    # the population less the labelled pairs, ties counted one by one
    v = Unlabelled.from_population(np.array([0.3, 0.3, 0.3, 0.7, np.nan]), np.array([0.3, 0.7]))
    assert v.scores.tolist() == [0.3, 0.3] and v.count(0.0, 1.0) == 2
    with pytest.raises(ValueError, match="unknown widen 'up'; available: down, both"):
        u.ask(1, 0.0, 1.0, "up")


def _population(data) -> tuple:
    """A random population of nearest-pair scores (with ties), a random labelled subset, and answers that turn
    from 'different' to 'same' around a random score with some labeller noise."""
    n = data.draw(st.integers(3, 70), label="n")
    grid = data.draw(st.sampled_from([None, 5, 20]), label="grid")  # a coarse grid makes ties
    raw = np.array(data.draw(st.lists(st.floats(-0.2, 1.0, allow_nan=False), min_size=n, max_size=n), label="scores"))
    pop = np.round(raw * grid) / grid if grid else raw
    m = data.draw(st.integers(1, n), label="labelled")
    rows = np.array(data.draw(st.permutations(list(range(n))), label="order")[:m])
    flip = data.draw(st.floats(-0.2, 1.1), label="flip")
    noise = data.draw(st.sampled_from([0.0, 0.1, 0.3]), label="noise")
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
    same = (pop[rows] >= flip) ^ (rng.random(m) < noise)
    lo = data.draw(st.floats(-0.2, 1.0), label="lo")
    return pop, rows, same, lo


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_advised_range_holds_the_unlabelled_pairs_it_asks_for(data):
    pop, rows, same, lo = _population(data)
    target = data.draw(st.sampled_from([None, 0.9]), label="target")
    res = fit(pop[rows], same, pop, lo=lo, target_precision=target, n_boot=30)
    free = np.delete(pop, rows)
    for ask in res.asks:
        top = np.inf if ask.hi >= 1.0 else ask.hi
        assert 1 <= ask.n <= int(((free >= ask.lo) & (free <= top)).sum()), ask
        assert ask.phrase.startswith((f"label about {ask.n} more pairs scoring {fmt.span(ask.lo, ask.hi)}",
                                      f"label the {fmt.plural(ask.n, 'unlabelled pair')} left scoring "
                                      f"{fmt.span(ask.lo, ask.hi)}"))
        assert sum(ask.phrase in a for a in res.advice) == 1
    # every "label about N more pairs scoring A to B" the advice says is one of those
    said = [m.group(0) for a in res.advice for m in ADVICE.finditer(a)]
    assert sorted(said) == sorted(ADVICE.match(a.phrase).group(0) for a in res.asks if ADVICE.match(a.phrase))


def test_one_range_short_of_both_answers_is_advised_once():
    # one 'same' and one 'different' answer, one pair left: both sides' advice point at the same range (CI found it)
    pop = np.array([1.0, -0.125, -0.125])
    res = fit(pop[:2], np.array([True, False]), pop, lo=0.0, n_boot=30)
    assert len(res.asks) == 1
    assert sum(res.asks[0].phrase in a for a in res.advice) == 1
    assert any("named above serve here too" in a for a in res.advice), res.advice
