"""Small statistics shared by every output (the one Wilson interval, rate records, JSON-safe floats),
and the checks of numeric options: a limit is a fraction, a count an integer in range."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .errors import SibscanError

__all__ = ["CUTOFF_BOUND", "CUTOFF_CONFIDENCE", "ControlAnswers", "check_cutoff_source", "check_cutoff_value",
           "MAX_DECIMALS", "check_decimals", "check_fraction", "check_int", "finite_or_none", "rate_record",
           "wilson_interval"]

#: the most decimal places a rounding may keep: a float64 of order 1 has no digits beyond about 17
MAX_DECIMALS = 20

#: two-sided 95 % normal quantile
Z95 = 1.959963984540054

#: one-sided confidence of the lower bound on P(same | score) that the calibration's cutoff rules read
#: (:mod:`sibscan.calibration.fit`); it holds per pooled run of answers, not for the cutoff as a whole
CUTOFF_CONFIDENCE = 0.95
#: how every text names that bound (the rules in cutoff.json, the messages, the headline, --help)
CUTOFF_BOUND = f"{CUTOFF_CONFIDENCE * 100:g} % lower bound per run of answers"


def wilson_interval(k: int, n: int, z: float = Z95) -> Optional[list]:
    """Wilson score interval ``[lo, hi]`` for ``k`` successes out of ``n`` (None when ``n == 0``).

    The Wilson interval stays inside [0, 1] and behaves at rates of 0 and 1, where the normal
    approximation collapses to a zero-width interval.
    """
    if n <= 0:
        return None
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at k = 0 (k = n) the bound is 0 (1) exactly; centre - half leaves a rounding residue (1.7e-18),
    # which a percentage printed to two significant digits shows as 0.00000000000000017 %
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return [float(lo), float(hi)]


def rate_record(mask: np.ndarray) -> dict:
    """``{count, n, rate, ci}`` for a boolean mask of shape (n,): how many are set, with a Wilson CI."""
    mask = np.asarray(mask, dtype=bool)
    n = int(mask.size)
    k = int(mask.sum())
    return {"count": k, "n": n, "rate": (k / n) if n else None, "ci": wilson_interval(k, n)}


def finite_or_none(x) -> Optional[float]:
    """``float(x)``, or None for None/NaN/inf (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


def check_fraction(x, name: str) -> Optional[float]:
    """A rate limit as a float in [0, 1] (None passes through); every limit in sibscan is a fraction."""
    if x is None:
        return None
    value = float(x)
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise SibscanError(f"{name} is a fraction in [0, 1] (0.01 = 1 %), got {value:g}")
    return value


def check_cutoff_value(value) -> float:
    """A hand-given cutoff as a float; refuses anything outside [-1, 1] (similarities live there)."""
    x = float(value)
    if not -1.0 <= x <= 1.0 or np.isnan(x):
        raise SibscanError(f"--cutoff is a similarity in [-1, 1], got {x:g}")
    return x


def check_cutoff_source(cutoff, calibration) -> None:
    """Refuse a hand-given cutoff outside [-1, 1], and a hand-given cutoff together with a calibration."""
    if cutoff is not None:
        check_cutoff_value(cutoff)
        if calibration is not None:
            raise SibscanError("give --cutoff or --calibration, not both")


def check_decimals(value, name: str = "--decimals", error: type = SibscanError) -> int:
    """Decimal places kept by a rounding: an integer in ``0..MAX_DECIMALS`` (``10**400`` overflows and
    would make every row a twin of every other)."""
    return check_int(value, name, 0, MAX_DECIMALS, error=error)


def check_int(value, name: str, minimum: int = 1, maximum: Optional[int] = None, error: type = SibscanError) -> int:
    """``value`` as an int when it is an integer in ``[minimum, maximum]``, else ``error`` naming ``name``."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= minimum
    if not ok or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise error(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class ControlAnswers:
    """The labeller's answers on control pairs, mixed into a calibration's draw (issue 30): pairs whose truth
    is known without asking, so the labeller's error rates are measured rather than assumed.

    Attributes
    ----------
    n_same, same_answered_same : int
        Known-"same" controls shown (an item against an exact twin or a lightly transformed copy of
        itself) and how many were answered "same" (the rest are false "different").
    n_different, different_answered_same : int
        Known-"different" controls shown (random pairs far below the cutoff) and how many were answered
        "same" (false "same").
    """

    n_same: int = 0
    same_answered_same: int = 0
    n_different: int = 0
    different_answered_same: int = 0

    def __post_init__(self):
        for name, k, n in (("same", self.same_answered_same, self.n_same),
                           ("different", self.different_answered_same, self.n_different)):
            if not 0 <= k <= n:
                raise ValueError(f"control answers: {k} answered 'same' of {n} known-{name} controls")

    @property
    def n(self) -> int:
        """Control pairs answered (skips are not answers)."""
        return self.n_same + self.n_different
