"""Exact twins between a train and a test split: counts in both directions, label conflicts,
a rounding sweep, leak-free group ids and a test-suite assertion.

A *twin* of a test row is a train row with the same fingerprint (:func:`sibscan.fingerprint`):
the same values after rounding to ``decimals`` (optionally after per-row z-normalisation), the
label left out.

The JSON names follow the published UCR/UEA audit script, so its users can switch:

``duplicate_rows``
    rows in both splits minus distinct fingerprints (every copy beyond the first, wherever it is).
``test_rows_with_train_twin`` / ``test_twin_pct``
    test rows whose fingerprint occurs in train (count, % of ``n_test``).
``twin_rows_with_conflicting_label``
    test rows with a train twin where at least one train twin has another label.
``groups_with_conflicting_labels``
    fingerprints that carry more than one label over both splits
    (``cross_split_groups_with_conflicting_labels``: those present in both splits).
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field, fields
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .errors import SibscanError, user_stacklevel
from .items import check_pair
from .loaders import as_items
from .loaders.prints import SplitPrints, load_prints, prints_from_items
from .stats import check_decimals, check_fraction, wilson_interval
from .atomic import write_text
from .kernels.rowhash import round_rows, group_fingerprints, znormalise_rows
from .kernels.twincount import twin_counts, twin_membership

__all__ = ["TwinReport", "ci_text", "find_twins", "decimals_sweep", "group_ids", "assert_no_twins",
           "format_twin_report", "rate_from_pct", "twin_violation", "write_groups_csv"]


@dataclass
class TwinReport:
    """Exact-twin statistics of a train/test pair. ``to_dict()`` gives the JSON form.

    Index lists are row positions (0-based) in their split. Label fields are ``None`` when either
    split has no labels.
    """

    n_train: int
    n_test: int
    row_length: int
    decimals: int
    znorm: bool
    distinct_rows: int
    duplicate_rows: int
    test_rows_with_train_twin: int
    test_twin_pct: float
    train_rows_with_test_twin: int
    train_twin_pct: float
    duplicate_rows_within_train: int
    duplicate_rows_within_test: int
    twin_rows_with_conflicting_label: Optional[int]
    groups_with_conflicting_labels: Optional[int]
    cross_split_groups_with_conflicting_labels: Optional[int]
    test_twins_without_same_label_train_twin: Optional[int]
    median_distinct_values_in_twin_rows: Optional[float]
    test_twin_indices: List[int] = field(default_factory=list)
    test_twin_train_index: List[int] = field(default_factory=list)
    train_twin_indices: List[int] = field(default_factory=list)
    conflicting_label_test_indices: List[int] = field(default_factory=list)
    test_twins_without_same_label_indices: List[int] = field(default_factory=list)
    #: "table", "text" or "image": rounding (decimals, znorm, row length) only means something for tables
    modality: str = "table"

    #: fields that describe numeric rows; left out of the JSON of text and images
    _TABLE_ONLY = ("row_length", "decimals", "znorm", "median_distinct_values_in_twin_rows")

    @property
    def test_twin_ci(self) -> Optional[list]:
        """Wilson 95 % interval ``[lo, hi]`` (fractions) of the share of test rows with a train twin."""
        return wilson_interval(self.test_rows_with_train_twin, self.n_test)

    def to_dict(self) -> dict:
        """The report as JSON-ready builtins (names as in the module docstring, plus ``test_twin_ci``);
        for text and images without the fields about numeric rows."""
        # one level deep: dataclasses.asdict deep-copied each of the 581,000 row indices of a 1M + 1M
        # run one by one (1.3 s); the lists are copied whole, so the dict never aliases the report
        out = {f.name: list(v) if isinstance(v, list) else v for f in fields(self) for v in (getattr(self, f.name),)}
        out["test_twin_ci"] = self.test_twin_ci
        if self.modality != "table":
            for key in self._TABLE_ONLY:
                out.pop(key)
        return out

    @property
    def test_twin_mask(self) -> np.ndarray:
        """ndarray of shape (n_test,), bool: test rows with a train twin."""
        mask = np.zeros(self.n_test, dtype=bool)
        mask[np.asarray(self.test_twin_indices, dtype=np.int64)] = True
        return mask


def _pair(train, test, decimals: Sequence[int], znorm: bool) -> Tuple[SplitPrints, SplitPrints]:
    """Both splits as fingerprints at each of ``decimals``: SplitPrints as they are, anything else
    loaded (:func:`as_items`) and fingerprinted once the pair is known to be comparable."""
    for d in decimals:
        check_decimals(d)
    # a train file is fingerprinted while it is read; test keeps its rows (the distinct-values statistic)
    tr, te = (x if isinstance(x, SplitPrints)
              else load_prints(x, split, decimals, znorm, keep_items=split == "test")
              if isinstance(x, (str, os.PathLike))
              else as_items(x, split) for x, split in ((train, "train"), (test, "test")))
    check_pair(tr, te)
    out = []
    for x in (tr, te):
        if isinstance(x, SplitPrints):
            missing = sorted({int(d) for d in decimals} - set(x.fps))
            if missing:
                raise SibscanError(f"{x.split}: no fingerprints at {missing} decimals; load the split with them")
        out.append(x if isinstance(x, SplitPrints) else prints_from_items(x, decimals, znorm))
    return out[0], out[1]


def _joint_codes(tr: SplitPrints, te: SplitPrints) -> Tuple[np.ndarray, np.ndarray]:
    """Both splits' label codes in one code space (equal code = equal label)."""
    words = np.unique(np.concatenate([tr.vocab, te.vocab]))
    return (np.searchsorted(words, tr.vocab)[tr.labels].astype(np.int64),
            np.searchsorted(words, te.vocab)[te.labels].astype(np.int64))


def _distinct_per_row(values: np.ndarray, decimals: int, block: int = 8192) -> np.ndarray:
    """Number of distinct non-NaN rounded values in each row, ndarray of shape (n,).

    ``block`` rows at a time: the rounded and sorted copies stay in the CPU cache (200,000 twin rows
    x 46 took 0.47 CPU-s as one piece, most of it faulting in the temporaries, 0.07 s in blocks)."""
    out = np.zeros(len(values), dtype=np.int64)
    for start in range(0, len(values), block):
        s = np.sort(round_rows(values[start:start + block], decimals), axis=1)  # NaNs sort last
        finite = ~np.isnan(s)
        new = np.empty_like(finite)
        new[:, 0] = finite[:, 0]
        new[:, 1:] = (s[:, 1:] != s[:, :-1]) & finite[:, 1:]
        out[start:start + block] = new.sum(axis=1)
    return out


def _pct(k: int, n: int) -> float:
    return 100.0 * k / n if n else 0.0


def find_twins(train, test, decimals: int = 6, znorm: bool = False) -> TwinReport:
    """Exact twins between ``train`` and ``test``, in both directions.

    Parameters
    ----------
    train, test : Items, SplitPrints (:func:`sibscan.loaders.prints.load_prints`) or array of shape (n, d)
    decimals : int, default 6
        Tables: decimal places kept before comparing.
    znorm : bool, default False
        Tables: z-normalise rows first (finds rescaled/shifted copies).

    Returns
    -------
    TwinReport
    """
    train, test = _pair(train, test, [decimals], znorm)
    n1, n2 = len(train), len(test)
    labelled = train.has_labels and test.has_labels
    codes = _joint_codes(train, test) if labelled else (None, None)
    c = twin_counts(train.fps[int(decimals)], test.fps[int(decimals)], *codes)
    test_idx = np.flatnonzero(c["test_has"])
    n_groups, n_train_twins = c["n_groups"], len(c["train_idx"])
    conflict_idx = c.get("conflict_idx", np.zeros(0, dtype=np.int64))
    no_same_idx = c.get("no_same_idx", np.zeros(0, dtype=np.int64))

    median_distinct = None
    if test.modality == "table" and len(test_idx):
        if test.items is None:
            raise SibscanError("the test split's rows are needed for the distinct-values statistic; "
                               "load it with keep_items=True")
        rows = test.items.values[test_idx]
        if znorm:
            rows = znormalise_rows(rows)
        median_distinct = float(np.median(_distinct_per_row(rows, decimals)))

    return TwinReport(
        modality=test.modality, n_train=n1, n_test=n2,
        row_length=int(test.width) if test.modality == "table" else 0,
        decimals=int(decimals), znorm=bool(znorm),
        distinct_rows=int(n_groups), duplicate_rows=int(n1 + n2 - n_groups),
        test_rows_with_train_twin=len(test_idx), test_twin_pct=_pct(len(test_idx), n2),
        train_rows_with_test_twin=n_train_twins, train_twin_pct=_pct(n_train_twins, n1),
        duplicate_rows_within_train=int(n1 - c["distinct_train"]),
        duplicate_rows_within_test=int(n2 - c["distinct_test"]),
        twin_rows_with_conflicting_label=len(conflict_idx) if labelled else None,
        groups_with_conflicting_labels=c.get("groups_conflict"),
        cross_split_groups_with_conflicting_labels=c.get("cross_conflict"),
        test_twins_without_same_label_train_twin=len(no_same_idx) if labelled else None,
        median_distinct_values_in_twin_rows=median_distinct,
        test_twin_indices=test_idx.tolist(),
        test_twin_train_index=c["first_train"][test_idx].tolist(),
        train_twin_indices=c["train_idx"].tolist(),
        conflicting_label_test_indices=conflict_idx.tolist(),
        test_twins_without_same_label_indices=no_same_idx.tolist(),
    )


def decimals_sweep(train, test, decimals: Sequence[int] = (2, 3, 4, 6, 10), znorm: bool = False,
                   tolerance: float = 0.05) -> dict:
    """Twin counts at several rounding precisions, with a verdict.

    Real copies give the same count at every precision ("flat"); a count that grows as rounding
    gets coarser ("climbing") means rounding merges rows that are merely similar.

    Parameters
    ----------
    train, test : Items, SplitPrints (:func:`sibscan.loaders.prints.load_prints`) or array of shape (n, d)
    decimals : sequence of int
    znorm : bool
    tolerance : float, default 0.05
        Counts within this relative spread (or within 1 row) count as flat.

    Returns
    -------
    dict
        ``decimals`` (ascending), ``test_rows_with_train_twin``, ``train_rows_with_test_twin``
        (lists aligned with ``decimals``), ``verdict`` (``"flat"``, ``"climbing"`` or ``"none"``)
        and ``message``.
    """
    decs = sorted({int(d) for d in decimals})
    if not decs:
        raise SibscanError("decimals_sweep needs at least one precision")
    train, test = _pair(train, test, decs, znorm)
    test_counts, train_counts = [], []
    for d in decs:
        test_has, train_idx = twin_membership(train.fps[d], test.fps[d])
        test_counts.append(int(test_has.sum()))
        train_counts.append(len(train_idx))
    lo, hi = min(test_counts), max(test_counts)
    coarse, fine = test_counts[0], test_counts[-1]
    if hi == 0:
        verdict, message = "none", f"no test row has a train twin at any of {decs} decimals"
    elif hi - lo <= max(1, tolerance * hi):
        verdict = "flat"
        message = (f"flat: {fine} test rows have a train twin from {decs[0]} to {decs[-1]} decimals — "
                   "real copies, not rounding artefacts")
    else:
        verdict = "climbing"
        message = (f"climbing: {fine} test rows at {decs[-1]} decimals but {coarse} at {decs[0]} — coarse rounding "
                   "merges rows that are merely similar; trust the finer precision")
    return {"decimals": decs, "test_rows_with_train_twin": test_counts, "train_rows_with_test_twin": train_counts,
            "verdict": verdict, "message": message}


def group_ids(train, test, decimals: int = 6, znorm: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """One group id per row such that all copies of a row, in either split, share it.

    Feed the concatenation to ``GroupShuffleSplit`` / ``StratifiedGroupKFold`` for a split without
    exact twins across folds.

    Returns
    -------
    train_groups : ndarray of shape (n_train,), int64
    test_groups : ndarray of shape (n_test,), int64
        Group numbers ``0 .. n_groups - 1``, numbered by first occurrence (train first).
    """
    train, test = _pair(train, test, [decimals], znorm)
    group = group_fingerprints(np.concatenate([train.fps[int(decimals)], test.fps[int(decimals)]]))[0]
    return group[: len(train)], group[len(train):]


def write_groups_csv(path, train, test, groups: Tuple[np.ndarray, np.ndarray]) -> None:
    """Write ``split,index,id,group`` rows (train then test) to ``path`` atomically.

    ``train``, ``test``: Items or SplitPrints."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["split", "index", "id", "group"])
    for items, g in ((train, groups[0]), (test, groups[1])):
        ids = items.id_strings() if isinstance(items, SplitPrints) else items.ids
        w.writerows(zip([items.split] * len(items), range(len(items)), ids.tolist(), g.tolist()))
    write_text(path, buf.getvalue())


def twin_violation(report: TwinReport, max_rate: float, show: int = 10) -> Optional[str]:
    """A message if the share of test rows with a train twin exceeds ``max_rate`` (a fraction), else None."""
    if report.test_rows_with_train_twin / max(report.n_test, 1) <= max_rate:  # as check(): fail when above
        return None
    first = ", ".join(f"{t}->{r}" for t, r in zip(report.test_twin_indices[:show], report.test_twin_train_index[:show]))
    more = ", ..." if report.test_rows_with_train_twin > show else ""
    return (f"{report.test_rows_with_train_twin} of {report.n_test} test rows ({report.test_twin_pct:.2f}%) have an "
            f"exact twin in train, above the allowed {100 * max_rate:g}%; first test->train rows: {first}{more}")


def assert_no_twins(X_train, X_test, *, max_rate: float = 0.0, decimals: int = 6, znorm: bool = False,
                    max_pct: Optional[float] = None) -> TwinReport:
    """Fail a test suite when too many test rows are exact copies of train rows.

    Parameters
    ----------
    X_train, X_test : Items, list of str, array of shape (n, d), or a file path
    max_rate : float in [0, 1], default 0.0
        Allowed share of test rows with a train twin (0.01 = 1 %), as ``assert_no_siblings``'s.
    decimals, znorm
        As for :func:`find_twins`.
    max_pct : float, optional
        Deprecated: the same limit in percent (warns; use ``max_rate``).

    Returns
    -------
    TwinReport
        When the check passes.

    Raises
    ------
    AssertionError
        With the count, the % and the first offending test -> train rows.
    """
    if max_pct is not None:
        max_rate = rate_from_pct(max_pct, "max_pct")
    report = find_twins(X_train, X_test, decimals=decimals, znorm=znorm)
    message = twin_violation(report, check_fraction(max_rate, "max_rate"))
    if message is not None:
        raise AssertionError(message)
    return report


def rate_from_pct(pct: float, name: str) -> float:
    """The deprecated percent limit (``--max-pct``, ``max_pct=``) as the fraction every limit now is, with a warning."""
    if not (isinstance(pct, (int, float)) and 0 <= pct <= 100 and not math.isnan(pct)):
        raise SibscanError(f"{name} is a percentage between 0 and 100, got {pct!r}")
    replacement = "--max-rate" if name.startswith("--") else "max_rate"
    warnings.warn(f"{name} is deprecated: limits are fractions now; use {replacement} {pct / 100:g} instead of "
                  f"{name} {pct:g}", FutureWarning, stacklevel=user_stacklevel(3))
    return pct / 100.0


def ci_text(ci: Optional[list]) -> str:
    return "" if ci is None else f"; 95 % CI {100 * ci[0]:.2f}–{100 * ci[1]:.2f}%"


def format_twin_report(r: TwinReport) -> str:
    """The human summary printed by ``sibscan twins``."""
    if r.row_length:
        how = f"rounded to {r.decimals} decimals" + (", z-normalised" if r.znorm else "")
        head = f"exact twins ({how}): train {r.n_train} rows, test {r.n_test} rows, row length {r.row_length}"
    else:  # text and images: content fingerprints, no rounding
        head = f"exact twins (content fingerprints): train {r.n_train} items, test {r.n_test} items"
    lines = [
        head,
        f"  test rows with a train twin:   {r.test_rows_with_train_twin:>7} ({r.test_twin_pct:.2f}% of "
        f"test{ci_text(r.test_twin_ci)})",
        f"  train rows with a test twin:   {r.train_rows_with_test_twin:>7} ({r.train_twin_pct:.2f}% of train)",
        f"  distinct rows:                 {r.distinct_rows:>7}  duplicate rows (both splits): {r.duplicate_rows}",
        f"  duplicates within train:       {r.duplicate_rows_within_train:>7}  within test: "
        f"{r.duplicate_rows_within_test}",
    ]
    if r.twin_rows_with_conflicting_label is not None:
        lines += [
            f"  twin rows, conflicting label:  {r.twin_rows_with_conflicting_label:>7}  (test rows whose train twin "
            "has another label)",
            f"  groups with conflicting labels:{r.groups_with_conflicting_labels:>7}  (across splits: "
            f"{r.cross_split_groups_with_conflicting_labels})",
            f"  test twins, no same-label twin:{r.test_twins_without_same_label_train_twin:>7}",
        ]
    else:
        lines.append("  labels: not available in both splits (no label checks)")
    if r.median_distinct_values_in_twin_rows is not None:
        lines.append(f"  median distinct values in twin rows: {r.median_distinct_values_in_twin_rows:g} of "
                     f"{r.row_length} (low = coincidental on/off patterns, high = rich copies)")
    return "\n".join(lines)
