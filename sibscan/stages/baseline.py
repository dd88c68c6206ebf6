"""The baseline stage of a scan: random pairs scored as the scan scores its candidates
(:func:`sibscan.calibration.baseline.scan_baseline`), kept in the scan directory; a resumed scan
reuses the one it holds unless an older sibscan made it without each item's nearest neighbours.
"""
from __future__ import annotations

from typing import Callable, Collection, Dict, Tuple

import numpy as np

from ..calibration.baseline import left_out_neighbours, scan_baseline
from ..config import ScanConfig
from ..items import Items
from ..progress import task
from ..store.scandir import ScanDir
from .models import Models

__all__ = ["baseline_of_scan"]


def baseline_of_scan(cfg: ScanConfig, sd: ScanDir, done: Collection[str], embeddings, splits: Dict[str, Items],
                     fps: Dict[str, np.ndarray], chunks, models: Models,
                     echo: Callable[[str], None]) -> Tuple[dict, bool]:
    """The scan's random-pair baseline and whether it was computed (and written) now."""
    with task("random-pair baseline"):
        baseline = sd.baseline() if "baseline" in done else None
        if baseline is not None and left_out_neighbours(baseline):
            echo(f"recomputing the random-pair baseline: the one in {sd.path} left out each item's nearest "
                 "neighbours (an older sibscan), which undercounts chance siblings on small sets")
            baseline = None
        if baseline is not None:
            return baseline, False
        b = cfg.baseline
        baseline = scan_baseline(embeddings, n_pairs=b.baseline_pairs, n_verified_pairs=b.verified_baseline_pairs,
                                 seed=b.seed, encoder_identity=models.encoder.identity, verifier=models.verifier,
                                 splits=splits, fingerprints=fps,
                                 doc_index={s: c[0] for s, c in chunks.items()} if chunks else None, k=cfg.search.k)
        sd.write_baseline(baseline)
        return baseline, True
