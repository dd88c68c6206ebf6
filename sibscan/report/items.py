"""One row per test item: the training item that decides it, the scores, and whether it is a sibling.

The report's test → train numbers, its ``flagged`` list (and ``flagged.csv``) and
:meth:`sibscan.Scan.to_pandas` all come from here, so that the item a table calls a sibling is the
item the rate counts.  ``sibling`` is :func:`sibscan.verdict.pairdecision.flag_items`' decision (an exact
twin, or a pair labelled "same" by hand, or an unlabelled pair at or above the cutoff compared in
float32, the dtype of the score column; a pair labelled "different" never), and None where there is
no cutoff: not assessed.  The row shows the pair that flagged the item, else its top-1 pair by score.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from .. import labeller
from ..fmt import score as fmt_score
from ..items import Items
from ..verdict.pairdecision import DIFFERENT, SAME
from ..stats import finite_or_none
from ..verdict import Verdict

__all__ = ["COLUMNS", "ItemTable", "flagged_csv", "item_table", "scan_items", "verdict_items"]

#: the columns of the per-item table, in order (docs/report-schema.md, ``flagged``)
COLUMNS = ("test_id", "train_id", "similarity", "score", "exact", "sibling", "label_conflict", "verified",
           "test_index", "train_index", "test_label", "train_label", "hand_label", "detail", "why")


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
        """Every test item judged a sibling: exact twins first, in test order (their scores are 1 up to
        float noise, which would order them by chance), then the rest by score, highest first."""
        sib = np.asarray([v is True for v in self.columns["sibling"]])
        rows = np.flatnonzero(sib)
        score = np.nan_to_num(self.columns["score"][rows].astype(np.float64), nan=-np.inf)
        score[self.columns["exact"][rows]] = np.inf
        order = np.lexsort((rows, -score, ~self.columns["exact"][rows]))
        return self.records(rows[order])


def item_table(scores, flags, test: Items, train: Items, score_kind: str = "score", by: str = "by hand") -> ItemTable:
    """The per-item table of test items from their scores and the flags at the cutoff in use.

    Parameters
    ----------
    scores : sibscan.verdict.testscores.TestScores
        With ``rows`` (every test → train pair) and ``labels``.
    flags : sibscan.verdict.pairdecision.Flags
        ``scores.flags(cutoff)``.
    test, train : Items
    score_kind : str
        What the deciding score is ("verified" or "similarity"), for the ``why`` text.
    by : str
        Who gave the labels, for the ``why`` text (:func:`sibscan.labeller.by`: "by hand", "by the oracle").
    """
    n = len(test)
    cutoff, exact = flags.cutoff, np.asarray(scores.exact, bool)
    rows = scores.rows if scores.rows is not None else scores.top
    # each item's pair: the one that flagged it, else its top-1 pair by score
    pick = np.full(n, -1, np.int64)
    top = scores.top
    if rows is scores.top or len(rows) == 0:
        pick[np.asarray(top["query_index"], np.int64)] = np.arange(len(top))
        rows = top
    else:
        best = rows.top1_rows()
        pick[rows["query_index"][best]] = best
    pick = np.where(flags.row >= 0, flags.row, pick)
    has = pick >= 0
    at = pick[has]
    train_index = np.full(n, -1, np.int64)
    similarity = np.full(n, np.nan, np.float32)
    verified = np.full(n, np.nan, np.float32)
    score = np.full(n, np.nan, np.float32)
    detail = np.full(n, "", dtype=object)
    label = np.zeros(n, np.int8)
    train_index[has] = rows["neighbour_index"][at]
    similarity[has] = rows["similarity"][at]
    verified[has] = rows["verified"][at]
    score[has] = rows["score"][at]
    detail[has] = rows["detail"][at]
    if rows is scores.rows and scores.row_label is not None:  # looked up once, by scores.flags
        label[has] = scores.row_label[at]
    elif scores.labels is not None and len(scores.labels):
        label[has] = scores.labels.lookup(rows["query_id"][at], rows["neighbour_id"][at])
    hand_label = np.where(label == SAME, "same", np.where(label == DIFFERENT, "different", None)).astype(object)
    train_id = np.full(n, None, dtype=object)
    train_id[has] = train.ids[train_index[has]]
    sibling = np.full(n, None, dtype=object)
    if cutoff is not None:
        sibling[:] = flags.flagged.tolist()
    sibling[exact] = True  # an exact twin is a sibling at every cutoff
    test_label = np.full(n, None, dtype=object) if test.labels is None else test.labels.astype(object)
    train_label = np.full(n, None, dtype=object)
    if train.labels is not None:
        train_label[has] = train.labels[train_index[has]]
    conflict = np.full(n, None, dtype=object)
    if test.labels is not None and train.labels is not None:
        known = np.flatnonzero(has & (sibling != None))  # noqa: E711 (elementwise over an object array)
        conflict[known] = (sibling[known].astype(bool) & (test_label[known] != train_label[known])).tolist()
    # the items with something to say (exact, flagged, or kept off by a label): computed once over all
    # n items, then worded row by row only for those (a per-row property over n items was O(n^2))
    off = flags.unflagged_by_labels if cutoff is not None else np.zeros(n, bool)
    why = np.full(n, "", dtype=object)
    for r in np.flatnonzero(exact | flags.flagged | off):
        why[r] = _why(bool(exact[r]), bool(flags.flagged[r]), bool(off[r]), int(flags.nearest_label[r]), label[r],
                      score[r], cutoff, score_kind, detail[r], bool(flags.row_added[r]), by)
    return ItemTable({
        "test_id": test.ids.astype(object), "train_id": train_id, "similarity": similarity, "score": score,
        "exact": exact, "sibling": sibling, "label_conflict": conflict, "verified": verified,
        "test_index": np.arange(n, dtype=np.int64), "train_index": train_index, "test_label": test_label,
        "train_label": train_label, "hand_label": hand_label, "detail": detail, "why": why,
    })


def _why(exact: bool, flagged: bool, off: bool, nearest_label: int, label: int, score: float,
         cutoff: Optional[float], score_kind: str, detail: str, added: bool, by: str = "by hand") -> str:
    """What made an item a sibling (``exact``, ``flagged``), or what the labels said to keep it from
    being one (``off``: the scores flag it, the labels do not); ``added``: its pair is one only the train
    side found (``Flags.row_added``), worded as ``Flags.decided`` counts it."""
    if exact:
        return "exact copy (same content fingerprint)"
    if cutoff is None:
        return ""
    at = f"{score_kind} score {fmt_score(score)}"
    how = f"; {detail}" if detail else ""
    if flagged:
        if label == SAME:
            side = ">=" if score >= cutoff else "below"
            found = ", a pair only the train side found" if added else ""
            return f"labelled same {by}{found} ({at} {side} cutoff {fmt_score(cutoff)}){how}"
        other = f"; its nearest pair was labelled different {by}" if nearest_label == DIFFERENT else ""
        return f"{at} >= cutoff {fmt_score(cutoff)}{how}{other}"
    if off:
        return f"not a sibling: labelled different {by} ({at} >= cutoff {fmt_score(cutoff)})"
    return ""


def scan_items(scan_dir, *, cutoff: Optional[float] = None, calibration=None, force: bool = False) -> ItemTable:
    """The per-item table of a finished scan at the cutoff :func:`sibscan.verdict.cutoff.resolve_cutoff` picks
    (the one its report uses for the same arguments), with the labels that decide its pairs."""
    return verdict_items(Verdict.open(scan_dir, cutoff=cutoff, calibration=calibration, force=force))


def verdict_items(verdict) -> ItemTable:
    """The per-item table of a :class:`~sibscan.verdict.Verdict`: its scores and flags, item by item."""
    at = verdict.cutoff
    return item_table(verdict.scores, verdict.flags, verdict.test[0], verdict.train[0],
                      score_kind=at.record().get("score") or "score", by=labeller.by(at.evidence.get("labeller")))


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
