"""``sibscan scan``: load ▸ fingerprint ▸ encode ▸ neighbours table ▸ verify ▸ baseline ▸ write.

:func:`run_scan` is the whole flow behind the CLI command, one call per stage; each stage is a
function of its module in :mod:`sibscan.stages` (``inputs``: load and fingerprint, ``models``,
``embedding``, ``table``: search, views and verify, ``baseline``, ``summary``), so the Python API
reaches everything the CLI does, and this module keeps only the scan directory's bookkeeping (the
lock, the manifest as the stages finish, the timings).  The options are checked
before anything is read or written.  A scan directory (see :mod:`sibscan.store.scandir`) is written
atomically file by file; re-running into the same directory resumes (embeddings come back from the
cache, finished stages are not redone), ``force=True`` starts over (human labels under
``DIR/calibration`` are never deleted); :mod:`sibscan.stages.resume` decides which.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .config import ScanConfig
from .lock import DirLock
from .progress import timed_stages as progress_timed_stages
from .runrecord import RECORD_KEY
from .stages.baseline import baseline_of_scan
from .stages.embedding import embed_scan
from .stages.inputs import scan_inputs
from .stages.models import build_models
from .stages.resume import begin_scan, refuse_foreign, refuse_other_options, scan_manifest
from .stages.summary import scan_summary
from .stages.table import scan_neighbours
from .store.scandir import ScanDir
from .verdict.labelfile import cutoff_and_labels

__all__ = ["ScanResult", "run_scan"]

#: what each stage does, for its line in a log (:func:`sibscan.progress.timed_stages`)
_STAGE_LINES = {"load": "load: reading both splits", "fingerprint": "fingerprint: exact copies",
                "models": "models: building the encoder and verifier", "encode": "encode: embedding both splits",
                "search": "search: nearest neighbours",
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
    clock = progress_timed_stages(timings, _STAGE_LINES)  # each stage's line and time
    refuse_foreign(sd)
    refuse_other_options(sd, cfg)  # before any data is read or model built
    with scan_inputs(cfg, sd.path, clock) as (index, splits, fps):  # load, fingerprint
        return _scan_stages(cfg, echo, sd, timings, clock, t0, index, splits, fps)


def _scan_stages(cfg: ScanConfig, echo, sd: ScanDir, timings, clock, t0, index, splits, fps) -> ScanResult:
    models = build_models(cfg, index, splits, clock)
    manifest = scan_manifest(cfg, splits, fps, models)
    # a calibration for other data, or answers that cannot be read, is refused here, before anything is written
    out = cfg.output
    at, labels = cutoff_and_labels(manifest, sd.path, cutoff=out.cutoff, calibration=out.calibration, force=out.force,
                                   writing=True)
    cutoff = at.record()
    done, run = begin_scan(sd, cfg, manifest, splits, fps, echo)

    with clock("encode"):
        embeddings, chunks = embed_scan(cfg, sd, splits, models.encoder, index, manifest)
    _mark(sd, manifest, "encode")

    nb, built = scan_neighbours(cfg, sd, manifest, done, embeddings, splits, fps, chunks, models, clock, timings, echo)
    if built:
        _mark(sd, manifest, "search")

    with clock("baseline"):
        baseline, computed = baseline_of_scan(cfg, sd, done, embeddings, splits, fps, chunks, models, echo)
        if computed:
            _mark(sd, manifest, "baseline")

    manifest["cutoff"] = cutoff
    timings["total"] = time.perf_counter() - t0
    manifest["timings"] = {k: round(v, 3) for k, v in timings.items()}
    summary = scan_summary(sd, manifest, at, labels, nb, baseline, splits, fps)
    manifest.update(summary=summary, status="complete")
    manifest[RECORD_KEY] = run.finish(samples={
        s: {"attempted": len(items) + len(items.skipped), "loaded": len(items), "skipped": len(items.skipped)}
        for s, items in splits.items()}).to_dict()
    sd.write_manifest(manifest)
    return ScanResult(path=sd.path, manifest=manifest, summary=summary)


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


def _mark(sd: ScanDir, manifest: dict, stage: str) -> None:
    if stage not in manifest["stages"]:
        manifest["stages"] = sorted([*manifest["stages"], stage])
    sd.write_manifest(manifest)
