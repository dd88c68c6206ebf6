"""Text, Markdown and HTML of the temporal results: one test's verdict, an archive's tables.

Everything here reads the dicts that :meth:`TemporalResult.to_dict` and
:func:`sibscan.temporal.summary.summarise` produce; no number is computed twice. The "temporal
information" section of ``sibscan report`` is :func:`report_section` (data) rendered by
:func:`section_markdown` / :func:`section_html`.
"""
from __future__ import annotations

import html
from typing import Any, Dict, List, Optional

from .plot import svg_lines
from .verdict import RULE, RULE_2STD

__all__ = ["archive_html", "archive_markdown", "report_section", "result_text", "section_html",
           "section_markdown", "verdict_phrase"]


def _acc(mean: Optional[float], std: Optional[float]) -> str:
    return "–" if mean is None else f"{mean:.3f} ± {std:.3f}"


def verdict_phrase(rec: Dict[str, Any]) -> str:
    """``"time matters"`` / ``"time does not matter (within 1 std)"`` / ``"… (within 2 std only)"``."""
    if rec["time_matters"] and rec["time_matters_2std"]:
        return "time matters"
    if rec["time_matters"]:
        return "time matters by the 1-std rule, not by the 2-std rule"
    return "time does not matter (within 1 std)"


def _why(rec: Dict[str, Any]) -> str:
    mo, so, mp, sp = (rec[k]
                      for k in ("acc_original_mean", "acc_original_std", "acc_permuted_mean", "acc_permuted_std"))
    if mp >= mo:
        return f"permuted {mp:.3f} >= original {mo:.3f}"
    rel = "<=" if mo - mp <= so + sp else ">"
    return f"|{mo:.3f} - {mp:.3f}| = {mo - mp:.3f} {rel} {so:.3f} + {sp:.3f} = {so + sp:.3f}"


def result_text(rec: Dict[str, Any]) -> str:
    """The terminal report of one permutation test (a :meth:`TemporalResult.to_dict`)."""
    ds = rec["dataset"]
    lines = [
        f"{ds['name']}: {ds['n_train']} train + {ds['n_test']} test series, length {ds['length']}"
        + (f", {ds['n_channels']} channels" if ds["n_channels"] > 1 else "") + f", {ds['n_classes']} classes",
        f"classifier {rec['classifier']}, {rec['runs']} run(s): run 0 the given split"
        + (", runs 1-{} stratified re-splits".format(rec["runs"] - 1) if rec["runs"] > 1 else ""),
        f"  original        {_acc(rec['acc_original_mean'], rec['acc_original_std'])}",
        f"  time permuted   {_acc(rec['acc_permuted_mean'], rec['acc_permuted_std'])}",
        f"verdict: {verdict_phrase(rec)} ({_why(rec)})",
        f"normalisation: {rec['normalisation']['applied']} — {rec['normalisation']['reason']}",
    ]
    if rec.get("invariance_check") is False:
        lines.append("warning: this classifier cannot see the time order, yet its accuracies differ: "
                     "check the input")
    return "\n".join(lines)


def report_section(rec: Dict[str, Any]) -> Dict[str, Any]:
    """The ``temporal`` section of ``report.json``: verdict, both accuracies with std, the rule."""
    keys = ("acc_original_mean", "acc_original_std", "acc_permuted_mean", "acc_permuted_std", "runs",
            "classifier", "time_matters", "time_matters_2std")
    return {**{k: rec[k] for k in keys}, "verdict": verdict_phrase(rec), "rule": RULE, "rule_2std": RULE_2STD,
            "normalisation": rec["normalisation"]["applied"], "seed": rec.get("seed")}


def section_markdown(sec: Dict[str, Any]) -> str:
    """The "Temporal information" section for report.md."""
    return "\n".join([
        "## Temporal information",
        "",
        f"Does the benchmark test time? Time-permutation test with **{sec['classifier']}** over "
        f"{sec['runs']} run(s): **{sec['verdict']}**.",
        "",
        f"| data | accuracy (mean ± std over {sec['runs']} runs) |",
        "|---|---|",
        f"| original | {_acc(sec['acc_original_mean'], sec['acc_original_std'])} |",
        f"| time axis permuted | {_acc(sec['acc_permuted_mean'], sec['acc_permuted_std'])} |",
        "",
        f"Rule (Zhang, Batista & Kanhere, PAKDD 2025): {sec['rule']}; {sec['rule_2std']}. "
        f"Normalisation before the test: {sec['normalisation']}.",
        "",
    ])


def section_html(sec: Dict[str, Any]) -> str:
    """The same section as an HTML fragment."""
    e = html.escape
    return (
        "<h2>Temporal information</h2>"
        f"<p>Time-permutation test with <b>{e(sec['classifier'])}</b> over {sec['runs']} run(s): "
        f"<b>{e(sec['verdict'])}</b>.</p>"
        f"<table><tr><th>data</th><th>accuracy (mean ± std over {sec['runs']} runs)</th></tr>"
        f"<tr><td>original</td><td>{_acc(sec['acc_original_mean'], sec['acc_original_std'])}</td></tr>"
        f"<tr><td>time axis permuted</td><td>{_acc(sec['acc_permuted_mean'], sec['acc_permuted_std'])}</td></tr>"
        "</table>"
        f"<p>Rule: {e(sec['rule'])}; {e(sec['rule_2std'])}. Normalisation: {e(sec['normalisation'])}.</p>"
    )


def _share(k: int, n: int) -> str:
    return f"{k} of {n} ({k / n * 100:.0f} %)" if n else "not assessed (no complete dataset)"


def archive_markdown(s: Dict[str, Any]) -> str:
    """``temporal.md`` of an archive run."""
    out: List[str] = [f"# Temporal information: {s['mode']} over {s['n_datasets']} dataset(s)", ""]
    if s["mode"] == "permutation":
        out += [f"Rule: {s['rule']}; {s['rule_2std']}.", "", "| classifier | time does not matter (1 std) | (2 std) |",
                "|---|---|---|"]
        for clf, sh in s["shares"].items():
            out.append(f"| {clf} | {_share(sh['does_not_matter'], sh['n'])} | "
                       f"{_share(sh['does_not_matter_2std'], sh['n'])} |")
        out += ["", "| dataset | classifier | original | permuted | verdict | normalisation |",
                "|---|---|---|---|---|---|"]
        for r in s["datasets"]:
            out.append(f"| {r['dataset']} | {r['classifier']} | {_acc(r['acc_original_mean'], r['acc_original_std'])} "
                       f"| {_acc(r['acc_permuted_mean'], r['acc_permuted_std'])} | {verdict_phrase(r)} | "
                       f"{r['normalisation']} |")
    else:
        levels = s["levels"]
        out += ["One-sided Wilcoxon signed-rank p-value of the drop (augmented < original), across datasets:", "",
                "| classifier | " + " | ".join(levels) + " |", "|---" * (len(levels) + 1) + "|"]
        for clf, tests in s["wilcoxon"].items():
            out.append(f"| {clf} | " + " | ".join(
                "not assessed" if tests[v]["p_value"] is None else f"{tests[v]['p_value']:.3g}" for v in levels) + " |")
        out += ["", "Mean rank per padding level (1 = most accurate):", "",
                "| classifier | " + " | ".join(s["variants"]) + " |", "|---" * (len(s["variants"]) + 1) + "|"]
        for clf, ranks in s["mean_rank"].items():
            out.append(f"| {clf} | " + " | ".join(f"{ranks[v]:.2f}" if v in ranks else "–"
                                                  for v in s["variants"]) + " |")
    if s["skipped"]:
        out += ["", "Skipped:", ""] + [f"- {x['dataset']}: {x['reason']}" for x in s["skipped"]]
    if s["incomplete"]:
        out += ["", f"Incomplete (not every run done; not counted): {', '.join(s['incomplete'])}"]
    return "\n".join(out) + "\n"


def archive_html(s: Dict[str, Any]) -> str:
    """``temporal.html``: the Markdown's tables, plus the mean-rank-vs-padding plot in augment mode."""
    e = html.escape
    body = [f"<h1>Temporal information: {e(s['mode'])} over {s['n_datasets']} dataset(s)</h1>"]
    if s["mode"] == "permutation":
        body.append(f"<p>Rule: {e(s['rule'])}; {e(s['rule_2std'])}.</p><table><tr><th>classifier</th>"
                    "<th>time does not matter (1 std)</th><th>(2 std)</th></tr>")
        for clf, sh in s["shares"].items():
            body.append(f"<tr><td>{e(clf)}</td><td>{_share(sh['does_not_matter'], sh['n'])}</td>"
                        f"<td>{_share(sh['does_not_matter_2std'], sh['n'])}</td></tr>")
        body.append("</table><table><tr><th>dataset</th><th>classifier</th><th>original</th><th>permuted</th>"
                    "<th>verdict</th><th>normalisation</th></tr>")
        for r in s["datasets"]:
            body.append(f"<tr><td>{e(r['dataset'])}</td><td>{e(r['classifier'])}</td>"
                        f"<td>{_acc(r['acc_original_mean'], r['acc_original_std'])}</td>"
                        f"<td>{_acc(r['acc_permuted_mean'], r['acc_permuted_std'])}</td>"
                        f"<td>{e(verdict_phrase(r))}</td><td>{e(r['normalisation'])}</td></tr>")
        body.append("</table>")
    else:
        xs = [0.0] + [float(v[3:]) for v in s["levels"]]
        series = {clf: [ranks.get(v) for v in s["variants"]] for clf, ranks in s["mean_rank"].items()}
        body.append("<h2>Mean rank vs padding</h2>"
                    + svg_lines(xs, series, "padding (fraction of length)", "mean rank"))
        body.append("<table><tr><th>classifier</th>" + "".join(f"<th>{e(v)} p</th>" for v in s["levels"]) + "</tr>")
        for clf, tests in s["wilcoxon"].items():
            body.append(f"<tr><td>{e(clf)}</td>" + "".join(
                "<td>not assessed</td>" if tests[v]["p_value"] is None else f"<td>{tests[v]['p_value']:.3g}</td>"
                for v in s["levels"]) + "</tr>")
        body.append("</table>")
    if s["skipped"]:
        body.append("<h2>Skipped</h2><ul>" + "".join(f"<li>{e(x['dataset'])}: {e(x['reason'])}</li>"
                                                     for x in s["skipped"]) + "</ul>")
    style = ("body{font:14px sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}svg text{font:11px sans-serif}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>sibscan temporal</title><style>{style}</style>"
            f"</head><body>{''.join(body)}</body></html>\n")
