"""Which pairs the report's galleries show, each pair once, from the report dict alone.

The report's JSON lists pairs by what they are (``closest_pairs``: the highest scores;
``near_cutoff``: the pairs just above and just below the cutoff), and one pair can be in more than
one list: an exact twin scores 1, so it is among the closest pairs *and* just above a cutoff near 1.
Shown as they are, the galleries repeated the same exact twins (the text demo's page was 9,000 px
for 170 test items).  :func:`galleries` shows each pair once, near pairs only: those at the cutoff
first (they decide the rate), then the closest pairs not shown there; exact twins (which need no eye: their content is
byte-for-byte the same) come last,
as a count and a short list of ids (:func:`exact_twins`).
"""
from __future__ import annotations

from typing import List, NamedTuple

__all__ = ["Gallery", "ExactTwins", "exact_twins", "galleries"]

#: exact twins listed by id under their count
N_EXACT_LISTED = 12


class Gallery(NamedTuple):
    """One gallery: its title, a sentence on what it holds, and its pairs (report pair dicts)."""

    title: str
    about: str
    pairs: List[dict]


class ExactTwins(NamedTuple):
    """The exact twins, collapsed: how many test items have one, and the first few ``(test_id, train_id)``."""

    count: int
    listed: List[tuple]


def _key(p: dict) -> tuple:
    return str(p["test_id"]), str(p["train_id"])


def galleries(report: dict) -> List[Gallery]:
    """The near-pair galleries of ``report``, no pair in two of them and no exact twin in any.

    Order: the pairs just above the cutoff and just below it (without a cutoff there are none), then
    the closest pairs that those did not show (a gallery left empty by that is still listed, saying so).
    """
    shown: set = set()
    out = []
    near = report.get("near_cutoff") or {}
    for title, about, pairs in (
        ("Just above the cutoff", "the lowest-scoring pairs that are flagged", near.get("above")),
        ("Just below the cutoff", "the highest-scoring pairs that are not flagged", near.get("below")),
        ("Closest pairs", "the test items whose nearest training item scores highest"
         + (", besides those at the cutoff" if near else ""), report.get("closest_pairs")),
    ):
        if pairs is None:
            continue
        kept = []
        for p in pairs:
            if p["exact"] or _key(p) in shown:
                continue
            shown.add(_key(p))
            kept.append(p)
        out.append(Gallery(title, about, kept))
    return out


def exact_twins(report: dict, n_listed: int = N_EXACT_LISTED) -> ExactTwins:
    """The test items with an exact twin in train (the report's count) and the first ``n_listed`` of them
    by id pair, from the ``flagged`` list (which holds every exact twin, first)."""
    count = report["sibling_rate"]["test_to_train"]["exact"]["count"] or 0
    listed = [(str(f["test_id"]), str(f["train_id"])) for f in report.get("flagged") or [] if f.get("exact")]
    return ExactTwins(int(count), listed[:n_listed])
