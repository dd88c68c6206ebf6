"""Shared fixtures and markers.

CUDA tests carry ``@pytest.mark.cuda`` and are skipped with a reason where torch sees no GPU.
Browser tests carry ``@pytest.mark.browser``: skipped where /usr/bin/chromium is missing, except under
CI (CI=true), where a missing browser is a failure.
"""
from __future__ import annotations

import os
import shutil

import pytest


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    cuda = _has_cuda()
    chromium = shutil.which("chromium") or os.path.exists("/usr/bin/chromium")
    in_ci = os.environ.get("CI", "").lower() == "true"
    for item in items:
        if "cuda" in item.keywords and not cuda:
            item.add_marker(pytest.mark.skip(reason="no CUDA GPU visible to torch (runs on the GPU machine via benchmarks/gpu_check.sh)"))
        if "browser" in item.keywords and not chromium and not in_ci:
            item.add_marker(pytest.mark.skip(reason="Debian chromium not installed (apt-get install chromium chromium-driver)"))
