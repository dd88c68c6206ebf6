"""What more labels would buy: the sibling rate's interval width after more answers, forecast.

``sibscan calibrate`` says it when the interval is not narrow enough yet ("simulated from these
answers, the width after 50 more about 4.1 pp, …") and records it in ``cutoff.json``
(``estimates.width_forecast``).  The forecast replays what labelling on would do: the same adaptive
draw (:func:`.sampling.extend_draw`, steps of ``step`` pairs, each step where one more answer shrinks
the interval most), each new pair answered "same" with its item's posterior probability under the
answers so far (the labeller's median error rates included), and the estimator re-run on the answers
plus the simulated ones.  The median width over ``reps`` replays is the forecast.

It is a forecast under today's posterior, not a promise: siblings the answers have not hinted at yet
are not in it.  Measured against labelling on (``python -m benchmarks.width_forecast``): docs/benchmarks.md.
"""
from __future__ import annotations

from dataclasses import replace
from typing import List, Optional, Sequence

import numpy as np

from sibscan.stats import ControlAnswers

from .controls import estimate_with_controls
from .sampling import Draw, Population, extend_draw

__all__ = ["forecast_width"]


def forecast_width(pop: Population, draw: Draw, rows: np.ndarray, same: np.ndarray, score: np.ndarray,
                   exact: np.ndarray, *, more: Sequence[int] = (50, 100, 200), cutoff: Optional[float] = None,
                   controls: Optional[ControlAnswers] = None, trusted: Optional[np.ndarray] = None, reps: int = 3,
                   step: int = 25, seed: int = 0) -> List[dict]:
    """The rate interval's forecast width after ``more`` further answers.

    Parameters
    ----------
    pop, draw : the calibration's population and draw (``draw`` is not changed).
    rows, same : the answered population rows and their answers.
    score, exact : every test item's deciding score and exact-twin flag (:class:`sibscan.verdict.testscores.TestScores`).
    more : further answers to forecast for (repeats and non-positive counts dropped).
    cutoff, controls, trusted : as :func:`sibscan.verdict.rate.estimate_rate` takes them.

    Returns
    -------
    list of dict
        ``{"labels": answers then, "width": median forecast width (a fraction), "half_width": width / 2}``
        for each count of ``more`` the population has room for; empty when nothing is left to label.
    """
    rows = np.asarray(rows, np.int64)
    same = np.asarray(same, bool)
    trusted = np.zeros(len(same), bool) if trusted is None else np.asarray(trusted, bool)
    qi = pop.query_index

    def estimate(r, s, t, fast=True, cut=None):
        return estimate_with_controls(score, exact, qi[r], s, controls, fast=fast, cutoff=cut, trusted=t)

    now = estimate(rows, same, trusted, cut=cutoff)
    fs, fd = now.labeller_error["false_same"][1], now.labeller_error["false_different"][1]
    q_item = np.clip(fs + now.p_same * (1.0 - fs - fd), 0.0, 1.0)  # P(answered "same") per test item
    targets = sorted({int(k) for k in more if int(k) > 0})
    rng = np.random.default_rng(seed)
    widths = {k: [] for k in targets}
    for _ in range(max(1, reps)):
        d = replace(draw, rows=rows.copy(), phases=list(draw.phases))
        r, s, t = rows.copy(), same.copy(), trusted.copy()
        for k in targets:
            while len(r) - len(rows) < k:
                est = estimate(r, s, t)
                before = len(d.rows)
                extend_draw(d, pop, min(step, k - (len(r) - len(rows))), labels_by_row={int(x): "x" for x in r},
                            p_same=est.p_same[qi], curve_sd=est.curve_sd[qi])
                new = d.rows[before:]
                if not len(new):
                    break  # every pair is labelled
                r = np.r_[r, new]
                s = np.r_[s, rng.random(len(new)) < q_item[qi[new]]]
                t = np.r_[t, np.zeros(len(new), bool)]
            if len(r) - len(rows) < k:
                break
            e = estimate(r, s, t, cut=cutoff)
            widths[k].append(e.hi - e.lo)
    out = []
    for k in targets:
        if widths[k]:
            w = float(np.median(widths[k]))
            out.append({"labels": now.n_labels + k, "width": w, "half_width": w / 2})
    return out
