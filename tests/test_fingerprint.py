"""Row fingerprints against a per-row hashlib reference, grouping, and dataset fingerprints."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sibscan.fingerprint import dataset_fingerprint, fingerprint
from sibscan.items import Items
from sibscan.kernels.rowhash import (fingerprint_order, group_fingerprints, round_rows, row_fingerprints,
                                     znormalise_rows)


def reference_groups(x, decimals=6, znorm=False):
    """Brute force: blake2b of each canonical rounded row; equal digests -> same group number."""
    if znorm:
        x = znormalise_rows(x)
    q = round_rows(x, decimals)
    seen, out = {}, []
    for row in q:
        key = hashlib.blake2b(row.tobytes()).digest()
        out.append(seen.setdefault(key, len(seen)))
    return np.array(out)


def same_partition(a, b):
    """Two group labellings define the same partition of the rows."""
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def planted(seed=0, n=300, d=12):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    x[rng.random((n, d)) < 0.05] = np.nan
    x[50:80] = x[0:30]  # exact copies
    x[80:100] = x[0:20] + rng.uniform(-1e-9, 1e-9, (20, d))  # float noise that rounding absorbs
    x[100:110] = np.round(x[0:10], 2)  # near but not equal at 6 decimals
    return x


def test_matches_bruteforce_reference():
    x = planted()
    for decimals in (2, 6):
        for znorm in (False, True):
            fp = row_fingerprints(x, decimals, znorm)
            assert fp.shape == (len(x), 2) and fp.dtype == np.uint64
            group, _, _ = group_fingerprints(fp)
            assert same_partition(group, reference_groups(x, decimals, znorm))


def test_noise_absorbed_but_real_differences_kept():
    x = planted()
    fp = row_fingerprints(x)
    assert (fp[50:80] == fp[0:30]).all()
    assert (fp[80:100] == fp[0:20]).all()
    assert not (fp[100:110] == fp[0:10]).all(axis=1).any()
    assert (row_fingerprints(x, decimals=2)[100:110] == row_fingerprints(x, decimals=2)[0:10]).all()


def test_negative_zero_and_nan_positions():
    x = np.array([[0.0, 1.0], [-0.0, 1.0], [-1e-9, 1.0], [np.nan, 1.0], [1.0, np.nan],
                  [np.float64("nan") * -1, 1.0]])
    fp = row_fingerprints(x)
    assert (fp[0] == fp[1]).all() and (fp[0] == fp[2]).all()  # -0.0 == 0.0, and -1e-9 rounds to -0.0
    assert not (fp[3] == fp[4]).all()  # NaN position is part of the identity
    assert (fp[3] == fp[5]).all()  # NaN payload/sign is not
    assert not (fp[0] == fp[3]).all()


def test_column_order_and_width_matter():
    x = np.array([[1.0, 2.0], [2.0, 1.0]])
    fp = row_fingerprints(x)
    assert not (fp[0] == fp[1]).all()
    assert not (row_fingerprints(np.array([[1.0, 0.0]]))[0] == row_fingerprints(np.array([[1.0, 0.0, 0.0]]))[0]).all()


def test_znorm_finds_rescaled_copies_only_when_asked():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((20, 30))
    y = 3.5 * x + 10.0
    assert not (row_fingerprints(x) == row_fingerprints(y)).all(axis=1).any()
    assert (row_fingerprints(x, znorm=True) == row_fingerprints(y, znorm=True)).all()
    assert not (row_fingerprints(x, znorm=True) == row_fingerprints(-x, znorm=True)).all(axis=1).any()


def test_blocking_does_not_change_results(monkeypatch):
    import sibscan.kernels.rowhash as rh

    x = planted(n=500)
    whole = row_fingerprints(x)
    monkeypatch.setattr(rh, "_BLOCK_BYTES", 8 * 12 * 7)  # 7-row blocks
    assert (rh.row_fingerprints(x) == whole).all()


def test_group_fingerprints_numbering_and_counts():
    fp = np.array([[5, 1], [3, 3], [5, 1], [5, 2], [3, 3], [5, 1]], dtype=np.uint64)
    group, counts, first = group_fingerprints(fp)
    assert group.tolist() == [0, 1, 0, 2, 1, 0]
    assert counts.tolist() == [3, 2, 1] and first.tolist() == [0, 1, 3]
    g0, c0, f0 = group_fingerprints(np.zeros((0, 2), dtype=np.uint64))
    assert len(g0) == len(c0) == len(f0) == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(1, 4), st.integers(1, 2 ** 63), st.integers(0, 2 ** 32))
def test_fingerprint_order_sorts_both_lanes(n, firsts, span, seed):
    """Against numpy's two-lane lexsort: few first-lane values (``firsts``) make distinct fingerprints
    share a first lane (the exact fallback); a wide ``span`` makes them unique (the one-lane sort)."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, firsts, n).astype(np.uint64) * np.uint64(span)  # wraps past 2**64, as a hash would
    fp = np.stack([first, rng.integers(0, 3, n).astype(np.uint64)], axis=1)
    fp = np.concatenate([fp, fp[: n // 2]])  # copies
    order = fingerprint_order(fp)
    assert sorted(order.tolist()) == list(range(len(fp)))
    np.testing.assert_array_equal(fp[order], fp[np.lexsort((fp[:, 1], fp[:, 0]))])


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 12), st.integers(1, 5)),
                  elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, np.nan, 1e-7, -3.0])),
       st.lists(st.sampled_from(["a", "b", "c"]), min_size=12, max_size=12))
def test_property_label_ignored_and_equal_rows_equal(x, labels):
    """Labels never enter; fingerprint equality is exactly canonical-rounded-row equality."""
    labels = labels[: len(x)]
    a = Items("train", "table", ids=np.arange(len(x)), labels=labels, values=x)
    b = Items("train", "table", ids=np.arange(len(x)), labels=labels[::-1], values=x)
    fa = fingerprint(a)
    assert (fa == fingerprint(b)).all()
    q = round_rows(x, 6)
    eq_fp = (fa[:, None, :] == fa[None, :, :]).all(-1)
    eq_rows = ((q[:, None, :] == q[None, :, :]) | (np.isnan(q[:, None, :]) & np.isnan(q[None, :, :]))).all(-1)
    assert (eq_fp == eq_rows).all()


def test_dataset_fingerprint_order_independent_and_label_free():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 6))
    a = Items("train", "table", ids=np.arange(40), labels=rng.integers(0, 2, 40), values=x)
    perm = rng.permutation(40)
    b = Items("train", "table", ids=np.arange(40), values=x[perm])
    assert dataset_fingerprint(a) == dataset_fingerprint(b)
    assert len(dataset_fingerprint(a)) == 32
    c = Items("train", "table", ids=np.arange(40), values=x + np.eye(40, 6) * 0.1)
    assert dataset_fingerprint(a) != dataset_fingerprint(c)
    assert dataset_fingerprint(a) != dataset_fingerprint(a, decimals=3)


def test_row_fingerprints_rejects_1d():
    with pytest.raises(ValueError, match="expects a 2-D array"):
        row_fingerprints(np.ones(3))


def test_threads_do_not_change_results(monkeypatch):
    import sibscan.kernels.rowhash as rh

    monkeypatch.setattr(rh, "_BLOCK_BYTES", 8 * 5 * 100)  # 100-row blocks: many parts per thread
    x = np.random.default_rng(3).standard_normal((20_000, 5))
    one = row_fingerprints(x, threads=1)
    assert (row_fingerprints(x, threads=3) == one).all() and (row_fingerprints(x, threads=8) == one).all()
