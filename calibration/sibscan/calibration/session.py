"""A labelling session: the drawn pairs, their contents, the answers and the live estimate —
shared by both UIs.

The session never takes a path from its caller's input: pairs are addressed by their index in the
draw, and an item's content (text, numeric row, image file) comes from the scan's own items table.
The draw grows one pair at a time as answers come in (each next pair where the rate's interval
shrinks most, :func:`.sampling.extend_draw`) until ``target`` pairs are answered; :meth:`more`
raises the target.  After every answer :meth:`live` gives the estimate and its interval and says
whether it is narrow enough to quote.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional

import numpy as np

from sibscan import fmt
from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.kernels.textalign import word_diff
from sibscan.verdict.headline import narrow_enough
from sibscan.verdict.rate import estimate_rate

from .labels import LABELS, LabelStore, PairKey
from .sampling import Draw, Population, extend_draw

__all__ = ["LabelSession"]


def _finite_list(row: np.ndarray) -> list:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(row, dtype=np.float64)]


def _with_breaks(text: str, words: list) -> list:
    """``[word, changed, separator]`` per word: the whitespace after each word as a space, or as the
    line breaks it holds (at most two), so that a page can keep the text's lines."""
    ends = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    out = []
    for k, (w, changed) in enumerate(words):
        if k + 1 < len(ends):
            gap = text[ends[k][1]:ends[k + 1][0]]
            sep = "\n" * min(gap.count("\n"), 2) or " "
        else:
            sep = ""
        out.append([w, bool(changed), sep])
    return out


class LabelSession:
    """The pairs of one draw and the label store they are answered into.

    Parameters
    ----------
    pop : Population
    draw : Draw
    store : LabelStore
    test, train : Items
        The scan's items (content of each pair's two sides).
    scores : (ndarray of shape (n_test,), ndarray of shape (n_test,) bool), optional
        Every test item's deciding score and exact-twin flag (``sibscan.verdict.testscores.TestScores``): with
        them the session estimates the rate live and draws each next pair adaptively.
    target : int, optional
        Pairs to answer (default: the draw's size, no adaptive growth).
    on_extend : callable(Draw), optional
        Called after the draw grew (the flow saves ``draw.json``).
    definition : str, optional
        The written definition of "same", shown on every labelling screen.
    """

    def __init__(self, pop: Population, draw: Draw, store: LabelStore, test: Items, train: Items, *,
                 scores: Optional[tuple] = None, target: Optional[int] = None,
                 on_extend: Optional[Callable[[Draw], None]] = None, definition: Optional[str] = None):
        self.pop, self.draw, self.store = pop, draw, store
        self.test, self.train = test, train
        self.modality = test.modality
        self.scores = scores
        # a draw holds at most the population's drawable pairs: a larger target could never be reached
        self.most = max(int(pop.drawable().sum()), len(draw.rows))
        self.target = min(int(target if target is not None else len(draw.rows)), self.most)
        self.on_extend = on_extend
        self.definition = definition
        self._index = pop.index_of()
        self.rows: List[int] = []
        self.keys: List[PairKey] = []
        self._key_set: set = set()
        self.score_of: Dict[PairKey, float] = {}
        self._sync()
        self.advance()

    def _sync(self) -> None:
        for r in self.draw.rows[len(self.rows):]:
            key = ("test", str(self.pop.query_id[r]), "train", str(self.pop.neighbour_id[r]))
            self.rows.append(int(r))
            self.keys.append(key)
            self._key_set.add(key)
            self.score_of[key] = float(self.pop.score[r])

    def __len__(self) -> int:
        return len(self.rows)

    # --- state ---------------------------------------------------------------------------------
    def answers(self) -> Dict[int, str]:
        """Pair index -> current label, for the answered pairs of this draw."""
        cur = self.store.current()
        return {i: cur[k]["label"] for i, k in enumerate(self.keys) if k in cur}

    def next_pending(self) -> Optional[int]:
        done = self.answers()
        return next((i for i in range(len(self)) if i not in done), None)

    def labelled(self) -> tuple:
        """``(pop rows, same)`` of every current same/different answer about a pair of this population
        (answers imported for pairs outside the draw count too)."""
        rows, same = [], []
        for key, rec in self.store.current().items():
            r = self._index.get(key)
            if r is not None and rec["label"] in ("same", "different"):
                rows.append(r)
                same.append(rec["label"] == "same")
        return np.asarray(rows, np.int64), np.asarray(same, bool)

    def estimate(self, fast: bool = False):
        """The rate estimate from the answers so far (None without scores or answers)."""
        rows, same = self.labelled()
        if self.scores is None or not len(rows):
            return None
        score, exact = self.scores
        return estimate_rate(score, exact, self.pop.query_index[rows], same, fast=fast)

    def live(self) -> Optional[dict]:
        """``{n_labels, estimate, lo, hi, level, narrow_enough, text}`` from the answers so far, or None."""
        est = self.estimate()
        if est is None:
            return None
        ok = narrow_enough(est.estimate, est.lo, est.hi)
        text = (f"sibling rate so far {fmt.pct(est.estimate)} ({est.level:.0%} interval {fmt.pct(est.lo)} to "
                f"{fmt.pct(est.hi)}) from {fmt.plural(est.n_labels, 'answer')}; "
                + ("narrow enough to quote: you may stop now or go on" if ok else
                   "not narrow enough yet (half width above max(0.5 pp, 25 % of the estimate))"))
        return {"n_labels": est.n_labels, "estimate": est.estimate, "lo": est.lo, "hi": est.hi, "level": est.level,
                "narrow_enough": ok, "text": text}

    def state(self) -> dict:
        done = self.answers()
        last = next((k for k in reversed(list(self.store.current())) if k in self._key_set), None)
        return {"total": max(self.target, len(self)), "done": len(done), "next": self.next_pending(), "modality": self.modality,
                "can_undo": last is not None, "definition": self.definition,
                "counts": {lab: sum(1 for v in done.values() if v == lab) for lab in LABELS}}

    # --- the adaptive draw ---------------------------------------------------------------------
    def advance(self) -> Optional[int]:
        """The next pair to ask about: a pending one of the draw, else (below the target) a new one
        drawn where the interval shrinks most; None when the target is reached or nothing is left."""
        i = self.next_pending()
        if i is not None or len(self.answers()) >= self.target:
            return i
        rows, same = self.labelled()
        p_same = curve_sd = None
        if self.scores is not None and len(rows):
            est = self.estimate(fast=True)
            p_same, curve_sd = est.p_same[self.pop.query_index], est.curve_sd[self.pop.query_index]
        before = len(self.draw.rows)
        labels = {int(r): ("same" if y else "different") for r, y in zip(rows, same)}
        extend_draw(self.draw, self.pop, 1, labels_by_row=labels or None, p_same=p_same, curve_sd=curve_sd)
        if len(self.draw.rows) == before:
            return None
        self._sync()
        if self.on_extend is not None:
            self.on_extend(self.draw)
        return self.next_pending()

    def more(self, n: int) -> Optional[int]:
        """Raise the target by ``n`` pairs (the user goes on) and return the next pair to ask about."""
        if n < 1:
            raise SibscanError(f"more pairs must be a positive number, got {n}")
        self.target = min(max(self.target, len(self.answers())) + int(n), self.most)
        return self.advance()

    # --- content -------------------------------------------------------------------------------
    def _check_index(self, i: int) -> None:
        if not 0 <= i < len(self):
            raise SibscanError(f"pair {i} is out of range (0..{len(self) - 1})")

    def side(self, i: int, which: str) -> tuple:
        """(items, row) of side ``which`` (``"left"`` = test item, ``"right"`` = train neighbour) of pair ``i``."""
        self._check_index(i)
        r = self.rows[i]
        if which == "left":
            return self.test, int(self.pop.query_index[r])
        if which == "right":
            return self.train, int(self.pop.neighbour_index[r])
        raise SibscanError(f"unknown side {which!r}; use left or right")

    def image_path(self, i: int, which: str) -> str:
        items, row = self.side(i, which)
        if items.modality != "image":
            raise SibscanError("this scan holds no images")
        return items.paths[row]

    def view(self, i: int) -> dict:
        """What a UI shows for pair ``i`` (never the score before it is answered)."""
        self._check_index(i)
        (ti, tr), (ni, nr) = self.side(i, "left"), self.side(i, "right")
        out = {"index": i, "modality": self.modality,
               "left": {"id": str(ti.ids[tr]), "split": "test"}, "right": {"id": str(ni.ids[nr]), "split": "train"}}
        if self.modality == "text":
            a, b = ti.texts[tr], ni.texts[nr]
            wa, wb = word_diff(a, b)
            out["left"]["words"], out["right"]["words"] = _with_breaks(a, wa), _with_breaks(b, wb)
        elif self.modality == "table":
            out["left"]["values"], out["right"]["values"] = _finite_list(ti.values[tr]), _finite_list(ni.values[nr])
        label = self.answers().get(i)
        if label is not None:
            out["label"] = label
            out["score"] = self.score_of[self.keys[i]]
        return out

    # --- answers -------------------------------------------------------------------------------
    def answer(self, i: int, label: str, source: str = "ui") -> dict:
        """Append the answer for pair ``i``; returns ``{"index", "label", "score"}`` (the score revealed)."""
        self._check_index(i)
        if label not in LABELS:
            raise SibscanError(f"unknown label {label!r}; use one of: {', '.join(LABELS)}")
        key = self.keys[i]
        self.store.append(key, label, self.score_of[key], self.pop.score_kind, source=source)
        self.advance()
        return {"index": i, "label": label, "score": self.score_of[key]}

    def undo(self, source: str = "ui") -> Optional[int]:
        """Withdraw the latest answer of this draw; returns its pair index (then pending again) or None."""
        key = self.store.undo_last(self.score_of, self.pop.score_kind, keys=self._key_set, source=source)
        return None if key is None else self.keys.index(key)
