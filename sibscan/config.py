"""Scan configuration: one dataclass, filled from defaults < a TOML file < command-line flags.

Presets live as TOML files in the top-level ``configs/`` folder (installed as ``sibscan.configs``)
and are named by file stem: ``--config text-minilm`` or ``--config path/to/file.toml``.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .errors import SibscanError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ScanConfig", "load_config_file", "list_presets", "DIRECTIONS"]

#: (query split, neighbour split) of each search direction, by name
DIRECTIONS = {
    "test-train": ("test", "train"),
    "train-test": ("train", "test"),
    "test-test": ("test", "test"),
}


@dataclass
class ScanConfig:
    """Every option of a scan. Field names are the TOML keys and (with ``-``) the CLI flags."""

    train: Optional[str] = None
    test: Optional[str] = None
    out: Optional[str] = None
    #: a train index built by ``sibscan index build`` (replaces ``train``)
    index: Optional[str] = None
    modality: Optional[str] = None
    label: Optional[str] = None
    id: Optional[str] = None
    group: Optional[str] = None
    text_field: Optional[str] = None
    path_field: Optional[str] = None
    labels_train: Optional[str] = None
    labels_test: Optional[str] = None
    chunk_words: Optional[int] = None
    chunk_stride: Optional[int] = None
    # exact fingerprints
    decimals: int = 6
    znorm: bool = False
    # encoder
    encoder: Optional[str] = None
    model: Optional[str] = None
    pretrained: Optional[str] = None
    checkpoint: Optional[str] = None
    model_path: Optional[str] = None
    device: str = "auto"
    batch_size: Optional[int] = None
    cache_dir: Optional[str] = None
    # search
    k: int = 10
    k_reverse: int = 3
    directions: Tuple[str, ...] = ("test-train", "train-test", "test-test")
    backend: str = "auto"
    block_size: Optional[int] = None
    #: "local" or "ray" (the same blocks as Ray tasks; identical results)
    engine: str = "local"
    #: Ray cluster address ("auto" for the cluster this machine belongs to); None starts a local Ray
    address: Optional[str] = None
    # verification
    verify: Optional[bool] = None
    verifier: Optional[str] = None
    # cutoff and baseline
    cutoff: Optional[float] = None
    calibration: Optional[str] = None
    baseline_pairs: int = 100_000
    verified_baseline_pairs: int = 20_000
    seed: int = 0
    force: bool = False
    progress: bool = True

    def merged(self, overrides: Dict[str, Any]) -> "ScanConfig":
        """A copy with the non-None ``overrides`` applied (unknown keys are an error)."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise SibscanError(f"unknown scan option(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
        values = {k: v for k, v in overrides.items() if v is not None}
        if "directions" in values and isinstance(values["directions"], str):
            values["directions"] = tuple(d.strip() for d in values["directions"].split(",") if d.strip())
        if "directions" in values:
            values["directions"] = tuple(values["directions"])
            bad = [d for d in values["directions"] if d not in DIRECTIONS]
            if bad:
                raise SibscanError(f"unknown direction {bad[0]!r}; available: {', '.join(DIRECTIONS)}")
        return dataclasses.replace(self, **values)

    def parameters(self) -> Dict[str, Any]:
        """The options that change a scan's results (recorded in the manifest, compared on resume)."""
        skip = {"out", "force", "progress", "cache_dir", "device", "batch_size", "block_size", "calibration", "cutoff",
                "engine", "address"}
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in skip}


def _presets_dir() -> Path:
    from . import configs  # the top-level configs/ folder, installed as sibscan.configs

    return Path(configs.__file__).resolve().parent


def list_presets() -> Dict[str, Path]:
    """Preset name (file stem) -> path, for the TOML files in ``configs/``."""
    return {p.stem: p for p in sorted(_presets_dir().glob("*.toml"))}


def load_config_file(name_or_path: str) -> Dict[str, Any]:
    """Read a TOML config (a path, or the stem of a preset in ``configs/``) into a flat dict.

    The ``[scan]`` table is used when present, else the top level.
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
    data = data.get("scan", data)
    return {k.replace("-", "_"): v for k, v in data.items() if not isinstance(v, dict)}
