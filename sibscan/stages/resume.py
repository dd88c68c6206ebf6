"""Starting a scan over, or resuming one, in its directory: what a resumed scan must share with the
folder's scan, what ``force`` removes, the labels it must keep, and what a directory may hold before
a scan writes into it.

:func:`sibscan.scan.run_scan` calls :func:`refuse_foreign` and :func:`refuse_other_options` before
anything is read or written, and :func:`begin_scan` once its manifest (:func:`scan_manifest`) is known.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

import numpy as np

from .._version import __version__
from ..atomic import dumps_json
from ..config import ScanConfig
from ..errors import SibscanError
from ..fingerprint import dataset_fingerprint, ids_fingerprint, items_fingerprint
from ..items import Items
from ..loaders.memory import is_path
from ..lock import LOCK_NAME
from ..options import GROUPS, OWNER, flag_of
from ..runrecord import RECORD_KEY, RunRecord, begin_run
from ..store.scandir import NEIGHBOURS_SOURCE_KEY, ScanDir
from .models import Models
from .pairverify import PAIRING
from .views import view_identities

__all__ = ["INPUTS_DIR", "SPILL_PREFIX", "begin_scan", "refuse_foreign", "refuse_other_options", "scan_manifest",
           "spill_files"]

#: in-memory images of the Python API, stored as files named by their content hash (never removed by
#: ``force``: a file there only ever holds the bytes its name says)
INPUTS_DIR = "inputs"
#: the name of the train values and fingerprints moved to disk while the scan runs (see
#: :func:`sibscan.stages.inputs.scan_inputs`)
SPILL_PREFIX = ".values-"
#: files and folders a scan owns inside its directory (``force`` removes these and nothing else)
_OWNED = ("manifest.json", "items", "embeddings", "neighbours.npz", "neighbours.csv", "baseline.json",
          "report.json", "report.md", "report.html", "flagged.csv", "cache")

#: what a resumed scan must share with the folder's scan, and how a refusal names a difference (its options,
#: the manifest's "parameters", are compared before anything is loaded: :func:`refuse_other_options`)
_RESUME_KEYS = {"dataset_fingerprint": "other data", "verifier": "another verifier",
                "view_identities": "other candidate views",
                "pairing": "another pairing of verified scores (made by an earlier sibscan)"}
#: manifest keys that an older sibscan did not write, and what they record: such a folder cannot be
#: resumed (what it holds may come from what this sibscan no longer makes, e.g. the windows view's
#: old grid), and "other options" would send its owner looking for a flag they never changed
_ADDED_LATER = {"view_identities": "which candidate views made its candidates", "parameters": "the options it was made with"}


def scan_manifest(cfg: ScanConfig, splits: Dict[str, Items], fps: Dict[str, np.ndarray], models: Models) -> dict:
    """The manifest of a scan as it starts ("running"): its inputs and their fingerprints, its models,
    views and options; what a resumed scan must share with the folder's (:func:`begin_scan`)."""
    dfp, rows, named = {}, {}, {}
    for s, items in splits.items():  # a train set's fingerprints, on disk, are read a block at a time
        dfp[s] = dataset_fingerprint(items, decimals=cfg.load.decimals, znorm=cfg.load.znorm, fp=fps[s])
        rows[s], named[s] = items_fingerprint(items, fps[s]), ids_fingerprint(items, fps[s])
    train, test = splits["train"], splits["test"]
    encoder, verifier = models.encoder, models.verifier
    return {
        "sibscan_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "status": "running",
        "modality": train.modality,
        "inputs": {
            "train": {"source": str(cfg.load.index or train.source), "fingerprint": dfp["train"],
                      "items_fingerprint": rows["train"], "ids_fingerprint": named["train"], "n_items": len(train),
                      "n_skipped": len(train.skipped), "index": cfg.load.index},
            "test": {"source": str(test.source), "fingerprint": dfp["test"], "items_fingerprint": rows["test"],
                     "ids_fingerprint": named["test"], "n_items": len(test), "n_skipped": len(test.skipped)},
        },
        "dataset_fingerprint": hashlib.blake2b(f"{dfp['train']}:{dfp['test']}".encode(), digest_size=16).hexdigest(),
        # order-sensitive: the neighbours table points at rows by position, so only these rows resume
        "items_fingerprint": hashlib.blake2b(f"{rows['train']}:{rows['test']}".encode(), digest_size=16).hexdigest(),
        "encoder": {"name": encoder.name, "identity": encoder.identity, "dim": int(encoder.dim)},
        "verifier": None if verifier is None else {"name": verifier.name, "identity": verifier.identity},
        "parameters": cfg.parameters(),
        "stages": [],
        "skipped": {s: [k.to_dict() for k in items.skipped] for s, items in splits.items()},
        "views": [encoder.name, *models.views],
        "view_identities": view_identities(models.views),
        "pairing": PAIRING if verifier is not None else None,  # which orientation a pair is verified in
    }


def begin_scan(sd: ScanDir, cfg: ScanConfig, manifest: dict, splits: Dict[str, Items], fps: Dict[str, np.ndarray],
               echo: Callable[[str], None]) -> Tuple[Set[str], RunRecord]:
    """Start over (``force``) or resume a scan of the same data and options (the options checked already,
    :func:`refuse_other_options`); write the manifest (with the run record) and the items.  Returns the
    stages already done and the run record."""
    previous = _previous(sd, cfg.output.force, manifest)
    differs = [] if previous is None else [what for key, what in _RESUME_KEYS.items()
                                           if previous.get(key) != json.loads(dumps_json(manifest[key]))]
    if previous is not None and previous.get("encoder", {}).get("identity") != manifest["encoder"]["identity"]:
        differs.append("another encoder")
    same = previous is not None and not differs
    resumable = same and previous.get("items_fingerprint") == manifest["items_fingerprint"]
    if same and not resumable:
        raise SibscanError(
            f"{sd.path} holds a scan of the same items in another row order or under other ids (its neighbours "
            "table points at rows by position, so it cannot be resumed on these rows); pass --force to start over "
            "there (labels under calibration/ are kept) or choose another --out"
        )
    older = [what for key, what in _ADDED_LATER.items() if previous is not None and key not in previous]
    if older:
        raise SibscanError(
            f"{sd.path} holds a scan made by an older sibscan, whose manifest.json does not record "
            f"{' or '.join(older)}, so it cannot be resumed; pass --force to start over there (labels under "
            "calibration/ are kept) or choose another --out"
        )
    if previous is not None and not resumable:
        raise SibscanError(
            f"{sd.path} holds a scan of other data or with other options ({', '.join(differs) or 'other items'}); "
            "pass --force to start over "
            "there (labels under calibration/ are kept) or choose another --out"
        )
    done = set(previous.get("stages", [])) if resumable else set()
    if "search" in done and "pairs_verified" in previous:  # counted when the search ran, not again on resume
        manifest["pairs_verified"] = previous["pairs_verified"]
    if "search" in done and NEIGHBOURS_SOURCE_KEY in previous:  # the table kept is the one the digest names
        manifest[NEIGHBOURS_SOURCE_KEY] = previous[NEIGHBOURS_SOURCE_KEY]
    if resumable:
        echo(f"resuming the scan in {sd.path} (done: {', '.join(sorted(done)) or 'nothing yet'})")
    manifest["stages"] = sorted(done)
    run = _begin_record(cfg, previous if resumable else None, manifest, resumable)
    sd.write_manifest(manifest)
    for split, items in splits.items():
        sd.write_items(items, fps[split])
    return done, run


def refuse_other_options(sd: ScanDir, cfg: ScanConfig) -> None:
    """Refuse, before any data is read or model built, to resume a scan in ``sd`` that was made with
    other options (its manifest's ``parameters``: they come from the options alone), naming each.
    Other data, encoder or verifier need the data loaded and the models built: :func:`begin_scan` refuses those,
    and a folder whose manifest records no options (an older sibscan's)."""
    if cfg.output.force or not sd.exists():
        return
    was = sd.manifest().get("parameters")
    if was is None:  # an older sibscan's folder: begin_scan says so
        return
    now = json.loads(dumps_json(cfg.parameters()))
    changed = _differing(was, now)
    if changed:
        raise SibscanError(f"{sd.path} holds a scan with other options ({_changed_options(was, now, changed)}); "
                           "pass --force to start over there (labels under calibration/ are kept), give the same "
                           "options again, or choose another --out")


#: options compared by what they resolve to, later (:func:`begin_scan`): the splits by the data's fingerprints
#: (the same files named by another path are the same scan), and encoder, verifier and modality by the
#: identities built, so that naming the default (``--encoder znorm``) is not "another option" than leaving it
_DATA_KEYS = ("train", "test")
_RESOLVED_LATER = ("encoder", "verifier", "modality")
#: options whose value is a set written in any order
_SET_KEYS = ("directions",)


def _differing(was: dict, now: dict) -> List[str]:
    """The recorded options (``was``) that this scan's (``now``, as JSON holds them) set otherwise, compared
    as above."""
    out = []
    for k in sorted(set(now) | set(was)):
        a, b = now.get(k), was.get(k)
        if k in _DATA_KEYS or (k in _RESOLVED_LATER and (a is None or b is None)):
            continue
        if k in _SET_KEYS and isinstance(a, list) and isinstance(b, list):
            a, b = sorted(a), sorted(b)
        if a != b:
            out.append(k)
    return out


def _changed_options(was: dict, now: dict, changed: List[str]) -> str:
    """The ``changed`` options, each as its flag with both values: ``--k 3 (the scan there: 5)``."""
    shown = lambda v: "not set" if v is None else ",".join(map(str, v)) if isinstance(v, list) else str(v)  # noqa: E731
    return "; ".join(f"{flag_of(GROUPS[OWNER[k]], k) if k in OWNER else k} {shown(now.get(k))} (the scan there: {shown(was.get(k))})"
                     for k in changed)


def _begin_record(cfg: ScanConfig, previous: Optional[dict], manifest: dict, resumed: bool) -> RunRecord:
    """The run record (hashes of every input file, environment, start time) in ``manifest[RECORD_KEY]``;
    resumed exactly when the scan resumes (decided above from content fingerprints and options).
    In-memory data (from Python) has no file to hash: the manifest's dataset fingerprint names its content."""
    load = cfg.load
    inputs = [(role, p) for role, p in (("train", load.index or load.train), ("test", load.test),
                                        ("labels_train", load.labels_train), ("labels_test", load.labels_test))
              if p is not None and is_path(p)]
    run = begin_run((previous or {}).get(RECORD_KEY), inputs=inputs, parameters=manifest["parameters"],
                    resumed=resumed)
    manifest[RECORD_KEY] = run.to_dict()
    return run


def _previous(sd: ScanDir, force: bool, manifest: dict) -> Optional[dict]:
    """Start over when forced; otherwise the previous manifest (for resuming) or None."""
    if force:
        _check_kept_labels(sd, manifest)
        for name in _OWNED:
            p = sd.path / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        return None
    if sd.exists():
        return sd.manifest()
    refuse_foreign(sd)
    return None


def spill_files(folder: Path) -> List[Path]:
    """The train spill files in ``folder``, finished (``.values-…``) or still being written (the
    writer's temporary, ``..values-…``): a scan killed while loading leaves the latter."""
    return [p for p in folder.glob(f"*{SPILL_PREFIX}*") if p.name.startswith((SPILL_PREFIX, "." + SPILL_PREFIX))]


def refuse_foreign(sd: ScanDir) -> None:
    """Refuse an output directory that holds something other than a scan (checked before anything is written)."""
    spills = set(spill_files(sd.path)) if sd.path.is_dir() else set()
    if not sd.exists() and sd.path.is_dir() and any(p.name not in ("calibration", INPUTS_DIR, LOCK_NAME)
                                                    and p not in spills for p in sd.path.iterdir()):
        raise SibscanError(f"{sd.path} exists and is not a sibscan scan; choose another --out or empty it")


def _check_kept_labels(sd: ScanDir, manifest: dict) -> None:
    """Refuse to start over under labels whose ids now name other items.

    ``--force`` keeps ``OUT/calibration``, whose labels name pairs by id; when the ids of the new
    inputs name other content than before (rows reordered in a file whose ids are row numbers),
    those labels would silently describe other pairs.
    """
    labels = sd.path / "calibration" / "labels.jsonl"
    if not labels.exists() or not sd.manifest_path.exists():
        return
    try:
        before = sd.manifest().get("inputs") or {}
    except SibscanError:  # an unreadable manifest: nothing to compare with
        return
    for split in ("train", "test"):
        old = (before.get(split) or {}).get("ids_fingerprint")
        if old is not None and old != manifest["inputs"][split]["ids_fingerprint"]:
            raise SibscanError(
                f"{labels} holds labels given to pairs by id, and the {split} ids now name other items (rows "
                "reordered in a file whose ids are row numbers?); move "
                f"{sd.path / 'calibration'} elsewhere before starting over, or give this scan another --out"
            )
