"""Which cutoff decides "sibling", and where it came from: the one policy of scan, report, split and check.

Precedence, first that applies:

1. a value given by hand (``--cutoff X``): kind ``"uncalibrated"``;
2. a calibration given (``--calibration DIR``, or the name of one kept in the repository's
   ``calibration/``): kind ``"calibrated"``; refused when it was made for another dataset, encoder
   or verifier, unless ``force``;
3. the scan's own ``SCAN_DIR/calibration`` when it holds a fitted cutoff (what ``sibscan calibrate
   SCAN_DIR`` writes; only where a ``scan_dir`` is passed): ``"calibrated"``; a scan being written
   (``skip_foreign_own``) passes over one made for other data, encoder or verifier (the scan it
   replaces) instead of refusing it;
4. the cutoff the scan recorded in its manifest (whatever kind it was); when the scan's own
   calibration exists but gave no cutoff, or was passed over, its evidence carries a ``note`` saying
   so and why (the headline's ``note``: report and check print it, the scan's summary too, never a
   silent fallback);
5. none (kind ``"none"``): only exact twins count.

Giving both a value and a calibration is refused.  A hand-given cutoff is a similarity in [-1, 1]
(:func:`sibscan.stats.check_cutoff_value`, also run by the scan's option check before any work).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from ..errors import SibscanError
from ..stats import check_cutoff_source, finite_or_none
from .record import calibration_in, load_calibration, resolve

__all__ = ["KINDS", "Cutoff", "resolve_cutoff", "score_kind"]

#: where a cutoff came from
KINDS = ("calibrated", "uncalibrated", "none")


@dataclass(frozen=True)
class Cutoff:
    """A cutoff on the deciding score, and its evidence.

    Attributes
    ----------
    value : float or None
        None: no cutoff, only exact twins count.
    kind : {"calibrated", "uncalibrated", "none"}
        Written as ``source`` in manifest.json and report.json (the key those files have always had).
    evidence : dict
        ``score`` ("verified" | "similarity": the score the cutoff applies to), ``interval`` ([lo, hi]
        or None), ``calibration`` (path or None), ``n_labels``, ``estimates`` (the calibration's
        ``{rate: {estimate, lo, hi, ...}, sibling_rate: [lo, mid, hi], precision, recall, ...}``),
        ``status`` (the calibration's verdict: "ok", or why its labels cannot support the cutoff
        yet), ``forced`` (bool), ``mismatches`` (what differs between the calibration and the scan,
        when forced), ``rule`` and ``definition`` (of "same").  :func:`sibscan.verdict.headline.headline` reads it.
    """

    value: Optional[float]
    kind: str
    evidence: dict = field(default_factory=dict)

    def record(self) -> dict:
        """The JSON form: ``{value, source, interval, calibration, score, n_labels, estimates, forced, status,
        mismatches, rule, definition, labeller}``."""
        e = self.evidence
        return {"value": self.value, "source": self.kind, "interval": e.get("interval"),
                "calibration": e.get("calibration"), "score": e.get("score"), "n_labels": e.get("n_labels"),
                "estimates": e.get("estimates"), "forced": bool(e.get("forced", False)), "status": e.get("status"),
                "mismatches": e.get("mismatches") or [], "rule": e.get("rule"), "definition": e.get("definition"),
                "labeller": e.get("labeller")}

    @classmethod
    def from_record(cls, rec: Optional[dict]) -> "Cutoff":
        """Read back what :meth:`record` wrote (a manifest's ``cutoff``); older records lack keys."""
        rec = rec or {}
        if rec.get("value") is None:
            return cls(None, "none", {"score": rec.get("score")})
        kind = rec.get("source") or "uncalibrated"
        return cls(float(rec["value"]), "uncalibrated" if kind == "user" else kind,
                   {k: rec.get(k) for k in ("score", "interval", "calibration", "n_labels", "estimates", "status",
                                            "forced", "mismatches", "rule", "definition", "labeller")})


def score_kind(manifest: dict) -> str:
    """The score a scan decides on: ``"verified"`` when it has a verifier, else ``"similarity"``."""
    return "verified" if manifest.get("verifier") else "similarity"


def _from_calibration(cal, manifest: dict, force: bool) -> Cutoff:
    mismatches = cal.check_compatible(manifest, force=force)
    if cal.cutoff is None:
        raise SibscanError(
            f"the calibration in {cal.path} has no cutoff yet ({cal.status}); label more pairs with "
            "'sibscan calibrate', or pass --cutoff X for an uncalibrated one"
        )
    return Cutoff(finite_or_none(cal.cutoff), "calibrated", {
        "score": cal.score,
        # resolved: the scan records it, and a report run from another directory reads its labels.jsonl
        "calibration": None if cal.path is None else str(Path(cal.path).resolve()),
        "interval": None if cal.interval is None else [finite_or_none(v) for v in cal.interval],
        "n_labels": dict(cal.n_labels or {}), "estimates": dict(cal.estimates or {}), "status": cal.status,
        # forced: applied despite mismatches (a --force that had nothing to override is not recorded as one)
        "forced": bool(force and mismatches), "mismatches": list(mismatches), "rule": cal.rule,
        "definition": (cal.extra or {}).get("definition"),
        # who answered (sibscan.labeller): "oracle" for a calibration made from the planted truth
        "labeller": (cal.extra or {}).get("labeller")})


def resolve_cutoff(manifest: dict, *, cutoff: Optional[float] = None, calibration=None, force: bool = False,
                   scan_dir=None, skip_foreign_own: bool = False) -> Cutoff:
    """The cutoff a scan's rates are counted at (precedence in the module docstring).

    Parameters
    ----------
    manifest : dict
        The scan's manifest (its identities are checked against a calibration; its recorded cutoff
        is the fallback).
    cutoff : float, optional
        A hand-given cutoff on the deciding score.
    calibration : str, Path or Calibration, optional
        A calibration directory, the name of one kept in the repository, or one already loaded.
    force : bool
        Apply a calibration made for another dataset/encoder/verifier anyway (recorded as ``forced``).
    scan_dir : path, optional
        The scan directory: its own ``calibration/`` is used when nothing else is given.
    skip_foreign_own : bool
        Pass over the scan's own calibration when it was made for other data, encoder or verifier,
        with a ``note``, instead of refusing it (or, with ``force``, applying it): a scan being written
        passes True, as a scan started over with other data keeps the calibration of the one it replaces.

    Returns
    -------
    Cutoff
    """
    check_cutoff_source(cutoff, calibration)
    if cutoff is not None:
        return Cutoff(float(cutoff), "uncalibrated", {"score": score_kind(manifest), "forced": bool(force)})
    if calibration is not None:
        cal = calibration if hasattr(calibration, "cutoff") else load_calibration(resolve(calibration))
        return _from_calibration(cal, manifest, force)
    unreadable = None
    try:
        own = None if scan_dir is None else calibration_in(Path(scan_dir) / "calibration")
    except SibscanError as exc:
        if not skip_foreign_own:
            raise
        # a scan being written passes over an own record it cannot read (a scan started over in a folder
        # whose cutoff.json broke would otherwise be refused, with advice that needs a finished scan)
        own, unreadable = None, str(exc)
    foreign = own.mismatches(manifest) if skip_foreign_own and own is not None and own.cutoff is not None else []
    if own is not None and own.cutoff is not None and not foreign:
        return _from_calibration(own, manifest, force)
    recorded = Cutoff.from_record(manifest.get("cutoff"))
    evidence = {**recorded.evidence, "score": recorded.evidence.get("score") or score_kind(manifest),
                "forced": bool(force)}
    used = "no cutoff is used" if recorded.value is None else "the scan's recorded cutoff is used"
    if unreadable is not None:
        evidence["note"] = f"{unreadable.rstrip('.')} — so {used} (or delete it, or pass --cutoff X)"
    if own is not None:
        evidence["note"] = (f"the calibration in {own.path} gives no cutoff ({own.status}), so {used}"
                            if not foreign else
                            f"the calibration in {own.path} was made with another {'; '.join(foreign)}, so {used} "
                            f"(report and check refuse it until then): recalibrate with 'sibscan calibrate "
                            f"{Path(scan_dir)}', or pass --calibration {own.path} --force to apply it")
    return replace(recorded, evidence=evidence)
