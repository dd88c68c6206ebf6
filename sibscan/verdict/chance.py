"""What the random-pair baseline says about chance siblings, in words: one function per sentence, so the
scan summary, calibrate's summary and the report (JSON, Markdown, HTML) print the same words.

* :func:`pairs_described` — which pairs the baseline scored: ``"all 3,600 pairs"``, ``"a random sample
  of 100,000 of 5.0e9 pairs"`` (or an older sibscan's sample that left out each item's neighbours).
* :func:`chance_sentence` — the expected number of chance siblings at a cutoff, against the count found.
* :func:`chance_note` — without a cutoff, one line when random pairs reach the scores of the test
  items' best matches (UCR Meat: 2.1 % of its 3,600 pairs reach the median best match, r 0.99996),
  where a near-copy score is no evidence of leakage.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sibscan import fmt

from ..calibration.baseline import left_out_neighbours, tail_probability

__all__ = ["NOTE_SHARE", "chance_note", "chance_sentence", "pairs_described"]

#: the share of random pairs at or above the median test item's best score from which :func:`chance_note`
#: speaks.  For items drawn independently the median best of ``n`` comparisons sits where about ln 2 / n
#: of the pairs reach (0.07 % at 1,000 train items), and siblings push it higher still: 1 % is reached
#: there only below ~70 train items, where a best match is the best of a handful.  Sets of alike items
#: reach it at any size: UCR Meat 2.1 %, OliveOil 3.8 %, Ham (109 train series) 2.1 %
#: (``benchmarks/chance_baseline.py``).
NOTE_SHARE = 0.01


def _big(n: int) -> str:
    """A pair count: ``3,600``, or ``5.0e9`` from ten million up."""
    return f"{n:,}" if n < 10_000_000 else f"{n:.1e}".replace("e+0", "e").replace("e+", "e")


def pairs_described(baseline: dict) -> str:
    """Which pairs ``baseline`` scored, in words: ``"all 3,600 pairs"`` (with the exact twins left out, when
    any), ``"a random sample of 100,000 of 5.0e9 pairs"``; an older sibscan's sample that left out each
    item's nearest neighbours says so, and how to recompute it."""
    n, total = int(baseline["n_pairs"]), baseline.get("n_possible")
    twins = int(baseline.get("n_excluded") or 0)
    if total is None:  # a record older than n_possible
        return f"{n:,} random pairs"
    if left_out_neighbours(baseline):
        return (f"a sample of {n:,} of {_big(int(total))} pairs that left out each item's nearest neighbours, made by "
                "an older sibscan: it undercounts chance siblings on small sets; run 'sibscan scan' again on the "
                "same --out to recompute it")
    if baseline.get("all_pairs"):
        return f"all {_big(int(total))} pairs" + (f", {fmt.plural(twins, 'exact twin')} left out" if twins else "")
    return f"a random sample of {n:,} of {_big(int(total))} pairs"


def chance_sentence(expected: Optional[float], found: Optional[int], *, extrapolated: bool,
                    baseline: Optional[dict]) -> Optional[str]:
    """The expected chance siblings at a cutoff against those found, or None where there is no count
    (no cutoff, no baseline, no count of the train items searched).

    ``expected``: :func:`~sibscan.calibration.baseline.expected_chance_siblings` at the cutoff;
    ``found``: the test items flagged there; ``extrapolated``: the cutoff lies beyond every random pair
    scored (:func:`~sibscan.calibration.baseline.extrapolated`); ``baseline``: the baseline (or its
    summary without the histogram), for which pairs it scored (an older calibration kept none)."""
    if expected is None:
        return None
    pairs = f", {pairs_described(baseline)}" if baseline and "n_pairs" in baseline else ""
    beyond = ", extrapolated beyond every random pair scored" if extrapolated else ""
    found_s = "" if found is None else f" (found: {int(found):,})"
    return (f"expected chance siblings at this cutoff (random-pair baseline{pairs}{beyond}): "
            f"{fmt.count(expected)}{found_s}")


def chance_note(baseline: Optional[dict], best: np.ndarray) -> Optional[str]:
    """Without a cutoff: one line when random pairs reach the median test item's best score in at least
    :data:`NOTE_SHARE` of pairs, else None.

    Parameters
    ----------
    baseline : dict, optional
        The random-pair baseline (on the deciding score).
    best : ndarray of shape (n_test,)
        Each test item's best deciding score; NaN (no neighbour) is ignored.  Exact twins should be left
        out by the caller: they are copies, counted apart.

    Returns
    -------
    str or None
        ``"random pairs reach the median test item's best score (0.99996) in 2.1 % of pairs: a match
        this close is not evidence of leakage on this data"``.
    """
    best = np.asarray(best, dtype=np.float64)
    best = best[np.isfinite(best)]
    if baseline is None or not len(best):
        return None
    # the median: half the test items' best matches score at or above it, so when random pairs reach it
    # the upper half of the ranking is what unrelated items score here
    median = float(np.median(best))
    share = float(tail_probability(baseline, median))
    if share < NOTE_SHARE:
        return None
    return (f"random pairs reach the median test item's best score ({fmt.score(median)}) in {fmt.pct(share)} of "
            "pairs: a match this close is not evidence of leakage on this data")
