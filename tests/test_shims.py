"""Shims and doubles stay out (issue 33): one function per name that means one thing, one progress
module, no test scaffolding inside the installed package."""
from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import sibscan.report

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = [ROOT / "sibscan", ROOT / "kernels" / "sibscan" / "kernels",
                ROOT / "calibration" / "sibscan" / "calibration"]


def _modules():
    for folder in PACKAGE_DIRS:
        for path in sorted(folder.rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def test_one_function_is_called_headline():
    """``headline`` is the verdict's headline object (sibscan.verdict.headline.headline); the
    properties of that name (Verdict.headline, CheckResult.headline) return that same object.  The
    report's opening sentence with accuracy is ``sentence_with_accuracy``, not a second ``headline``."""
    functions = [path.relative_to(ROOT).as_posix() for path, tree in _modules() for node in tree.body
                 if isinstance(node, ast.FunctionDef) and node.name == "headline"]
    assert functions == ["sibscan/verdict/headline.py"]
    assert "headline" not in sibscan.report.__all__ and "sentence_with_accuracy" in sibscan.report.__all__


def test_progress_is_shown_by_one_module():
    """Every long loop calls sibscan.progress directly; no module subclasses its Bar to reorder arguments."""
    subclasses = [f"{path.relative_to(ROOT).as_posix()}:{node.name}" for path, tree in _modules()
                  for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                  and any(getattr(base, "id", getattr(base, "attr", None)) == "Bar" for base in node.bases)]
    assert subclasses == []


def test_planted_scans_live_with_the_tests():
    """The planted scan and its oracle are test scaffolding: tests/planted_scan.py, not the installed
    sibscan.calibration.synthetic (which only tests imported)."""
    import planted_scan

    assert importlib.util.find_spec("sibscan.calibration.synthetic") is None
    assert callable(planted_scan.planted_scan) and callable(planted_scan.write_oracle_labels)


def test_packages_imported_eagerly_stay_light():
    """sibscan.contamination and sibscan.engines import their public names at the top (the lazy facades cost
    more than they saved, issue 33): that must not pull in torch, Ray, transformers or aeon."""
    code = ("import sys, sibscan.contamination, sibscan.engines; "
            "print(sorted(m for m in ('torch', 'ray', 'transformers', 'aeon') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
