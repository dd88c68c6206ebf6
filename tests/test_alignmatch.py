"""alignmatch: what agrees at the alignment found, held to a brute-force reference and to a copy vs a look-alike."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the image verifier runs on torch (pip install 'sibscan[torch]')")

from test_imagematch import _smooth_images  # noqa: E402

from sibscan.kernels.alignmatch import ALIGNMENT_FEATURES, alignment_features, alignment_features_reference  # noqa: E402
from sibscan.kernels.scalematch import MatchVariant, scale_match  # noqa: E402

VARIANTS = [MatchVariant("query", 1.0, 0.0, False), MatchVariant("query", 0.6, 0.0, False),
            MatchVariant("database", 0.8, 4.0, False), MatchVariant("query", 0.7, 0.0, True)]


def test_alignment_features_equal_brute_force_reference():
    q, d = _smooth_images(3, 32, 4), _smooth_images(4, 32, 5)
    d[2] = np.pad(q[1, :, 6:26, 6:26], ((0, 0), (7, 5), (4, 8)), mode="edge")  # q[1]'s centre inside d[2]
    d[3, :, :16] = 0.5  # half of it flat: no structure on one side there
    qi, di = np.array([0, 1, 2, 0]), np.array([0, 2, 3, 3])
    match = scale_match(q, d, qi, di, VARIANTS)
    assert len(set(match.variant.tolist())) > 1  # the grouping by variant is exercised
    fast = alignment_features(q, d, qi, di, VARIANTS, match, reach=2)
    ref = alignment_features_reference(q, d, qi, di, VARIANTS, match, reach=2)
    assert fast.shape == (4, len(ALIGNMENT_FEATURES))
    np.testing.assert_allclose(fast, ref, atol=2e-4)


def test_a_copy_agrees_everywhere_and_a_look_alike_does_not():
    rng = np.random.default_rng(0)
    base = _smooth_images(1, 64, 6)[0, 0]
    copy = base * 0.7 + 0.1  # a re-graded copy: the contrast changes alike everywhere
    look = base.copy()
    look[32:, :] = _smooth_images(1, 64, 7)[0, 0, 32:, :]  # half of it other content
    look[:32, :32] = 0.5 + 0.002 * rng.standard_normal((32, 32))  # a quarter of it flat
    q = np.stack([copy, look])[:, None].astype(np.float32)
    d = base[None, None].astype(np.float32)
    variants = [MatchVariant("query", 1.0, 0.0, False)]
    match = scale_match(q, d, np.array([0, 1]), np.array([0, 0]), variants)
    f = alignment_features(q, d, np.array([0, 1]), np.array([0, 0]), variants, match)
    patches8, consistent, spread = f.T
    assert patches8[0] > 0.99 and consistent[0] == 1.0 and spread[0] < 0.05, f
    assert patches8[1] < patches8[0] and consistent[1] < 0.75 and spread[1] > 0.5, f
