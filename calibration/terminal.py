"""Label pairs in the terminal: one prompt per pair, works with piped stdin.

Keys (then Enter): ``y`` same, ``n`` different, ``s`` skip, ``u`` undo the last answer, ``q`` quit.
End of input quits too; every answer is already in ``labels.jsonl``, so nothing is lost.
Differing words are shown in reverse video on a terminal and between ``[[`` and ``]]`` otherwise.
"""
from __future__ import annotations

import sys
from typing import Optional, TextIO

import numpy as np

from .session import LabelSession

__all__ = ["run_terminal"]

_KEYS = {"y": "same", "n": "different", "s": "skip"}
_SPARK = "▁▂▃▄▅▆▇█"
_MAX_VALUES = 16


def _mark(words: list, tty: bool) -> str:
    if tty:
        return " ".join(f"\x1b[7m{w}\x1b[0m" if c else w for w, c in words)
    return " ".join(f"[[{w}]]" if c else w for w, c in words)


def _spark(values: list, lo: float, hi: float) -> str:
    v = np.array([np.nan if x is None else x for x in values], dtype=np.float64)
    span = hi - lo if hi > lo else 1.0
    idx = np.clip(((v - lo) / span * (len(_SPARK) - 1)).round(), 0, len(_SPARK) - 1)
    return "".join(" " if np.isnan(x) else _SPARK[int(i)] for x, i in zip(v, np.nan_to_num(idx)))


def _numbers(values: list) -> str:
    shown = ", ".join("nan" if x is None else f"{x:.4g}" for x in values[:_MAX_VALUES])
    return shown + (f", … ({len(values)} values)" if len(values) > _MAX_VALUES else "")


def _show(session: LabelSession, i: int, out: TextIO, tty: bool) -> None:
    view = session.view(i)
    st = session.state()
    out.write(f"\npair {st['done'] + 1} of {st['total']} (#{i})\n")
    left, right = view["left"], view["right"]
    if view["modality"] == "text":
        out.write(f"  test  {left['id']}:  {_mark(left['words'], tty)}\n")
        out.write(f"  train {right['id']}: {_mark(right['words'], tty)}\n")
    elif view["modality"] == "table":
        both = [x for x in left["values"] + right["values"] if x is not None]
        lo, hi = (min(both), max(both)) if both else (0.0, 1.0)
        out.write(f"  test  {left['id']}:  {_spark(left['values'], lo, hi)}  [{_numbers(left['values'])}]\n")
        out.write(f"  train {right['id']}: {_spark(right['values'], lo, hi)}  [{_numbers(right['values'])}]\n")
    else:
        out.write(f"  test  {left['id']}:  {session.image_path(i, 'left')}\n")
        out.write(f"  train {right['id']}: {session.image_path(i, 'right')}\n")


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
    while True:
        i = session.next_pending()
        if i is None:
            out.write(f"all {len(session)} pairs labelled\n")
            out.flush()
            return "done"
        _show(session, i, out, tty)
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
                out.write(f"  -> {res['label']} (score {res['score']:.4f})\n")
                break
            if key == "u":
                j = session.undo(source="terminal")
                out.write("  nothing to undo\n" if j is None else f"  undid the answer to pair #{j}\n")
                break
            if key == "q":
                out.write("quit; answers so far are saved, re-run to continue\n")
                return "quit"
            out.write("  please answer y, n, s, u or q\n")
