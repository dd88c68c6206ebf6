"""``imagematch``: image pairs re-scored by a template match that searches scale, rotation and flip.

A sibling of a photo is often a heavy crop of it (0.5–0.8 of the side), a zoom-out, a slightly
rotated or re-graded copy; ``imagecorr`` (:mod:`sibscan.verify.images`) searches only small
shifts and centre crops down to 0.8, and correlates grey levels, so flat sky and sea correlate
across different photos.  Here each image is decoded once, resized to ``size`` x ``size`` grey
levels, and the pair is scored by :func:`sibscan.kernels.scalematch.scale_match`: one image,
shrunk to each of ``scales`` of the other's side, rotated by each of ``angles`` (unmirrored) and
mirrored (unrotated), is slid over every position of the other, both ways round; the score is
the best normalised correlation of the band-pass *structure* signal (edges survive colour, gamma
and JPEG changes; featureless regions carry none).  That search only finds the alignment; the
score is the *patch agreement* there (:func:`sibscan.kernels.alignmatch.patch_agreement`): the
aligned pair is cut into ``grid`` x ``grid`` patches, each correlated on its own, and flat
patches count as no evidence, so a copy (every patch agrees) outscores a different photo that
shares one strong edge with it (a dark curve against flat sky matched 0.92-0.94 globally).

Which sizes it serves: items of any size are resized to the working size (64 px by default), so
32-px images (upscaled) and photos (downscaled) are both served; keypoint methods (OpenCV ORB +
RANSAC) need larger images with corners and were not used here.  Cost per pair is one inverse FFT
of ``size`` x ``size`` per variant tried (``len(variants)`` is in the identity), plus one
patch-agreement pass at the alignment found.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from ..errors import SibscanError
from ..items import Items
from .base import VerifyResult, register_verifier
from .images import ImageCorrVerifier
from ..kernels.alignmatch import patch_agreement
from ..kernels.scalematch import match_variants, scale_match
from ..progress import bar as progress_bar

__all__ = ["ImageMatchVerifier", "describe_match"]


def describe_match(variant, y: int, x: int, query_split: str = "query", database_split: str = "database") -> str:
    """Readable transform: ``"crop 0.62 (test inside train) at x 12 y 3, rotated +4 deg, flipped"``."""
    inner, outer = ((query_split, database_split) if variant.inner == "query" else (database_split, query_split))
    parts = ["aligned" if variant.scale == 1.0 else f"crop {variant.scale:.2g} ({inner} inside {outer}) at x {x} y {y}"]
    if variant.angle:
        parts.append(f"rotated {variant.angle:+g} deg")
    if variant.flip:
        parts.append("flipped")
    return ", ".join(parts)


@register_verifier
class ImageMatchVerifier(ImageCorrVerifier):
    """Structure-signal template match over scales (both ways), small rotations and a mirror.

    Parameters
    ----------
    size : int
        Working resolution: images are resized to ``size`` x ``size`` grey levels.
    scales : sequence of float in [0.5, 1]
        Share of the outer image's side the inner one covers; each ``s < 1`` is tried both ways.
    angles : sequence of float
        Rotations tried, in degrees (0 is always tried).
    flip : bool
        Also try the horizontally mirrored image (unrotated).
    grid : int
        Patches per side of the aligned pair for the patch agreement (the score).
    coarse : int
        Side of a first, coarse search over every variant (0, the default: search every variant at
        ``size``).  ``coarse=32`` ran 1.6x faster again with the same recall at precision 0.95 on
        ``--sets crops,small32``, but the calibrated cutoff fell and 3 hard negatives were flagged
        on ``crops`` (0 with the full search), so it is not the default.
    keep : int
        Variants per pair searched again at ``size`` after the coarse search.
    size_power, rotation_cost : float
        How the search ranks the variants of a pair (:func:`sibscan.kernels.scalematch.preference`):
        0 and 0 (the default) by NCC alone; else by its evidence, ``atanh(NCC) * (T / size) **
        size_power`` for a template of side T, less ``rotation_cost`` for a rotated one.
    threads : int
        torch CPU threads for the search (restored after each call).  The search is many small
        batched operations, which ran 3-8x slower on torch's default threads than on one on a shared
        2-core machine (``benchmarks/imagematch_speed.py``).
    device : {"auto", "cpu", "cuda"}
    batch_size : int
        Pairs per inverse-FFT batch (at most :data:`sibscan.kernels.scalematch.CPU_FFT_ROWS` on the CPU,
        where smaller batches stay in cache); each chunk of ``4 * batch_size`` pairs prepares its images'
        templates and spectra once.
    workers : int, optional
        Threads decoding images.
    progress : bool
        Show a progress bar on stderr (only when it is a terminal).
    """

    name = "imagematch"
    description = "structure-signal template match over scale (0.5-1, both ways), small rotations and a mirror"

    def __init__(
        self,
        size: int = 64,
        scales: Sequence[float] = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5),
        angles: Sequence[float] = (-8.0, -4.0, 4.0, 8.0),
        flip: bool = True,
        grid: int = 4,
        coarse: int = 0,
        keep: int = 6,
        size_power: float = 0.0,
        rotation_cost: float = 0.0,
        threads: int = 1,
        device: str = "auto",
        batch_size: int = 1024,
        workers: int | None = None,
        progress: bool = True,
    ):
        super().__init__(size=size, max_shift=0, flip=flip, scales=(1.0,), colour="gray", device=device,
                         batch_size=batch_size, threads=threads, workers=workers, progress=progress)
        scales = tuple(sorted({float(s) for s in scales} | {1.0}, reverse=True))
        if any(not 0.5 <= s <= 1.0 for s in scales):
            raise SibscanError(f"imagematch scales must lie in [0.5, 1], got {list(scales)}")
        angles = tuple(sorted({float(a) for a in angles} | {0.0}))
        if any(abs(a) > 20 for a in angles):
            raise SibscanError(f"imagematch angles must lie in [-20, 20] degrees, got {list(angles)}")
        if not 1 <= int(grid) <= self.size // 8:
            raise SibscanError(f"imagematch grid must lie in [1, {self.size // 8}] at size {self.size}, got {grid}")
        if coarse and not 8 <= int(coarse) < self.size:
            raise SibscanError(f"imagematch coarse must be 0 or lie in [8, {self.size - 1}] at size {self.size}, got "
                               f"{coarse}")
        if int(keep) < 1:
            raise SibscanError(f"imagematch keep must be at least 1, got {keep}")
        self.scales, self.angles, self.grid = scales, angles, int(grid)
        self.coarse, self.keep = int(coarse), int(keep)
        if not (0 <= float(size_power) <= 4 and 0 <= float(rotation_cost) <= 2):
            raise SibscanError(f"imagematch size_power must lie in [0, 4] and rotation_cost in [0, 2], "
                               f"got {size_power} and {rotation_cost}")
        self.prefer = {"size_power": float(size_power), "rotation_cost": float(rotation_cost)}
        self.variants = self._variants()
        # v3: coarse-to-fine search (the best of the ``keep`` coarse favourites, not always of all variants)
        search = f",coarse={self.coarse},keep={self.keep}" if self.coarse and self.keep < len(self.variants) else ""
        if size_power or rotation_cost:  # the variants ranked by evidence, not by NCC (another alignment)
            # repr, not :g: 0.5 and 0.5000001 rank variants apart, so their identities differ too
            search += f",size_power={float(size_power)!r},rotation_cost={float(rotation_cost)!r}"
        self.identity = (
            f"imagematch-v3(size={self.size},scales={','.join(f'{s:g}' for s in scales)},"
            f"angles={','.join(f'{a:g}' for a in angles)},flip={int(self.flip)},variants={len(self.variants)},"
            f"grid={self.grid}{search})"
        )

    def _variants(self):
        # rotations unmirrored, the mirror unrotated: a mirrored *and* rotated copy is rarer than
        # either, and every variant tried raises the best score an unrelated pair reaches by chance
        plain = match_variants(self.scales, self.angles, False)
        mirrored = [v._replace(flip=True) for v in plain if v.angle == 0.0] if self.flip else []
        return sorted(plain + mirrored, key=lambda v: (-v.scale, v.inner != "query", abs(v.angle), v.angle, v.flip))

    def verify(
        self, queries: Items, query_index: np.ndarray, database: Items, database_index: np.ndarray
    ) -> VerifyResult:
        """Score pairs ``(queries[query_index[i]], database[database_index[i]])``.

        Returns
        -------
        VerifyResult
            ``scores`` (m,) float32 in [0, 1], the patch agreement (0 where the smaller image has
            no structure); ``details`` the transform found and both scores, e.g.
            ``"crop 0.62 (test inside train) at x 12 y 3; global 0.91, patches 0.84"``.
        """
        qi, di = self.pair_index(queries, query_index, database, database_index)
        m = len(qi)
        scores = None
        details = [""] * m
        order = np.argsort(di, kind="stable")  # database images decoded once per chunk, queries once per call
        qcache: Dict[int, int] = {}
        qstore: List[np.ndarray] = []
        chunk = max(self.batch_size * 4, 1)
        with progress_bar(m, "verify images", "pair", enabled=self.progress) as bar:
            for lo in range(0, m, chunk):
                rows = order[lo:lo + chunk]
                # the chunk's own queries only: the search filters and transforms every image it is given,
                # and the store holds every query decoded so far in the call
                used, qpos = np.unique(self._arrays(queries, qi[rows], qcache, qstore), return_inverse=True)
                qpos = qpos.reshape(-1)
                dstore: List[np.ndarray] = []
                dpos = self._arrays(database, di[rows], {}, dstore)
                qarr, darr = np.stack([qstore[p] for p in used.tolist()]), np.stack(dstore)
                with self.torch_threads():
                    res = scale_match(qarr, darr, qpos, dpos, self.variants, device=self.device,
                                      batch_size=self.batch_size, coarse=self.coarse, keep=self.keep, **self.prefer)
                    local, measured = self.measure((qarr, darr, qpos, dpos), res)
                    out = self.pair_scores(local, res, (qarr, darr, qpos, dpos), measured)
                if scores is None:
                    scores = np.empty((m,) + out.shape[1:], np.float32)
                scores[rows] = out
                for j, row in enumerate(rows):
                    v = self.variants[int(res.variant[j])]
                    if res.score[j] > 0:
                        where = describe_match(v, int(res.y[j]), int(res.x[j]), queries.split, database.split)
                        details[row] = f"{where}; global {res.score[j]:.2f}, patches {local[j]:.2f}"
                    else:
                        details[row] = "no structure to match"
                bar.update(len(rows))
        return VerifyResult(scores=np.empty(0, np.float32) if scores is None else scores, details=details)

    def measure(self, images, match):
        """What is measured at the alignment ``match`` found on ``images`` (the chunk's ``(query arrays,
        database arrays, query positions, database positions)``, as the search was given them): the
        patch agreement (m,) float32, and whatever else :meth:`pair_scores` takes (nothing here)."""
        return patch_agreement(*images, self.variants, match, grid=self.grid, device=self.device), None

    def pair_scores(self, local: np.ndarray, match, images=None, measured=None) -> np.ndarray:
        """The score of each pair of a chunk from what the search found: here its patch agreement
        ``local`` (m,); :class:`sibscan.verify.imagefuse.ImageFuseVerifier` combines it with ``match``
        (:class:`sibscan.kernels.scalematch.ScaleMatch`: the global correlation and the variant) and
        what :meth:`measure` found at that alignment on ``images`` (``measured``).

        Returns ndarray of shape (m,), or (m, f) rows that :meth:`verify` returns as they are
        (``benchmarks/imagefuse_fit.py`` collects the model's inputs that way)."""
        return local
