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

from sibscan import fmt, labeller
from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.kernels.textalign import word_diff
from sibscan.verdict.headline import narrow_enough

from .controlanswers import tally
from .controls import ControlPlan, estimate_with_controls, interleave
from .labels import LabelStore, PairKey
from sibscan.verdict.labelfile import LABELS
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
    """The pairs of one draw, with the control pairs among them, and the stores they are answered into.

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
        Pairs of the draw to answer (default: the draw's size, no adaptive growth); controls come on top.
    on_extend : callable(Draw), optional
        Called after the draw grew (the flow saves ``draw.json``).
    definition : str, optional
        The written definition of "same", shown on every labelling screen.
    controls : ControlPlan, optional
        Control pairs shown among the drawn ones (:mod:`.controls`), answered into their own store; a
        UI cannot tell them from drawn pairs (same fields, same layout), the session's index is the
        place among the presented pairs.
    """

    def __init__(self, pop: Population, draw: Draw, store: LabelStore, test: Items, train: Items, *,
                 scores: Optional[tuple] = None, target: Optional[int] = None,
                 on_extend: Optional[Callable[[Draw], None]] = None, definition: Optional[str] = None,
                 controls: Optional[ControlPlan] = None):
        self.pop, self.draw, self.store = pop, draw, store
        self.test, self.train = test, train
        self.modality = test.modality
        self.scores = scores
        self.plan = controls
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
        #: the presented pairs in order: ("pair", j) for the draw's j-th pair, ("control", Control)
        self.seq: list = []
        self._sync()
        self.advance()

    def _needed(self) -> int:
        return max(self.target - len(self.draw.rows), 0)

    def _sync(self) -> None:
        for r in self.draw.rows[len(self.rows):]:
            key = ("test", str(self.pop.query_id[r]), "train", str(self.pop.neighbour_id[r]))
            self.rows.append(int(r))
            self.keys.append(key)
            self._key_set.add(key)
            self.score_of[key] = float(self.pop.score[r])
        interleave(self.plan, self.seq, self.rows, self._needed())

    def __len__(self) -> int:
        return len(self.seq)

    # --- state ---------------------------------------------------------------------------------
    def answers(self) -> Dict[int, str]:
        """Presented index -> current label, for the answered pairs (controls too)."""
        cur = self.store.current()
        ctl = self.plan.store.current() if self.plan is not None else {}
        out = {}
        for i, (kind, x) in enumerate(self.seq):
            rec = cur.get(self.keys[x]) if kind == "pair" else ctl.get(x.id)
            if rec is not None:
                out[i] = rec["label"]
        return out

    def _pairs_answered(self) -> int:
        cur = self.store.current()
        return sum(1 for k in self.keys if k in cur)

    def next_pending(self) -> Optional[int]:
        done = self.answers()
        return next((i for i in range(len(self)) if i not in done), None)

    def labelled(self, with_oracle: bool = False) -> tuple:
        """``(pop rows, same)`` of every current same/different answer about a pair of this population
        (answers imported for pairs outside the draw count too; answers on controls never); with
        ``with_oracle``, a third array: which answers are an oracle's (read as right, as the fit reads them)."""
        rows, same, oracle = [], [], []
        for key, rec in self.store.current().items():
            r = self._index.get(key)
            if r is not None and rec["label"] in ("same", "different"):
                rows.append(r)
                same.append(rec["label"] == "same")
                oracle.append(labeller.kind(rec) == labeller.ORACLE)
        out = (np.asarray(rows, np.int64), np.asarray(same, bool))
        return (*out, np.asarray(oracle, bool)) if with_oracle else out

    def estimate(self, fast: bool = False):
        """The rate estimate from the answers so far (None without scores or answers)."""
        rows, same, trusted = self.labelled(with_oracle=True)
        if self.scores is None or not len(rows):
            return None
        score, exact = self.scores
        controls = tally(self.plan.controls, self.plan.store.current()) if self.plan is not None else None
        return estimate_with_controls(score, exact, self.pop.query_index[rows], same, controls, fast=fast,
                                      trusted=trusted)

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
        # the pairs still to show: the draw's up to the target, and the controls whose places come among them
        left, p = max(self.target, len(self.rows)) - len(self.rows), len(self.seq)
        while left > 0:
            left -= not (self.plan is not None and self.plan.planned(p))
            p += 1
        return {"total": p, "done": len(done), "next": self.next_pending(),
                "modality": self.modality, "can_undo": self._last_answer() is not None, "definition": self.definition,
                "counts": {lab: sum(1 for v in done.values() if v == lab) for lab in LABELS}}

    # --- the adaptive draw ---------------------------------------------------------------------
    def advance(self) -> Optional[int]:
        """The next pair to ask about: a pending one, else (below the target) a control whose place comes
        next or a new pair drawn where the interval shrinks most; None when the target is reached or
        nothing is left."""
        while True:
            i = self.next_pending()
            if i is not None or self._pairs_answered() >= self.target:
                return i
            if self.plan is not None:
                c = self.plan.at(len(self.seq), self._needed())
                if c is not None:
                    self.seq.append(("control", c))
                    continue
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

    def more(self, n: int) -> Optional[int]:
        """Raise the target by ``n`` pairs (the user goes on) and return the next pair to ask about."""
        if n < 1:
            raise SibscanError(f"more pairs must be a positive number, got {n}")
        self.target = min(max(self.target, self._pairs_answered()) + int(n), self.most)
        return self.advance()

    # --- content -------------------------------------------------------------------------------
    def _check_index(self, i: int) -> None:
        if not 0 <= i < len(self):
            raise SibscanError(f"pair {i} is out of range (0..{len(self) - 1})")

    def side(self, i: int, which: str) -> tuple:
        """(items, row) of side ``which`` (``"left"`` = test item, ``"right"`` = train item) of pair ``i``;
        ``(None, Control)`` for the right side of a control that shows a copy."""
        self._check_index(i)
        kind, x = self.seq[i]
        if which not in ("left", "right"):
            raise SibscanError(f"unknown side {which!r}; use left or right")
        if kind == "control":
            if which == "left":
                return self.test, x.query_index
            return (self.train, x.train_index) if x.train_index is not None else (None, x)
        r = self.rows[x]
        if which == "left":
            return self.test, int(self.pop.query_index[r])
        return self.train, int(self.pop.neighbour_index[r])

    def image_path(self, i: int, which: str) -> str:
        if self.modality != "image":
            raise SibscanError("this scan holds no images")
        items, row = self.side(i, which)
        return str(self.plan.dir / row.image) if items is None else items.paths[row]

    def _shown(self, i: int) -> tuple:
        """``(left id, right id, left text/values, right text/values)`` of pair ``i`` (content None for images)."""
        (ti, tr), (ni, nr) = self.side(i, "left"), self.side(i, "right")
        right_id = nr.shown_id if ni is None else str(ni.ids[nr])
        if self.modality == "text":
            return str(ti.ids[tr]), right_id, ti.texts[tr], (nr.text if ni is None else ni.texts[nr])
        if self.modality == "table":
            b = np.asarray(nr.values, np.float64) if ni is None else ni.values[nr]
            return str(ti.ids[tr]), right_id, ti.values[tr], b
        return str(ti.ids[tr]), right_id, None, None

    def view(self, i: int) -> dict:
        """What a UI shows for pair ``i`` (never the score before it is answered; a control the same as a pair)."""
        left_id, right_id, a, b = self._shown(i)
        out = {"index": i, "modality": self.modality,
               "left": {"id": left_id, "split": "test"}, "right": {"id": right_id, "split": "train"}}
        if self.modality == "text":
            wa, wb = word_diff(a, b)
            out["left"]["words"], out["right"]["words"] = _with_breaks(a, wa), _with_breaks(b, wb)
        elif self.modality == "table":
            out["left"]["values"], out["right"]["values"] = _finite_list(a), _finite_list(b)
        label = self.answers().get(i)
        if label is not None:
            out["label"] = label
            out["score"] = self._score(i)
        return out

    def _score(self, i: int) -> Optional[float]:
        kind, x = self.seq[i]
        return x.score if kind == "control" else self.score_of[self.keys[x]]

    # --- answers -------------------------------------------------------------------------------
    def answer(self, i: int, label: str, source: str = "ui") -> dict:
        """Append the answer for pair ``i`` (a control's to the controls' store); returns ``{"index", "label",
        "score"}`` (the score revealed; None for a control that has none)."""
        self._check_index(i)
        if label not in LABELS:
            raise SibscanError(f"unknown label {label!r}; use one of: {', '.join(LABELS)}")
        kind, x = self.seq[i]
        if kind == "control":
            self.plan.store.append(x, label, source=source)
        else:
            key = self.keys[x]
            self.store.append(key, label, self.score_of[key], self.pop.score_kind, source=source)
        self.advance()
        return {"index": i, "label": label, "score": self._score(i)}

    def _last_answer(self) -> Optional[int]:
        """The presented index of the latest current answer (pair or control), or None."""
        at = {("pair", self.keys[x]) if kind == "pair" else ("control", x.id): i
              for i, (kind, x) in enumerate(self.seq)}
        found = []
        for store, tag in ((self.store, "pair"), (self.plan.store if self.plan is not None else None, "control")):
            if store is None:
                continue
            cur = store.current()
            last = next((k for k in reversed(list(cur)) if (tag, k) in at), None)
            if last is not None:  # answers in one second: the later place was answered later
                found.append((str(cur[last].get("time") or ""), at[(tag, last)]))
        return max(found)[1] if found else None

    def undo(self, source: str = "ui") -> Optional[int]:
        """Withdraw the latest answer of this session's pairs; returns its pair index (then pending again) or None."""
        i = self._last_answer()
        if i is None:
            return None
        kind, x = self.seq[i]
        if kind == "control":
            self.plan.store.append(x, "undo", source=source)
        else:
            self.store.append(self.keys[x], "undo", self.score_of[self.keys[x]], self.pop.score_kind, source=source)
        return i
