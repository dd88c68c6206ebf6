"""Reading a scan directory's files: what a truncated or garbled one raises, and the one-line
refusal that names the file, why, and what to do (re-run the scan, or delete the file and re-run).
Shared by :mod:`sibscan.scandir` and :mod:`sibscan.neighbourtable`.
"""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from .errors import SibscanError

#: what reading a truncated or garbled .json/.npz/.npy/.jsonl raises
_READ_ERRORS = (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile, zlib.error)
_RERUN = "re-run the same 'sibscan scan' command (it rewrites it)"
_DELETE_RERUN = "delete it and re-run the same 'sibscan scan' command (it is computed again)"


def _corrupt(path: Path, exc: BaseException, fix: str) -> SibscanError:
    """The one-line refusal of a scan file that cannot be read: which file, why, what to do."""
    why = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return SibscanError(f"{path} is corrupt or truncated ({why}); {fix}")
