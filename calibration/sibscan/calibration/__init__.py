"""Calibration: the random-pair baseline, the hand-labelled sample, and the fitted cutoff.

* :func:`compute_baseline`, :func:`expected_chance_siblings`, :func:`baseline_warning` — what
  unrelated items score under this encoder on this data, and how many chance siblings a cutoff lets
  through.
* :func:`calibrate` — draw nearest-neighbour pairs (adaptively, where the rate's interval shrinks
  most), let a person label them (web page or terminal) under a written definition of "same", fit
  the cutoff at the lowest score from which P(same)'s 95 % lower bound per run of answers reaches 0.5,
  estimate the sibling rate (:func:`sibscan.verdict.rate.estimate_rate`), precision and recall, and
  write ``cutoff.json`` beside the append-only ``labels.jsonl``.
* :func:`controls_of` — the labeller's answers on the control pairs of a calibration (known "same" and
  known "different" pairs mixed into the draw) as :class:`sibscan.stats.ControlAnswers`.
* :func:`load_calibration`, :func:`resolve` — read a calibration back (by path, or by the name of a
  ``calibration/<name>/`` record kept in the repository) and check it against a scan.
"""
from __future__ import annotations

import importlib

# public name -> submodule that defines it.  Imported lazily: the record and the baseline sit low in
# the layers (the cutoff policy and the scan read them), the labelling flow high (it reads a whole
# scan); importing sibscan.verdict.record must not pull the flow in (docs/architecture.md).
# Measured (``python -X importtime``, 2 cores, issue 33): importing every module behind ``__all__``
# adds 110-240 ms to ``import sibscan.calibration`` (22 ms once sibscan.verdict is imported).
_API = {
    "Calibration": "sibscan.verdict.record",
    "DEFINITIONS": "flow",
    "Draw": "sampling",
    "Identity": "labels",
    "LABELS": "labels",
    "LabelSession": "session",
    "LabelStore": "labels",
    "Population": "sampling",
    "baseline_warning": "baseline",
    "calibrate": "flow",
    "compute_baseline": "baseline",
    "controls_of": "controlanswers",
    "describe": "summary",
    "expected_chance_siblings": "baseline",
    "fit_calibration": "flow",
    "headline_of": "summary",
    "load_calibration": "sibscan.verdict.record",
    "make_draw": "sampling",
    "pava": "fit",
    "resolve": "sibscan.verdict.record",
    "scan_baseline": "baseline",
    "scan_headline": "summary",
    "tail_probability": "baseline",
    "write_calibration": "sibscan.verdict.record",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'sibscan.calibration' has no attribute {name!r}")
    value = getattr(importlib.import_module(module if module.startswith("sibscan.") else f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
