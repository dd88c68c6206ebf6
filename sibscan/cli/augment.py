"""``sibscan augment TRAIN TEST --padding 0.1 --out DIR``: the UCR Augmented version of a dataset."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..options import SERIES_FORMATS
from ._common import choice, parse_float_list, user_errors

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
def augment(
    train: Path = typer.Argument(..., help="Training split: UCR .tsv, .ts, .arff, CSV/TSV, .npy/.npz, Parquet."),
    test: Path = typer.Argument(..., help="Test split, same format and length as TRAIN."),
    padding: str = typer.Option(..., "--padding", help="Total padding as a fraction of the length, e.g. 0.1; a comma list writes one dataset per level."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the augmented files."),
    seed: int = typer.Option(0, "--seed", help="Seed of the head lengths and the walks.", show_default=True),
    sigma: float = typer.Option(0.01, "--sigma", min=0.0, help="Standard deviation of a walk step.", show_default=True),
    fmt: choice(("auto", *SERIES_FORMATS)) = typer.Option("auto", "--format", help="File format (auto: .tsv when univariate with numeric labels, else .ts).", show_default=True),
    no_znorm: bool = typer.Option(False, "--no-znorm", help="Pad the values as they are (the paper z-normalises first)."),
    label: Optional[str] = typer.Option(None, "--label", help="Label column (headerless UCR .tsv: column 0, found by itself)."),
    name: Optional[str] = typer.Option(None, "--name", help="Dataset name in the output files (default: TRAIN's name without _TRAIN)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    from ..atomic import dumps_json, write_json
    from ..errors import SibscanError
    from ..temporal.augment import augment_pair, output_paths, pad_length
    from ..temporal.series import load_series
    from ..temporal.writers import choose_format, write_pair

    levels = parse_float_list(padding, "--padding")
    if not levels:
        raise SibscanError("--padding needs a fraction, e.g. 0.1")
    if fmt not in ("auto", "tsv", "ts"):
        raise SibscanError(f"unknown --format {fmt!r}; available: auto, tsv, ts")
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
