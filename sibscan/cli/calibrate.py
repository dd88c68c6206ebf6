"""``sibscan calibrate SCAN_DIR``: label a sample of pairs and fit the cutoff."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._common import Command, flag, user_errors


def register(app: typer.Typer) -> None:
    @app.command("calibrate", cls=Command)
    @user_errors
    def calibrate_cmd(
        scan_dir: Path = typer.Argument(..., help="A scan directory written by 'sibscan scan'."),
        ui: str = typer.Option("web", "--ui", help="How to label: web (a local page), terminal, or none (fit from the labels there are)."),
        labels: Optional[Path] = typer.Option(None, "--labels", help="Import labels made elsewhere (labels.jsonl form) before fitting (default: none)."),
        n_pairs: int = typer.Option(60, "--n-pairs", help="Nearest-neighbour pairs to label; raise it to extend an earlier draw."),
        seed: int = typer.Option(0, "--seed", help="Seed of the pair draw and the bootstrap."),
        target_precision: Optional[float] = typer.Option(None, "--target-precision", help="Cutoff at the lowest score reaching this precision (default: where P(same) = 0.5)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Calibration directory (default: SCAN_DIR/calibration)."),
        force: bool = flag("--force", help="Use labels made under another encoder, verifier or dataset anyway."),
        port: int = typer.Option(0, "--port", help="Port of the labelling page (0 = a free one)."),
        no_browser: bool = flag("--no-browser", help="Print the page's URL instead of opening a browser."),
    ) -> None:
        """Label a sample of nearest-neighbour pairs (same / different / skip) and fit the similarity cutoff.

        Labels go to CALIBRATION_DIR/labels.jsonl as they are given (re-running continues where it
        stopped); the fitted cutoff, its interval and the estimated sibling rate go to cutoff.json.
        """
        from sibscan.calibration import calibrate, describe
        from sibscan.progress import message

        cal = calibrate(
            scan_dir, calibration_dir=out, labels=labels, ui=ui, n_pairs=n_pairs, seed=seed,
            target_precision=target_precision, force=force, port=port, open_browser=not no_browser,
            echo=message,
        )
        for line in describe(cal):
            typer.echo(line)
