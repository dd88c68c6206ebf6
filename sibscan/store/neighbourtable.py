"""The neighbours table in memory, column-wise: its columns and their types, filtering by direction
and rank, and saving it as ``neighbours.npz`` / reading it back and writing it as CSV.  Where it
sits in a scan directory, and what each column means: :mod:`sibscan.store.scandir`; written block by
block while a scan streams: :mod:`sibscan.store.neighbourfile`.
"""
from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from ..atomic import atomic_path, save_npz
from .diskarray import NpyStream
from .scanfiles import DELETE_RERUN, READ_ERRORS, corrupt

NEIGHBOUR_COLUMNS: Dict[str, np.dtype] = {
    "query_split": np.dtype("U5"),
    "query_id": np.dtype(object),
    "query_index": np.dtype(np.int64),
    "rank": np.dtype(np.int32),
    "embedding_rank": np.dtype(np.int32),
    "neighbour_split": np.dtype("U5"),
    "neighbour_id": np.dtype(object),
    "neighbour_index": np.dtype(np.int64),
    "similarity": np.dtype(np.float32),
    "verified": np.dtype(np.float32),
    "score": np.dtype(np.float32),
    "exact": np.dtype(bool),
    "detail": np.dtype(object),
    "view": np.dtype(object),
}
#: the member of ``neighbours.npz`` (beside the columns) naming what the table was computed from: the
#: digest :func:`sibscan.store.scandir.neighbours_source` recorded in the scan's manifest when it was written
SOURCE_MEMBER = "source"


@dataclass
class Neighbours:
    """The neighbours table, column-wise (its columns: see :mod:`sibscan.store.scandir`)."""

    columns: Dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = None
        for name, dtype in NEIGHBOUR_COLUMNS.items():
            col = self.columns.get(name)
            if col is None:
                if name == "verified":
                    col = np.full(0 if n is None else n, np.nan, dtype=np.float32)
                elif name == "score" and "similarity" in self.columns:
                    sim = np.asarray(self.columns["similarity"], np.float32)
                    ver = self.columns.get("verified")
                    col = sim.copy() if ver is None else np.where(np.isnan(ver), sim, ver).astype(np.float32)
                elif name == "embedding_rank" and "rank" in self.columns:
                    col = np.asarray(self.columns["rank"]).copy()  # unverified: the search's rank
                elif name in ("detail", "view"):
                    col = np.full(0 if n is None else n, "", dtype=object)
                else:
                    raise ValueError(f"neighbours table needs column {name!r}")
            col = np.asarray(col)
            if dtype == np.dtype(object):
                col = col.astype(str).astype(object)
            else:
                col = col.astype(dtype)
            if n is None:
                n = len(col)
            elif len(col) != n:
                raise ValueError(f"column {name!r} has {len(col)} rows, expected {n}")
            self.columns[name] = col

    def __len__(self) -> int:
        return len(self.columns["rank"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def mask(self, query_split: str, neighbour_split: str, rank: Optional[int] = None) -> np.ndarray:
        m = (self.columns["query_split"] == query_split) & (self.columns["neighbour_split"] == neighbour_split)
        if rank is not None:
            m &= self.columns["rank"] == rank
        return m

    def select(self, mask: np.ndarray) -> "Neighbours":
        """The rows ``mask`` (bool or indices) picks.  The columns were checked when this table was made,
        so the subset keeps them as they are: re-checking cast every id column to str and back per call
        (2.4M rows: ~0.25 s a select, about half of a report's time)."""
        out = object.__new__(Neighbours)
        out.columns = {k: v[mask] for k, v in self.columns.items()}
        return out

    def direction(self, query_split: str, neighbour_split: str) -> "Neighbours":
        return self.select(self.mask(query_split, neighbour_split))

    def top1(self, query_split: str = "test", neighbour_split: str = "train") -> "Neighbours":
        """Each query's nearest neighbour by the deciding ``score`` (ties: lower rank)."""
        sub = self.direction(query_split, neighbour_split)
        if len(sub) == 0:
            return sub
        return sub.select(sub.top1_rows())

    def top1_rows(self) -> np.ndarray:
        """Positions in this table of each query's nearest row by the deciding ``score`` (ties: lower rank),
        int64 of shape (n_queries,) in ``query_index`` order; the rows are taken as one direction (see
        :meth:`top1`, which picks the direction first)."""
        order = np.lexsort((self["rank"], -self["score"], self["query_index"]))
        q = self["query_index"][order]
        first = np.ones(len(q), bool)
        first[1:] = q[1:] != q[:-1]
        return order[first]

    @staticmethod
    def concat(parts: Iterable["Neighbours"]) -> "Neighbours":
        parts = [p for p in parts if p is not None]
        if not parts:
            return Neighbours.empty()
        return Neighbours({k: np.concatenate([p.columns[k] for p in parts]) for k in NEIGHBOUR_COLUMNS})

    @staticmethod
    def empty() -> "Neighbours":
        return Neighbours({k: np.zeros(0, dtype=d if d != np.dtype(object) else "U1") for k, d in NEIGHBOUR_COLUMNS.items()})

    def save(self, path: Path, source: Optional[str] = None) -> None:
        """Write the table to ``path`` (``.npz``); ``source``: the digest of what it was computed from,
        stored beside the columns (see :func:`table_source`)."""
        arrays = {}
        for k, v in self.columns.items():
            arrays[k] = v.astype(str) if v.dtype == object else v
        if source is not None:
            arrays[SOURCE_MEMBER] = np.array(source)
        save_npz(path, **arrays)

    @staticmethod
    def load(path: Path, skip: Iterable[Tuple[str, str]] = ()) -> "Neighbours":
        """Read a table :meth:`save` wrote; ``skip``: directions ``(query_split, neighbour_split)`` left
        out (read column by column, so their rows are never all held at once)."""
        skip = list(skip)
        try:
            with np.load(path, allow_pickle=False) as z:
                names = [k for k in z.files if k != SOURCE_MEMBER]
                if not skip:
                    return Neighbours({k: z[k] for k in names})
                qs, ns = z["query_split"], z["neighbour_split"]
                keep = np.ones(len(qs), bool)
                for q, n in skip:
                    keep &= ~((qs == q) & (ns == n))
                del qs, ns
                return Neighbours({k: z[k][keep] for k in names})
        except READ_ERRORS as exc:
            raise corrupt(Path(path), exc, DELETE_RERUN) from None

    @staticmethod
    def load_matching(path: Path, query_split: str, neighbour_split: str, column: str,
                      values: np.ndarray, block_rows: int = 1 << 16) -> "Neighbours":
        """The ``query_split -> neighbour_split`` rows of a saved table whose ``column`` is among ``values``.

        Streamed (:class:`sibscan.store.diskarray.NpyStream`): the rows are picked from the split columns and
        ``column`` ``block_rows`` rows at a time, then every column is read again a block at a time keeping
        only those rows, so what is held is a block of at most three columns plus the rows kept (reading
        each column whole first, as this did, peaked at ~256 MB for 46 rows of a 2M-row table, mostly its
        ``detail`` column; tests/test_pairdecision.py measures 3.0 MiB against 28.9 MiB on 120k rows).
        """
        want = np.unique(np.asarray(values).astype(str))
        step = max(1, int(block_rows))
        try:
            with zipfile.ZipFile(path) as zf:
                names = [n[:-len(".npy")] for n in zf.namelist() if n.endswith(".npy") and n != f"{SOURCE_MEMBER}.npy"]
                picked = []
                for a, (qs, ns, col) in column_blocks(zf, ("query_split", "neighbour_split", column), step):
                    m = (qs == query_split) & (ns == neighbour_split)
                    m[m] = np.isin(col[m], want)
                    picked.append(a + np.flatnonzero(m))
                rows = np.concatenate(picked) if picked else np.zeros(0, np.int64)
                if not len(rows):
                    return Neighbours.empty()
                out = {}
                for name in names:
                    parts = []
                    for a, (block,) in column_blocks(zf, (name,), step):
                        lo, hi = np.searchsorted(rows, [a, a + step])
                        parts.append(block[rows[lo:hi] - a])
                    out[name] = np.concatenate(parts)
                return Neighbours(out)
        except READ_ERRORS as exc:
            raise corrupt(Path(path), exc, DELETE_RERUN) from None

    def to_csv(self) -> str:
        """The table as CSV text (header + one line per row); NaN as an empty cell, bools as 0/1."""
        return "".join(self.iter_csv())

    def iter_csv(self, block: int = 65536) -> Iterator[str]:
        """:meth:`to_csv`'s text in pieces of ``block`` rows (the header first), so a writer holds one
        block's cells, not the whole table's (a cell is a Python string: ~60 bytes each).

        Column-wise within a block (no per-cell type dispatch), so a table of millions of rows takes seconds.
        """
        names = list(NEIGHBOUR_COLUMNS)
        yield ",".join(names) + "\n"
        for start in range(0, len(self), block):
            cells = [_csv_cells(self.columns[name][start:start + block]) for name in names]
            yield "\n".join(",".join(row) for row in zip(*cells)) + "\n"

    def write_csv(self, path: Path) -> None:
        """Write :meth:`to_csv`'s text to ``path`` atomically, block by block."""
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
            for piece in self.iter_csv():
                fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())


def table_source(path: Path) -> Optional[str]:
    """The digest of what a saved table was computed from (:data:`SOURCE_MEMBER`), or None for a table
    written without one (by an older sibscan, or by hand)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return str(z[SOURCE_MEMBER]) if SOURCE_MEMBER in z.files else None
    except READ_ERRORS as exc:
        raise corrupt(Path(path), exc, DELETE_RERUN) from None


def column_blocks(zf, names: Tuple[str, ...], step: int) -> Iterator[Tuple[int, List[np.ndarray]]]:
    """``(first row, [one block of each column in names])`` of an open ``neighbours.npz``, ``step`` rows
    at a time (the columns read side by side as streams)."""
    streams = [NpyStream(zf.open(f"{name}.npy")) for name in names]
    try:
        n = streams[0].rows
        if any(s.rows != n for s in streams):
            raise ValueError("the columns have different lengths")
        for a in range(0, n, step):
            yield a, [s.read(min(n, a + step) - a) for s in streams]
    finally:
        for s in streams:
            s.close()


def _csv_cells(col: np.ndarray) -> List[str]:
    """One column's cells as CSV text: floats with 6 decimals (NaN empty), bools 0/1."""
    if col.dtype.kind == "f":
        text = [f"{x:.6f}" for x in col.tolist()]
        if np.isnan(col).any():
            text = ["" if bad else t for t, bad in zip(text, np.isnan(col).tolist())]
        return text
    if col.dtype.kind == "b":
        return np.where(col, "1", "0").tolist()
    if col.dtype.kind in "iu":
        return col.astype(str).tolist()
    return [_csv_cell(str(x)) for x in col.tolist()]


def _csv_cell(text: str) -> str:
    """Quote a CSV cell the way the csv module does (only when it holds a comma, quote or newline)."""
    if "," in text or '"' in text or "\n" in text or "\r" in text:
        return '"' + text.replace('"', '""') + '"'
    return text
