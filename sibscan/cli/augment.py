"""``sibscan augment TRAIN TEST --padding 0.1 --out DIR``: the UCR Augmented version of a dataset."""
from __future__ import annotations

from pathlib import Path

import typer

from ..options import LoadOptions
from ._common import parse_float_list, user_errors
from ._flags import AugmentOptions
from ._options import with_options
from ..atomic import dumps_json, write_json
from ..errors import SibscanError

HELP = (
    "Write the UCR Augmented version of a dataset (Zhang, Batista & Kanhere, PAKDD 2025): each series "
    "z-normalised, then padded with Gaussian random walks (step std --sigma) of total length padding x length, "
    "split at random between head and tail, so the pattern's position varies from series to series.\n\n"
    "Seeded and recorded: NAME_padP_augment.json beside the data lists the parameters and every head length. "
    "Writes the archive's formats: UCR .tsv for univariate series with numeric labels, .ts otherwise."
)


def register(app: typer.Typer) -> None:
    app.command("augment", help=HELP, short_help="UCR Augmented: random-walk padding that misaligns series.")(augment)


@user_errors
@with_options((AugmentOptions, {}), (LoadOptions, {"only": ("label",)}), spread=True)
def augment(
    train: Path = typer.Argument(..., help="Training split: UCR .tsv, .ts, .arff, CSV/TSV, .npy/.npz, Parquet."),
    test: Path = typer.Argument(..., help="Test split, same format and length as TRAIN."),
    padding=None, out=None, seed=0, sigma=0.01, fmt="auto", no_znorm=False, label=None, name=None, as_json=False,
) -> None:
    from ..temporal.augment import augment_pair, output_paths, pad_length
    from ..temporal.series import load_series
    from ..temporal.writers import choose_format, write_pair

    levels = parse_float_list(padding, "--padding")
    if not levels:
        raise SibscanError("--padding needs a fraction, e.g. 0.1")
    for p in levels:
        pad_length(p, 1)  # range check before reading anything
    if out.exists() and not out.is_dir():
        raise SibscanError(f"--out {out} is a file; give a folder")
    data = load_series(train, test, label=label, name=name)
    written = []
    for p in levels:
        aug = augment_pair(data, p, seed=seed, sigma=sigma, znorm=not no_znorm)
        chosen = choose_format(aug.data.X_train, aug.data.y_train, fmt)
        paths = output_paths(out, aug.data.name, chosen)
        write_pair(paths, aug.data, chosen)
        write_json(paths["record"], aug.to_dict())
        written.append({"padding": p, "pad_length": aug.record["pad_length"],
                        "length": aug.record["length_augmented"], "format": chosen,
                        **{k: str(v) for k, v in paths.items()}})
    if as_json:
        typer.echo(dumps_json({"dataset": data.describe(), "seed": seed, "sigma": sigma,
                               "znormalised": not no_znorm, "outputs": written}))
        return
    for w in written:
        typer.echo(f"padding {w['padding']:g}: length {data.length} -> {w['length']}; wrote {w['train']}, "
                   f"{w['test']} and {w['record']}")
