"""The labeller's answers on control pairs (:mod:`.controls`), kept apart from the labels of pairs.

* ``controls.json`` — the controls made so far (:class:`Control`: what each shows and the answer it
  should get), tied to the scan's identity as ``draw.json`` is.
* ``controls.jsonl`` — the answers, appended as given, never read as labels of test-train pairs:
  ``{dataset_fingerprint, encoder_identity, verifier_identity, control_id, truth, kind, query_id,
  shown_id, label, definition, time, labeller, source}``; the latest record of a control counts, an
  ``undo`` withdraws it.

:func:`tally` is the one count of them (:class:`sibscan.stats.ControlAnswers`; skips are not answers),
:func:`controls_of` reads it from a calibration folder and :func:`answers_line` says it in one line.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Dict, List, Optional

from sibscan.atomic import append_jsonl
from sibscan.errors import InputError, SibscanError
from sibscan.loaders.records import json_objects
from sibscan.stats import ControlAnswers

from ..verdict.labelfile import ALL_LABELS
from .labels import Identity, _default_labeller

__all__ = ["ANSWERS_FILE", "CONTROLS_FILE", "COPIES_DIR", "Control", "ControlStore", "DEFAULT_SHARE", "answers_line",
           "check_share", "controls_of", "read_controls", "tally"]

CONTROLS_FILE = "controls.json"
ANSWERS_FILE = "controls.jsonl"
COPIES_DIR = "controls"
#: the share of control pairs among the pairs shown, unless ``controls=`` says otherwise
DEFAULT_SHARE = 0.1
_MAX_SHARE = 0.5


def check_share(share) -> float:
    """``share`` as a float in ``[0, 0.5]`` (0 turns the controls off), else :class:`SibscanError`."""
    try:
        value = float(share)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 <= value <= _MAX_SHARE:  # NaN fails too
        raise SibscanError("controls is the share of control pairs among the pairs shown, from 0 (none) to "
                           f"{_MAX_SHARE:g}; got {share!r} (default {DEFAULT_SHARE:g}: one in ten)")
    return value


@dataclass
class Control:
    """One control pair: what it shows and the answer it should get (``truth``)."""

    id: str
    slot: int
    truth: str
    kind: str
    query_index: int
    query_id: str
    shown_id: str
    train_index: Optional[int] = None
    text: Optional[str] = None
    values: Optional[list] = None
    image: Optional[str] = None
    transform: Optional[str] = None
    score: Optional[float] = None

    @staticmethod
    def from_dict(d: dict) -> "Control":
        return Control(**{f.name: d.get(f.name) for f in fields(Control)})


class ControlStore:
    """``controls.jsonl``: the labeller's answers on control pairs, appended, never rewritten."""

    def __init__(self, path: Path, identity: Identity, *, definition: Optional[str] = None,
                 labeller: Optional[str] = None):
        self.path = Path(path)
        self.identity = identity
        self.definition = definition
        self.labeller = labeller or _default_labeller()
        self.records: List[dict] = []
        if self.path.exists():
            with open(self.path, encoding="utf-8") as fh:
                for row, rec in json_objects(fh, self.path, hint="; each line is one answer on a control pair"):
                    if "control_id" not in rec or rec.get("label") not in ALL_LABELS:
                        raise InputError(f"not an answer on a control pair (needs control_id and a label among "
                                         f"{', '.join(ALL_LABELS)}); remove the line", path=self.path, row=row)
                    self.records.append(rec)

    def current(self) -> Dict[str, dict]:
        """Each control's effective record (its latest answer; an undo withdraws it), in the order of the latest
        answers."""
        cur: Dict[str, dict] = {}
        for rec in self.records:
            cur.pop(rec["control_id"], None)
            if rec["label"] != "undo":
                cur[rec["control_id"]] = rec
        return cur

    def append(self, control: Control, label: str, source: str = "ui", given: Optional[dict] = None) -> dict:
        """Append one answer (or ``"undo"``) on ``control``; ``given`` (an imported record) keeps its
        ``definition``, ``time`` and ``labeller``."""
        if label not in ALL_LABELS:
            raise SibscanError(f"unknown label {label!r}; use one of: {', '.join(ALL_LABELS)}")
        given = given or {}
        rec = {**self.identity.to_dict(), "control_id": control.id, "truth": control.truth, "kind": control.kind,
               "query_id": control.query_id, "shown_id": control.shown_id, "label": label,
               "definition": given.get("definition", self.definition),
               "time": given.get("time") or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "labeller": given.get("labeller") or self.labeller, "source": source}
        append_jsonl(self.path, rec)
        self.records.append(rec)
        return rec

    def import_records(self, records: List[dict], controls: List[Control], source: str) -> tuple:
        """Append imported answers on ``controls`` (records with a ``control_id``, as a labels file
        carries them); returns ``(appended, about controls this calibration does not hold)``.  An answer
        that repeats the control's current one is not appended again."""
        by_id = {c.id: c for c in controls}
        added = unknown = 0
        for rec in records:
            c = by_id.get(str(rec["control_id"]))
            if c is None:
                unknown += 1
                continue
            cur = self.current().get(c.id)
            if (cur or {}).get("label") == rec["label"] or (rec["label"] == "undo" and cur is None):
                continue
            self.append(c, rec["label"], source=source, given=rec)
            added += 1
        return added, unknown


def read_controls(calibration_dir) -> Dict[str, object]:
    """``controls.json`` of a calibration folder: ``{"identity": dict, "controls": [Control]}`` (empty when absent)."""
    path = Path(calibration_dir) / CONTROLS_FILE
    if not path.exists():
        return {"identity": {}, "controls": []}
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        controls = [Control.from_dict(c) for c in d["controls"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise SibscanError(f"{path} is not a record of control pairs ({exc}); "
                           "delete it (new controls are made)") from None
    return {"identity": {k: d.get(k) for k in ("dataset_fingerprint", "encoder_identity", "verifier_identity")},
            "controls": controls}


def tally(controls: List[Control], answers: Dict[str, dict]) -> ControlAnswers:
    """The one count: each control's current answer against its truth (skips are not answers)."""
    truth = {c.id: c.truth for c in controls}
    n = {"same": 0, "different": 0}
    said_same = {"same": 0, "different": 0}
    for cid, rec in answers.items():
        t = truth.get(cid)
        if t is None or rec["label"] not in ("same", "different"):
            continue
        n[t] += 1
        said_same[t] += rec["label"] == "same"
    return ControlAnswers(n_same=n["same"], same_answered_same=said_same["same"], n_different=n["different"],
                          different_answered_same=said_same["different"])


def controls_of(calibration_dir) -> ControlAnswers:
    """The labeller's answers on the control pairs of a calibration folder (``controls.json`` and
    ``controls.jsonl``), as :class:`sibscan.stats.ControlAnswers`; all zero where none were answered."""
    made = read_controls(calibration_dir)
    path = Path(calibration_dir) / ANSWERS_FILE
    if not made["controls"] or not path.exists():
        return ControlAnswers()
    return tally(made["controls"], ControlStore(path, Identity("", "", None)).current())


def answers_line(ca: Optional[ControlAnswers]) -> str:
    """The labeller's measured error in one line: ``control pairs: 6 of 6 known-same answered same, ...``."""
    if ca is None or ca.n == 0:
        return "control pairs: not assessed (none answered)"
    return (f"control pairs: {ca.same_answered_same} of {ca.n_same} known-same answered same, "
            f"{ca.different_answered_same} of {ca.n_different} known-different answered same")
