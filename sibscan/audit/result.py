"""What an audit returns: named checks (passed + detail), metrics, warnings; the JSON contract.

``AuditResult.to_dict()`` is the machine contract printed by ``sibscan audit --json``::

    {"passed": bool,
     "checks": {name: {"passed": bool, "detail": {...}}},   # only the checks that apply
     "metrics": {metric_id: {...}}, "n_runs": int, "task": str, "warnings": [str], ...}

``passed`` is True only when every check that was run passed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ..report.honest import CHECK_NAMES

__all__ = ["Check", "AuditResult"]


@dataclass
class Check:
    """One check's outcome.

    Attributes
    ----------
    name : str
        One of :data:`CHECK_NAMES`.
    passed : bool
    summary : str
        One line for people ("3 of 200 predictions are NaN/Inf (first: 4, 17, 90)").
    detail : dict
        The numbers behind it, JSON-ready.
    limitation : str
        The sentence that goes into a report's limitations list when the check fails.
    """

    name: str
    passed: bool
    summary: str
    detail: dict = field(default_factory=dict)
    limitation: str = ""

    def to_dict(self) -> dict:
        return {"passed": bool(self.passed), "detail": self.detail}


@dataclass
class AuditResult:
    """Everything an audit found. See the module docstring for :meth:`to_dict`."""

    checks: Dict[str, Check]
    metrics: dict = field(default_factory=dict)
    task: Optional[str] = None
    n_runs: int = 0
    n_items: Optional[int] = None
    runs: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    reporting: dict = field(default_factory=dict)
    record: Optional[dict] = None
    scan: Optional[dict] = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks.values())

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def limitations(self) -> List[str]:
        """The failed checks' sentences, then the warnings, for a report's limitations list."""
        return [c.limitation or c.summary for c in self.checks.values() if not c.passed] + list(self.warnings)

    def to_dict(self) -> dict:
        ordered = {name: self.checks[name].to_dict() for name in CHECK_NAMES if name in self.checks}
        out = {
            "passed": self.passed,
            "checks": ordered,
            "task": self.task,
            "n_runs": self.n_runs,
            "n_items": self.n_items,
            "runs": list(self.runs),
            "metrics": self.metrics,
            "warnings": list(self.warnings),
            "summaries": {name: self.checks[name].summary for name in ordered},
            "limitations": self.limitations,
            "reporting": self.reporting,
        }
        if self.scan is not None:
            out["scan"] = self.scan
        if self.record is not None:
            out["run"] = {k: self.record.get(k)
                          for k in ("identity", "started", "ended", "resumed", "model_revision", "seeds")}
        return out
