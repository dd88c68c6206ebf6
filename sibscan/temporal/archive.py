"""Archive mode: the temporal test (or the UCR Augmented comparison) over a folder of datasets.

A folder of datasets in the archive's layouts — ``DIR/NAME/NAME_TRAIN.tsv`` + ``NAME_TEST.tsv``
(also ``.ts`` or ``.arff``), or the same files directly in ``DIR``. The unit of work is one
(dataset, run): it loads the dataset, draws that run's split, and fits every classifier on the
original series and on the permuted (or padded) ones. Each finished unit is written to
``OUT/runs/NAME/run<r>.json`` at once, so an interrupted archive run resumes where it stopped;
units run one after another here or as Ray tasks (``engine="ray"``: locally, or on a cluster
whose workers see the same paths). A dataset the test cannot run on (variable length, missing
values, too small) is skipped and listed with the reason.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..atomic import write_json
from ..errors import SibscanError
from ..progress import bar as progress_bar
from .classifiers import ClassifierSpec, classifier_spec, check_length
from .normalise import apply_normalisation, choose_normalisation, normalise
from .resplit import check_resplits, permute_time, time_permutation
from ..options import ENGINES, NORMALISATIONS
from ..raystart import ray_session
from .augment import pad_series
from .permutation import fit_score, run_split
from .series import SeriesPair, load_series
from .summary import summarise, write_summary

__all__ = ["ArchiveConfig", "ArchiveDataset", "discover", "run_archive", "run_unit"]

log = logging.getLogger("sibscan.temporal")

_SUFFIXES = (".tsv", ".ts", ".arff")


@dataclass(frozen=True)
class ArchiveDataset:
    """One dataset of an archive folder: its name and its two files."""

    name: str
    train: str
    test: str


@dataclass(frozen=True)
class ArchiveConfig:
    """What an archive run computes; its :meth:`identity` keys the resumable results.

    Attributes
    ----------
    classifiers : tuple of ClassifierSpec
    runs : int
    seed : int
        Run ``r`` uses ``seed + r`` for its split, its permutation / padding and its classifiers.
    normalise : bool
        Permutation test: normalise datasets that are not z-normalised (``normalisation``).
        The augmentation compares z-normalised series with their padded versions.
    normalisation : {"demean", "znorm"}
    augment : tuple of float
        Padding levels; empty runs the permutation test.
    n_jobs : int, optional
        Threads per classifier.
    """

    classifiers: Tuple[ClassifierSpec, ...]
    runs: int = 5
    seed: int = 0
    normalise: bool = True
    normalisation: str = "demean"
    augment: Tuple[float, ...] = ()
    n_jobs: Optional[int] = None

    def check(self) -> "ArchiveConfig":
        """Refuse a bad option before any file is read; returns the config (as every config's ``check``:
        :class:`sibscan.config.ScanConfig`, the option groups, AuditConfig, ContaminationConfig)."""
        if not self.classifiers:
            raise SibscanError("name at least one classifier")
        if self.runs < 1:
            raise SibscanError(f"--runs must be at least 1, got {self.runs}")
        if self.normalisation not in NORMALISATIONS:
            raise SibscanError(f"unknown normalisation {self.normalisation!r}; available: {', '.join(NORMALISATIONS)}")
        for p in self.augment:
            if not 0 < p <= 10:
                raise SibscanError(f"--augment takes padding fractions in (0, 10], got {p:g}")
        names = [c.name for c in self.classifiers]
        if len(set(names)) != len(names):
            raise SibscanError(f"a classifier is named twice: {', '.join(names)}")
        return self

    @property
    def mode(self) -> str:
        return "augment" if self.augment else "permutation"

    @property
    def variants(self) -> List[str]:
        """Result keys per classifier: ``original`` and ``permuted``, or ``original`` and ``pad<p>``."""
        return ["original"] + ([f"pad{p:g}" for p in self.augment] if self.augment else ["permuted"])

    def identity(self) -> Dict[str, Any]:
        return {"mode": self.mode, "classifiers": [c.identity() for c in self.classifiers], "seed": self.seed,
                "normalise": self.normalise, "normalisation": self.normalisation,
                "augment": [float(p) for p in self.augment]}

    @staticmethod
    def build(classifiers: Sequence[str], params: Optional[Dict[str, Any]] = None, **kwargs) -> "ArchiveConfig":
        """From classifier names (``params`` go to every named classifier)."""
        specs = tuple(classifier_spec(name, params) for name in classifiers)
        return ArchiveConfig(classifiers=specs, **kwargs).check()


def _pair_in(folder: Path, name: str) -> Optional[ArchiveDataset]:
    for suffix in _SUFFIXES:
        train, test = folder / f"{name}_TRAIN{suffix}", folder / f"{name}_TEST{suffix}"
        if train.is_file() and test.is_file():
            return ArchiveDataset(name, str(train), str(test))
    return None


def discover(root: str | Path, datasets: Optional[Sequence[str]] = None) -> List[ArchiveDataset]:
    """The datasets of an archive folder, sorted by name (or the ``datasets`` asked for, in that order).

    Raises
    ------
    SibscanError
        No such folder, no dataset in it, or an asked-for name that is not there (listing those
        that are).
    """
    root = Path(root)
    if not root.is_dir():
        raise SibscanError(f"{root}: not a folder; --archive takes a folder of datasets "
                           "(NAME/NAME_TRAIN.tsv and NAME/NAME_TEST.tsv, or .ts/.arff)")
    found: Dict[str, ArchiveDataset] = {}
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        ds = _pair_in(sub, sub.name)
        if ds is not None:
            found[ds.name] = ds
    for suffix in _SUFFIXES:
        for train in sorted(root.glob(f"*_TRAIN{suffix}")):
            name = train.name[: -len(f"_TRAIN{suffix}")]
            if name not in found:
                ds = _pair_in(root, name)
                if ds is not None:
                    found[name] = ds
    if not found:
        raise SibscanError(f"{root}: no datasets found; expected NAME/NAME_TRAIN.tsv + NAME/NAME_TEST.tsv "
                           "(or .ts/.arff), or those files directly in the folder")
    if datasets is None:
        return [found[k] for k in sorted(found)]
    missing = [d for d in datasets if d not in found]
    if missing:
        names = sorted(found)
        shown = ", ".join(names[:40]) + (f", … ({len(names)} in all)" if len(names) > 40 else "")
        raise SibscanError(f"dataset {missing[0]!r} is not in {root}; available: {shown}")
    return [found[d] for d in datasets]


def run_unit(dataset: ArchiveDataset, run: int, config: ArchiveConfig) -> Dict[str, Any]:
    """One (dataset, run): every classifier on the original and the permuted / padded series.

    Returns
    -------
    dict
        ``{dataset, run, split, normalisation, accuracy: {classifier: {variant: float}}, seconds}``,
        or ``{dataset, run, skipped: reason}`` when the dataset cannot be tested.
    """
    t0 = time.perf_counter()
    try:
        data = load_series(dataset.train, dataset.test, name=dataset.name)
        check_resplits(data.y_train, data.y_test, config.runs)
        for spec in config.classifiers:
            check_length(spec, data.length, dataset.name)
    except SibscanError as exc:
        return {"dataset": dataset.name, "run": run, "skipped": str(exc)}
    if config.augment:
        decision = {"applied": "znorm",
                    "reason": "UCR Augmented compares z-normalised series with their padded versions"}
        x_train, x_test = normalise(data.X_train, "znorm"), normalise(data.X_test, "znorm")
    else:
        chosen = choose_normalisation(data.X_train, data.X_test, enabled=config.normalise, method=config.normalisation)
        decision = chosen.to_dict()
        x_train, x_test = apply_normalisation(data.X_train, data.X_test, chosen)
    prepared = SeriesPair(x_train, data.y_train, x_test, data.y_test, data.name)
    xtr, ytr, xte, yte, split = run_split(prepared, run, config.seed)
    rs = config.seed + run
    variants: Dict[str, Tuple[np.ndarray, np.ndarray]] = {"original": (xtr, xte)}
    if config.augment:
        for p in config.augment:
            child = np.random.SeedSequence(rs).spawn(2)
            a, _ = pad_series(xtr, p, np.random.default_rng(child[0]))
            b, _ = pad_series(xte, p, np.random.default_rng(child[1]))
            variants[f"pad{p:g}"] = (a, b)
    else:
        perm = time_permutation(data.length, rs)
        variants["permuted"] = (permute_time(xtr, perm), permute_time(xte, perm))
    accuracy: Dict[str, Dict[str, float]] = {}
    fit_seconds = 0.0
    for spec in config.classifiers:
        accuracy[spec.name] = {}
        for key, (a, b) in variants.items():
            acc, s = fit_score(spec, a, ytr, b, yte, random_state=rs, n_jobs=config.n_jobs)
            accuracy[spec.name][key] = acc
            fit_seconds += s
    return {"dataset": dataset.name, "run": run, "split": split, "normalisation": decision,
            "shape": {"n_train": int(len(ytr)), "n_test": int(len(yte)), "n_channels": data.n_channels,
                      "length": data.length},
            "accuracy": accuracy, "seconds": {"fit_predict": fit_seconds, "total": time.perf_counter() - t0}}


def _unit_path(out_dir: Path, name: str, run: int) -> Path:
    return out_dir / "runs" / name / f"run{run}.json"


def _load_config(out_dir: Path, config: ArchiveConfig) -> None:
    path = out_dir / "config.json"
    ident = json.loads(json.dumps(config.identity()))
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SibscanError(f"{path}: cannot read ({exc}); remove it or choose another --out") from None
        if old != ident:
            raise SibscanError(f"{out_dir} holds an archive run with other options ({old.get('mode')}, "
                               f"{', '.join(old.get('classifiers', []))}); choose another --out or remove it")
    else:
        write_json(path, ident)


def pending_units(out_dir: Path, datasets: Sequence[ArchiveDataset], runs: int) -> List[Tuple[ArchiveDataset, int]]:
    """The (dataset, run) units without a result file yet."""
    return [(d, r) for d in datasets for r in range(runs) if not _unit_path(out_dir, d.name, r).is_file()]


def run_archive(root: str | Path, out_dir: str | Path, config: ArchiveConfig, *,
                datasets: Optional[Sequence[str]] = None, engine: str = "local", address: Optional[str] = None,
                num_cpus: Optional[int] = None, progress: bool = True) -> Dict[str, Any]:
    """Run every (dataset, run) unit not yet done, then summarise all of them.

    Parameters
    ----------
    root : path
        The archive folder (see :func:`discover`).
    out_dir : path
        Results: ``runs/NAME/run<r>.json`` per unit, ``config.json``, and the summary files
        written by :func:`sibscan.temporal.summary.write_summary`.
    config : ArchiveConfig
    datasets : sequence of str, optional
        Names to run (default: all found).
    engine : {"local", "ray"}
    address, num_cpus
        Ray's cluster address (default: start Ray locally) and CPUs for a local Ray.

    Returns
    -------
    dict
        The summary (see :func:`sibscan.temporal.summary.summarise`).
    """
    config.check()
    if engine not in ENGINES:
        raise SibscanError(f"unknown engine {engine!r}; available: {', '.join(ENGINES)}")
    found = discover(root, datasets)
    out_dir = Path(out_dir)
    _load_config(out_dir, config)
    todo = pending_units(out_dir, found, config.runs)
    if len(todo) < len(found) * config.runs:
        log.info("resuming: %d of %d units already done in %s", len(found) * config.runs - len(todo),
                 len(found) * config.runs, out_dir)
    with progress_bar(len(todo), f"temporal archive ({config.mode})", "fit", enabled=progress) as bar:
        for record in _execute(todo, config, engine, address, num_cpus):
            write_json(_unit_path(out_dir, record["dataset"], record["run"]), record)
            bar.update(1, f"{record['dataset']} run {record['run']}" + (" skipped" if "skipped" in record else ""))
    units = [json.loads(_unit_path(out_dir, d.name, r).read_text(encoding="utf-8"))
             for d in found for r in range(config.runs)]
    summary = summarise(units, config, root=str(root))
    write_summary(out_dir, summary)
    return summary


def _execute(todo, config: ArchiveConfig, engine: str, address, num_cpus):
    if engine == "local" or not todo:
        for ds, r in todo:
            yield run_unit(ds, r, config)
        return

    ray = ray_session(address, num_cpus, purpose="the Ray engine")
    remote = ray.remote(run_unit)
    config_ref = ray.put(config)
    pending = [remote.remote(ds, r, config_ref) for ds, r in todo]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield ray.get(done[0])
