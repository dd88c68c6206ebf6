"""The names of the cutoff rules (``cutoff.json``'s ``rule``), and the one place that reads such a name.

A rule is named when a calibration is fitted (:func:`sibscan.calibration.fit.fit`) and read back by
the refit's "the rule changed" message and by the headline's words for how the cutoff was chosen;
both read it through :func:`classify_rule`, so a name written once is understood the same everywhere.

A fit's verdict (``cutoff.json``'s ``status``) is written by :func:`sibscan.calibration.fit.fit`: ``"ok"``
(:data:`SUPPORTED`) when its labels support the cutoff, else why not.  :func:`supported` is the one
reader of that verdict: the headline's ``needs_labels`` state, ``check`` and the calibration record ask it.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from ..stats import CUTOFF_BOUND

__all__ = ["POINT_RULE", "RULE", "RuleName", "SUPPORTED", "classify_rule", "precision_rule", "same_rule", "supported"]

#: the default rule, as cutoff.json and the reports name it
RULE = f"P(same) >= 0.5 by its {CUTOFF_BOUND}"
#: the rule of calibrations fitted before the lower bound (the point estimate; cutoff.json without a rule had it)
POINT_RULE = "P(same) = 0.5"
#: a fit's ``status`` when its labels support the cutoff (any other status says why they do not)
SUPPORTED = "ok"
#: the endings that name the lower bound a rule reads (the lower-bound rules were first named '... at 95 % confidence')
_BOUND_ENDINGS = (" at 95 % confidence", f" by its {CUTOFF_BOUND}", f" by the {CUTOFF_BOUND}")


def precision_rule(target_precision: float) -> str:
    """The name of the target-precision rule in cutoff.json and the reports."""
    return f"precision >= {target_precision:g} by the {CUTOFF_BOUND}"


class RuleName(NamedTuple):
    """A rule name read: ``kind`` is ``"point"`` (the point-estimate rule), ``"same"`` (P(same) >= 0.5),
    ``"precision"`` (a target precision) or ``"other"``; ``base`` the name without its bound ending;
    ``bounded`` whether it had one."""

    kind: str
    base: str
    bounded: bool


def classify_rule(rule: Optional[str]) -> RuleName:
    """Read one of cutoff.json's rule names (no name is the point-estimate rule)."""
    text = rule or POINT_RULE
    base, bounded = text, False
    for ending in _BOUND_ENDINGS:
        if text.endswith(ending):
            base, bounded = text[: -len(ending)], True
            break
    if not bounded and base == POINT_RULE:
        kind = "point"
    elif base.startswith("P(same) >= 0.5"):
        kind = "same"
    elif base.startswith("precision"):
        kind = "precision"
    else:
        kind = "other"
    return RuleName(kind, base, bounded)


def same_rule(a: Optional[str], b: Optional[str]) -> bool:
    """Whether two of cutoff.json's rule names name one rule (one name with or without its bound's
    older wording; no name is the point-estimate rule).

    A name without a bound ending is a point-estimate rule (``"P(same) = 0.5"``, and ``"precision >= 0.9"``
    of ``--target-precision`` before the bound): it never names the bound rule of the same target.
    """
    ra, rb = classify_rule(a), classify_rule(b)
    return (ra.base, ra.bounded) == (rb.base, rb.bounded)


def supported(status: Optional[str]) -> bool:
    """Whether a fit's ``status`` says its labels support its cutoff.

    None (a cutoff recorded before the verdict was kept) reads as supported: nothing says otherwise.
    """
    return status is None or status == SUPPORTED
