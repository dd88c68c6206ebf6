"""The contamination report as one self-contained HTML page: the summary, each source's
threshold and where it came from, the methods' AUC when labels were given, and every example
with its longest verbatim run highlighted (``<mark>``)."""
from __future__ import annotations

import re
import unicodedata
from html import escape
from pathlib import Path
from typing import List, Optional

from ..atomic import write_text
from .result import ContaminationResult

__all__ = ["render_html", "write_html", "highlight_run"]

_WORD = re.compile(r"\w+")
_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
th{background:#f3f3f3}mark{background:#ffd54f}.flag{color:#b00020;font-weight:600}.text{max-width:640px}
.muted{color:#666}"""


def highlight_run(text: str, start_word: int, n_words: int) -> str:
    """``text`` (NFKC-normalised, HTML-escaped) with words ``start_word … start_word + n_words - 1``
    wrapped in ``<mark>``; word positions as the n-gram tokeniser counts them."""
    text = unicodedata.normalize("NFKC", text)
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if n_words <= 0 or start_word >= len(spans):
        return escape(text)
    a = spans[start_word][0]
    b = spans[min(len(spans), start_word + n_words) - 1][1]
    return escape(text[:a]) + "<mark>" + escape(text[a:b]) + "</mark>" + escape(text[b:])


def _fmt(x, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def render_html(result: ContaminationResult, max_examples: Optional[int] = 2000) -> str:
    """The report page (flagged examples first; at most ``max_examples`` rows)."""
    d = result.to_dict()
    s = d["summary"]
    f = s["flagged"]
    parts: List[str] = ["<!doctype html><meta charset='utf-8'><title>sibscan "
                        f"contamination</title><style>{_CSS}</style>",
                        "<h1>Benchmark contamination</h1>"]
    rate = "not assessed" if f["rate"] is None else f"{f['rate']:.1%}"
    parts.append(f"<p><b>{f['count']}</b> of {f['n']} examples flagged ({rate}); {s['n_unscorable']} shorter than "
                 f"n={result.config.n} words (unscorable: listed, not counted as clean); {s['n_skipped']} skipped.</p>")
    if d["sources"]:
        rows = "".join(
            f"<tr><td>{escape(name)}</td><td>{v['n_docs']:,}</td><td>{v['n_stored']:,}</td>"
            f"<td>{v['overlap_threshold']:.3f}</td><td>{escape(v['threshold_from'])}"
            + ("" if not v["controls"] else
               f" ({v['controls']['n_controls']} controls; {v['controls']['n_needed']} needed; "
               f"{'well estimated' if v['controls']['is_well_estimated'] else 'NOT well estimated'})")
            + "</td></tr>" for name, v in d["sources"].items())
        parts.append("<h2>Sources</h2><table><tr><th>source</th><th>documents</th><th>n-grams stored</th>"
                     f"<th>overlap threshold</th><th>from</th></tr>{rows}</table>")
    ev = d.get("evaluation")
    if ev:
        rows = "".join(f"<tr><td>{escape(m)}</td><td>{_fmt(a, '.3f')}</td>"
                       f"<td>{_fmt(ev['weights'].get(m), '.2f')}</td></tr>" for m, a in ev["auc"].items())
        parts.append(f"<h2>Labelled examples ({ev['n_labelled']}, {ev['n_contaminated']} contaminated)</h2>"
                     f"<table><tr><th>method</th><th>AUC</th><th>weight</th></tr>{rows}</table>")
        fl = ev.get("flags")
        if fl:
            prec = fl.get("precision_at_prevalence")
            at = (f"; precision at prevalence {fl['prevalence']:.1%}: {_fmt(prec, '.3f')}, expected review queue "
                  f"{fl['review_queue_size']:.1f} of {s['n_examples']}") if "prevalence" in fl else ""
            left = ev.get("n_without_verdict", 0)
            unscored = (f"; {left} labelled example(s) without a verdict (shorter than n words) left out"
                        if left else "")
            parts.append(f"<p>Flags on labelled examples: recall {fl['tpr']:.3f} (of {fl['n_positive']} contaminated), "
                         f"false-positive rate {fl['fpr']:.3f} (of {fl['n_negative']} clean), over the examples with "
                         f"a verdict{escape(unscored)}{at}.</p>")
    recs = d["examples"]
    order = sorted(range(len(recs)), key=lambda i: (not recs[i]["flagged"], -(recs[i]["z"] or -1e300)))
    if max_examples is not None:
        order = order[:max_examples]
    rows = []
    for i in order:
        r = recs[i]
        o = None if result.overlaps is None else result.overlaps[i]
        best = None if o is None else o.best
        text = result.examples.texts[i]
        body = highlight_run(text, best.run_start, best.longest_match_tokens) if best else escape(text)
        flag = {True: "<span class='flag'>FLAG</span> " + escape(", ".join(r["reasons"])), False: "-",
                None: "<span class='muted'>n/a</span>"}[r["flagged"]]
        rows.append(f"<tr><td>{escape(str(r['example_id']))}</td><td>{_fmt(r['overlap_fraction'])}</td>"
                    f"<td>{_fmt(r['longest_match_tokens'], 'd')}</td><td>{escape(r['best_source'] or '—')}</td>"
                    f"<td>{_fmt(r['z'], '.1f')}</td><td>{flag}</td><td class='text'>{body}</td></tr>")
    parts.append("<h2>Examples</h2><table><tr><th>example</th><th>overlap</th><th>run</th><th>source</th><th>z</th>"
                 f"<th>flag</th><th>text (longest run marked)</th></tr>{''.join(rows)}</table>")
    return "\n".join(parts)


def write_html(result: ContaminationResult, path) -> Path:
    """Write :func:`render_html` atomically to ``path``."""
    return write_text(path, render_html(result))
