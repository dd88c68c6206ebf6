"""``sibscan split SCAN_DIR --out groups.csv``: sibling groups as a column, and optionally a leak-free stratified re-split."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..options import CUTOFF_PANEL, LINKAGES
from ._common import Command, choice, flag, json_flag, user_errors


def register(app: typer.Typer) -> None:
    @app.command("split", cls=Command)
    @user_errors
    def split(
        scan_dir: Path = typer.Argument(..., help="Scan directory written by 'sibscan scan'."),
        out: Path = typer.Option(..., "--out", "-o", help="CSV to write: split, id, label, source, group, group_size."),
        resplit_dir: Optional[Path] = typer.Option(None, "--resplit", help="Also write a stratified group split here: train.csv, test.csv, resplit.json (default: none)."),
        test_size: float = typer.Option(0.2, "--test-size", help="Share of items in the new test set."),
        seed: int = typer.Option(0, "--seed", help="Seed of the re-split."),
        cutoff: Optional[float] = typer.Option(None, "--cutoff", rich_help_panel=CUTOFF_PANEL, help="Override the cutoff on the deciding score (default: the calibration's, else the scan's)."),
        calibration: Optional[Path] = typer.Option(None, "--calibration", rich_help_panel=CUTOFF_PANEL, help="Calibration directory to take the cutoff from (default: SCAN_DIR/calibration once it holds a fitted cutoff)."),
        force: bool = flag("--force", help="Apply a calibration made for another dataset/encoder anyway.", panel=CUTOFF_PANEL),
        no_sources: bool = flag("--no-sources", help="Do not join items that share a group/source value."),
        linkage: choice(LINKAGES) = typer.Option("complete", "--linkage", help="complete: a group holds only items that all pair with each other at the cutoff (one false positive cannot chain groups); single: connected components (no sibling pair can cross a re-split, but chains join)."),
        as_json: bool = json_flag(),
    ) -> None:
        """Group siblings for a leak-free split (and optionally re-split).

        Exact twins and shared sources always share a group; siblings at the cutoff join a group
        only when every pair of its members pairs at the cutoff (--linkage complete), or as
        connected components (--linkage single). --resplit writes a stratified group split.
        """
        from ..atomic import dumps_json
        from ..groups import check_linkage
        from ..split import check_resplit, groups_and_headline, resplit, write_groups, write_resplit

        check_linkage(linkage)
        check_resplit(test_size, seed)  # checked with the others, before anything is read, --resplit or not
        groups, head = groups_and_headline(scan_dir, cutoff=cutoff, calibration=calibration, force=force,
                                           sources=not no_sources, linkage=linkage)
        write_groups(groups, out)
        multi = int((groups.sizes > 1).sum())
        big = groups.largest()
        result = {"n_items": len(groups), "n_groups": int(groups.n_groups), "items_sharing_a_group": multi,
                  "linkage": linkage, "largest_group": big, "pairs_between_groups": groups.dropped,
                  "groups_csv": str(out), "resplit": None, "headline": head}
        lines = [head["text"] + ".", f"{len(groups)} items in {groups.n_groups} groups ({multi} items share a group); wrote {out}"]
        if big is not None:
            lines.append(f"largest group {big['group']}: {big['size']} items ({linkage} linkage: {big['reason']})")
        if linkage == "complete":
            lines.append(f"{groups.dropped} sibling pair(s) at the cutoff left between groups (their items do not all pair)")
        if resplit_dir is not None:
            res = resplit(groups, test_size=test_size, seed=seed)
            write_resplit(groups, res, resplit_dir, headline=head)
            result["resplit"] = {"train": int(res.train.size), "test": int(res.test.size),
                                 "test_fraction": float(res.test_fraction), "twins_left": int(res.twins_left),
                                 "siblings_left": int(res.siblings_left), "folder": str(resplit_dir)}
            lines.append(f"re-split: {res.train.size} train / {res.test.size} test ({100 * res.test_fraction:.1f} %), "
                         f"twins left across the boundary: {res.twins_left}, siblings left: {res.siblings_left}; wrote {resplit_dir}")
        typer.echo(dumps_json(result) if as_json else "\n".join(lines))
