"""The verification cascade: the selection against brute force, the windows score of given pairs against
the all-pairs kernel, and a scan whose cascade verifies fewer pairs and still finds a crop and a mirror."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.config import ScanConfig
from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.kernels.windows import window_boxes, window_pair_scores, window_vectors
from sibscan.store.neighbourtable import Neighbours
from sibscan.verify.cascade import Cascade, cascade_keep
from sibscan.stages.views import cascade_candidates, pair_window_scores_gray


def _keep_reference(groups, signals, always):
    keep = list(always)
    for g in set(groups):
        rows = [i for i, x in enumerate(groups) if x == g]
        for scores, band in signals:
            finite = [scores[i] for i in rows if not np.isnan(scores[i])]
            for i in rows:
                if finite and not np.isnan(scores[i]) and scores[i] >= max(finite) - band:
                    keep[i] = True
        if not any(keep[i] for i in rows):
            for i in rows:
                keep[i] = True
    return np.array(keep)


def test_cascade_keep_against_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(30):
        m = int(rng.integers(1, 40))
        groups = rng.integers(0, 6, m) * 7  # sparse group keys
        a = np.round(rng.random(m), 2)  # rounded: ties at the band's edge occur
        b = rng.random(m)
        b[rng.random(m) < 0.2] = np.nan
        if trial % 5 == 0:
            a[:] = np.nan
            b[:] = np.nan  # no scores at all: every row is kept
        always = rng.random(m) < 0.1
        signals = [(a, 0.05), (b, 0.0)]
        np.testing.assert_array_equal(cascade_keep(groups, signals, always), _keep_reference(groups, signals, always))
    assert cascade_keep(np.zeros(0, int), [(np.zeros(0), 0.1)]).shape == (0,)
    with pytest.raises(ValueError, match="band"):
        cascade_keep(np.zeros(2, int), [(np.zeros(2), -0.1)])


@pytest.mark.parametrize("block", [1024, 5])  # the database's vectors made once for the call, or per chunk
def test_pair_window_scores_are_the_pairs_of_the_all_pairs_kernel(block, monkeypatch):
    import sibscan.stages.views

    monkeypatch.setattr(sibscan.stages.views, "_WINDOW_BLOCK", block)
    rng = np.random.default_rng(1)
    gray = lambda n: rng.integers(0, 256, size=(n, 8, 8)).repeat(8, 1).repeat(8, 2).astype(np.uint8)  # noqa: E731
    q, d = gray(9), gray(13)
    qi = np.r_[rng.integers(0, 9, 40), 4]
    di = np.r_[rng.integers(0, 13, 40), 4]
    d[4] = q[4, :, ::-1]  # a mirrored copy
    boxes = window_boxes()
    full = window_pair_scores(window_vectors(q, boxes, 12), window_vectors(d, boxes, 12), 12)
    got = pair_window_scores_gray(q, qi, d, di, chunk=2)  # chunks of 2 distinct queries
    np.testing.assert_allclose(got, full[qi, di], rtol=1e-5, atol=1e-6)
    assert got[-1] > 0.999  # the mirrored copy scores as the copy


def test_cascade_options_are_checked(tmp_path):
    base = dict(train=str(tmp_path), test=str(tmp_path), out=str(tmp_path / "o"))
    with pytest.raises(SibscanError, match="--cascade and --no-verify contradict"):
        ScanConfig(**base, cascade=True, verify=False).check()
    items = Items("train", "table", np.array(["a", "b"]), values=np.zeros((2, 2)))
    nb = Neighbours({"query_split": ["test"], "query_id": ["a"], "query_index": [0], "rank": [0],
                     "neighbour_split": ["train"], "neighbour_id": ["a"], "neighbour_index": [0],
                     "similarity": [1.0], "exact": [False]})
    with pytest.raises(SibscanError, match="cascade is for images"):
        cascade_candidates(nb, {"train": items, "test": items}, Cascade())


@pytest.mark.slow  # a whole scan: ~7 s on the shared 2 cores
def test_scan_with_the_cascade_verifies_fewer_pairs_and_finds_crop_and_mirror(flip_and_crop_folders):
    from sibscan.scan import run_scan
    from sibscan.store.scandir import ScanDir

    tmp_path = flip_and_crop_folders
    res = run_scan(ScanConfig(train=str(tmp_path / "train"), test=str(tmp_path / "test"), out=str(tmp_path / "out"),
                              encoder="pixels", k=4, k_view=4, cascade=True, directions="test-train",
                              progress=False))
    assert res.manifest["parameters"]["cascade"] is True
    nb = ScanDir(tmp_path / "out").neighbours().direction("test", "train")
    # 4 pixels + 4 windows candidates per item before the cascade; it keeps those near each item's best
    assert 2 <= len(nb) < 10 and not np.isnan(nb["verified"]).any()
    top = ScanDir(tmp_path / "out").neighbours().top1()
    assert dict(zip(top["query_id"], top["neighbour_id"])) == {"flip5.png": "5.png", "crop3.png": "3.png"}

