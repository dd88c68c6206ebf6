"""Write report.json / report.md / report.html / flagged.csv, each rendered from the same report dict."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, Optional

from ..atomic import write_json, write_text
from ..errors import SibscanError
from ..store.scandir import ScanDir
from .compute import build_report
from ..options import REPORT_FORMATS as FORMATS
from .html import render_html
from .items import flagged_csv
from .markdown import render_markdown

__all__ = ["write_reports"]


def write_reports(scan_dir, formats: Iterable[str] = FORMATS, *, out: Optional[str | Path] = None,
                  report: Optional[dict] = None, absolute_paths: bool = False, **build_kwargs) -> Dict[str, Path]:
    """Build the report of ``scan_dir`` (or use ``report``) and write ``report.<fmt>`` (``flagged.csv``) atomically.

    Parameters
    ----------
    scan_dir : str or Path
        The scan directory.
    formats : iterable of {"json", "md", "html", "csv"}
    out : str or Path, optional
        Folder for the files (default: the scan directory).
    report : dict, optional
        An already built report (``build_kwargs`` must then be empty).
    absolute_paths : bool
        Keep absolute paths in report.html (default: relative to the input folders, so a shared
        report does not show this machine's layout).
    **build_kwargs
        Passed to :func:`sibscan.report.build_report` (predictions, correct, cutoff, calibration, force).

    Returns
    -------
    dict
        Format -> written path.
    """
    formats = [f.strip().lower() for f in formats if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise SibscanError(f"unknown report format {', '.join(bad) or '(none)'!s}; available: {', '.join(FORMATS)}")
    if report is None:
        report = build_report(scan_dir, **build_kwargs)
    elif build_kwargs:
        raise TypeError(f"build options {sorted(build_kwargs)} given together with a built report")
    folder = Path(out) if out is not None else Path(scan_dir)
    written: Dict[str, Path] = {}
    if "json" in formats:
        written["json"] = write_json(folder / "report.json", report)
    if "md" in formats:
        written["md"] = write_text(folder / "report.md", render_markdown(report))
    if "csv" in formats:
        written["csv"] = write_text(folder / "flagged.csv", flagged_csv(report["flagged"]))
    if "html" in formats:
        scan = ScanDir(scan_dir)
        written["html"] = write_text(folder / "report.html",
                                     render_html(report, scan.items("test"), scan.items("train"),
                                                                            absolute_paths=absolute_paths))
    return written
