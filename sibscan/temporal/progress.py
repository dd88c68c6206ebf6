"""Progress for long temporal runs: a tqdm bar on a terminal, periodic log lines otherwise."""
from __future__ import annotations

import logging
import sys
import time
from typing import Optional

__all__ = ["Progress"]

log = logging.getLogger("sibscan.temporal")


class Progress:
    """Count finished steps; draw a bar on a terminal, else log a line at most every ``every`` seconds.

    Parameters
    ----------
    total : int
    desc : str
    enabled : bool
        False: silent.
    every : float
        Seconds between log lines when stderr is not a terminal.
    """

    def __init__(self, total: int, desc: str, *, enabled: bool = True, every: float = 30.0,
                 stream=None) -> None:
        self.total, self.desc, self.every = int(total), desc, every
        self.done = 0
        self._t0 = self._last = time.perf_counter()
        self._bar = None
        self._enabled = enabled
        stream = stream if stream is not None else sys.stderr
        if enabled and getattr(stream, "isatty", lambda: False)():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=desc, unit="fit", file=stream, leave=False)

    def update(self, n: int = 1, note: Optional[str] = None) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            return
        now = time.perf_counter()
        if self._enabled and (now - self._last >= self.every or self.done == self.total):
            self._last = now
            log.info("%s: %d/%d done (%.0f s)%s", self.desc, self.done, self.total, now - self._t0,
                     f" — {note}" if note else "")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
