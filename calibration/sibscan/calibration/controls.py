"""Control pairs: pairs whose answer is known without asking, shown among the drawn pairs so that the
labeller's error rates are measured, not assumed (issue 30).

* known "same": a test item against a lightly transformed copy of itself (:mod:`.copies`: text edits,
  scaled and noisy values, a cropped and re-lit image written to ``controls/``), alternating with a
  test item against its exact twin in train when the scan has exact twins;
* known "different": a random test-train pair scoring below the median of random pairs' embedding
  similarity, and in neither item's neighbour lists.

A control looks like any drawn pair: the test item's id on the left, a train id on the right (a copy
shows the id of the test item's nearest train neighbour), the same layout and fields in the page's JSON
and the terminal; its score, like every pair's, is hidden until it is answered (a copy has none). A
test item a control uses is kept out of the draw (``Draw.reserved``) so no test id is ever shown with
two partners; a control takes one only while the draw keeps room for the pairs still to label.

About one presented pair in ``1 / share`` is a control: in each block of that many presented pairs
one, at a place drawn from the seed (:meth:`ControlPlan.planned`).

``controls.json`` lists the controls made so far, tied to the scan's identity as ``draw.json`` is: a
calibration of a scan with other inputs makes new controls, an interrupted one resumes onto the same.
Their answers and how they are counted: :mod:`.controlanswers`.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Callable, List, Optional

import numpy as np

from sibscan.atomic import write_json
from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.verdict.rate import estimate_rate
from sibscan.stats import ControlAnswers

from .controlanswers import ANSWERS_FILE, CONTROLS_FILE, COPIES_DIR, Control, ControlStore, check_share, read_controls
from .copies import copy_image, copy_text, copy_values
from .labels import Identity
from .sampling import Draw, Population

__all__ = ["ControlPlan", "cosine", "estimate_with_controls", "interleave"]

#: random pairs scored to find known-"different" controls among
_CANDIDATES = 4000
_STREAM = 0xC0  # the controls' own random stream of the calibration's seed


def estimate_with_controls(score: np.ndarray, exact: np.ndarray, labelled: np.ndarray, same: np.ndarray,
                           controls: Optional[ControlAnswers], *, fast: bool = False, cutoff: Optional[float] = None,
                           trusted: Optional[np.ndarray] = None):
    """:func:`sibscan.verdict.rate.estimate_rate` as the calibration calls it (the fit, the live estimate, the
    draw's extension), with the labeller's answers on control pairs (they measure its error rates) and the
    cutoff in force (answered "same" at or above it are the interval's floor), and which answers are an
    oracle's (``trusted``: read as right)."""
    return estimate_rate(score, exact, labelled, same, fast=fast, cutoff=cutoff, controls=controls, trusted=trusted)


def _rows(emb, idx: np.ndarray) -> np.ndarray:
    return np.asarray(emb[idx] if isinstance(emb, np.ndarray) else emb.take(idx), dtype=np.float32)


def cosine(test_emb, train_emb, test_rows: Optional[np.ndarray] = None,
           train_rows: Optional[np.ndarray] = None) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``sim(test_idx, train_idx)``: the cosine similarity of items' embeddings (``*_rows``: each item's
    embedding row, where a chunked text scan holds several per item)."""
    def sim(ti: np.ndarray, tj: np.ndarray) -> np.ndarray:
        a = _rows(test_emb, ti if test_rows is None else test_rows[ti])
        b = _rows(train_emb, tj if train_rows is None else train_rows[tj])
        den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        return np.einsum("ij,ij->i", a, b) / np.maximum(den, 1e-12)
    return sim


class ControlPlan:
    """The control pairs of one calibration: where they go among the presented pairs, what they show,
    and the store their answers go to.

    Parameters
    ----------
    calibration_dir : path
    share : float
        Controls among the pairs shown (:func:`check_share`; > 0).
    seed : int
        The calibration's seed: the slots, the kinds and the copies follow from it.
    identity : Identity
        The scan's; ``controls.json`` made for another is set aside (new controls are made).
    pop, draw : Population, Draw
    test, train : Items
    similarity : callable ``(test_idx, train_idx) -> scores``, optional
        Embedding similarity of item pairs (:func:`cosine`); without it no known-"different" control.
    fingerprints : {"test", "train": ndarray of shape (n, 2)}, optional
        Exact fingerprints (twin controls are pairs whose fingerprints agree).
    near : ndarray of int64, optional
        Flat keys ``test * n_train + train`` of the pairs in either direction's neighbour lists
        (:func:`.baseline.neighbour_pair_keys`): never a known-"different" control.
    definition, labeller : str, optional
        Recorded with each answer.
    """

    def __init__(self, calibration_dir, *, share: float, seed: int, identity: Identity, pop: Population, draw: Draw,
                 test: Items, train: Items, similarity=None, fingerprints: Optional[dict] = None,
                 near: Optional[np.ndarray] = None, definition: Optional[str] = None, labeller: Optional[str] = None):
        self.dir = Path(calibration_dir)
        self.share = check_share(share)
        if self.share == 0:
            raise SibscanError("a ControlPlan needs controls > 0 (0 means no controls: pass no plan)")
        self.block = max(2, int(round(1 / self.share)))
        self.seed, self.identity = int(seed), identity
        self.pop, self.draw, self.test, self.train = pop, draw, test, train
        self.similarity, self.fingerprints, self.near = similarity, fingerprints, near
        self.store = ControlStore(self.dir / ANSWERS_FILE, identity, definition=definition, labeller=labeller)
        made = read_controls(self.dir)
        same_inputs = made["identity"] == identity.to_dict()
        self.controls: List[Control] = list(made["controls"]) if same_inputs else []
        self._by_slot = {c.slot: c for c in self.controls}
        self._row_of = np.full(len(test), -1, np.int64)
        self._row_of[pop.query_index] = np.arange(len(pop))
        self._random = None
        self._reserve()

    # --- where controls go ---------------------------------------------------------------------
    def planned(self, p: int) -> bool:
        """Whether presented place ``p`` is a control's: a made control's slot, or beyond the last one the
        place drawn for its block (one in each block of ``round(1 / share)`` places)."""
        if p in self._by_slot:
            return True
        last = max(self._by_slot, default=-1)
        b = p // self.block
        if p <= last or (last >= 0 and b <= last // self.block):
            return False
        return p == b * self.block + int(np.random.default_rng([self.seed, _STREAM, b]).integers(self.block))

    def at(self, p: int, needed: int) -> Optional[Control]:
        """The control at presented place ``p`` (made and recorded on first use), or None: not a control's
        place, or nothing left to make one from without taking a pair the draw still ``needed``."""
        c = self._by_slot.get(p)
        if c is not None or not self.planned(p):
            return c
        c = self._make(p, needed)
        if c is not None:
            self.controls.append(c)
            self._by_slot[p] = c
            self._reserve()
            write_json(self.dir / CONTROLS_FILE, {**self.identity.to_dict(), "seed": self.seed,
                                                  "controls": [asdict(x) for x in self.controls]})
        return c

    def _reserve(self) -> None:
        rows = self._row_of[[c.query_index for c in self.controls]] if self.controls else np.zeros(0, np.int64)
        self.draw.reserved = np.unique(rows[rows >= 0]).astype(np.int64)

    def _free(self) -> np.ndarray:
        free = self.pop.drawable()
        free[self.draw.rows] = False
        free[self.draw.reserved] = False
        return free

    # --- making one ----------------------------------------------------------------------------
    def _make(self, p: int, needed: int) -> Optional[Control]:
        rng = np.random.default_rng([self.seed, _STREAM, p, 1])
        first = int(np.random.default_rng([self.seed, _STREAM]).integers(2))
        truth = ("same", "different")[(len(self.controls) + first) % 2]
        used = {c.query_index for c in self.controls}
        spare = int(self._free().sum()) - max(int(needed), 0)
        n_same = sum(c.truth == "same" for c in self.controls)
        same_makers = [self._copy, self._twin] if n_same % 2 == 0 else [self._twin, self._copy]
        makers = same_makers + [self._different] if truth == "same" else [self._different] + same_makers
        for make in makers:
            c = make(p, rng, used, spare)
            if c is not None:
                return c
        return None

    def _id(self, p: int, kind: str, q: int, t: Optional[int]) -> str:
        text = f"{self.identity.dataset_fingerprint}|{self.seed}|{p}|{kind}|{q}|{'' if t is None else t}"
        return "c" + hashlib.sha1(text.encode()).hexdigest()[:12]

    def _copy(self, p: int, rng: np.random.Generator, used: set, spare: int) -> Optional[Control]:
        free = self._free()
        if spare < 1 or not free.any():
            return None
        r = int(rng.choice(np.flatnonzero(free)))
        q = int(self.pop.query_index[r])
        c = Control(id=self._id(p, "copy", q, None), slot=p, truth="same", kind="copy", query_index=q,
                    query_id=str(self.pop.query_id[r]), shown_id=str(self.pop.neighbour_id[r]))
        if self.test.modality == "text":
            c.text, c.transform = copy_text(self.test.texts[q], rng)
        elif self.test.modality == "table":
            v, c.transform = copy_values(self.test.values[q], rng)
            c.values = [None if not np.isfinite(x) else float(x) for x in v]
        else:
            c.image = f"{COPIES_DIR}/{c.id}.png"
            c.transform = copy_image(self.test.paths[q], self.dir / c.image, rng)
        return c

    def _twin(self, p: int, rng: np.random.Generator, used: set, spare: int) -> Optional[Control]:
        fp = self.fingerprints
        if fp is None or fp.get("test") is None or fp.get("train") is None:
            return None
        pop = self.pop
        rows = np.flatnonzero(pop.exact)
        rows = rows[(fp["test"][pop.query_index[rows]] == fp["train"][pop.neighbour_index[rows]]).all(axis=1)]
        rows = np.array([r for r in rows if int(pop.query_index[r]) not in used], np.int64)
        if not len(rows):
            return None
        r = int(rng.choice(rows))
        q, t = int(pop.query_index[r]), int(pop.neighbour_index[r])
        return Control(id=self._id(p, "twin", q, t), slot=p, truth="same", kind="twin", query_index=q,
                       query_id=str(pop.query_id[r]), shown_id=str(pop.neighbour_id[r]), train_index=t,
                       score=float(pop.score[r]) if np.isfinite(pop.score[r]) else None)

    def _candidates(self) -> tuple:
        """Random (test, train) pairs below the median of their embedding similarity, in a seeded order."""
        if self._random is None:
            n_test, n_train = len(self.test), len(self.train)
            rng = np.random.default_rng([self.seed, _STREAM, 2])
            m = min(_CANDIDATES, n_test * n_train)
            ti, tj = rng.integers(n_test, size=m), rng.integers(n_train, size=m)
            keep = np.ones(m, bool)
            if self.near is not None and len(self.near):
                keep &= ~np.isin(ti.astype(np.int64) * n_train + tj, self.near)
            fp = self.fingerprints or {}
            if fp.get("test") is not None and fp.get("train") is not None:
                keep &= ~(fp["test"][ti] == fp["train"][tj]).all(axis=1)
            ti, tj = ti[keep], tj[keep]
            s = np.asarray(self.similarity(ti, tj), np.float64) if len(ti) else np.zeros(0)
            ok = np.isfinite(s)
            below = ok & (s < np.median(s[ok])) if ok.any() else ok
            self._random = (ti[below], tj[below], s[below])
        return self._random

    def _different(self, p: int, rng: np.random.Generator, used: set, spare: int) -> Optional[Control]:
        if self.similarity is None:
            return None
        free, drawable = self._free(), self.pop.drawable()
        taken = {(c.query_index, c.train_index) for c in self.controls}
        for q, t, s in zip(*self._candidates()):
            q, t = int(q), int(t)
            r = int(self._row_of[q])
            # a test item the draw may still ask about is kept out of it: only while the draw has room to spare
            if q in used or (q, t) in taken or (r >= 0 and drawable[r] and (not free[r] or spare < 1)):
                continue
            return Control(id=self._id(p, "random", q, t), slot=p, truth="different", kind="random", query_index=q,
                           query_id=str(self.test.ids[q]), shown_id=str(self.train.ids[t]), train_index=t,
                           score=float(s) if self.pop.score_kind == "similarity" else None)
        return None


def interleave(plan: Optional[ControlPlan], seq: list, rows, needed: int) -> list:
    """Append to ``seq`` (the presented pairs: ``("pair", j)`` for the draw's j-th pair, ``("control",
    Control)``) the draw's pairs ``rows`` it does not hold yet, each after the controls whose places come
    before it; returns ``seq``."""
    placed = sum(1 for kind, _ in seq if kind == "pair")
    for j in range(placed, len(rows)):
        while plan is not None:
            c = plan.at(len(seq), needed)
            if c is None:
                break
            seq.append(("control", c))
        seq.append(("pair", j))
    return seq
