"""One row per test item: its nearest training item, the scores, and whether it is a sibling.

The report's test → train numbers, its ``flagged`` list (and ``flagged.csv``) and
:meth:`sibscan.Scan.to_pandas` all come from here, so that the item a table calls a sibling is the
item the rate counts.  ``sibling`` is True for an exact twin, else ``score >= cutoff`` compared in
float32 (the dtype of the score column), and None where there is no cutoff: not assessed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from ..items import Items
from ..kernels.rowhash import fingerprint_membership
from ..rate import best_scores, flagged_mask
from ..stats import finite_or_none

__all__ = ["COLUMNS", "ItemTable", "flagged_csv", "item_table", "near_mask", "scan_items", "test_to_train"]

#: the columns of the per-item table, in order (docs/report-schema.md, ``flagged``)
COLUMNS = ("test_id", "train_id", "similarity", "score", "exact", "sibling", "label_conflict", "verified",
           "test_index", "train_index", "test_label", "train_label", "detail", "why")


def test_to_train(nb, fp_test: Optional[np.ndarray], fp_train: Optional[np.ndarray], n_test: int):
    """``(score, exact, top)`` of each test item against train: exact from the table or the fingerprints."""
    score, exact, top, _ = best_scores(nb, "test", "train", n_test)
    if fp_train is not None and fp_test is not None:
        exact |= fingerprint_membership(fp_test, fp_train)
    return score, exact, top


def near_mask(score: np.ndarray, exact: np.ndarray, cutoff: Optional[float]) -> np.ndarray:
    """Near siblings: not exact, best score at or above the cutoff (none without a cutoff)."""
    if cutoff is None:
        return np.zeros(len(score), bool)
    return flagged_mask(score, exact, cutoff) & ~np.asarray(exact, bool)


@dataclass
class ItemTable:
    """Columns of equal length, one entry per test item (see :data:`COLUMNS`)."""

    columns: Dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.columns["test_id"])

    def records(self, rows: Optional[np.ndarray] = None) -> List[dict]:
        """JSON-ready dicts (NaN -> None) of ``rows`` (default all), in :data:`COLUMNS` order."""
        rows = np.arange(len(self)) if rows is None else rows
        out = []
        for r in rows:
            rec = {}
            for name in COLUMNS:
                v = self.columns[name][r]
                rec[name] = finite_or_none(v) if isinstance(v, (float, np.floating)) else (
                    v.item() if isinstance(v, np.generic) else v)
            out.append(rec)
        return out

    def flagged(self) -> List[dict]:
        """Every test item judged a sibling: exact twins first, then by score, highest first."""
        sib = np.asarray([v is True for v in self.columns["sibling"]])
        rows = np.flatnonzero(sib)
        score = np.nan_to_num(self.columns["score"][rows].astype(np.float64), nan=-np.inf)
        order = np.lexsort((rows, -score, ~self.columns["exact"][rows]))
        return self.records(rows[order])


def item_table(top, score: np.ndarray, exact: np.ndarray, cutoff: Optional[float], test: Items, train: Items,
               score_kind: str = "score") -> ItemTable:
    """The per-item table from :func:`test_to_train`'s output and the cutoff in use.

    Parameters
    ----------
    top : Neighbours
        Each test item's top-1 test → train row (by deciding score).
    score, exact : ndarray of shape (n_test,)
    cutoff : float or None
    test, train : Items
    score_kind : str
        What the deciding score is ("verified" or "similarity"), for the ``why`` text.
    """
    n = len(test)
    train_index = np.full(n, -1, np.int64)
    similarity = np.full(n, np.nan, np.float32)
    verified = np.full(n, np.nan, np.float32)
    detail = np.full(n, "", dtype=object)
    qi = np.asarray(top["query_index"], np.int64)
    train_index[qi] = top["neighbour_index"]
    similarity[qi] = top["similarity"]
    verified[qi] = top["verified"]
    detail[qi] = top["detail"]
    has = train_index >= 0
    train_id = np.full(n, None, dtype=object)
    train_id[has] = train.ids[train_index[has]]
    near = near_mask(score, exact, cutoff)
    sibling = np.full(n, None, dtype=object)
    if cutoff is not None:
        sibling[:] = (exact | near).tolist()
    sibling[exact] = True  # an exact twin is a sibling at every cutoff
    test_label = np.full(n, None, dtype=object) if test.labels is None else test.labels.astype(object)
    train_label = np.full(n, None, dtype=object)
    if train.labels is not None:
        train_label[has] = train.labels[train_index[has]]
    conflict = np.full(n, None, dtype=object)
    if test.labels is not None and train.labels is not None:
        for r in range(n):
            if sibling[r] is None or train_label[r] is None:
                continue
            conflict[r] = bool(sibling[r]) and test_label[r] != train_label[r]
    why = np.full(n, "", dtype=object)
    for r in np.flatnonzero(exact):
        why[r] = "exact copy (same content fingerprint)"
    for r in np.flatnonzero(near):
        how = f"; {detail[r]}" if detail[r] else ""
        why[r] = f"{score_kind} score {float(score[r]):.4f} >= cutoff {cutoff:.4g}{how}"
    return ItemTable({
        "test_id": test.ids.astype(object), "train_id": train_id, "similarity": similarity, "score": score,
        "exact": np.asarray(exact, bool), "sibling": sibling, "label_conflict": conflict, "verified": verified,
        "test_index": np.arange(n, dtype=np.int64), "train_index": train_index, "test_label": test_label,
        "train_label": train_label, "detail": detail, "why": why,
    })


def scan_items(scan_dir, *, cutoff: Optional[float] = None, calibration=None, force: bool = False) -> ItemTable:
    """The per-item table of a finished scan at the cutoff :func:`sibscan.cutoff.resolve_cutoff` picks
    (the one its report uses for the same arguments)."""
    from ..cutoff import resolve_cutoff
    from ..scandir import ScanDir, load_items

    scan = ScanDir(scan_dir)
    at = resolve_cutoff(scan.manifest(), cutoff=cutoff, calibration=calibration, force=force, scan_dir=scan.path)
    train, fp_train = load_items(scan.path, "train")
    test, fp_test = load_items(scan.path, "test")
    score, exact, top = test_to_train(scan.neighbours(), fp_test, fp_train, len(test))
    return item_table(top, score, exact, at.value, test, train, score_kind=at.record().get("score") or "score")


def flagged_csv(flagged: List[dict]) -> str:
    """``flagged.csv``: one line per test item judged a sibling (the report's ``flagged`` list)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for rec in flagged:
        w.writerow({k: "" if v is None else v for k, v in rec.items()})
    return buf.getvalue()
