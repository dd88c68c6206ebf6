"""The validation split: does one exist, and is it disjoint from the test split?

A model selected on a validation split that shares items with the test split has, in effect, been
selected on test. Overlap is counted with the same exact fingerprints as ``sibscan twins``
(:func:`sibscan.twins.find_twins`, values rounded to ``decimals``, the label left out), run pairwise:
validation ↔ test (the check) and train ↔ test (reported beside it; gate that one with
``sibscan check --max-exact``).
"""
from __future__ import annotations

import os
from typing import Optional

from ..fmt import score as fmt_score
from ..items import Items
from ..report.honest import sibling_cell
from ..fmt import pct
from ..twins import find_twins
from .result import Check
from ..loaders import load

__all__ = ["val_split_check", "load_split_file"]


def load_split_file(path: os.PathLike, name: str, **options) -> Items:
    """Load a split's data file with :func:`sibscan.loaders.load` and name it ``name`` (train/val/test)."""
    items = load(path, "test" if name == "test" else "train", **options)
    items.split = name
    return items


def _pair(reference: Items, test: Items, decimals: int, znorm: bool) -> dict:
    r = find_twins(reference, test, decimals=decimals, znorm=znorm)
    return {"test_rows_with_twin": r.test_rows_with_train_twin, "n_test": r.n_test,
            "share": r.test_rows_with_train_twin / r.n_test if r.n_test else None,
            f"{reference.split}_rows_with_twin": r.train_rows_with_test_twin,
            f"n_{reference.split}": r.n_train,
            "first_test_ids": test.ids[r.test_twin_indices[:5]].tolist()}


def val_split_check(*, val: Optional[Items] = None, test: Optional[Items] = None, train: Optional[Items] = None,
                    selection_has_val: bool = False, decimals: int = 6, znorm: bool = False, max_overlap: float = 0.0,
                    val_siblings: Optional[dict] = None, train_siblings: Optional[dict] = None,
                    near_unassessed: str = "exact twins only (audit a scan with a cutoff, --scan DIR, for siblings)",
                    ) -> Check:
    """Fail when there is no validation split, or when more than ``max_overlap`` of the test items have
    a twin (or, with ``val_siblings``, a sibling) in it.

    Parameters
    ----------
    val, test, train : Items, optional
        The splits' items (see :func:`load_split_file`); exact twins are counted for the pairs given.
    selection_has_val : bool
        A per-checkpoint CSV with validation scores was given (a validation split was used even if its
        items are not here).
    decimals, znorm
        Fingerprint settings (a scan's own, when auditing a scan).
    max_overlap : float in [0, 1]
        Largest allowed share of test items with a twin/sibling in the validation split.
    val_siblings : dict, optional
        Validation↔test siblings from a pairwise scan (:meth:`ScanLink.val_test_siblings`): judged
        instead of exact twins alone.
    train_siblings : dict, optional
        The scan's train→test sibling rate (:func:`sibscan.report.honest.sibling_rate_record`), reported
        beside the check in the report's words (instead of ``train`` twins).
    near_unassessed : str
        Why validation↔test siblings were not judged when ``val_siblings`` is None (``val`` given).
    """
    exists = val is not None or selection_has_val
    detail: dict = {"validation_split": exists,
                    "evidence": "validation data" if val is not None else
                    "validation scores in the selection CSV" if selection_has_val else None,
                    "method": f"exact twins (fingerprints at {decimals} decimals{', z-normalised' if znorm else ''})",
                    "max_overlap": max_overlap}
    problems, notes = [], []
    if not exists:
        problems.append("no validation split was given: model selection and tuning can only have used test")
    if val is not None and test is not None:
        detail["val_test"] = _pair(val, test, decimals, znorm)
        count, n, share, what = (detail["val_test"]["test_rows_with_twin"], detail["val_test"]["n_test"],
                                 detail["val_test"]["share"] or 0.0, "an exact twin")
        if val_siblings is not None:
            detail["val_test_siblings"] = val_siblings
            detail["method"] += f"; siblings by a validation↔test scan at cutoff {fmt_score(val_siblings['cutoff'])}"
            count, n, share, what = val_siblings["count"], val_siblings["n"], val_siblings["share"] or 0.0, "a sibling"
        found = f"{count} of {n} test items ({pct(share)}) have {what} in validation"
        if share > max_overlap:
            problems.append(found + f", above the limit {pct(max_overlap)}")
        else:
            notes.append(found)
    elif val is not None:
        detail["val_test"] = None
        notes.append("validation/test overlap not assessed (the test items' data was not given)")
    if train_siblings is not None:
        detail["train_test"] = train_siblings
        notes.append(f"train→test: {sibling_cell(train_siblings)}")
    elif train is not None and test is not None:
        detail["train_test"] = _pair(train, test, decimals, znorm)
        notes.append(f"train↔test: {detail['train_test']['test_rows_with_twin']} exact twins "
                     "(gate with sibscan check --max-exact)")
    if val_siblings is None:  # why validation↔test siblings were not judged
        detail["near_siblings"] = "not assessed: " + (near_unassessed if val is not None else "no validation data "
                                                      "was given (--val FILE)")
    passed = not problems
    summary = "; ".join(problems + notes if problems else ["a validation split exists"] + notes)
    limitation = "" if passed else "Validation split: " + "; ".join(problems) + "."
    return Check("val_split", passed, summary, detail, limitation)
