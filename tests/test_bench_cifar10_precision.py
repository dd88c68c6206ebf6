"""benchmarks/cifar10_precision.py: the design-weighted precision and the ciFAIR recall on tiny cases worked by hand."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks import cifar10_precision as cp

# two strata: [0.5, 0.8) holds four pairs, [0.8, inf) two; three of them labelled
EDGES = np.array([0.5, 0.8, np.inf])
SCORES = np.array([0.5, 0.6, 0.7, 0.75, 0.85, 0.9, 0.1])  # the last one is below every stratum
S_SCORES = np.array([0.6, 0.7, 0.9])
S_SAME = np.array([True, False, True])


@pytest.mark.parametrize("cut, flagged, precision, labelled", [
    (0.5, 6, (4 * 0.5 + 2 * 1.0) / 6, 3),   # stratum 0: 1 of 2 labelled same, weight 4; stratum 1: 1 of 1, weight 2
    # stratum 0 keeps 0.7 and 0.75 flagged; its one labelled pair ≥ 0.65 is not same
    (0.65, 4, (2 * 0.0 + 2 * 1.0) / 4, 2),
    (0.8, 2, 1.0, 1),
])
def test_precision_is_weighted_by_the_flagged_pairs_of_each_stratum(cut, flagged, precision, labelled):
    got = cp.precision_at(cut, SCORES, EDGES, S_SCORES, S_SAME, draws=4000)
    assert got["flagged"] == flagged and got["labelled"] == labelled
    assert got["precision"] == pytest.approx(precision)
    assert 0.0 <= got["low"] <= got["precision"] <= got["high"] <= 1.0


def test_the_interval_narrows_with_more_labels_and_a_cut_below_the_strata_is_refused():
    few = cp.precision_at(0.8, SCORES, EDGES, S_SCORES, S_SAME, draws=4000)
    many_scores = np.r_[S_SCORES, np.full(40, 0.95)]
    many = cp.precision_at(0.8, SCORES, EDGES, many_scores, np.r_[S_SAME, np.ones(40, bool)], draws=4000)
    assert many["high"] - many["low"] < few["high"] - few["low"]
    with pytest.raises(ValueError, match="below the lowest"):
        cp.precision_at(0.3, SCORES, EDGES, S_SCORES, S_SAME)


def test_cifair_recall_counts_the_partner_and_the_flagged_test_item_apart():
    top1 = {"a": ("x", 0.9), "b": ("y", 0.7), "c": ("z", 0.95)}
    listed = [("a", "x"), ("b", "y"), ("c", "w"), ("d", "q")]  # c's top-1 is another train item; d was never scored
    got = cp.cifair_recall(0.8, top1, listed)
    assert (got["partner_found"], got["test_flagged"]) == (1, 2)
    assert (got["partner_recall"], got["test_flagged_share"]) == (0.25, 0.5)
    assert cp.missed_pairs(0.8, top1, listed) == [("b", "y"), ("c", "w"), ("d", "q")]
    assert cp.cifair_recall(0.6, top1, listed)["partner_found"] == 2


def test_evaluate_finds_the_lowest_cutoff_reaching_095_and_refuses_labels_of_another_scan():
    # 100 test items scored 0.01 … 1.00; the top 10 labelled same, the next 10 (q90 … q95 stratum and below) not
    te = [f"t{i:03d}" for i in range(100)]
    tr = [f"r{i:03d}" for i in range(100)]
    sc = np.arange(1, 101) / 100.0
    labels = [{"test_file": f"test/t{i:03d}", "train_file": f"train/r{i:03d}",
               "label": "same" if i >= 95 else "different"} for i in range(89, 100)]
    listed = [("t099", "r099"), ("t097", "r097"), ("t050", "r050")]
    got = cp.evaluate(te, tr, sc, labels, listed)
    best = got["lowest_cutoff_precision_ge_095"]
    assert best["precision"] == pytest.approx(1.0) and best["cutoff"] == pytest.approx(0.95, abs=0.006)
    assert best["partner_found"] == 2 and best["test_flagged"] == 2
    assert got["labels"] == {"n": 11, "same": 5, "unsure": 0, "different": 6}
    wrong = labels + [{"test_file": "test/t099", "train_file": "train/r000", "label": "same"}]
    with pytest.raises(SystemExit, match="not the test item's top-1 pair"):
        cp.evaluate(te, tr, sc, wrong, listed)
