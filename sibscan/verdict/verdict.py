"""A scan at a cutoff: the cutoff every command resolves, the hand labels that decide their pairs, each
test item's best score against train, the items flagged, the headline (rate, interval, chance count)
and its sentence, each computed once and read by every output.

Before this class a report, a check, a split, the sibling groups and calibrate's summary each resolved
the cutoff, read the labels and recounted the flags themselves, handing pieces to each other through
"already read" parameters (``at=``, ``scores=``, ``row_label=``, ``pair_labels=``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Optional

import numpy as np

from .labelfile import cutoff_and_labels
from .cutoff import Cutoff
from .headline import headline, ESTIMATED
from ..store.scandir import ScanDir, load_items, train_items_searched
from .pairdecision import flag_items
from .testscores import TestScores, best_scores, direction_rows, duplicated_rows, flagged_mask, test_scores

__all__ = ["Direction", "Verdict"]


@dataclass(frozen=True)
class Direction:
    """The query items of one direction of the neighbours table flagged at the verdict's cutoff.

    Attributes
    ----------
    flagged, exact : ndarray of shape (n_query,), bool
        Judged siblings (exact twins and pairs at the cutoff); exact twins alone.
    available : bool
        Whether the scan searched this direction or holds the fingerprints that decide it.
    n_exact_groups : int, optional
        Within test: how many distinct values occur more than once.
    """

    flagged: np.ndarray
    exact: np.ndarray
    available: bool
    n_exact_groups: Optional[int] = None


class Verdict:
    """The sibling decision of one scan at one cutoff.

    Open it with :meth:`open`; every attribute is read from the scan directory at most once.

    Attributes
    ----------
    scan : ScanDir
    manifest : dict
    cutoff : Cutoff
        The cutoff in use (:func:`sibscan.verdict.cutoff.resolve_cutoff`) with its evidence (the calibration's
        rule, labels, estimate).
    labels : PairLabels
        The hand labels behind the cutoff; they decide the pairs they answer.
    definition : str or None
        The written definition of "same" where the caller knows one (a calibration's own wins).
    """

    def __init__(self, scan: ScanDir, manifest: dict, cutoff: Cutoff, labels, *, definition: Optional[str] = None):
        self.scan = scan
        self.manifest = manifest
        self.cutoff = cutoff
        self.labels = labels
        self.definition = definition

    @classmethod
    def open(cls, scan_dir, *, cutoff: Optional[float] = None, calibration=None, force: bool = False,
             writing: bool = False, definition: Optional[str] = None) -> "Verdict":
        """The verdict of ``scan_dir`` at the cutoff resolved from ``cutoff``/``calibration`` as every
        command resolves it (warning once about what it cannot use).

        Parameters
        ----------
        scan_dir : str or Path
            A scan directory.
        cutoff, calibration, force
            As :func:`sibscan.verdict.cutoff.resolve_cutoff`.
        writing : bool
            The scan being written into ``scan_dir`` (:func:`sibscan.verdict.labelfile.cutoff_and_labels`).
        definition : str, optional
            The definition of "same" to state where the cutoff carries none.
        """
        scan = ScanDir(scan_dir)
        manifest = scan.manifest()
        at, labels = cutoff_and_labels(manifest, scan.path, cutoff=cutoff, calibration=calibration, force=force,
                                       writing=writing)
        return cls(scan, manifest, at, labels, definition=definition)

    @classmethod
    def of_scan_being_written(cls, scan: ScanDir, manifest: dict, cutoff: Cutoff, labels, *, neighbours,
                              train, test, baseline: Optional[dict]) -> "Verdict":
        """The verdict a scan prints as it finishes, from what it holds in memory: its manifest (not yet
        written complete), its items with their fingerprints (``(Items, fingerprints)`` each), its baseline,
        and its neighbours table, which may lack the train→test rows streamed to disk to bound memory
        (the scan adds back those its "same" answers need)."""
        verdict = cls(scan, manifest, cutoff, labels)
        verdict.__dict__.update(neighbours=neighbours, train=train, test=test, baseline=baseline)
        return verdict

    @property
    def path(self) -> Path:
        return self.scan.path

    @property
    def value(self) -> Optional[float]:
        """The cutoff's value (None: no cutoff, only exact twins are known)."""
        return self.cutoff.value

    @cached_property
    def neighbours(self):
        """The scan's neighbours table (every direction)."""
        return self.scan.neighbours()

    @cached_property
    def train(self):
        """``(Items, fingerprints or None)`` of the train split."""
        return load_items(self.path, "train", self.manifest)

    @cached_property
    def test(self):
        """``(Items, fingerprints or None)`` of the test split."""
        return load_items(self.path, "test", self.manifest)

    @cached_property
    def scores(self) -> TestScores:
        """Each test item's best deciding score against train, its exact twins, and the labelled pairs."""
        (_, fp_train), (test, fp_test) = self.train, self.test
        return test_scores(self.path, fp_train, fp_test, neighbours=self.neighbours, n_test=len(test),
                           labels=self.labels)

    @cached_property
    def flags(self):
        """The test items flagged at the cutoff (:meth:`sibscan.verdict.testscores.TestScores.flags`)."""
        return self.scores.flags(self.value)

    @property
    def flagged(self) -> np.ndarray:
        """Boolean mask of shape (n_test,): the test items judged siblings."""
        return self.flags.flagged

    @cached_property
    def train_to_test(self) -> Direction:
        """Train items with a test sibling: the same pairs seen from the train side, decided by the same hand
        labels (a "same" pair found only as a test → train row flags its train item too)."""
        (train, fp_train), (_, fp_test) = self.train, self.test
        _, exact, _, available = best_scores(self.neighbours, "train", "test", len(train))
        if fp_train is not None and fp_test is not None:
            from ..kernels.rowhash import fingerprint_membership

            exact |= fingerprint_membership(fp_train, fp_test)
            available = True
        rows, label, added = direction_rows(self.neighbours, self.scores.nb_label, "train", "test")
        flagged = flag_items(rows["query_index"], rows["score"], label, exact, self.value, added=added).flagged
        return Direction(flagged, exact, bool(available))

    @cached_property
    def within_test(self) -> Direction:
        """Test items with another test item as a sibling (no hand labels: people label test → train pairs)."""
        test, fp_test = self.test
        score, exact, _, available = best_scores(self.neighbours, "test", "test", len(test))
        groups = None
        if fp_test is not None:
            dup, groups = duplicated_rows(fp_test)
            exact |= dup
            available = True
        return Direction(flagged_mask(score, exact, self.value), exact, bool(available), groups)

    @cached_property
    def baseline(self) -> Optional[dict]:
        """The random-pair baseline of the scan (None where it has none)."""
        return self.scan.baseline()

    @cached_property
    def headline(self) -> dict:
        """The headline object: what every output states as the sibling rate
        (:func:`sibscan.verdict.headline.headline`)."""
        return headline(self.cutoff, self.scores, baseline=self.baseline,
                        n_train=train_items_searched(self.manifest, self.path), definition=self.definition)

    @cached_property
    def chance(self) -> dict:
        """What every output says about chance siblings (:mod:`sibscan.verdict.chance`): ``sentence`` (the
        expected count at the cutoff against those found; None without a cutoff or a count), ``note``
        (without a cutoff: the line saying random pairs reach the best scores; else None), ``pairs`` (which
        pairs the baseline scored; None without a baseline), ``warning`` (a cutoff beyond what the
        baseline can vouch for; else None)."""
        from ..calibration.baseline import baseline_warning
        from .chance import chance_note, chance_sentence, pairs_described

        head, base, scores = self.headline, self.baseline, self.scores
        found = (head.get("flagged") or {}).get("count")
        return {"sentence": chance_sentence(head["expected_chance_siblings"], found, baseline=base,
                                            extrapolated=bool(head.get("chance_extrapolated"))),
                "note": chance_note(base, scores.score[~scores.exact]) if self.value is None else None,
                "pairs": None if base is None else pairs_described(base),
                "warning": baseline_warning(base, self.value) if base is not None else None}

    @property
    def estimated(self) -> bool:
        """Whether the headline states an estimated rate with an interval (calibrated, or needs_labels)."""
        return self.headline["state"] in ESTIMATED

    @property
    def sentence(self) -> str:
        """The headline as the one sentence every output prints (no final full stop)."""
        return self.headline["text"]

    def __repr__(self) -> str:
        return f"Verdict({str(self.path)!r}, cutoff={self.value!r}, source={self.cutoff.kind!r})"
