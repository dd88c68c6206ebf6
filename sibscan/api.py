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
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

from .errors import SibscanError, require, user_stacklevel
from .progress import message, quiet as quiet_progress
from .pywords import SYNONYMS, keywords_of, python_words, unknown_keyword

__all__ = ["EMBEDDING_WIDTH", "Scan", "scan"]

#: a float array at least this wide passed as ``train``/``test`` looks like embeddings: :func:`scan` says
#: how it reads it (as table rows) and where embeddings go (``train_features=``)
EMBEDDING_WIDTH = 64


def _calibrate_function():
    from .calibration import calibrate

    return calibrate


@python_words()
def scan(train: Any = None, test: Any = None, *, out: Optional[str | os.PathLike] = None, train_features: Any = None,
         test_features: Any = None, features_id: Optional[str] = None, progress: bool = True, quiet: bool = False,
         **options: Any) -> "Scan":
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
    progress : bool, default True
        Progress and notes on stderr (bars on a terminal or in a notebook, a line per stage off one).
        ``False`` silences every line the scan would print except warnings about the result, which
        stay warnings (:mod:`warnings`, and logging's WARNING records such as "verification is
        off"); the INFO/DEBUG records of sibscan's loggers stay with your logging configuration.
        ``sibscan.progress.set_quiet(True)`` silences every scan and command.
    quiet : bool, default False
        The same as ``progress=False`` (the CLI's ``--quiet``).
    **options
        Any option of ``sibscan scan`` by its name: ``k=5``, ``encoder="pixels"``, ``cutoff=0.9``,
        ``calibration="calibration/mydata"``, ``verify=False`` … (:class:`sibscan.ScanConfig`).
        An unknown name is a TypeError that suggests the closest valid one.

    Returns
    -------
    Scan

    Raises
    ------
    SibscanError
        For a bad option or bad input; the message names the keyword (``features_id=``), not the
        command line's flag.

    Warns
    -----
    UserWarning
        When ``train``/``test`` are float arrays of width >= :data:`EMBEDDING_WIDTH` and neither
        ``modality`` nor ``encoder`` is given: they are read as table rows, and embeddings you made
        belong in ``train_features=``/``test_features=``.
    """
    from .config import ScanConfig
    from .options import OWNER
    from .scan import run_scan

    for name in options:
        if name not in OWNER:
            raise unknown_keyword("sibscan.scan", name, [*OWNER, "quiet"], SYNONYMS)
    progress = bool(progress) and not quiet
    if train_features is None and test_features is None and "modality" not in options and "encoder" not in options:
        _warn_if_embeddings(train, test)
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
                     features_id=features_id, progress=progress, **options)
    with quiet_progress(not progress):
        result = run_scan(cfg, echo=message)
    return Scan(result.path, _keep=tmp)


def _float_width(data: Any) -> Optional[int]:
    """The width of a 2-d float numpy array or torch tensor (what the loaders read as table rows), else None."""
    module = type(data).__module__ or ""
    if not module.startswith(("numpy", "torch")) or getattr(data, "ndim", None) != 2:
        return None
    dtype = getattr(data, "dtype", None)
    is_float = data.is_floating_point() if module.startswith("torch") else getattr(dtype, "kind", "") == "f"
    return int(data.shape[1]) if is_float else None


def _warn_if_embeddings(train: Any, test: Any) -> None:
    """Say once, for both splits, that wide float arrays are read as table rows, and where embeddings go."""
    widths = [w for w in (_float_width(train), _float_width(test)) if w is not None]
    if not widths or max(widths) < EMBEDDING_WIDTH:
        return
    warnings.warn(
        f"sibscan.scan: train/test are float arrays of width {max(widths)}: read as table rows (each row "
        "z-normalised, compared by Pearson correlation; encoder 'znorm'). If they are embeddings from your own "
        "model, pass them as train_features= and test_features= (with features_id=, the model's name) instead; "
        # the caller of sibscan.scan
        "pass modality='table' to keep the table reading without this warning.", UserWarning,
        stacklevel=user_stacklevel(3))


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

    @python_words()
    def __init__(self, path: str | os.PathLike, *, _keep: Any = None):
        from .store.scandir import ScanDir

        self.path = Path(path)
        self._dir = ScanDir(self.path)
        self._dir.manifest()  # refuses a directory that holds no scan, with the fix
        self._keep = _keep  # a TemporaryDirectory: removed with this object
        self._report: Optional[dict] = None

    def __repr__(self) -> str:
        m = self.manifest
        inputs = m.get("inputs", {})
        return (f"<sibscan.Scan {self.path}: {m.get('modality')} items, {inputs.get('train', {}).get('n_items', '?')} "
                f"train / {inputs.get('test', {}).get('n_items', '?')} test, encoder "
                f"{m.get('encoder', {}).get('identity')}>")

    @property
    def manifest(self) -> dict:
        """The scan's manifest.json (inputs, encoder, verifier, parameters, cutoff, summary)."""
        return self._dir.manifest()

    # --- the report ------------------------------------------------------------------------------
    @python_words()
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
        """The headline sibling rate: report.json's ``headline`` object, the same dict (read from the scan's
        :class:`~sibscan.verdict.Verdict`, without building a report when none is kept yet).

        ``state`` is one of :data:`sibscan.verdict.headline.STATES`: "not_assessed" without a cutoff (``estimate``
        None), "needs_labels" where the calibration's labels do not support its cutoff yet (the estimate
        stands; the cutoff and the items flagged at it are provisional), else how the cutoff was set;
        ``estimate``, ``lo``, ``hi`` as fractions; ``text`` the sentence every output prints.
        """
        if self._report is not None:
            return self._report["headline"]
        from .verdict import Verdict

        return Verdict.open(self.path).headline

    @python_words()
    def write_reports(self, formats: Iterable[str] = ("json", "md", "html", "csv"), *,
                      out: Optional[str | os.PathLike] = None) -> Dict[str, Path]:
        """Write report.json, report.md, report.html and flagged.csv (into the scan, or ``out``)."""
        from .report import write_reports

        return write_reports(self.path, formats, out=out, report=self.report())

    # --- one row per test item ---------------------------------------------------------------------
    @property
    @python_words()
    def pairs(self) -> List[dict]:
        """One dict per test item (columns of :meth:`to_pandas`), in test order."""
        from .report.items import scan_items

        return scan_items(self.path).records()

    @python_words()
    def to_pandas(self):
        """A DataFrame with one row per test item.

        Columns: ``test_id``, ``train_id`` (its nearest training item), ``similarity`` (embedding),
        ``score`` (the deciding score: verified where verified), ``exact``, ``sibling`` (boolean, NA
        where not assessed: no cutoff), ``label_conflict`` (a sibling whose labels differ; NA
        without labels), ``verified``, ``test_index``, ``train_index``, ``test_label``,
        ``train_label``, ``hand_label``, ``detail`` (how the verifier matched), ``why`` (why it is a sibling).
        """
        from .report.items import COLUMNS, scan_items

        table = scan_items(self.path)
        return _frame({name: table.columns[name] for name in COLUMNS}, "Scan.to_pandas()")

    @property
    def flagged(self):
        """The test items judged siblings, as a DataFrame: one row per flagged test item.

        The rows of the report's ``flagged`` list and of ``flagged.csv`` (the same decision: an exact
        twin, a pair labelled "same", or an unlabelled pair at or above the cutoff), with the columns
        of :meth:`to_pandas` (``test_id``, its ``train_id``, ``similarity``, ``score``, ``exact``,
        labels where known, ``why`` …); exact twins first in test order, then by score, highest first.  Without a
        cutoff (``rate["state"] == "not_assessed"``) near copies are not assessed, so only the exact
        twins are listed: an empty frame then means "no exact twins", not "no siblings".
        """
        from .report.items import COLUMNS

        rows = self.report()["flagged"]
        return _frame({name: [r.get(name) for r in rows] for name in COLUMNS}, "Scan.flagged")

    # --- calibration ---------------------------------------------------------------------------------
    @python_words(_calibrate_function)
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

        valid = keywords_of([calibrate])[0] - {"scan_dir", "echo"}  # the two this method passes itself
        unknown = sorted(set(options) - valid)
        if unknown:
            raise unknown_keyword("Scan.calibrate", unknown[0], valid, SYNONYMS)
        self._report = None
        if labels is None or isinstance(labels, (str, os.PathLike)):
            return calibrate(self.path, labels=labels, ui=ui, echo=message, **options)
        with tempfile.TemporaryDirectory(prefix="sibscan-labels-") as tmp:
            path = Path(tmp) / "labels.jsonl"
            path.write_text("".join(json.dumps(rec) + "\n" for rec in self._label_records(labels)), encoding="utf-8")
            return calibrate(self.path, labels=path, ui=ui, echo=message, **options)

    def _label_records(self, labels: Iterable[dict]) -> List[dict]:
        from .verdict.labelfile import LABELS

        m = self.manifest
        ident = {"dataset_fingerprint": m.get("dataset_fingerprint"),
                 "encoder_identity": (m.get("encoder") or {}).get("identity"),
                 "verifier_identity": (m.get("verifier") or {}).get("identity") if m.get("verifier") else None}
        out = []
        for i, rec in enumerate(labels):
            if not isinstance(rec, dict) or not {"test_id", "train_id", "label"} <= set(rec):
                raise SibscanError(f"labels[{i}] must be a dict with test_id, train_id and label ({'/'.join(LABELS)})")
            if rec["label"] not in LABELS:  # named by its place in the list, not by the file it passes through
                raise SibscanError(f"labels[{i}]: unknown label {rec['label']!r}; use one of: {', '.join(LABELS)}")
            out.append({**ident, "query_split": "test", "query_id": str(rec["test_id"]), "neighbour_split": "train",
                        "neighbour_id": str(rec["train_id"]), "label": rec["label"]})
        return out

    # --- notebooks -----------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        from .report.notebook import render_notebook

        return render_notebook(self.report(), self._dir.items("test"), self._dir.items("train"))


def _frame(columns: Dict[str, Any], purpose: str):
    """A DataFrame of per-item columns (:data:`sibscan.report.items.COLUMNS`), ``sibling`` and
    ``label_conflict`` as nullable booleans (NA: not assessed)."""
    pd = require("pandas", "pandas", purpose)
    df = pd.DataFrame(columns)
    for name in ("sibling", "label_conflict"):
        df[name] = df[name].astype("boolean")
    return df
