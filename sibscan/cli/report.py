"""``sibscan report``: write report.json / report.md / report.html for a finished scan."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._common import user_errors


def register(app: typer.Typer) -> None:
    @app.command("report")
    @user_errors
    def report(
        scan_dir: Path = typer.Argument(..., help="Scan directory written by 'sibscan scan'."),
        predictions: Optional[Path] = typer.Option(None, "--predictions", "-p", help="CSV/JSONL with id, prediction[, label] per test item: adds the accuracy split."),
        format: str = typer.Option("json,md,html", "--format", "-f", help="Comma-separated formats: json, md, html."),
        cutoff: Optional[float] = typer.Option(None, "--cutoff", help="Override the cutoff on the deciding score."),
        calibration: Optional[Path] = typer.Option(None, "--calibration", help="Calibration directory to take the cutoff from."),
        force: bool = typer.Option(False, "--force", help="Apply a calibration made for another dataset/encoder anyway."),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="Folder for the report files (default: SCAN_DIR)."),
        absolute_paths: bool = typer.Option(False, "--absolute-paths", help="Keep absolute data paths in report.html (default: relative to the input folders)."),
    ) -> None:
        """Write report.json, report.md and report.html for a finished scan.

        Sibling rate (exact and near, both directions, per class), accuracy on sibling rows vs the
        rest (with --predictions), the cutoff sweep, the closest pairs and the label conflicts.
        """
        from ..report import build_report, headline, write_reports

        rep = build_report(scan_dir, predictions=predictions, cutoff=cutoff, calibration=calibration, force=force)
        written = write_reports(scan_dir, format.split(","), out=out, report=rep, absolute_paths=absolute_paths)
        typer.echo(headline(rep) + ".")
        for fmt, path in written.items():
            typer.echo(f"wrote {path}")
