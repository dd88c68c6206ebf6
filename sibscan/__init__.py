"""sibscan: find the training-set siblings of evaluation items and report the sibling rate.

The public API is listed in ``__all__``; ``sibscan.kernels`` (compute primitives) stays private.
Attributes are imported lazily so that ``import sibscan`` stays light (no torch, no faiss): importing
every module behind ``__all__`` adds 170-300 ms to ``import sibscan``, and still 200 ms after
``sibscan.api`` (``python -X importtime``, 2 cores, issue 33).
"""
from __future__ import annotations

import importlib
import sys
import types

from ._version import __version__ as __version__  # re-exported: in __all__ below

# public name -> module that defines it
_API = {
    "AuditConfig": "sibscan.audit",
    "CompatibilityError": "sibscan.errors",
    "InputError": "sibscan.errors",
    "Items": "sibscan.items",
    "Neighbours": "sibscan.store.scandir",
    "Scan": "sibscan.api",
    "ScanConfig": "sibscan.config",
    "ScanDir": "sibscan.store.scandir",
    "SibscanError": "sibscan.errors",
    "TrainIndex": "sibscan.index",
    "TwinReport": "sibscan.twins",
    "accuracy_split": "sibscan.predictions",
    "assert_no_siblings": "sibscan.check",
    "assert_no_twins": "sibscan.twins",
    "build_report": "sibscan.report",
    "calibrate": "sibscan.calibration",
    "dataset_fingerprint": "sibscan.fingerprint",
    "decimals_sweep": "sibscan.twins",
    "find_twins": "sibscan.twins",
    "get_encoder": "sibscan.encoders",
    "get_verifier": "sibscan.verify",
    "group_ids": "sibscan.twins",
    "list_encoders": "sibscan.encoders",
    "list_verifiers": "sibscan.verify",
    "load": "sibscan.loaders",
    "load_calibration": "sibscan.calibration",
    "modality_of": "sibscan.loaders",
    "read_predictions": "sibscan.predictions",
    "resolve_device": "sibscan.device",
    "run_audit": "sibscan.audit",
    "run_scan": "sibscan.scan",
    "scan": "sibscan.api",
    "sibling_groups": "sibscan.groups",
    "verify_run": "sibscan.runrecord",
    "write_reports": "sibscan.report",
}

__all__ = sorted([*_API, "__version__"])

#: public submodules reached as attributes without importing them first (``sibscan.progress.set_quiet``);
#: not in ``__all__``, which names functions and classes
_SUBMODULES = ("progress",)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")  # importing sets it on the package
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'sibscan' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if isinstance(value, types.FunctionType) and module != "sibscan.api":  # sibscan.api words its own
        # The same functions serve the command line, whose messages name flags ('--decimals must be ...',
        # "run 'sibscan scan' first"); reached as sibscan.NAME they are the Python API and name keywords.
        from .pywords import python_words

        value = python_words(scan_options=False)(value)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*__all__, *_SUBMODULES])


class _Package(types.ModuleType):
    """``sibscan.scan`` stays the API function once the flow module of the same name is imported.

    Importing a submodule sets it as an attribute of its package, which would make ``sibscan.scan``
    the module ``sibscan/scan.py`` (``run_scan``) after the first scan.  The module is still
    ``sys.modules["sibscan.scan"]``, so ``from sibscan.scan import run_scan`` works as before.
    """

    def __setattr__(self, name, value):
        if name == "scan" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
