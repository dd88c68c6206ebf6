"""Errors that sibscan raises for bad input or bad use.

A :class:`SibscanError` is a *user* error: the CLI prints its one-line message on stderr and
exits with code 1, never a traceback.  Anything else escaping is a bug in sibscan.
"""
from __future__ import annotations

__all__ = ["SibscanError", "InputError", "CompatibilityError", "MissingDependencyError"]


class SibscanError(Exception):
    """A user error with a one-line message that says what to do next."""


class InputError(SibscanError, ValueError):
    """Bad input data: names the file and row where it can."""

    def __init__(self, message: str, *, path: object = None, row: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if row is not None:
                where += f", row {row}"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.row = row


class CompatibilityError(SibscanError):
    """A calibration, cache or index made under another encoder/verifier/dataset."""


class MissingDependencyError(SibscanError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str = ""):
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"{package} is needed{what}; install it with: pip install 'sibscan[{extra}]'"
        )
        self.package = package
        self.extra = extra


def require(module: str, extra: str, purpose: str = ""):
    """Import an optional dependency lazily, or raise :class:`MissingDependencyError`."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(module.split(".")[0], extra, purpose) from exc
