"""A labelling session: the drawn pairs, their contents, and the answers — shared by both UIs.

The session never takes a path from its caller's input: pairs are addressed by their index in the
draw, and an item's content (text, numeric row, image file) comes from the scan's own items table.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.kernels.textalign import word_diff

from .labels import LABELS, LabelStore, PairKey
from .sampling import Draw, Population

__all__ = ["LabelSession"]


def _finite_list(row: np.ndarray) -> list:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(row, dtype=np.float64)]


class LabelSession:
    """The pairs of one draw and the label store they are answered into.

    Parameters
    ----------
    pop : Population
    draw : Draw
    store : LabelStore
    test, train : Items
        The scan's items (content of each pair's two sides).
    """

    def __init__(self, pop: Population, draw: Draw, store: LabelStore, test: Items, train: Items):
        self.pop, self.draw, self.store = pop, draw, store
        self.test, self.train = test, train
        self.modality = test.modality
        self.rows = [int(r) for r in draw.rows]
        self.keys: List[PairKey] = [("test", str(pop.query_id[r]), "train", str(pop.neighbour_id[r])) for r in self.rows]
        self._key_set = set(self.keys)
        self.score_of: Dict[PairKey, float] = {k: float(pop.score[r]) for k, r in zip(self.keys, self.rows)}

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

    def state(self) -> dict:
        done = self.answers()
        last = next((k for k in reversed(list(self.store.current())) if k in self._key_set), None)
        return {"total": len(self), "done": len(done), "next": self.next_pending(), "modality": self.modality,
                "can_undo": last is not None, "counts": {lab: sum(1 for v in done.values() if v == lab) for lab in LABELS}}

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
            out["left"]["words"], out["right"]["words"] = word_diff(ti.texts[tr], ni.texts[nr])
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
        return {"index": i, "label": label, "score": self.score_of[key]}

    def undo(self, source: str = "ui") -> Optional[int]:
        """Withdraw the latest answer of this draw; returns its pair index (then pending again) or None."""
        key = self.store.undo_last(self.score_of, self.pop.score_kind, keys=self._key_set, source=source)
        return None if key is None else self.keys.index(key)
