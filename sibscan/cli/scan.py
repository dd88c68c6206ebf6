"""``sibscan scan TRAIN TEST --out DIR``: embed train and test items, find each test item's nearest train neighbours."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..verdict.cutoffrule import supported
from ..errors import SibscanError
from ..fmt import plural, score, scores
from ..items import skipped_note
from ..options import GROUPS
from ._common import Command, user_errors
from ._flags import ScanCommandOptions
from ._options import with_options
from ..atomic import dumps_json
from ..progress import message


def _fmt_summary(summary: dict, path: Path, skipped: Optional[dict] = None) -> str:
    """The printed summary; ``skipped`` (the manifest's) adds the first items left out with their reasons."""
    lines = [f"scan written to {path}"]
    lines.append(
        f"  items: {summary['n_train']:,} train, {summary['n_test']:,} test"
        + (f" (skipped: {summary['skipped']['train']} train, {summary['skipped']['test']} test — listed in manifest.json)"
           if summary.get("skipped") and (summary["skipped"]["train"] or summary["skipped"]["test"]) else "")
    )
    note = skipped_note(skipped or {}, "manifest.json")
    if note:  # an unreadable sub-folder says why here, not only in the manifest
        lines.append(f"  {note}")
    n_exact = summary["exact_test_rows_with_train_twin"]
    lines.append(
        f"  exact twins: {plural(n_exact, 'test item')} ({summary['exact_test_twin_pct']:.2f} %) "
        f"{'has' if n_exact == 1 else 'have'} a value-for-value copy in train"
    )
    q = summary.get("nn_score_quantiles") or {}
    if q:
        lines.append("  nearest-train score quantiles: " + ", ".join(f"{k}={v}" for k, v in zip(q, scores(q.values()))))
    cut = summary["cutoff"]
    head = summary.get("headline")
    if head is not None:  # the sentence every output prints (the scan's Verdict)
        lines.append(f"  {head['text']}.")
    if cut.get("value") is None:
        lines.append(f"  cutoff: none — {summary['cutoff_note']}" if summary.get("cutoff_note") else
                     "  cutoff: none — run 'sibscan calibrate DIR' to measure one, or pass --cutoff X (uncalibrated)")
        if summary.get("chance_note"):
            lines.append(f"  note: {summary['chance_note']}")
    else:
        if head is None:  # a manifest written before the summary carried the headline
            how = ("UNCALIBRATED" if cut["source"] != "calibrated" else "calibrated" if supported(cut.get("status"))
                   else "calibrated by labels that do not support it yet")
            lines.append(
                f"  flagged at cutoff {score(cut['value'])} ({how}, {cut['score']} score): {plural(summary['siblings'], 'test item')} "
                f"({summary['sibling_pct']:.2f} %); 'sibscan report' gives the sibling rate with its interval"
            )
        if summary.get("chance_sentence"):
            lines.append(f"  {summary['chance_sentence']}")
        if summary.get("warning"):
            lines.append(f"  warning: {summary['warning']}")
    return "\n".join(lines)


def data_arguments(train: Optional[str], test: Optional[str], options: dict) -> None:
    """Put the positional TRAIN and TEST into ``options``; the older ``--train``/``--test`` still work,
    and with ``--index`` a single positional is the test set."""
    if train is not None and test is None and options.get("index") is not None and options.get("test") is None:
        train, test = None, train
    for name, value in (("train", train), ("test", test)):
        if value is None:
            continue
        if options.get(name) is not None:
            raise SibscanError(f"{name} data given twice ({value} and --{name} {options[name]}); give {name.upper()} once")
        options[name] = value


def register(app: typer.Typer) -> None:
    @app.command("scan", no_args_is_help=True, cls=Command)
    @user_errors
    @with_options(*((group, {"hidden": ("train", "test")}) for group in GROUPS.values()), (ScanCommandOptions, {}))
    def scan(
        train_arg: Optional[str] = typer.Argument(None, metavar="TRAIN", help="Train items: a folder of images, or a text/table file (CSV, TSV, JSONL, TXT, Parquet, NPY, UCR .tsv, .ts, .arff). --train PATH works too.", show_default=False),
        test_arg: Optional[str] = typer.Argument(None, metavar="TEST", help="Test (evaluation) items, same kinds as TRAIN (--test PATH works too). With --index, the one argument is TEST.", show_default=False),
        options: Optional[dict] = None,
    ) -> None:
        """Scan a test set against its train set and write the scan directory OUT.

        Finds exact twins (fingerprints), embeds both splits, searches each test item's top-k nearest
        train items (and train→test, test→test), verifies the candidates, and measures the random-pair
        baseline. Re-running into OUT resumes.

        Example (no download needed): sibscan scan train.csv test.csv --out scan/
        """
        from ..config import ScanConfig, load_config_file
        from ..scan import run_scan
        options = dict(options or {})
        config, json_out = options.pop("config"), options.pop("as_json")
        data_arguments(train_arg, test_arg, options)
        base = ScanConfig()
        if config is not None:
            base = base.merged(load_config_file(config))
        result = run_scan(base.merged(options), echo=message)
        if json_out:
            typer.echo(dumps_json(result.summary))
        else:
            typer.echo(_fmt_summary(result.summary, result.path, result.manifest.get("skipped")))
