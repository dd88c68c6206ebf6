"""The linter is wired in and its exceptions can only shrink (issue 33).

CI (.ci/run) runs ``python -m ruff check .`` right after the install, with the rules in pyproject.toml's
``[tool.ruff]``. Files that still break a rule are listed in ``per-file-ignores``, each with its count of
long lines: an entry a file no longer needs, an entry for a file that is gone, and a file with more long
lines than its entry says all fail here, so the list only shrinks.
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def _ignores() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]["per-file-ignores"]


@lru_cache(maxsize=1)
def _found_without_ignores() -> Counter:
    """(file, rule) -> how many times ruff finds it with every per-file exception removed."""
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (it is in the dev extra)")
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--config", "lint.per-file-ignores = {}",
                          "--output-format", "json", "--exit-zero", "."], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return Counter((Path(d["filename"]).resolve().relative_to(ROOT).as_posix(), d["code"]) for d in json.loads(out))


def test_ci_runs_the_linter_after_the_install_and_before_the_tests():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install, lint, tests = (ci.index(cmd) for cmd in ("python -m pip install -e '.[dev]'\n", "python -m ruff check .\n",
                                                      "python -m pytest -q\n"))
    assert install < lint < tests
    assert 'stamp "the linter (python -m ruff check .)"' in ci[lint:tests]
    dev = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
    assert any(re.fullmatch(r"ruff>=[\d.]+", req) for req in dev)


def test_every_exception_is_still_needed():
    found = _found_without_ignores()
    unneeded = [f"{path}: {code}" for path, codes in _ignores().items() for code in codes
                if not (ROOT / path).is_file() or not found[(path, code)]]
    assert not unneeded, f"delete these per-file-ignores from pyproject.toml (no longer broken, or gone): {unneeded}"


def test_long_lines_only_shrink():
    """An E501 entry's comment is its file's count of long lines; a file may lose long lines, not gain them."""
    entry = re.compile(r'^"([^"]+)" = \[[^\]]*"E501"[^\]]*\]\s+# (\d+) lines?', re.M)
    counted = dict(entry.findall(PYPROJECT.read_text(encoding="utf-8")))
    assert set(counted) == {path for path, codes in _ignores().items() if "E501" in codes}
    found = _found_without_ignores()
    grown = {path: (found[(path, "E501")], int(n)) for path, n in counted.items() if found[(path, "E501")] > int(n)}
    assert not grown, f"more lines over 120 characters than pyproject.toml allows (found, allowed): {grown}"
