"""The draw of nearest-neighbour pairs that a person labels: stratified over the whole test set, then adaptive.

Population: each test item's nearest train item by the deciding score (``Neighbours.top1()``).
Exact twins are never drawn: they are siblings without asking.  Pairs are drawn within the strata of
the rate's estimator (:func:`sibscan.verdict.rate.score_strata`, one rule for both): the top-1 scores
of the whole test set, below the candidate range included, so that siblings the candidate range
misses are drawn and counted, and every answer is a random draw from its stratum (what the
design-based estimate needs).  The recorded draw keeps its own edges over the candidate range
``[lo, 1]`` (``lo`` = the random-pair baseline's 99th percentile) to describe it in ``draw.json``.

* First, two pairs in every stratum (a stratum without answers has the prior's whole range).
* The first draw (no answers yet) then allocates by a prior: weight ``sqrt(N_h) * u_h`` with
  ``u_h = sqrt(p_h (1 - p_h))`` from a ramp ``p(s)`` rising from 0 at ``lo`` to 1 at 1.0 at the
  stratum's median score, at least ``_MIN_U``.
* Every later pair goes where the rate's interval shrinks most: to the stratum whose term of the
  variance of the estimated count falls most by one more answer, from the current posterior
  (:class:`sibscan.verdict.rate.RateEstimate` ``p_same`` and ``curve_sd``, recomputed after every
  answer by the labelling UIs), a random unlabelled member of it.

Choosing the stratum by earlier answers does not bias the estimate: within a stratum the member is
drawn at random.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from sibscan.atomic import write_json
from sibscan.errors import SibscanError
from sibscan.verdict.rate import score_strata
from sibscan.store.neighbourtable import Neighbours

from .labels import PairKey

__all__ = ["Population", "Draw", "make_draw", "extend_draw", "allocate"]

_MIN_U = 0.2
#: pairs every stratum gets before any is given more
_FIRST_PER_STRATUM = 2


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
    def from_neighbours(nb: Neighbours, score_kind: Optional[str] = None,
                        exact: Optional[np.ndarray] = None) -> "Population":
        """The top-1 test->train pairs of ``nb``; ``exact`` (of shape (n_test,)) marks exact twins by
        fingerprint as well as the neighbours table's own ``exact`` flag."""
        top = nb.top1("test", "train")
        if score_kind is None:
            score_kind = "verified" if len(top) and np.isfinite(top["verified"]).any() else "similarity"
        qi = top["query_index"].astype(np.int64)
        ex = top["exact"].astype(bool)
        if exact is not None:
            ex = ex | np.asarray(exact, bool)[qi]
        return Population(
            query_id=top["query_id"].astype(str), neighbour_id=top["neighbour_id"].astype(str),
            query_index=qi, neighbour_index=top["neighbour_index"].astype(np.int64),
            score=top["score"].astype(np.float64), exact=ex, score_kind=score_kind,
        )

    def __len__(self) -> int:
        return len(self.score)

    def keys(self) -> List[PairKey]:
        return [("test", q, "train", t) for q, t in zip(self.query_id, self.neighbour_id)]

    def index_of(self) -> Dict[PairKey, int]:
        return {k: i for i, k in enumerate(self.keys())}

    def drawable(self) -> np.ndarray:
        """ndarray of shape (n,) bool: the pairs a draw may hold (exact twins need no label; a pair
        without a finite score cannot be placed in a stratum)."""
        return np.isfinite(self.score) & ~self.exact


@dataclass
class Draw:
    """The recorded draw: strata edges, the drawn pairs (population rows) in presentation order.

    ``reserved``: population rows never to draw, the test items that control pairs show
    (:class:`.controls.ControlPlan` sets them from ``controls.json``; not recorded here).
    """

    lo: float
    edges: np.ndarray
    rows: np.ndarray
    seed: int
    score_kind: str
    identity: dict = field(default_factory=dict)
    phases: List[int] = field(default_factory=list)
    reserved: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def stratum(self, scores: np.ndarray) -> np.ndarray:
        """Stratum of each score in the recorded edges (the description in draw.json): 0..K-1, or -1 below ``lo``."""
        h = np.searchsorted(self.edges, np.asarray(scores, dtype=np.float64), side="right") - 1
        return np.where(np.asarray(scores) < self.lo, -1, np.clip(h, 0, len(self.edges) - 2))

    @property
    def n_strata(self) -> int:
        return len(self.edges) - 1

    def to_dict(self, pop: Population) -> dict:
        h = self.stratum(pop.score)
        N_h = np.bincount(h[h >= 0], minlength=self.n_strata)
        hd = h[self.rows]
        drawn = np.bincount(hd[hd >= 0], minlength=self.n_strata)
        return {
            "seed": self.seed, "score_kind": self.score_kind, "lo": self.lo, "edges": self.edges.tolist(),
            **self.identity,
            "strata": [{"lo": float(self.edges[i]), "hi": float(self.edges[i + 1]), "N": int(N_h[i]),
                        "drawn": int(drawn[i]), "inclusion_probability": float(drawn[i] / N_h[i]) if N_h[i] else 0.0}
                       for i in range(self.n_strata)],
            "n_below": int((h < 0).sum()), "drawn_below": int((h[self.rows] < 0).sum()) if len(self.rows) else 0,
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
                    identity={k: d.get(k)
                              for k in ("dataset_fingerprint", "encoder_identity", "verifier_identity", "definition")},
                    phases=list(d.get("phases", [])))

    @staticmethod
    def definition_of(path: Path) -> Optional[str]:
        """The definition of "same" a recorded draw was made under (None: no draw, or none recorded)."""
        import json

        if not Path(path).exists():
            return None
        with open(path, encoding="utf-8") as fh:
            return json.load(fh).get("definition")


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


def _prior_uncertainty_of(score: np.ndarray, h: np.ndarray, K: int, lo: float) -> np.ndarray:
    """The prior's ``u_h`` of each of ``K`` strata (``h`` of shape (n,), -1 outside): ``sqrt(p (1 - p))``
    of a ramp ``p`` rising from 0 at ``lo`` to 1 at 1.0, at the stratum's median score, at least ``_MIN_U``."""
    mid = np.array([np.median(score[h == k]) if (h == k).any() else lo for k in range(K)])
    p = np.clip((mid - lo) / max(1.0 - lo, 1e-9), 0.0, 1.0)
    return np.maximum(np.sqrt(p * (1 - p)), _MIN_U)


def _edges(pop: Population, lo: float, hi: float, K: int) -> np.ndarray:
    """Strata edges over ``[lo, hi]``: ``K`` equal widths (the first draw spreads over the whole
    range, where the answers are expected to flip) refined by the quantiles of the scores there
    (fine strata where the scores crowd, e.g. just below 1, for the adaptive draw)."""
    edges = np.linspace(lo, hi, K + 1)
    s = pop.score[np.isfinite(pop.score) & ~pop.exact & (pop.score >= lo)]
    if len(s) >= 2 * K:
        q = np.quantile(s, np.linspace(0, 1, K + 1)[1:-1])
        edges = np.unique(np.concatenate([edges, q[(q > lo) & (q < hi)]]))
    return edges


def make_draw(pop: Population, lo: float, n_pairs: int, *, seed: int = 0, n_strata: Optional[int] = None,
              identity: Optional[dict] = None) -> Draw:
    """Draw ``n_pairs`` pairs by the prior allocation (see the module docstring).

    Parameters
    ----------
    pop : Population
    lo : float
        Lower end of the candidate range (the baseline's 99th percentile): the prior's ramp starts
        there; pairs come from every stratum of the test set, below it included.
    n_pairs : int
        Pairs to draw (all of them when fewer are not exact twins).
    n_strata : int, optional
        Equal-width strata in the candidate range, default ``clip(n_pairs // 6, 3, 10)``; as many
        more boundaries at the quantiles of the scores there (see :func:`_edges`).
    """
    if n_pairs < 1:
        raise SibscanError(f"--n-pairs must be at least 1, got {n_pairs}")
    lo = float(min(lo, 1.0 - 1e-6))
    K = int(n_strata or np.clip(n_pairs // 6, 3, 10))
    hi = max(1.0, float(pop.score.max()) if len(pop) else 1.0) + 1e-6
    edges = _edges(pop, lo, hi, K)
    draw = Draw(lo=lo, edges=edges, rows=np.zeros(0, np.int64), seed=int(seed), score_kind=pop.score_kind,
                identity=dict(identity or {}))
    return extend_draw(draw, pop, n_pairs)


def _members(draw: Draw, pop: Population) -> np.ndarray:
    """Rows that may still be drawn: not drawn yet, not exact twins, with a finite score, not a control's."""
    free = pop.drawable()
    free[draw.rows] = False
    free[draw.reserved] = False
    return free


def extend_draw(draw: Draw, pop: Population, n_more: int, labels_by_row: Optional[Dict[int, str]] = None,
                p_same: Optional[np.ndarray] = None, curve_sd: Optional[np.ndarray] = None) -> Draw:
    """Add ``n_more`` pairs to ``draw``.

    Parameters
    ----------
    labels_by_row : dict, optional
        Population row -> ``"same"``/``"different"`` answers so far.
    p_same, curve_sd : ndarray of shape (len(pop),), optional
        The current posterior probability that each row is a sibling and the posterior sd of
        ``P(same | score)`` at its score (:class:`sibscan.verdict.rate.RateEstimate`): with them, each pair
        goes where one more answer shrinks the variance of the estimated count most; without them
        the prior allocation is used (or, given labels, per-stratum shares from them).

    Each phase draws with its own seed (``seed``, phase number), so a re-run reproduces the draw.
    """
    # the estimator's strata (one rule: sibscan.verdict.rate.score_strata), so every pair is a random draw from its
    # stratum
    ok = pop.drawable()
    hb = score_strata(pop.score)
    hb[~ok] = -1
    K = int(hb.max()) + 1 if len(hb) and hb.max() >= 0 else 0
    free = _members(draw, pop)
    room = np.bincount(hb[free], minlength=K)
    dr = draw.rows[hb[draw.rows] >= 0] if len(draw.rows) else draw.rows
    drawn = np.bincount(hb[dr], minlength=K)
    N_all = np.bincount(hb[ok], minlength=K).astype(np.float64)
    take = np.zeros(K, np.int64)
    n_more = int(min(n_more, room.sum()))
    # first, _FIRST_PER_STRATUM pairs in every stratum (round by round, the biggest first): a stratum
    # without answers has the prior's whole range in the estimate
    for _ in range(_FIRST_PER_STRATUM):
        for k in np.argsort(-N_all, kind="stable"):
            if take.sum() < n_more and drawn[k] + take[k] < _FIRST_PER_STRATUM and room[k] > take[k]:
                take[k] += 1
    rest = n_more - int(take.sum())
    if rest > 0 and p_same is not None and curve_sd is not None:
        # each pair to the stratum where one more answer shrinks the variance of the estimated count
        # most: the posterior variance of the stratum's count, N_h^2 sd_h^2, behaves like a Beta's
        # with n_eff = p(1 - p) / sd_h^2 - 1 answers, and one more answer takes
        # N_h^2 sd_h^4 / (p(1 - p) + sd_h^2) off it; and the answered item's own p(1 - p)
        pbar = np.bincount(hb[ok], weights=np.asarray(p_same, np.float64)[ok], minlength=K) / np.maximum(N_all, 1)
        sd = np.bincount(hb[ok], weights=np.asarray(curve_sd, np.float64)[ok], minlength=K) / np.maximum(N_all, 1)
        v = pbar * (1 - pbar)
        left = room - take
        for _ in range(rest):
            open_ = left > 0
            if not open_.any():
                break
            gain = np.where(open_, N_all ** 2 * sd ** 4 / np.maximum(v + sd ** 2, 1e-12) + v, -1.0)
            j = int(np.argmax(gain))
            take[j] += 1
            left[j] -= 1
            # the stratum's posterior variance after one more answer: as a Beta's with one more
            n_eff = v[j] / max(sd[j] ** 2, 1e-12)
            sd[j] = np.sqrt(v[j] / (n_eff + 1)) if v[j] > 0 else sd[j] / 2
    elif rest > 0:
        if labels_by_row:
            rows = np.fromiter(labels_by_row, dtype=np.int64)
            same = np.array([labels_by_row[r] == "same" for r in rows], dtype=float)
            hs = hb[rows]
            sel = hs >= 0
            a = np.bincount(hs[sel], weights=same[sel], minlength=K)
            m = np.bincount(hs[sel], minlength=K)
            p = (a + 1) / (m + 2)
            u = np.maximum(np.sqrt(p * (1 - p)), _MIN_U)
        else:
            u = _prior_uncertainty_of(pop.score, hb, K, draw.lo)
        take += allocate(room + drawn, np.sqrt(N_all) * u, rest, drawn + take)
    rng = np.random.default_rng([draw.seed, len(draw.phases)])
    new = []
    for k in np.flatnonzero(take):
        members = np.flatnonzero((hb == k) & free)
        new.append(rng.choice(members, size=int(take[k]), replace=False))
    new_rows = np.concatenate(new) if new else np.zeros(0, np.int64)
    rng.shuffle(new_rows)  # presentation order hides the score (no anchoring on a rising sequence)
    draw.rows = np.concatenate([draw.rows, new_rows.astype(np.int64)])
    draw.phases.append(int(len(new_rows)))
    return draw
