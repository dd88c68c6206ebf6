"""``sibscan split SCAN_DIR --out groups.csv``: sibling groups as a column, and optionally a leak-free stratified re-split."""
from __future__ import annotations

from pathlib import Path

import typer

from ..options import CutoffOptions
from ._common import Command, user_errors
from ._flags import SplitOptions
from ._options import with_options
from ..atomic import dumps_json


def register(app: typer.Typer) -> None:
    @app.command("split", cls=Command)
    @user_errors
    @with_options((SplitOptions, {}), (CutoffOptions, {}), spread=True)
    def split(
        scan_dir: Path = typer.Argument(..., help="Scan directory written by 'sibscan scan'."),
        out=None, resplit_dir=None, test_size=0.2, seed=0, cutoff=None, calibration=None, force=False,
        no_sources=False, linkage="complete", as_json=False,
    ) -> None:
        """Group siblings for a leak-free split (and optionally re-split).

        Exact twins and shared sources always share a group; siblings at the cutoff join a group
        only when every pair of its members pairs at the cutoff (--linkage complete), or as
        connected components (--linkage single). --resplit writes a stratified group split.
        """
        from ..groups import check_linkage
        from ..split import check_resplit, groups_and_headline, resplit, write_groups, write_resplit

        CutoffOptions(cutoff, calibration, force).check()
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
