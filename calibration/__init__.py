"""Calibration: the random-pair baseline, the hand-labelled sample, and the fitted cutoff.

* :func:`compute_baseline`, :func:`expected_chance_siblings`, :func:`baseline_warning` — what
  unrelated items score under this encoder on this data, and how many chance siblings a cutoff lets
  through.
* :func:`calibrate` — draw nearest-neighbour pairs, let a person label them (web page or terminal),
  fit the cutoff where the answers flip, estimate precision, recall and the sibling rate, and write
  ``cutoff.json`` beside the append-only ``labels.jsonl``.
* :func:`load_calibration`, :func:`resolve` — read a calibration back (by path, or by the name of a
  ``calibration/<name>/`` record kept in the repository) and check it against a scan.
"""
from __future__ import annotations

from .baseline import baseline_warning, compute_baseline, expected_chance_siblings, tail_probability
from .fit import pava
from .flow import calibrate, describe, fit_calibration
from .labels import LABELS, Identity, LabelStore
from .record import Calibration, load_calibration, resolve, write_calibration
from .sampling import Draw, Population, make_draw
from .session import LabelSession

__all__ = [
    "Calibration",
    "Draw",
    "Identity",
    "LABELS",
    "LabelSession",
    "LabelStore",
    "Population",
    "baseline_warning",
    "calibrate",
    "compute_baseline",
    "describe",
    "expected_chance_siblings",
    "fit_calibration",
    "load_calibration",
    "make_draw",
    "pava",
    "resolve",
    "tail_probability",
    "write_calibration",
]
