"""``sibscan check``: a CI gate on a scan's sibling rate (exit 1 when a limit is exceeded, 3 when the labels fall short)."""
from __future__ import annotations

from pathlib import Path

import typer

from ..options import CutoffOptions
from ._common import Command, user_errors
from ._flags import CheckOptions
from ._options import with_options
from ..atomic import dumps_json


def register(app: typer.Typer) -> None:
    @app.command("check", cls=Command)
    @user_errors
    @with_options((CheckOptions, {}), (CutoffOptions, {}), spread=True)
    def check(
        scan_dir: Path = typer.Argument(..., help="Scan directory written by 'sibscan scan'."),
        max_rate=None, max_exact=None, cutoff=None, calibration=None, force=False, require=None, as_json=False,
    ) -> None:
        """Gate CI on a scan: exit 1 when a sibling rate is over its limit or a required audit check failed.

        Exit 0 when the rates are within their limits; otherwise exit 1 with a one-paragraph reason
        and the first offending pairs. Exit 3, with a message starting "NEEDS LABELS:", when --max-rate
        is within its limit but the rate comes from a calibration whose labels do not support its
        cutoff yet (headline state needs_labels): label more pairs with 'sibscan calibrate SCAN_DIR',
        or gate on a cutoff given by hand (--cutoff X).
        """
        from ..check import check as run_check

        CutoffOptions(cutoff, calibration, force).check()

        names = [n for n in (require or "").split(",") if n.strip()]
        result = run_check(scan_dir, max_rate, max_exact, cutoff=cutoff, calibration=calibration, force=force,
                           require=names)
        if as_json:
            typer.echo(dumps_json(result.to_dict()))
        else:
            typer.echo(result.message, err=not result.passed)
        raise typer.Exit(result.exit_code)
