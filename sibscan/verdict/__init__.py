"""The sibling decision of a scan, in one place: :class:`Verdict`, a scan at a cutoff.

Every output that states which test items are siblings and at what rate (the scan summary, the
reports, ``check``, ``split``, the sibling groups, calibrate's summary, the audits' scan link,
``sibscan.Scan``) opens one :class:`Verdict` and reads it; none resolves a cutoff, reads labels or
recounts the flags on its own.
"""
from __future__ import annotations

from .verdict import Verdict

__all__ = ["Verdict"]
