"""An audit of a scan (``sibscan audit --scan DIR``): what the scan already knows, and the pairs it lacks.

A scan knows two splits, train and test. The audit takes from it the test items (their labels are
the default targets), the train→test sibling rate exactly as the scan's report computes it, and its
exact-fingerprint settings; for a validation split it runs the same machinery pairwise instead of a
new search: exact twins validation↔test by fingerprint, and — when the scan has a cutoff — a second
scan with validation as the reference side, the scan's encoder, verifier and cutoff, and the scan's
embedding cache (the test items are not embedded again). That scan lives in ``DIR/audits/evaluation/val_test``.
"""
from __future__ import annotations

import functools

import dataclasses
from pathlib import Path
from typing import Optional

from ..config import ScanConfig
from ..errors import SibscanError
from ..items import Items
from ..report.honest import AUDIT_DIR, sibling_rate_record
from .inputs import Column, as_column
from ..options import OutputOptions
from ..store.scandir import ScanDir, load_items
from ..verdict import Verdict

__all__ = ["ScanLink", "open_scan", "VAL_SCAN_DIR"]

#: the validation↔test scan, inside the audit folder
VAL_SCAN_DIR = "val_test"


@dataclasses.dataclass
class ScanLink:
    """A finished scan as the audit reads it."""

    path: Path
    manifest: dict

    @property
    def dataset_fingerprint(self) -> Optional[str]:
        return self.manifest.get("dataset_fingerprint")

    @property
    def audit_dir(self) -> Path:
        return self.path / AUDIT_DIR

    def options(self) -> ScanConfig:
        """The scan's own options, from the parameters its manifest records."""
        return ScanConfig().merged(self.manifest.get("parameters") or {})

    @property
    def decimals(self) -> int:
        return self.options().load.decimals

    @property
    def znorm(self) -> bool:
        return self.options().load.znorm

    def loader_options(self) -> dict:
        """Keyword arguments of :func:`sibscan.loaders.load` that read a validation file the way the scan read
        its splits (modality, label/id/group columns, text/path field); chunking, as in the scan, is left to
        the pairwise scan's encode stage, and the scan's label arrays belong to its own files."""
        return {**self.options().load.load_kwargs("train"), "labels_path": None}

    @functools.cached_property
    def verdict(self):
        """The scan's sibling decision at the cutoff its report counts at (:class:`sibscan.verdict.Verdict`:
        the scan's own calibration when it has one, else the cutoff it recorded)."""
        return Verdict.open(self.path)

    def cutoff(self):
        """The cutoff the scan's report counts siblings at (:attr:`verdict`'s)."""
        return self.verdict.cutoff

    def test_items(self) -> Items:
        return load_items(self.path, "test")[0]

    def targets(self) -> Column:
        """The test items' labels as targets (ids from the scan)."""
        test = self.test_items()
        if test.labels is None:
            raise SibscanError(f"the test items of the scan in {self.path} have no labels; pass --targets FILE")

        return as_column(self.path / "items" / "test.npz", test.labels, test.ids)

    def sibling_rate(self) -> dict:
        """The report's test→train sibling rate (:func:`sibscan.report.honest.sibling_rate_record`), read from
        the scan's :attr:`verdict` (no whole report is built for it)."""
        return sibling_rate_record(self.verdict.headline)

    def val_test_siblings(self, val_source: Path, out: Path, force: bool = False) -> Optional[dict]:
        """Test items with a validation sibling (exact, or at the scan's cutoff) by a pairwise scan;
        None when the scan has no cutoff (near siblings cannot be judged)."""
        from ..scan import run_scan

        cut = self.cutoff()
        if cut.value is None:
            return None
        own = self.options()
        cache = self.path / "cache"
        cfg = ScanConfig(
            load=dataclasses.replace(own.load, train=str(val_source), test=self.manifest["inputs"]["test"]["source"],
                                     index=None, labels_train=None),
            encoding=dataclasses.replace(own.encoding, cache_dir=str(cache) if cache.is_dir() else None),
            search=dataclasses.replace(own.search, directions=("test-train",)),
            verification=own.verification, baseline=own.baseline,
            output=OutputOptions(out=str(out), cutoff=cut.value, force=force, progress=False))
        res = run_scan(cfg)
        n = res.summary["n_test"]
        return {"count": res.summary["siblings"], "n": n, "share": res.summary["siblings"] / n if n else None,
                "exact": res.summary["exact_test_rows_with_train_twin"], "cutoff": cut.value,
                "cutoff_from": f"the scan's {cut.kind} cutoff on the {cut.evidence.get('score')} score",
                "scan_dir": str(out)}


def open_scan(path) -> ScanLink:
    """A finished scan directory, or :class:`SibscanError` saying what to run first."""
    sd = ScanDir(path)
    manifest = sd.manifest()
    if manifest.get("status") != "complete":
        raise SibscanError(f"the scan in {sd.path} is not complete (status {manifest.get('status')!r}); re-run "
                           "the same 'sibscan scan' command to finish it")
    return ScanLink(sd.path, manifest)
