"""The stratified draw of nearest-neighbour pairs that a person labels.

Population: each test item's nearest train item by the deciding score (``Neighbours.top1()``).
Pairs scoring below ``lo`` (the random-pair baseline's 99th percentile) are taken to be unrelated
and are not drawn; the range ``[lo, 1]`` is cut into equal-width strata and each stratum gets a
simple random sample without replacement.  The allocation is denser where the answer is uncertain:
weight ``sqrt(N_h) * u_h`` with ``u_h = sqrt(p_h (1 - p_h))`` from a prior ramp ``p(s)`` rising
from 0 at ``lo`` to 1 at ``1.0`` (first draw) or from the labels so far (when the draw is extended),
at least one pair per non-empty stratum.  Within a stratum every member has the same inclusion
probability ``n_h / N_h``; that is what :mod:`.fit` weights back with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from sibscan.atomic import write_json
from sibscan.errors import SibscanError
from sibscan.scandir import Neighbours

from .labels import PairKey

__all__ = ["Population", "Draw", "make_draw", "extend_draw", "allocate"]

_MIN_U = 0.2


@dataclass
class Population:
    """Nearest-neighbour pairs, one per test item.

    Attributes
    ----------
    query_id, neighbour_id : ndarray of shape (n,), str
    query_index, neighbour_index : ndarray of shape (n,), int64
    score : ndarray of shape (n,), float64
        The deciding score (verified where the scan verified, else the embedding similarity).
    exact : ndarray of shape (n,), bool
    score_kind : str
        ``"verified"`` or ``"similarity"``.
    """

    query_id: np.ndarray
    neighbour_id: np.ndarray
    query_index: np.ndarray
    neighbour_index: np.ndarray
    score: np.ndarray
    exact: np.ndarray
    score_kind: str

    @staticmethod
    def from_neighbours(nb: Neighbours, score_kind: Optional[str] = None) -> "Population":
        top = nb.top1("test", "train")
        if score_kind is None:
            score_kind = "verified" if len(top) and np.isfinite(top["verified"]).any() else "similarity"
        return Population(
            query_id=top["query_id"].astype(str), neighbour_id=top["neighbour_id"].astype(str),
            query_index=top["query_index"].astype(np.int64), neighbour_index=top["neighbour_index"].astype(np.int64),
            score=top["score"].astype(np.float64), exact=top["exact"].astype(bool), score_kind=score_kind,
        )

    def __len__(self) -> int:
        return len(self.score)

    def keys(self) -> List[PairKey]:
        return [("test", q, "train", t) for q, t in zip(self.query_id, self.neighbour_id)]

    def index_of(self) -> Dict[PairKey, int]:
        return {k: i for i, k in enumerate(self.keys())}


@dataclass
class Draw:
    """The recorded draw: strata edges, the drawn pairs (population rows) in presentation order."""

    lo: float
    edges: np.ndarray
    rows: np.ndarray
    seed: int
    score_kind: str
    identity: dict = field(default_factory=dict)
    phases: List[int] = field(default_factory=list)

    def stratum(self, scores: np.ndarray) -> np.ndarray:
        """Stratum of each score: 0..K-1, or -1 below ``lo`` (not drawn, assumed unrelated)."""
        h = np.searchsorted(self.edges, np.asarray(scores, dtype=np.float64), side="right") - 1
        return np.where(np.asarray(scores) < self.lo, -1, np.clip(h, 0, len(self.edges) - 2))

    @property
    def n_strata(self) -> int:
        return len(self.edges) - 1

    def to_dict(self, pop: Population) -> dict:
        h = self.stratum(pop.score)
        N_h = np.bincount(h[h >= 0], minlength=self.n_strata)
        drawn = np.bincount(h[self.rows], minlength=self.n_strata) if len(self.rows) else np.zeros(self.n_strata, int)
        return {
            "seed": self.seed, "score_kind": self.score_kind, "lo": self.lo, "edges": self.edges.tolist(),
            **self.identity,
            "strata": [{"lo": float(self.edges[i]), "hi": float(self.edges[i + 1]), "N": int(N_h[i]), "drawn": int(drawn[i]),
                        "inclusion_probability": float(drawn[i] / N_h[i]) if N_h[i] else 0.0} for i in range(self.n_strata)],
            "n_below": int((h < 0).sum()),
            "phases": self.phases,
            "pairs": [{"query_id": str(pop.query_id[r]), "neighbour_id": str(pop.neighbour_id[r]),
                       "score": float(pop.score[r]), "stratum": int(h[r])} for r in self.rows],
        }

    def save(self, path: Path, pop: Population) -> None:
        write_json(path, self.to_dict(pop))

    @staticmethod
    def load(path: Path, pop: Population) -> "Draw":
        """Read a draw back, mapping its pairs onto ``pop`` by id (pairs no longer in the scan are dropped)."""
        import json

        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
        index = pop.index_of()
        rows = [index.get(("test", p["query_id"], "train", p["neighbour_id"])) for p in d["pairs"]]
        return Draw(lo=float(d["lo"]), edges=np.asarray(d["edges"], dtype=np.float64),
                    rows=np.asarray([r for r in rows if r is not None], dtype=np.int64), seed=int(d["seed"]),
                    score_kind=d["score_kind"],
                    identity={k: d.get(k) for k in ("dataset_fingerprint", "encoder_identity", "verifier_identity")},
                    phases=list(d.get("phases", [])))


def allocate(N_h: np.ndarray, weight: np.ndarray, n: int, already: Optional[np.ndarray] = None) -> np.ndarray:
    """How many more pairs to draw per stratum.

    Parameters
    ----------
    N_h : ndarray of shape (K,), int
        Stratum sizes.
    weight : ndarray of shape (K,), float
        Allocation weights (``sqrt(N_h) * u_h``).
    n : int
        Pairs to add in all.
    already : ndarray of shape (K,), optional
        Pairs already drawn per stratum (the room left is ``N_h - already``).

    Returns
    -------
    ndarray of shape (K,), int
        Non-negative, at most the room left, summing to ``min(n, total room)``; every stratum with
        room and no pair yet gets at least one when ``n`` allows.
    """
    N_h = np.asarray(N_h, dtype=np.int64)
    already = np.zeros_like(N_h) if already is None else np.asarray(already, dtype=np.int64)
    room = N_h - already
    n = int(min(n, room.sum()))
    out = np.zeros_like(N_h)
    if n <= 0:
        return out
    # one pair for every stratum that has none, largest weight first
    empty = np.flatnonzero((already == 0) & (room > 0))
    for i in empty[np.argsort(-weight[empty], kind="stable")][:n]:
        out[i] = 1
    w = np.where(room - out > 0, np.maximum(weight, 1e-12), 0.0)
    while out.sum() < n:
        left = n - out.sum()
        open_ = room - out > 0
        share = w * open_
        share = share / share.sum() * left
        add = np.minimum(np.floor(share).astype(np.int64), room - out)
        if add.sum() == 0:  # hand out the remainder one at a time by largest fractional share
            add = np.zeros_like(out)
            add[np.argmax(np.where(open_, share, -1.0))] = 1
        out += add
    return out


def _prior_uncertainty(edges: np.ndarray, lo: float) -> np.ndarray:
    mid = (edges[:-1] + edges[1:]) / 2
    p = np.clip((mid - lo) / max(1.0 - lo, 1e-9), 0.0, 1.0)
    return np.maximum(np.sqrt(p * (1 - p)), _MIN_U)


def make_draw(pop: Population, lo: float, n_pairs: int, *, seed: int = 0, n_strata: Optional[int] = None,
              identity: Optional[dict] = None) -> Draw:
    """Draw ``n_pairs`` pairs from the population rows scoring in ``[lo, 1]`` (see the module docstring).

    Parameters
    ----------
    pop : Population
    lo : float
        Lower end of the drawn range (the baseline's 99th percentile).
    n_pairs : int
        Pairs to draw (all of them when fewer score above ``lo``).
    n_strata : int, optional
        Default ``clip(n_pairs // 6, 3, 10)``.
    """
    if n_pairs < 1:
        raise SibscanError(f"--n-pairs must be at least 1, got {n_pairs}")
    lo = float(min(lo, 1.0 - 1e-6))
    K = int(n_strata or np.clip(n_pairs // 6, 3, 10))
    hi = max(1.0, float(pop.score.max()) if len(pop) else 1.0) + 1e-6
    edges = np.linspace(lo, hi, K + 1)
    draw = Draw(lo=lo, edges=edges, rows=np.zeros(0, np.int64), seed=int(seed), score_kind=pop.score_kind,
                identity=dict(identity or {}))
    return extend_draw(draw, pop, n_pairs, labels_by_row=None)


def extend_draw(draw: Draw, pop: Population, n_more: int, labels_by_row: Optional[Dict[int, str]] = None) -> Draw:
    """Add ``n_more`` pairs to ``draw``; with labels, uncertainty per stratum comes from them.

    ``labels_by_row`` maps population rows to ``"same"``/``"different"``; each phase uses its own
    seed (``seed + phase``) so a re-run reproduces the same draw.
    """
    h = draw.stratum(pop.score)
    K = draw.n_strata
    N_h = np.bincount(h[h >= 0], minlength=K)
    drawn_mask = np.zeros(len(pop), bool)
    drawn_mask[draw.rows] = True
    already = np.bincount(h[draw.rows], minlength=K) if len(draw.rows) else np.zeros(K, np.int64)
    if labels_by_row:
        rows = np.fromiter(labels_by_row, dtype=np.int64)
        same = np.array([labels_by_row[r] == "same" for r in rows], dtype=float)
        hs = h[rows]
        keep = hs >= 0
        a = np.bincount(hs[keep], weights=same[keep], minlength=K)
        m = np.bincount(hs[keep], minlength=K)
        p = (a + 1) / (m + 2)
        u = np.maximum(np.sqrt(p * (1 - p)), _MIN_U)
    else:
        u = _prior_uncertainty(draw.edges, draw.lo)
    take = allocate(N_h, np.sqrt(N_h) * u, n_more, already)
    rng = np.random.default_rng([draw.seed, len(draw.phases)])
    new = []
    for k in np.flatnonzero(take):
        members = np.flatnonzero((h == k) & ~drawn_mask)
        new.append(rng.choice(members, size=int(take[k]), replace=False))
    new_rows = np.concatenate(new) if new else np.zeros(0, np.int64)
    rng.shuffle(new_rows)  # presentation order hides the score (no anchoring on a rising sequence)
    draw.rows = np.concatenate([draw.rows, new_rows.astype(np.int64)])
    draw.phases.append(int(len(new_rows)))
    return draw
