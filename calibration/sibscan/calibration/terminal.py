"""Label pairs in the terminal: one prompt per pair, works with piped stdin.

Keys (then Enter): ``y`` same, ``n`` different, ``s`` skip, ``u`` undo the last answer, ``q`` quit.
End of input quits too; every answer is already in ``labels.jsonl``, so nothing is lost.  After
each answer the sibling-rate estimate so far is printed, and whether it is narrow enough to stop.
Differing words are shown in reverse video on a terminal and between ``[[`` and ``]]`` otherwise;
a text's line breaks are kept.  Images are shown as a small side-by-side preview (two pixels per
character cell, 24-bit colour) where the terminal says it supports that (``COLORTERM=truecolor``
or ``24bit``); elsewhere the labelling page is served as well and its URL printed.  Both sides are
named by their ids, never their files' paths (a control pair's copy lives in the calibration folder,
and its path would tell it from a drawn pair).
"""
from __future__ import annotations

import os
import sys
from typing import Optional, TextIO

import numpy as np

from sibscan import fmt
from sibscan.imageio import open_image

from .session import LabelSession
from .web import LabelServer

__all__ = ["run_terminal", "image_preview", "truecolor"]

_KEYS = {"y": "same", "n": "different", "s": "skip"}
_SPARK = "▁▂▃▄▅▆▇█"
_MAX_VALUES = 16


def _mark(words: list, tty: bool, indent: str = "") -> str:
    """Words (``[word, changed, separator]``) joined by their separators, line breaks indented."""
    out = []
    for w, c, *sep in words:
        out.append((f"\x1b[7m{w}\x1b[0m" if tty else f"[[{w}]]") if c else w)
        out.append((sep[0] if sep else " ").replace("\n", "\n" + indent))
    return "".join(out).rstrip()


def truecolor(out: TextIO) -> bool:
    """Whether ``out`` is a terminal that announces 24-bit colour (``COLORTERM``)."""
    tty = bool(getattr(out, "isatty", lambda: False)())
    return tty and os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit")


def _pixels(path: str, width: int) -> np.ndarray:
    im = open_image(path).convert("RGB")
    h = max(2, int(round(im.height * width / max(im.width, 1) / 2)) * 2)
    return np.asarray(im.resize((width, h)), dtype=np.uint8)


def image_preview(left: str, right: str, width: int = 32, gap: int = 4) -> str:
    """Two images side by side as 24-bit-colour half blocks (each cell: upper pixel as foreground of
    "▀", lower as background), ``width`` cells wide each."""
    a, b = _pixels(left, width), _pixels(right, width)
    rows = max(len(a), len(b))
    pad = lambda x: np.concatenate([x, np.zeros((rows - len(x), width, 3), np.uint8)]) if len(x) < rows else x  # noqa: E731
    a, b = pad(a), pad(b)
    lines = []
    for y in range(0, rows, 2):
        cells = []
        for img in (a, b):
            top, bot = img[y], img[y + 1] if y + 1 < rows else np.zeros_like(img[y])
            cells.append("".join(f"\x1b[38;2;{t[0]};{t[1]};{t[2]}m\x1b[48;2;{u[0]};{u[1]};{u[2]}m▀"
                                 for t, u in zip(top, bot))
                         + "\x1b[0m")
        lines.append("  " + cells[0] + " " * gap + cells[1])
    return "\n".join(lines)


def _spark(values: list, lo: float, hi: float) -> str:
    v = np.array([np.nan if x is None else x for x in values], dtype=np.float64)
    span = hi - lo if hi > lo else 1.0
    idx = np.clip(((v - lo) / span * (len(_SPARK) - 1)).round(), 0, len(_SPARK) - 1)
    return "".join(" " if np.isnan(x) else _SPARK[int(i)] for x, i in zip(v, np.nan_to_num(idx)))


def _numbers(values: list) -> str:
    shown = ", ".join("nan" if x is None else f"{x:.4g}" for x in values[:_MAX_VALUES])
    return shown + (f", … ({len(values)} values)" if len(values) > _MAX_VALUES else "")


def _show(session: LabelSession, i: int, out: TextIO, tty: bool, url: Optional[str] = None) -> None:
    view = session.view(i)
    st = session.state()
    out.write(f"\npair {st['done'] + 1} of {st['total']} (#{i})\n")
    left, right = view["left"], view["right"]
    if view["modality"] == "text":
        out.write(f"  test  {left['id']}:\n    {_mark(left['words'], tty, '    ')}\n")
        out.write(f"  train {right['id']}:\n    {_mark(right['words'], tty, '    ')}\n")
    elif view["modality"] == "table":
        both = [x for x in left["values"] + right["values"] if x is not None]
        lo, hi = (min(both), max(both)) if both else (0.0, 1.0)
        out.write(f"  test  {left['id']}:  {_spark(left['values'], lo, hi)}  [{_numbers(left['values'])}]\n")
        out.write(f"  train {right['id']}: {_spark(right['values'], lo, hi)}  [{_numbers(right['values'])}]\n")
    else:
        a, b = session.image_path(i, "left"), session.image_path(i, "right")
        if truecolor(out):
            try:
                out.write(image_preview(a, b) + "\n")
            except Exception as exc:  # noqa: BLE001 - a preview that cannot be drawn falls back to the paths
                out.write(f"  (no preview: {exc})\n")
        elif url:
            out.write(f"  see the pair at {url}\n")
        # ids only: a file's folder would tell a control's copy (in the calibration folder) from a train item
        out.write(f"  test  {left['id']}\n")
        out.write(f"  train {right['id']}\n")


def run_terminal(session: LabelSession, stdin: Optional[TextIO] = None, stdout: Optional[TextIO] = None) -> str:
    """Ask for every pending pair of ``session``.

    Returns
    -------
    str
        ``"done"`` when every pair is answered, ``"quit"`` on ``q`` or end of input.
    """
    stdin = stdin or sys.stdin
    out = stdout or sys.stdout
    tty = bool(getattr(out, "isatty", lambda: False)())
    server = None
    if session.modality == "image" and not truecolor(out):
        # this terminal cannot draw images: the page shows the same pair
        server = LabelServer(session).start()
    try:
        if session.definition:
            out.write(f"'same' means: {session.definition}\n")
        return _ask(session, stdin, out, tty, None if server is None else server.url)
    finally:
        if server is not None:
            server.stop()


def _ask(session: LabelSession, stdin: TextIO, out: TextIO, tty: bool, url: Optional[str]) -> str:
    while True:
        i = session.next_pending()
        if i is None:
            out.write(f"all {session.state()['done']} pairs labelled\n")
            out.flush()
            return "done"
        _show(session, i, out, tty, url)
        while True:
            out.write("same? [y]es [n]o [s]kip [u]ndo [q]uit > ")
            out.flush()
            line = stdin.readline()
            if not line:
                out.write("\nend of input; answers so far are saved, re-run to continue\n")
                return "quit"
            key = line.strip().lower()[:1]
            if key in _KEYS:
                res = session.answer(i, _KEYS[key], source="terminal")
                out.write(f"  -> {res['label']}" + ("" if res["score"] is None
                                                    else f" (score {fmt.score(res['score'])})") + "\n")
                live = session.live()
                if live is not None:
                    out.write(f"  {live['text']}\n")
                break
            if key == "u":
                j = session.undo(source="terminal")
                out.write("  nothing to undo\n" if j is None else f"  undid the answer to pair #{j}\n")
                break
            if key == "q":
                out.write("quit; answers so far are saved, re-run to continue\n")
                return "quit"
            out.write("  please answer y, n, s, u or q\n")
