"""The report's plots as self-contained SVG (no script, no CDN), drawn for people to read.

* The x axis is spent where the decision is: the range of the test items' scores (and the cutoff)
  gets most of the width; the random-pair baseline's body below it is shown compressed into a
  shaded strip, marked as such (the histogram's ``focus``, see ``sections.histogram``).
* Every label stays inside the drawing: tick labels at the ends are anchored inwards, the cutoff's
  label sits on whichever side of its line has room.
* The plot is as wide as the page (``width: 100%`` over a fixed viewBox).
* Hover values: every bar and every plotted point carries an SVG ``<title>`` (a browser tooltip).
"""
from __future__ import annotations

import html
from typing import List, Optional, Sequence

import numpy as np

from ..fmt import score as fmt_score

__all__ = ["svg_histogram", "svg_sweep"]

W, H = 720, 270
LEFT, RIGHT, TOP, BOTTOM = 54, 16, 36, 46
#: share of the plot's width given to the compressed part of the axis
BODY_SHARE = 0.16


def _e(x) -> str:
    return html.escape(str(x))


class _XAxis:
    """Value -> pixel, linear over ``[focus, x1]`` and compressed over ``[x0, focus]`` when there is a focus."""

    def __init__(self, x0: float, x1: float, focus: Optional[float]):
        self.x0, self.x1 = float(x0), float(x1)
        self.focus = focus if focus is not None and x0 < focus < x1 else None
        left, right = LEFT, W - RIGHT
        if self.focus is None:
            self.xs, self.px = [self.x0, self.x1], [left, right]
        else:
            split = left + BODY_SHARE * (right - left)
            self.xs, self.px = [self.x0, self.focus, self.x1], [left, split, right]

    def __call__(self, v: float) -> float:
        return float(np.interp(v, self.xs, self.px))

    def ticks(self) -> List[float]:
        lo = self.focus if self.focus is not None else self.x0
        step = _nice_step((self.x1 - lo) / 5)
        ticks = list(np.arange(np.ceil(lo / step) * step, self.x1 + step / 2, step))
        if self.focus is not None:
            ticks = [self.x0] + [t for t in ticks if self(t) - self(self.focus) > 22 or t == self.focus]
        return [float(t) for t in ticks if self.x0 - 1e-9 <= t <= self.x1 + 1e-9]


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    mag = 10 ** np.floor(np.log10(raw))
    return float(next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw))


def _tick_text(t: float, step_digits: int = 2) -> str:
    return f"{t:.{step_digits}f}".rstrip("0").rstrip(".") if abs(t) < 10 else f"{t:g}"


def _frame(ax: _XAxis, y1: float, xlabel: str, ylabel: str, legend: Sequence[tuple]) -> tuple:
    """Axes, ticks, labels, legend and the compressed strip; returns (parts, sy)."""
    bottom, top = H - BOTTOM, TOP
    sy = lambda v: bottom - min(max(v, 0.0), y1) / (y1 or 1) * (bottom - top)  # noqa: E731
    parts = []
    if ax.focus is not None:
        a, b = ax(ax.x0), ax(ax.focus)
        parts.append(f'<rect class="compressed" x="{a:.1f}" y="{top}" width="{b - a:.1f}" height="{bottom - top}" '
                     f'fill="#f2f2f2"><title>{_e(fmt_score(ax.x0))} to {_e(fmt_score(ax.focus))}: the random-pair '
                     'baseline\'s body, compressed on this axis</title></rect>')
        parts.append(f'<text x="{(a + b) / 2:.1f}" y="{top + 12}" text-anchor="middle" fill="#888">compressed</text>')
        # the break in the axis: two slanted strokes
        parts.append(f'<path d="M{b - 4:.1f},{bottom + 5} l4,-10 M{b:.1f},{bottom + 5} l4,-10" stroke="#444"/>')
    parts.append(f'<line x1="{LEFT}" y1="{bottom}" x2="{W - RIGHT}" y2="{bottom}" stroke="#444"/>')
    parts.append(f'<line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{bottom}" stroke="#444"/>')
    ticks = ax.ticks()
    for i, t in enumerate(ticks):
        x = ax(t)
        anchor = "start" if x - LEFT < 14 else "end" if W - RIGHT - x < 14 else "middle"
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#444"/><text '
                     f'class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="{anchor}">{_e(_tick_text(t))}</text>')
    for t in np.linspace(0, y1, 3):
        parts.append(f'<text class="tick" x="{LEFT - 5}" y="{sy(t) + 4:.1f}" text-anchor="end">{t:.2g}</text>')
    parts.append(f'<text x="{(LEFT + W - RIGHT) / 2:.1f}" y="{H - 6}" text-anchor="middle">{_e(xlabel)}</text>')
    parts.append(f'<text x="13" y="{(top + bottom) / 2:.1f}" transform="rotate(-90 13 {(top + bottom) / 2:.1f})" '
                 f'text-anchor="middle">{_e(ylabel)}</text>')
    x = LEFT
    for colour, text in legend:
        parts.append(f'<rect x="{x}" y="6" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{x + 14}" y="15" fill="{colour}">{_e(text)}</text>')
        x += 22 + 6.2 * len(text)
    return parts, sy


def _cutoff(ax: _XAxis, cutoff: Optional[float], interval) -> List[str]:
    """The shaded interval and the cutoff line, its label on the side of the line that has room."""
    parts = []
    if interval and None not in interval:
        a, b = ax(interval[0]), ax(interval[1])
        parts.append(f'<rect class="interval" x="{a:.1f}" y="{TOP}" width="{max(b - a, 1):.1f}" '
                     f'height="{H - BOTTOM - TOP}" fill="#2a2" opacity="0.12"><title>cutoff interval '
                     f'{_e(fmt_score(interval[0]))} to {_e(fmt_score(interval[1]))}</title></rect>')
    if cutoff is not None:
        x = ax(cutoff)
        label = f"cutoff {fmt_score(cutoff)}"
        room_right = W - RIGHT - x > 7 * len(label) + 6
        tx, anchor = (x + 4, "start") if room_right else (x - 4, "end")
        parts.append(f'<line class="cutoff" x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{H - BOTTOM}" stroke="#080" '
                     f'stroke-width="2"><title>{_e(label)}</title></line><text class="cutoff-label" x="{tx:.1f}" '
                     f'y="{TOP - 8}" text-anchor="{anchor}" fill="#080">{_e(label)}</text>')
    return parts


def _svg(cls: str, parts: List[str], title: str) -> str:
    return (f'<svg class="plot {cls}" viewBox="0 0 {W} {H}" width="100%" preserveAspectRatio="xMinYMin meet" '
            f'style="max-width:900px;height:auto" role="img" aria-label="{_e(title)}" '
            f'xmlns="http://www.w3.org/2000/svg"><style>text{{font:11px sans-serif}}</style>{"".join(parts)}</svg>')


def svg_histogram(hist: dict, cutoff: Optional[float], interval=None) -> str:
    """Histogram of the test items' best scores (bars), the random-pair baseline (line) and the cutoff."""
    edges = np.asarray(hist["edges"], float)
    dens = np.asarray(hist["nn_density"], float)
    counts = np.asarray(hist.get("nn_counts") or np.zeros(len(dens)), float)
    base = None if hist.get("baseline_density") is None else np.asarray(hist["baseline_density"], float)
    ax = _XAxis(edges[0], edges[-1], hist.get("focus"))
    centres = (edges[:-1] + edges[1:]) / 2
    in_focus = centres >= (ax.focus if ax.focus is not None else edges[0])
    tops = [float(dens.max()) if dens.size else 0.0]
    if base is not None and base[in_focus].size:
        tops.append(float(base[in_focus].max()))  # the baseline's peak may sit in the compressed body: clipped
    y1 = (max(tops) or 1.0) * 1.08
    legend = [("#6a9fd4", "test items' best score")] + ([("#d46a6a", "random-pair baseline")] if base is not None
                                                        else [])
    parts, sy = _frame(ax, y1, "best score against train (each test item's nearest training item)", "density", legend)
    for lo, hi, d, n in zip(edges[:-1], edges[1:], dens, counts):
        if d > 0:
            x0, x1 = ax(lo), ax(hi)
            parts.append(f'<rect x="{x0:.1f}" y="{sy(d):.1f}" width="{max(x1 - x0 - 1, 1):.1f}" '
                         f'height="{sy(0) - sy(d):.1f}" fill="#6a9fd4"><title>{_e(fmt_score(lo))} to '
                         f'{_e(fmt_score(hi))}: {int(n):,} test items</title></rect>')
    if base is not None:
        pts = " ".join(f"{ax(x):.1f},{sy(y):.1f}" for x, y in zip(centres, base))
        parts.append(f'<polyline points="{pts}" fill="none" stroke="#d46a6a" stroke-width="2" class="baseline"/>')
        parts.extend(f'<circle class="point" cx="{ax(x):.1f}" cy="{sy(y):.1f}" r="4" fill="#d46a6a" fill-opacity="0">'
                     f'<title>random pairs near {_e(fmt_score(x))}: density {y:.3g}</title></circle>'
                     for x, y in zip(centres, base))
    parts += _cutoff(ax, cutoff, interval)
    return _svg("histogram", parts, "histogram of best scores")


def svg_sweep(sw: dict, cutoff: Optional[float], interval=None, focus: Optional[float] = None) -> str:
    """Sibling rate (and |accuracy gap|, when present) at every cutoff."""
    x = np.asarray(sw["cutoff"], float)
    rate = np.asarray([np.nan if v is None else v for v in sw["sibling_rate"]], float)
    gap = None if "gap" not in sw else np.asarray([np.nan if v is None else abs(v) for v in sw["gap"]], float)
    y1 = max(1e-3, float(np.nanmax(rate)) if np.isfinite(rate).any() else 1.0)
    if gap is not None and np.isfinite(gap).any():
        y1 = max(y1, float(np.nanmax(gap)))
    y1 = min(y1 * 1.08, 1.0)  # rates and accuracy gaps are fractions
    ax = _XAxis(x[0], x[-1], focus)
    legend = [("#1f5fa8", "sibling rate")] + ([("#c27400", "|accuracy gap|, sibling rows vs the rest")]
                                              if gap is not None else [])
    parts, sy = _frame(ax, y1, "cutoff", "sibling rate / accuracy gap", legend)
    parts += _cutoff(ax, None, interval)

    def line(y, colour, cls, what):
        ok = np.isfinite(y)
        pts = " ".join(f"{ax(a):.1f},{sy(b):.1f}" for a, b in zip(x[ok], y[ok]))
        out = [f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2" class="{cls}"/>']
        out += [f'<circle class="point" cx="{ax(a):.1f}" cy="{sy(b):.1f}" r="4" fill="{colour}" fill-opacity="0">'
                f'<title>cutoff {_e(fmt_score(a))}: {what} {100 * b:.1f} %</title></circle>'
                for a, b in zip(x[ok], y[ok])]
        return out

    parts += line(rate, "#1f5fa8", "rate", "sibling rate")
    if gap is not None:
        parts += line(gap, "#c27400", "gap", "|accuracy gap|")
    parts += _cutoff(ax, cutoff, None)
    return _svg("sweep", parts, "sibling rate over the cutoff")
