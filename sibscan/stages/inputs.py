"""The load and fingerprint stages of a scan: both splits read and checked as a pair, their exact
fingerprints, and a train table moved to disk for the rest of the scan.

:func:`scan_inputs` is the one call :func:`sibscan.scan.run_scan` makes for them: a context that
holds the train values and fingerprints spilled to temporary files in the scan directory while the
scan runs, and removes those files when it ends, however it ends.
"""
from __future__ import annotations

import contextlib
import copy
import os
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

import numpy as np

from ..config import ScanConfig
from ..encoders.build import check_encoder
from ..fingerprint import fingerprint
from ..index import TrainIndex
from ..items import Items, check_pair
from ..loaders import load_split
from ..store.diskarray import NpyArray, NpyWriter
from ..store.spill import RowSpill
from .resume import INPUTS_DIR, SPILL_PREFIX, spill_files

__all__ = ["scan_inputs"]


@contextlib.contextmanager
def scan_inputs(cfg: ScanConfig, out: Path, clock) -> Iterator[Tuple[Optional[TrainIndex], Dict[str, Items],
                                                                      Dict[str, np.ndarray]]]:
    """The train index (when the scan uses one), both splits and their fingerprints, timed as the
    ``load`` and ``fingerprint`` stages by ``clock``; the spilled files in ``out`` last as long as the
    context.

    A CSV/TSV train table goes to disk as it is parsed, with its fingerprints (never whole in memory);
    any other train table (another format, or from Python) is moved to disk once fingerprinted.
    """
    spilled, spill = [], None
    try:
        if cfg.load.index is None:
            for stale in spill_files(out):  # left by a scan killed outright (the lock rules out a running one)
                stale.unlink(missing_ok=True)
            spill = RowSpill(_spill_path(out, "train"), _spill_path(out, "train", "fp-"),
                             cfg.load.decimals, cfg.load.znorm, spilled)
        with clock("load"):
            index, splits = _load_splits(cfg, out / INPUTS_DIR, spill)
        with clock("fingerprint"):
            fps = _fingerprints(splits, cfg, index, spill)
        if index is None:
            # the dicts are changed in place: no reference to the arrays in memory is left behind; inside
            # the try, so the values' file goes too when the fingerprints' spill fails (a full disk)
            splits["train"], fps["train"] = _train_to_disk(splits["train"], fps["train"], out, spilled)
        yield index, splits, fps
    finally:
        for path in spilled:
            path.unlink(missing_ok=True)


def _load_splits(cfg: ScanConfig, inputs: Path,
                 spill: Optional[RowSpill]) -> Tuple[Optional[TrainIndex], Dict[str, Items]]:
    """The train index (when the scan uses one) and both splits, checked as a pair; images held in
    memory are written to ``inputs`` (by content hash) before they are read; a CSV/TSV train table
    is parsed into ``spill``."""
    index = TrainIndex.open(cfg.load.index) if cfg.load.index is not None else None
    if index is not None:
        index.check_encoder(cfg.encoding.encoder)
    train = index.items() if index is not None else load_split(cfg.load, "train", image_dir=inputs, sink=spill)
    splits = {"train": train, "test": load_split(cfg.load, "test", image_dir=inputs)}
    check_pair(splits["train"], splits["test"])
    if index is None and not cfg.encoding.precomputed and (cfg.encoding.encoder or splits["train"].modality == "table"):
        # before any fingerprint or model: an encoder that cannot embed these items (another modality, rows
        # of one value); a text/image default is resolved once, by build_encoder (its fallback warns)
        check_encoder(cfg.encoding, splits["train"])
    return index, splits


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
