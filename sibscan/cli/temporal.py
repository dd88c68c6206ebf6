"""``sibscan temporal TRAIN TEST`` / ``--archive DIR``: does a time-series benchmark test time?"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ..options import ENGINES, NORMALISATIONS
from ._common import choice, parse_float_list, user_errors

HELP = (
    "Does a time-series benchmark test time? Score a classifier on the original series and on series whose time "
    "axis is shuffled by one shared permutation.\n\n"
    "Run 0 uses the given split, runs 1.. stratified re-splits at the original sizes, each with its own permutation "
    "and classifier seed. Verdict by Zhang, Batista & Kanhere (PAKDD 2025): time does not matter when the permuted "
    "accuracy is at least the original, or the two means are within the sum of their stds (also the 2-std rule). "
    "Series that are not z-normalised are normalised first (--no-normalise tests raw values).\n\n"
    "--archive DIR runs a folder of datasets (one unit per dataset and run, resumable, locally or with Ray) and "
    "reports the share where time does not matter; with --augment 0.1,0.2,... it compares classifiers on the "
    "original and the UCR Augmented (random-walk padded) series instead: Wilcoxon p-values and mean ranks."
)


def register(app: typer.Typer) -> None:
    app.command("temporal", help=HELP, short_help="Does a time-series benchmark test time? (permutation test)")(temporal)


def parse_params(items: Optional[List[str]]) -> Dict[str, Any]:
    """``["n_kernels=1000", "distance=dtw"]`` -> ``{"n_kernels": 1000, "distance": "dtw"}`` (JSON values, else strings)."""
    from ..errors import SibscanError

    out: Dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SibscanError(f"--param takes KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def _progress_logging(progress: bool) -> None:
    # progress lines go through logging when stderr is not a terminal; show them at the default level
    if progress and not sys.stderr.isatty():
        logging.getLogger("sibscan.temporal").setLevel(min(logging.INFO, logging.getLogger("sibscan").getEffectiveLevel()))


@user_errors
def temporal(
    train: Optional[Path] = typer.Argument(None, help="Training split: UCR .tsv, .ts, .arff, CSV/TSV, .npy/.npz, Parquet.", show_default=False),
    test: Optional[Path] = typer.Argument(None, help="Test split, same format and length as TRAIN.", show_default=False),
    archive: Optional[Path] = typer.Option(None, "--archive", help="Folder of datasets (NAME/NAME_TRAIN.tsv + NAME_TEST.tsv, or .ts/.arff) instead of TRAIN TEST."),
    datasets: Optional[str] = typer.Option(None, "--datasets", help="With --archive: comma-separated dataset names (default: all found)."),
    classifier: str = typer.Option("minirocket", "--classifier", "-c", help="Short name (minirocket, catch22, rotation-forest, dtw-1nn, euclidean-1nn, weasel, cif, stc) or an aeon class name; a comma list with --archive.", show_default=True),
    param: Optional[List[str]] = typer.Option(None, "--param", help="Classifier parameter KEY=VALUE (repeatable), e.g. n_kernels=1000."),
    runs: int = typer.Option(5, "--runs", min=1, help="Runs: the given split, then stratified re-splits.", show_default=True),
    seed: int = typer.Option(0, "--seed", help="Run r uses seed+r for its re-split, permutation and classifier.", show_default=True),
    no_normalise: bool = typer.Option(False, "--no-normalise", help="Test the raw values even where the series are not z-normalised."),
    normalisation: choice(NORMALISATIONS) = typer.Option("demean", "--normalisation", help="How to normalise series that are not z-normalised: demean (the paper's: each mean removed, one common scale) or znorm.", show_default=True),
    augment: Optional[str] = typer.Option(None, "--augment", help="With --archive: padding levels (e.g. 0.1,0.2,0.3,0.4,0.5): compare original vs UCR Augmented instead."),
    label: Optional[str] = typer.Option(None, "--label", help="Label column (headerless UCR .tsv: column 0, found by itself)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", min=1, help="Threads per classifier (where it takes n_jobs; default: the classifier's)."),
    engine: choice(ENGINES) = typer.Option("local", "--engine", help="With --archive: local (one unit after another) or ray (one Ray task per dataset and run).", show_default=True),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: start Ray on this machine)."),
    num_cpus: Optional[int] = typer.Option(None, "--num-cpus", min=1, help="CPUs for a local Ray."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="TRAIN TEST: write the JSON result here. --archive: results folder (needed; re-running resumes)."),
    scan: Optional[Path] = typer.Option(None, "--scan", help="Attach the result to this scan (its TRAIN/TEST must be the scanned files): 'sibscan report' then shows it."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A bar on a terminal, log lines otherwise.", show_default=True),
) -> None:
    from ..atomic import dumps_json, write_json
    from ..errors import SibscanError
    from ..temporal.classifiers import classifier_spec
    from ..temporal.normalise import NORMALISATIONS

    params = parse_params(param)
    names = [c.strip() for c in classifier.split(",") if c.strip()]
    if not names:
        raise SibscanError("--classifier needs a name, e.g. minirocket")
    if normalisation not in NORMALISATIONS:
        raise SibscanError(f"unknown --normalisation {normalisation!r}; available: {', '.join(NORMALISATIONS)}")
    levels = parse_float_list(augment, "--augment") or []
    specs = [classifier_spec(n, params) for n in names]  # unknown names fail before any data is read
    _progress_logging(progress)

    if archive is not None:
        if train is not None or test is not None:
            raise SibscanError("give either TRAIN TEST or --archive DIR, not both")
        if scan is not None:
            raise SibscanError("--scan attaches one dataset's result; it does not apply to --archive")
        if out is None:
            raise SibscanError("--archive needs --out DIR: every dataset and run is saved there, so a re-run resumes")
        from ..temporal.archive import ArchiveConfig, run_archive
        from ..temporal.section import archive_markdown

        config = ArchiveConfig(classifiers=tuple(specs), runs=runs, seed=seed, normalise=not no_normalise,
                               normalisation=normalisation, augment=tuple(levels), n_jobs=jobs)
        wanted = [d.strip() for d in datasets.split(",") if d.strip()] if datasets else None
        summary = run_archive(archive, out, config, datasets=wanted, engine=engine, address=address,
                              num_cpus=num_cpus, progress=progress)
        typer.echo(dumps_json(summary) if as_json else archive_markdown(summary) + f"\nwrote {out}/temporal.json, .md, .html")
        return

    if train is None or test is None:
        raise SibscanError("give TRAIN and TEST files, or --archive DIR")
    if datasets is not None or levels or engine != "local" or address is not None or num_cpus is not None:
        raise SibscanError("--datasets, --augment, --engine, --address and --num-cpus apply to --archive only "
                           "(the augmentation's Wilcoxon test runs across datasets)")
    if len(specs) != 1:
        raise SibscanError("TRAIN TEST takes one --classifier; compare several with --archive")
    from ..loaders import load
    from ..temporal.permutation import permutation_test
    from ..temporal.scanlink import attach_to_scan
    from ..temporal.section import result_text
    from ..temporal.series import series_pair

    for path in (train, test):
        if path.is_dir():
            raise SibscanError(f"{path} is a folder; give the TRAIN and TEST files, or --archive DIR for a folder of datasets")
    tr = load(train, "train", modality="table", label=label)
    te = load(test, "test", modality="table", label=label)
    data = series_pair(tr, te)
    result = permutation_test(data, specs[0], runs=runs, seed=seed, normalise=not no_normalise,
                              normalisation=normalisation, n_jobs=jobs, progress=progress).to_dict()
    if scan is not None:
        attach_to_scan(result, scan, tr, te)
    if out is not None:
        write_json(out, result)
    typer.echo(dumps_json(result) if as_json else result_text(result))
