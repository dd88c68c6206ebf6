"""Case 6 of issue 13: huge (1e300) and tiny (1e-300) values must not overflow to zero rows or false twins."""
from __future__ import annotations

import numpy as np
import pytest

from rel_helpers import FAST, cli, write_table
from sibscan.encoders import get_encoder
from sibscan.kernels.rowhash import row_fingerprints
from sibscan.store.scandir import ScanDir
from sibscan.twins import find_twins


def _rows(seed=0, n=12, d=10):
    return np.random.default_rng(seed).normal(size=(n, d)).cumsum(axis=1)


def test_scan_finds_rescaled_copies_of_huge_rows_without_a_verifier(tmp_path):
    base = _rows()
    train = np.vstack([base[:6] * 1e300, base[6:] * 1e-300])
    test = np.vstack([base[:3] * 0.5e300, base[6:9] * 3e-300, _rows(seed=5, n=3)])
    write_table(tmp_path / "train.csv", train)
    write_table(tmp_path / "test.csv", test)
    out = tmp_path / "scan"
    result = cli("scan", "--train", tmp_path / "train.csv", "--test", tmp_path / "test.csv", "--out", out, *FAST)
    assert result.exit_code == 0, result.output
    top = ScanDir(out).neighbours().top1("test", "train")
    sim = dict(zip(top["query_index"].tolist(), top["similarity"].tolist()))
    want = {0: 0, 1: 1, 2: 2, 3: 6, 4: 7, 5: 8}
    for q, t in want.items():
        row = np.flatnonzero(top["query_index"] == q)[0]
        assert top["neighbour_index"][row] == t and sim[q] > 0.9999, (q, top["neighbour_index"][row], sim[q])


@pytest.mark.parametrize("name", ["raw", "znorm"])
def test_numeric_encoders_normalise_huge_and_tiny_rows(name):
    x = _rows(n=4)
    emb = get_encoder(name, dim=x.shape[1]).encode(np.vstack([x, x * 1e300, x * 1e-300]))
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)  # no zero rows, no NaN
    np.testing.assert_allclose(emb[4:8], emb[:4], atol=1e-6)
    np.testing.assert_allclose(emb[8:], emb[:4], atol=1e-6)


def test_huge_values_are_not_false_twins_and_znorm_twins_still_found():
    x = _rows(n=3)
    fp = row_fingerprints(np.vstack([x * 1e300, x * 2e300]))  # scaling by 1e6 overflows both to inf
    assert not (fp[:3] == fp[3:]).all(axis=1).any()
    report = find_twins(x * 1e300, np.vstack([x * 4e299, _rows(seed=9, n=1)]), znorm=True)
    assert report.test_twin_indices == [0, 1, 2]


def test_lagcorr_scores_huge_rows():
    pytest.importorskip("torch")
    from sibscan.items import Items
    from sibscan.verify import get_verifier

    x = _rows(n=3, d=16)
    train = Items("train", "table", ids=list("abc"), values=x * 1e300)
    test = Items("test", "table", ids=list("abc"), values=np.vstack([x[:1] * 5e299, x[1:2] * 3, x[2:] * 1e-300]))
    res = get_verifier("lagcorr", device="cpu").verify(test, np.arange(3), train, np.arange(3))
    np.testing.assert_allclose(res.scores, 1.0, atol=1e-6)
