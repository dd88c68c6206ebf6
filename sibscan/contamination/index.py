"""An on-disk index of a corpus's word n-grams: 64-bit hashes only, in sorted, range-partitioned
shards, built by streaming the corpus a batch of documents at a time.

Layout of an index folder (format v3; :mod:`.shardlayout` also reads format v2)::

    manifest.json        n, tokeniser, hash, layout, counts, the shards' hash ranges, skipped documents
    shard-00000.npy      uint64 per distinct hash in [lo_0, hi_0), sorted: its low 48 bits and its
                         16-bit position tag (the first occurrence's), ``low48 << 16 | tag``
    shard-00000.bkt.npy  how many hashes have each value of the top 16 bits in [lo_0, hi_0)
    shard-00001.npy      ...

Build (two phases, each a list of independent tasks, run here or as Ray tasks with identical
output — :mod:`.ray_build`):

1. **map**: documents are grouped into batches of about ``shard_size`` n-grams (estimated as
   ``CHARS_PER_NGRAM`` characters each; a batch closes on a document boundary); each batch becomes
   one *run*: its n-gram hashes sorted and de-duplicated (``runs/run-00000.npy``), with the
   position tag of each one's first occurrence (``runs/run-00000.tag.npy``).
2. **reduce**: the 64-bit hash space is cut into ``ceil(run entries / shard_size)`` equal ranges
   (hashes are uniform, so the ranges are balanced without sampling); shard ``j`` is the distinct
   hashes of every run in range ``j``, each with the tag of its earliest run.  The runs are
   then deleted.

The index stores no positions; the 16-bit tag is ``(digest(document) + position) mod 2**16``
(:func:`sibscan.kernels.ngramhash.ngram_position_tags`), so matched n-grams whose tags step by 1
are consecutive n-grams of one document, and a reported longest run is a passage of one document
(never a chain of matches from different documents, except with probability ``2**-16`` per join).

Memory is bounded by the shard size, not the corpus: a map task holds one batch, a reduce task
one range (read from memory-mapped runs), a query one shard at a time.  The stored index is 8
bytes per distinct n-gram (48 hash bits + 16 tag bits; the top 16 hash bits are implied by the
bucket counts) plus the bucket counts (2**16 in all, 1 byte each while no bucket holds more than
255 n-grams) and a JSON manifest; the flat format v2 took 10 bytes (8 hash + 2 tag).
``manifest.json`` is written last, atomically: a folder without it is an unfinished build.
"""
from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from ..atomic import save_npy, write_json
from ..errors import CompatibilityError, InputError, SibscanError
from ..options import ENGINES
from ..progress import bar as progress_bar
from .corpus import CorpusLike, CorpusReader
from .shardlayout import DEFAULT_LAYOUT, layout_for_format, layout_named
from .tasks import hash_batch, merge_range, range_bounds, tag_path

__all__ = ["CHARS_PER_NGRAM", "DEFAULT_N", "DEFAULT_SHARD_SIZE", "NgramIndex", "build_index", "index_identity"]

log = logging.getLogger("sibscan.contamination")

DEFAULT_N = 13
DEFAULT_SHARD_SIZE = 1 << 22  # 4,194,304 n-grams: a 32 MiB shard
CHARS_PER_NGRAM = 6  # batch size estimate: English averages ~6 characters per word with its space
TOKENISER = "nfkc-casefold-w"  # sibscan.kernels.textalign.tokenize
HASH = "blake2b64-word,poly64-ngram,tag16-docsum-pos"


def index_identity(n: int) -> str:
    """What must match between an index and the text it is queried with."""
    return f"ngram-index-v2(n={n},tok={TOKENISER},hash={HASH})"


def _batches(docs: Iterable[str], max_chars: int) -> Iterator[List[str]]:
    batch: List[str] = []
    size = 0
    for doc in docs:
        batch.append(doc)
        size += len(doc)
        if size >= max_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


@dataclass
class _BuildStats:
    n_docs: int = 0
    n_words: int = 0
    n_ngrams: int = 0
    run_entries: int = 0
    runs: List[str] = field(default_factory=list)


class NgramIndex:
    """A finished n-gram index folder (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The folder; it must hold a ``manifest.json`` written by :func:`build_index`.
    """

    def __init__(self, path):
        self.path = Path(path)
        mf = self.path / "manifest.json"
        if not mf.is_file():
            raise InputError("not a finished n-gram index (no manifest.json); give the corpus itself to "
                             "'sibscan contamination --corpus' (it is indexed into --work) or build one with "
                             "build_index()", path=self.path)
        self.manifest = json.loads(mf.read_text())
        self.layout = layout_for_format(self.manifest.get("format"), self.path)
        self.n = int(self.manifest["n"])
        self.identity = self.manifest["identity"]
        self._lo = np.array([int(s["lo"]) for s in self.manifest["shards"]], dtype=np.uint64)

    def __repr__(self) -> str:
        m = self.manifest
        return (f"NgramIndex({str(self.path)!r}, n={self.n}, docs={m['n_docs']:,}, "
                f"stored={m['n_stored']:,}, shards={len(m['shards'])})")

    @property
    def n_stored(self) -> int:
        return int(self.manifest["n_stored"])

    def stored_bytes(self) -> int:
        """Bytes on disk: shard files (hashes, tags, bucket counts) and manifest."""
        files = [self.path / f for s in self.manifest["shards"] for f in self.layout.files(s)]
        files.append(self.path / "manifest.json")
        return sum(f.stat().st_size for f in files)

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """Which hashes are in the index; one shard is mapped at a time.

        Parameters
        ----------
        hashes : ndarray of shape (m,), uint64

        Returns
        -------
        ndarray of shape (m,), bool
        """
        return self.lookup(hashes)[0]

    def lookup(self, hashes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Which hashes are in the index and their stored position tags; one shard at a time.

        Parameters
        ----------
        hashes : ndarray of shape (m,), uint64

        Returns
        -------
        hit : ndarray of shape (m,), bool
        tag : ndarray of shape (m,), uint16 — the first occurrence's tag (0 where not hit)
        """
        hashes = np.asarray(hashes, np.uint64)
        out = np.zeros(len(hashes), bool)
        tags = np.zeros(len(hashes), np.uint16)
        if not len(hashes) or not len(self._lo):
            return out, tags
        part = np.searchsorted(self._lo, hashes, side="right") - 1
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange(len(self._lo) + 1))
        for j, shard in enumerate(self.manifest["shards"]):
            sel = order[bounds[j]:bounds[j + 1]]
            if not len(sel) or not shard["count"]:
                continue
            out[sel], tags[sel] = self.layout.lookup(self.path, shard, hashes[sel])
        return out, tags


def _open_existing(path: Path, identity: str, fingerprint: Optional[str], fmt: str) -> Optional[NgramIndex]:
    if not (path / "manifest.json").is_file():
        return None
    idx = NgramIndex(path)
    if idx.identity != identity:
        raise CompatibilityError(f"{path} holds an index built as {idx.identity}, not {identity}; "
                                 "build into another folder or delete this one")
    if fingerprint is not None and idx.manifest.get("corpus_fingerprint") == fingerprint:
        if idx.manifest["format"] == fmt:
            return idx
        log.info("%s holds the same corpus in format %s; rebuilding it as %s", path, idx.manifest["format"], fmt)
    return None


def build_index(corpus: CorpusLike, path, *, n: int = DEFAULT_N, shard_size: int = DEFAULT_SHARD_SIZE,
                text_field: str = "text", engine: str = "local", ray_address: Optional[str] = None,
                num_cpus: Optional[int] = None, progress: bool = True, rebuild: bool = False,
                layout: str = DEFAULT_LAYOUT) -> NgramIndex:
    """Build (or reuse) the n-gram index of a corpus.

    Parameters
    ----------
    corpus : str, PathLike or iterable of str
        A file, a folder (.txt / .jsonl / .parquet, recursive), or the documents.
    path : str or Path
        The index folder.  A finished index there built from the same files (names, sizes,
        modification times) with the same ``n`` is reused; an iterable corpus is always rebuilt.
    n : int
        Words per n-gram (13 by default, as GPT-3's contamination study).
    shard_size : int
        N-grams per batch and per shard: the unit of memory (8 bytes each in a shard, a few
        times that while a batch is hashed).
    text_field : str
        JSONL / Parquet field holding the text.
    engine : {"local", "ray"}
        Run the map and reduce tasks here or as Ray tasks (identical output).
    ray_address, num_cpus
        Ray cluster address (None: a local Ray) and CPUs for a local Ray.
    progress : bool
    rebuild : bool
        Rebuild even when a matching finished index exists.
    layout : {"bucketed", "flat"}
        How shards are stored (:mod:`.shardlayout`): ``"bucketed"`` (format v3, 8 bytes per
        n-gram plus the bucket counts) or ``"flat"`` (format v2, 10 bytes; kept to compare).
        Lookups give identical results.

    Returns
    -------
    NgramIndex
    """
    if int(n) < 1:
        raise SibscanError(f"n must be >= 1 words, got {n}")
    if int(shard_size) < 1:
        raise SibscanError(f"shard_size must be >= 1 n-grams, got {shard_size}")
    if engine not in ENGINES:
        raise SibscanError(f"unknown engine {engine!r}; available: {', '.join(ENGINES)}")
    n, shard_size = int(n), int(shard_size)
    shard_layout = layout_named(layout)
    path = Path(path)
    reader = CorpusReader(corpus, text_field=text_field)
    identity = index_identity(n)
    fingerprint = reader.fingerprint()
    if not rebuild:
        found = _open_existing(path, identity, fingerprint, shard_layout.format)
        if found is not None and found.manifest.get("n_ngrams") != 0:  # one of nothing (an older sibscan's) is redone
            log.info("reusing the finished index at %s", path)
            return found
    if (path / "manifest.json").exists():
        (path / "manifest.json").unlink()  # an index being rebuilt is unfinished until the end
    for old in path.glob("shard-*.npy"):  # hashes, tags, bucket counts
        old.unlink()
    runs_dir = path / "runs"
    shutil.rmtree(runs_dir, ignore_errors=True)
    runs_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    batches = _batches(reader, shard_size * CHARS_PER_NGRAM)
    if engine == "ray":
        from .ray_build import RayTasks

        tasks = RayTasks(address=ray_address, num_cpus=num_cpus)
    else:
        tasks = _LocalTasks()
    stats = _map(tasks, batches, n, runs_dir, progress)
    t_map = time.perf_counter() - t0
    if stats.n_ngrams == 0:  # every overlap would read 0.00, "0 flagged": a clean result measured against nothing
        shutil.rmtree(runs_dir, ignore_errors=True)
        raise InputError(_nothing_indexed(stats, n, reader), path=reader.path if reader.path is not None else "corpus")
    n_parts = max(1, -(-stats.run_entries // shard_size))
    edges = range_bounds(n_parts)
    shards = _reduce(tasks, stats.runs, edges, path, shard_layout, progress)
    shutil.rmtree(runs_dir, ignore_errors=True)
    seconds = time.perf_counter() - t0
    manifest = {
        "format": shard_layout.format,
        "layout": shard_layout.name,
        "identity": identity,
        "n": n,
        "tokeniser": TOKENISER,
        "hash": HASH,
        "shard_size": shard_size,
        "engine": engine,
        "corpus": str(reader.path) if reader.path is not None else "<iterable>",
        "corpus_fingerprint": fingerprint,
        "n_docs": stats.n_docs,
        "n_words": stats.n_words,
        "n_ngrams": stats.n_ngrams,
        "n_stored": int(sum(s["count"] for s in shards)),
        "shards": shards,
        "skipped": [s.to_dict() for s in reader.skipped],
        "seconds": {"map": round(t_map, 3), "total": round(seconds, 3)},
    }
    write_json(path / "manifest.json", manifest)
    if reader.skipped:
        log.warning("%d corpus document(s) or file(s) skipped (listed in %s/manifest.json), first: %s at byte %d: %s",
                    len(reader.skipped), path, reader.skipped[0].path, reader.skipped[0].offset,
                    reader.skipped[0].reason)
    return NgramIndex(path)


def _nothing_indexed(stats: _BuildStats, n: int, reader: CorpusReader) -> str:
    """Why a corpus gave no n-gram, and what to do (an index of nothing makes every example look clean)."""
    skipped = f"; {len(reader.skipped)} file(s) or document(s) skipped, first: {reader.skipped[0].reason}" \
        if reader.skipped else ""
    if stats.n_words == 0:
        return (f"the corpus holds no text ({stats.n_docs} document(s), 0 words{skipped}); every overlap would be 0 "
                "— give the file or folder that holds the training text")
    return (f"no corpus document has {n} words ({stats.n_docs} document(s), {stats.n_words} words), so no n-gram was "
            f"indexed and every overlap would be 0; use a smaller n (--n) or give the full corpus")


class _LocalTasks:
    """Runs each task here, in order (the reference the Ray engine must match)."""

    def map_batches(self, batches: Iterable[List[str]], n: int) -> Iterator[Tuple[int, int, tuple]]:
        for i, docs in enumerate(batches):
            yield i, len(docs), hash_batch(docs, n)

    def reduce_ranges(self, run_paths: List[str], ranges: List[Tuple[int, int]]) -> Iterator[Tuple[int, tuple]]:
        for j, (lo, hi) in enumerate(ranges):
            yield j, merge_range(run_paths, lo, hi)


def _map(tasks, batches, n: int, runs_dir: Path, progress: bool) -> _BuildStats:
    stats = _BuildStats()
    results: Dict[int, str] = {}
    with progress_bar(None, "index: documents hashed", "docs", enabled=progress) as bar:
        for i, n_docs, (hashes, tags, n_words, n_ngrams) in tasks.map_batches(batches, n):
            f = runs_dir / f"run-{i:05d}.npy"
            save_npy(tag_path(f), tags)
            save_npy(f, hashes)
            results[i] = str(f)
            stats.n_docs += n_docs
            stats.n_words += n_words
            stats.n_ngrams += n_ngrams
            stats.run_entries += len(hashes)
            bar.update(n_docs)
    stats.runs = [results[i] for i in sorted(results)]
    return stats


def _reduce(tasks, run_paths: List[str], edges, path: Path, shard_layout, progress: bool) -> List[dict]:
    ranges = [(int(edges[j]), int(edges[j + 1])) for j in range(len(edges) - 1)]
    shards: Dict[int, dict] = {}
    with progress_bar(len(ranges), "index: shards merged", "shards", enabled=progress) as bar:
        for j, (table, tags) in tasks.reduce_ranges(run_paths, ranges):
            shards[j] = shard_layout.write(path, j, ranges[j][0], ranges[j][1], table, tags)
            bar.update()
    return [shards[j] for j in sorted(shards)]
