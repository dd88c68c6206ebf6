"""The paste-able Markdown block, rendered from the report dict alone.

Text that comes from the data (labels, ids, identities) is escaped: a ``|`` would split a table
cell, and raw HTML (``<img onerror=...>``) would be live in renderers that pass HTML through.
"""
from __future__ import annotations

import html
import re
from typing import Optional

from ..calibration.baseline import format_expected

__all__ = ["render_markdown", "headline", "pct", "pp", "accuracy_parts", "md_text"]

_MD_PUNCT = re.compile(r"([\\`*_\[\]|])")


def md_text(x) -> str:
    """``x`` as inert Markdown text on one line: HTML escaped, Markdown punctuation and ``|`` backslashed."""
    text = " ".join(str(x).split())
    return _MD_PUNCT.sub(r"\\\1", html.escape(text, quote=False))


def _code(x) -> str:
    """``x`` as an inline code span (long enough a fence for backticks inside it)."""
    text = " ".join(str(x).split())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if "`" in text else f"`{text}`"


def pct(x: Optional[float], digits: int = 1) -> str:
    """``0.0601 -> "6.0 %"``; ``None -> "n/a"``."""
    return "n/a" if x is None else f"{100 * x:.{digits}f} %"


def pp(x: Optional[float]) -> str:
    """A difference of two rates in percentage points: ``-0.1 -> "-10.0 pp"``."""
    return "n/a" if x is None else f"{100 * x:+.1f} pp"


def _ci(ci) -> str:
    return "" if not ci or None in ci else f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f} %"


def _part(d: Optional[dict]):
    """(accuracy, n, ci) of one side of an accuracy split, tolerant of key names."""
    if not d:
        return None, 0, None
    acc = d.get("accuracy", d.get("rate"))
    n = d.get("n", d.get("count", 0))
    return acc, n, d.get("ci")


def accuracy_parts(split: Optional[dict]) -> dict:
    """``{all, masked, rest: (accuracy, n, ci), difference}`` from one ``accuracy_split`` dict."""
    if not split:
        return {}
    diff = split.get("difference")
    if isinstance(diff, dict):
        diff = diff.get("value", diff.get("difference"))
    return {"all": _part(split.get("all")), "masked": _part(split.get("masked")),
            "rest": _part(split.get("rest")), "difference": diff}


def _cutoff_phrase(cut: dict) -> str:
    if cut.get("value") is None:
        return "counting exact twins only (no cutoff: run 'sibscan calibrate')"
    how = cut.get("source", "")
    labels = cut.get("n_labels")
    if isinstance(labels, dict) and labels:
        total = labels.get("total", sum(v for v in labels.values() if isinstance(v, (int, float))))
        how += f", {int(total)} labels"
    return f"at cutoff {cut['value']:.3g} ({how})"


def headline(report: dict) -> str:
    """The one sentence: accuracy, sibling rate with its cutoff, accuracy on the rest."""
    tt = report["sibling_rate"]["test_to_train"]
    cut = report["cutoff"]
    n_test = report["scan"]["n_test"]
    rate = tt["any"]["rate"]
    sib = f"{pct(rate)} of test items have a training sibling {_cutoff_phrase(cut)}"
    acc = accuracy_parts((report.get("accuracy") or {}).get("siblings"))
    if acc:
        a_all, n_all, _ = acc["all"]
        a_rest, n_rest, _ = acc["rest"]
        return f"accuracy {pct(a_all)} (n={n_all:,}); {sib}; on the rest: {pct(a_rest)} (n={n_rest:,})"
    return f"{sib} (n={n_test:,}; {pct(tt['exact']['rate'])} exact twins, {pct(tt['near']['rate'])} near)"


def _table(head, rows) -> list:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
    return out


def render_markdown(report: dict) -> str:
    """The Markdown report: headline, sibling rates, accuracy split, per class, conflicts, sources."""
    scan, cut, sr = report["scan"], report["cutoff"], report["sibling_rate"]
    enc = (scan.get("encoder") or {}).get("identity", "?")
    ver = (scan.get("verifier") or {}) or {}
    lines = ["### Sibling scan", "", headline(report) + ".", ""]
    if cut.get("source") == "calibrated" and cut.get("status") not in (None, "ok"):
        lines += [f"Note: the calibration's labels cannot support this cutoff yet ({cut['status']}); "
                  "label more pairs with `sibscan calibrate`.", ""]
    lines.append(f"sibscan report (schema {report['schema_version']}), {scan['modality']} items, "
                 f"{scan['n_train']:,} train / {scan['n_test']:,} test, encoder {_code(enc)}"
                 + (f", verifier {_code(ver.get('identity'))}" if ver.get("identity") else "") + ".")
    tt = sr["test_to_train"]
    if cut.get("interval") and tt.get("at_interval"):
        lo, hi = tt["at_interval"]
        lines.append(f"Over the cutoff interval {cut['interval'][0]:.3g}–{cut['interval'][1]:.3g} the sibling rate runs "
                     f"{pct(lo)}–{pct(hi)}.")
    if tt.get("expected_chance_siblings") is not None:
        lines.append(f"Expected chance siblings at this cutoff (random-pair baseline): "
                     f"{format_expected(tt['expected_chance_siblings'])} of {tt['any']['count']} found.")
    if report.get("baseline_warning"):
        lines.append(f"Warning: {report['baseline_warning']}")
    lines += ["", *_table(
        ["direction", "exact", "near", "any", "95 % CI"],
        [[name, f"{d['exact']['count']} ({pct(d['exact']['rate'])})", f"{d['near']['count']} ({pct(d['near']['rate'])})",
          f"{d['any']['count']} / {d['any']['n']} ({pct(d['any']['rate'])})", _ci(d["any"]["ci"])]
         for name, d in (("test → train", tt), ("train → test", sr["train_to_test"]), ("within test", sr["within_test"]))
         if d.get("available", True)])]
    acc = report.get("accuracy")
    if acc:
        rows = []
        for name, key in (("sibling rows", "siblings"), ("exact twins", "exact_twins"), ("shared sources", "shared_sources")):
            p = accuracy_parts(acc.get(key))
            if not p:
                continue
            if not rows:
                a, n, ci = p["all"]
                rows.append(["all test rows", pct(a), f"{n:,}", _ci(ci), ""])
            for side, label in (("masked", name), ("rest", f"the rest (not {name})")):
                a, n, ci = p[side]
                rows.append([label, pct(a), f"{n:,}", _ci(ci), ""])
            rows[-1][4] = pp(p["difference"])
        lines += ["", *_table(["rows", "accuracy", "n", "95 % CI", "difference"], rows)]
    if report.get("per_class"):
        lines += ["", *_table(
            ["class", "test items", "exact", "near", "sibling rate", "conflict groups"],
            [[c["label"], c["n_test"], c["exact"], c["near"], pct(c["rate"]), c["conflict_groups"]] for c in report["per_class"]])]
    lc = report["label_conflicts"]
    lines += ["", f"Label conflicts: {lc['n_groups']} sibling group(s) ({lc['n_items']} items) carry more than one label."]
    ss = report["shared_sources"]
    if ss.get("available"):
        lines.append(f"Shared sources: {ss['count']} of {ss['n']} test items ({pct(ss['rate'])}) come from a source "
                     f"({ss['n_sources_shared']} in all) that also occurs in train.")
    for sec in report.get("audits", {}).values():  # sections left by audits (sibscan temporal, ...)
        lines += ["", sec["markdown"].rstrip("\n")]
    return "\n".join(lines) + "\n"
