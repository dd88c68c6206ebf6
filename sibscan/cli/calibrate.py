"""``sibscan calibrate SCAN_DIR``: label a sample of pairs and fit the cutoff."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..options import UIS
from ..stats import CUTOFF_BOUND
from ._common import Command, choice, flag, user_errors


def register(app: typer.Typer) -> None:
    @app.command("calibrate", cls=Command)
    @user_errors
    def calibrate_cmd(
        scan_dir: Path = typer.Argument(..., help="A scan directory written by 'sibscan scan'."),
        ui: choice(UIS) = typer.Option("web", "--ui", help="How to label: in a local web page, in the terminal, or none (fit from the labels there are)."),
        labels: Optional[Path] = typer.Option(None, "--labels", help="Import labels made elsewhere before fitting: JSONL, one answer a line, with query_id, neighbour_id, label and the scan's dataset_fingerprint (the form is described above; default: none)."),
        n_pairs: int = typer.Option(60, "--n-pairs", help="Nearest-neighbour pairs to label; raise it to extend an earlier draw."),
        seed: int = typer.Option(0, "--seed", help="Seed of the pair draw and the bootstrap."),
        target_precision: Optional[float] = typer.Option(None, "--target-precision", help=f"Cutoff at the lowest score where the flagged pairs reach this precision by the {CUTOFF_BOUND} (default: the lowest score from which P(same) by its {CUTOFF_BOUND} is 0.5 or more)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Calibration directory (default: SCAN_DIR/calibration)."),
        force: bool = flag("--force", help="Use labels made under another encoder, verifier or dataset anyway."),
        port: int = typer.Option(0, "--port", help="Port of the labelling page (0 = a free one)."),
        no_browser: bool = flag("--no-browser", help="Print the page's URL instead of opening a browser."),
        definition: Optional[str] = typer.Option(None, "--definition", help="What 'same' means, shown on every labelling screen and stored with the labels (default: one per modality, e.g. 'the same photograph or picture, possibly resized, cropped, ...')."),
        controls: float = typer.Option(0.1, "--controls", help="Share of control pairs among the pairs shown, 0 to 0.5 (0: none): pairs whose answer is known (an item against a lightly changed copy of itself or its exact twin; a random pair far below the candidate range), shuffled in and looking like any other, to measure the labeller's error; answers go to controls.jsonl, never to labels.jsonl."),
        as_json: bool = flag("--json", help="Print the result as JSON: the 'headline' object (as in report.json) and the calibration."),
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
        from sibscan.progress import message

        cal = calibrate(
            scan_dir, calibration_dir=out, labels=labels, ui=ui, n_pairs=n_pairs, seed=seed,
            target_precision=target_precision, definition=definition, controls=controls, force=force, port=port,
            open_browser=not no_browser, echo=message,
        )
        head = headline_of(scan_dir, cal, force=force)
        if as_json:
            from ..atomic import dumps_json

            typer.echo(dumps_json({"headline": head, "calibration": {k: v for k, v in cal.to_dict().items()
                                                                      if k not in ("baseline", "curve", "draw")}}))
            return
        for line in describe(cal, head):
            typer.echo(line)
