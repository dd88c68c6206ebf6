"""The temporal-information removal test: does a classifier lose accuracy when time is shuffled?

Zhang, Batista & Kanhere (PAKDD 2025). For each of ``runs`` runs:

1. the split — run 0 is the given train/test split, run ``r > 0`` a stratified re-split of
   train + test at the original sizes per class (seed ``seed + r``);
2. one random permutation of the time index (seed ``seed + r``), applied to every series of both
   splits and every channel;
3. the classifier (its seed ``seed + r``) is trained and scored on the original series, and a fresh
   one on the permuted series.

Series that are not z-normalised are normalised first (see :mod:`.normalise`), unless asked not
to. The verdict follows the paper's rule (:mod:`.verdict`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from ..progress import bar as progress_bar
from .classifiers import DEFAULT_CLASSIFIER, ClassifierSpec, as_input, check_length, describe, make_classifier
from .normalise import Normalisation, apply_normalisation, choose_normalisation
from .resplit import check_resplits, permute_time, stratified_resplit, time_permutation
from .series import SeriesPair
from .verdict import RULE, RULE_2STD, summarise_runs

__all__ = ["TemporalResult", "fit_score", "permutation_test", "run_split"]


@dataclass
class TemporalResult:
    """The outcome of :func:`permutation_test`; :meth:`to_dict` is the JSON contract.

    Attributes
    ----------
    dataset : dict
        :meth:`SeriesPair.describe` of the input.
    classifier : ClassifierSpec
    acc_original, acc_permuted : list of float
        Per-run test accuracy on the original and on the time-permuted series.
    seed : int
    normalisation : Normalisation
    seconds : dict
        ``fit_predict`` (seconds inside the classifiers' fit and predict) and ``total``.
    runs_detail : list of dict
        Per run: which split, and the split / permutation / classifier seeds.
    """

    dataset: Dict[str, Any]
    classifier: ClassifierSpec
    acc_original: List[float]
    acc_permuted: List[float]
    seed: int
    normalisation: Normalisation
    seconds: Dict[str, float] = field(default_factory=dict)
    runs_detail: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def summary(self) -> Dict[str, Any]:
        return summarise_runs(self.acc_original, self.acc_permuted)

    @property
    def time_matters(self) -> bool:
        return bool(self.summary["time_matters"])

    def to_dict(self) -> Dict[str, Any]:
        """``acc_original_mean, acc_original_std, acc_permuted_mean, acc_permuted_std`` (population
        std over runs), ``runs``, ``classifier``, ``time_matters``, ``time_matters_2std``, then the
        detail: per-run accuracies, the rule, the normalisation, the dataset and the seeds."""
        out: Dict[str, Any] = {**self.summary, "classifier": self.classifier.name}
        sanity = None
        if self.classifier.permutation_invariant:
            sanity = bool(np.array_equal(self.acc_original, self.acc_permuted))
        out.update({
            "classifier_detail": self.classifier.to_dict(),
            "acc_original": list(self.acc_original),
            "acc_permuted": list(self.acc_permuted),
            "rule": RULE,
            "rule_2std": RULE_2STD,
            "invariance_check": sanity,
            "normalisation": self.normalisation.to_dict(),
            "dataset": dict(self.dataset),
            "seed": self.seed,
            "runs_detail": list(self.runs_detail),
            "seconds": dict(self.seconds),
        })
        return out


def fit_score(classifier: Any, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
              *, params: Optional[Dict[str, Any]] = None, random_state: Optional[int] = None,
              n_jobs: Optional[int] = None) -> tuple:
    """Train a fresh classifier and return (test accuracy, seconds in fit + predict).

    Parameters
    ----------
    x_train : ndarray of shape (n_train, n_channels, length)
    y_train : ndarray of shape (n_train,)
    x_test : ndarray of shape (n_test, n_channels, length)
    y_test : ndarray of shape (n_test,)
    """
    est, wants_3d = make_classifier(classifier, params=params, random_state=random_state, n_jobs=n_jobs)
    a, b = as_input(x_train, wants_3d), as_input(x_test, wants_3d)
    t0 = time.perf_counter()
    est.fit(a, y_train)
    pred = est.predict(b)
    seconds = time.perf_counter() - t0
    acc = float(np.mean(np.asarray(pred).astype(str) == np.asarray(y_test).astype(str)))
    return acc, seconds


def run_split(data: SeriesPair, run: int, seed: int):
    """The train/test split of one run: run 0 the given one, run r a re-split with seed ``seed + r``.

    Returns
    -------
    x_train, y_train, x_test, y_test, detail : arrays and a dict naming the split and its seed
    """
    if run == 0:
        return data.X_train, data.y_train, data.X_test, data.y_test, {"split": "given", "split_seed": None}
    x = np.concatenate([data.X_train, data.X_test])
    y = np.concatenate([data.y_train, data.y_test])
    tr, te = stratified_resplit(data.y_train, data.y_test, seed + run)
    return x[tr], y[tr], x[te], y[te], {"split": "stratified re-split", "split_seed": seed + run}


def permutation_test(data: SeriesPair, classifier: Any = DEFAULT_CLASSIFIER, *,
                     params: Optional[Dict[str, Any]] = None, runs: int = 5, seed: int = 0,
                     normalise: bool = True, normalisation: str = "demean", n_jobs: Optional[int] = None,
                     progress: bool = True) -> TemporalResult:
    """Score ``classifier`` on the original and the time-permuted series over ``runs`` runs.

    Parameters
    ----------
    data : SeriesPair
        From :func:`sibscan.temporal.load_series` or :func:`sibscan.temporal.series_pair`.
    classifier : str or estimator, default "minirocket"
        A short name (:func:`list_classifiers`), an aeon class name, or a scikit-learn-style
        estimator (cloned per run).
    params : dict, optional
        Constructor parameters for a named classifier (e.g. ``{"n_kernels": 1000}``).
    runs : int, default 5
    seed : int, default 0
        Run ``r`` uses seed ``seed + r`` for its re-split, its permutation and its classifier.
    normalise : bool, default True
        Normalise series that are not z-normalised; False tests the raw values.
    normalisation : {"demean", "znorm"}, default "demean"
        How (see :mod:`sibscan.temporal.normalise`).
    n_jobs : int, optional
        Threads for classifiers that take ``n_jobs``.
    progress : bool
        A bar on a terminal, log lines otherwise.

    Returns
    -------
    TemporalResult

    Raises
    ------
    SibscanError
        Too few series or classes for the runs asked, series shorter than the classifier takes,
        unknown classifier, missing aeon.
    """
    t_start = time.perf_counter()
    spec = describe(classifier, params)
    if isinstance(classifier, str):
        classifier = spec  # resolved once: an unknown name fails before any work
    check_resplits(data.y_train, data.y_test, runs, where=data.name)
    check_length(spec, data.length, data.train_source or data.name)
    decision = choose_normalisation(data.X_train, data.X_test, enabled=normalise, method=normalisation)
    x_train, x_test = apply_normalisation(data.X_train, data.X_test, decision)
    prepared = SeriesPair(x_train, data.y_train, x_test, data.y_test, data.name, data.train_source, data.test_source)

    acc_ori: List[float] = []
    acc_per: List[float] = []
    detail: List[Dict[str, Any]] = []
    fit_seconds = 0.0
    est_params = None if isinstance(classifier, ClassifierSpec) else params
    with progress_bar(2 * runs, f"temporal {data.name} [{spec.name}]", "fit", enabled=progress) as bar:
        for r in range(runs):
            xtr, ytr, xte, yte, split = run_split(prepared, r, seed)
            perm = time_permutation(prepared.length, seed + r)
            kwargs = dict(params=est_params, random_state=seed + r, n_jobs=n_jobs)
            a, s = fit_score(classifier, xtr, ytr, xte, yte, **kwargs)
            acc_ori.append(a)
            fit_seconds += s
            bar.update(1, f"run {r}: original {a:.3f}")
            b, s = fit_score(classifier, permute_time(xtr, perm), ytr, permute_time(xte, perm), yte, **kwargs)
            acc_per.append(b)
            fit_seconds += s
            bar.update(1, f"run {r}: permuted {b:.3f}")
            detail.append({"run": r, **split, "permutation_seed": seed + r, "classifier_seed": seed + r})
    return TemporalResult(
        dataset=data.describe(), classifier=spec, acc_original=acc_ori, acc_permuted=acc_per, seed=seed,
        normalisation=decision, runs_detail=detail,
        seconds={"fit_predict": fit_seconds, "total": time.perf_counter() - t_start},
    )
