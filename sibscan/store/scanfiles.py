"""Reading a scan directory's files: what a truncated or garbled one raises, and the one-line
refusal that names the file, why, and what to do (re-run the scan, or delete the file and re-run).
Shared by :mod:`sibscan.store.scandir` and :mod:`sibscan.store.neighbourtable`.
"""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from ..errors import SibscanError

__all__ = ["DELETE_RERUN", "READ_ERRORS", "RERUN", "corrupt"]

#: what reading a truncated or garbled .json/.npz/.npy/.jsonl raises
READ_ERRORS = (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile, zlib.error)
RERUN = "re-run the same 'sibscan scan' command (it rewrites it)"
DELETE_RERUN = "delete it and re-run the same 'sibscan scan' command (it is computed again)"


def corrupt(path: Path, exc: BaseException, fix: str) -> SibscanError:
    """The one-line refusal of a scan file that cannot be read: which file, why, what to do."""
    why = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return SibscanError(f"{path} is corrupt or truncated ({why}); {fix}")
