"""Progress for long temporal runs: :mod:`sibscan.progress`, the one module that decides how progress
is shown (a bar on a terminal, a timed line off one, nothing with --quiet); ``update(n, note)`` shows
the latest result beside the count."""
from __future__ import annotations

from ..progress import Bar

__all__ = ["Progress"]


class Progress(Bar):
    """Count finished fits (``total`` first, as this package's callers give it).

    Parameters
    ----------
    total : int
    desc : str
    enabled : bool
        False: silent.
    """

    def __init__(self, total: int, desc: str, *, enabled: bool = True) -> None:
        super().__init__(int(total), desc, "fit", enabled=enabled)
