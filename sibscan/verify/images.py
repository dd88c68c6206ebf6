"""``imagecorr``: image pairs re-scored by correlation maximised over shifts, a flip and crops.

Each image is decoded once per call (however many pairs it is in), resized to ``size`` x
``size`` (aspect ratio not kept: both sides get the same treatment) and turned into grayscale
(or kept as three colour channels with ``colour="rgb"``).  The score of a pair is the
normalised cross-correlation of the query's centre against the database image, maximised over
translations of up to ``max_shift`` working pixels, a horizontal flip and the centre
crop-scales ``scales``, blended with the NCC of the two images' detail bands at that alignment
(weight ``detail``; see :func:`sibscan.kernels.paircorr.image_pair_corr`).  It is invariant to
brightness and contrast (and to per-channel colour gains in ``rgb`` mode).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Dict, List, Sequence

import numpy as np

from ..device import resolve_device
from ..errors import SibscanError, require
from ..imageio import open_image
from ..items import Items
from .base import Verifier, VerifyResult, register_verifier

__all__ = ["ImageCorrVerifier", "describe_image_transform"]

COLOURS = ("gray", "rgb")
_GRAY = np.array([0.299, 0.587, 0.114], np.float32)


def describe_image_transform(
    flipped: bool, dy: int, dx: int, crop_query: float, crop_database: float,
    query_split: str = "query", database_split: str = "database",
) -> str:
    """Readable transform: ``"flipped, shifted 2 px right 1 px down, crop 0.9 (test inside train)"``."""
    parts = ["flipped"] if flipped else []
    moves = []
    if dx:
        moves.append(f"{abs(dx)} px {'right' if dx > 0 else 'left'}")
    if dy:
        moves.append(f"{abs(dy)} px {'down' if dy > 0 else 'up'}")
    if moves:
        parts.append("shifted " + " ".join(moves))
    if crop_database < 1:
        parts.append(f"crop {crop_database:.2g} ({query_split} inside {database_split})")
    elif crop_query < 1:
        parts.append(f"crop {crop_query:.2g} ({database_split} inside {query_split})")
    return ", ".join(parts) or "aligned"


@register_verifier
class ImageCorrVerifier(Verifier):
    """Grayscale (or colour) correlation maximised over shifts, horizontal flip and crop-scales.

    Parameters
    ----------
    size : int
        Working resolution: images are resized to ``size`` x ``size``.
    max_shift : int
        Largest translation tried, in working pixels along each axis.
    flip : bool
        Also try the horizontally mirrored image.
    scales : sequence of float in (0, 1]
        Centre-crop fractions tried both ways (1.0 = no crop).
    colour : {"gray", "rgb"}
        Correlate luminance, or the three channels each normalised on its own (averaged).
    detail : float in [0, 1]
        Weight of the detail bands' correlation (each image minus its Gaussian blur of ``size / 16``
        working pixels) in the score; 0 scores by the whole-image correlation alone.  The fine
        structure tells a copy from a look-alike of the same kind (two handwritten 1s, mirrored
        corners of one photograph): 0.25 raised recall at precision 0.95 of the default scan on
        planted 32-px siblings from 0.778 to 0.822 (``benchmarks.image_scale``).
    device : {"auto", "cpu", "cuda"}
    batch_size : int
        Pairs per torch batch.
    threads : int
        torch CPU threads for the correlation (restored after each call).  Its many small batched
        operations ran 4-5x faster (wall) on one thread than on torch's default two on a shared 2-core
        machine, with the same scores (``benchmarks/verify_share.py``, README).
    workers : int, optional
        Threads decoding images (default: up to 8, one per CPU).
    progress : bool
        Show progress on stderr (a bar on a terminal, a line every 30 s off one; see sibscan.progress).
    """

    name = "imagecorr"
    requires = (("torch", "torch"), ("PIL", "images"))
    modality = "image"
    description = "image correlation maximised over shifts, horizontal flip and crop-scales"

    def __init__(
        self,
        size: int = 64,
        max_shift: int = 4,
        flip: bool = True,
        scales: Sequence[float] = (1.0, 0.9, 0.8),
        colour: str = "gray",
        detail: float = 0.25,
        device: str = "auto",
        batch_size: int = 256,
        threads: int = 1,
        workers: int | None = None,
        progress: bool = True,
    ):
        if colour not in COLOURS:
            raise SibscanError(f"unknown colour mode {colour!r}; available: {', '.join(COLOURS)}")
        if int(size) < 16:
            raise SibscanError(f"imagecorr size must be at least 16 pixels, got {size}")
        if not 0 <= int(max_shift) < int(size) // 4:
            raise SibscanError(f"imagecorr max_shift must be between 0 and {int(size) // 4 - 1} at size {size}, got {max_shift}")
        scales = tuple(sorted({float(s) for s in scales} | {1.0}, reverse=True))
        if any(not 0.5 <= s <= 1.0 for s in scales):
            raise SibscanError(f"imagecorr scales must lie in [0.5, 1], got {list(scales)}")
        if not 0.0 <= float(detail) <= 1.0:
            raise SibscanError(f"imagecorr detail must lie in [0, 1], got {detail}")
        self.size = int(size)
        self.max_shift = int(max_shift)
        self.flip = bool(flip)
        self.scales = scales
        self.colour = colour
        self.detail = float(detail)
        self.device = resolve_device(device)
        if int(threads) < 1:
            raise SibscanError(f"{self.name} threads must be at least 1, got {threads}")
        self.batch_size = int(batch_size)
        self.threads = int(threads)
        self.workers = workers or min(8, os.cpu_count() or 1)
        self.progress = progress
        self.identity = (
            f"imagecorr-v2(size={self.size},shift={self.max_shift},flip={int(self.flip)},"
            f"scales={','.join(f'{s:g}' for s in self.scales)},colour={self.colour},detail={self.detail:g})"
        )

    # -- decoding -------------------------------------------------------------------------------
    def load_array(self, path) -> np.ndarray:
        """One image at working resolution: float32 array of shape (C, size, size) in [0, 1]."""
        Image = require("PIL.Image", "images", "verifying images")
        im = open_image(path).resize((self.size, self.size), Image.Resampling.BILINEAR)
        rgb = np.asarray(im, dtype=np.float32) / 255.0  # (size, size, 3)
        if self.colour == "gray":
            return (rgb @ _GRAY)[None]
        return np.ascontiguousarray(rgb.transpose(2, 0, 1))

    def load_arrays(self, paths: Sequence) -> np.ndarray:
        """Images at working resolution: float32 array of shape (n, C, size, size)."""
        channels = 1 if self.colour == "gray" else 3
        out = np.empty((len(paths), channels, self.size, self.size), np.float32)
        if not len(paths):
            return out
        with ThreadPoolExecutor(self.workers) as pool:
            for i, arr in enumerate(pool.map(self.load_array, paths)):
                out[i] = arr
        return out

    def _arrays(self, items: Items, index: np.ndarray, cache: Dict[int, int], store: List[np.ndarray]):
        """Positions of ``index`` rows in ``store``, decoding each item only once."""
        uniq = np.unique(index)
        new = [int(u) for u in uniq if int(u) not in cache]
        if new:
            for i, u in enumerate(new):
                cache[u] = len(store) + i
            arrays = self.load_arrays([items.paths[u] for u in new])
            store.extend(arrays)
        return np.fromiter((cache[int(u)] for u in index), np.int64, len(index))

    @contextmanager
    def torch_threads(self):
        """torch's CPU threads set to ``self.threads`` inside, restored after."""
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    # -- verification ---------------------------------------------------------------------------
    def verify(
        self, queries: Items, query_index: np.ndarray, database: Items, database_index: np.ndarray
    ) -> VerifyResult:
        """Score pairs ``(queries[query_index[i]], database[database_index[i]])``.

        Parameters
        ----------
        queries, database : Items
            Image items (``paths``).
        query_index, database_index : ndarray of shape (m,), int
            Rows of the pairs.

        Returns
        -------
        VerifyResult
            ``scores`` (m,) float32 in [-1, 1], NaN where an image is flat (undefined
            correlation); ``details`` the best transform, e.g. ``"flipped, shifted 2 px right"``.
        """
        from ..kernels.paircorr import image_pair_corr
        from ..progress import bar as progress_bar

        qi, di = self.pair_index(queries, query_index, database, database_index)
        m = len(qi)
        scores = np.empty(m, np.float32)
        details = [""] * m
        # Pairs go through in database order: each database image is then decoded once (its
        # pairs are adjacent) and only one chunk of them is held; queries (the test side, the
        # smaller one) are cached for the whole call.
        order = np.argsort(di, kind="stable")
        qcache: Dict[int, int] = {}
        qstore: List[np.ndarray] = []
        chunk = max(self.batch_size * 8, 1)
        with progress_bar(m, "verify images", "pair", enabled=self.progress) as bar:
            for lo in range(0, m, chunk):
                rows = order[lo:lo + chunk]
                qpos = self._arrays(queries, qi[rows], qcache, qstore)
                dstore: List[np.ndarray] = []
                dpos = self._arrays(database, di[rows], {}, dstore)
                with self.torch_threads():
                    res = image_pair_corr(
                        np.stack([qstore[p] for p in qpos]), np.stack([dstore[p] for p in dpos]),
                        max_shift=self.max_shift, flip=self.flip, scales=self.scales, detail=self.detail,
                        device=self.device, batch_size=self.batch_size,
                    )
                scores[rows] = res.score
                for j, row in enumerate(rows):
                    if np.isnan(res.score[j]):
                        details[row] = "flat image: correlation undefined"
                    else:
                        details[row] = describe_image_transform(
                            bool(res.flipped[j]), int(res.dy[j]), int(res.dx[j]),
                            float(res.crop_query[j]), float(res.crop_database[j]),
                            queries.split, database.split,
                        )
                bar.update(len(rows))
        return VerifyResult(scores=scores, details=details)
