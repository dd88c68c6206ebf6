"""Scan configuration: the option groups of every stage, filled from defaults < a TOML file < flags.

Presets live as TOML files in the top-level ``configs/`` folder (installed as ``sibscan.configs``)
and are named by file stem: ``--config text-minilm`` or ``--config path/to/file.toml``.
"""
from __future__ import annotations

import dataclasses
import sys
import typing
from pathlib import Path
from typing import Any, Dict

from .atomic import check_writable_dir
from .configkeys import check_value, suggest
from .errors import SibscanError
from .options import GROUPS, OWNER, VIEWS, check_value as check_field
from . import configs  # the top-level configs/ folder, installed as sibscan.configs
from .encoders import list_encoders
from .encoders.build import check_image_size
from .verify import verifier_class

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ScanConfig", "list_presets", "load_config_file"]

#: options that do not change a scan's results (left out of the manifest's ``parameters``)
_NOT_PARAMETERS = {"out", "force", "progress", "cache_dir", "device", "batch_size", "block_size", "calibration",
                   "cutoff", "engine", "address", "train_features", "test_features"}


class ScanConfig:
    """Every option of a scan, as the typed groups of :mod:`sibscan.options`, one per stage.

    ``cfg.load``, ``cfg.encoding``, ``cfg.search``, ``cfg.verification``, ``cfg.baseline`` and
    ``cfg.output`` are the groups each stage takes.  Option names are unique across the groups, so
    they also work flat, as they always have: ``ScanConfig(train=..., k=5)``, ``cfg.k``, the keys of a
    TOML file, ``cfg.merged({"k": 5})``.  A ScanConfig is a value: change it with :meth:`merged`.
    """

    def __init__(self, **options: Any):
        given: Dict[str, Any] = {}
        flat: Dict[str, Dict[str, Any]] = {attr: {} for attr in GROUPS}
        for key, value in options.items():
            if key in GROUPS:
                if not isinstance(value, GROUPS[key]):
                    raise TypeError(f"{key} must be a {GROUPS[key].__name__}, got {type(value).__name__}")
                given[key] = value
            elif key in OWNER:
                flat[OWNER[key]][key] = value
            else:
                raise SibscanError(f"unknown scan option(s) {key}; valid: {', '.join(sorted(OWNER))}")
        for attr, group in GROUPS.items():
            value = given.get(attr) or group()
            object.__setattr__(self, attr, dataclasses.replace(value, **flat[attr]) if flat[attr] else value)

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not attributes: a flat option name reads from its group
        if name in OWNER:
            return getattr(getattr(self, OWNER[name]), name)
        raise AttributeError(f"'ScanConfig' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a ScanConfig is a value; make a changed copy with cfg.merged({...})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScanConfig) and all(getattr(self, a) == getattr(other, a) for a in GROUPS)

    def __repr__(self) -> str:
        return "ScanConfig(" + ", ".join(f"{a}={getattr(self, a)!r}" for a in GROUPS) + ")"

    def options(self) -> Dict[str, Any]:
        """Every option by its flat name (values as given: in-memory data is not copied)."""
        return {f.name: getattr(getattr(self, attr), f.name) for attr in GROUPS
                for f in dataclasses.fields(GROUPS[attr])}

    def merged(self, overrides: Dict[str, Any]) -> "ScanConfig":
        """A copy with the non-None ``overrides`` (flat names) applied; unknown names are an error."""
        unknown = sorted(set(overrides) - set(OWNER))
        if unknown:
            raise SibscanError(f"unknown scan option(s) {', '.join(unknown)}; valid: {', '.join(sorted(OWNER))}")
        return ScanConfig(**{attr: getattr(self, attr) for attr in GROUPS},
                          **{k: v for k, v in overrides.items() if v is not None})

    def parameters(self) -> Dict[str, Any]:
        """The options that change a scan's results (recorded in the manifest, compared on resume).

        In-memory data (``train=`` a DataFrame…) is recorded by what it is; its content is in the
        manifest's dataset fingerprint.
        """
        from .loaders.memory import describe, is_path

        out = {k: v for k, v in self.options().items() if k not in _NOT_PARAMETERS}
        for key in ("train", "test"):
            if out[key] is not None and not is_path(out[key]):
                out[key] = describe(out[key])
        return out

    def check(self) -> "ScanConfig":
        """Refuse a bad option before the scan reads or writes anything; returns the config.

        Every group's own check, what the whole scan needs (an output directory, both splits), and
        the names looked up: the encoder and verifier in their registries, a calibration on disk.
        """
        for attr in GROUPS:
            getattr(self, attr).check()
        load = self.load
        if self.output.out is None:
            raise SibscanError("no output directory given; pass --out DIR")
        check_writable_dir(self.output.out, "--out")
        if self.encoding.cache_dir is not None:
            check_writable_dir(self.encoding.cache_dir, "--cache-dir")
        if load.train is None and load.index is None:
            raise SibscanError("no train data given; pass TRAIN (a path) or --index DIR")
        if load.test is None:
            raise SibscanError("no test data given; pass TEST (a path) after TRAIN")
        if load.index is not None and load.chunk_words is not None:
            raise SibscanError("--chunk-words cannot be combined with --index (the index holds whole documents)")
        if self.encoding.precomputed and (load.index is not None or load.chunk_words is not None):
            raise SibscanError("--train-features cannot be combined with "
                               f"{'--index' if load.index is not None else '--chunk-words'}: your embeddings are one "
                               "row per item of the two splits")
        if self.encoding.encoder is not None:
            check_image_size(self.encoding.encoder, self.encoding.image_size)  # also: the name is registered
        if self.search.extra_views:
            names = [*VIEWS, *(c.name for c in list_encoders())]
            bad = [v for v in self.search.extra_views if v not in names]
            if bad:
                raise SibscanError(f"unknown view {bad[0]!r} in --extra-views; available: none, {', '.join(names)}")
            if load.chunk_words is not None:
                raise SibscanError("--extra-views cannot be combined with --chunk-words (views propose whole items); "
                                   "drop one")
        if self.verification.verifier is not None:
            verifier_class(self.verification.verifier)
        if self.output.calibration is not None:
            from .verdict.record import resolve

            resolve(self.output.calibration)
        return self


def _presets_dir() -> Path:
    return Path(configs.__file__).resolve().parent


def list_presets() -> Dict[str, Path]:
    """Preset name (file stem) -> path, for the TOML files in ``configs/``."""
    return {p.stem: p for p in sorted(_presets_dir().glob("*.toml"))}


def load_config_file(name_or_path: str) -> Dict[str, Any]:
    """Read a TOML config (a path, or the stem of a preset in ``configs/``) into a flat dict.

    The options are the keys of a ``[scan]`` table, or of the top level in a file without one; they are
    checked as flags are: another section (``[Scan]``), a key beside ``[scan]``, an unknown key or a value
    of the wrong type (``verify = "no"``) is refused naming the file and the key, with the nearest
    valid name.
    """
    path = Path(name_or_path)
    if not path.exists():
        presets = list_presets()
        if name_or_path not in presets:
            raise SibscanError(
                f"config {name_or_path!r} is neither a file nor a preset; presets: {', '.join(presets)}"
            )
        path = presets[name_or_path]
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SibscanError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise SibscanError(f"{path}: cannot read config ({exc.strerror})") from None
    return _checked_options(path, data)


def _checked_options(path: Path, data: Dict[str, Any]) -> Dict[str, Any]:
    """The scan options of a parsed TOML file (see :func:`load_config_file`), each key known and typed."""
    scan = data.get("scan")
    if scan is not None and not isinstance(scan, dict):
        raise SibscanError(f"{path}: 'scan' must be a section [scan] holding the options, got {scan!r}")
    for key, value in data.items():
        if key == "scan":
            continue
        if isinstance(value, dict):
            raise SibscanError(f"{path}: unknown section [{key}]{suggest(key, ['scan'])}; the options go under [scan] "
                               "(or at the top level of a file without sections)")
        if scan is not None:
            raise SibscanError(f"{path}: key {key!r} is outside [scan], where it would be ignored; "
                               "move it under [scan]")
    hints = {name: typing.get_type_hints(group)[name] for name, group in ((n, GROUPS[OWNER[n]]) for n in OWNER)}
    section = "[scan] " if scan is not None else ""
    out = {}
    for key, value in (data if scan is None else scan).items():
        name = key.replace("-", "_")
        if isinstance(value, dict):
            raise SibscanError(f"{path}: unknown section [scan.{key}]; the options are keys of [scan]")
        if name not in hints:
            raise SibscanError(f"{path}: unknown option {section}{key!r}{suggest(name, hints)}; "
                               f"valid: {', '.join(sorted(hints))}")
        out[name] = check_value(value, hints[name], f"{path}: {section}{key}")
        try:  # the field's declared choices and bounds, as its flag's (k = 0 is --k 0)
            check_field(GROUPS[OWNER[name]], name, value)
        except SibscanError as exc:
            raise SibscanError(f"{path}: {section}{key} = {value!r}: {exc}") from None
    return out
