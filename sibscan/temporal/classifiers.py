"""Classifiers for the temporal audits: short names over aeon, any aeon class name, or your estimator.

Short names (``list_classifiers()``):

===============  ==================================================================  =========
name             aeon estimator                                                       permutation-invariant
===============  ==================================================================  =========
minirocket       ``MiniRocketClassifier`` (the default: fast and strong)              no
catch22          ``Catch22Classifier``                                                no
rotation-forest  ``RotationForestClassifier`` on the rows as tabular features         yes
dtw-1nn          ``KNeighborsTimeSeriesClassifier(distance="dtw", n_neighbors=1)``   no
euclidean-1nn    scikit-learn ``KNeighborsClassifier(n_neighbors=1)`` (brute force)   yes
weasel           ``WEASEL_V2``                                                        no
cif              ``CanonicalIntervalForestClassifier``                                no
stc              ``ShapeletTransformClassifier``                                      no
===============  ==================================================================  =========

Any other classifier class that aeon exports (``MultiRocketClassifier``, ``HydraClassifier``,
``DrCIFClassifier``…) is reached by its class name; the names are read from aeon's package files
without importing it (importing all of aeon's classifiers takes minutes). From Python, any
scikit-learn-style estimator (``fit``/``predict``) works: it is cloned per run, and aeon estimators
receive ``(n, n_channels, length)`` arrays, all others 2-D rows ``(n, n_channels * length)``.

Every run gets its own classifier seed (``random_state``, when the estimator has one).
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import SibscanError, require

__all__ = ["ClassifierSpec", "DEFAULT_CLASSIFIER", "REGISTRY", "aeon_classifier_names", "as_input", "check_length",
           "classifier_spec", "describe", "list_classifiers", "make_classifier"]

DEFAULT_CLASSIFIER = "minirocket"
_AEON = "aeon.classification"


@dataclass(frozen=True)
class ClassifierSpec:
    """A named classifier: where it lives, the parameters it is built with, what it is.

    Attributes
    ----------
    name : str
        The registry name (or the aeon class name, or ``"custom:<Class>"`` for an estimator).
    target : str
        ``"module:Class"``.
    params : dict
        Constructor parameters (the registry's fixed ones updated by the user's).
    description : str
    permutation_invariant : bool
        True when the classifier cannot see the time order (its original and permuted accuracies
        must agree: a sanity check, not a finding).
    min_length : int
        The fewest time points it can be trained on (1: any length, or not known), measured with its
        registry parameters and the aeon release this package is tested with (minirocket's 9 is its
        kernel length, whatever the parameters); checked by :func:`check_length` before any training,
        so a too-short series is one line instead of aeon's traceback.
    """

    name: str
    target: str
    params: Dict[str, Any] = field(default_factory=dict)
    description: str = ""
    permutation_invariant: bool = False
    min_length: int = 1

    def identity(self) -> str:
        """A string that changes when the classifier or its parameters change (for resumable results)."""
        args = ",".join(f"{k}={self.params[k]!r}" for k in sorted(self.params))
        return f"{self.name}|{self.target}({args})"

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "target": self.target, "params": dict(self.params),
                "permutation_invariant": self.permutation_invariant}


REGISTRY: Dict[str, ClassifierSpec] = {s.name: s for s in (
    ClassifierSpec("minirocket", f"{_AEON}.convolution_based:MiniRocketClassifier", {},
                   "MiniRocket: random convolutions + ridge (Dempster et al. 2021)", min_length=9),
    ClassifierSpec("catch22", f"{_AEON}.feature_based:Catch22Classifier", {},
                   "22 time-series features + random forest", min_length=3),
    ClassifierSpec("rotation-forest", f"{_AEON}.sklearn:RotationForestClassifier", {},
                   "rotation forest on the time steps as tabular features", permutation_invariant=True),
    ClassifierSpec("dtw-1nn", f"{_AEON}.distance_based:KNeighborsTimeSeriesClassifier",
                   {"distance": "dtw", "n_neighbors": 1}, "1-NN under dynamic time warping"),
    # scikit-learn's brute-force 1-NN: the same Euclidean 1-NN as aeon's, without numba compiling
    # its distance loops on first use (tens of seconds); it is the invariance check
    ClassifierSpec("euclidean-1nn", "sklearn.neighbors:KNeighborsClassifier",
                   {"n_neighbors": 1, "algorithm": "brute"},
                   "1-NN under the Euclidean distance (the invariance check)", permutation_invariant=True),
    ClassifierSpec("weasel", f"{_AEON}.dictionary_based:WEASEL_V2", {}, "WEASEL 2.0 dictionary classifier",
                   min_length=4),
    ClassifierSpec("cif", f"{_AEON}.interval_based:CanonicalIntervalForestClassifier", {},
                   "canonical interval forest", min_length=3),
    ClassifierSpec("stc", f"{_AEON}.shapelet_based:ShapeletTransformClassifier", {},
                   "shapelet transform classifier", min_length=2),
)}


def list_classifiers() -> List[str]:
    """The short names, sorted."""
    return sorted(REGISTRY)


@lru_cache(maxsize=1)
def aeon_classifier_names() -> Dict[str, str]:
    """aeon's exported classifier classes, ``{ClassName: module}``, read from its files (no import).

    Returns an empty dict when aeon is not installed.
    """
    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        return {}
    root = os.path.join(list(spec.submodule_search_locations)[0], "classification")
    names: Dict[str, str] = {}
    for sub in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        init = os.path.join(root, sub, "__init__.py")
        if sub.startswith(("_", "tests")) or not os.path.isfile(init):
            continue
        for name in _exported(init):
            if name[:1].isupper() and not name.startswith("Base"):
                names[name] = f"{_AEON}.{sub}"
    return names


def _exported(path: str) -> List[str]:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            try:
                return [str(v) for v in ast.literal_eval(node.value)]
            except ValueError:
                return []
    return []


def classifier_spec(name: str, params: Optional[Dict[str, Any]] = None) -> ClassifierSpec:
    """Resolve a short name or an aeon class name into a :class:`ClassifierSpec`.

    Raises
    ------
    SibscanError
        Unknown name: the message lists the short names and the aeon classes this install has.
    """
    params = dict(params or {})
    if name in REGISTRY:
        base = REGISTRY[name]
        return ClassifierSpec(base.name, base.target, {**base.params, **params}, base.description,
                              base.permutation_invariant, base.min_length)
    aeon_names = aeon_classifier_names()
    if name in aeon_names:
        return ClassifierSpec(name, f"{aeon_names[name]}:{name}", params, f"aeon {name}")
    lower = {k.lower(): k for k in aeon_names}
    hint = f" (did you mean {lower[name.lower()]!r}?)" if name.lower() in lower else ""
    listed = (f"; aeon classes: {', '.join(sorted(aeon_names))}" if aeon_names
              else "; install aeon for its classes: pip install 'sibscan[temporal]'")
    raise SibscanError(f"unknown classifier {name!r}{hint}; available: {', '.join(list_classifiers())}{listed}")


def check_length(spec: ClassifierSpec, length: int, where: str) -> None:
    """Refuse series shorter than ``spec`` can be trained on, before any training starts.

    Raises
    ------
    SibscanError
        One line naming the data (``where``), the length, the classifier and the fixes: a classifier
        of any length, or padding the series with ``sibscan augment``.
    """
    if length >= spec.min_length:
        return
    fits = [n for n, s in REGISTRY.items() if s.min_length <= length and n != "euclidean-1nn"]
    pad = math.ceil((spec.min_length - length) / length * 1e4) / 1e4  # augment pads floor(padding * length)
    raise SibscanError(f"{where}: the series have {length} time point{'s' * (length != 1)} but the {spec.name} "
                       f"classifier needs at least {spec.min_length}; use -c euclidean-1nn (any length; "
                       f"{', '.join(fits)} also fit), or pad the series to {spec.min_length} with "
                       f"'sibscan augment --padding {pad:g}'")


def _accepts(cls: type, param: str) -> bool:
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return param in sig.parameters or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def make_classifier(classifier: Any, *, params: Optional[Dict[str, Any]] = None, random_state: Optional[int] = None,
                    n_jobs: Optional[int] = None) -> Tuple[Any, bool]:
    """A fresh, unfitted estimator for one run.

    Parameters
    ----------
    classifier : str, ClassifierSpec, estimator instance or estimator class
        A short name / aeon class name / spec, or a scikit-learn-style estimator (cloned, so the
        caller's object is never fitted).
    params : dict, optional
        Constructor parameters (for names and classes; an instance keeps its own, updated by these).
    random_state : int, optional
        The run's classifier seed, set where the estimator takes one.
    n_jobs : int, optional
        Threads, set where the estimator takes ``n_jobs``.

    Returns
    -------
    estimator, wants_3d : object, bool
        ``wants_3d`` is True for aeon estimators (fed ``(n, n_channels, length)``).
    """
    extra: Dict[str, Any] = {}
    if isinstance(classifier, str):
        classifier = classifier_spec(classifier, params)
        params = None
    if isinstance(classifier, ClassifierSpec):
        module, _, cls_name = classifier.target.partition(":")
        require(module.split(".")[0], "temporal", f"the {classifier.name} classifier")
        cls = getattr(importlib.import_module(module), cls_name)
        kwargs = dict(classifier.params)
    elif isinstance(classifier, type):
        cls, kwargs = classifier, dict(params or {})
    elif hasattr(classifier, "fit") and hasattr(classifier, "predict"):
        from sklearn.base import clone

        est = clone(classifier)
        if params:
            est.set_params(**params)
        valid = est.get_params(deep=False)
        if random_state is not None and "random_state" in valid:
            extra["random_state"] = random_state
        if n_jobs is not None and "n_jobs" in valid:
            extra["n_jobs"] = n_jobs
        if extra:
            est.set_params(**extra)
        return est, _is_aeon(est)
    else:
        raise SibscanError(f"a classifier is a name ({', '.join(list_classifiers())}, or an aeon class name) "
                           f"or an estimator with fit/predict, got {type(classifier).__name__}")
    if random_state is not None and _accepts(cls, "random_state") and "random_state" not in kwargs:
        kwargs["random_state"] = random_state
    if n_jobs is not None and _accepts(cls, "n_jobs") and "n_jobs" not in kwargs:
        kwargs["n_jobs"] = n_jobs
    try:
        est = cls(**kwargs)
    except TypeError as exc:
        raise SibscanError(f"cannot build {cls.__name__} with {kwargs}: {exc}") from None
    return est, _is_aeon(est)


def _is_aeon(est: Any) -> bool:
    # aeon's time-series estimators take (n, n_channels, length); its sklearn-style tabular ones
    # (aeon.classification.sklearn: rotation forest, ...) take 2-D rows like any other
    module = type(est).__module__
    return module.split(".")[0] == "aeon" and not module.startswith(f"{_AEON}.sklearn")


def as_input(x: np.ndarray, wants_3d: bool) -> np.ndarray:
    """Series as the estimator wants them: 3-D for aeon, 2-D rows (channel after channel) otherwise."""
    return x if wants_3d else x.reshape(len(x), -1)


def describe(classifier: Any, params: Optional[Dict[str, Any]] = None) -> ClassifierSpec:
    """A :class:`ClassifierSpec` for any accepted ``classifier`` (for results and resumable runs)."""
    if isinstance(classifier, ClassifierSpec):
        return classifier
    if isinstance(classifier, str):
        return classifier_spec(classifier, params)
    cls = classifier if isinstance(classifier, type) else type(classifier)
    shown = dict(params or {})
    if not isinstance(classifier, type) and hasattr(classifier, "get_params"):
        shown = {**{k: v for k, v in classifier.get_params(deep=False).items() if _jsonable(v)}, **shown}
    return ClassifierSpec(f"custom:{cls.__name__}", f"{cls.__module__}:{cls.__name__}", shown,
                          f"user estimator {cls.__name__}")


def _jsonable(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))
