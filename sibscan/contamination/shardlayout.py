"""How an index shard is stored: the bucketed layout (format v3, written by default) and the flat
layout of format v2 (still read; written only on request, for comparison).

Each layout writes one shard from its sorted distinct hashes and their 16-bit position tags,
answers lookups from the files (memory-mapped, reading only what a lookup probes), and reads a
shard back whole.  The results of a lookup do not depend on the layout (tested against each other
and against brute force).

==========  ==========================  ================================================  ======================
layout      format                      files per shard                                   bytes per n-gram
==========  ==========================  ================================================  ======================
bucketed    sibscan-ngram-index-v3      ``shard-J.npy`` uint64 ``low48 << 16 | tag``;     8 + the bucket table
                                        ``shard-J.bkt.npy`` counts of the 2**16 buckets   (2**16 counts in all)
                                        of the top 16 hash bits in the shard's range
flat        sibscan-ngram-index-v2      ``shard-J.npy`` uint64 hashes;                    10
                                        ``shard-J.tag.npy`` uint16 tags
==========  ==========================  ================================================  ======================
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from ..atomic import save_npy
from ..errors import CompatibilityError, SibscanError
from ..kernels.hashbuckets import bucket_lookup, bucket_pack, bucket_span, bucket_unpack
from ..kernels.ngramhash import sorted_lookup

__all__ = ["DEFAULT_LAYOUT", "LAYOUTS", "ShardLayout", "layout_for_format", "layout_named"]


class ShardLayout:
    """The contract of a shard layout (see the module docstring)."""

    name = ""
    format = ""

    def write(self, folder: Path, j: int, lo: int, hi: int, hashes: np.ndarray, tags: np.ndarray) -> dict:
        """Write shard ``j`` (hashes in ``[lo, hi)``) and return its manifest entry."""
        raise NotImplementedError

    def files(self, shard: dict) -> List[str]:
        """The shard's file names in the index folder."""
        raise NotImplementedError

    def lookup(self, folder: Path, shard: dict, queries: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(hit, tag)`` of each query hash, as :func:`sibscan.kernels.ngramhash.sorted_lookup`."""
        raise NotImplementedError

    def read(self, folder: Path, shard: dict) -> Tuple[np.ndarray, np.ndarray]:
        """The shard's sorted hashes and their tags, whole."""
        raise NotImplementedError


def _entry(lo: int, hi: int, count: int, **files: str) -> dict:
    return {**files, "lo": str(lo), "hi": str(hi), "count": int(count)}


class BucketedShards(ShardLayout):
    name = "bucketed"
    format = "sibscan-ngram-index-v3"

    def write(self, folder, j, lo, hi, hashes, tags):
        first, n_buckets = bucket_span(lo, hi)
        counts, packed = bucket_pack(hashes, tags, first, n_buckets)
        name, table = f"shard-{j:05d}.npy", f"shard-{j:05d}.bkt.npy"
        save_npy(folder / table, counts)
        save_npy(folder / name, packed)
        return _entry(lo, hi, len(packed), file=name, buckets=table)

    def files(self, shard):
        return [shard["file"], shard["buckets"]]

    def _open(self, folder, shard):
        counts = np.load(folder / shard["buckets"])
        return counts, np.load(folder / shard["file"],
                               mmap_mode="r"), bucket_span(int(shard["lo"]), int(shard["hi"]))[0]

    def lookup(self, folder, shard, queries):
        counts, packed, first = self._open(folder, shard)
        return bucket_lookup(counts, packed, first, queries)

    def read(self, folder, shard):
        counts, packed, first = self._open(folder, shard)
        return bucket_unpack(counts, packed, first)


class FlatShards(ShardLayout):
    name = "flat"
    format = "sibscan-ngram-index-v2"

    def write(self, folder, j, lo, hi, hashes, tags):
        name, tag_name = f"shard-{j:05d}.npy", f"shard-{j:05d}.tag.npy"
        save_npy(folder / tag_name, np.asarray(tags, np.uint16))
        save_npy(folder / name, np.asarray(hashes, np.uint64))
        return _entry(lo, hi, len(hashes), file=name, tags=tag_name)

    def files(self, shard):
        return [shard["file"], shard["tags"]]

    def lookup(self, folder, shard, queries):
        return sorted_lookup(np.load(folder / shard["file"], mmap_mode="r"),
                             np.load(folder / shard["tags"], mmap_mode="r"), queries)

    def read(self, folder, shard):
        return np.load(folder / shard["file"]), np.load(folder / shard["tags"])


LAYOUTS: Dict[str, ShardLayout] = {x.name: x for x in (BucketedShards(), FlatShards())}
DEFAULT_LAYOUT = "bucketed"


def layout_named(name: str) -> ShardLayout:
    """The layout called ``name``; an unknown name lists the valid ones."""
    if name not in LAYOUTS:
        raise SibscanError(f"unknown index layout {name!r}; available: {', '.join(sorted(LAYOUTS))}")
    return LAYOUTS[name]


def layout_for_format(fmt, path) -> ShardLayout:
    """The layout that reads an index of format ``fmt``, or a one-line refusal naming the fix."""
    for layout in LAYOUTS.values():
        if layout.format == fmt:
            return layout
    readable = ", ".join(sorted(x.format for x in LAYOUTS.values()))
    raise CompatibilityError(f"{path}: index format {fmt!r} is not readable by this sibscan (readable: {readable}); "
                             "rebuild it: build_index(..., rebuild=True), or delete the folder and rerun "
                             "sibscan contamination")
