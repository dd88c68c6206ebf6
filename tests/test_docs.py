"""The code of every docs/integrations page runs, in order, as a reader would paste it."""
from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

import sibscan

PAGES = sorted((Path(__file__).resolve().parents[1] / "docs" / "integrations").glob("*.md"))
NEEDS = {"huggingface.md": ["datasets", "PIL"], "torchvision.md": ["torchvision", "pandas"],
         "numpy-pandas.md": ["pandas"], "own-embeddings.md": ["pandas"], "notebooks.md": ["pandas", "torch"]}


def blocks(page: Path):
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def test_every_integration_has_a_page_with_code():
    assert {p.name for p in PAGES} == set(NEEDS)
    assert all(blocks(p) for p in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_code_runs(page, tmp_path, monkeypatch):
    for module in NEEDS[page.name]:
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    real = sibscan.scan

    @functools.wraps(real)
    def small(*args, **kwargs):  # the pages' defaults, with a smaller random-pair baseline (speed only)
        kwargs.setdefault("baseline_pairs", 2000)
        kwargs.setdefault("verified_baseline_pairs", 300)
        kwargs.setdefault("progress", False)
        return real(*args, **kwargs)

    monkeypatch.setattr(sibscan, "scan", small)
    namespace: dict = {}
    for i, code in enumerate(blocks(page)):
        exec(compile(code, f"{page.name}[{i}]", "exec"), namespace)  # noqa: S102 - our own documentation
