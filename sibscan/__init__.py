"""sibscan: find the training-set siblings of evaluation items and report the sibling rate.

The public API is listed in ``__all__``; ``sibscan.kernels`` (compute primitives) stays private.
Attributes are imported lazily so that ``import sibscan`` stays light (no torch, no faiss).
"""
from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sibscan")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

# public name -> module that defines it
_API = {
    "CompatibilityError": "sibscan.errors",
    "InputError": "sibscan.errors",
    "Items": "sibscan.items",
    "Neighbours": "sibscan.scandir",
    "ScanDir": "sibscan.scandir",
    "SibscanError": "sibscan.errors",
    "get_encoder": "sibscan.encoders",
    "get_verifier": "sibscan.verify",
    "list_encoders": "sibscan.encoders",
    "list_verifiers": "sibscan.verify",
    "resolve_device": "sibscan.device",
}

__all__ = sorted([*_API, "__version__"])


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'sibscan' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
