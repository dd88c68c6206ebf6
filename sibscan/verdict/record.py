"""The calibration record: ``cutoff.json`` beside ``labels.jsonl``, read back as :class:`Calibration`.

A calibration belongs to one dataset (the scan manifest's ``dataset_fingerprint``) and one
encoder/verifier (their identities); :meth:`Calibration.check_compatible` refuses any other scan
unless forced.  Calibrations kept in the repository live in ``calibration/<name>/`` and are found by
name with :func:`resolve` (a config's ``calibration = "<name>"``).
"""
from __future__ import annotations

import importlib.util

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Tuple

from sibscan.atomic import write_json
from sibscan.verdict.cutoffrule import supported
from sibscan.errors import CompatibilityError, SibscanError

__all__ = ["Calibration", "load_calibration", "calibration_in", "write_calibration", "resolve", "CALIBRATIONS_DIR",
           "CUTOFF_FILE", "LABELS_FILE"]

def _kept_calibrations() -> Path:
    """The folder of the calibrations kept in the repository: the ``sibscan.calibration`` package's own
    (``calibration/sibscan/calibration/<name>/cutoff.json``), found without importing it (the labelling
    flow sits far above this record)."""
    spec = importlib.util.find_spec("sibscan.calibration")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


#: calibrations kept in the repository: ``calibration/<name>/cutoff.json``
CALIBRATIONS_DIR = _kept_calibrations()
CUTOFF_FILE = "cutoff.json"
LABELS_FILE = "labels.jsonl"


@dataclass
class Calibration:
    """A fitted cutoff and its evidence (what ``cutoff.json`` holds).

    Attributes
    ----------
    cutoff : float or None
        None when the labels cannot support a cutoff (``status`` says why).
    interval : (float, float) or None
        Bootstrap 95 % interval of the cutoff.
    score : str
        ``"verified"`` or ``"similarity"``: the score the cutoff applies to.
    n_labels : dict
        ``{"same", "different", "skip"}`` counts of the answers the fit used: those about pairs the
        scan scores (``extra["n_labelled_outside_population"]`` counts the others labels.jsonl keeps, and
        ``extra["n_labelled_not_needed"]`` the answers about exact twins or unscored pairs, which decide nothing).
    estimates : dict
        ``precision``, ``recall``, ``sibling_rate [lo, mid, hi]``, ``siblings``, ``flagged``,
        ``expected_chance_siblings``…
    baseline : dict
        The random-pair baseline's summary (no histogram).
    status : str
        ``"ok"`` or the reason the labels cannot support a cutoff; ``advice`` lists what would help.
    """

    cutoff: Optional[float]
    interval: Optional[Tuple[float, float]]
    score: str
    encoder_identity: str
    verifier_identity: Optional[str]
    dataset_fingerprint: str
    n_labels: dict = field(default_factory=dict)
    estimates: dict = field(default_factory=dict)
    baseline: dict = field(default_factory=dict)
    status: str = "ok"
    advice: list = field(default_factory=list)
    rule: str = ""
    path: Optional[Path] = None
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the labels support the cutoff (:func:`sibscan.verdict.cutoffrule.supported` reads ``status``)."""
        return supported(self.status)

    def to_dict(self) -> dict:
        return {
            "cutoff": self.cutoff, "interval": list(self.interval) if self.interval is not None else None,
            "score": self.score, "rule": self.rule, "status": self.status, "advice": list(self.advice),
            "encoder_identity": self.encoder_identity, "verifier_identity": self.verifier_identity,
            "dataset_fingerprint": self.dataset_fingerprint, "n_labels": self.n_labels,
            "estimates": self.estimates, "baseline": self.baseline, **self.extra,
        }

    def mismatches(self, manifest: dict) -> list:
        """What differs between this calibration and a scan's manifest, one phrase each."""
        enc = (manifest.get("encoder") or {}).get("identity")
        ver = (manifest.get("verifier") or {}).get("identity") if manifest.get("verifier") else None
        fp = manifest.get("dataset_fingerprint")
        out = []
        if enc != self.encoder_identity:
            out.append(f"encoder identity {self.encoder_identity!r} (scan: {enc!r})")
        if ver != self.verifier_identity:
            out.append(f"verifier identity {self.verifier_identity!r} (scan: {ver!r})")
        if fp != self.dataset_fingerprint:
            out.append(f"dataset fingerprint {self.dataset_fingerprint!r} (scan: {fp!r})")
        return out

    def check_compatible(self, manifest: dict, force: bool = False) -> list:
        """Refuse a scan made with another encoder, verifier or data; with ``force`` warn and go on.

        Returns
        -------
        list of str
            The mismatches (empty when compatible).

        Raises
        ------
        CompatibilityError
            Naming the first mismatch and the fix.
        """
        bad = self.mismatches(manifest)
        if bad:
            where = self.path or "this calibration"
            msg = f"calibration {where} was made with another {'; '.join(bad)}"
            if not force:
                raise CompatibilityError(
                    f"{msg}; recalibrate this scan with 'sibscan calibrate SCAN_DIR', or pass --force to apply it "
                    "anyway"
                )
            warnings.warn(msg + "; applied anyway (--force)", stacklevel=2)
        return bad


def write_calibration(directory: Path, cal: Calibration) -> Path:
    """Write ``directory/cutoff.json`` atomically and set ``cal.path``."""
    directory = Path(directory)
    write_json(directory / CUTOFF_FILE, cal.to_dict())
    cal.path = directory
    return directory / CUTOFF_FILE


_FIELDS = ("cutoff", "interval", "score", "encoder_identity", "verifier_identity", "dataset_fingerprint", "n_labels",
           "estimates", "baseline", "status", "advice", "rule")


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration directory (or its ``cutoff.json``).

    Raises
    ------
    SibscanError
        When there is no ``cutoff.json`` or it is not a calibration record.
    """
    path = Path(path)
    file = path if path.is_file() else path / CUTOFF_FILE
    if not file.exists():
        raise SibscanError(f"{path} holds no calibration ({CUTOFF_FILE} missing); run 'sibscan calibrate SCAN_DIR' "
                           "first")
    try:
        with open(file, encoding="utf-8") as fh:
            d = json.load(fh)
    except json.JSONDecodeError as exc:
        raise SibscanError(f"{file} is not valid JSON ({exc.msg}, line {exc.lineno}); rewrite it with "
                           "'sibscan calibrate SCAN_DIR' (it refits from the labels there)") from None
    if not isinstance(d, dict):
        raise SibscanError(f"{file} is not a sibscan calibration (holds a JSON {type(d).__name__}, not an object); "
                           "rewrite it with 'sibscan calibrate SCAN_DIR'")
    missing = [k for k in ("cutoff", "score", "encoder_identity", "dataset_fingerprint") if k not in d]
    if missing:
        raise SibscanError(f"{file} is not a sibscan calibration (missing {', '.join(missing)}); rewrite it with "
                           "'sibscan calibrate SCAN_DIR'")
    interval = d.get("interval")
    return Calibration(
        cutoff=None if d["cutoff"] is None else float(d["cutoff"]),
        interval=tuple(interval) if interval is not None else None,
        score=d["score"], encoder_identity=d["encoder_identity"], verifier_identity=d.get("verifier_identity"),
        dataset_fingerprint=d["dataset_fingerprint"], n_labels=d.get("n_labels", {}), estimates=d.get("estimates", {}),
        baseline=d.get("baseline", {}), status=d.get("status", "ok"), advice=d.get("advice", []),
        rule=d.get("rule", ""), path=file.parent, extra={k: v for k, v in d.items() if k not in _FIELDS},
    )


def calibration_in(folder: str | Path) -> Optional[Calibration]:
    """``folder``'s calibration record when it holds a ``cutoff.json`` (with or without a cutoff), else None.

    Raises
    ------
    SibscanError
        When its ``cutoff.json`` is not a calibration record (as :func:`load_calibration`).
    """
    return load_calibration(folder) if (Path(folder) / CUTOFF_FILE).exists() else None


def resolve(name_or_path: str | Path) -> Path:
    """Find a calibration: ``calibration/<name>/`` kept in the repository, else a path.

    Raises
    ------
    SibscanError
        Naming both places looked in, and the calibrations kept in the repository.
    """
    text = str(name_or_path)
    kept = CALIBRATIONS_DIR / text
    if "/" not in text and "\\" not in text and (kept / CUTOFF_FILE).exists():
        return kept
    path = Path(text).expanduser()
    if (path / CUTOFF_FILE).exists() or (path.is_file() and path.name == CUTOFF_FILE):
        return path
    available = sorted(p.parent.name for p in CALIBRATIONS_DIR.glob(f"*/{CUTOFF_FILE}"))
    raise SibscanError(
        f"no calibration {text!r}: neither {kept} nor {path} holds a {CUTOFF_FILE}; "
        f"kept in the repository: {', '.join(available) or 'none'}"
    )
