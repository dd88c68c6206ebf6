"""The CI gate: fail when a scan's sibling rate (or exact-twin rate) exceeds its limit.

:func:`check` reads a finished scan; :func:`assert_no_siblings` is a pytest helper that checks
in-memory data directly.  What the helper does, honestly: exact twins by the same content
fingerprints the scan uses, and (only when a ``cutoff`` is given) near siblings by a brute-force
cosine over a weight-free encoder's embeddings (``znorm`` for tables, ``ngram`` for text, ``phash``
for images, or the encoder you pass) — no verification step, no calibration.  For a calibrated
answer, run ``sibscan scan`` + ``sibscan check`` instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import numpy as np

from .errors import SibscanError
from .loaders import as_items
from .fmt import pct
from .fmt import score as fmt_score
from .stats import check_decimals, check_fraction
from .store.scandir import ScanDir
from .encoders import get_encoder
from .fingerprint import fingerprint
from .kernels.rowhash import fingerprint_membership

__all__ = ["CheckResult", "check", "assert_no_siblings", "DEFAULT_ENCODERS", "NEEDS_LABELS_EXIT"]

#: weight-free encoder per modality used by :func:`assert_no_siblings`
DEFAULT_ENCODERS = {"table": "znorm", "text": "ngram", "image": "phash"}
#: exit code of a ``--max-rate`` gate whose rate is within its limit but comes from a calibration whose labels do
#: not support its cutoff yet (headline state ``needs_labels``): neither a pass nor a rate over the limit
NEEDS_LABELS_EXIT = 3


@dataclass
class CheckResult:
    """Outcome of :func:`check`.

    Attributes
    ----------
    passed : bool
        False also when ``needs_labels``.
    message : str
        One paragraph: the rates, the limits, what to do next, the first offending pairs.
    rates : dict
        ``{"siblings": rate, "exact": rate}`` of test items (test -> train); empty without rate limits.
        ``siblings`` is the headline's rate (the calibrated estimate, or without hand labels the
        share flagged at the cutoff), None when not assessed.
    limits : dict
        ``{"max_rate": x or None, "max_exact": y or None}``.
    required : dict
        Each ``--require``d audit check: ``"passed"``, ``"failed"``, ``"not assessed"`` or ``"stale"``.
    needs_labels : bool
        Nothing failed, but ``max_rate`` was checked against a headline in state ``needs_labels`` (the
        calibration's labels do not support its cutoff yet): not a pass; ``exit_code`` is
        :data:`NEEDS_LABELS_EXIT` and the message starts "NEEDS LABELS:".
    offending : list of dict
        The first offending test items (records of the report's ``flagged`` list: each item and the
        training item that flagged it).
    verdict : Verdict, optional
        The scan's sibling decision the rates were read from (:class:`sibscan.verdict.Verdict`; None
        for a check of audit results alone).  ``check`` reads it, not a whole report.
    """

    passed: bool
    message: str
    rates: dict
    limits: dict
    offending: List[dict] = field(default_factory=list)
    verdict: object = field(default=None, repr=False)
    required: dict = field(default_factory=dict)
    needs_labels: bool = False

    @property
    def exit_code(self) -> int:
        """0 passed, 1 failed, :data:`NEEDS_LABELS_EXIT` (3) when only the labels behind the cutoff fall short."""
        if self.passed:
            return 0
        return NEEDS_LABELS_EXIT if self.needs_labels else 1

    @property
    def headline(self) -> dict:
        """The ``headline`` object (the same one ``report.json`` holds); empty for a check of audits alone."""
        return self.verdict.headline if self.verdict is not None else {}

    def to_dict(self) -> dict:
        """What ``sibscan check --json`` prints."""
        return {"passed": self.passed, "exit_code": self.exit_code, "needs_labels": self.needs_labels,
                "message": self.message, "rates": self.rates, "limits": self.limits, "headline": self.headline,
                "offending": self.offending}


def _pair_text(p: dict) -> str:
    how = "exact" if p["exact"] else f"score {fmt_score(p['score'])}"
    return f"test {p['test_id']} ~ train {p['train_id']} ({how})"


def _required(scan_dir, names: List[str]):
    """Each required audit check's state, and the sentences for the failing ones."""
    from .report.honest import load_audit

    audit = load_audit(scan_dir, ScanDir(scan_dir).manifest().get("dataset_fingerprint"))
    states, problems = {}, []
    rerun = f"run 'sibscan audit PREDICTIONS --scan {scan_dir}' (with --val/--selection for the split checks)"
    for name in names:
        flag = "--require " + name.replace("_", "-")
        if audit is None:
            states[name] = "not assessed"
            problems.append(f"{flag}: no audit recorded in {scan_dir}; {rerun}")
        elif audit["stale"]:
            states[name] = "stale"
            problems.append(f"{flag}: the audit in {audit['path']} was made for other scan data; {rerun}")
        elif name not in audit.get("checks", {}):
            states[name] = "not assessed"
            problems.append(f"{flag}: the audit in {audit['path']} did not run this check; {rerun}")
        elif not audit["checks"][name]["passed"]:
            states[name] = "failed"
            problems.append(f"{flag}: failed — {(audit.get('summaries') or {}).get(name, '')}")
        else:
            states[name] = "passed"
    return states, problems


def check(scan_dir, max_rate: Optional[float] = None, max_exact: Optional[float] = None, *,
          cutoff: Optional[float] = None, calibration=None, force: bool = False, n_pairs: int = 5,
          require: Sequence[str] = ()) -> CheckResult:
    """Compare a scan's test -> train sibling rates with limits.

    Parameters
    ----------
    scan_dir : str or Path
    max_rate : float in [0, 1], optional
        Largest allowed sibling rate: the report headline's rate — the calibrated estimate, or
        (without hand labels of this data) the share flagged at the cutoff.  Needs a cutoff.
    max_exact : float in [0, 1], optional
        Largest allowed share of test items with an exact training twin.
    cutoff, calibration, force
        As for :func:`sibscan.report.build_report`; ``max_rate`` needs a cutoff.
    n_pairs : int
        Offending pairs listed in the message.
    require : sequence of str
        Audit checks (``nan-free``, ``denominator``, ``val-split``, …) that must have passed in the
        scan's recorded audit (``SCAN/audits/evaluation``, written by ``sibscan audit --scan``); one that was not
        assessed, or was assessed on other data, fails too.

    Returns
    -------
    CheckResult
        ``passed`` is False when a rate is strictly above its limit or a required check did not pass, and
        when ``max_rate`` is checked against a calibration whose labels do not support its cutoff yet
        (headline state ``needs_labels``; then ``needs_labels`` is True and ``exit_code`` 3, unless
        something failed).

    Raises
    ------
    SibscanError
        No limit given, or the scan did not finish (its manifest's status is not "complete").
    """
    from .report.honest import check_name

    max_rate, max_exact = check_fraction(max_rate, "--max-rate"), check_fraction(max_exact, "--max-exact")
    names = [check_name(n) for n in require]
    if max_rate is None and max_exact is None and not names:
        raise SibscanError("give a limit: --max-rate X (siblings) and/or --max-exact Y (exact twins), as fractions "
                           "(0.01 = 1 %), and/or audit checks with --require nan-free,denominator,val-split")
    status = ScanDir(scan_dir).manifest().get("status")
    if status != "complete":  # a gate must not pass on rates of a scan that never finished
        raise SibscanError(f"{scan_dir} holds an incomplete scan (status {status!r}: interrupted, or still running); "
                           "finish it by re-running the same 'sibscan scan' command, then check again")
    states, audit_problems = _required(scan_dir, names) if names else ({}, [])
    if max_rate is None and max_exact is None:
        passed = not audit_problems
        ok = [f"{n.replace('_', '-')} passed" for n in names]
        message = ("OK: audit checks " + ", ".join(ok) + "." if passed else "FAIL: " + "; ".join(audit_problems) + ".")
        return CheckResult(passed, message, {}, {"max_rate": None, "max_exact": None}, required=states)
    result = _check_rates(scan_dir, max_rate, max_exact, cutoff, calibration, force, n_pairs)
    result.required = states
    if audit_problems:
        result.passed, result.needs_labels = False, False  # a failed audit check is a failure, whatever the labels
        result.message = ("FAIL: " + "; ".join(audit_problems) + ". "
                          + (result.message[len("OK: "):] if result.message.startswith("OK: ") else result.message))
    elif names:
        result.message += " Audit checks passed: " + ", ".join(n.replace("_", "-") for n in names) + "."
    return result


def _check_rates(scan_dir, max_rate, max_exact, cutoff, calibration, force, n_pairs) -> CheckResult:
    from .report.items import verdict_items
    from .verdict import Verdict

    verdict = Verdict.open(scan_dir, cutoff=cutoff, calibration=calibration, force=force)
    head = verdict.headline
    if max_rate is not None and head["state"] == "not_assessed":
        raise SibscanError("--max-rate needs a cutoff but the scan has none; calibrate it ('sibscan calibrate "
                           "SCAN_DIR'), pass --cutoff X or --calibration DIR, or gate on exact twins alone with "
                           "--max-exact")
    exact = head["exact_twins"]
    n = head["n"]
    rates = {"siblings": head["estimate"], "exact": exact["rate"] or 0.0}
    fail_rate = max_rate is not None and rates["siblings"] > max_rate
    fail_exact = max_exact is not None and rates["exact"] > max_exact
    # the rate of a cutoff its labels do not support passes no gate: the headline's sentence says why
    needs = max_rate is not None and head["state"] == "needs_labels"
    parts = []
    if max_rate is not None:  # the headline's sentence, as every output prints it, then the limit
        parts.append(f"{verdict.sentence}: {pct(rates['siblings'])} is {'above' if fail_rate else 'within'} the limit "
                     f"--max-rate {pct(max_rate)}")
    if max_exact is not None:
        parts.append(f"{exact['count']} of {n} ({pct(rates['exact'])}) are exact twins, "
                     f"{'above' if fail_exact else 'within'} the limit --max-exact {pct(max_exact)}")
    if head.get("note"):  # e.g. the scan's own calibration gave no cutoff: say which one is used, whatever its kind
        parts.append(head["note"])
    failed = fail_rate or fail_exact
    offending: List[dict] = []
    if needs and not failed:
        message = ("NEEDS LABELS: " + "; ".join(parts) + ". The gate does not pass on a cutoff its labels do not "
                   f"support (exit {NEEDS_LABELS_EXIT}): label more pairs with 'sibscan calibrate SCAN_DIR' (it says "
                   "which scores to label), then check again; or gate on a cutoff given by hand (--cutoff X, reported "
                   "as uncalibrated).")
    elif not failed:
        message = "OK: " + "; ".join(parts) + "."
    else:
        # the flagged items as the report lists them (hand labels decide the pairs they answer)
        flagged = verdict_items(verdict).flagged()
        offending = (flagged if fail_rate else [p for p in flagged if p["exact"]])[:n_pairs]
        message = ("FAIL: " + "; ".join(parts) + ". These test items have copies in the training set, so accuracy on "
                   "them can reflect memory rather than generalisation (compare accuracy on them with the rest: "
                   "'sibscan report SCAN_DIR --predictions FILE'): remove or replace them (`sibscan split SCAN_DIR "
                   "--out groups.csv --linkage single --resplit DIR` writes a split with no sibling pair across it; "
                   "the default --linkage complete keeps exact twins together but can leave sibling pairs across), or "
                   "raise the limit if they are intended.")
        if offending:
            message += " First offending pairs: " + "; ".join(_pair_text(p) for p in offending) + "."
    return CheckResult(not (failed or needs), message, rates, {"max_rate": max_rate, "max_exact": max_exact}, offending,
                       verdict, needs_labels=needs and not failed)


def _best_cosine(q: np.ndarray, db: np.ndarray, block: int = 2048):
    """Best cosine (and its row) of each query row against ``db``: brute force in blocks of queries."""
    best = np.full(len(q), -np.inf, np.float32)
    arg = np.zeros(len(q), np.int64)
    if len(db) == 0:
        return best, arg
    for s in range(0, len(q), block):
        sims = q[s: s + block] @ db.T
        arg[s: s + block] = sims.argmax(axis=1)
        best[s: s + block] = sims[np.arange(len(sims)), arg[s: s + block]]
    return best, arg


def assert_no_siblings(train, test, *, max_rate: float = 0.0, encoder=None, cutoff: Optional[float] = None,
                       decimals: int = 6, n_pairs: int = 5) -> dict:
    """Fail a test (``AssertionError``) when too many test items have a sibling in ``train``.

    Parameters
    ----------
    train, test : Items, list of str, or array-like of shape (n, d)
        The two splits (lists of strings are text; numeric arrays are table rows).
    max_rate : float in [0, 1]
        Largest allowed share of test items with a sibling (default 0: none at all).
    encoder : str or Encoder, optional
        Encoder for near siblings (default: the weight-free one of the modality, see
        ``DEFAULT_ENCODERS``). Only used when ``cutoff`` is given.
    cutoff : float, optional
        Cosine cutoff for near siblings; without it only exact twins are counted.
    decimals : int
        Rounding of numeric rows before fingerprinting.

    Returns
    -------
    dict
        ``{n_test, exact, near, rate}`` when the assertion holds.
    """
    max_rate = check_fraction(max_rate, "max_rate")
    check_decimals(decimals, "decimals")
    tr, te = as_items(train, "train"), as_items(test, "test")
    if tr.modality != te.modality:
        raise SibscanError(f"train is {tr.modality} but test is {te.modality}; compare like with like")
    exact = fingerprint_membership(fingerprint(te, decimals=decimals), fingerprint(tr, decimals=decimals))
    near = np.zeros(len(te), bool)
    best = np.full(len(te), np.nan, np.float32)
    arg = np.zeros(len(te), np.int64)
    if cutoff is not None:
        enc = get_encoder(encoder
                          or DEFAULT_ENCODERS[te.modality]) if encoder is None or isinstance(encoder, str) else encoder
        best, arg = _best_cosine(enc.encode(te.content), enc.encode(tr.content))
        near = (best >= cutoff) & ~exact
    sib = exact | near
    rate = float(sib.mean()) if len(te) else 0.0
    summary = {"n_test": len(te), "exact": int(exact.sum()), "near": int(near.sum()), "rate": rate}
    if rate > max_rate:
        rows = np.flatnonzero(sib)[:n_pairs]
        shown = "; ".join(
            f"test {te.ids[i]} " + ("(exact twin)" if exact[i] else f"~ train {tr.ids[arg[i]]} (cosine "
                                                                    f"{fmt_score(best[i])})")
            for i in rows)
        what = "exact twins only" if cutoff is None else f"exact or cosine >= {cutoff:g}"
        raise AssertionError(
            f"{int(sib.sum())} of {len(te)} test items ({pct(rate)}) have a sibling in train ({what}; "
            f"{summary['exact']} exact, {summary['near']} near), above max_rate {pct(max_rate)}: {shown}")
    return summary
