"""``sibscan check``: a CI gate on a scan's sibling rate (exit 1 when a limit is exceeded, 3 when the labels fall short)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..options import CUTOFF_PANEL
from ._common import Command, flag, user_errors


def register(app: typer.Typer) -> None:
    @app.command("check", cls=Command)
    @user_errors
    def check(
        scan_dir: Path = typer.Argument(..., help="Scan directory written by 'sibscan scan'."),
        max_rate: Optional[float] = typer.Option(None, "--max-rate", help="Largest allowed share of test items with a training sibling (0.01 = 1 %; default: no limit)."),
        max_exact: Optional[float] = typer.Option(None, "--max-exact", help="Largest allowed share of test items with an exact training twin (default: no limit)."),
        cutoff: Optional[float] = typer.Option(None, "--cutoff", rich_help_panel=CUTOFF_PANEL, help="Override the cutoff on the deciding score (default: the calibration's, else the scan's)."),
        calibration: Optional[Path] = typer.Option(None, "--calibration", rich_help_panel=CUTOFF_PANEL, help="Calibration directory to take the cutoff from (default: SCAN_DIR/calibration once it holds a fitted cutoff)."),
        force: bool = flag("--force", help="Apply a calibration made for another dataset/encoder anyway.", panel=CUTOFF_PANEL),
        require: Optional[str] = typer.Option(
            None, "--require", show_default=False,
            help="Audit checks that must have passed in the scan's recorded audit (sibscan audit --scan), "
                 "comma-separated: nan-free, not-targets, init-window, near-perfect-share, denominator, val-split, "
                 "selection (default: none)."),
        as_json: bool = flag("--json", help="Print the result as JSON (with the report's 'headline' object)."),
    ) -> None:
        """Gate CI on a scan: exit 1 when a sibling rate is over its limit or a required audit check failed.

        Exit 0 when the rates are within their limits; otherwise exit 1 with a one-paragraph reason
        and the first offending pairs. Exit 3, with a message starting "NEEDS LABELS:", when --max-rate
        is within its limit but the rate comes from a calibration whose labels do not support its
        cutoff yet (headline state needs_labels): label more pairs with 'sibscan calibrate SCAN_DIR',
        or gate on a cutoff given by hand (--cutoff X).
        """
        from ..check import check as run_check

        names = [n for n in (require or "").split(",") if n.strip()]
        result = run_check(scan_dir, max_rate, max_exact, cutoff=cutoff, calibration=calibration, force=force,
                           require=names)
        if as_json:
            from ..atomic import dumps_json

            typer.echo(dumps_json(result.to_dict()))
        else:
            typer.echo(result.message, err=not result.passed)
        raise typer.Exit(result.exit_code)
