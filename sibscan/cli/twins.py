"""``sibscan twins TRAIN TEST``: exact copies between a train and a test split."""
from __future__ import annotations

from pathlib import Path

import typer

from ..options import LoadOptions
from ._common import Command, parse_int_list, user_errors
from ._flags import TwinsOptions
from ._options import with_options
from ..atomic import dumps_json
from ..errors import SibscanError
from ..items import skipped_note
from ..stats import check_decimals, check_fraction

#: the scan's load flags that twins reads with (--decimals is its own: it also takes a comma list, a sweep)
_LOAD_FLAGS = ("label", "id", "znorm", "labels_train", "labels_test", "modality", "text_field", "path_field")

HELP = (
    'Find exact copies ("twins") between TRAIN and TEST, in both directions.\n\n'
    "Rows are compared by a fingerprint of their values rounded to --decimals (label left out). Reports test "
    "rows with a train twin and the reverse, duplicates within each split, twin groups whose labels conflict, "
    "and with --predictions the accuracy on twin rows vs the rest.\n\n"
    "--decimals 2,3,4,6,10 sweeps the rounding: a flat count means real copies, a climbing one means rounding "
    "merges rows that are merely similar."
)


def register(app: typer.Typer) -> None:
    app.command("twins", help=HELP, cls=Command)(twins)


@user_errors
@with_options((LoadOptions, {"only": _LOAD_FLAGS}), (TwinsOptions, {}), spread=True)
def twins(
    train: Path = typer.Argument(..., help="Training split: CSV/TSV/UCR .tsv/.ts/.arff/.npy/.npz/Parquet (or text/images)."),
    test: Path = typer.Argument(..., help="Evaluation split, same format and columns as TRAIN."),
    label=None, id=None, decimals="6", znorm=False, as_json=False, predictions=None,  # noqa: A002
    max_rate=None, max_pct=None, groups=None, labels_train=None, labels_test=None, modality=None,
    text_field=None, path_field=None,
) -> None:
    from ..loaders.prints import load_prints
    from ..predictions import accuracy_split, correct_mask, read_predictions
    from ..twins import (ci_text, decimals_sweep, find_twins, format_twin_report, group_ids, rate_from_pct,
                         twin_violation, write_groups_csv)

    decs = parse_int_list(decimals, "--decimals")
    if not decs:
        raise SibscanError("--decimals needs at least one integer, e.g. 6 or 2,3,4,6,10")
    for d in decs:
        check_decimals(d)
    if max_pct is not None:
        if max_rate is not None:
            raise SibscanError("give --max-rate (a fraction), not also the deprecated --max-pct")
        max_rate = rate_from_pct(max_pct, "--max-pct")
    max_rate = check_fraction(max_rate, "--max-rate")
    common = dict(modality=modality, label=label, id=id, text_field=text_field, path_field=path_field)
    # train is fingerprinted while it is read (a CSV is never held whole); test keeps its rows, for
    # --predictions and the distinct-values statistic of its twin rows
    tr = load_prints(train, "train", decs, znorm, labels_path=labels_train, **common)
    te = load_prints(test, "test", decs, znorm, keep_items=True, labels_path=labels_test, **common)
    main_dec = 6 if 6 in decs else max(decs)  # the full report: the default precision, else the finest
    report = find_twins(tr, te, decimals=main_dec, znorm=znorm)
    out = report.to_dict()
    text = [format_twin_report(report)]
    if len(decs) > 1:
        sweep = decimals_sweep(tr, te, decs, znorm=znorm)
        out["decimals_sweep"] = sweep
        counts = ", ".join(f"{d}: {c}" for d, c in zip(sweep["decimals"], sweep["test_rows_with_train_twin"]))
        text.append(f"decimals sweep (test rows with a train twin) — {counts}\n  {sweep['message']}")
    if predictions is not None:
        if not te.has_labels:
            raise SibscanError("--predictions needs test labels; name the label column with --label")
        preds = read_predictions(predictions, te.items)
        acc = accuracy_split(correct_mask(preds, te.items.labels), report.test_twin_mask)
        out["accuracy"] = {"all": acc["all"], "twin_rows": acc["masked"], "rest": acc["rest"],
                           "difference": acc["difference"]}
        text.append("accuracy: " + "; ".join(
            f"{name} {part['accuracy'] * 100:.1f}% ({part['correct']}/{part['n']}{ci_text(part.get('ci'))})" if part["n"]
            else f"{name} - (0 rows)"
            for name, part in (("all", acc["all"]), ("twin rows", acc["masked"]), ("rest", acc["rest"]))))
    skipped = {split: [k.to_dict() for k in items.skipped] for split, items in (("train", tr), ("test", te))}
    if skipped["train"] or skipped["test"]:  # never silently: every item left out, with its reason
        out["skipped"] = skipped
        text.append(skipped_note(skipped, "--json"))
    if groups is not None:
        write_groups_csv(groups, tr, te, group_ids(tr, te, decimals=main_dec, znorm=znorm))
        text.append(f"groups written to {groups}")
    typer.echo(dumps_json(out) if as_json else "\n".join(text))
    if max_rate is not None:
        message = twin_violation(report, max_rate)
        if message is not None:
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(1)
