"""The honest-reporting section: an evaluation audit (``sibscan audit``) as a scan's report shows it.

An audit run with ``--scan DIR`` writes ``DIR/audits/evaluation/audit.json`` (beside the sections
other audits leave in ``DIR/audits``, :mod:`sibscan.report.audits`); :func:`load_audit` reads it back
(marking it stale when it was made for other scan data), :func:`evaluation_section` makes it the
report's ``evaluation`` audit section (report.json/md/html), and ``sibscan check --require`` gates on
its checks. Unlike the other sections it is rendered here, by the report, not left pre-rendered:
the sibling rate in its table is the report's own (:func:`sibling_rate_record`), at the cutoff the
report uses — one quantity, one value. The audit package renders its own ``audit.md`` with
:func:`honest_reporting` too, so the two never differ.
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import List, Optional

from .. import labeller
from ..errors import SibscanError
from ..fmt import score as fmt_score
from ..verdict.headline import ESTIMATED
from ..stats import wilson_interval
from .audits import AUDITS_DIR
from ..fmt import pct

__all__ = ["AUDIT_DIR", "CHECK_NAMES", "SECTION", "check_name", "evaluation_section", "fmt", "format_value",
           "honest_reporting", "load_audit", "sibling_cell", "sibling_rate_record"]

#: the evaluation audit's name among the report's audit sections
SECTION = "evaluation"
#: where ``sibscan audit --scan DIR`` records itself inside the scan directory
AUDIT_DIR = f"{AUDITS_DIR}/{SECTION}"
#: every check an audit can run, in the order they are reported
CHECK_NAMES = ("nan_free", "not_targets", "init_window", "near_perfect_share", "denominator", "val_split", "selection")


def check_name(text: str) -> str:
    """``"nan-free"`` or ``"nan_free"`` -> ``"nan_free"``; an unknown name lists the valid ones."""
    name = text.strip().lower().replace("-", "_")
    if name not in CHECK_NAMES:
        valid = ", ".join(n.replace("_", "-") for n in CHECK_NAMES)
        raise SibscanError(f"unknown audit check {text!r}; available: {valid}")
    return name


def fmt(x: Optional[float]) -> str:
    """One metric value as every output prints it: 4 decimals (4 significant digits when tiny or huge)."""
    if x is None:
        return "—"
    return f"{x:.4f}" if 1e-3 <= abs(x) < 1e4 or x == 0 else f"{x:.4g}"


def format_value(agg: dict, runs: bool = True) -> str:
    """``"0.7450 ± 0.0120 (3 runs)"``, ``"0.7450 (1 run)"`` or ``"undefined"`` (``runs=False``: no count)."""
    if agg["mean"] is None:
        return "undefined"
    text = fmt(agg["mean"]) + ("" if agg["std"] is None else f" ± {fmt(agg['std'])}")
    if runs:
        text += f" ({agg['n_runs']} run{'s' if agg['n_runs'] != 1 else ''})"
    return text


def sibling_rate_record(head: dict) -> dict:
    """The test→train sibling rate of a scan's headline (report.json's ``headline``,
    :attr:`sibscan.verdict.Verdict.headline`), as the honest-reporting table shows it.

    ``count`` is always a count the headline states: test items flagged at its cutoff (``flagged.count``,
    hand labels deciding the pairs they answer), or without a cutoff the test items with an exact twin
    (all that is known then: ``state`` ``exact_only``).  ``rate`` is ``count / n``, except when
    calibrated: the headline's estimate."""
    if head.get("cutoff") is None:  # near siblings not assessed; the exact twins are counted all the same
        ex = head["exact_twins"]
        return {"kind": "exact twins only; no cutoff for near siblings", "count": ex["count"], "n": ex["n"],
                "rate": ex["rate"], "interval": wilson_interval(ex["count"], ex["n"]), "state": "exact_only"}
    if head.get("state") in ESTIMATED:  # the headline's estimate: one value in every table
        labels = f"{head['n_labels']} {labeller.noun(head.get('labeller'))}"
        kind = (f"calibrated with {labels}" if head["state"] == "calibrated" else
                f"estimated from {labels}, which do not support the cutoff yet")
        return {"kind": kind, "count": head["flagged"]["count"], "n": head["n"], "rate": head["estimate"],
                "interval": [head["lo"], head["hi"]], "state": head["state"]}
    fl = head["flagged"]
    return {"kind": f"exact or near at cutoff {fmt_score(head['cutoff'])}, {head.get('cutoff_source')}",
            "count": fl["count"],
            "n": fl["n"], "rate": fl["rate"], "interval": wilson_interval(fl["count"], fl["n"]),
            "state": head.get("cutoff_source")}


def sibling_cell(sib: Optional[dict]) -> str:
    """The sibling rate in words: the rate with its interval, what it counts and the count behind it, or
    "not assessed" (the honest-reporting table's cell, and the audit's train→test note)."""
    if not sib or sib.get("rate") is None:
        return "not assessed"
    if sib.get("state") in ESTIMATED:  # an estimate, not count / n: the flagged count is said apart
        text = f"{pct(sib['rate'])} ({sib['kind']}; {sib['count']} of {sib['n']} flagged at the cutoff)"
    else:
        text = f"{pct(sib['rate'])} ({sib['count']} of {sib['n']}, {sib['kind']})"
    if sib.get("interval"):
        lo, hi = sib["interval"]
        text += f", 95 % CI {pct(lo)}–{pct(hi)}"
    return text


def honest_reporting(reporting: dict, limitations: List[str], heading: str = "##") -> List[str]:
    """Markdown lines: the honest-reporting table (one row per metric) and the limitations list.

    Parameters
    ----------
    reporting : dict
        An audit's ``reporting`` block: ``metrics {id: {name, formula, mean, std, n_runs}}``,
        ``published {id: {value, source}}``, ``seeds {n_runs, values}``, ``validation_split`` (str),
        ``sibling_rate`` (:func:`sibling_rate_record` or None).
    limitations : list of str
    heading : str
        Markdown heading level of the section.
    """
    lines = [f"{heading} Honest reporting", ""]
    metrics = reporting.get("metrics") or {}
    seeds = reporting.get("seeds") or {}
    seed_text = str(seeds.get("n_runs") or 0) + (f" ({', '.join(map(str, seeds['values']))})" if seeds.get("values")
                                                 else "")
    val = reporting.get("validation_split", "not stated")
    sib = sibling_cell(reporting.get("sibling_rate"))
    lines += ["| metric | ours (mean ± std) | seeds | published (source) | validation split | sibling rate |",
              "|---|---|---|---|---|---|"]
    if not metrics:
        lines.append(f"| — (no predictions audited) | — | {seed_text} | — | {val} | {sib} |")
    for mid, m in metrics.items():
        pub = (reporting.get("published") or {}).get(mid)
        pub_text = "—" if pub is None else f"{fmt(pub['value'])} ({pub.get('source') or 'source not given'})"
        lines.append(f"| {m['name']}: `{m['formula']}` | {format_value(m, runs=False)} | {seed_text} | {pub_text} "
                     f"| {val} | {sib} |")
    lines += ["", f"{heading}# Limitations", ""]
    lines += [f"- {text}" for text in limitations] or ["- none found by the checks that were run"]
    return lines + [""]


def load_audit(scan_dir, dataset_fingerprint: Optional[str] = None) -> Optional[dict]:
    """``SCAN/audits/evaluation/audit.json`` (None when there is none), with ``stale`` set when the audit was made
    for scan data other than ``dataset_fingerprint`` and ``path`` where it was read."""
    path = Path(scan_dir) / AUDIT_DIR / "audit.json"
    if not path.is_file():
        return None
    try:
        audit = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SibscanError(f"{path}: cannot read the audit ({exc}); re-run sibscan audit --scan {scan_dir}") from None
    made_for = (audit.get("scan") or {}).get("dataset_fingerprint")
    audit["stale"] = dataset_fingerprint is not None and made_for != dataset_fingerprint
    audit["path"] = str(path)
    return audit


def evaluation_section(scan_dir, dataset_fingerprint: Optional[str], report: dict) -> Optional[dict]:
    """The scan's recorded evaluation audit as a report audit section ``{title, data, markdown, html}``, or
    None without one; the sibling rate in its table is ``report``'s own (one quantity, one value).

    ``data`` is ``{path, stale, passed, checks: {name: {passed, summary}}, reporting, limitations}``; an
    audit made for other scan data (``stale``) is named, not shown.
    """
    audit = load_audit(scan_dir, dataset_fingerprint)
    if audit is None:
        return None
    reporting = dict(audit.get("reporting") or {}, sibling_rate=sibling_rate_record(report["headline"]))
    data = {"path": audit["path"], "stale": audit["stale"], "passed": audit.get("passed"),
            "checks": {n: {"passed": c["passed"], "summary": (audit.get("summaries") or {}).get(n, "")}
                       for n, c in (audit.get("checks") or {}).items()},
            "reporting": reporting, "limitations": audit.get("limitations") or []}
    if audit["stale"]:
        text = (f"The evaluation audit in {audit['path']} was made for other scan data; re-run "
                f"`sibscan audit --scan {report['scan']['path']}` to put it back in this report.")
        return {"title": "Evaluation audit", "data": data, "markdown": text, "html": f"<p>{html.escape(text)}</p>"}
    markdown = "\n".join(honest_reporting(reporting, data["limitations"], heading="####")).rstrip("\n")
    return {"title": "Evaluation audit", "data": data, "markdown": markdown,
            "html": f"<h2>Evaluation audit</h2><pre>{html.escape(markdown)}</pre>"}
