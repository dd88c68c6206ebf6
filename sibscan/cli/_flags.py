"""The flags of the commands besides ``scan``, as typed option groups in the pattern of :mod:`sibscan.options`.

Every flag of every command is a field of an option group (here, or a scan group of
:mod:`sibscan.options` that a command shares: ``twins`` reads with the scan's load flags, ``temporal``
and ``contamination`` run where the scan's ``--engine`` says), turned into a Typer option by
:func:`sibscan.cli._options.with_options` and checked against its declared constraint (a choice, a bound)
before the command reads anything.  A flag shared by commands whose groups differ is made by one
function below (``_json``, ``_max_rate``, ``_predictions``), so its help and type are written once.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional

from ..options import (LINKAGES, NORMALISATIONS, REPORT_FORMATS, SELECTION_MODES, SERIES_FORMATS,
                       TASKS, UIS, opt)
from ..items import MODALITIES
from ..stats import CUTOFF_BOUND

__all__ = ["AugmentOptions", "AuditOptions", "CalibrateOptions", "CheckOptions", "ContaminationOptions",
           "EncodersOptions", "IndexAddOptions", "IndexBuildOptions", "JsonOption", "ReportOptions", "ScanCommandOptions", "SplitOptions",
           "TemporalOptions", "TwinsOptions"]


def _json(panel: Optional[str] = None) -> Any:
    return opt(False, "--json", toggle=False, panel=panel, help="Print the result as JSON on stdout (for scripts).")


def _max_rate() -> Any:
    return opt(None, "--max-rate", minimum=0.0, maximum=1.0, help="Largest allowed share of test items with a training sibling (in 'twins': an exact twin), 0.01 = 1 %; exit 1 above it, a CI gate (default: no limit).")


def _predictions(*short: str) -> Any:
    return opt(None, "--predictions", *short, help="Predictions for the test items, a CSV/JSONL with id and prediction: adds the accuracy on the sibling (twin) rows vs the rest (default: none, no accuracy).")


@dataclass(frozen=True)
class JsonOption:
    """``--json`` of a command that prints a result and has no other flags of its own."""

    PANEL = "Options"

    as_json: bool = _json()


@dataclass(frozen=True)
class ScanCommandOptions:
    """``sibscan scan``'s flags besides its config's (:data:`sibscan.options.GROUPS`)."""

    PANEL = "Options"

    config: Optional[str] = opt(None, "--config", help="TOML config file, or a preset name from configs/; flags override it (default: no file, the defaults shown here).")
    as_json: bool = _json()


@dataclass(frozen=True)
class ReportOptions:
    """``sibscan report``: what to write where (the cutoff: :class:`sibscan.options.CutoffOptions`)."""

    PANEL = "Options"

    predictions: Optional[Path] = _predictions("-p")
    format: str = opt(",".join(REPORT_FORMATS), "--format", "-f", metavar=f"<{'|'.join(REPORT_FORMATS)}>,...", help="The report files to write, a comma list (csv: flagged.csv, every test item judged a sibling).")
    out: Optional[Path] = opt(None, "--out", "-o", help="Folder for the report files (default: SCAN_DIR).")
    absolute_paths: bool = opt(False, "--absolute-paths", toggle=False, help="Keep absolute data paths in report.html (default: relative to the input folders).")
    as_json: bool = _json()


@dataclass(frozen=True)
class CheckOptions:
    """``sibscan check``: the limits of the CI gate."""

    PANEL = "Options"

    max_rate: Optional[float] = _max_rate()
    max_exact: Optional[float] = opt(None, "--max-exact", minimum=0.0, maximum=1.0, help="Largest allowed share of test items with an exact training twin (default: no limit).")
    require: Optional[str] = opt(None, "--require", help="Audit checks that must have passed in the scan's recorded audit (sibscan audit --scan), comma-separated: nan-free, not-targets, init-window, near-perfect-share, denominator, val-split, selection (default: none).")
    as_json: bool = _json()


@dataclass(frozen=True)
class SplitOptions:
    """``sibscan split``: the groups file and the re-split."""

    PANEL = "Options"

    out: Path = opt(..., "--out", "-o", help="CSV to write: split, id, label, source, group, group_size.")
    resplit_dir: Optional[Path] = opt(None, "--resplit", help="Also write a stratified group split here: train.csv, test.csv, resplit.json (default: none).")
    test_size: float = opt(0.2, "--test-size", help="Share of items in the new test set.")
    seed: int = opt(0, "--seed", minimum=0, help="Seed of the re-split.")
    no_sources: bool = opt(False, "--no-sources", toggle=False, help="Do not join items that share a group/source value.")
    linkage: str = opt("complete", "--linkage", choices=LINKAGES, help="complete: a group holds only items that all pair with each other at the cutoff (one false positive cannot chain groups); single: connected components (no sibling pair can cross a re-split, but chains join).")
    as_json: bool = _json()


@dataclass(frozen=True)
class TwinsOptions:
    """``sibscan twins``: the twins' own flags (the load flags are :class:`sibscan.options.LoadOptions`')."""

    PANEL = "Options"

    decimals: str = opt("6", "--decimals", metavar="<N>[,N...]", help="Decimal places kept; a comma list (2,3,4,6,10) sweeps (full report at 6 if listed, else the finest).")
    as_json: bool = _json()
    predictions: Optional[Path] = _predictions()
    max_rate: Optional[float] = _max_rate()
    max_pct: Optional[float] = opt(None, "--max-pct", help="Deprecated: the same limit in percent; use --max-rate (default: no limit).")
    groups: Optional[Path] = opt(None, "--groups", help="Write split,index,id,group CSV: copies share a group, for a leak-free split (default: not written).")


@dataclass(frozen=True)
class CalibrateOptions:
    """``sibscan calibrate``: how the pairs are labelled and the cutoff fitted."""

    PANEL = "Options"

    ui: str = opt("web", "--ui", choices=UIS, help="How to label: in a local web page, in the terminal, or none (fit from the labels there are).")
    labels: Optional[Path] = opt(None, "--labels", help="Import labels made elsewhere before fitting: JSONL, one answer a line, with query_id, neighbour_id, label and the scan's dataset_fingerprint (the form is described above; default: none).")
    n_pairs: int = opt(60, "--n-pairs", minimum=1, help="Nearest-neighbour pairs to label; raise it to extend an earlier draw.")
    seed: int = opt(0, "--seed", minimum=0, help="Seed of the pair draw and the bootstrap.")
    target_precision: Optional[float] = opt(None, "--target-precision", help=f"Cutoff at the lowest score where the flagged pairs reach this precision by the {CUTOFF_BOUND} (default: the lowest score from which P(same) by its {CUTOFF_BOUND} is 0.5 or more).")
    out: Optional[Path] = opt(None, "--out", help="Calibration directory (default: SCAN_DIR/calibration).")
    force: bool = opt(False, "--force", toggle=False, help="Use labels made under another encoder, verifier or dataset anyway.")
    port: int = opt(0, "--port", minimum=0, help="Port of the labelling page (0 = a free one).")
    no_browser: bool = opt(False, "--no-browser", toggle=False, help="Print the page's URL instead of opening a browser.")
    definition: Optional[str] = opt(None, "--definition", help="What 'same' means, shown on every labelling screen and stored with the labels (default: one per modality, e.g. 'the same photograph or picture, possibly resized, cropped, ...').")
    controls: float = opt(0.1, "--controls", help="Share of control pairs among the pairs shown, 0 to 0.5 (0: none): pairs whose answer is known (an item against a lightly changed copy of itself or its exact twin; a random pair far below the candidate range), shuffled in and looking like any other, to measure the labeller's error; answers go to controls.jsonl, never to labels.jsonl.")
    as_json: bool = _json()


@dataclass(frozen=True)
class IndexBuildOptions:
    """``sibscan index build``: where the index goes (the load and encoder flags are the scan's)."""

    PANEL = "Output"

    out: str = opt(..., "--out", "-o", help="Index directory to create.")
    force: bool = opt(False, "--force", toggle=False, help="Rebuild an existing index.")
    as_json: bool = _json(panel="Options")


@dataclass(frozen=True)
class IndexAddOptions:
    """``sibscan index add``: the id column of the new items."""

    PANEL = "Options"

    id_: Optional[str] = opt(None, "--id", "--id-field", help="Id column of MORE (default: the build's --id; without one, ids are MORE's name + row, e.g. new.csv:0, so they cannot collide).")
    as_json: bool = _json()


@dataclass(frozen=True)
class EncodersOptions:
    """``sibscan encoders``: which encoders to list."""

    PANEL = "Options"

    modality: Optional[str] = opt(None, "--modality", "-m", choices=MODALITIES, help="Only encoders of this modality (default: all).")
    as_json: bool = _json()


@dataclass(frozen=True)
class TemporalOptions:
    """``sibscan temporal``: the permutation test and the archive mode (``--engine``/``--address``: the scan's)."""

    PANEL = "Options"

    archive: Optional[Path] = opt(None, "--archive", help="Folder of datasets (NAME/NAME_TRAIN.tsv + NAME_TEST.tsv, or .ts/.arff) instead of TRAIN TEST.")
    datasets: Optional[str] = opt(None, "--datasets", help="With --archive: comma-separated dataset names (default: all found).")
    classifier: str = opt("minirocket", "--classifier", "-c", help="Short name (minirocket, catch22, rotation-forest, dtw-1nn, euclidean-1nn, weasel, cif, stc) or an aeon class name; a comma list with --archive.")
    param: List[str] = opt([], "--param", help="Classifier parameter KEY=VALUE (repeatable), e.g. n_kernels=1000.")
    runs: int = opt(5, "--runs", minimum=1, help="Runs: the given split, then stratified re-splits.")
    seed: int = opt(0, "--seed", minimum=0, help="Run r uses seed+r for its re-split, permutation and classifier.")
    no_normalise: bool = opt(False, "--no-normalise", toggle=False, help="Test the raw values even where the series are not z-normalised.")
    normalisation: str = opt("demean", "--normalisation", choices=NORMALISATIONS, help="How to normalise series that are not z-normalised: demean (the paper's: each mean removed, one common scale) or znorm.")
    augment: Optional[str] = opt(None, "--augment", help="With --archive: padding levels (e.g. 0.1,0.2,0.3,0.4,0.5): compare original vs UCR Augmented instead.")
    jobs: Optional[int] = opt(None, "--jobs", minimum=1, help="Threads per classifier (where it takes n_jobs; default: the classifier's).")
    num_cpus: Optional[int] = opt(None, "--num-cpus", minimum=1, help="CPUs for a local Ray (default: all).")
    out: Optional[Path] = opt(None, "--out", "-o", help="TRAIN TEST: write the JSON result here. --archive: results folder (needed; re-running resumes).")
    scan: Optional[Path] = opt(None, "--scan", help="Attach the result to this scan (its TRAIN/TEST must be the scanned files): 'sibscan report' then shows it.")
    as_json: bool = _json()


@dataclass(frozen=True)
class AugmentOptions:
    """``sibscan augment``: the padding and where the augmented files go."""

    PANEL = "Options"

    padding: str = opt(..., "--padding", help="Total padding as a fraction of the length, e.g. 0.1; a comma list writes one dataset per level.")
    out: Path = opt(..., "--out", "-o", help="Folder for the augmented files.")
    seed: int = opt(0, "--seed", minimum=0, help="Seed of the head lengths and the walks.")
    sigma: float = opt(0.01, "--sigma", minimum=0.0, help="Standard deviation of a walk step.")
    fmt: str = opt("auto", "--format", choices=("auto", *SERIES_FORMATS), help="File format (auto: .tsv when univariate with numeric labels, else .ts).")
    no_znorm: bool = opt(False, "--no-znorm", toggle=False, help="Pad the values as they are (the paper z-normalises first).")
    name: Optional[str] = opt(None, "--name", help="Dataset name in the output files (default: TRAIN's name without _TRAIN).")
    as_json: bool = _json()


@dataclass(frozen=True)
class ContaminationOptions:
    """``sibscan contamination``: corpora, model probes and where they run (``--engine``, ``--device``,
    ``--batch-size``: the scan's); the thresholds are :class:`sibscan.contamination.config.ContaminationConfig`'s
    fields, whose ``check`` refuses a bad one before any file is read."""

    PANEL = "Options"

    examples_opt: Optional[Path] = opt(None, "--examples", help="The same as EXAMPLES, as an option.")
    corpus: Optional[Path] = opt(None, "--corpus", help="A corpus without provenance: a file or folder of .txt/.jsonl/.parquet, or a built index folder.")
    source: List[str] = opt([], "--source", help="NAME=PATH: a named corpus (repeat for several); matches are reported per source.")
    control: List[str] = opt([], "--control", help="NAME=PATH: texts known to lie outside source NAME ('corpus' for --corpus); its threshold is their percentile.")
    model: Optional[str] = opt(None, "--lm", old=("--model",), help="A language model for Min-K%/Min-K%++/perplexity: 'smollm2' (offline default), a .gguf file, a save_pretrained folder, or an http(s) completions endpoint.")
    complete: Optional[str] = opt(None, "--complete", help="Guided prompting with: a model as for --lm, or an http(s) completions endpoint.")
    labels: Optional[Path] = opt(None, "--labels", help="JSONL/CSV with id and contaminated (1/0) for some examples: AUC per method, weights, recall and FPR.")
    as_json: bool = _json()
    html: Optional[Path] = opt(None, "--html", help="Also write an HTML report here.")
    work: Path = opt(Path(".sibscan-cache/contamination"), "--work", help="Folder for the n-gram indexes (reused while the corpus is unchanged) and the resumable model results.")
    id_field: str = opt("id", "--id-field", help="Id column of EXAMPLES (and --labels).")
    text_field: str = opt("text", "--text-field", help="Text column of EXAMPLES and of JSONL/Parquet corpora and controls.")
    max_tokens: int = opt(512, "--max-tokens", minimum=2, help="Tokens of each example a local model scores.")
    endpoint_model: Optional[str] = opt(None, "--endpoint-model", help="The 'model' field sent to an endpoint.")
    timeout: float = opt(60.0, "--timeout", minimum=0.0, help="Seconds per endpoint request.")
    limit: int = opt(50, "--limit", minimum=0, help="Rows of the terminal table (flagged first).")


_P, _C, _S, _D, _R = "Predictions", "Checks", "Model selection", "Splits", "Run record and report"


@dataclass(frozen=True)
class AuditOptions:
    """``sibscan audit``: the flags of :class:`sibscan.audit.AuditConfig`, one to one (``--decimals``: the
    scan's), and ``--verify-run``.  The ranges are AuditConfig's: its ``check`` refuses a bad value before any
    file is read."""

    PANEL = "Options"

    predictions: List[Path] = opt([], "--predictions", "-p", panel=_P, help="More prediction files (repeatable; same as the arguments).")
    targets: Optional[Path] = opt(None, "--targets", "-t", panel=_P, help="Test targets: CSV/JSONL with id and target (or label, y_true), .txt, .npy/.npz arrays, or the test data file itself (UCR .tsv, .ts, .arff, CSV with --label).")
    task: str = opt("auto", "--task", choices=TASKS, panel=_P, help="The kind of task (auto: from the targets).")
    label: Optional[str] = opt(None, "--label", panel=_P, help="Label column of data files (targets, --train, --val, --test-data; with --scan, --val is read as the scan read its files).")
    id_field: Optional[str] = opt(None, "--id", panel=_P, help="Id column (default: 'id', else the row position).")
    init_steps: Optional[int] = opt(None, "--init-steps", panel=_C, help="Forecasts: leading steps given to the model; must be kept exactly and are left out of the metrics.")
    rtol: float = opt(1e-5, "--rtol", panel=_C, help="not_targets: relative tolerance of allclose(predictions, targets).")
    atol: float = opt(1e-8, "--atol", panel=_C, help="not_targets: absolute tolerance of allclose(predictions, targets).")
    max_agreement: Optional[float] = opt(None, "--max-agreement", panel=_C, help="not_targets: largest plausible share of predictions equal to their targets (fraction; default: none, only all equal fails).")
    val_accuracy: Optional[float] = opt(None, "--val-accuracy", panel=_C, help="not_targets: the model's validation accuracy; a share of predictions equal to their targets more than 5 points above it fails (default: none).")
    perfect_tol: float = opt(1e-3, "--perfect-tol", panel=_C, help="near_perfect_share: a sample is near-perfect below this relative error.")
    max_perfect_share: float = opt(0.01, "--max-perfect-share", panel=_C, help="near_perfect_share: largest allowed share of near-perfect samples (fraction).")
    selection: Optional[Path] = opt(None, "--selection", panel=_S, help="CSV, one row per checkpoint: val_<metric> and test_<metric> columns.")
    reported: Optional[str] = opt(None, "--reported", panel=_S, help="The checkpoint whose test score was reported (or a 'reported' column).")
    metric: Optional[str] = opt(None, "--metric", panel=_S, help="Which metric of the selection CSV, when it holds several.")
    mode: str = opt("auto", "--mode", choices=SELECTION_MODES, panel=_S, help="Whether the higher (max) or the lower (min) score is better; auto: min for loss/error/RMSE/MAE names, else max.")
    train: Optional[Path] = opt(None, "--train", panel=_D, help="Training split data (train↔test exact twins, reported).")
    val: Optional[Path] = opt(None, "--val", panel=_D, help="Validation split data (val_split: exists, and no twins of test items).")
    test_data: Optional[Path] = opt(None, "--test-data", panel=_D, help="Test split data, when --targets is not the data file itself.")
    scan: Optional[Path] = opt(None, "--scan", panel=_D, help="A finished scan: its test labels are the default targets, its sibling rate goes into the table, the audit is written to SCAN/audits/evaluation for 'sibscan report' and 'sibscan check --require'.")
    max_val_overlap: float = opt(0.0, "--max-val-overlap", panel=_D, help="Largest allowed share of test items with a twin in validation.")
    out: Optional[Path] = opt(None, "--out", "-o", panel=_R, help="Folder for manifest.json (the run record), audit.json and audit.md.")
    force: bool = opt(False, "--force", toggle=False, panel=_R, help="Start over in an --out folder that holds another run's record.")
    model_revision: Optional[str] = opt(None, "--model-revision", panel=_R, help="The model revision (commit, checkpoint hash) to record.")
    seeds: Optional[str] = opt(None, "--seeds", panel=_R, help="The seed of each prediction file, comma-separated, in order.")
    published: List[str] = opt([], "--published", panel=_R, help="A published baseline, METRIC=VALUE (repeatable), e.g. accuracy=0.81.")
    published_source: Optional[str] = opt(None, "--published-source", panel=_R, help="Where the published baseline comes from (paper, table).")
    verify: Optional[Path] = opt(None, "--verify-run", old=("--verify",), panel=_R, help="Re-hash the inputs recorded in RUN_DIR/manifest.json; exit 1 if one changed.")
    as_json: bool = _json()
