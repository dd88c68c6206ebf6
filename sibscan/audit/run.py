"""One audit, from its configuration to its result (and, with ``out``, the run folder).

:class:`AuditConfig` holds every option and is checked whole before a file is read;
:func:`run_audit` reads the inputs, runs the checks that apply, computes the metrics over every run
and, with ``out``, writes ``manifest.json`` (the run record), ``audit.json`` and ``audit.md`` there.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from ..errors import InputError, SibscanError
from ..runrecord import RECORD_KEY, begin_run
from ..stats import check_fraction, check_int
from . import checks as C
from .denominator import align, denominator_check
from .inputs import Column, expand_runs, first_non_number, infer_task, read_column
from ..options import TASKS
from .metrics import METRICS, TASK_METRICS, compute_metrics
from .result import AuditResult, Check
from .scanlink import VAL_SCAN_DIR, ScanLink, open_scan
from .seeds import aggregate_runs, runs_warning
from .selection import selection_check
from ..options import SELECTION_MODES as MODES
from .._version import __version__
from ..atomic import write_json, write_text
from .markdown import render_audit_markdown

__all__ = ["AUDIT_FILES", "AuditConfig", "parse_published", "run_audit"]

#: what an audit writes into its ``out`` folder
AUDIT_FILES = ("manifest.json", "audit.json", "audit.md")


@dataclass
class AuditConfig:
    """Every option of an audit (the CLI's flags, one to one).

    Attributes
    ----------
    predictions : list of path
        One prediction file per run (seed); a folder stands for its prediction files.
    targets : path, optional
        The test targets (formats: :mod:`sibscan.audit.inputs`).
    task : {"auto", "classification", "regression", "forecast"}
    label, id_field : str, optional
        Label and id column of data files read through the loaders (targets, train, val, test data).
    init_steps : int, optional
        Forecasts: the leading steps given to the model (kept exactly; left out of the metrics).
    rtol, atol : float
        ``not_targets``: predictions ``allclose`` to the targets at these tolerances fail.
    max_agreement : float, optional
        ``not_targets``: the largest plausible share of predictions equal to their targets (fraction).
    val_accuracy : float, optional
        ``not_targets``: the model's validation accuracy; more than
        :data:`~sibscan.audit.checks.AGREEMENT_MARGIN` above it fails (with ``max_agreement``: the lower limit).
    perfect_tol, max_perfect_share : float
        ``near_perfect_share``: samples with a relative error below ``perfect_tol`` may be at most
        ``max_perfect_share`` of all.
    selection, reported, metric, mode
        ``selection``: the per-checkpoint CSV, the reported checkpoint, the metric, its direction.
    train, val, test_data : path, optional
        Split data files for ``val_split`` (test data defaults to the targets when they are a data file).
    scan : path, optional
        A finished scan: its test labels are the default targets, its items the test data, its
        train→test sibling rate goes into the table, and ``out`` defaults to ``SCAN/audits/evaluation``
        (where ``sibscan report`` and ``sibscan check --require`` find the audit).
    decimals : int
        Rounding before fingerprinting (overlap).
    max_val_overlap : float
        Largest allowed share of test items with an exact twin in validation.
    out : path, optional
        Folder for the run record and the reports.
    model_revision : str, optional
    seeds : list of str, optional
        The seed of each run, in order (recorded).
    published : dict of str to float
        Published baselines by metric id; ``published_source`` says where they come from.
    """

    predictions: List[Path] = field(default_factory=list)
    targets: Optional[Path] = None
    task: str = "auto"
    label: Optional[str] = None
    id_field: Optional[str] = None
    init_steps: Optional[int] = None
    rtol: float = 1e-5
    atol: float = 1e-8
    max_agreement: Optional[float] = None
    val_accuracy: Optional[float] = None
    perfect_tol: float = 1e-3
    max_perfect_share: float = 0.01
    selection: Optional[Path] = None
    reported: Optional[str] = None
    metric: Optional[str] = None
    mode: str = "auto"
    train: Optional[Path] = None
    val: Optional[Path] = None
    test_data: Optional[Path] = None
    scan: Optional[Path] = None
    decimals: int = 6
    max_val_overlap: float = 0.0
    out: Optional[Path] = None
    force: bool = False
    model_revision: Optional[str] = None
    seeds: Optional[List[str]] = None
    published: Dict[str, float] = field(default_factory=dict)
    published_source: Optional[str] = None

    def check(self) -> "AuditConfig":
        """Refuse bad options before any file is read or written; returns the config (as every config's
        ``check``: :class:`sibscan.config.ScanConfig`, the option groups, ContaminationConfig)."""
        if self.task not in TASKS:
            raise SibscanError(f"unknown --task {self.task!r}; available: {', '.join(TASKS)}")
        if self.mode not in MODES:
            raise SibscanError(f"unknown --mode {self.mode!r}; available: {', '.join(MODES)}")
        if not (self.predictions or self.selection or self.val or self.train or self.scan):
            raise SibscanError("nothing to audit: give prediction files and --targets, a --selection CSV, "
                               "split data (--val, --train), or a scan (--scan DIR)")
        if self.predictions and self.targets is None and self.scan is None:
            raise SibscanError("predictions need the test targets: add --targets FILE (or --scan DIR with test labels)")
        if self.scan is not None and (self.train is not None or self.test_data is not None):
            raise SibscanError("--scan DIR holds the train and test items already; leave out --train and --test-data")
        if self.targets is not None and not self.predictions:
            raise SibscanError("--targets needs prediction files to compare with (PREDICTIONS or --predictions)")
        if self.init_steps is not None:
            check_int(self.init_steps, "--init-steps (leading time steps)", 1)
        for name, x in (("--rtol", self.rtol), ("--atol", self.atol), ("--perfect-tol", self.perfect_tol)):
            if not x >= 0:
                raise SibscanError(f"{name} must be >= 0, got {x:g}")
        check_fraction(self.max_perfect_share, "--max-perfect-share")
        check_fraction(self.max_agreement, "--max-agreement")
        check_fraction(self.val_accuracy, "--val-accuracy")
        check_fraction(self.max_val_overlap, "--max-val-overlap")
        if (self.reported or self.metric) and self.selection is None:
            raise SibscanError("--reported/--metric describe a --selection CSV; add --selection FILE")
        unknown = sorted(set(self.published) - set(METRICS))
        if unknown:
            raise SibscanError(f"unknown metric {unknown[0]!r} in --published; available: {', '.join(METRICS)}")
        if self.published and not self.predictions:
            raise SibscanError("--published baselines are compared with metrics: add prediction files and --targets")
        if self.published_source and not self.published:
            raise SibscanError("--published-source names where --published values come from; add --published "
                               "METRIC=VALUE")
        check_int(self.decimals, "--decimals", 0)
        return self

    def parameters(self) -> dict:
        """The options that make the run what it is (the inputs themselves are hashed separately)."""
        skip = {"predictions", "targets", "selection", "train", "val", "test_data", "scan", "out", "force"}
        return {k: v for k, v in asdict(self).items() if k not in skip}


def _run_names(paths: List[Path]) -> List[str]:
    names = [p.name for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


def _check_task(task: str, target: Column, cfg: AuditConfig) -> None:
    if task in ("regression", "forecast") and not target.numeric:
        raise InputError(f"a {task} audit needs numeric targets, but these are labels (e.g. "
                         f"{str(target.values[0])!r}); use --task classification", path=target.path)
    if task == "forecast" and target.values.ndim < 2:
        raise InputError("a forecast audit needs an array per sample, shape (n_samples, n_steps, ...); these are "
                         "scalars: use --task regression", path=target.path)
    if cfg.init_steps is not None:
        if task != "forecast":
            raise SibscanError(f"--init-steps applies to forecasts (arrays of shape (n, steps, ...)), not to {task}")
        if cfg.init_steps >= target.values.shape[1]:
            raise SibscanError(f"--init-steps {cfg.init_steps} leaves nothing to score: the targets have "
                               f"{target.values.shape[1]} steps")
    if task != "classification" and (cfg.max_agreement is not None or cfg.val_accuracy is not None):
        raise SibscanError("--max-agreement and --val-accuracy limit the share of class labels equal to their "
                           f"targets, not {task} values; for those use --max-perfect-share")
    wrong = sorted(set(cfg.published) - set(TASK_METRICS[task]))
    if wrong:
        raise SibscanError(f"--published {wrong[0]} is not a {task} metric; available: {', '.join(TASK_METRICS[task])}")


def _prediction_checks(cfg: AuditConfig, target: Column, files: List[Path], names: List[str]):
    """Per-run checks and metrics; returns (checks, metrics, task, samples)."""
    task = cfg.task if cfg.task != "auto" else infer_task(target)
    _check_task(task, target, cfg)
    per_check: Dict[str, list] = {}
    per_metrics: Dict[str, dict] = {}
    samples: Dict[str, dict] = {}
    for path, name in zip(files, names):
        pred = read_column(path, "predictions")
        if task != "classification" and not pred.numeric:
            raise InputError(f"a {task} audit needs numeric predictions; {first_non_number(pred)} is not a number",
                             path=path)
        al = align(pred, target)
        found = [denominator_check(al)]
        if len(al.ids):
            found += [C.nan_free(al), C.not_targets(al, task, cfg.init_steps, cfg.rtol, cfg.atol,
                                                      cfg.max_agreement, cfg.val_accuracy)]
            if cfg.init_steps:
                found.append(C.init_window(al, cfg.init_steps))
            if task != "classification":
                found.append(C.near_perfect_share(al, cfg.init_steps, cfg.perfect_tol, cfg.max_perfect_share))
        for c in found:
            per_check.setdefault(c.name, []).append((name, c))
        per_metrics[name] = compute_metrics(al.pred, al.target, task, cfg.init_steps)
        samples[name] = {"n_targets": al.n_targets, "rows": al.n_rows, "scored": int(len(al.ids)),
                         "missing": al.missing.tolist(), "duplicate": al.duplicate.tolist(), "extra": al.extra.tolist(),
                         "failed": {s: v.tolist() for s, v in al.failed.items()}}
    checks = {name: C.combine_runs(runs) for name, runs in per_check.items()}
    return checks, aggregate_runs(per_metrics), task, samples


def _val_check(cfg: AuditConfig, target: Optional[Column], link: Optional[ScanLink], train_siblings: Optional[dict],
               out: Optional[Path]) -> Check:
    from .overlap import load_split_file, val_split_check

    opts = link.loader_options() if link is not None else {"label": cfg.label, "id": cfg.id_field}
    val = load_split_file(cfg.val, "val", **opts) if cfg.val else None
    if link is not None:
        near = link.val_test_siblings(cfg.val, out / VAL_SCAN_DIR, force=cfg.force) if val is not None else None
        return val_split_check(val=val, test=link.test_items(), selection_has_val=cfg.selection is not None,
                               decimals=link.decimals, znorm=link.znorm, max_overlap=cfg.max_val_overlap,
                               val_siblings=near, train_siblings=train_siblings,
                               near_unassessed="the scan has no cutoff (calibrate it: sibscan calibrate SCAN_DIR)")
    test_path = cfg.test_data or (target.path if target is not None and target.loaded else None)
    return val_split_check(
        val=val, test=load_split_file(test_path, "test", **opts) if test_path else None,
        train=load_split_file(cfg.train, "train", **opts) if cfg.train else None,
        selection_has_val=cfg.selection is not None, decimals=cfg.decimals, max_overlap=cfg.max_val_overlap)


def _reporting(cfg: AuditConfig, checks: Dict[str, Check], metrics: dict, n_runs: int,
               sibling_rate: Optional[dict]) -> dict:
    """What the honest-reporting table shows (see :mod:`sibscan.audit.markdown`)."""
    val = checks.get("val_split")
    sel = checks.get("selection")
    if val is None and sel is None:
        val_used = "not stated"
    elif val is not None and not val.detail["validation_split"]:
        val_used = "no"
    else:
        val_used = "yes"
        if sel is not None:
            val_used += f"; reported checkpoint chosen on {sel.detail['chosen_on']}"
        shared = (val.detail.get("val_test_siblings") or val.detail.get("val_test") or {}) if val is not None else {}
        count = shared.get("count", shared.get("test_rows_with_twin"))
        if count:
            val_used += f"; {count} test items have a {'sibling' if 'count' in shared else 'twin'} in it"
    sib = sibling_rate
    if sib is None and val is not None and val.detail.get("train_test"):
        tt = val.detail["train_test"]
        sib = {"kind": "exact twins only; near siblings not assessed", "count": tt["test_rows_with_twin"],
               "n": tt["n_test"], "rate": tt["share"], "interval": None, "state": "exact_only"}
    return {"metrics": {m: {k: a.get(k) for k in ("name", "formula", "mean", "std", "n_runs")}
                        for m, a in metrics.items()},
            "published": {m: {"value": v, "source": cfg.published_source} for m, v in cfg.published.items()},
            "seeds": {"n_runs": n_runs, "values": cfg.seeds}, "validation_split": val_used, "sibling_rate": sib}


def _previous_run(out: Path) -> Optional[dict]:
    path = out / "manifest.json"
    if not path.is_file():
        if out.exists() and any(p.name not in (*AUDIT_FILES, VAL_SCAN_DIR) for p in out.iterdir()):
            raise SibscanError(f"{out} exists and is not an audit folder; choose another --out or empty it")
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8")).get(RECORD_KEY)
    except (OSError, ValueError) as exc:
        raise SibscanError(f"{path}: cannot read the previous run record ({exc}); pass --force to start over") from None


def run_audit(cfg: AuditConfig) -> AuditResult:
    """Run an audit (module docstring). Raises :class:`~sibscan.errors.SibscanError` on bad input."""
    cfg.check()
    files = expand_runs(cfg.predictions) if cfg.predictions else []
    if cfg.seeds is not None and len(cfg.seeds) != len(files):
        raise SibscanError(f"--seeds lists {len(cfg.seeds)} seeds for {len(files)} prediction files; give one per file")
    names = _run_names(files)
    link = open_scan(cfg.scan) if cfg.scan is not None else None
    out = Path(cfg.out) if cfg.out is not None else link.audit_dir if link is not None else None
    record = None
    if out is not None:
        inputs = [("predictions", f) for f in files] + [
            (role, p) for role, p in (("targets", cfg.targets), ("selection", cfg.selection), ("train", cfg.train),
                                      ("val", cfg.val), ("test_data", cfg.test_data),
                                      ("scan_items", link.path / "items" if link else None)) if p is not None]
        previous = None if cfg.force else _previous_run(out)
        record = begin_run(previous, inputs=inputs, parameters=cfg.parameters(), model_revision=cfg.model_revision,
                           seeds=cfg.seeds, force=cfg.force, where=str(out))
        write_json(out / "manifest.json", _manifest(record))

    checks: Dict[str, Check] = {}
    metrics: dict = {}
    task = n_items = target = None
    samples: dict = {}
    if files:
        target = (read_column(cfg.targets, "targets", label=cfg.label, id_field=cfg.id_field)
                  if cfg.targets is not None else link.targets())
        n_items = len(target)
        checks, metrics, task, samples = _prediction_checks(cfg, target, files, names)
    if cfg.selection is not None:
        checks["selection"] = selection_check(cfg.selection, reported=cfg.reported, metric=cfg.metric, mode=cfg.mode)
    sibling_rate = link.sibling_rate() if link is not None else None
    if any(x is not None for x in (cfg.val, cfg.train, cfg.test_data, cfg.selection, link)):
        checks["val_split"] = _val_check(cfg, target, link, sibling_rate, out)
    warnings = [w for w in [runs_warning(len(files)) if files else None] if w]
    result = AuditResult(checks=checks, metrics=metrics, task=task, n_runs=len(files), n_items=n_items, runs=names,
                         warnings=warnings)
    result.reporting = _reporting(cfg, checks, metrics, len(files), sibling_rate)
    if link is not None:
        result.scan = {"path": str(link.path), "dataset_fingerprint": link.dataset_fingerprint}
    if record is not None:
        record.finish(samples={"runs": samples})
        result.record = record.to_dict()
        write_json(out / "audit.json", result.to_dict())
        write_text(out / "audit.md", render_audit_markdown(result))
        write_json(out / "manifest.json", _manifest(record))
    return result


def _manifest(record) -> dict:
    return {"sibscan_version": __version__, "kind": "audit", "status": record.status, RECORD_KEY: record.to_dict()}


def parse_published(items: List[str]) -> Dict[str, float]:
    """``["accuracy=0.81", "macro_f1=0.79"]`` -> ``{"accuracy": 0.81, "macro_f1": 0.79}``."""
    out: Dict[str, float] = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[key.strip().lower().replace("-", "_")] = float(value)
        except ValueError:
            raise SibscanError(f"--published takes METRIC=VALUE (e.g. accuracy=0.81), got {item!r}") from None
    return out
