"""One self-contained HTML report (no CDN, no scripts fetched): inline SVG plots and a pair gallery.

Everything shown comes from the report dict; the gallery additionally reads the listed pairs'
content from the scan (images inline, small ones scaled up by whole pixels so that a 32-px image
can be judged; text with differing words marked; numeric rows as SVG sparklines).  The plots are
drawn by :mod:`sibscan.report.plots`.  A report is shared, so by default it shows no absolute path
of this machine: a file under an input folder is shown relative to that folder
(``train/cats/001.png``), any other absolute path by its last part (``absolute_paths=True`` keeps
them as they are).
"""
from __future__ import annotations

import base64
import html
import io
import itertools
import json
import logging
import os
from pathlib import PurePath
from typing import Callable, Sequence

import numpy as np

from .. import labeller
from ..errors import SibscanError
from ..fmt import plural, score as fmt_score
from ..kernels.textalign import word_diff
from .gallery import exact_twins, galleries
from .markdown import accuracy_rows, class_rows, direction_rows, group_sentence, notes, sentence_with_accuracy
from ..fmt import pct
from .plots import svg_histogram, svg_sweep
from ..imageio import open_image

__all__ = ["render_html"]

log = logging.getLogger("sibscan.report")

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f4f4f4}.card{border:1px solid #ddd;padding:6px}
.gallery{display:grid;gap:8px;grid-template-columns:repeat(auto-fill,minmax(var(--card),1fr))}
.pair{display:flex;gap:12px}.card .what{font-size:12px;margin-bottom:4px;color:#333}
.side{flex:1;min-width:0;overflow-wrap:anywhere}.meta{color:#555;font-size:12px}mark{background:#ffe08a}
.twins{columns:3 16em;font-size:12px;color:#444}
.warn{background:#fff3cd;padding:6px}.headline{font-size:16px;background:#eef5ff;padding:8px}
pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}svg text{font:11px sans-serif}
img.thumb{image-rendering:pixelated;max-width:100%}
"""


def _e(x) -> str:
    return html.escape(str(x))


def _sparkline(values: np.ndarray, w: int = 220, h: int = 50) -> str:
    v = np.asarray(values, float).ravel()
    v = v[np.isfinite(v)]
    if v.size < 2:
        return "<i>(no values)</i>"
    lo, hi = float(v.min()), float(v.max())
    ys = (h - 4) - (v - lo) / ((hi - lo) or 1) * (h - 8)
    xs = np.linspace(2, w - 2, v.size)
    pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys))
    return (f'<svg class="spark" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">'
            f'<polyline points="{pts}" fill="none" stroke="#333"/></svg>')


def _thumb(path: str, size: int = 160, shown: Callable[[str], str] = str) -> str:
    """An image inline at about ``size`` px: larger ones shrunk (JPEG); smaller ones scaled up by a whole
    factor with nearest-neighbour sampling (PNG), so each source pixel stays a sharp block."""
    from PIL import Image

    try:
        im = open_image(path)
    except SibscanError as exc:
        return f"<i>{_e(str(exc).replace(str(path), shown(path)))}</i>"
    w, h = im.size
    buf = io.BytesIO()
    if max(w, h) > size:
        im.thumbnail((size, size))
        im.save(buf, format="JPEG", quality=85)
        mime = "jpeg"
    else:
        factor = max(1, size // max(w, h))
        im = im.resize((w * factor, h * factor), Image.Resampling.NEAREST)
        im.save(buf, format="PNG")
        mime = "png"
    return (f'<img class="thumb" alt="{_e(shown(path))}" title="{_e(shown(path))} ({w}×{h} px)" width="{im.size[0]}" '
            f'height="{im.size[1]}" src="data:image/{mime};base64,{base64.b64encode(buf.getvalue()).decode()}">')


def _marked(words) -> str:
    """``(word, changed)`` pairs as HTML, each run of changed words in one ``<mark>``."""
    runs = itertools.groupby(words, key=lambda wc: wc[1])
    return " ".join(f"<mark>{_e(' '.join(w for w, _ in run))}</mark>" if changed else _e(" ".join(w for w, _ in run))
                    for changed, run in runs)


def _diff_words(a: str, b: str):
    """Both texts as HTML with the words that differ between them marked."""
    wa, wb = word_diff(a, b)
    return _marked(wa), _marked(wb)


def _content_cells(pairs: Sequence[dict], test, train, max_chars: int = 1200, shown: Callable[[str], str] = str):
    """(test html, train html) per pair from the items' content."""
    cells = []
    for p in pairs:
        ti, ri = p["test_index"], p["train_index"]
        if test is None or train is None:
            cells.append(("", ""))
        elif test.modality == "image":
            cells.append((_thumb(test.paths[ti], shown=shown), _thumb(train.paths[ri], shown=shown)))
        elif test.modality == "text":
            cells.append(_diff_words(test.texts[ti][:max_chars], train.texts[ri][:max_chars]))
        else:
            cells.append((_sparkline(test.values[ti]), _sparkline(train.values[ri])))
    return cells


#: the narrowest a pair's card in a gallery grid may be, per modality: two thumbnails side by side,
#: two sparklines, or (text) the page's width, one pair a row, as a paragraph needs
_CARD_WIDTH = {"image": "340px", "text": "100%"}


def _pairs_html(pairs: Sequence[dict], test, train, shown: Callable[[str], str] = str, by: str = "by hand") -> str:
    """A gallery: one card per pair (test and train side by side), the cards in a grid."""
    if not pairs:
        return "<p><i>none</i></p>"
    out = []
    for p, (a, b) in zip(pairs, _content_cells(pairs, test, train, shown=shown)):
        flag = ("exact twin" if p["exact"] else f"score {fmt_score(p['score'])}" if p["score"] is not None
                else "no score")
        lab = "" if p["label_match"] is None else (" · labels agree" if p["label_match"] else " · <b>labels differ</b>")
        det = f" · {_e(p['detail'])}" if p.get("detail") else ""
        det += f" · <b>labelled {p['hand_label']} {_e(by)}</b>" if p.get("hand_label") else ""
        out.append(
            f'<div class="card"><div class="what">{flag}{det}{lab}</div>'
            f'<div class="pair"><div class="side"><div class="meta">test '
            f'{_e(p["test_id"])}{"" if p["test_label"] is None else " [" + _e(p["test_label"]) + "]"}</div>{a}</div>'
            f'<div class="side"><div class="meta">train {_e(p["train_id"])}'
            f'{"" if p["train_label"] is None else " [" + _e(p["train_label"]) + "]"}</div>{b}</div></div></div>')
    modality = getattr(test, "modality", None)
    return f'<div class="gallery" style="--card:{_CARD_WIDTH.get(modality, "480px")}">' + "\n".join(out) + "</div>"


def _galleries_html(report: dict, test, train, shown: Callable[[str], str], by: str) -> str:
    """The pair galleries (each pair once, :func:`sibscan.report.gallery.galleries`), exact twins last as
    a count and a short list."""
    body = []
    for g in galleries(report):
        body.append(f"<h2>{_e(g.title)}</h2><p class='meta'>{_e(g.about)}.</p>"
                    + _pairs_html(g.pairs, test, train, shown, by))
    tw = exact_twins(report)
    body.append("<h2>Exact twins</h2>")
    if not tw.count:
        body.append("<p>No test item has an exact copy in train.</p>")
    else:
        more = f"; the first {len(tw.listed)}" if len(tw.listed) < tw.count else ""
        body.append(f"<p>{plural(tw.count, 'test item')} {'has' if tw.count == 1 else 'have'} a byte-for-byte copy in "
                    f"train (same content fingerprint), not shown as pictures: their two sides are the same{more}:</p>"
                    "<ul class='twins'>"
                    + "".join(f"<li>test {_e(a)} = train {_e(b)}</li>" for a, b in tw.listed) + "</ul>")
    return "".join(body)


def _table(head, rows) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _path_shower(report: dict, test, train, absolute: bool) -> Callable[[str], str]:
    """How a path is shown: relative to the input folder it lies in (named by that folder), else by its
    last part; unchanged with ``absolute``."""
    if absolute:
        return str
    roots = []
    inputs = (report.get("manifest") or {}).get("inputs") or {}
    for source in [getattr(s, "source", None) for s in (test, train)] + [v.get("source") for v in inputs.values()]:
        if source and os.path.isabs(str(source)):
            root = PurePath(str(source))
            roots.append(root if os.path.isdir(root) or not root.suffix else root.parent)
    roots.sort(key=lambda r: -len(r.parts))  # the deepest folder that holds a path names it

    def shown(path: str) -> str:
        p = PurePath(str(path))
        for root in roots:
            if p == root or root in p.parents:
                return PurePath(root.name, p.relative_to(root)).as_posix()
        return p.name or str(path)

    return shown


def _public(obj, shown: Callable[[str], str]):
    """A JSON value with every absolute path in it passed through ``shown``."""
    if isinstance(obj, dict):
        return {k: _public(v, shown) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_public(v, shown) for v in obj]
    if isinstance(obj, str) and len(obj) > 1 and os.path.isabs(obj.split(", row ")[0]):
        head, sep, tail = obj.partition(", row ")  # a skipped item's "where": "/path/file, row 7"
        return shown(head) + sep + tail
    return obj


def render_html(report: dict, test=None, train=None, *, absolute_paths: bool = False) -> str:
    """The HTML page for ``report``; ``test``/``train`` Items (optional) fill the pair gallery.

    ``absolute_paths=False`` (the default) shows paths relative to the input folders (see the module
    docstring), so a shared report does not carry this machine's layout.
    """
    shown = _path_shower(report, test, train, absolute_paths)
    cut, scan = report["cutoff"], report["scan"]
    c, interval = cut.get("value"), cut.get("interval")
    body = [f"<h1>sibscan report</h1><p class='headline'>{_e(sentence_with_accuracy(report))}.</p>"]
    for line in notes(report):
        cls = " class='warn'" if line.startswith(("Warning", "Note")) else ""
        body.append(f"<p{cls}>{_e(line)}</p>")
    body.append("<h2>Exact twins and near copies</h2>" + _table(*direction_rows(report)))
    body.append("<h2>Similarity of each test item's nearest training item</h2>"
                + svg_histogram(report["histogram"], c, interval))
    body.append("<h2>Sweep over the cutoff</h2>"
                + svg_sweep(report["sweep"], c, interval, focus=report["histogram"].get("focus")))
    if report.get("accuracy"):
        body.append("<h2>Accuracy</h2>" + _table(*accuracy_rows(report)))
    if report.get("per_class"):
        body.append("<h2>Per class</h2>" + _table(*class_rows(report)))
    ss = report["shared_sources"]
    if ss.get("available"):
        body.append("<h2>Shared sources</h2>"
                    + f"<p>{ss['count']} of {ss['n']} test items ({pct(ss['rate'])}) come from a "
                    f"source that also occurs in train.</p>"
                    + _table(["source", "test items", "train items"],
                             [[t["source"], t["n_test"], t["n_train"]] for t in ss["top"]]))
    body.append(_galleries_html(report, test, train, shown, labeller.by(report["headline"].get("labeller"))))
    lc = report["label_conflicts"]
    listed = "" if len(lc["groups"]) >= lc["n_groups"] else f" The {len(lc['groups'])} largest are listed."
    groups_line = f" {html.escape(group_sentence(lc))}" if lc.get("linkage") else ""
    body.append(f"<h2>Label conflicts</h2><p>{lc['n_groups']} sibling group(s), {lc['n_items']} items."
                f"{listed}{groups_line}</p>")
    if lc["groups"]:
        body.append(_table(["group", "size", "exact", "labels", "members"],
                           [[g["group"], g["size"], g["exact"], ", ".join(g["labels"]),
                             "; ".join(f"{m['split']}:{m['id']}={m['label']}" for m in g["members"])]
                            for g in lc["groups"]]))
    body.extend(sec["html"] for sec in report.get("audits", {}).values())  # sections left by audits
    body.append(f"<h2>Manifest</h2><pre>{_e(json.dumps(_public(report['manifest'], shown), indent=2))}</pre>")
    title = f"sibscan report — {_e(scan['modality'])}, {plural(scan['n_test'], 'test item')}"
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")
