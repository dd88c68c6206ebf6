"""The headline: what every output states as the sibling rate, as one object and one sentence.

* :func:`headline` — the ``headline`` object of ``report.json`` (and of ``sibscan calibrate --json``,
  ``sibscan check --json``, ``Scan.rate``): the state, the estimate and interval, the cutoff and
  its rule, the count flagged at the cutoff (a separate, named figure), the definition of "same";
* :func:`sentence` — the headline as one sentence, printed by every command and report.

States (:data:`STATES`): ``not_assessed`` (no cutoff: only exact twins are known; no rate is printed),
``baseline_only`` (a cutoff without hand labels of this data: the share flagged at it, no interval),
``calibrated`` (hand labels that support the cutoff: the estimated rate with its interval, from
:func:`sibscan.verdict.rate.estimate_rate` as recorded in the calibration's evidence), ``needs_labels`` (a calibrated
cutoff whose labels do not support it yet, by the fit's verdict read with :func:`sibscan.verdict.cutoffrule.supported`:
the rate and its interval are still the estimator's, but the cutoff, and so the items flagged at it, are
provisional; the sentence says why and to label more pairs, and ``sibscan check`` does not pass on it).
Who gave the labels (``labeller``: a person, or an oracle
that knows the planted truth) is said as :mod:`sibscan.labeller` words it: "calibrated with 200 oracle
labels".
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import fmt, labeller
from .cutoff import Cutoff
from .cutoffrule import classify_rule, supported
from .pairdecision import labels_phrase
from ..stats import CUTOFF_BOUND, finite_or_none
from .testscores import TestScores

__all__ = ["ESTIMATED", "LEVEL", "STATES", "headline", "narrow_enough", "no_interval_reason", "sentence"]

STATES = ("not_assessed", "baseline_only", "calibrated", "needs_labels")
#: the states whose ``estimate``, ``lo`` and ``hi`` are the calibrated estimator's (the others have no interval)
ESTIMATED = ("calibrated", "needs_labels")
#: the level of every sibling-rate interval (:func:`sibscan.verdict.rate.estimate_rate`'s default)
LEVEL = 0.95


def _count(mask: np.ndarray) -> dict:
    n, k = int(mask.size), int(mask.sum())
    return {"count": k, "n": n, "rate": k / n if n else None}


def narrow_enough(estimate: Optional[float], lo: Optional[float], hi: Optional[float]) -> Optional[bool]:
    """Whether an interval is narrow enough to quote: half width <= max(0.5 pp, 25 % of the estimate)."""
    if estimate is None or lo is None or hi is None:
        return None
    return (hi - lo) / 2 <= max(0.005, 0.25 * estimate) + 1e-12


def _rule_phrase(rule: Optional[str], who: Optional[str] = None) -> str:
    """How the cutoff was chosen, in words (cutoff.json's ``rule``; the point-estimate rule of calibrations
    fitted before the lower bound is kept readable); ``who``: the calibration's ``labeller``."""
    kind = classify_rule(rule).kind
    if kind == "point":
        return f"where {labeller.noun(who)} flip from different to same"
    if kind == "same":
        return f"the lowest score from which P(same) of the {labeller.noun(who)}, by its {CUTOFF_BOUND}, is 0.5 or more"
    return f"the lowest reaching {rule}" if kind == "precision" else rule


def headline(cutoff: Cutoff, scores: TestScores, *, baseline: Optional[dict] = None, n_train: Optional[int] = None,
             definition: Optional[str] = None) -> dict:
    """The headline object: what every output states as the sibling rate (test -> train).

    Parameters
    ----------
    cutoff : Cutoff
        The cutoff in use (``sibscan.verdict.cutoff.resolve_cutoff``); a calibrated one carries the
        calibration's estimate in its evidence.
    scores : TestScores
    baseline : dict, optional
        The random-pair baseline, for the expected number of chance siblings at the cutoff.
    n_train : int, optional
    definition : str, optional
        The written definition of "same" (a calibration's own wins).

    Returns
    -------
    dict
        ``{state, estimate, lo, hi, level, n_labels, cutoff, definition, direction, n, score,
        cutoff_source, cutoff_rule, flagged {count, n, rate} or None, exact_twins {count, n, rate},
        expected_chance_siblings, chance_extrapolated, status, narrow_enough, note, decided_by_labels,
        n_answers, n_answers_read, labeller, text}``; ``labeller`` is the calibration's (``"hand"``,
        ``"oracle"``, ``"hand and oracle"``; null for a calibration that does not say, read as hand); rates
        are fractions, null where nothing was assessed.  Plain JSON types only.
    """
    from ..calibration.baseline import expected_chance_siblings, extrapolated

    ev = cutoff.evidence or {}
    n = len(scores)
    exact = _count(np.asarray(scores.exact, bool))
    est = ev.get("estimates") or {}
    rate = est.get("rate") or {}
    labels = ev.get("n_labels") or {}
    n_labels = int(labels.get("same", 0)) + int(labels.get("different", 0)) if labels else 0
    h = {"state": "not_assessed", "estimate": None, "lo": None, "hi": None, "level": LEVEL, "n_labels": 0,
         "cutoff": finite_or_none(cutoff.value), "definition": ev.get("definition") or definition,
         "direction": "test_to_train", "n": n, "score": ev.get("score"), "cutoff_source": cutoff.kind,
         "cutoff_rule": None, "flagged": None, "exact_twins": exact, "expected_chance_siblings": None,
         "chance_extrapolated": None, "status": ev.get("status"), "narrow_enough": None, "note": ev.get("note"),
         "decided_by_labels": None, "n_answers": 0, "n_answers_read": 0,
         "labeller": ev.get("labeller") if cutoff.kind == "calibrated" else None}
    if cutoff.value is not None:
        fl = scores.flags(cutoff.value)
        flagged = _count(fl.flagged)
        h["flagged"] = flagged
        h["decided_by_labels"] = fl.decided()
        h["n_answers"] = scores.answered_pairs()
        h["n_answers_read"] = len(scores.labels) if scores.labels is not None else 0
        if baseline is not None and n_train:
            h["expected_chance_siblings"] = finite_or_none(expected_chance_siblings(baseline, cutoff.value, n_train, n))
            h["chance_extrapolated"] = extrapolated(baseline, cutoff.value)
        if cutoff.kind == "calibrated" and ev.get("mismatches"):
            which = f"the calibration in {ev['calibration']}" if ev.get("calibration") else "the calibration"
            forced = (f"{which} was made for {'; '.join(ev['mismatches'])} and applied with --force: "
                      "its cutoff is used, its rate estimate is not this data's")
            # added to the evidence's note (why the scan's own calibration is not used), never in its place
            h.update(state="baseline_only", estimate=flagged["rate"], cutoff_rule=_forced_rule(ev["mismatches"]),
                     note="; ".join(n for n in (ev.get("note"), forced) if n))
        elif cutoff.kind == "calibrated" and n_labels:
            triple = [rate.get("lo"), rate.get("estimate"), rate.get("hi")] if rate else est.get("sibling_rate")
            lo, mid, hi = triple if triple else (None, None, None)
            # the fit's verdict decides whether its labels support the cutoff; the rate is the estimator's either way
            h.update(state="calibrated" if supported(ev.get("status")) else "needs_labels",
                     estimate=finite_or_none(mid), lo=finite_or_none(lo), hi=finite_or_none(hi), n_labels=n_labels,
                     cutoff_rule=_rule_phrase(ev.get("rule"), h["labeller"]))
            h["narrow_enough"] = narrow_enough(h["estimate"], h["lo"], h["hi"])
        else:
            h.update(state="baseline_only", estimate=flagged["rate"],
                     cutoff_rule="given by hand" if cutoff.kind == "uncalibrated" else "recorded by the scan")
    h["text"] = sentence(h)
    return h


def _score_name(kind: Optional[str]) -> str:
    return "verified similarity" if kind == "verified" else "similarity"


def _forced_rule(mismatches: list) -> str:
    """A calibration applied with --force, by what differs ("calibrated for another encoder and verifier");
    the phrases are :meth:`sibscan.verdict.record.Calibration.mismatches`'."""
    what = [w for w, lead in (("dataset", "dataset fingerprint"), ("encoder", "encoder identity"),
                              ("verifier", "verifier identity")) if any(m.startswith(lead) for m in mismatches)]
    return f"calibrated for another {' and '.join(what)}" if what else "calibrated for another scan"


def no_interval_reason(h: dict) -> str:
    """Why a ``baseline_only`` headline has no interval, in words, from the cutoff's kind: with hand answers
    deciding pairs of this scan (``n_answers``) the reason is the cutoff, not a lack of labels."""
    if not h.get("n_answers"):  # answers read but none about a pair the table holds: say that, not "none"
        return ("no hand label answers a pair of this table" if h.get("n_answers_read")
                else "no hand labels of this data")
    if h.get("cutoff_source") != "calibrated":
        return "the cutoff in use is not calibrated"
    if (h.get("cutoff_rule") or "").startswith("calibrated for another"):
        return "that calibration's interval is not this scan's"
    # a calibrated cutoff the scan recorded (or a calibration without labels): no estimate travels with it
    return "the cutoff in use carries no calibrated rate"


def sentence(h: dict) -> str:
    """The headline as one sentence (no final full stop), the same in every output."""
    n = h["n"]
    ex = h["exact_twins"]
    if h["state"] == "not_assessed":
        return (f"sibling rate not assessed (no cutoff: label pairs with 'sibscan calibrate SCAN_DIR'); "
                f"exact twins: {ex['count']:,} of {n:,} test items ({fmt.pct(ex['rate'])})")
    fl = h["flagged"]
    at = f"{_score_name(h['score'])} ≥ {fmt.score(h['cutoff'])}"
    said = labels_phrase(h.get("decided_by_labels"), labeller.by(h.get("labeller")))
    said = f" ({said})" if said else ""
    if h["state"] == "baseline_only":
        why = h.get("cutoff_rule") or "not calibrated"
        return (f"{fl['count']:,} of {n:,} test items ({fmt.pct(fl['rate'])}) flagged at {at}{said} ({why}; "
                f"{no_interval_reason(h)}, so no sibling-rate interval: calibrate with 'sibscan calibrate SCAN_DIR')")
    iv = f"{h['level']:.0%} interval {fmt.pct(h['lo'])} to {fmt.pct(h['hi'])}"
    labels = f"{h['n_labels']:,} {labeller.noun(h.get('labeller'))}"
    flagged = f"flagged at {at}, {h['cutoff_rule']}: {fl['count']:,} ({fmt.pct(fl['rate'])}){said}"
    if h["state"] == "needs_labels":
        return (f"sibling rate {fmt.pct(h['estimate'])} ({iv}) of {n:,} test items, estimated from {labels}, which do "
                f"not support the cutoff yet: {h['status']}; {flagged}, provisional until more pairs are labelled "
                "('sibscan calibrate SCAN_DIR')")
    return f"sibling rate {fmt.pct(h['estimate'])} ({iv}) of {n:,} test items, calibrated with {labels}; {flagged}"
