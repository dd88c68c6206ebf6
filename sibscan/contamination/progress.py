"""Progress for long contamination work: :mod:`sibscan.progress`, the one module that decides how
progress is shown (a bar on a terminal, a timed line off one, nothing with --quiet)."""
from __future__ import annotations

from typing import Optional

from ..progress import Bar

__all__ = ["Progress"]


class Progress(Bar):
    """Count units of work done (``desc`` first, as this package's callers give it).

    Parameters
    ----------
    desc : str
        What is being counted ("index: documents").
    total : int, optional
    enabled : bool
        False: silent.
    unit : str
    """

    def __init__(self, desc: str, total: Optional[int] = None, enabled: bool = True, unit: str = "it"):
        super().__init__(total, desc, unit, enabled=enabled)
