"""``sibscan calibrate SCAN_DIR``: label a sample of pairs and fit the cutoff."""
from __future__ import annotations

from pathlib import Path

import typer

from ._common import Command, user_errors
from ._flags import CalibrateOptions
from ._options import with_options
from ..atomic import dumps_json
from ..progress import message


def register(app: typer.Typer) -> None:
    @app.command("calibrate", cls=Command)
    @user_errors
    @with_options((CalibrateOptions, {}), spread=True)
    def calibrate_cmd(
        scan_dir: Path = typer.Argument(..., help="A scan directory written by 'sibscan scan'."),
        ui="web", labels=None, n_pairs=60, seed=0, target_precision=None, out=None, force=False, port=0,
        no_browser=False, definition=None, controls=0.1, as_json=False,
    ) -> None:
        """Label a sample of nearest-neighbour pairs (same / different / skip), fit the cutoff and estimate the sibling rate.

        Labels go to CALIBRATION_DIR/labels.jsonl as they are given (re-running continues where it
        stopped); the fitted cutoff, its interval and the estimated sibling rate go to cutoff.json.
        Each next pair is drawn where the rate's interval shrinks most; the pages show the estimate
        as you go and say when it is narrow enough.

        --labels FILE (the form of labels.jsonl): one JSON object a line with query_id (a test id),
        neighbour_id (a train id) and label (same, different or skip), all required;
        dataset_fingerprint, the scan's (manifest.json), without which or with another value the
        file is refused unless --force; encoder_identity and verifier_identity, optional (labels
        belong to pairs: other values are accepted and counted). Pairs this scan does not score
        are kept, not used. A line with a control_id answers a control pair listed in
        CALIBRATION_DIR/controls.json (with query_id and neighbour_id as shown there): it goes to
        controls.jsonl, never to the labels.
        """
        from sibscan.calibration import calibrate, describe
        from sibscan.calibration.summary import headline_of

        cal = calibrate(
            scan_dir, calibration_dir=out, labels=labels, ui=ui, n_pairs=n_pairs, seed=seed,
            target_precision=target_precision, definition=definition, controls=controls, force=force, port=port,
            open_browser=not no_browser, echo=message,
        )
        head = headline_of(scan_dir, cal, force=force)
        if as_json:
            typer.echo(dumps_json({"headline": head, "calibration": {k: v for k, v in cal.to_dict().items()
                                                                      if k not in ("baseline", "curve", "draw")}}))
            return
        for line in describe(cal, head):
            typer.echo(line)
