"""``sibscan split``: sibling groups as a column, and optionally a leak-free stratified re-split."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._common import user_errors


def register(app: typer.Typer) -> None:
    @app.command("split")
    @user_errors
    def split(
        scan_dir: Path = typer.Argument(..., help="Scan directory written by 'sibscan scan'."),
        out: Path = typer.Option(..., "--out", "-o", help="CSV to write: split, id, label, source, group, group_size."),
        resplit_dir: Optional[Path] = typer.Option(None, "--resplit", help="Also write a stratified group split here (train.csv, test.csv, resplit.json)."),
        test_size: float = typer.Option(0.2, "--test-size", help="Share of items in the new test set."),
        seed: int = typer.Option(0, "--seed", help="Seed of the re-split."),
        cutoff: Optional[float] = typer.Option(None, "--cutoff", help="Override the cutoff on the deciding score."),
        calibration: Optional[Path] = typer.Option(None, "--calibration", help="Calibration directory to take the cutoff from."),
        force: bool = typer.Option(False, "--force", help="Apply a calibration made for another dataset/encoder anyway."),
        no_sources: bool = typer.Option(False, "--no-sources", help="Do not join items that share a group/source value."),
    ) -> None:
        """Group siblings for a leak-free split (and optionally re-split).

        Groups are the connected components of the sibling graph over all splits: exact twins,
        siblings at the cutoff and shared sources. --resplit writes a stratified group split.
        """
        from ..groups import sibling_groups
        from ..split import check_resplit, resplit, write_groups, write_resplit

        if resplit_dir is not None:
            check_resplit(test_size, seed)
        groups = sibling_groups(scan_dir, cutoff=cutoff, calibration=calibration, force=force, sources=not no_sources)
        write_groups(groups, out)
        multi = int((groups.sizes > 1).sum())
        typer.echo(f"{len(groups)} items in {groups.n_groups} groups ({multi} items share a group); wrote {out}")
        if resplit_dir is not None:
            res = resplit(groups, test_size=test_size, seed=seed)
            write_resplit(groups, res, resplit_dir)
            typer.echo(f"re-split: {res.train.size} train / {res.test.size} test ({100 * res.test_fraction:.1f} %), "
                       f"twins left across the boundary: {res.twins_left}, siblings left: {res.siblings_left}; wrote {resplit_dir}")
