"""``imagecorr``: image pairs re-scored by correlation maximised over shifts, a flip and crops.

Each image is decoded once (and kept for the verifier's later calls, up to
:attr:`ImageCorrVerifier.decoded_bytes`), resized to ``size`` x ``size`` (aspect ratio not kept:
both sides get the same treatment) and turned into grayscale (or kept as three colour channels
with ``colour="rgb"``).  Its own share of the work (flips, crops, spectra, norms) is done once per
call however many pairs it is in (:mod:`sibscan.kernels.paircorr_sides`, in tiles of bounded
memory: :mod:`sibscan.verify.pairtiles`); only the correlations are per pair.  The score of a pair is the
normalised cross-correlation of the query's centre against the database image, maximised over
translations of up to ``max_shift`` working pixels, a horizontal flip and the centre
crop-scales ``scales``, blended with the NCC of the two images' detail bands at that alignment
(weight ``detail``; see :func:`sibscan.kernels.paircorr.image_pair_corr`).  It is invariant to
brightness and contrast (and to per-channel colour gains in ``rgb`` mode).
"""
from __future__ import annotations

import os
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Dict, List, Sequence

import numpy as np

from ..device import resolve_device
from ..errors import SibscanError, require
from ..imageio import open_image
from ..items import Items
from .base import Verifier, VerifyResult, register_verifier
from .pairtiles import pair_tiles
from ..kernels.paircorr import check_detail, image_corr_result, image_variants
from ..kernels.paircorr_sides import prepare_database, prepare_queries, side_bytes, side_pair_corr
from ..progress import bar as progress_bar

__all__ = ["ImageCorrVerifier", "describe_image_transform"]

COLOURS = ("gray", "rgb")
_GRAY = np.array([0.299, 0.587, 0.114], np.float32)


def _file_key(path) -> tuple:
    """What a decoded image is kept under: its path, size, modification time, inode and inode change
    time (a rewritten file is decoded again, also one replaced with the same size and its old
    modification time put back, as ``cp -p`` and ``rsync -t`` do: that changes the ctime)."""
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return (str(path), None, None, None, None)
    return (str(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


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
        Pairs (and images being prepared) per torch batch.
    threads : int
        torch CPU threads for each batch (restored after each call).  Its many small batched
        operations ran 4-5x faster (wall) on one thread than on torch's default two on a shared 2-core
        machine, with the same scores (``benchmarks/verify_share.py``; docs/benchmarks.md,
        "Speed-ups measured on this path").
    workers : int, optional
        Threads decoding images (default: up to 8, one per CPU).
    progress : bool
        Show progress on stderr (a bar on a terminal, a line every 30 s off one; see sibscan.progress).
    """

    name = "imagecorr"
    #: bytes of decoded working-resolution images kept between calls (64 px gray: 16 KiB an image)
    decoded_bytes: int = 128 << 20
    #: bytes of prepared images (spectra, norms, detail bands) one call holds at once (see pair_tiles)
    prepared_bytes: int = 256 << 20
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
            raise SibscanError(f"imagecorr max_shift must be between 0 and {int(size) // 4 - 1} at size {size}, got "
                               f"{max_shift}")
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
        self._decoded: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
        self.identity = (
            f"imagecorr-v3(size={self.size},shift={self.max_shift},flip={int(self.flip)},"
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
        """Images at working resolution: float32 array of shape (n, C, size, size).

        Decoded images are kept (least recently used out first, :attr:`decoded_bytes` in all) for the
        verifier's later calls: a scan verifies its test images' candidates, then the train→test
        direction and the baseline's random pairs, the same images each time."""
        channels = 1 if self.colour == "gray" else 3
        out = np.empty((len(paths), channels, self.size, self.size), np.float32)
        if not len(paths):  # nothing to size the store by: leave it as it is
            return out
        keys = [_file_key(p) for p in paths]
        new = [i for i, k in enumerate(keys) if k not in self._decoded]
        if new:
            with ThreadPoolExecutor(self.workers) as pool:
                for i, arr in zip(new, pool.map(self.load_array, [paths[i] for i in new])):
                    out[i] = arr
        fresh = set(new)
        for i, k in enumerate(keys):
            if i not in fresh:
                out[i] = self._decoded[k]
                self._decoded.move_to_end(k)
        limit = max(self.decoded_bytes // max(out[:1].nbytes, 1), 0)
        for i in new:
            self._decoded[keys[i]] = out[i].copy()
        while len(self._decoded) > limit:
            self._decoded.popitem(last=False)
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
        qi, di = self.pair_index(queries, query_index, database, database_index)
        m, s = len(qi), self.max_shift
        variants = image_variants(self.flip, self.scales)
        sigma, detail = check_detail(self.detail, None, self.size), self.detail > 0
        best, arg = np.empty(m, np.float32), np.empty(m, np.int64)
        band = np.full(m, np.nan, np.float32)
        per_q, per_d = side_bytes(1 if self.colour == "gray" else 3, self.size, s, variants, detail)
        qids = dids = None
        # each image is decoded and prepared (crops, flips, spectra, norms, detail bands) once per tile
        # of pairs, not once per pair; only the correlations themselves are per pair
        with progress_bar(m, "verify images", "pair", enabled=self.progress) as bar, self.torch_threads():
            for rows, q_ids, d_ids in pair_tiles(qi, di, per_q, per_d, self.prepared_bytes):
                if q_ids is not qids:
                    qside = None  # the previous block's prepared images go before the next block's come
                    qids, qside = q_ids, prepare_queries(self._tensor(queries, q_ids), s, variants, detail,
                                                         batch_size=self.batch_size)
                if d_ids is not dids:
                    dside = None
                    dids, dside = d_ids, prepare_database(self._tensor(database, d_ids), s, variants, detail,
                                                          batch_size=self.batch_size)
                best[rows], arg[rows], band[rows] = side_pair_corr(
                    qside, np.searchsorted(q_ids, qi[rows]), dside, np.searchsorted(d_ids, di[rows]), s, variants,
                    sigma, detail, batch_size=self.batch_size)
                bar.update(len(rows))
        res = image_corr_result(best, arg, variants, s, 2 * s + 1, band, self.detail)
        return VerifyResult(scores=res.score, details=self._details(res, queries.split, database.split))

    def _tensor(self, items: Items, ids: np.ndarray):
        """The images of rows ``ids`` at working resolution, as a float32 torch tensor on the device."""
        import torch

        return torch.as_tensor(self.load_arrays([items.paths[int(i)] for i in ids])).to(self.device)

    @staticmethod
    def _details(res, query_split: str, database_split: str) -> List[str]:
        """The readable transform of each pair, described once per distinct transform."""
        if not len(res.score):
            return []
        keys = np.stack([np.isnan(res.score), res.flipped, res.dy, res.dx, res.crop_query, res.crop_database], 1)
        uniq, inv = np.unique(keys.astype(np.float64), axis=0, return_inverse=True)
        text = np.array([
            "flat image: correlation undefined" if flat else
            describe_image_transform(bool(f), int(dy), int(dx), float(cq), float(cd), query_split, database_split)
            for flat, f, dy, dx, cq, cd in uniq.tolist()], dtype=object)
        return text[inv.reshape(-1)].tolist()
