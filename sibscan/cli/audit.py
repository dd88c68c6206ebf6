"""``sibscan audit``: the evaluation checklist on predictions, seeds, metric formulas, selection and splits."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..options import SELECTION_MODES, TASKS
from ._common import choice, user_errors

HELP = (
    "Audit an evaluation: are the predictions real, is every test item scored once, was the model chosen on "
    "validation, how much do seeds move the score, which formula is each metric.\n\n"
    "Give one prediction file per run (seed), as arguments or with --predictions, and the test --targets. "
    "Checks: nan_free, not_targets, init_window (forecasts with --init-steps), near_perfect_share (numbers), "
    "denominator, selection (--selection), val_split (--val/--train/--selection/--scan). Exit 1 when a check "
    "fails.\n\n"
    "--verify RUN_DIR re-hashes the inputs of a run folder (an audit's --out, or a scan) and says whether "
    "they still match its record."
)

_P, _C, _S, _D, _R = "Predictions", "Checks", "Model selection", "Splits", "Run record and report"


def register(app: typer.Typer) -> None:
    app.command("audit", help=HELP, no_args_is_help=True)(audit)


def _text(result) -> str:
    verdict = "passed" if result.passed else "FAILED"
    n_ok = sum(c.passed for c in result.checks.values())
    head = f"audit {verdict}: {n_ok} of {len(result.checks)} checks passed"
    if result.task:
        head += f" (task {result.task}, {result.n_items} test items, {result.n_runs} run{'s' if result.n_runs != 1 else ''})"
    lines = [head]
    width = max((len(n) for n in result.checks), default=0)
    lines += [f"  {'PASS' if c.passed else 'FAIL'}  {name:<{width}}  {c.summary}" for name, c in result.checks.items()]
    if result.metrics:
        from ..report.honest import format_value

        lines.append("metrics, by formula (mean ± sample std over runs):")
        w = max(len(m) for m in result.metrics)
        for mid, m in result.metrics.items():
            lines.append(f"  {mid:<{w}}  {format_value(m):<28} {m['formula']}")
            if m.get("note"):
                lines.append(f"  {'':<{w}}  {m['note']}")
    return "\n".join(lines)


@user_errors
def audit(
    predictions_args: Optional[List[Path]] = typer.Argument(
        None, metavar="PREDICTIONS...", help="Prediction files, one per run (seed), or folders of them.",
        show_default=False),
    predictions: Optional[List[Path]] = typer.Option(
        None, "--predictions", "-p", help="More prediction files (repeatable; same as the arguments).",
        show_default=False, rich_help_panel=_P),
    targets: Optional[Path] = typer.Option(
        None, "--targets", "-t", show_default=False, rich_help_panel=_P,
        help="Test targets: CSV/JSONL with id and target (or label, y_true), .txt, .npy/.npz arrays, or the test "
             "data file itself (UCR .tsv, .ts, .arff, CSV with --label)."),
    task: choice(TASKS) = typer.Option("auto", "--task", show_default=True, rich_help_panel=_P,
                             help="The kind of task (auto: from the targets)."),
    label: Optional[str] = typer.Option(None, "--label", show_default=False, rich_help_panel=_P,
                                        help="Label column of data files (targets, --train, --val, --test-data; with --scan, --val is read as the scan read its files)."),
    id_field: Optional[str] = typer.Option(None, "--id", show_default=False, rich_help_panel=_P,
                                           help="Id column (default: 'id', else the row position)."),
    init_steps: Optional[int] = typer.Option(None, "--init-steps", show_default=False, rich_help_panel=_C,
                                             help="Forecasts: leading steps given to the model; must be kept exactly "
                                                  "and are left out of the metrics."),
    rtol: float = typer.Option(1e-5, "--rtol", show_default=True, rich_help_panel=_C,
                               help="not_targets: relative tolerance of allclose(predictions, targets)."),
    atol: float = typer.Option(1e-8, "--atol", show_default=True, rich_help_panel=_C,
                               help="not_targets: absolute tolerance of allclose(predictions, targets)."),
    max_agreement: Optional[float] = typer.Option(None, "--max-agreement", show_default=False, rich_help_panel=_C,
                                                  help="not_targets: largest plausible share of predictions equal to "
                                                       "their targets (fraction; default: none, only all equal fails)."),
    val_accuracy: Optional[float] = typer.Option(None, "--val-accuracy", show_default=False, rich_help_panel=_C,
                                                 help="not_targets: the model's validation accuracy; a share of "
                                                      "predictions equal to their targets more than 5 points above it "
                                                      "fails (default: none)."),
    perfect_tol: float = typer.Option(1e-3, "--perfect-tol", show_default=True, rich_help_panel=_C,
                                      help="near_perfect_share: a sample is near-perfect below this relative error."),
    max_perfect_share: float = typer.Option(0.01, "--max-perfect-share", show_default=True, rich_help_panel=_C,
                                            help="near_perfect_share: largest allowed share of near-perfect samples (fraction)."),
    selection: Optional[Path] = typer.Option(None, "--selection", show_default=False, rich_help_panel=_S,
                                             help="CSV, one row per checkpoint: val_<metric> and test_<metric> columns."),
    reported: Optional[str] = typer.Option(None, "--reported", show_default=False, rich_help_panel=_S,
                                           help="The checkpoint whose test score was reported (or a 'reported' column)."),
    metric: Optional[str] = typer.Option(None, "--metric", show_default=False, rich_help_panel=_S,
                                         help="Which metric of the selection CSV, when it holds several."),
    mode: choice(SELECTION_MODES) = typer.Option("auto", "--mode", show_default=True, rich_help_panel=_S,
                             help="Whether the higher (max) or the lower (min) score is better; auto: min for loss/error/RMSE/MAE names, else max."),
    train: Optional[Path] = typer.Option(None, "--train", show_default=False, rich_help_panel=_D,
                                         help="Training split data (train↔test exact twins, reported)."),
    val: Optional[Path] = typer.Option(None, "--val", show_default=False, rich_help_panel=_D,
                                       help="Validation split data (val_split: exists, and no twins of test items)."),
    test_data: Optional[Path] = typer.Option(None, "--test-data", show_default=False, rich_help_panel=_D,
                                             help="Test split data, when --targets is not the data file itself."),
    scan: Optional[Path] = typer.Option(None, "--scan", show_default=False, rich_help_panel=_D,
                                        help="A finished scan: its test labels are the default targets, its sibling "
                                             "rate goes into the table, the audit is written to SCAN/audits/evaluation for "
                                             "'sibscan report' and 'sibscan check --require'."),
    decimals: int = typer.Option(6, "--decimals", show_default=True, rich_help_panel=_D,
                                 help="Rounding of numeric rows before fingerprinting (with --scan: the scan's)."),
    max_val_overlap: float = typer.Option(0.0, "--max-val-overlap", show_default=True, rich_help_panel=_D,
                                          help="Largest allowed share of test items with a twin in validation."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", show_default=False, rich_help_panel=_R,
                                       help="Folder for manifest.json (the run record), audit.json and audit.md."),
    force: bool = typer.Option(False, "--force", show_default=True, rich_help_panel=_R,
                               help="Start over in an --out folder that holds another run's record."),
    model_revision: Optional[str] = typer.Option(None, "--model-revision", show_default=False, rich_help_panel=_R,
                                                 help="The model revision (commit, checkpoint hash) to record."),
    seeds: Optional[str] = typer.Option(None, "--seeds", show_default=False, rich_help_panel=_R,
                                        help="The seed of each prediction file, comma-separated, in order."),
    published: Optional[List[str]] = typer.Option(None, "--published", show_default=False, rich_help_panel=_R,
                                                  help="A published baseline, METRIC=VALUE (repeatable), e.g. accuracy=0.81."),
    published_source: Optional[str] = typer.Option(None, "--published-source", show_default=False, rich_help_panel=_R,
                                                   help="Where the published baseline comes from (paper, table)."),
    verify: Optional[Path] = typer.Option(None, "--verify", show_default=False, rich_help_panel=_R,
                                          help="Re-hash the inputs recorded in RUN_DIR/manifest.json; exit 1 if one changed."),
    as_json: bool = typer.Option(False, "--json", show_default=True, help="Print the result as JSON."),
) -> None:
    from ..atomic import dumps_json
    from ..audit import AuditConfig, run_audit, verify_run
    from ..audit.run import parse_published
    from ..errors import SibscanError
    from ..progress import message
    from ..report.honest import AUDIT_DIR

    files = list(predictions_args or []) + list(predictions or [])
    if verify is not None:
        if files or targets or selection or train or val or test_data or out or scan:
            raise SibscanError("--verify RUN_DIR checks a recorded run on its own; leave out the other inputs")
        res = verify_run(verify)
        typer.echo(dumps_json(res.to_dict()) if as_json else res.message)
        raise typer.Exit(res.exit_code)
    cfg = AuditConfig(
        predictions=files, targets=targets, task=task, label=label, id_field=id_field, init_steps=init_steps,
        rtol=rtol, atol=atol, max_agreement=max_agreement, val_accuracy=val_accuracy, perfect_tol=perfect_tol, max_perfect_share=max_perfect_share, selection=selection,
        reported=reported, metric=metric, mode=mode, train=train, val=val, test_data=test_data, scan=scan, decimals=decimals,
        max_val_overlap=max_val_overlap, out=out, force=force, model_revision=model_revision,
        seeds=[s.strip() for s in seeds.split(",") if s.strip()] if seeds else None,
        published=parse_published(published or []), published_source=published_source)
    result = run_audit(cfg)
    if as_json:
        typer.echo(dumps_json(result.to_dict()))
    else:
        typer.echo(_text(result))
        for w in result.warnings:  # a note on stderr: --quiet silences it (it is in audit.md and --json too)
            message(f"warning: {w}")
        if result.record is not None:
            where = out if out is not None else Path(result.scan["path"]) / AUDIT_DIR
            typer.echo(f"written to {where}: manifest.json (run record), audit.json, audit.md")
    raise typer.Exit(result.exit_code)
