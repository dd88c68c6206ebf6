"""``sibscan audit``: the evaluation checklist on predictions, seeds, metric formulas, selection and splits."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..options import LoadOptions
from ._common import user_errors
from ._flags import AuditOptions
from ._options import with_options
from ..atomic import dumps_json
from ..errors import SibscanError
from ..progress import message

HELP = (
    "Audit an evaluation: are the predictions real, is every test item scored once, was the model chosen on "
    "validation, how much do seeds move the score, which formula is each metric.\n\n"
    "Give one prediction file per run (seed), as arguments or with --predictions, and the test --targets. "
    "Checks: nan_free, not_targets, init_window (forecasts with --init-steps), near_perfect_share (numbers), "
    "denominator, selection (--selection), val_split (--val/--train/--selection/--scan). Exit 1 when a check "
    "fails.\n\n"
    "--verify-run RUN_DIR re-hashes the inputs of a run folder (an audit's --out, or a scan) and says whether "
    "they still match its record."
)

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
        lines += _samples_notes(result)
    return "\n".join(lines)


def _samples_notes(result) -> List[str]:
    """Which predictions a metric is over (``Metric.samples``, as audit.md says it), on the terminal where it
    matters: when a prediction is missing (denominator) or NaN (nan_free), the two are counted differently."""
    from ..audit.metrics import METRICS

    if all(c.passed for name, c in result.checks.items() if name in ("denominator", "nan_free")):
        return []
    by_rule = {}
    for mid in result.metrics:
        if METRICS[mid].samples:
            by_rule.setdefault(METRICS[mid].samples, []).append(mid)
    return [f"  {' and '.join(mids)} {'are' if len(mids) > 1 else 'is'} {rule}" for rule, mids in by_rule.items()]


@user_errors
@with_options((AuditOptions, {}), (LoadOptions, {"only": ("decimals",)}), spread=True)
def audit(
    predictions_args: Optional[List[Path]] = typer.Argument(
        None, metavar="PREDICTIONS...", help="Prediction files, one per run (seed), or folders of them.",
        show_default=False),
    predictions=None, targets=None, task="auto", label=None, id_field=None, init_steps=None, rtol=1e-5, atol=1e-8,
    max_agreement=None, val_accuracy=None, perfect_tol=1e-3, max_perfect_share=0.01, selection=None, reported=None,
    metric=None, mode="auto", train=None, val=None, test_data=None, scan=None, decimals=6, max_val_overlap=0.0,
    out=None, force=False, model_revision=None, seeds=None, published=None, published_source=None, verify=None,
    as_json=False,
) -> None:
    from ..audit import AuditConfig, run_audit, verify_run
    from ..audit.run import parse_published
    from ..report.honest import AUDIT_DIR

    files = list(predictions_args or []) + list(predictions or [])
    if verify is not None:
        if files or targets or selection or train or val or test_data or out or scan:
            raise SibscanError("--verify-run RUN_DIR checks a recorded run on its own; leave out the other inputs")
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
