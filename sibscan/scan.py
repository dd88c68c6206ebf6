"""``sibscan scan``: load ▸ fingerprint ▸ encode ▸ neighbours table ▸ verify ▸ baseline ▸ write.

:func:`run_scan` is the whole flow behind the CLI command, one call per stage; each stage is a
function of its own module (loaders, fingerprint, encoders, embedding, candidates, verify,
calibration.baseline), so the Python API reaches everything the CLI does.  The options are checked
before anything is read or written.  A scan directory (see :mod:`sibscan.store.scandir`) is written
atomically file by file; re-running into the same directory resumes (embeddings come back from the
cache, finished stages are not redone), ``force=True`` starts over (human labels under
``DIR/calibration`` are never deleted); :mod:`sibscan.stages.resume` decides which.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from ._version import __version__
from .calibration.baseline import left_out_neighbours, scan_baseline
from .verdict.labelfile import cutoff_and_labels
from .verdict import Verdict
from .verdict.pairdecision import SAME
from .config import ScanConfig
from .store.diskarray import NpyArray, NpyWriter, is_disk_array
from .stages.embedding import cache_dir_of, embed_splits
from .encoders import build_encoder
from .encoders.build import check_encoder
from .errors import SibscanError
from .fingerprint import dataset_fingerprint, fingerprint, ids_fingerprint, items_fingerprint
from .index import TrainIndex
from .items import Items, check_pair
from .kernels.rowhash import fingerprint_membership
from .loaders import load_split
from .lock import DirLock
from .stages.pairverify import PAIRING
from .progress import stage as progress_stage, task as progress_task
from .runrecord import RECORD_KEY
from .store.scandir import (EMBEDDINGS_KEY, NEIGHBOURS_SOURCE_KEY, Neighbours, ScanDir, neighbours_source,
                            train_items_searched)
from .stages.resume import INPUTS_DIR, SPILL_PREFIX, begin_scan, refuse_foreign, refuse_other_options, spill_files
from .store.spill import RowSpill
from .verify import build_verifier
from .stages.table import REVERSE, build_neighbours
from .stages.views import resolve_views, view_identities

__all__ = ["ScanResult", "run_scan", "summarise"]

#: what each stage does, for its line in a log
_STAGE_LINES = {"load": "load: reading both splits", "fingerprint": "fingerprint: exact copies",
                "models": "models: building the encoder and verifier", "encode": "encode: embedding both splits", "search": "search: nearest neighbours",
                "views": "views: candidates from the extra views",
                "verify": "verify: re-scoring the candidates",
                "baseline": "baseline: scoring random pairs"}


@dataclass
class ScanResult:
    """What :func:`run_scan` returns: the directory and the summary it printed."""

    path: Path
    manifest: dict
    summary: dict


def run_scan(cfg: ScanConfig, echo: Callable[[str], None] = lambda s: None) -> ScanResult:
    """Run a whole scan as configured and return its directory, manifest and summary.

    The scan directory is locked while the scan runs (:class:`sibscan.lock.DirLock`): a second scan
    into the same ``out`` is refused, naming the process that holds it.
    """
    cfg.check()
    with _locked(Path(cfg.output.out)):
        return _run_scan(cfg, echo)


def _run_scan(cfg: ScanConfig, echo: Callable[[str], None]) -> ScanResult:
    sd, timings, t0 = ScanDir(cfg.output.out), {}, time.perf_counter()
    clock = _clock(timings)
    refuse_foreign(sd)
    refuse_other_options(sd, cfg)  # before any data is read or model built
    spilled, spill = [], None
    try:
        if cfg.load.index is None:
            for stale in spill_files(sd.path):  # left by a scan killed outright (the lock rules out a running one)
                stale.unlink(missing_ok=True)
            # a CSV/TSV train table goes to disk as it is parsed, with its fingerprints: never whole in memory
            spill = RowSpill(_spill_path(sd.path, "train"), _spill_path(sd.path, "train", "fp-"),
                             cfg.load.decimals, cfg.load.znorm, spilled)
        with clock("load"):
            index, splits = _load_splits(cfg, sd.path / INPUTS_DIR, spill)
        with clock("fingerprint"):
            fps = _fingerprints(splits, cfg, index, spill)
        if index is None:
            # any other train table (another format, or from Python) is moved to disk here; the dicts are
            # changed in place: no reference to the arrays in memory is left behind; inside the try, so
            # the values' file goes too when the fingerprints' spill fails (a full disk)
            splits["train"], fps["train"] = _train_to_disk(splits["train"], fps["train"], sd.path, spilled)
        return _scan_stages(cfg, echo, sd, timings, clock, t0, index, splits, fps)
    finally:
        for path in spilled:
            path.unlink(missing_ok=True)


def _train_to_disk(items: Items, fp: np.ndarray, folder: Path, spilled: list) -> Tuple[Items, np.ndarray]:
    """Move a table split's values and fingerprints to temporary ``.npy`` files in the scan directory,
    read back by rows (:class:`~sibscan.store.diskarray.NpyArray`): from here on the scan reads blocks and
    candidate rows only, so neither counts in memory (128 + 16 bytes a row of 16 floats).  Returns a
    copy of the items reading their values from the file, and the fingerprints (both unchanged for
    other modalities; the caller's items, from Python, are left as they were); the files are added to
    ``spilled`` (removed when the scan ends)."""
    if items.modality != "table" or not isinstance(items.values, np.ndarray):
        return items, fp
    items = copy.copy(items)
    items.values = _to_disk(items.values, _spill_path(folder, items.split), spilled)
    return items, _to_disk(fp, _spill_path(folder, items.split, "fp-"), spilled)


def _spill_path(folder: Path, split: str, kind: str = "") -> Path:
    """Where a split's spilled values (``kind`` "") or fingerprints ("fp-") go while the scan runs."""
    return folder / f"{SPILL_PREFIX}{split}-{kind}{os.getpid()}.tmp.npy"


def _to_disk(array: np.ndarray, path: Path, spilled: list) -> NpyArray:
    spilled.append(path)  # before the first byte: removed when the scan ends, however the write ends
    with NpyWriter(path, array.dtype, array.shape[1:]) as writer:  # an exception aborts the file
        writer.append(array)
        return writer.close()


def _scan_stages(cfg: ScanConfig, echo, sd: ScanDir, timings, clock, t0, index, splits, fps) -> ScanResult:
    progress = cfg.output.progress
    if cfg.verification.cascade and splits["train"].modality != "image":  # refused before any model or output
        raise SibscanError(f"the verification cascade is for images (its cheap stage is the windows view), "
                           f"not {splits['train'].modality} items; drop --cascade")
    with clock("models"):  # imports (torch, timm: seconds in a fresh process) and weights
        encoder = index.encoder(device=cfg.encoding.device) if index is not None else build_encoder(cfg.encoding, splits["train"])
        verifier = build_verifier(cfg.verification, splits["train"].modality, cfg.encoding.device, progress)
    views = resolve_views(cfg.search, splits["train"].modality, verifier is not None, encoder.name)
    manifest = _manifest(cfg, splits, fps, encoder, verifier)
    manifest["views"] = [encoder.name, *views]
    manifest["view_identities"] = view_identities(views)
    manifest["pairing"] = PAIRING if verifier is not None else None  # which orientation a pair is verified in
    # a calibration for other data, or answers that cannot be read, is refused here, before anything is written
    out = cfg.output
    at, labels = cutoff_and_labels(manifest, sd.path, cutoff=out.cutoff, calibration=out.calibration, force=out.force,
                                   writing=True)
    cutoff = at.record()
    done, run = begin_scan(sd, cfg, manifest, splits, fps, echo)

    with clock("encode"):
        embeddings, chunks = embed_splits(splits, encoder, load=cfg.load, encoding=cfg.encoding, search=cfg.search,
                                          cache_dir=cache_dir_of(cfg.encoding, sd.path), progress=progress, index=index,
                                          train_out=sd.embeddings_path("train"))
        for split, emb in embeddings.items():
            # an index keeps its own; a train set embedded straight into the scan directory is there already
            if not (split == "train" and (index is not None or is_disk_array(emb))):
                sd.write_embeddings(split, emb)
        # what each file written here holds, compared on every read (ScanDir.embeddings): another scan's is refused
        manifest[EMBEDDINGS_KEY] = sd.embeddings_digests(s for s in embeddings if not (s == "train" and index is not None))
    _mark(sd, manifest, "encode")

    # the held table (nb) has every direction but train→test, which is on disk only
    if "search" in done and sd.neighbours_path.exists():
        nb = sd.neighbours(skip=[REVERSE])
    else:
        manifest[NEIGHBOURS_SOURCE_KEY] = neighbours_source(manifest)  # on disk with the table, compared on every read
        nb = build_neighbours(cfg, sd, embeddings, splits, fps, chunks, views, verifier, encoder.name,
                         clock, timings, echo, manifest.setdefault("pairs_verified", {}),  # pairverify.verify_pairs
                         source=manifest[NEIGHBOURS_SOURCE_KEY])
        _mark(sd, manifest, "search")

    with clock("baseline"), progress_task("random-pair baseline"):
        baseline = sd.baseline() if "baseline" in done else None
        if baseline is not None and left_out_neighbours(baseline):
            echo(f"recomputing the random-pair baseline: the one in {sd.path} left out each item's nearest "
                 "neighbours (an older sibscan), which undercounts chance siblings on small sets")
            baseline = None
        if baseline is None:
            b = cfg.baseline
            baseline = scan_baseline(embeddings, n_pairs=b.baseline_pairs, n_verified_pairs=b.verified_baseline_pairs,
                                     seed=b.seed, encoder_identity=encoder.identity, verifier=verifier, splits=splits,
                                     fingerprints=fps, doc_index={s: c[0] for s, c in chunks.items()} if chunks else None,
                                     k=cfg.search.k)
            sd.write_baseline(baseline)
            _mark(sd, manifest, "baseline")

    manifest["cutoff"] = cutoff
    timings["total"] = time.perf_counter() - t0
    manifest["timings"] = {k: round(v, 3) for k, v in timings.items()}
    if (labels.label == SAME).any() and sd.neighbours_path.exists() and not nb.mask(*REVERSE).any():
        # a "same" pair found only from the train side flags its test item (testscores.direction_rows): the
        # held table lacks train->test rows, so read those of the test items answered "same", and only those
        # (the whole direction is what the held table leaves on disk to bound memory)
        same = labels.test_ids[labels.label == SAME]  # load_matching takes the distinct ids
        nb = Neighbours.concat([nb, sd.neighbours_matching(*REVERSE, "neighbour_id", same)])
    verdict = Verdict.of_scan_being_written(sd, manifest, at, labels, neighbours=nb, baseline=baseline,
                                            train=(splits["train"], fps["train"]), test=(splits["test"], fps["test"]))
    summary = summarise(verdict)
    summary["skipped"] = {s: len(items.skipped) for s, items in splits.items()}
    if at.evidence.get("note"):  # the scan's own calibration gave no cutoff or was passed over: say so and why
        summary["cutoff_note"] = at.evidence["note"]
    manifest.update(summary=summary, status="complete")
    manifest[RECORD_KEY] = run.finish(samples={
        s: {"attempted": len(items) + len(items.skipped), "loaded": len(items), "skipped": len(items.skipped)}
        for s, items in splits.items()}).to_dict()
    sd.write_manifest(manifest)
    return ScanResult(path=sd.path, manifest=manifest, summary=summary)


def _load_splits(cfg: ScanConfig, inputs: Path, spill: Optional[RowSpill]) -> Tuple[Optional[TrainIndex], Dict[str, Items]]:
    """The train index (when the scan uses one) and both splits, checked as a pair; images held in
    memory are written to ``inputs`` (by content hash) before they are read; a CSV/TSV train table
    is parsed into ``spill``."""
    index = TrainIndex.open(cfg.load.index) if cfg.load.index is not None else None
    if index is not None:
        index.check_encoder(cfg.encoding.encoder)
    splits = {"train": index.items() if index is not None else load_split(cfg.load, "train", image_dir=inputs, sink=spill),
              "test": load_split(cfg.load, "test", image_dir=inputs)}
    check_pair(splits["train"], splits["test"])
    if index is None and not cfg.encoding.precomputed and (cfg.encoding.encoder or splits["train"].modality == "table"):
        # before any fingerprint or model: an encoder that cannot embed these items (another modality, rows
        # of one value); a text/image default is resolved once, by build_encoder (its fallback warns)
        check_encoder(cfg.encoding, splits["train"])
    return index, splits


def summarise(verdict: Verdict) -> dict:
    """The printed summary of a scan: exact twins, NN score quantiles, and its :class:`~sibscan.verdict.Verdict`'s
    headline (the count flagged at the cutoff in use, hand labels deciding the pairs they answer, and the
    sentence every output prints)."""
    scores, head = verdict.scores, verdict.headline
    n_test = len(scores)
    exact_test = fingerprint_membership(verdict.test[1], verdict.train[1])
    top = scores.top
    qs = {f"q{int(p * 100) if p < 1 else 100}": float(np.quantile(top["score"], p)) for p in (0.0, 0.5, 0.9, 0.99, 1.0)} if len(top) else {}
    out = {
        "n_train": train_items_searched(verdict.manifest),
        "n_test": n_test,
        "exact_test_rows_with_train_twin": int(exact_test.sum()),
        "exact_test_twin_pct": 100.0 * float(exact_test.mean()) if n_test else 0.0,
        "nn_score_quantiles": qs,
        "cutoff": verdict.cutoff.record(),
        "headline": head,
    }
    if verdict.value is not None:
        out["siblings"] = head["flagged"]["count"]
        out["sibling_pct"] = 100.0 * head["flagged"]["rate"] if n_test else 0.0
        if head.get("expected_chance_siblings") is not None:
            out["expected_chance_siblings"] = head["expected_chance_siblings"]
            out["chance_sentence"] = verdict.chance["sentence"]
        if verdict.chance["warning"]:
            out["warning"] = verdict.chance["warning"]
    else:
        out["chance_note"] = verdict.chance["note"]
    return out


# --------------------------------------------------------------------------------------------
# the steps of run_scan that are about the scan directory itself
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _locked(out: Path):
    """Hold the lock on ``out``; a scan that stops before writing anything leaves no directory behind."""
    created = not out.exists()
    lock = DirLock(out, "scan", "--out").acquire()
    try:
        yield
    finally:
        lock.release()
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()  # only succeeds when nothing was written


def _clock(timings: Dict[str, float]):
    """A context manager per stage: its time into ``timings``, and its line off a terminal."""
    @contextlib.contextmanager
    def timed(stage: str):
        t = time.perf_counter()
        with progress_stage(_STAGE_LINES.get(stage, stage)):
            yield
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - t

    return timed


def _fingerprints(splits: Dict[str, Items], cfg: ScanConfig, index: Optional[TrainIndex],
                  spill: Optional[RowSpill]) -> Dict[str, np.ndarray]:
    """Exact fingerprints per split; an index's own when it was hashed with the same rounding, the
    spill's when the train table was parsed into it (computed chunk by chunk with the same rounding)."""
    decimals, znorm = cfg.load.decimals, cfg.load.znorm
    same_rounding = index is not None and (index.meta["decimals"], index.meta["znorm"]) == (decimals, znorm)

    def of(s: str, items: Items):
        if s == "train" and same_rounding:
            return index.fingerprints()
        if s == "train" and spill is not None and spill.fingerprints is not None:
            return spill.fingerprints
        return fingerprint(items, decimals=decimals, znorm=znorm)

    return {s: of(s, items) for s, items in splits.items()}


def _manifest(cfg: ScanConfig, splits: Dict[str, Items], fps: Dict[str, np.ndarray], encoder, verifier) -> dict:
    dfp, rows, named = {}, {}, {}
    for s, items in splits.items():  # a train set's fingerprints, on disk, are read a block at a time
        dfp[s] = dataset_fingerprint(items, decimals=cfg.load.decimals, znorm=cfg.load.znorm, fp=fps[s])
        rows[s], named[s] = items_fingerprint(items, fps[s]), ids_fingerprint(items, fps[s])
    train, test = splits["train"], splits["test"]
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
    }


def _mark(sd: ScanDir, manifest: dict, stage: str) -> None:
    if stage not in manifest["stages"]:
        manifest["stages"] = sorted([*manifest["stages"], stage])
    sd.write_manifest(manifest)
