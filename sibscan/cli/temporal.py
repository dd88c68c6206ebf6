"""``sibscan temporal TRAIN TEST`` / ``--archive DIR``: does a time-series benchmark test time?"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ..options import LoadOptions, OutputOptions, SearchOptions
from ._common import parse_float_list, user_errors
from ._flags import TemporalOptions
from ._options import with_options
from ..atomic import dumps_json, write_json
from ..errors import SibscanError
from ..loaders import load

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
@with_options((TemporalOptions, {}), (LoadOptions, {"only": ("label",)}), (OutputOptions, {"only": ("progress",)}),
              (SearchOptions, {"only": ("engine", "address")}), spread=True)
def temporal(
    train: Optional[Path] = typer.Argument(None, help="Training split: UCR .tsv, .ts, .arff, CSV/TSV, .npy/.npz, Parquet.", show_default=False),
    test: Optional[Path] = typer.Argument(None, help="Test split, same format and length as TRAIN.", show_default=False),
    archive=None, datasets=None, classifier="minirocket", param=None, runs=5, seed=0, no_normalise=False,
    normalisation="demean", augment=None, label=None, jobs=None, engine="local", address=None, num_cpus=None,
    out=None, scan=None, as_json=False, progress=True,
) -> None:
    from ..temporal.classifiers import classifier_spec

    params = parse_params(param)
    names = [c.strip() for c in classifier.split(",") if c.strip()]
    if not names:
        raise SibscanError("--classifier needs a name, e.g. minirocket")
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
