"""``labels.jsonl``: the append-only log of human answers.

One JSON record per line, appended (and fsynced) the moment an answer is given; the file is never
rewritten, so quitting half-way loses nothing.  A record is::

    {"dataset_fingerprint", "encoder_identity", "verifier_identity",
     "query_split", "query_id", "neighbour_split", "neighbour_id",
     "score", "score_kind", "label", "definition", "time", "labeller", "source"}

``label`` is ``same``, ``different`` or ``skip``; ``undo`` withdraws the pair's current answer.
The latest record of a pair supersedes the earlier ones, so an undo (or a changed answer) is a new
line, not an edit.  ``definition`` is the written definition of "same" the answer was given under.

A label belongs to a pair of items, not to the encoder that proposed it: records made under another
encoder or verifier are accepted (a scan of the same data with another encoder reuses them for
the pairs it also scores); records made for other data (another dataset fingerprint) are refused.
"""
from __future__ import annotations

import getpass
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from sibscan.atomic import append_jsonl
from sibscan.errors import CompatibilityError, InputError
from sibscan.verdict.pairdecision import latest_answers, pair_key

from ..verdict.labelfile import ALL_LABELS, LABELS, read_label_file

__all__ = ["Imported", "LabelStore", "Identity"]

PairKey = Tuple[str, str, str, str]


@dataclass(frozen=True)
class Identity:
    """What a label is valid for: the dataset and the encoder/verifier that scored the pair."""

    dataset_fingerprint: str
    encoder_identity: str
    verifier_identity: Optional[str]

    def to_dict(self) -> dict:
        return {"dataset_fingerprint": self.dataset_fingerprint, "encoder_identity": self.encoder_identity,
                "verifier_identity": self.verifier_identity}

    def mismatch(self, rec: dict) -> Optional[str]:
        """The first identity field ``rec`` disagrees on, as ``"field 'x' (this scan: 'y')"``, or None."""
        for name, mine in self.to_dict().items():
            theirs = rec.get(name)
            if theirs != mine:
                return f"{name.replace('_', ' ')} {theirs!r} (this scan: {mine!r})"
        return None


@dataclass
class Imported:
    """What :meth:`LabelStore.import_file` did: records appended, and the pairs the file answers."""

    added: int
    pairs: set
    other_encoder: int = 0
    definitions: Optional[Dict[str, int]] = None
    #: records answering a control pair (``control_id``): not labels of a pair, left to :mod:`.controls`
    controls: Optional[List[dict]] = None


class LabelStore:
    """The labels of one calibration: read, appended to, never rewritten.

    Parameters
    ----------
    path : Path
        ``labels.jsonl``.
    identity : Identity
        The scan's dataset fingerprint and encoder/verifier identities; records made for another
        dataset are refused (:class:`CompatibilityError`) unless ``force`` (another encoder or
        verifier is fine: labels are about pairs).
    definition : str, optional
        The definition of "same" new answers are given under (recorded with each).
    """

    def __init__(self, path: str | os.PathLike, identity: Identity, *, force: bool = False,
                 labeller: Optional[str] = None, definition: Optional[str] = None):
        self.path = Path(path)
        self.identity = identity
        self.force = force
        self.definition = definition
        self.labeller = labeller or _default_labeller()
        self.records: List[dict] = []
        for rec in read_label_file(self.path):
            self._check(rec, self.path)
            rec.pop("_row", None)
            self.records.append(rec)

    def _check(self, rec: dict, source: Path) -> None:
        theirs = rec.get("dataset_fingerprint")
        if theirs != self.identity.dataset_fingerprint and not self.force:
            raise CompatibilityError(
                f"{source}, row {rec.get('_row', '?')}: label made for other data (dataset fingerprint {theirs!r}; "
                f"this scan: {self.identity.dataset_fingerprint!r}); calibrate into a new --out directory, or pass "
                "--force to use these labels anyway"
            )

    # --- state ---------------------------------------------------------------------------------
    def current(self) -> Dict[PairKey, dict]:
        """Each pair's effective record (its latest answer; pairs whose latest record is an undo are absent),
        keyed by :func:`sibscan.verdict.pairdecision.pair_key` (a test/train pair in its test -> train orientation,
        as the report reads the same file)."""
        return latest_answers(self.records)

    def counts(self) -> Dict[str, int]:
        cur = self.current().values()
        return {lab: sum(1 for r in cur if r["label"] == lab) for lab in LABELS}

    def definitions(self) -> Dict[str, int]:
        """How many current answers were given under each definition of "same" (None: not recorded)."""
        out: Dict[str, int] = {}
        for r in self.current().values():
            if r["label"] != "skip":
                d = r.get("definition")
                out[d] = out.get(d, 0) + 1
        return out

    # --- writing -------------------------------------------------------------------------------
    def append(self, key: PairKey, label: str, score: Optional[float], score_kind: str, source: str = "ui") -> dict:
        """Append one answer (or ``"undo"``) for pair ``key`` and return the record written."""
        if label not in ALL_LABELS:
            raise InputError(f"unknown label {label!r}; use one of: {', '.join(ALL_LABELS)}")
        rec = {
            **self.identity.to_dict(),
            "query_split": key[0], "query_id": key[1], "neighbour_split": key[2], "neighbour_id": key[3],
            "score": float(score) if score is not None and math.isfinite(score) else None, "score_kind": score_kind,
            "label": label, "definition": self.definition, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "labeller": self.labeller,
            "source": source,
        }
        append_jsonl(self.path, rec)
        self.records.append(rec)
        return rec

    def undo_last(self, score_of: Dict[PairKey, float], score_kind: str, keys: Optional[set] = None,
                  source: str = "ui") -> Optional[PairKey]:
        """Withdraw the most recent effective answer (among ``keys`` when given) by appending an undo."""
        for key in reversed(list(self.current())):
            if keys is None or key in keys:
                self.append(key, "undo", score_of.get(key, float("nan")), score_kind, source=source)
                return key
        return None

    def import_file(self, path: str | os.PathLike) -> Imported:
        """Append the records of another labels file (same JSONL form).

        Every record is validated first (a bad line names the file and row; a record made for
        other data is refused), then the new ones are appended with ``source = "import:<file
        name>"``; a record with a ``control_id`` answers a control pair, is not appended here and is
        returned in ``Imported.controls``.  A record that repeats its pair's current answer is not appended again; a
        pair
        answered twice with different answers keeps both lines, and the later one counts.

        Returns
        -------
        Imported
            Records appended, the pairs the file answers, how many of its records were made under
            another encoder or verifier, and its definitions of "same" with their counts.
        """
        path = Path(path)
        if not path.exists():
            raise InputError("labels file not found", path=path)
        incoming = read_label_file(path)
        for rec in incoming:
            self._check(rec, path)
        current = {k: r["label"] for k, r in self.current().items()}
        added, pairs, other, definitions = 0, set(), 0, {}
        mine = (self.identity.encoder_identity, self.identity.verifier_identity)
        controls = [{k: v for k, v in r.items() if k != "_row"} for r in incoming if r.get("control_id") is not None]
        for rec in incoming:
            if rec.get("control_id") is not None:  # an answer on a control pair is never a label of the pair it shows
                continue
            rec = {k: v for k, v in rec.items() if k != "_row"}
            key = pair_key(rec)
            pairs.add(key)
            other += (rec.get("encoder_identity"), rec.get("verifier_identity")) != mine
            if rec["label"] != "undo":
                definitions[rec.get("definition")] = definitions.get(rec.get("definition"), 0) + 1
            if current.get(key) == rec["label"] or (rec["label"] == "undo" and key not in current):
                continue  # already the pair's answer: importing the same file twice adds nothing
            rec.setdefault("query_split", "test")
            rec.setdefault("neighbour_split", "train")
            rec.setdefault("time", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            rec["source"] = f"import:{path.name}"
            append_jsonl(self.path, rec)
            self.records.append(rec)
            if rec["label"] == "undo":
                current.pop(key, None)
            else:
                current[key] = rec["label"]
            added += 1
        return Imported(added, pairs, other, definitions, controls)


def _default_labeller() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "unknown"
