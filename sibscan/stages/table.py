"""The neighbours table of a scan: search ▸ views ▸ verify ▸ written, one stage of :func:`sibscan.scan.run_scan`.

:func:`scan_neighbours` is the stage as :func:`sibscan.scan.run_scan` calls it: the table a resumed scan
holds already, read back, or else :func:`build_neighbours`, which assembles and writes it (the train→test
direction streamed to the files a block of train rows at a time); :func:`table_order` is the order of the
directions' rows in it.
"""
from __future__ import annotations

from typing import Callable, Collection, Dict, Tuple

import numpy as np

from ..config import ScanConfig
from ..items import Items
from ..options import DIRECTIONS
from ..progress import stage as progress_stage
from ..store.neighbourfile import NeighboursWriter
from ..store.scandir import NEIGHBOURS_SOURCE_KEY, ScanDir, neighbours_source
from ..store.neighbourtable import Neighbours
from ..verify.cascade import IMAGE_CASCADE
from .candidates import neighbours_table, reverse_blocks, verify_neighbours
from .embedding import cache_dir_of
from .models import Models
from .views import cascade_candidates, view_candidates

__all__ = ["REVERSE", "REVERSE_LINE", "build_neighbours", "scan_neighbours", "table_order"]

#: the direction streamed to disk block by block (k rows per train row: the one that grows with the train set)
REVERSE = ("train", "test")
#: its line in a log (its time goes to search and verify)
REVERSE_LINE = "train → test: searched, verified and written a block of train rows at a time"


def scan_neighbours(cfg: ScanConfig, sd: ScanDir, manifest: dict, done: Collection[str], embeddings,
                    splits: Dict[str, Items], fps: Dict[str, np.ndarray], chunks, models: Models, clock,
                    timings: Dict[str, float], echo: Callable[[str], None]) -> Tuple[Neighbours, bool]:
    """The held table (every direction but train→test, which is on disk only) and whether it was built
    now: a resumed scan whose ``search`` stage is ``done`` reads it back, else :func:`build_neighbours`
    makes it, recording in ``manifest`` what it is computed from and the pairs verified."""
    if "search" in done and sd.neighbours_path.exists():
        return sd.neighbours(skip=[REVERSE]), False
    manifest[NEIGHBOURS_SOURCE_KEY] = neighbours_source(manifest)  # on disk with the table, compared on every read
    nb = build_neighbours(cfg, sd, embeddings, splits, fps, chunks, models.views, models.verifier, models.encoder.name,
                          clock, timings, echo, manifest.setdefault("pairs_verified", {}),  # pairverify.verify_pairs
                          source=manifest[NEIGHBOURS_SOURCE_KEY])
    return nb, True


def build_neighbours(cfg: ScanConfig, sd: ScanDir, embeddings, splits: Dict[str, Items], fps: Dict[str, np.ndarray],
                chunks, views, verifier, view: str, clock, timings: Dict[str, float],
                echo: Callable[[str], None], counts: Dict[str, int], source: str) -> Neighbours:
    """Search ▸ views ▸ verify ▸ write the neighbours table; returns it without its train→test rows
    when those were streamed (they are in the files only).

    The train→test direction (``--k-reverse`` rows per train row) is searched, verified and appended to
    the files a block of train rows at a time (:func:`~sibscan.stages.candidates.reverse_blocks`),
    at the place the whole table would hold it, its time added to ``timings``' search and verify;
    chunked texts (whose rows are documents made of chunks) are searched whole.  ``source``: the digest
    of what the table is computed from, stored in it (:func:`sibscan.store.scandir.neighbours_source`).
    """
    search, device, progress = cfg.search, cfg.encoding.device, cfg.output.progress
    # the cascade scores every direction's candidates together (views.cascade_candidates): a scan with it
    # keeps the train→test rows in the held table
    cascade = verifier is not None and cfg.verification.cascade
    stream = "train-test" in search.directions and not chunks and not cascade
    held = [d for d in search.directions if not (stream and DIRECTIONS[d] == REVERSE)]
    with clock("search"):
        nb = neighbours_table(embeddings, splits, fps, search, device=device, progress=progress, chunks=chunks,
                              echo=echo, view=view, directions=held)
    if views:
        with clock("views"):
            nb = view_candidates(nb, views, embeddings, splits, fps, search, main_view=view, device=device,
                                 cache_dir=cache_dir_of(cfg.encoding, sd.path), batch_size=cfg.encoding.batch_size,
                                 progress=progress, echo=echo)
    with clock("verify"):
        if cascade:
            n_candidates, nb = len(nb), cascade_candidates(nb, splits, IMAGE_CASCADE)
            echo(f"cascade: {len(nb):,} of {n_candidates:,} candidate pairs go to {verifier.name}")
        if verifier is not None:  # each pair once (stages.pairverify); train→test's new pairs a block at a time
            echo(f"verifying the pairs of {len(nb):,} candidate rows{' and the train → test rows' * stream} "
                 f"with {verifier.name}")
        nb = verify_neighbours(nb, verifier, splits, progress=progress, counts=counts)
    with NeighboursWriter(sd.neighbours_path, sd.path / "neighbours.csv", source=source) as writer:
        for pair in table_order(search.directions, verifier is not None, bool(views)) if stream else [None]:
            if pair != REVERSE:
                writer.append(nb if pair is None else nb.direction(*pair))
                continue
            echo(f"searching train → test (k={search.k_of('train-test')}), "
                 f"{'verified and ' if verifier is not None else ''}written a block of train rows at a time")
            with progress_stage(REVERSE_LINE):
                for part in reverse_blocks(embeddings, splits, fps, search, verifier, device=device,
                                           progress=progress, view=view, timings=timings, held=nb, counts=counts):
                    writer.append(part)
    return nb


def table_order(directions, reranked: bool, views: bool):
    """The order of the directions' rows in the neighbours table: re-ranking (verification) sorts them
    by "query>neighbour" split names; otherwise as searched, the views' join putting test→train first."""
    pairs = [DIRECTIONS[d] for d in directions]
    if reranked:
        return sorted(pairs, key=lambda p: f"{p[0]}>{p[1]}")
    if views:
        return [p for p in pairs if p == ("test", "train")] + [p for p in pairs if p != ("test", "train")]
    return pairs
