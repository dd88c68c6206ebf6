"""The Python API on data where it already is: ``sibscan.scan(train, test, **options) -> Scan``.

``train`` and ``test`` are paths or in-memory data (numpy arrays, lists of texts / PIL images /
image paths, pandas DataFrames, Hugging Face ``datasets.Dataset``, torch datasets; see
:mod:`sibscan.loaders.memory`), and ``train_features``/``test_features`` bring your own embeddings.
:func:`scan` runs the same :func:`sibscan.scan.run_scan` as ``sibscan scan``, into ``out`` or a
temporary directory kept as long as the :class:`Scan` lives; a :class:`Scan` reads what that
directory holds: the report, the per-item table, the calibration, and a notebook view.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

from .errors import SibscanError, require
from .progress import message

__all__ = ["Scan", "scan"]


def scan(train: Any = None, test: Any = None, *, out: Optional[str | os.PathLike] = None, train_features: Any = None,
         test_features: Any = None, features_id: Optional[str] = None, **options: Any) -> "Scan":
    """Scan ``test`` against ``train`` and return the :class:`Scan`.

    Parameters
    ----------
    train, test : path or in-memory data
        A file or folder; a DataFrame, ``datasets.Dataset`` or dict of columns (name them with
        ``label=``, ``id=``, ``group=``, ``text_field=``, ``path_field=``); a torch Dataset of
        ``(image, label)``; a list of texts, PIL images or image paths; a numeric array of shape
        (n, d) (table rows) or uint8 (n, H, W, C) (images).  May be left out when
        ``train_features``/``test_features`` are given: the vectors are then the items.
    out : path, optional
        The scan directory (re-running into it resumes).  Default: a temporary directory removed
        when the Scan is garbage-collected (in-memory images are written there as PNG).
    train_features, test_features : array-like of shape (n_train, dim), (n_test, dim), optional
        Your own embeddings, one row per item in the items' order, instead of an encoder.
    features_id : str, optional
        The model that made them (required with them); calibrations are tied to it.
    **options
        Any option of ``sibscan scan`` by its name: ``k=5``, ``encoder="pixels"``, ``cutoff=0.9``,
        ``calibration="calibration/mydata"``, ``verify=False``, ``progress=False`` …
        (:class:`sibscan.ScanConfig`).

    Returns
    -------
    Scan
    """
    from .config import ScanConfig
    from .scan import run_scan

    tmp = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="sibscan-")
        out = Path(tmp.name) / "scan"
    features_only = train is None and test is None and train_features is not None
    if features_only:  # the vectors are the items: exact twins are equal vectors; no verifier reads vectors
        from .items import Items

        # read here, so that a message names the keyword given (test_features=), not "test"
        train, test = (None if f is None else Items.coerce(f, split, what=f"{split}_features")
                       for split, f in (("train", train_features), ("test", test_features)))
        options.setdefault("verify", False)
    cfg = ScanConfig(train=train, test=test, out=str(out), train_features=train_features, test_features=test_features,
                     features_id=features_id, **options)
    result = run_scan(cfg, echo=message)
    return Scan(result.path, _keep=tmp)


class Scan:
    """A finished scan directory, read from Python.

    Parameters
    ----------
    path : path
        A directory written by ``sibscan scan`` or :func:`sibscan.scan`.

    Attributes
    ----------
    path : Path
    """

    def __init__(self, path: str | os.PathLike, *, _keep: Any = None):
        from .scandir import ScanDir

        self.path = Path(path)
        self._dir = ScanDir(self.path)
        self._dir.manifest()  # refuses a directory that holds no scan, with the fix
        self._keep = _keep  # a TemporaryDirectory: removed with this object
        self._report: Optional[dict] = None

    def __repr__(self) -> str:
        m = self.manifest
        inputs = m.get("inputs", {})
        return (f"<sibscan.Scan {self.path}: {m.get('modality')} items, {inputs.get('train', {}).get('n_items', '?')} "
                f"train / {inputs.get('test', {}).get('n_items', '?')} test, encoder {m.get('encoder', {}).get('identity')}>")

    @property
    def manifest(self) -> dict:
        """The scan's manifest.json (inputs, encoder, verifier, parameters, cutoff, summary)."""
        return self._dir.manifest()

    # --- the report ------------------------------------------------------------------------------
    def report(self, *, predictions: Any = None, correct: Any = None, cutoff: Optional[float] = None,
               calibration: Any = None, force: bool = False) -> dict:
        """The report dict (the content of report.json; docs/report-schema.md).

        Arguments as :func:`sibscan.build_report`; without any, the report is built once and kept
        (:meth:`calibrate` drops it, as the cutoff then changes).
        """
        from .report import build_report

        given = dict(predictions=predictions, correct=correct, cutoff=cutoff, calibration=calibration, force=force)
        if predictions is None and correct is None and cutoff is None and calibration is None and not force:
            if self._report is None:
                self._report = build_report(self.path)
            return self._report
        return build_report(self.path, **given)

    @property
    def rate(self) -> dict:
        """The headline sibling rate: report.json's ``headline`` object, the same dict.

        (Until the report carries a ``headline``, the object is read from its test → train rate and
        cutoff: ``state`` "not_assessed" without a cutoff (``estimate`` None), else the cutoff's
        source; ``estimate``, ``lo``, ``hi`` as fractions.)
        """
        return headline_of(self.report())

    def write_reports(self, formats: Iterable[str] = ("json", "md", "html", "csv"), *,
                      out: Optional[str | os.PathLike] = None) -> Dict[str, Path]:
        """Write report.json, report.md, report.html and flagged.csv (into the scan, or ``out``)."""
        from .report import write_reports

        return write_reports(self.path, formats, out=out, report=self.report())

    # --- one row per test item ---------------------------------------------------------------------
    @property
    def pairs(self) -> List[dict]:
        """One dict per test item (columns of :meth:`to_pandas`), in test order."""
        from .report.items import scan_items

        return scan_items(self.path).records()

    def to_pandas(self):
        """A DataFrame with one row per test item.

        Columns: ``test_id``, ``train_id`` (its nearest training item), ``similarity`` (embedding),
        ``score`` (the deciding score: verified where verified), ``exact``, ``sibling`` (boolean, NA
        where not assessed: no cutoff), ``label_conflict`` (a sibling whose labels differ; NA
        without labels), ``verified``, ``test_index``, ``train_index``, ``test_label``,
        ``train_label``, ``detail`` (how the verifier matched), ``why`` (why it is a sibling).
        """
        pd = require("pandas", "pandas", "Scan.to_pandas()")
        from .report.items import COLUMNS, scan_items

        table = scan_items(self.path)
        df = pd.DataFrame({name: table.columns[name] for name in COLUMNS})
        for name in ("sibling", "label_conflict"):
            df[name] = df[name].astype("boolean")
        return df

    @property
    def flagged(self) -> List[dict]:
        """The test items judged siblings (the report's ``flagged`` list)."""
        return self.report()["flagged"]

    # --- calibration ---------------------------------------------------------------------------------
    def calibrate(self, ui: str = "web", *, labels: Any = None, **options: Any):
        """Label pairs and fit the cutoff (``sibscan calibrate``); returns the Calibration.

        Parameters
        ----------
        ui : {"web", "terminal", "none"}
            ``"web"`` opens the labelling page; ``"none"`` fits from the labels given/there are.
        labels : path, or iterable of dict, optional
            A labels JSONL file, or answers as ``{"test_id", "train_id", "label"}`` dicts with
            ``label`` one of ``same``/``different``/``skip``.
        **options
            Of :func:`sibscan.calibration.calibrate`: ``n_pairs``, ``seed``, ``target_precision``,
            ``calibration_dir``, ``force``, ``open_browser``, ``port``.
        """
        from .calibration import calibrate

        self._report = None
        if labels is None or isinstance(labels, (str, os.PathLike)):
            return calibrate(self.path, labels=labels, ui=ui, echo=message, **options)
        with tempfile.TemporaryDirectory(prefix="sibscan-labels-") as tmp:
            path = Path(tmp) / "labels.jsonl"
            path.write_text("".join(json.dumps(rec) + "\n" for rec in self._label_records(labels)), encoding="utf-8")
            return calibrate(self.path, labels=path, ui=ui, echo=message, **options)

    def _label_records(self, labels: Iterable[dict]) -> List[dict]:
        m = self.manifest
        ident = {"dataset_fingerprint": m.get("dataset_fingerprint"),
                 "encoder_identity": (m.get("encoder") or {}).get("identity"),
                 "verifier_identity": (m.get("verifier") or {}).get("identity") if m.get("verifier") else None}
        out = []
        for i, rec in enumerate(labels):
            if not isinstance(rec, dict) or not {"test_id", "train_id", "label"} <= set(rec):
                raise SibscanError(f"labels[{i}] must be a dict with test_id, train_id and label (same/different/skip)")
            out.append({**ident, "query_split": "test", "query_id": str(rec["test_id"]), "neighbour_split": "train",
                        "neighbour_id": str(rec["train_id"]), "label": rec["label"]})
        return out

    # --- notebooks -----------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        from .report.notebook import render_notebook

        return render_notebook(self.report(), self._dir.items("test"), self._dir.items("train"))


def headline_of(report: dict) -> dict:
    """The headline object of a report: its ``headline`` (made by the report code) when it has one.

    The one place the Python API reads it.  A report without a ``headline`` key (written before
    report.json carried one) gets the same fields read from its test → train rate and cutoff.
    """
    if "headline" in report:
        return report["headline"]
    cut = report["cutoff"]
    anyr = report["sibling_rate"]["test_to_train"]["any"]
    assessed = cut.get("value") is not None
    ci = anyr.get("ci") or [None, None]
    labels = cut.get("n_labels")
    return {
        "state": "not_assessed" if not assessed else cut.get("source"),
        "estimate": anyr["rate"] if assessed else None,
        "lo": ci[0] if assessed else None, "hi": ci[1] if assessed else None, "level": 0.95,
        "n_labels": (labels.get("same", 0) + labels.get("different", 0)) if isinstance(labels, dict) else 0,
        "cutoff": cut.get("value"), "definition": None,
    }
