"""Table rows streamed to disk while they are parsed: the values and their exact fingerprints.

A scan reads its train table by blocks and candidate rows only (:class:`~sibscan.store.diskarray.NpyArray`),
so the table need never be whole in memory.  :class:`RowSpill` is the sink the delimited loader
(:func:`sibscan.loaders.tables.load_table`, CSV/TSV) writes each parsed chunk into: the chunk's
float64 values go to one ``.npy`` file and its fingerprints — computed from the chunk as
:func:`sibscan.fingerprint.fingerprint` does, a row's fingerprint depending on that row alone — to
another.  Memory is one chunk, not the 128 + 16 bytes a row (16 columns) the whole table held
before it was moved to disk.  The files are byte for byte those ``np.save`` writes of the arrays the
whole load gives.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np

from .diskarray import NpyArray, NpyWriter
from ..kernels.rowhash import row_fingerprints

__all__ = ["RowSpill"]


class RowSpill:
    """Write a table's rows, chunk by chunk, to ``values_path`` and their fingerprints to ``fp_path``.

    The loader calls :meth:`append` per chunk, then :meth:`close` (which returns the values) or, on an
    error, :meth:`abort`.  Both paths are added to ``spilled`` before their first byte is written
    (the caller removes them when it is done, however it ends).

    Parameters
    ----------
    values_path, fp_path : Path
    decimals : int
    znorm : bool
        The fingerprint's rounding (as :func:`sibscan.fingerprint.fingerprint`).
    spilled : list of Path
    """

    def __init__(self, values_path: Path, fp_path: Path, decimals: int, znorm: bool, spilled: List[Path]):
        self.paths = (Path(values_path), Path(fp_path))
        self.decimals, self.znorm, self.spilled = decimals, znorm, spilled
        self._writers: Optional[tuple] = None
        #: the fingerprints, ndarray-like of shape (n, 2), uint64, once :meth:`close` returned
        self.fingerprints: Optional[NpyArray] = None

    def append(self, values: np.ndarray) -> None:
        """One chunk: ndarray of shape (m, d), float64."""
        if self._writers is None:
            self.spilled.extend(self.paths)
            self._writers = (NpyWriter(self.paths[0], np.float64, values.shape[1:]),
                             NpyWriter(self.paths[1], np.uint64, (2,)))
        self._writers[0].append(values)
        if values.shape[1]:  # no numeric column: the loader refuses the table when it is closed
            self._writers[1].append(row_fingerprints(values, decimals=self.decimals, znorm=self.znorm))

    def close(self) -> NpyArray:
        """Finish both files; returns the values (the fingerprints are in :attr:`fingerprints`)."""
        values, self.fingerprints = (w.close() for w in self._writers)
        return values

    def abort(self) -> None:
        """Drop both unfinished files."""
        for writer in self._writers or ():
            writer.abort()
