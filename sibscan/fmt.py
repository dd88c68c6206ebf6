"""How numbers are printed, in one place for every output (CLI lines, report.md, report.html, the
labelling pages): scores with the digits that tell them apart from 1 and from each other, rates as
percentages with the digits a small rate needs.

``score(0.9999) -> "0.9999"``, ``score(0.99996) -> "0.99996"`` (never "1" or "1.0000" for a score
below 1); ``score(1.0000001192092896) -> "1.0000"`` (float noise above 1 is 1);
``scores([0.99991, 0.99996, 1.0]) -> ["0.99991", "0.99996", "1.00000"]``;
``pct(0.0073) -> "0.73 %"``, ``pct(0.264) -> "26.4 %"``.
"""
from __future__ import annotations

import math
from typing import Iterable, List, Optional

__all__ = ["count", "pct", "pp", "score", "scores", "span"]

_MIN_DIGITS = 4
_MAX_DIGITS = 8
#: how far past ±1 a similarity may lie and still be rounding noise (a float32 cosine of unit vectors
#: lands up to a few ulps, ~1e-7, past 1); printed as ±1.  A score further out is printed as it is, so
#: that a real error is not hidden by the formatting
_NOISE = 1e-5


def _fixed(x: float, digits: int) -> str:
    return f"{x:.{digits}f}"


def _clip(x: float) -> float:
    """``x`` with rounding noise past ±1 (up to :data:`_NOISE`) taken off: 1.0000001192092896 -> 1.0."""
    return math.copysign(1.0, x) if 1.0 < abs(x) <= 1.0 + _NOISE else x


def score(x: Optional[float], digits: int = _MIN_DIGITS) -> str:
    """A similarity score with ``digits`` decimals, more when fewer would print it as ±1 (or as 1.0000).

    A score below 1 never prints as 1: 0.99996 needs five decimals, 0.9999999 gets eight.  Float noise
    above 1 is 1 (``1.0000001192092896 -> "1.0000"``); the JSON outputs keep the value as stored.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    x = _clip(float(x))
    d = digits
    while d < _MAX_DIGITS and abs(x) != 1.0 and abs(float(_fixed(x, d))) == 1.0:
        d += 1
    return _fixed(x, d)


def scores(values: Iterable[Optional[float]], digits: int = _MIN_DIGITS) -> List[str]:
    """Scores printed with one number of decimals, enough that distinct values print distinct
    (the baseline's quantiles near 1 used to read 1.0000 from q0 to q100)."""
    vals = [None if v is None else _clip(float(v)) for v in values]
    finite = [v for v in vals if v is not None and not math.isnan(v)]
    d = max([digits] + [len(score(v, digits).split(".")[-1]) for v in finite])
    distinct = len(set(finite))
    while d < _MAX_DIGITS and len({_fixed(v, d) for v in finite}) < distinct:
        d += 1
    return ["n/a" if v is None or math.isnan(v) else _fixed(v, d) for v in vals]


def span(lo: Optional[float], hi: Optional[float], digits: int = _MIN_DIGITS) -> str:
    """Two scores as ``"0.9070 to 0.9312"``, printed with the same decimals."""
    a, b = scores([lo, hi], digits)
    return f"{a} to {b}"


def pct(x: Optional[float], digits: Optional[int] = None) -> str:
    """A fraction as a percentage: ``0.0601 -> "6.0 %"``, ``0.0073 -> "0.73 %"``; ``None -> "n/a"``.

    Without ``digits`` a rate under 1 % gets two decimals (and one under 0.1 % two significant
    digits), so that a small rate is not printed as 0.0 %; larger rates get one.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    v = 100.0 * float(x)
    if digits is None:
        a = abs(v)
        digits = 1 if a >= 1 or a == 0 else 2 if a >= 0.1 else max(2, 1 - math.floor(math.log10(a)))
    return f"{v:.{digits}f} %"


def pp(x: Optional[float]) -> str:
    """A difference of two rates in percentage points: ``-0.1 -> "-10.0 pp"``."""
    return "n/a" if x is None else f"{100 * x:+.1f} pp"


def plural(n: int, word: str, many: Optional[str] = None) -> str:
    """``n`` and ``word``, in the plural (``many``, default ``word + "s"``) unless ``n`` is 1:
    ``(1, "test item") -> "1 test item"``, ``(1200, "id") -> "1,200 ids"``."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def count(x: Optional[float]) -> str:
    """An expected (fractional) count: 3 significant digits, ``"< 0.01"`` for the tail's tiny values."""
    if x is None:
        return "n/a"
    return "< 0.01" if x < 0.01 else f"{x:.3g}" if x < 1000 else f"{x:,.0f}"
