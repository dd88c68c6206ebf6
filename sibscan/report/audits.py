"""Sections that audits (``sibscan temporal`` …) leave in a scan directory for its report.

An audit sits above the report and the report does not import it: the audit writes
``SCAN_DIR/audits/NAME.json`` = ``{"title", "data", "markdown", "html"}`` (its section already
rendered), and the report copies ``data`` into ``report.json``'s ``audits`` and appends the
Markdown and HTML to its own, in name order.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict

from ..errors import SibscanError

__all__ = ["AUDITS_DIR", "audit_sections"]

AUDITS_DIR = "audits"
_KEYS = ("title", "data", "markdown", "html")


def audit_sections(scan_path: str | Path) -> Dict[str, dict]:
    """``{name: {title, data, markdown, html}}`` for every audit section in the scan, sorted by name."""
    folder = Path(scan_path) / AUDITS_DIR
    out: Dict[str, dict] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            sec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SibscanError(f"{path}: cannot read ({exc}); "
                               "re-run the audit that wrote it or delete the file") from None
        if not isinstance(sec, dict) or any(k not in sec for k in _KEYS):
            raise SibscanError(f"{path}: an audit section needs {', '.join(_KEYS)}; re-run the audit that wrote it")
        out[path.stem] = {k: sec[k] for k in _KEYS}
    return out
