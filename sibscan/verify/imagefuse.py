"""``imagefuse``: ``imagematch``'s search, scored by a fixed logistic combination of what it found.

``imagematch`` (:mod:`sibscan.verify.imagematch`) scores a pair by the patch agreement at the best
of 66 variants (scales 0.5-1 both ways, rotations up to 8 degrees, a mirror).  Every variant tried
raises the best score an unrelated pair reaches by chance, and the most permissive ones (half the
side, rotated 8 degrees) are where other cells of the same photograph land: the text of a page in
the same font, the rim of the same cup, a coin beside another coin.  A copy, however heavily
cropped, also agrees *globally* at the alignment found, and in its fine detail: another cell with
repeating or dominant structure (a steel lattice, the rim of a fundus image) agrees on its strongest
edges only.  So the score here is the probability of a logistic model over five numbers the search
already has and three measured at the alignment it found
(:func:`sibscan.kernels.alignmatch.alignment_features`, no further search):

    patches        the patch agreement (imagematch's score)
    global         the normalised correlation of the structure signals at the alignment
    scale          the share of the outer image's side the inner one covers (1 = aligned)
    angle          the rotation's magnitude in degrees
    mirror         1 when the mirrored image matched
    patches8       the mean agreement of the 8 x 8 patches with structure on both sides
    consistent     the share of the 4 x 4 patches whose own best offset (within 3 px) is the alignment's
    energy_spread  the spread over 8 x 8 patches of the log ratio of the two sides' structure energy

The coefficients (:data:`COEF`, :data:`INTERCEPT`) were fitted by ``python -m
benchmarks.imagefuse_fit`` (``benchmarks/results/imagefuse_fit.json``) on the candidate pairs of the
planted crop sets (seed 1; ``crops`` and ``small32``: heavy crops, zoom-outs, rotations, re-grades,
crop+flip+JPEG of photo cells, other cells of the same photos and featureless cells as negatives)
cut from the ``fit`` half of the shipped photographs only
(:data:`benchmarks.planted_crops.PHOTO_SPLIT`).  ``python -m benchmarks.quality --sets
crops,small32 --photos heldout`` evaluates on sets cut from the other half: no photograph, cell or
pair of the fit occurs there.  (v1 was fitted on all photographs, and evaluated on another seed of
the same photographs' cells: not held out; v2 had the first five inputs only.)
A pair whose smaller image has no structure scores 0, as with ``imagematch``.

v4: the inputs are measured where the search's ranking of variants (:data:`SIZE_POWER`,
:data:`ROTATION_COST`; :func:`sibscan.kernels.scalematch.preference`) puts the pair, not at its
highest NCC: a half-side template, or a rotated one, reaches a high NCC by chance more easily than
the true alignment of a sibling does, and there the inputs rightly said "no match".

Measured: docs/benchmarks.md, "From README: Verification (imagefuse)" and "Heavy crops, zooms and
featureless scenes"; on the default image set's whole-image transforms ``imagecorr`` finds more, so it
stays the default.
"""
from __future__ import annotations

import numpy as np

from ..kernels.alignmatch import ALIGNMENT_FEATURES, aligned_measures, alignment_features
from .base import register_verifier
from .imagematch import ImageMatchVerifier

__all__ = ["COEF", "FEATURES", "INTERCEPT", "ROTATION_COST", "SIZE_POWER", "ImageFuseVerifier"]

#: how the search ranks a pair's variants (:func:`sibscan.kernels.scalematch.preference`): by the
#: evidence ``atanh(NCC) * (T / size) ** SIZE_POWER``, less ``ROTATION_COST`` for a rotated template.
#: Ranked by NCC alone (v3), 12-17 % of the planted siblings were aligned wrongly (found the other way
#: round at half the side, or rotated 4-8 degrees): the inputs measured there said "no match".
#: Chosen on the 'fit' half (seed 1) by the hard negatives and planted siblings below them after
#: refitting, then the alignment accuracy (docs/benchmarks.md, "v4, the alignment")
SIZE_POWER = 0.5
ROTATION_COST = 0.2

#: the model's inputs, in the order of :data:`COEF`
FEATURES = ("patches", "global", "scale", "angle", "mirror", *ALIGNMENT_FEATURES)
#: fitted by ``python -m benchmarks.imagefuse_fit`` (the 'fit' half of the photographs, seed 1;
#: results/imagefuse_fit.json); a test holds them equal
COEF = (1.799512, 4.812996, 2.56688, -0.118967, -0.710701, 2.427093, 3.802807, -3.733692)
INTERCEPT = -8.852471


@register_verifier
class ImageFuseVerifier(ImageMatchVerifier):
    """``imagematch``'s search (same options), scored by a fixed logistic model of what it found.

    Parameters
    ----------
    **options
        As for :class:`sibscan.verify.imagematch.ImageMatchVerifier`.  The coefficients were fitted
        with its defaults; other options keep them, and say so in the identity.
    """

    name = "imagefuse"
    description = ("imagematch's search, scored by a logistic fusion of patch and global agreement, crop scale, "
                   "rotation and mirror")

    def __init__(self, **options):
        options.setdefault("size_power", SIZE_POWER)
        options.setdefault("rotation_cost", ROTATION_COST)
        super().__init__(**options)
        # each variant's scale, rotation magnitude and mirror, looked up by the variant the search found
        self._variant_inputs = np.array([(v.scale, abs(v.angle), float(v.flip)) for v in self.variants], np.float64)
        self.identity = (f"imagefuse-v4({self.identity},"
                         # exact: a refit is another identity
                         f"coef={','.join(repr(float(c)) for c in (*COEF, INTERCEPT))})")

    def measure(self, images, match):
        """The patch agreement and :data:`sibscan.kernels.alignmatch.ALIGNMENT_FEATURES` (m, 3), from one
        pass over the aligned structure signals (:func:`sibscan.kernels.alignmatch.aligned_measures`)."""
        return aligned_measures(*images, self.variants, match, grid=self.grid, device=self.device)

    def pair_features(self, local: np.ndarray, match, images, measured=None) -> np.ndarray:
        """The model's inputs of each pair, ndarray of shape (m, len(FEATURES)), float64; ``images`` and
        ``measured`` (the alignment features, measured on ``images`` when not given) as
        :meth:`sibscan.verify.imagematch.ImageMatchVerifier.pair_scores` takes them."""
        found = np.stack([np.asarray(local, np.float64), np.asarray(match.score, np.float64)], 1)
        at = alignment_features(*images, self.variants, match, device=self.device) if measured is None else measured
        return np.concatenate([found, self._variant_inputs[np.asarray(match.variant, np.int64)], at], 1)

    def pair_scores(self, local: np.ndarray, match, images=None, measured=None) -> np.ndarray:
        """The model's probability that the pair is a sibling, (m,) float32 in [0, 1]; 0 where the
        search found no structure."""
        z = self.pair_features(local, match, images, measured) @ np.asarray(COEF) + INTERCEPT
        p = 1.0 / (1.0 + np.exp(-z))
        return np.where(np.asarray(match.score) > 0, p, 0.0).astype(np.float32)
