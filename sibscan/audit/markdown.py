"""The audit as Markdown: the honest-reporting table, the checks, the metrics by formula, the limitations.

:func:`honest_reporting` is the section a scan's ``report.md`` carries too, so the two never differ.
"""
from __future__ import annotations

from typing import List, Optional

from ..report.markdown import pct
from .result import CHECK_NAMES, AuditResult
from .seeds import fmt, format_value

__all__ = ["honest_reporting", "render_audit_markdown", "sibling_cell"]


def _ours(m: dict) -> str:
    return format_value(m, runs=False)


def sibling_cell(sib: Optional[dict]) -> str:
    """The sibling-rate cell: the rate with its interval and what it counts, or "not assessed"."""
    if not sib or sib.get("rate") is None:
        return "not assessed"
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
        ``AuditResult.reporting``.
    limitations : list of str
        ``AuditResult.limitations`` (and any the caller adds).
    """
    lines = [f"{heading} Honest reporting", ""]
    metrics = reporting.get("metrics") or {}
    seeds = reporting.get("seeds") or {}
    runs = seeds.get("n_runs") or 0
    seed_text = str(runs) + (f" ({', '.join(map(str, seeds['values']))})" if seeds.get("values") else "")
    val = reporting.get("validation_split", "not stated")
    sib = sibling_cell(reporting.get("sibling_rate"))
    lines += ["| metric | ours (mean ± std) | seeds | published (source) | validation split | sibling rate |",
              "|---|---|---|---|---|---|"]
    if not metrics:
        lines.append(f"| — (no predictions audited) | — | {seed_text} | — | {val} | {sib} |")
    for mid, m in metrics.items():
        pub = (reporting.get("published") or {}).get(mid)
        pub_text = "—" if pub is None else f"{fmt(pub['value'])} ({pub.get('source') or 'source not given'})"
        lines.append(f"| {m['name']}: `{m['formula']}` | {_ours(m)} | {seed_text} | {pub_text} | {val} | {sib} |")
    lines += ["", f"{heading}# Limitations", ""]
    lines += [f"- {text}" for text in limitations] or ["- none found by the checks that were run"]
    return lines + [""]


def render_audit_markdown(result: AuditResult) -> str:
    """``audit.md``: verdict, honest-reporting table, checks, metrics with every run, limitations."""
    verdict = "passed" if result.passed else "FAILED"
    lines = ["# Evaluation audit", "",
             f"**{verdict}**: {sum(c.passed for c in result.checks.values())} of {len(result.checks)} checks passed"
             + (f"; task {result.task}, {result.n_items} test items, {result.n_runs} run(s)" if result.task else "") + ".",
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
            lines.append(f"| `{mid}` | {m['formula']} | " + " | ".join(cells) + f" | {_ours(m)} |")
        notes = [f"- `{mid}`: {m['note']}" for mid, m in result.metrics.items() if m.get("note")]
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
