"""What a calibration says, for people and for the reports: the headline of a scan at the cutoff
every command resolves, a calibration's headline, and the lines ``sibscan calibrate`` prints.

Split from :mod:`.flow` (which draws, labels and fits): these only read a scan directory and a
:class:`~.record.Calibration`.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from sibscan import fmt, labeller
from sibscan.verdict.pairdecision import labels_phrase
from sibscan.stats import ControlAnswers
from sibscan.verdict import Verdict

from ..verdict.chance import chance_sentence
from .controlanswers import answers_line
from ..verdict.record import Calibration

__all__ = ["describe", "headline_of", "scan_headline"]


def scan_headline(scan_dir, *, cutoff: Optional[float] = None, calibration=None, force: bool = False,
                  definition: Optional[str] = None) -> dict:
    """The headline of a scan directory at the cutoff every command resolves, with the hand labels behind
    it deciding the pairs they answer: what ``report.json``'s ``headline`` holds
    (:attr:`sibscan.verdict.Verdict.headline`)."""
    return Verdict.open(scan_dir, cutoff=cutoff, calibration=calibration, force=force, definition=definition).headline


def headline_of(scan_dir: str | Path, cal: Calibration, *, force: bool = False) -> dict:
    """The headline a report of ``scan_dir`` states with this calibration: the cutoff resolved as
    ``sibscan report`` resolves it (this calibration when it has a cutoff), then
    :func:`sibscan.verdict.headline.headline`."""
    return scan_headline(scan_dir, calibration=cal if cal.cutoff is not None else None, force=force,
                         definition=(cal.extra or {}).get("definition"))


def describe(cal: Calibration, head: Optional[dict] = None) -> List[str]:
    """Lines for people: the headline (when given), the cutoff and its interval, the evidence, advice."""
    lines = []
    if head is not None:
        lines.append(head["text"])
    n, extra = cal.n_labels, cal.extra or {}
    unused = extra.get("n_labelled_outside_population") or 0
    lines.append(f"{labeller.noun(extra.get('labeller'))}: {n.get('same', 0)} same, {n.get('different', 0)} different, "
                 f"{n.get('skip', 0)} skipped"
                 + (f"; {unused} more in labels.jsonl not used (pairs this scan does not score)" if unused else "")
                 + (f"; {extra['n_labelled_not_needed']} about exact twins or unscored pairs, which need no answer"
                    if extra.get("n_labelled_not_needed") else "")
                 + (f" ('same' means: {extra['definition']})" if extra.get("definition") else ""))
    if "controls" in extra:  # calibrations before control pairs did not record them: nothing to say about those
        lines.append(answers_line(ControlAnswers(**extra["controls"])))
    if cal.cutoff is not None:
        iv = f" (95% interval {fmt.span(*cal.interval)})" if cal.interval else ""
        lines.append(f"cutoff: {fmt.score(cal.cutoff)} on the {cal.score} score{iv}, rule {cal.rule}")
    else:
        lines.append(f"cutoff: none (rule {cal.rule})" if cal.rule else "cutoff: none")
    e = cal.estimates or {}
    if e.get("precision") is not None or e.get("recall") is not None:
        f3 = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        said = labels_phrase(e.get("decided_by_labels"), labeller.by(extra.get("labeller")))
        lines.append(f"at the cutoff: precision {f3(e.get('precision'))}, recall {f3(e.get('recall'))} (model "
                     f"estimates, by score), {e.get('flagged')} test items flagged" + (f" ({said})" if said else ""))
    b = e.get("below_range")
    if b:
        lines.append(f"below the candidate range: {b['same']} of {b['labelled']} labelled pairs were 'same' ({b['n']} "
                     "pairs there)")
    chance = chance_sentence(e.get("expected_chance_siblings"), e.get("flagged"), baseline=cal.baseline,
                             extrapolated=bool(e.get("chance_extrapolated")))
    if chance:
        lines.append(chance)
    if e.get("warning"):
        lines.append(f"warning: {e['warning']}")
    if not cal.ok and (head is None or head["state"] != "needs_labels"):  # a needs_labels sentence says why
        lines.append(f"the labels cannot support a cutoff yet: {cal.status}")
    for a in cal.advice:
        lines.append(f"  - {a}")
    if cal.path is not None:
        lines.append(f"written: {Path(cal.path) / 'cutoff.json'}")
    return lines
