"""Which cutoff a report, check or split uses, and where it came from.

Precedence: an explicit ``cutoff`` > a ``calibration`` directory (refused when it belongs to another
dataset, encoder or verifier unless ``force``) > the scan manifest's ``cutoff`` entry > none (only
exact twins count).
"""
from __future__ import annotations

from typing import Optional

from ..errors import SibscanError
from .stats import finite_or_none

__all__ = ["resolve_cutoff", "CUTOFF_SOURCES"]

CUTOFF_SOURCES = ("user", "calibrated", "uncalibrated", "none")


def _load_calibration(path):
    from ..errors import require

    cal_mod = require("sibscan.calibration", "all", "reading a calibration")
    if not hasattr(cal_mod, "load_calibration"):
        raise SibscanError("this sibscan has no calibration support (sibscan.calibration.load_calibration missing)")
    return cal_mod.load_calibration(path)


def resolve_cutoff(manifest: dict, cutoff: Optional[float] = None, calibration=None, force: bool = False):
    """The cutoff record used downstream.

    Parameters
    ----------
    manifest : dict
        The scan's manifest.
    cutoff : float, optional
        An explicit cutoff on the deciding score; wins over everything else.
    calibration : str, Path or Calibration, optional
        A calibration directory (or an already loaded calibration); checked against the manifest.
    force : bool
        Apply a calibration made for another dataset/encoder anyway (recorded in the report).

    Returns
    -------
    record : dict
        ``{value, source, interval, calibration, score, n_labels, estimates, forced}``;
        ``value`` is None when there is no cutoff at all.
    calibration : Calibration or None
        The loaded calibration, when one was given.
    """
    rec = {"value": None, "source": "none", "interval": None, "calibration": None,
           "score": (manifest.get("cutoff") or {}).get("score"), "n_labels": None, "estimates": None,
           "forced": bool(force)}
    cal = None
    if calibration is not None:
        cal = _load_calibration(calibration) if not hasattr(calibration, "cutoff") else calibration
        cal.check_compatible(manifest, force=force)
        rec.update(
            value=finite_or_none(cal.cutoff), source="calibrated", calibration=str(calibration) if not hasattr(calibration, "cutoff") else getattr(calibration, "path", None),
            interval=[finite_or_none(v) for v in cal.interval] if getattr(cal, "interval", None) is not None else None,
            score=getattr(cal, "score", rec["score"]), n_labels=dict(getattr(cal, "n_labels", {}) or {}),
            estimates=dict(getattr(cal, "estimates", {}) or {}),
        )
    else:
        mc = manifest.get("cutoff") or {}
        if mc.get("value") is not None:
            rec.update(value=float(mc["value"]), source=mc.get("source") or "uncalibrated",
                       calibration=mc.get("calibration"), interval=mc.get("interval"))
            if mc.get("n_labels") is not None:
                rec["n_labels"] = mc["n_labels"]
    if cutoff is not None:
        cutoff = float(cutoff)
        if not -1.0 <= cutoff <= 1.0:
            raise SibscanError(f"--cutoff is a similarity in [-1, 1], got {cutoff}")
        if cal is None:
            rec.update(interval=None, calibration=None, n_labels=None, estimates=None)
        rec.update(value=cutoff, source="user")
    return rec, cal
