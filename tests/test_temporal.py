"""The temporal-information test: shared permutation, re-splits, normalisation, verdict, classifiers."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
pytest.importorskip("sklearn", reason="scikit-learn is not installed (it is in the dev extra)")

from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from sibscan.errors import InputError, SibscanError
from sibscan.items import Items
from sibscan.temporal import (check_znormalised, choose_normalisation, classifier_spec, does_not_matter,
                              load_series, normalise, permutation_test, permute_time, series_pair,
                              stratified_resplit, summarise_runs, time_permutation)
from sibscan.temporal.normalise import apply_normalisation
from sibscan.temporal.resplit import check_resplits, count_resplits
from sibscan.temporal.series import SeriesPair
from temporal_data import aeon_dataset

SEEN = []  # (phase, X) recorded by the spy estimator below


class Spy(BaseEstimator, ClassifierMixin):
    """Records what it is fitted on and predicts with; predicts the majority class."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, x, y):
        SEEN.append(("fit", np.array(x)))
        values, counts = np.unique(y, return_counts=True)
        self.majority_ = values[np.argmax(counts)]
        return self

    def predict(self, x):
        SEEN.append(("predict", np.array(x)))
        return np.full(len(x), self.majority_)


def toy(n_train=12, n_test=8, channels=1, length=9, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    y = np.arange(n_train + n_test) % classes
    x = rng.normal(size=(n_train + n_test, channels, length)) + y[:, None, None]
    return SeriesPair(x[:n_train], y[:n_train].astype(str), x[n_train:], y[n_train:].astype(str), name="toy")


# ------------------------------------------------------------------------------------- permutation
@settings(max_examples=40, deadline=None)
@given(n_train=st.integers(4, 12), n_test=st.integers(2, 8), channels=st.integers(1, 3),
       length=st.integers(2, 15), seed=st.integers(0, 2**16))
def test_one_permutation_for_every_row_split_and_channel(n_train, n_test, channels, length, seed):
    """What the classifier sees on the permuted side is the original with one shared reordering of time."""
    data = toy(n_train, n_test, channels, length, seed)
    SEEN.clear()
    permutation_test(data, Spy(), runs=2, seed=seed, normalise=False, progress=False)
    # per run: fit original, predict original, fit permuted, predict permuted
    assert [p for p, _ in SEEN] == ["fit", "predict", "fit", "predict"] * 2
    for run in range(2):
        (_, fo), (_, po), (_, fp), (_, pp) = SEEN[4 * run: 4 * run + 4]
        ori = np.concatenate([fo, po]).reshape(-1, channels, length)
        per = np.concatenate([fp, pp]).reshape(-1, channels, length)
        perm = time_permutation(length, seed + run)
        np.testing.assert_array_equal(per, ori[:, :, perm])
        # and it is one permutation: recover it from the first series' values, check all others
        if length > 1 and len(np.unique(ori[0, 0])) == length:
            found = np.array([np.flatnonzero(ori[0, 0] == v)[0] for v in per[0, 0]])
            np.testing.assert_array_equal(per, ori[:, :, found])


def test_permute_time_rejects_a_wrong_length():
    with pytest.raises(SibscanError, match="length 5"):
        permute_time(np.zeros((2, 1, 5)), np.arange(4))


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=2, max_size=4),
       seed=st.integers(0, 1000))
def test_resplit_keeps_class_counts_and_covers_everything(counts, seed):
    y_train = np.concatenate([[f"c{k}"] * a for k, (a, _) in enumerate(counts)]).astype(str)
    y_test = np.concatenate([[f"c{k}"] * b for k, (_, b) in enumerate(counts)]).astype(str)
    tr, te = stratified_resplit(y_train, y_test, seed)
    y = np.concatenate([y_train, y_test])
    assert sorted(np.concatenate([tr, te]).tolist()) == list(range(len(y)))
    for k, (a, _) in enumerate(counts):
        assert np.sum(y[tr] == f"c{k}") == a
    tr2, _ = stratified_resplit(y_train, y_test, seed)
    np.testing.assert_array_equal(tr, tr2)


def test_resplit_brute_force_count():
    y_train, y_test = np.array(["a", "a", "b"]), np.array(["a", "b", "b"])
    seen = {tuple(stratified_resplit(y_train, y_test, s)[0]) for s in range(400)}
    assert count_resplits(y_train, y_test) == 3 * 3 == len(seen)


def test_too_small_for_resplits_says_what_to_do():
    with pytest.raises(SibscanError, match=r"only 2 distinct split\(s\).*lower --runs to 2"):
        check_resplits(np.array(["a", "b"]), np.array(["a"]), runs=5, where="tiny")
    with pytest.raises(SibscanError, match="1 class"):
        check_resplits(np.array(["a", "a"]), np.array(["a", "b"]), runs=1)
    check_resplits(np.array(["a", "b"]), np.array(["a"]), runs=2)


# ----------------------------------------------------------------------------------------- verdict
def test_rule_matches_the_paper():
    assert does_not_matter(0.90, 0.01, 0.91, 0.01)            # permuted better
    assert does_not_matter(0.90, 0.02, 0.875, 0.01)           # within 1 std (0.025 <= 0.03)
    assert not does_not_matter(0.90, 0.01, 0.87, 0.01)        # 0.03 > 0.02
    assert does_not_matter(0.90, 0.01, 0.87, 0.01, k=2.0)     # relaxed: 0.03 <= 0.04
    rec = summarise_runs([1.0, 0.9], [0.8, 0.8])
    assert rec["acc_original_std"] == pytest.approx(0.05)     # population std
    assert rec["time_matters"] and rec["time_matters_2std"]
    assert summarise_runs([0.9], [0.9])["time_matters"] is False


# ----------------------------------------------------------------------------------- normalisation
def test_detects_normalisation_and_demean_keeps_relative_scale():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 2, 50))
    z = normalise(x, "znorm")
    assert check_znormalised(z) == 1.0
    assert check_znormalised(x + 3.0) == 0.0
    raw = x * np.array([1.0, 5.0])[None, :, None] + 10.0
    d = normalise(raw, "demean")
    np.testing.assert_allclose(d.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(d[0, 0] / d[1, 0], (raw[0, 0] - raw[0, 0].mean()) / (raw[1, 0] - raw[1, 0].mean()))
    assert choose_normalisation(z[:10], z[10:]).applied == "none"
    dec = choose_normalisation(raw[:10], raw[10:])
    assert dec.applied == "demean" and "not z-normalised" in dec.reason
    assert choose_normalisation(raw[:10], raw[10:], enabled=False).applied == "none"
    a, b = apply_normalisation(raw[:10], raw[10:], dec)
    np.testing.assert_allclose(np.concatenate([a, b]), normalise(raw, "demean"))  # one scale for both splits


def test_level_only_classes_pass_raw_but_not_normalised():
    """A class that differs only by its level survives a shuffled time axis unless the means go."""
    rng = np.random.default_rng(0)
    t = np.linspace(0, 6, 40)
    y = np.arange(60) % 2
    shape = np.where(y[:, None] == 1, np.sin(t), np.cos(t))
    x = (shape + 5.0 * y[:, None] + 0.3 * rng.normal(size=(60, 40)))[:, None, :]
    data = SeriesPair(x[:30], y[:30].astype(str), x[30:], y[30:].astype(str), name="levels")
    knn = KNeighborsClassifier(n_neighbors=1)
    raw = permutation_test(data, knn, runs=3, normalise=False, progress=False)
    assert raw.acc_permuted == raw.acc_original  # Euclidean 1-NN: invariant either way
    dec = permutation_test(data, knn, runs=3, progress=False).to_dict()
    assert dec["normalisation"]["applied"] == "demean"


# ------------------------------------------------------------------------------------- classifiers
def test_unknown_classifier_lists_the_known_ones():
    with pytest.raises(SibscanError) as err:
        classifier_spec("minirocekt")
    msg = str(err.value)
    assert "minirocket" in msg and "euclidean-1nn" in msg
    pytest.importorskip("aeon", reason="aeon lists its own classes")
    assert "MultiRocketClassifier" in msg and "WEASEL_V2" in msg


def test_aeon_class_name_and_params_resolve():
    pytest.importorskip("aeon")
    spec = classifier_spec("HydraClassifier", {"n_kernels": 4})
    assert spec.target.endswith(":HydraClassifier") and spec.params == {"n_kernels": 4}
    with pytest.raises(SibscanError, match="did you mean 'HydraClassifier'"):
        classifier_spec("hydraclassifier")


def test_sklearn_estimator_is_cloned_and_seeded():
    from sklearn.ensemble import RandomForestClassifier

    rf = RandomForestClassifier(n_estimators=5)
    res = permutation_test(toy(), rf, runs=2, progress=False)
    assert not hasattr(rf, "estimators_")  # the caller's object is never fitted
    assert res.classifier.name == "custom:RandomForestClassifier"
    assert res.to_dict()["classifier_detail"]["params"]["n_estimators"] == 5


# --------------------------------------------------------------------------- real data (aeon ships)
@pytest.mark.parametrize("name", ["GunPoint", "ItalyPowerDemand"])
def test_euclidean_1nn_is_invariant_on_ucr_data(name):
    train, test = aeon_dataset(name)
    res = permutation_test(load_series(train, test), "euclidean-1nn", runs=3, progress=False).to_dict()
    assert res["acc_original"] == res["acc_permuted"]
    assert res["invariance_check"] is True and res["time_matters"] is False
    assert len(set(res["acc_original"])) > 1  # the re-splits differ: the std means something
    assert res["acc_original_mean"] > 0.8


@pytest.mark.slow  # aeon's import and numba's first compile: ~5-20 s
def test_minirocket_finds_that_gunpoint_uses_time():
    pytest.importorskip("aeon")
    res = permutation_test(load_series(*aeon_dataset("GunPoint")), "minirocket", params={"n_kernels": 200},
                           runs=2, progress=False).to_dict()
    for key in ("acc_original_mean", "acc_original_std", "acc_permuted_mean", "acc_permuted_std", "runs",
                "classifier", "time_matters", "time_matters_2std"):
        assert key in res
    assert res["classifier"] == "minirocket" and res["runs"] == 2
    assert res["acc_original_mean"] > res["acc_permuted_mean"]


# ---------------------------------------------------------------------------------------- bad input
def test_variable_length_and_missing_values_are_refused(tmp_path):
    (tmp_path / "v_TRAIN.tsv").write_text("1\t0.1\t0.2\t0.3\n2\t0.4\t0.5\tNaN\n")
    (tmp_path / "v_TEST.tsv").write_text("1\t0.1\t0.2\t0.3\n")
    with pytest.raises(InputError, match=r"v_TRAIN.tsv.*'1' has 2 of 3 time steps.*equal-length"):
        load_series(tmp_path / "v_TRAIN.tsv", tmp_path / "v_TEST.tsv")
    (tmp_path / "m_TRAIN.tsv").write_text("1\t0.1\tNaN\t0.3\n2\t0.4\t0.5\t0.6\n")
    with pytest.raises(InputError, match="missing value at time step 1.*interpolate"):
        load_series(tmp_path / "m_TRAIN.tsv", tmp_path / "v_TEST.tsv")


def test_multivariate_series_share_the_permutation():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(6, 2 * 5))
    tr = Items(split="train", modality="table", ids=np.arange(4), labels=["a", "b"] * 2, values=values[:4],
               shape=(2, 5))
    te = Items(split="test", modality="table", ids=np.arange(2), labels=["a", "b"], values=values[4:], shape=(2, 5))
    data = series_pair(tr, te)
    assert data.X_train.shape == (4, 2, 5)
    np.testing.assert_array_equal(data.X_train[1, 1], values[1, 5:])
    SEEN.clear()
    permutation_test(data, Spy(), runs=1, normalise=False, progress=False)
    perm = time_permutation(5, 0)
    np.testing.assert_array_equal(SEEN[2][1].reshape(4, 2, 5), data.X_train[:, :, perm])


def test_unlabelled_series_are_refused():
    tr = Items(split="train", modality="table", ids=np.arange(2), values=np.zeros((2, 3)))
    with pytest.raises(InputError, match="no class labels"):
        series_pair(tr, tr)
