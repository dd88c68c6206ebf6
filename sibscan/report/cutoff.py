"""Which cutoff a report, check or split uses, and where it came from.

Precedence: an explicit ``cutoff`` > a ``calibration`` directory (refused when it belongs to another
dataset, encoder or verifier unless ``force``) > the scan's own ``SCAN_DIR/calibration`` when it holds a
fitted cutoff (what ``sibscan calibrate SCAN_DIR`` writes) > the scan manifest's ``cutoff`` entry >
none (only exact twins count).
"""
from __future__ import annotations

from typing import Optional

from ..errors import SibscanError
from ..stats import finite_or_none

__all__ = ["resolve_cutoff", "CUTOFF_SOURCES"]

CUTOFF_SOURCES = ("user", "calibrated", "uncalibrated", "none")


def _own_calibration(scan_dir):
    """``SCAN_DIR/calibration`` when it holds a fitted cutoff, else None."""
    from pathlib import Path

    from ..calibration.record import CUTOFF_FILE

    if scan_dir is None:
        return None
    own = Path(scan_dir) / "calibration"
    if not (own / CUTOFF_FILE).exists():
        return None
    from ..calibration import load_calibration

    cal = load_calibration(own)
    return cal if cal.cutoff is not None else None


def resolve_cutoff(manifest: dict, cutoff: Optional[float] = None, calibration=None, force: bool = False,
                   scan_dir=None):
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
    scan_dir : path, optional
        The scan directory: its own ``calibration/`` is used when no calibration is given and it
        holds a fitted cutoff.

    Returns
    -------
    record : dict
        ``{value, source, interval, calibration, score, n_labels, estimates, forced, status}``;
        ``value`` is None when there is no cutoff at all; ``status`` is the calibration's verdict
        ("ok", or why its labels cannot support the cutoff yet).
    calibration : Calibration or None
        The loaded calibration, when one was given.
    """
    rec = {"value": None, "source": "none", "interval": None, "calibration": None,
           "score": (manifest.get("cutoff") or {}).get("score"), "n_labels": None, "estimates": None,
           "forced": bool(force), "status": None}
    cal = None
    if calibration is None and cutoff is None:
        calibration = _own_calibration(scan_dir)
    if calibration is not None:
        from ..calibration import load_calibration

        cal = load_calibration(calibration) if not hasattr(calibration, "cutoff") else calibration
        cal.check_compatible(manifest, force=force)
        rec.update(
            value=finite_or_none(cal.cutoff), source="calibrated", calibration=str(calibration) if not hasattr(calibration, "cutoff") else getattr(calibration, "path", None),
            interval=[finite_or_none(v) for v in cal.interval] if getattr(cal, "interval", None) is not None else None,
            score=getattr(cal, "score", rec["score"]), n_labels=dict(getattr(cal, "n_labels", {}) or {}),
            estimates=dict(getattr(cal, "estimates", {}) or {}),
            status=getattr(cal, "status", None),
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
            rec.update(interval=None, calibration=None, n_labels=None, estimates=None, status=None)
        rec.update(value=cutoff, source="user")
    return rec, cal
