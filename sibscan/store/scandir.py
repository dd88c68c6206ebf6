"""The scan directory: what ``sibscan scan`` writes and every later stage reads.

Layout (every file written atomically)::

    DIR/manifest.json          version, inputs' fingerprints, encoder/verifier identity, parameters,
                               timings, skipped items, status ("running" | "complete")
    DIR/items/<split>.npz      ids, labels, groups, fingerprint (n, 2) uint64, values (tables),
                               items_fingerprint (the manifest's, compared on every read)
    DIR/items/<split>.jsonl    texts (text) or paths (images), one JSON string per line
    DIR/embeddings/<split>.npy float16/float32 (n, dim), rows aligned with the items
    DIR/neighbours.npz         the neighbours table (columns below); neighbours.csv for people
    DIR/baseline.json          the random-pair baseline (written by sibscan.calibration)
    DIR/report.{json,md,html}  the reports

The neighbours table has one row per (query, rank) with columns

=================  =========  =====================================================
query_split        str        "test" or "train"
query_id           str
query_index        int64      row of the query in its split
rank               int32      0 = nearest by the deciding ``score`` (after verification)
embedding_rank     int32      0 = nearest by embedding ``similarity`` (the search's rank)
neighbour_split    str        "train" or "test"
neighbour_id       str
neighbour_index    int64
similarity         float32    embedding cosine similarity
verified           float32    verified similarity (NaN where not verified)
score              float32    the deciding score: ``verified`` where present, else ``similarity``
exact              bool       the pair has the same exact fingerprint
detail             str        how the verifier matched ("flipped, shifted 2 px"), or ""
view               str        the view(s) that proposed the row, "+"-joined ("effnet+windows";
                              see :mod:`sibscan.stages.views`); "" in tables written before views
=================  =========  =====================================================

The table is held in memory as :class:`~sibscan.store.neighbourtable.Neighbours` (importable from here too).

The direction of a row is ``(query_split, neighbour_split)``: ``("test", "train")`` is the sibling
question, ``("train", "test")`` the reverse, ``("test", "test")`` duplicates within the test set
(self-matches removed).  ``verified`` and ``detail`` belong to the pair, not the row: a pair is
verified once, in its canonical orientation (the test item as the query across splits, the lower row
within a split; :mod:`sibscan.stages.pairverify`), and every row of the pair carries that score and detail.

manifest.json keys (written by :mod:`sibscan.scan`; later stages read them)::

    sibscan_version, created (ISO time), status ("running" | "complete"), modality,
    inputs: {train: {source, fingerprint (hex), items_fingerprint (hex), ids_fingerprint (hex: which
        content each id names; --force refuses to keep labels whose ids changed meaning), n_items,
        n_skipped}, test: {...}},
    dataset_fingerprint (hex; identifies the pair of inputs, whatever their row order: calibrations are
        tied to it),
    items_fingerprint (hex; the rows of both splits in order, with their ids: a scan resumes only on
        the same rows in the same order),
    encoder: {name, identity, dim},
    verifier: {name, identity} or null,
    views: the views that proposed test→train candidates, the encoder first (["effnet", "windows"]),
    view_identities: {view: identity}; pairing: sibscan.stages.pairverify.PAIRING or null (a resume compares both),
    neighbours_source (hex): what neighbours.npz was computed from (:func:`neighbours_source`), stored in the
        table too, and as baseline.json's ``source`` (the baseline is computed from the same); every reader
        compares them (:meth:`ScanDir.checked_neighbours_path`, :meth:`ScanDir.baseline`), so a table copied
        from another scan is refused (absent in scans made before it was recorded),
    embeddings_digest: {split: hex} of the embeddings/<split>.npy the scan wrote (:func:`embeddings_digest`),
        compared by :meth:`ScanDir.embeddings` (absent in scans made before it was recorded),
    pairs_verified: {"test>train", "test>test", "train>test": pairs handed to the verifier, each under
        the first of these directions holding it},
    parameters: {k, decimals, znorm, backend, device, directions, verify_k, ...},
    cutoff: the record of sibscan.verdict.cutoff.Cutoff: {value (float or null),
             source ("calibrated" | "uncalibrated" | "none"), interval ([lo, hi] or null),
             calibration (path or null), score ("verified" | "similarity"), n_labels, estimates,
             forced, status},
    timings: {stage: seconds},
    skipped: {train: [{where, reason}], test: [...]},
    summary: {...},
    run: the run record (sibscan.runrecord): identity, started, ended, status, resumed,
         inputs [{role, path, kind, sha256, bytes}], environment {python, platform, cpu, packages…},
         samples {train/test: {attempted, loaded, skipped}}; `sibscan audit --verify DIR` re-hashes
         the inputs
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Iterable, Iterator, Optional, Tuple

import numpy as np

from ..atomic import save_npy, save_npz, write_json, write_text
from ..errors import SibscanError
from ..items import Items, Skipped
from .neighbourtable import Neighbours, column_blocks, table_source
from ..rowids import RowNumberIds
from .scanfiles import DELETE_RERUN, READ_ERRORS, RERUN, corrupt

__all__ = ["EMBEDDINGS_KEY", "NEIGHBOURS_SOURCE_KEY", "ScanDir", "embeddings_digest", "load_items",
           "neighbours_source", "save_items", "train_items_searched"]

#: the manifest key recording what the neighbours table was computed from (:func:`neighbours_source`)
NEIGHBOURS_SOURCE_KEY = "neighbours_source"
#: the manifest key recording the digest of each embeddings file the scan wrote (:func:`embeddings_digest`)
EMBEDDINGS_KEY = "embeddings_digest"
#: baseline.json's key holding the manifest's NEIGHBOURS_SOURCE_KEY of the scan that computed it
_BASELINE_SOURCE = "source"
#: rows of an embeddings file that its digest reads (evenly spaced, the first and last among them)
_DIGEST_ROWS = 64
#: the member of items/<split>.npz holding the split's items_fingerprint, as the manifest records it
_ITEMS_ROWS = "items_fingerprint"
#: what computes a scan folder's neighbours table again
_FORCE = "re-run the 'sibscan scan' command with --force to compute it again (labels under calibration/ are kept)"


#: options that say where a split's rows, ids and labels are read from: the table depends on the rows and
#: ids they give (the manifest's items_fingerprint), not on how a file named them
_WHERE_ROWS = ("train", "test", "index", "modality", "label", "id", "group", "text_field", "path_field",
               "labels_train", "labels_test")


def neighbours_source(manifest: dict) -> str:
    """The digest of what a scan's neighbours table is computed from: the rows of both splits in order
    with their ids (``items_fingerprint``: the table points at rows by position and names them by id),
    the encoder, verifier, candidate views and pairing, and the options that shape the table (the splits
    by their rows, not by the path or columns they were read from).  Written into the table and the
    manifest together; a table whose digest is not its manifest's came from another scan."""
    keys = ("items_fingerprint", "encoder", "verifier", "view_identities", "pairing")
    record = {k: manifest.get(k) for k in keys}
    # the splits by their rows and ids (items_fingerprint), not by the options that found them in a file
    record["parameters"] = {k: v for k, v in (manifest.get("parameters") or {}).items() if k not in _WHERE_ROWS}
    text = json.dumps(record, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def embeddings_digest(emb: np.ndarray) -> str:
    """A digest of an embeddings array: its shape, dtype and :data:`_DIGEST_ROWS` evenly spaced rows.

    Enough to tell a scan's embeddings from another scan's (other items, encoder or row order change the
    shape or the rows read), and read in a few milliseconds whatever the file's size, as the file is
    memory-mapped; recorded in the manifest when the scan writes them and compared on every read.

    Parameters
    ----------
    emb : ndarray of shape (n, dim)
    """
    n = len(emb)
    rows = np.unique(np.linspace(0, n - 1, num=min(n, _DIGEST_ROWS)).round().astype(np.int64))
    h = hashlib.blake2b(digest_size=16)
    h.update(f"sibscan-embeddings/1|{tuple(emb.shape)}|{emb.dtype.str}|".encode())
    h.update(np.ascontiguousarray(emb[rows]).tobytes())
    return h.hexdigest()


def save_items(directory: Path, items: Items, fingerprints: Optional[np.ndarray] = None,
               rows: Optional[str] = None) -> None:
    """Write ``items`` (and their (n, 2) uint64 fingerprints) under ``directory/items/``; ``rows``: the
    split's ``items_fingerprint`` as the manifest records it, stored with them (compared by :func:`load_items`)."""
    d = Path(directory) / "items"
    arrays = {"ids": items.ids if isinstance(items.ids, RowNumberIds) else items.ids.astype(str)}  # written a block at a time
    if items.labels is not None:
        arrays["labels"] = items.labels.astype(str)
    if items.groups is not None:
        arrays["groups"] = items.groups.astype(str)
    if fingerprints is not None:
        # on disk (a scan's train set), copied in a block at a time by save_npz
        arrays["fingerprint"] = fingerprints if hasattr(fingerprints, "iter_blocks") else np.asarray(fingerprints, dtype=np.uint64)
    if items.values is not None:
        arrays["values"] = items.values
    for k, v in items.extra.items():
        arrays[f"extra__{k}"] = np.asarray(v)
    meta = {
        "split": items.split,
        "modality": items.modality,
        "shape": list(items.shape) if items.shape else None,
        "source": items.source,
        "skipped": [s.to_dict() for s in items.skipped],
    }
    arrays["meta"] = np.array(json.dumps(meta))
    if rows is not None:
        arrays[_ITEMS_ROWS] = np.array(rows)
    save_npz(d / f"{items.split}.npz", **arrays)
    content = items.texts if items.modality == "text" else items.paths if items.modality == "image" else None
    if content is not None:
        write_text(d / f"{items.split}.jsonl", "".join(json.dumps(str(c), ensure_ascii=False) + "\n" for c in content))


def load_items(directory: Path, split: str, manifest: Optional[dict] = None) -> Tuple[Items, Optional[np.ndarray]]:
    """Read back what :func:`save_items` wrote: ``(items, fingerprints or None)``; ``manifest``: the scan's,
    when the caller holds it (else read from ``directory``, to refuse another scan's items)."""
    d = Path(directory) / "items"
    path = d / f"{split}.npz"
    if not path.exists():
        raise SibscanError(f"{path} is missing; is {directory} a complete sibscan scan directory?")
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in z.files}
    except READ_ERRORS as exc:
        raise corrupt(path, exc, RERUN) from None
    _refuse_foreign_items(Path(directory), path, split, len(arrays["ids"]), arrays.get(_ITEMS_ROWS), manifest)
    texts = paths = None
    if meta["modality"] in ("text", "image"):
        lines = d / f"{split}.jsonl"
        try:
            with open(lines, encoding="utf-8") as fh:
                content = [json.loads(line) for line in fh]
        except (*READ_ERRORS, UnicodeDecodeError) as exc:
            raise corrupt(lines, exc, RERUN) from None
        if len(content) != len(arrays["ids"]):
            raise corrupt(lines, ValueError(f"{len(content)} lines for {len(arrays['ids'])} items"), RERUN)
        if meta["modality"] == "text":
            texts = content
        else:
            paths = content
    items = Items(
        split=meta["split"],
        modality=meta["modality"],
        ids=arrays["ids"],
        labels=arrays.get("labels"),
        groups=arrays.get("groups"),
        values=arrays.get("values"),
        texts=texts,
        paths=paths,
        shape=tuple(meta["shape"]) if meta.get("shape") else None,
        source=meta.get("source", ""),
        skipped=[Skipped(**s) for s in meta.get("skipped", [])],
        extra={k[len("extra__"):]: v for k, v in arrays.items() if k.startswith("extra__")},
    )
    return items, arrays.get("fingerprint")


def _refuse_foreign_items(directory: Path, path: Path, split: str, n: int, rows: Optional[np.ndarray],
                          manifest: Optional[dict] = None) -> None:
    """Refuse a scan folder's ``items/<split>.npz`` that is not the one its manifest describes (copied
    from another scan): another number of items than ``inputs.<split>.n_items``, or another
    ``items_fingerprint`` stored with them.  Files written before the fingerprint was stored are checked
    by their count only; a folder without a manifest (an index's) has nothing to compare with."""
    sd = ScanDir(directory)
    if manifest is None and not sd.exists():
        return
    recorded = ((manifest if manifest is not None else sd.manifest()).get("inputs") or {}).get(split) or {}
    other_count = recorded.get("n_items") not in (None, n)
    other_rows = rows is not None and recorded.get("items_fingerprint") not in (None, str(rows))
    if other_count or other_rows:
        raise sd._foreign(path, RERUN)


def train_items_searched(manifest: dict, directory=None) -> Optional[int]:
    """The number of train items a scan's test items were searched against: the rows of its
    ``items/train.npz`` (the neighbours table's train indices point into them), and the ``n_train`` of
    the expected number of chance siblings wherever that is stated (scan summary, report, calibrate, split).

    The scan records it in the manifest when it writes the items (``inputs.train.n_items``: the items
    left after skipped ones); a manifest without it (written by other code) falls back to counting the
    rows of ``directory``'s train items.  None when neither is there: nothing to count chance siblings
    against, so no count is stated.
    """
    n = ((manifest.get("inputs") or {}).get("train") or {}).get("n_items")
    if n is not None:
        return int(n)
    path = None if directory is None else Path(directory) / "items" / "train.npz"
    if path is None or not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return int(len(z["ids"]))
    except READ_ERRORS as exc:
        raise corrupt(path, exc, RERUN) from None


class ScanDir:
    """Read/write access to a scan directory. Later stages open a finished scan with ``ScanDir(path)``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    # --- paths -----------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    @property
    def neighbours_path(self) -> Path:
        return self.path / "neighbours.npz"

    @property
    def baseline_path(self) -> Path:
        return self.path / "baseline.json"

    def embeddings_path(self, split: str) -> Path:
        return self.path / "embeddings" / f"{split}.npy"

    # --- manifest --------------------------------------------------------------------------
    def exists(self) -> bool:
        return self.manifest_path.exists()

    def manifest(self) -> dict:
        if not self.manifest_path.exists():
            raise SibscanError(f"{self.path} is not a sibscan scan directory (no manifest.json); run 'sibscan scan' first")
        try:
            with open(self.manifest_path, encoding="utf-8") as fh:
                manifest = json.load(fh)
        except (*READ_ERRORS, UnicodeDecodeError) as exc:
            raise corrupt(self.manifest_path, exc, "re-run the 'sibscan scan' command with --force to start the "
                           "scan over (labels under calibration/ are kept)") from None
        if not isinstance(manifest, dict):
            raise corrupt(self.manifest_path, ValueError("not a JSON object"), "re-run the 'sibscan scan' command "
                           "with --force to start the scan over (labels under calibration/ are kept)")
        return manifest

    def write_manifest(self, manifest: dict) -> None:
        write_json(self.manifest_path, manifest)

    # --- tables ----------------------------------------------------------------------------
    def items(self, split: str) -> Items:
        return load_items(self.path, split)[0]

    def fingerprints(self, split: str) -> Optional[np.ndarray]:
        return load_items(self.path, split)[1]

    def write_items(self, items: Items, fingerprints: Optional[np.ndarray] = None) -> None:
        """Write a split's items, stored with the ``items_fingerprint`` the manifest records for them."""
        recorded = ((self.manifest().get("inputs") or {}).get(items.split) or {}) if self.exists() else {}
        save_items(self.path, items, fingerprints, rows=recorded.get("items_fingerprint"))

    def embeddings(self, split: str, mmap: bool = True) -> np.ndarray:
        """``embeddings/<split>.npy``, once it is known to be the one this scan wrote (its digest is the
        manifest's :data:`EMBEDDINGS_KEY`; a manifest recording none, made before it was recorded, has
        nothing to compare with)."""
        emb = self._load_embeddings(split, mmap)
        recorded = self.manifest().get(EMBEDDINGS_KEY) if self.exists() else None
        if recorded is not None and (not isinstance(recorded, dict) or recorded.get(split) != embeddings_digest(emb)):
            raise self._foreign(self.embeddings_path(split), RERUN)
        return emb

    def embeddings_digests(self, splits: Iterable[str]) -> dict:
        """``{split: digest}`` of the embeddings files just written, for the manifest's :data:`EMBEDDINGS_KEY`."""
        return {split: embeddings_digest(self._load_embeddings(split, mmap=True)) for split in splits}

    def _load_embeddings(self, split: str, mmap: bool) -> np.ndarray:
        p = self.embeddings_path(split)
        if not p.exists():
            raise SibscanError(f"{p} is missing; re-run 'sibscan scan' on {self.path}")
        try:
            emb = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
        except READ_ERRORS as exc:
            raise corrupt(p, exc, RERUN) from None
        if emb.ndim != 2:
            raise corrupt(p, ValueError(f"shape {emb.shape}, expected (n, dim)"), RERUN)
        return emb

    def write_embeddings(self, split: str, emb: np.ndarray) -> None:
        save_npy(self.embeddings_path(split), emb)

    def checked_neighbours_path(self) -> Path:
        """``neighbours.npz``, once it is known to be this scan's: every reader of the table comes here.

        The table stores the digest of what it was computed from (:func:`neighbours_source`) and the
        manifest records the one of the table the scan wrote; a table copied in from another scan (other
        items, ids, encoder or options) stores another, or none, and is refused naming the fix.  A manifest
        recording none (a scan made before the digest was recorded) has nothing to compare with.
        """
        path = self.neighbours_path
        if not path.exists():
            raise SibscanError(f"{path} is missing; the scan in {self.path} did not finish — re-run 'sibscan scan' to resume")
        recorded = self._recorded_source()
        if recorded is not None and table_source(path) != recorded:
            raise self._foreign(path, _FORCE)
        return path

    def _foreign(self, path: Path, fix: str) -> SibscanError:
        """The refusal of a file in this folder that another scan computed (its digest is not the manifest's)."""
        return SibscanError(f"{path} was not computed by the scan in {self.path} (it does not match what "
                            f"{self.manifest_path.name} records: copied from another scan?); {fix}")

    def _recorded_source(self) -> Optional[str]:
        """The manifest's :data:`NEIGHBOURS_SOURCE_KEY` (None without a manifest: a table made by hand)."""
        return self.manifest().get(NEIGHBOURS_SOURCE_KEY) if self.exists() else None

    def neighbours(self, skip: Iterable[Tuple[str, str]] = ()) -> Neighbours:
        """The neighbours table; ``skip``: directions left out (see :meth:`Neighbours.load`)."""
        return Neighbours.load(self.checked_neighbours_path(), skip)

    def neighbours_matching(self, query_split: str, neighbour_split: str, column: str, values: np.ndarray) -> Neighbours:
        """The rows of one direction whose ``column`` is among ``values`` (see :meth:`Neighbours.load_matching`)."""
        return Neighbours.load_matching(self.checked_neighbours_path(), query_split, neighbour_split, column, values)

    def neighbour_pairs(self, query_split: str, neighbour_split: str) -> Tuple[np.ndarray, np.ndarray]:
        """``(query_index, neighbour_index)`` of one direction's rows, read without the other columns."""
        path = self.checked_neighbours_path()
        try:
            with np.load(path, allow_pickle=False) as z:
                m = (z["query_split"] == query_split) & (z["neighbour_split"] == neighbour_split)
                return z["query_index"][m], z["neighbour_index"][m]
        except READ_ERRORS as exc:
            raise corrupt(self.neighbours_path, exc, DELETE_RERUN) from None

    def iter_neighbour_pairs(self, query_split: str, neighbour_split: str,
                             block_rows: int = 1 << 16) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        """:meth:`neighbour_pairs` a block of table rows at a time: ``(query_index, neighbour_index)`` of
        that direction's rows among each ``block_rows`` rows, read from the archive's columns as streams
        (memory bounded by the block, whatever the table's length)."""
        names = ("query_split", "neighbour_split", "query_index", "neighbour_index")
        path = self.checked_neighbours_path()
        try:
            with zipfile.ZipFile(path) as zf:
                for _, (qs, ns, qi, ni) in column_blocks(zf, names, max(1, int(block_rows))):
                    m = (qs == query_split) & (ns == neighbour_split)
                    yield qi[m], ni[m]
        except READ_ERRORS as exc:
            raise corrupt(self.neighbours_path, exc, DELETE_RERUN) from None

    def write_neighbours(self, nb: Neighbours, csv: bool = True) -> None:
        """Write the table (and its CSV), stamped with the source its manifest records, if any."""
        source = self._recorded_source()
        nb.save(self.neighbours_path, source=source)
        if csv:
            nb.write_csv(self.path / "neighbours.csv")

    def baseline(self) -> Optional[dict]:
        if not self.baseline_path.exists():
            return None
        try:
            with open(self.baseline_path, encoding="utf-8") as fh:
                baseline = json.load(fh)
        except (*READ_ERRORS, UnicodeDecodeError) as exc:
            raise corrupt(self.baseline_path, exc, DELETE_RERUN) from None
        if not isinstance(baseline, dict) or "quantiles" not in baseline:
            raise corrupt(self.baseline_path, ValueError("not a baseline record"), DELETE_RERUN)
        q = baseline["quantiles"]
        # the quantiles every reader of the cutoff uses (the 99th: calibration's draw; both: the warning
        # about a cutoff among random pairs); checked once here, not as a KeyError in each reader
        bad = [k for k in ("0.99", "0.999") if not isinstance(q, dict) or not _number(q.get(k))]
        if bad:
            raise corrupt(self.baseline_path, ValueError(f"no {' or '.join(bad)} quantile"), DELETE_RERUN)
        recorded = self._recorded_source()
        # another scan's baseline (other items, encoder or options) would state its chance siblings as this one's
        if recorded is not None and _BASELINE_SOURCE not in baseline:  # written before baselines were stamped
            raise SibscanError(f"{self.baseline_path} does not say which scan computed it (written by an "
                               f"sibscan from before baselines were stamped), so it cannot be checked against "
                               f"{self.manifest_path.name}; {DELETE_RERUN}")
        if recorded is not None and baseline.get(_BASELINE_SOURCE) != recorded:
            raise self._foreign(self.baseline_path, DELETE_RERUN)
        return baseline

    def write_baseline(self, baseline: dict) -> None:
        """Write baseline.json, stamped with the source its manifest records, if any (compared by :meth:`baseline`)."""
        write_json(self.baseline_path, {**baseline, _BASELINE_SOURCE: self._recorded_source()})


def _number(x) -> bool:
    """A real number (JSON's int or float, not a bool or text)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)
