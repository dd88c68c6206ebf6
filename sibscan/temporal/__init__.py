"""Does a time-series benchmark test time? The temporal audits (Zhang, Batista & Kanhere, PAKDD 2025).

* :func:`permutation_test` — the temporal-information removal test: a classifier scored on the
  original series and on series whose time axis is shuffled by one shared permutation, over
  re-splits and seeds, judged by the paper's rule (:func:`summarise_runs`).
* :func:`augment_pair` — UCR Augmented: random-walk padding that misaligns the series.
* :func:`run_archive` — either one over a folder of datasets, resumable, locally or with Ray.

Classifiers come from aeon (``pip install 'sibscan[temporal]'``), by short name
(:func:`list_classifiers`) or class name, or are any scikit-learn-style estimator.
"""
from .archive import ArchiveConfig, ArchiveDataset, discover, run_archive, run_unit
from .augment import AugmentedPair, augment_pair, pad_length, pad_series
from .classifiers import (DEFAULT_CLASSIFIER, REGISTRY, ClassifierSpec, aeon_classifier_names, classifier_spec,
                          list_classifiers, make_classifier)
from .normalise import Normalisation, check_znormalised, choose_normalisation, normalise
from .permutation import TemporalResult, permutation_test
from .resplit import permute_time, stratified_resplit, time_permutation
from .scanlink import attach_to_scan, read_scan_temporal
from .section import report_section, result_text, section_html, section_markdown, verdict_phrase
from .series import SeriesPair, load_series, series_pair
from .summary import summarise, write_summary
from .verdict import RULE, RULE_2STD, does_not_matter, summarise_runs
from .writers import write_pair, write_series

__all__ = [
    "ArchiveConfig", "ArchiveDataset", "AugmentedPair", "ClassifierSpec", "DEFAULT_CLASSIFIER", "Normalisation",
    "REGISTRY", "RULE", "RULE_2STD", "SeriesPair", "TemporalResult", "aeon_classifier_names", "attach_to_scan",
    "augment_pair", "check_znormalised", "choose_normalisation", "classifier_spec", "discover", "does_not_matter",
    "list_classifiers", "load_series", "make_classifier", "normalise", "pad_length", "pad_series", "permutation_test",
    "permute_time", "read_scan_temporal", "report_section", "result_text", "run_archive", "run_unit", "section_html",
    "section_markdown", "series_pair", "stratified_resplit", "summarise", "summarise_runs", "time_permutation",
    "verdict_phrase", "write_pair", "write_series", "write_summary",
]
