"""A small self-contained SVG line plot (mean rank vs padding in the archive's HTML)."""
from __future__ import annotations

import html
from typing import Dict, List, Optional, Sequence

__all__ = ["svg_lines"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")


def svg_lines(xs: Sequence[float], series: Dict[str, List[Optional[float]]], xlabel: str, ylabel: str,
              width: int = 560, height: int = 300) -> str:
    """One polyline per series over shared x values; None values leave a gap. Returns ``<svg>…</svg>``."""
    left, right, top, bottom = 50, 130, 15, 40
    values = [v for ys in series.values() for v in ys if v is not None]
    if not xs or not values:
        return "<p>(nothing to plot)</p>"
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(values), max(values)
    if y1 - y0 < 1e-9:
        y0, y1 = y0 - 0.5, y1 + 0.5
    if x1 - x0 < 1e-12:
        x0, x1 = x0 - 0.5, x1 + 0.5
    pw, ph = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + (y - y0) / (y1 - y0) * ph  # rank 1 (best) at the top

    parts = [f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>',
             f'<text x="{left + pw / 2}" y="{height - 5}" text-anchor="middle">{html.escape(xlabel)}</text>',
             f'<text x="12" y="{top + ph / 2}" transform="rotate(-90 12 {top + ph / 2})" text-anchor="middle">'
             f"{html.escape(ylabel)}</text>"]
    for x in xs:
        parts.append(f'<text x="{sx(x):.1f}" y="{top + ph + 15}" text-anchor="middle">{x:g}</text>')
    for y in (y0, (y0 + y1) / 2, y1):
        parts.append(f'<text x="{left - 5}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
    for k, (name, ys) in enumerate(series.items()):
        colour = _COLOURS[k % len(_COLOURS)]
        pts = [f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys) if y is not None]
        parts.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{left + pw + 8}" y="{top + 14 * (k + 1)}" fill="{colour}">{html.escape(name)}</text>')
    return (f'<svg class="plot ranks" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>')
