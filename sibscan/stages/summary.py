"""The last stage of a scan: its :class:`~sibscan.verdict.Verdict` at the cutoff in use, and the summary
printed and kept in the manifest (:func:`scan_summary`, the one call :func:`sibscan.scan.run_scan`
makes for it; :func:`summarise` the summary of any verdict).
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from ..items import Items
from ..kernels.rowhash import fingerprint_membership
from ..store.scandir import ScanDir, train_items_searched
from ..store.neighbourtable import Neighbours
from ..verdict import Verdict
from ..verdict.cutoff import Cutoff
from ..verdict.pairdecision import SAME
from .table import REVERSE

__all__ = ["scan_summary", "summarise"]


def scan_summary(sd: ScanDir, manifest: dict, at: Cutoff, labels, nb: Neighbours, baseline: dict,
                 splits: Dict[str, Items], fps: Dict[str, np.ndarray]) -> dict:
    """The summary of the scan being written into ``sd``: its verdict at ``at`` with the hand ``labels``
    behind it (:func:`sibscan.verdict.labelfile.cutoff_and_labels`), over the held table ``nb``."""
    if (labels.label == SAME).any() and sd.neighbours_path.exists() and not nb.mask(*REVERSE).any():
        # a "same" pair found only from the train side flags its test item (testscores.direction_rows): the
        # held table lacks train->test rows, so read those of the test items answered "same", and only those
        # (the whole direction is what the held table leaves on disk to bound memory)
        same = labels.test_ids[labels.label == SAME]  # load_matching takes the distinct ids
        nb = Neighbours.concat([nb, sd.neighbours_matching(*REVERSE, "neighbour_id", same)])
    verdict = Verdict.of_scan_being_written(sd, manifest, at, labels, neighbours=nb, baseline=baseline,
                                            train=(splits["train"], fps["train"]), test=(splits["test"], fps["test"]))
    summary = summarise(verdict)
    summary["skipped"] = {s: len(items.skipped) for s, items in splits.items()}
    if at.evidence.get("note"):  # the scan's own calibration gave no cutoff or was passed over: say so and why
        summary["cutoff_note"] = at.evidence["note"]
    return summary


def summarise(verdict: Verdict) -> dict:
    """The printed summary of a scan: exact twins, NN score quantiles, and its :class:`~sibscan.verdict.Verdict`'s
    headline (the count flagged at the cutoff in use, hand labels deciding the pairs they answer, and the
    sentence every output prints)."""
    scores, head = verdict.scores, verdict.headline
    n_test = len(scores)
    exact_test = fingerprint_membership(verdict.test[1], verdict.train[1])
    top = scores.top
    qs = {f"q{int(p * 100) if p < 1 else 100}": float(np.quantile(top["score"], p))
          for p in (0.0, 0.5, 0.9, 0.99, 1.0)} if len(top) else {}
    out = {
        "n_train": train_items_searched(verdict.manifest),
        "n_test": n_test,
        "exact_test_rows_with_train_twin": int(exact_test.sum()),
        "exact_test_twin_pct": 100.0 * float(exact_test.mean()) if n_test else 0.0,
        "nn_score_quantiles": qs,
        "cutoff": verdict.cutoff.record(),
        "headline": head,
    }
    if verdict.value is not None:
        out["siblings"] = head["flagged"]["count"]
        out["sibling_pct"] = 100.0 * head["flagged"]["rate"] if n_test else 0.0
        if head.get("expected_chance_siblings") is not None:
            out["expected_chance_siblings"] = head["expected_chance_siblings"]
            out["chance_sentence"] = verdict.chance["sentence"]
        if verdict.chance["warning"]:
            out["warning"] = verdict.chance["warning"]
    else:
        out["chance_note"] = verdict.chance["note"]
    return out
