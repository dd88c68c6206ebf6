"""The paste-able Markdown block, rendered from the report dict alone.

The figures (headline, the sentences under it, the rows of each table) are made here once, by
:func:`headline`, :func:`notes`, :func:`direction_rows`, :func:`accuracy_rows` and
:func:`class_rows`; the HTML report renders the same rows.

Text that comes from the data or the user (labels, ids, identities, the definition of "same") is
escaped where it is rendered as Markdown: a ``|`` would split a table cell, and raw HTML
(``<img onerror=...>``) would be live in renderers that pass HTML through.
"""
from __future__ import annotations

import html
import re
from typing import Callable, List, Optional

from ..fmt import pct, pp, span
from ..verdict.cutoffrule import supported

__all__ = ["render_markdown", "sentence_with_accuracy", "notes", "direction_rows", "accuracy_rows", "class_rows",
           "accuracy_parts", "md_text"]

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


NOT_ASSESSED = "not assessed"


def _ci(ci) -> str:
    return "" if not ci or None in ci else f"{pct(ci[0])} to {pct(ci[1])}"


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


def sentence_with_accuracy(report: dict) -> str:
    """The report's opening sentence: the headline's sentence (``report["headline"]["text"]``), with the
    accuracy on every test item before it and on the items not flagged after it when the report has
    predictions (else the headline's sentence alone)."""
    text = report["headline"]["text"]
    acc = accuracy_parts((report.get("accuracy") or {}).get("siblings"))
    if acc:
        a_all, n_all, _ = acc["all"]
        a_rest, n_rest, _ = acc["rest"]
        return (f"accuracy {pct(a_all)} (n={n_all:,}); {text}; "
                f"accuracy on the test items not flagged: {pct(a_rest)} (n={n_rest:,})")
    return text


def notes(report: dict, data: Callable[[str], str] = str) -> List[str]:
    """The sentences under the headline: the definition of "same", the calibration's verdict, the
    cutoff interval, chance siblings, warnings.  ``data`` renders the parts written by the user or
    named by the data (the definition, the identities in a note): :func:`md_text` for Markdown; the
    HTML page escapes whole sentences."""
    h, cut, tt = report["headline"], report["cutoff"], report["sibling_rate"]["test_to_train"]
    out = []
    if h.get("definition"):
        out.append(f"'Same' means: {data(h['definition'])}.")
    if h.get("note"):
        out.append(f"Note: {data(h['note'])}.")
    # a needs_labels headline says it in its sentence; a forced calibration's verdict is said here
    if cut.get("source") == "calibrated" and not supported(cut.get("status")) and h["state"] != "needs_labels":
        out.append(f"Note: the calibration's labels cannot support this cutoff yet ({cut['status']}); "
                   "label more pairs with `sibscan calibrate`.")
    if h.get("narrow_enough") is False:
        out.append("The interval is wider than max(0.5 pp, 25 % of the estimate): label more pairs to narrow it.")
    if cut.get("interval") and tt.get("at_interval"):
        lo, hi = tt["at_interval"]
        runs = f"stays at {pct(lo)}" if pct(lo) == pct(hi) else f"runs {pct(lo)} to {pct(hi)}"
        out.append(f"Over the cutoff's interval {span(*cut['interval'])} the share flagged {runs}.")
    chance = report.get("chance") or {}  # worded once, by sibscan.verdict.chance
    if chance.get("sentence"):
        out.append(f"{chance['sentence'][:1].upper()}{chance['sentence'][1:]}.")
    if chance.get("note"):
        out.append(f"Note: {chance['note']}.")
    if report.get("baseline_warning"):
        out.append(f"Warning: {report['baseline_warning']}")
    return out


def _share(d: dict) -> str:
    return NOT_ASSESSED if d.get("count") is None else f"{d['count']:,} ({pct(d['rate'])})"


def direction_rows(report: dict) -> tuple:
    """(header, rows) of the counts per direction: exact twins, near copies and all flagged at the cutoff."""
    sr = report["sibling_rate"]
    rows = [[name, _share(d["exact"]), _share(d["near"]), _share(d["any"]), f"{d['any']['n']:,}"]
            for name, d in (("test → train", sr["test_to_train"]), ("train → test", sr["train_to_test"]),
                            ("within test", sr["within_test"])) if d.get("available", True)]
    return ["direction", "exact twins", "near copies at the cutoff", "flagged (exact or near)", "items"], rows


def accuracy_rows(report: dict) -> tuple:
    """(header, rows) of the accuracy split: all rows, flagged rows, the rest, and the difference
    (flagged minus rest) on its own row."""
    acc = report.get("accuracy") or {}
    rows = []
    for name, key in (("flagged rows", "siblings"), ("exact twins", "exact_twins"),
                      ("shared sources", "shared_sources")):
        p = accuracy_parts(acc.get(key))
        if not p:
            continue
        if not rows:
            a, n, ci = p["all"]
            rows.append(["all test rows", pct(a), f"{n:,}", _ci(ci)])
        for side, label in (("masked", name), ("rest", f"not {name}")):
            a, n, ci = p[side]
            rows.append([label, pct(a), f"{n:,}", _ci(ci)])
        rows.append([f"difference ({name} − not)", pp(p["difference"]), "", ""])
    return ["rows", "accuracy", "n", "95 % CI"], rows


def class_rows(report: dict) -> tuple:
    """(header, rows) per test label: exact twins, near copies, the share flagged."""
    rows = [[c["label"], f"{c['n_test']:,}", c["exact"], NOT_ASSESSED if c["near"] is None else c["near"],
             NOT_ASSESSED if c["rate"] is None else pct(c["rate"]), c["conflict_groups"]]
            for c in report.get("per_class") or []]
    return ["class", "test items", "exact twins", "near copies", "flagged", "conflict groups"], rows


def _table(head, rows) -> list:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
    return out


def group_sentence(lc: dict) -> str:
    """One sentence on the sibling groups: linkage, the largest group and why it holds together."""
    big = lc.get("largest_group")
    text = f"Sibling groups ({lc['linkage']} linkage): "
    if big is None:
        text += "no group holds more than one item."
    else:
        text += (f"the largest, {big['group']}, holds {big['size']} items "
                 f"({big['n_train']} train, {big['n_test']} test; "
                 f"labels {', '.join(big['labels']) or 'none'}): {big['reason']}.")
    if lc["linkage"] == "complete":
        text += (f" {lc['pairs_between_groups']} sibling pair(s) at the cutoff were left between groups (their items "
                 "do not all pair with each other).")
    return text


def render_markdown(report: dict) -> str:
    """The Markdown report: headline, notes, counts per direction, accuracy split, per class, conflicts, sources."""
    scan = report["scan"]
    enc = (scan.get("encoder") or {}).get("identity", "?")
    ver = (scan.get("verifier") or {}) or {}
    lines = ["### Sibling scan", "", sentence_with_accuracy(report) + ".", ""]
    lines += notes(report, data=md_text)
    lines.append(f"sibscan report (schema {report['schema_version']}), {scan['modality']} items, "
                 f"{scan['n_train']:,} train / {scan['n_test']:,} test, encoder {_code(enc)}"
                 + (f", verifier {_code(ver.get('identity'))}" if ver.get("identity") else "") + ".")
    lines += ["", *_table(*direction_rows(report))]
    if report.get("accuracy"):
        lines += ["", *_table(*accuracy_rows(report))]
    if report.get("per_class"):
        lines += ["", *_table(*class_rows(report))]
    lc = report["label_conflicts"]
    lines += ["", f"Label conflicts: {lc['n_groups']} sibling group(s) ({lc['n_items']} items) "
                  "carry more than one label."]
    if lc.get("linkage"):
        lines.append(group_sentence(lc))
    ss = report["shared_sources"]
    if ss.get("available"):
        lines.append(f"Shared sources: {ss['count']} of {ss['n']} test items ({pct(ss['rate'])}) come from a source "
                     f"({ss['n_sources_shared']} in all) that also occurs in train.")
    for sec in report.get("audits", {}).values():  # sections left by audits (sibscan temporal, ...)
        lines += ["", sec["markdown"].rstrip("\n")]
    return "\n".join(lines) + "\n"
