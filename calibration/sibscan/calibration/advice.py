"""Which pairs to label next: score ranges that hold the unlabelled pairs they ask for.

The fit (:mod:`.fit`) says where more answers would help ("label about 10 more pairs scoring 0.8915 to
0.9354").  A range is only advice when the scan has that many pairs there still unanswered: on a text set
the range of the cutoff's bootstrap interval held 3 pairs, 2 of them labelled, and the advice asked for 10.
:meth:`Unlabelled.ask` counts the unanswered pairs of the population in the range and, when they are too
few, widens it towards the scores that still serve the advice's purpose (``"down"`` or ``"both"``)
until it holds them; when the scan has fewer left than asked, it asks for those; when it has
none, it returns None and the caller says what else would help.  Every :class:`Ask` holds at least
``n`` unanswered pairs between ``lo`` and ``hi`` (a property test checks it over random populations).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from sibscan import fmt

__all__ = ["Ask", "Unlabelled"]

WIDEN = ("down", "both")


@dataclass(frozen=True)
class Ask:
    """Advice to label ``n`` more pairs scoring ``lo`` to ``hi`` (both ends included; ``hi`` at 1 or more
    reaches the top), and its words (``phrase``)."""

    n: int
    lo: float
    hi: float
    phrase: str


class Unlabelled:
    """The scores of a population's pairs that have no answer yet (exact twins and unscored pairs left out).

    Parameters
    ----------
    scores : ndarray of shape (m,)
    """

    def __init__(self, scores: np.ndarray):
        s = np.asarray(scores, dtype=np.float64)
        self.scores = np.sort(s[np.isfinite(s)])

    @classmethod
    def from_population(cls, population: np.ndarray, labelled: np.ndarray) -> "Unlabelled":
        """The population's scores less one occurrence of each labelled pair's score (the labelled pairs
        being pairs of the population, their scores are among its scores).

        Parameters
        ----------
        population : ndarray of shape (N,)
            Scores of every pair that could be labelled.
        labelled : ndarray of shape (m,)
            Scores of the pairs answered.
        """
        pop = np.asarray(population, dtype=np.float64)
        values, counts = np.unique(pop[np.isfinite(pop)], return_counts=True)
        lab = np.asarray(labelled, dtype=np.float64)
        lv, lc = np.unique(lab[np.isfinite(lab)], return_counts=True)
        at = np.searchsorted(values, lv)
        hit = at < len(values)
        hit[hit] = values[at[hit]] == lv[hit]
        np.subtract.at(counts, at[hit], lc[hit])
        return cls(np.repeat(values, np.maximum(counts, 0)))

    def __len__(self) -> int:
        return len(self.scores)

    def _bounds(self, lo: float, hi: float) -> tuple:
        """Indices ``[i, j)`` of the scores in ``[lo, hi]`` (a ``hi`` of 1 or more reaches float noise above 1)."""
        top = np.inf if hi >= 1.0 else hi
        return int(np.searchsorted(self.scores, lo, side="left")), int(np.searchsorted(self.scores, top, side="right"))

    def count(self, lo: float, hi: float) -> int:
        """Unanswered pairs scoring ``lo`` to ``hi``."""
        i, j = self._bounds(lo, hi)
        return max(j - i, 0)

    def ask(self, n: int, lo: float, hi: float, widen: str = "both") -> Optional[Ask]:
        """Advice to label about ``n`` more pairs scoring ``lo`` to ``hi``, widened or cut to what the scan holds.

        Parameters
        ----------
        n : int
            Answers that would help.
        lo, hi : float
            The range where they help most (given either way round).
        widen : {"down", "both"}
            Where the range may grow when it holds fewer than ``n`` unanswered pairs: towards lower scores
            (advice that looks for answers at or below ``hi``), or to whichever unanswered pair lies nearest.

        Returns
        -------
        Ask or None
            None when no unanswered pair is left in the range or where it may grow.
        """
        if widen not in WIDEN:
            raise ValueError(f"unknown widen {widen!r}; available: {', '.join(WIDEN)}")
        if n < 1:
            raise ValueError(f"n is the number of pairs to ask for, at least 1; got {n}")
        lo, hi = min(lo, hi), max(lo, hi)
        i, j = self._bounds(lo, hi)
        j = max(i, j)
        have = j - i
        s = self.scores
        a, b = i, j  # the range grows to s[a:b]
        while b - a < n:
            down = a > 0 and widen in ("down", "both")
            up = b < len(s) and widen == "both"
            if down and up:  # the nearer one first
                down = lo - s[a - 1] <= s[b] - hi
                up = not down
            if down:
                a -= 1
            elif up:
                b += 1
            else:
                break
        new_lo = float(s[a]) if a < i else lo
        new_hi = float(s[b - 1]) if b > j else hi
        found = self.count(new_lo, new_hi)  # ties at a new end come in too
        if found == 0:
            return None
        k = min(n, found)
        where = fmt.span(new_lo, new_hi)
        if k < n:
            phrase = (f"label the {fmt.plural(k, 'unlabelled pair')} left scoring {where} "
                      f"({self.exhausted(new_hi, widen)} then; about {n} would help)")
        elif (new_lo, new_hi) != (lo, hi) and lo < hi:  # a range that was one score: no words for what it held
            phrase = (f"label about {n} more pairs scoring {where} ({fmt.span(lo, hi)} holds only "
                      f"{fmt.plural(have, 'unlabelled pair')})")
        else:
            phrase = f"label about {n} more pairs scoring {where}"
        return Ask(k, new_lo, new_hi, phrase)

    def exhausted(self, hi: float, widen: str) -> str:
        """Words for a range that may grow ``widen`` from ``hi`` down and holds no unanswered pair: which pairs
        are all answered."""
        if widen == "down" and hi < 1.0:
            return f"every pair scoring {fmt.score(hi)} or less is labelled"
        return "every pair the scan scores is labelled"
