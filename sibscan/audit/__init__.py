"""Evaluation audits beyond siblings: the leak checklist on predictions, several seeds, metrics named by
formula, model selection on the right split, and a run record that can be re-verified.

Each topic is its own module: :mod:`~sibscan.audit.inputs` (reading predictions and targets),
:mod:`~sibscan.audit.denominator` (one prediction per test item), :mod:`~sibscan.audit.checks`
(finite, not the targets, the initial window, the near-perfect share), :mod:`~sibscan.audit.metrics`
(formulas, the three nRMSEs), :mod:`~sibscan.audit.seeds`, :mod:`~sibscan.audit.selection`,
:mod:`~sibscan.audit.overlap` (the validation split),
:mod:`~sibscan.audit.markdown`; :mod:`~sibscan.audit.run` ties them together.
"""
from ..runrecord import VerifyResult, verify_run
from .result import AuditResult, Check
from ..report.honest import CHECK_NAMES, check_name
from .run import AuditConfig, run_audit

__all__ = [
    "AuditConfig", "AuditResult", "CHECK_NAMES", "Check", "VerifyResult", "check_name", "run_audit", "verify_run"
]
