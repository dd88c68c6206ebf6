"""A scan in a notebook cell (``Scan._repr_html_``): the headline, the histogram and the closest pairs.

An HTML fragment, not a page: its style is scoped under ``.sibscan-view`` so that it changes nothing
else in the notebook, and, like the report, it fetches nothing.
"""
from __future__ import annotations

import html

from ..fmt import plural
from .html import _pairs_html
from .markdown import sentence_with_accuracy
from .plots import svg_histogram

__all__ = ["render_notebook"]

_CSS = """
.sibscan-view{font:13px/1.4 system-ui,sans-serif;max-width:980px}
.sibscan-view .sibscan-headline{font-size:15px;background:#eef5ff;padding:8px;margin:4px 0}
.sibscan-view .pair{display:flex;gap:12px;border:1px solid #ddd;margin:6px 0;padding:6px}
.sibscan-view .side{flex:1;min-width:0;overflow-wrap:anywhere}.sibscan-view .meta{color:#555;font-size:12px}
.sibscan-view mark{background:#ffe08a}.sibscan-view img.thumb{image-rendering:pixelated;max-width:100%}
.sibscan-view h4{margin:10px 0 4px}
"""


def render_notebook(report: dict, test=None, train=None, n_pairs: int = 6) -> str:
    """The notebook view of ``report``; ``test``/``train`` Items fill the gallery of its closest pairs."""
    cut = report["cutoff"]
    scan = report["scan"]
    enc = (scan.get("encoder") or {}).get("identity", "?")
    pairs = report["closest_pairs"][:n_pairs]
    return (f'<div class="sibscan-view"><style>{_CSS}</style>'
            f'<div class="sibscan-headline">{html.escape(sentence_with_accuracy(report))}.</div>'
            f'<div class="meta">{html.escape(scan["modality"])} items, {scan["n_train"]:,} train / {scan["n_test"]:,} '
            f'test, encoder <code>{html.escape(str(enc))}</code>; '
            f'{plural(len(report.get("flagged", [])), "test item")} flagged '
            f'(<code>.to_pandas()</code> lists every test item)</div>'
            f'<h4>Best score of each test item against train</h4>'
            f'{svg_histogram(report["histogram"], cut.get("value"), cut.get("interval"))}'
            f'<h4>Closest pairs</h4><div class="sibscan-gallery">{_pairs_html(pairs, test, train)}</div></div>')
