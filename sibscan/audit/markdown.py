"""The audit as Markdown: the honest-reporting table, the checks, the metrics by formula, the limitations.

The honest-reporting section is :func:`sibscan.report.honest.honest_reporting`, the one a scan's
``report.md`` carries too, so the two never differ.
"""
from __future__ import annotations

from ..report.honest import CHECK_NAMES, fmt, format_value, honest_reporting
from .metrics import METRICS
from .result import AuditResult

__all__ = ["render_audit_markdown"]


def render_audit_markdown(result: AuditResult) -> str:
    """``audit.md``: verdict, honest-reporting table, checks, metrics with every run, limitations."""
    verdict = "passed" if result.passed else "FAILED"
    lines = ["# Evaluation audit", "",
             f"**{verdict}**: {sum(c.passed for c in result.checks.values())} of {len(result.checks)} checks passed"
             + (f"; task {result.task}, {result.n_items} test items, {result.n_runs} run(s)" if result.task
                else "") + ".",
             ""]
    lines += honest_reporting(result.reporting, result.limitations)
    lines += ["## Checks", "", "| check | result | what was found |", "|---|---|---|"]
    for name in CHECK_NAMES:
        c = result.checks.get(name)
        if c is not None:
            lines.append(f"| `{name}` | {'pass' if c.passed else '**FAIL**'} | {c.summary.replace('|', '/')} |")
    if result.metrics:
        lines += ["", "## Metrics by formula", "", "| id | formula | " + " | ".join(result.runs) + " | mean ± std |",
                  "|---|---|" + "---|" * len(result.runs) + "---|"]
        for mid, m in result.metrics.items():
            cells = [fmt(v) for v in m["values"].values()]
            lines.append(f"| `{mid}` | {m['formula']} | " + " | ".join(cells) + f" | {format_value(m, runs=False)} |")
        notes = [f"- `{mid}`: {m['note']}" for mid, m in result.metrics.items() if m.get("note")]
        notes += [f"- `{mid}` is {METRICS[mid].samples}." for mid in result.metrics if METRICS[mid].samples]
        if notes:
            lines += [""] + notes
    if result.record:
        rec = result.record
        lines += ["", "## Run record", "",
                  f"identity `{rec['identity'][:16]}`, started {rec['started']}, ended {rec['ended']}"
                  + (", resumed" if rec["resumed"] else "") + f"; {len(rec['inputs'])} inputs hashed (sha256); "
                  f"Python {rec['environment']['python']}, sibscan {rec['environment']['sibscan']}. "
                  "Re-check with `sibscan audit --verify DIR`."]
    return "\n".join(lines) + "\n"
