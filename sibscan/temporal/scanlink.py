"""Attach a temporal-test result to a scan, so ``sibscan report`` shows it beside the sibling rate.

The result goes to ``SCAN_DIR/audits/temporal.json`` as an audit section (see
:mod:`sibscan.report.audits`: the section's data, its Markdown and HTML, and the full result), and
only when the series it was computed on are the scan's own: each split's content fingerprint,
computed with the scan's rounding options, must equal the one in the scan's manifest (a result
for other data would qualify the wrong scores).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from ..atomic import write_json
from ..errors import CompatibilityError, SibscanError
from ..items import Items
from ..fingerprint import dataset_fingerprint
from ..report.audits import AUDITS_DIR
from ..store.scandir import ScanDir
from .section import report_section, section_html, section_markdown

__all__ = ["attach_to_scan", "read_scan_temporal", "section_path"]


def section_path(scan_dir: str | Path) -> Path:
    return Path(scan_dir) / AUDITS_DIR / "temporal.json"


def attach_to_scan(result: Dict[str, Any], scan_dir: str | Path, train: Items, test: Items) -> Path:
    """Write ``result`` (a :meth:`TemporalResult.to_dict`) into a scan directory after checking the data.

    Raises
    ------
    SibscanError
        Not a scan directory.
    CompatibilityError
        The scan was made from other train or test data.
    """
    sd = ScanDir(scan_dir)
    if not sd.exists():
        raise SibscanError(f"{scan_dir}: not a scan directory (no manifest); run 'sibscan scan' first or drop --scan")
    manifest = sd.manifest()
    params = manifest.get("parameters", {})
    decimals, znorm = params.get("decimals", 6), bool(params.get("znorm", False))
    for items in (train, test):
        want = manifest.get("inputs", {}).get(items.split, {}).get("fingerprint")
        got = dataset_fingerprint(items, decimals=decimals, znorm=znorm)
        if want != got:
            raise CompatibilityError(
                f"{items.source or items.split} is not the {items.split} split scanned in {scan_dir} "
                f"(content fingerprint {got[:12]}… vs {str(want)[:12]}…); run the test on the scan's own files")

    sec = report_section(result)
    return write_json(section_path(sd.path), {"title": "Temporal information", "data": sec,
                                              "markdown": section_markdown(sec), "html": section_html(sec),
                                              "result": result})


def read_scan_temporal(scan_dir: str | Path) -> Optional[Dict[str, Any]]:
    """The full temporal result attached to a scan, or None when the test has not been run on it."""
    import json

    path = section_path(scan_dir)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))["result"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SibscanError(f"{path}: cannot read ({exc}); re-run 'sibscan temporal ... --scan {scan_dir}'") from None
