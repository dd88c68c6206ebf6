"""One verdict per example from several methods: declared directions, standardised scores,
flags, AUC weights, and precision at the prevalence the user expects.

* **Directions are declared, not guessed** (:data:`DIRECTIONS`): +1 where a higher score means
  more contaminated (overlap, run, Min-K%, Min-K%++, guided F1), -1 where lower does (perplexity).
  Averaging a perplexity z-score with a Min-K% z-score without flipping one cancels the signal.
* **Standardised**: ``z = direction * (x - median) / max(1.4826 * MAD, std)`` over the scorable
  examples (0 when every score is equal): centred on the median, which the leaked examples cannot
  move while they are a minority; scaled by the larger of the robust and the classical spread, so
  that a heavy-tailed or coarsely discrete clean distribution (an overlap is a multiple of
  1 / n-grams) does not turn its own tail into outliers.  The combined score is the weighted mean of the methods' z in
  :data:`COMBINED`, standardised again the same way.
* **Flags** (any of): combined ``z >= z_threshold``; ``overlap_fraction >= overlap_floor``;
  ``longest_match_tokens >= run_floor``.  Per source, a source with control texts uses their
  thresholds instead (exceeded strictly).  The absolute floors matter: z-scores alone under-flag
  when most of a benchmark leaked, because the leak becomes the median.  (The rule is applied in
  :mod:`.audit`.)
* **With labels** for some examples: each method's AUC in its declared direction (Mann–Whitney,
  ties count half), ``weight_by_auc`` (``max(0, 2 * AUC - 1)``: a method at or below chance gets
  weight 0), and the flags' recall and false-positive rate on the labelled examples, from which
  :meth:`OperatingPoint.precision_at_prevalence` and :meth:`OperatingPoint.review_queue_size`
  follow.  Quote precision at the expected base rate, not FPR: at 1 % prevalence a 5 % FPR is
  five false flags for every true one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence

import numpy as np

from ..errors import SibscanError

__all__ = ["COMBINED", "DIRECTIONS", "OperatingPoint", "auc", "combine_z", "robust_z", "weight_by_auc"]

#: +1: higher means more contaminated; -1: lower does.
DIRECTIONS: Dict[str, int] = {
    "overlap_fraction": +1,
    "longest_match_tokens": +1,
    "min_k": +1,
    "min_k_pp": +1,
    "perplexity": -1,
    "guided_f1": +1,
}
#: One method per kind of access enters the combined z by default (Min-K% and perplexity measure
#: what Min-K%++ measures, less well; the run is a flag of its own).
COMBINED = ("overlap_fraction", "min_k_pp", "guided_f1")


def robust_z(x: np.ndarray) -> np.ndarray:
    """Median-centred z-scores of the finite entries of ``x`` (NaN stays NaN); see the module docstring.

    Parameters
    ----------
    x : ndarray of shape (m,)

    Returns
    -------
    ndarray of shape (m,), float64
    """
    x = np.asarray(x, np.float64)
    out = np.full(len(x), np.nan)
    ok = np.isfinite(x)
    if not ok.any():
        return out
    v = x[ok]
    med = np.median(v)
    # the larger of the robust and the classical scale: a heavy-tailed (or coarsely discrete) clean
    # distribution has a small MAD and would make its own tail "outliers"
    scale = max(1.4826 * np.median(np.abs(v - med)), float(np.std(v)))
    out[ok] = 0.0 if scale == 0 else (v - med) / scale
    return out


def auc(scores: np.ndarray, labels: np.ndarray) -> Optional[float]:
    """ROC AUC of ``scores`` (higher = positive) for boolean ``labels``; ties count half.

    Returns None when a class is missing.
    """
    s = np.asarray(scores, np.float64)
    y = np.asarray(labels, bool)
    ok = np.isfinite(s)
    s, y = s[ok], y[ok]
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_s, return_index=True, return_counts=True)
    avg = first + (counts - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def weight_by_auc(aucs: Mapping[str, Optional[float]]) -> Dict[str, float]:
    """``max(0, 2 * AUC - 1)`` per method (0 at or below chance, and when AUC is not assessed)."""
    return {m: (0.0 if a is None else max(0.0, 2.0 * a - 1.0)) for m, a in aucs.items()}


def combine_z(scores: Mapping[str, np.ndarray], weights: Optional[Mapping[str, float]] = None,
              methods: Sequence[str] = COMBINED) -> Dict[str, np.ndarray]:
    """Each method's directed robust z and the combined z.

    Parameters
    ----------
    scores : mapping method -> ndarray of shape (m,) (NaN where not scored)
    weights : mapping method -> float, optional
        Default 1 for every method in ``methods`` that ran.
    methods : sequence of str
        The methods averaged into the combined z.

    Returns
    -------
    dict method -> z (m,), plus ``"combined"`` (m,) (NaN where no weighted method scored)
    """
    unknown = set(scores) - set(DIRECTIONS)
    if unknown:
        raise SibscanError(f"unknown method(s) {sorted(unknown)}; available: {', '.join(DIRECTIONS)}")
    z = {m: DIRECTIONS[m] * robust_z(v) for m, v in scores.items()}
    m = len(next(iter(scores.values()))) if scores else 0
    num, den = np.zeros(m), np.zeros(m)
    for name in methods:
        if name not in z:
            continue
        w = 1.0 if weights is None else float(weights.get(name, 0.0))
        ok = np.isfinite(z[name])
        num[ok] += w * z[name][ok]
        den[ok] += w
    mean = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    z["combined"] = robust_z(mean)
    return z


@dataclass
class OperatingPoint:
    """The flags' measured recall (TPR) and false-positive rate on labelled examples."""

    tpr: float
    fpr: float
    n_positive: int
    n_negative: int

    def precision_at_prevalence(self, p: float) -> Optional[float]:
        """Expected precision of the flags where a share ``p`` of examples is contaminated."""
        if not 0.0 <= p <= 1.0:
            raise SibscanError(f"prevalence must be a fraction in [0, 1], got {p}")
        flagged = p * self.tpr + (1 - p) * self.fpr
        return None if flagged == 0 else p * self.tpr / flagged

    def review_queue_size(self, n: int, p: float) -> float:
        """Expected number of flagged examples (to review by hand) among ``n`` at prevalence ``p``."""
        if not 0.0 <= p <= 1.0:
            raise SibscanError(f"prevalence must be a fraction in [0, 1], got {p}")
        return float(n * (p * self.tpr + (1 - p) * self.fpr))

    def to_dict(self, prevalence: Optional[float] = None, n: Optional[int] = None) -> dict:
        out = {"tpr": self.tpr, "fpr": self.fpr, "n_positive": self.n_positive, "n_negative": self.n_negative}
        if prevalence is not None:
            out["prevalence"] = prevalence
            out["precision_at_prevalence"] = self.precision_at_prevalence(prevalence)
            if n is not None:
                out["review_queue_size"] = self.review_queue_size(n, prevalence)
        return out

    @classmethod
    def measure(cls, flagged: np.ndarray, labels: np.ndarray) -> Optional["OperatingPoint"]:
        """From boolean flags and labels of the same examples; None when a class is missing."""
        f, y = np.asarray(flagged, bool), np.asarray(labels, bool)
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        if n_pos == 0 or n_neg == 0:
            return None
        return cls(float((f & y).sum() / n_pos), float((f & ~y).sum() / n_neg), n_pos, n_neg)
