"""Reading ``labels.jsonl`` (the answers of a calibration) and the answers that decide a scan's pairs.

Below the calibration flow (layer 5, like the loaders it uses): the scan's printed summary, the
report, ``split`` and ``check`` read the answers here, the labelling session writes them with
:class:`.labels.LabelStore` (whose module docstring gives the record's form).
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import List, Optional, Tuple

from sibscan.verdict.cutoff import Cutoff, resolve_cutoff
from sibscan.errors import InputError, SibscanError
from sibscan.loaders.records import json_objects
from sibscan.verdict.pairdecision import PairLabels

from .record import LABELS_FILE, calibration_in

__all__ = ["ALL_LABELS", "LABELS", "cutoff_and_labels", "read_label_file", "scan_labels"]

LABELS = ("same", "different", "skip")
#: what a line of labels.jsonl may hold: an answer, or "undo" (which takes back the answer on that pair)
ALL_LABELS = LABELS + ("undo",)
_REQUIRED = ("query_id", "neighbour_id", "label")


def read_label_file(path: Path) -> List[dict]:
    """Parse a labels JSONL file, raising :class:`InputError` naming the file and line of a bad record."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8") as fh:
        for row, rec in json_objects(fh, path, hint="; each line is one JSON label record"):
            missing = [k for k in _REQUIRED if k not in rec]
            if missing:
                raise InputError(f"label record lacks {', '.join(missing)}; "
                                 "see 'sibscan calibrate --help' for the form", path=path, row=row)
            if rec["label"] not in ALL_LABELS:
                raise InputError(f"unknown label {rec['label']!r}; use one of: {', '.join(ALL_LABELS)}", path=path,
                                 row=row)
            rec["_row"] = row
            records.append(rec)
    return records


def scan_labels(scan_dir, cutoff, dataset_fingerprint: Optional[str]) -> PairLabels:
    """The answers that decide a scan's pairs: the ``labels.jsonl`` of the calibration behind its cutoff
    (``cutoff.evidence["calibration"]``), else of the scan's own ``calibration/``; none without a cutoff.

    Parameters
    ----------
    scan_dir : path
    cutoff : sibscan.verdict.cutoff.Cutoff
    dataset_fingerprint : str or None
        The scan's; answers recorded for other data are left out.

    Raises
    ------
    SibscanError
        The folder's ``cutoff.json`` is unreadable and the cutoff is calibrated (it is that record's);
        for a cutoff that does not come from it (given by hand) a warning says so and the answers are read.
    """
    if cutoff.value is None:
        return PairLabels.empty()
    where = (cutoff.evidence or {}).get("calibration") if cutoff.kind == "calibrated" else None
    folder = Path(where) if where else Path(scan_dir) / "calibration"
    path = folder / LABELS_FILE
    if not path.exists():
        if where:  # a calibrated cutoff whose answers cannot be read: say so, never count silently without them
            warnings.warn(f"the calibration behind the cutoff ({folder}) has no {LABELS_FILE} to read from here, so no "
                          "hand labels decide pairs; pass --calibration DIR with its path")
        return PairLabels.empty()
    # records without a fingerprint are only trusted in a calibration made for this data
    try:
        own_fp = _calibration_fingerprint(folder)
        keep_unmarked = dataset_fingerprint is None or own_fp in (None, dataset_fingerprint)
    except SibscanError as err:
        if where:  # the record behind the cutoff in use: refuse, as reading it would, and say what to do
            raise SibscanError(f"{err}: it is the calibration the cutoff in use comes from; rewrite it with "
                               "'sibscan calibrate SCAN_DIR', or pass --cutoff X or --calibration DIR") from None
        # the scan's own cutoff.json, unread by a cutoff given by hand (or the scan's): warn, go on.  Whose
        # data its unmarked answers are about is unknown, so they decide nothing, unless the scan has no
        # fingerprint either (then every answer is kept, as from_records keeps them)
        what = ("every answer in it decides its pair (the scan has no dataset fingerprint to tell other data by)"
                if dataset_fingerprint is None else "its answers without a dataset fingerprint decide nothing here")
        warnings.warn(f"{err}; the cutoff in use is not that calibration's, so {path} is read anyway: {what}")
        keep_unmarked = False
    return PairLabels.from_records(read_label_file(path), dataset_fingerprint, source=str(path),
                                   keep_unmarked=keep_unmarked)


def cutoff_and_labels(manifest: dict, scan_dir, *, cutoff: Optional[float] = None, calibration=None,
                      force: bool = False, writing: bool = False) -> Tuple[Cutoff, PairLabels]:
    """The cutoff a scan's rates are counted at and the hand labels behind it that decide its pairs, as
    every command reads them: :func:`sibscan.verdict.cutoff.resolve_cutoff`, then :func:`scan_labels`.  Each
    warns about what it cannot use, so a command calls this once and hands both on.

    Parameters
    ----------
    manifest : dict
        The scan's manifest (its identities, recorded cutoff and dataset fingerprint).
    scan_dir : path
        The scan directory.
    cutoff, calibration, force
        As :func:`sibscan.verdict.cutoff.resolve_cutoff`.
    writing : bool
        True for the scan being written into ``scan_dir``: its own ``calibration/`` gives the cutoff when
        nothing else does, as for every other command (so a re-run prints and records what ``report``
        uses), except one made for other data, encoder or verifier, which is passed over with a note
        (``skip_foreign_own`` of :func:`~sibscan.verdict.cutoff.resolve_cutoff`).

    Returns
    -------
    (Cutoff, PairLabels)
    """
    at = resolve_cutoff(manifest, cutoff=cutoff, calibration=calibration, force=force, scan_dir=scan_dir,
                        skip_foreign_own=writing)
    return at, scan_labels(scan_dir, at, manifest.get("dataset_fingerprint"))


def _calibration_fingerprint(folder: Path) -> Optional[str]:
    """The dataset fingerprint in ``folder``'s calibration record, None where it has none."""
    cal = calibration_in(folder)
    return None if cal is None else cal.dataset_fingerprint
