"""Progress for long contamination work: a tqdm bar on a terminal, a log line every few seconds
otherwise (CI logs, nohup, notebooks), nothing when switched off."""
from __future__ import annotations

import sys
import time
from typing import Optional

__all__ = ["Progress"]


class Progress:
    """Count units of work done.

    Parameters
    ----------
    desc : str
        What is being counted ("index: documents").
    total : int, optional
    enabled : bool
        False: silent.
    every : float
        Seconds between log lines when stderr is not a terminal.
    """

    def __init__(self, desc: str, total: Optional[int] = None, enabled: bool = True, unit: str = "it",
                 every: float = 10.0):
        self.desc, self.total, self.unit, self.every = desc, total, unit, every
        self.done = 0
        self._bar = None
        self._enabled = enabled
        self._t0 = self._last = time.monotonic()
        if enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False)

    def update(self, k: int = 1) -> None:
        self.done += k
        if self._bar is not None:
            self._bar.update(k)
            return
        now = time.monotonic()
        if self._enabled and now - self._last >= self.every:
            self._last = now
            of = f"/{self.total:,}" if self.total is not None else ""
            sys.stderr.write(f"{self.desc}: {self.done:,}{of} {self.unit} ({now - self._t0:.0f} s)\n")
            sys.stderr.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
