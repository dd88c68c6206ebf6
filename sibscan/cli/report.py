"""``sibscan report SCAN_DIR``: write report.json / report.md / report.html / flagged.csv for a finished scan."""
from __future__ import annotations

from pathlib import Path

import typer

from ..options import CutoffOptions
from ._common import Command, user_errors
from ._flags import ReportOptions
from ._options import with_options
from ..atomic import dumps_json


def register(app: typer.Typer) -> None:
    @app.command("report", cls=Command)
    @user_errors
    @with_options((ReportOptions, {}), (CutoffOptions, {}), spread=True)
    def report(
        scan_dir: Path = typer.Argument(..., help="Scan directory written by 'sibscan scan'."),
        predictions=None, format=None, cutoff=None, calibration=None, force=False, out=None,  # noqa: A002
        absolute_paths=False, as_json=False,
    ) -> None:
        """Write report.json, report.md, report.html and flagged.csv for a finished scan.

        Sibling rate (exact and near, both directions, per class), accuracy on sibling rows vs the
        rest (with --predictions; its label column, if any, is the truth where the scan's test items
        have none), the cutoff sweep, the closest pairs, the label conflicts, and every test item
        judged a sibling with its partner and why (flagged.csv).
        """
        CutoffOptions(cutoff, calibration, force).check()
        from ..report import build_report, sentence_with_accuracy, write_reports
        rep = build_report(scan_dir, predictions=predictions, cutoff=cutoff, calibration=calibration, force=force)
        written = write_reports(scan_dir, format.split(","), out=out, report=rep, absolute_paths=absolute_paths)
        if as_json:
            typer.echo(dumps_json({"headline": rep["headline"], "sentence": sentence_with_accuracy(rep), "n_flagged": len(rep["flagged"]),
                                   "written": {fmt: str(path) for fmt, path in written.items()}}))
            return
        typer.echo(sentence_with_accuracy(rep) + ".")
        if rep["headline"].get("note"):
            typer.echo(f"note: {rep['headline']['note']}")
        if rep.get("accuracy"):
            # the split is what --predictions was given for: show it here, not only inside the files
            typer.echo(_accuracy_text(rep))
        for fmt, path in written.items():
            typer.echo(f"wrote {path}")


def _accuracy_text(rep: dict) -> str:
    """The accuracy split as aligned terminal lines, from the rows the Markdown report tabulates; without a
    cutoff only the exact twins are split off, and the lines say the near copies were not assessed."""
    from ..report.markdown import accuracy_rows
    _head, rows = accuracy_rows(rep)
    name_w = max(len(r[0]) for r in rows)
    n_w = max(len(r[2]) for r in rows)
    lines = ["accuracy:"]
    for name, acc, n, ci in rows:
        detail = f"  n={n:>{n_w}}" if n else ""
        detail += f"  95 % CI {ci}" if ci else ""
        lines.append(f"  {name:<{name_w}}  {acc:>7}{detail}")
    if not rep["accuracy"].get("siblings"):
        lines.append("  near copies: not assessed (no cutoff), so the rows that are not exact twins may still hold some")
    return "\n".join(lines)
