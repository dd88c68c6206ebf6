"""Atomic file writes: write to a temporary name in the same folder, then rename.

A reader never sees a half-written file, and an interrupted run leaves either the old file or the
new one.  Use these for every output file of a scan, cache, index or calibration.  The files get the
permissions a plain ``open()`` would give them (``0o666`` less the umask), not the ``0o600`` of a
temporary file.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .errors import SibscanError

__all__ = ["atomic_path", "write_bytes", "write_text", "write_json", "save_npy", "save_npz", "append_jsonl",
           "check_writable_dir", "new_file_mode"]


def check_writable_dir(path: str | os.PathLike, flag: str) -> Path:
    """Refuse, before any work, a directory option that cannot be written: an existing file, a
    folder (or the nearest existing parent of a missing one) without write permission.

    Raises
    ------
    SibscanError
        Naming the option, the path and what to do.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise SibscanError(f"{flag} {path} is a file, not a folder; give a folder (it is created when missing)")
    probe = path
    while not probe.exists():  # the folder that the missing ones would be created in
        probe = probe.parent
    if not probe.is_dir():
        raise SibscanError(f"{flag} {path}: {probe} is a file, so no folder can be made there; choose another {flag}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise SibscanError(f"{flag} {path}: cannot write into {probe} (permission denied); choose another {flag}")
    return path


def new_file_mode() -> int:
    """``0o666`` less the process umask: the mode ``open()`` gives a new file."""
    try:  # Linux states the umask without changing it (os.umask would, for a moment, in every thread)
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + suffix, dir=path.parent)
    os.fchmod(fd, new_file_mode())  # mkstemp makes 0o600; outputs are shared like any other file
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:  # a write/fsync error names no file: name the output
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def _json_default(obj: Any):
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


#: lists of at least this many ints are written by one ``str.join``: with an indent, json's encoder is
#: pure Python, one call per element (the 581,000 twin row indices of ``sibscan twins --json`` on 1M + 1M
#: rows took 0.4 s through it, 0.05 s joined)
_INT_RUN = 64


class _IntRun:
    """A long list of ints, written by :func:`dumps_json` in one piece at nesting ``depth``."""

    __slots__ = ("values", "depth", "index")

    def __init__(self, values: list, depth: int, index: int):
        self.values, self.depth, self.index = values, depth, index


def _lift_int_runs(obj: Any, depth: int, runs: list) -> Any:
    """``obj`` with every long list (or 1-D integer array) of plain ints replaced by an :class:`_IntRun`
    appended to ``runs``; dicts and lists on the way are shallow copies, everything else as it is."""
    if isinstance(obj, dict):
        return {k: _lift_int_runs(v, depth + 1, runs) for k, v in obj.items()}
    if isinstance(obj, np.ndarray) and obj.ndim == 1 and obj.dtype.kind in "iu" and len(obj) >= _INT_RUN:
        obj = obj.tolist()
    if isinstance(obj, (list, tuple)):
        if len(obj) >= _INT_RUN and set(map(type, obj)) == {int}:  # bool is a subclass: written as true/false
            runs.append(_IntRun(obj, depth, len(runs)))
            return runs[-1]
        return [_lift_int_runs(v, depth + 1, runs) for v in obj]
    return obj


def dumps_json(obj: Any, indent: int | None = 2) -> str:
    """``obj`` as strict JSON text (numpy scalars and arrays written, non-finite numpy floats as null,
    a non-finite Python float refused); with ``indent``, byte for byte what ``json.dumps`` writes,
    long lists of ints joined in one piece instead of encoded one element at a time."""
    if indent is None:  # json's C encoder: already fast
        return json.dumps(obj, indent=None, default=_json_default, ensure_ascii=False, allow_nan=False)
    runs: list = []
    lifted = _lift_int_runs(obj, 0, runs)
    if not runs:
        return json.dumps(obj, indent=indent, default=_json_default, ensure_ascii=False, allow_nan=False)
    token = f"\x00sibscan-int-run-{os.urandom(8).hex()}-"  # cannot occur in the caller's data

    def default(o: Any):
        return f"{token}{o.index}" if isinstance(o, _IntRun) else _json_default(o)

    text = json.dumps(lifted, indent=indent, default=default, ensure_ascii=False, allow_nan=False)
    pad = " " * indent if isinstance(indent, int) else indent
    quoted = json.dumps(token, ensure_ascii=False)[:-1]  # the opening quote and the token, as encoded
    pieces = text.split(quoted)
    out = [pieces[0]]
    for piece in pieces[1:]:
        number, rest = piece.split('"', 1)
        run = runs[int(number)]
        inner = "\n" + pad * (run.depth + 1)
        out.append("[" + inner + ("," + inner).join(map(str, run.values)) + "\n" + pad * run.depth + "]" + rest)
    return "".join(out)


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return write_text(path, dumps_json(obj) + "\n")


class _Stream:
    """A file seen by numpy as a plain stream: ``write_array`` then writes it in chunks with ``write``.

    ``np.save`` into a real file goes through ``ndarray.tofile``, whose short write on a full disk
    raises an ``OSError`` with no errno and no file name ("3686400 requested and 2449344 written");
    the file's own ``write`` raises ENOSPC, which the CLI turns into its "free some space" line.
    """

    def __init__(self, fh):
        self.write = fh.write


def save_npy(path: str | os.PathLike, array: np.ndarray) -> Path:
    """``np.save`` into ``path`` atomically (the same bytes); a full disk raises ENOSPC naming ``path``."""
    with atomic_path(path, suffix=".npy") as tmp:
        with open(tmp, "wb") as fh:
            np.lib.format.write_array(_Stream(fh), np.asanyarray(array), allow_pickle=False)
    return Path(path)


def save_npz(path: str | os.PathLike, **arrays: np.ndarray) -> Path:
    """``np.savez`` into ``path`` atomically; an array on disk (:class:`sibscan.store.diskarray.NpyArray`) is
    copied in a block at a time, never read whole."""
    import zipfile

    with atomic_path(path, suffix=".npz") as tmp:
        with open(tmp, "wb") as fh:  # straight into the file: an in-memory buffer held the archive twice
            with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:  # what np.savez writes
                for name, array in arrays.items():
                    with zf.open(f"{name}.npy", "w", force_zip64=True) as out:
                        if hasattr(array, "iter_blocks"):
                            header = {"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": False,
                                      "shape": tuple(array.shape)}
                            np.lib.format.write_array_header_1_0(out, header)
                            for _, block in array.iter_blocks(max(1, (16 << 20) // max(1, array.row_bytes))):
                                out.write(memoryview(np.ascontiguousarray(block)).cast("B"))
                        else:
                            np.lib.format.write_array(out, np.asanyarray(array), allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def append_jsonl(path: str | os.PathLike, record: dict) -> None:
    """Append one JSON record as a single line and fsync it (append-only logs such as labels)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = dumps_json(record, indent=None) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
