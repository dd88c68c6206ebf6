"""UCR datasets shipped inside aeon, located without importing aeon (its import takes seconds)."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Tuple

import pytest


def aeon_dataset(name: str) -> Tuple[Path, Path]:
    """(train, test) ``.ts`` files of a dataset aeon ships; skips the test where aeon is missing."""
    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("aeon is not installed (pip install 'sibscan[temporal]'); it ships the UCR test datasets")
    root = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / name
    return root / f"{name}_TRAIN.ts", root / f"{name}_TEST.ts"
