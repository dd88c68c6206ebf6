"""An exclusive lock on a directory that sibscan writes (a scan, an index): ``DIR/.sibscan.lock``.

Two processes writing one directory at once would interleave their files (one's neighbours table
with the other's embeddings), and both would exit 0.  The lock is an advisory ``flock`` on a lock
file that holds the owner's pid, host, start time and command; a second process is refused with
one line naming the owner.  The kernel drops a ``flock`` when its process dies, so a lock file left
behind by ``kill -9`` does not block the next run.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Optional

from .errors import SibscanError

__all__ = ["LOCK_NAME", "DirLock"]

#: the lock file's name inside the locked directory (scans and indexes leave it out of their listings)
LOCK_NAME = ".sibscan.lock"

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: an exclusive create instead of flock
    fcntl = None  # type: ignore[assignment]


class DirLock:
    """Hold ``directory/.sibscan.lock`` exclusively while writing ``directory`` (a context manager).

    Parameters
    ----------
    directory : path
        Created (with its parents) when missing.
    what : str
        What is being written, for the refusal ("scan", "index").
    flag : str
        The option that chose the directory, for the refusal ("--out").
    """

    def __init__(self, directory: str | os.PathLike, what: str = "scan", flag: str = "--out"):
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self.what = what
        self.flag = flag
        self._fd: Optional[int] = None

    def _refuse(self) -> SibscanError:
        try:
            owner = self.path.read_text(encoding="utf-8").strip() or "unknown"
        except OSError:
            owner = "unknown"
        return SibscanError(
            f"{self.directory} is being written by another sibscan process ({owner}); wait for it to finish, "
            f"or give this {self.what} another {self.flag}"
        )

    def acquire(self) -> "DirLock":
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(20):  # the owner may unlink the file between our open and our lock: try again
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | (0 if fcntl else os.O_EXCL), 0o666)
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    raise self._refuse() from None
                try:
                    same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
                except FileNotFoundError:
                    same = False
                if not same:
                    os.close(fd)
                    continue
            self._fd = fd
            command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python"
            started = time.strftime("%Y-%m-%d %H:%M:%S")
            owner = f"pid {os.getpid()} on {socket.gethostname()}, started {started}: {command}"[:500]
            os.ftruncate(fd, 0)
            os.write(fd, (owner + "\n").encode("utf-8", "replace"))
            return self
        raise self._refuse()  # pragma: no cover - twenty lost races in a row

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:  # pragma: no cover - removed by hand
            pass
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> "DirLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
