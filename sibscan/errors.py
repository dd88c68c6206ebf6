"""Errors that sibscan raises for bad input or bad use.

A :class:`SibscanError` is a *user* error: the CLI prints its one-line message on stderr and
exits with code 1, never a traceback.  Anything else escaping is a bug in sibscan.
"""
from __future__ import annotations

import sys

__all__ = ["SibscanError", "InputError", "CompatibilityError", "MissingDependencyError", "user_stacklevel"]

#: the frame of sibscan.pywords.python_words' wrapper around an API call (module, function name)
_API_WRAPPER = ("sibscan.pywords", "_python_words_call")


def user_stacklevel(level: int) -> int:
    """``warnings.warn``'s ``stacklevel`` for a warning meant for the user's line, past the Python API's wrappers.

    ``level`` counts as ``stacklevel`` does, from the function that calls ``warnings.warn`` (1: that
    function, 2: its caller, …) with no wrapper between; each :func:`sibscan.pywords.python_words`
    wrapper frame on the way adds one, so the warning points at the same line whether the function was
    reached as ``sibscan.NAME`` / a ``Scan`` method (wrapped) or from its module (not).
    """
    frame, i, extra = sys._getframe(2), 2, 0  # frame i is stacklevel i of the function calling warn
    while frame is not None and i <= level + extra:
        if (frame.f_globals.get("__name__"), frame.f_code.co_name) == _API_WRAPPER:
            extra += 1
        frame, i = frame.f_back, i + 1
    return level + extra


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
    """An optional dependency is missing, or installed but failing to import.

    The message names the extra to install and quotes the underlying ``ImportError`` (``cause``), so
    that a broken install (a package that is there but whose own imports fail) is not reported as a
    missing one.
    """

    def __init__(self, package: str, extra: str, purpose: str = "", cause: BaseException | None = None):
        what = f" for {purpose}" if purpose else ""
        if cause is not None and _installed(package):
            message = (f"{package} is installed but fails to import{what} ({type(cause).__name__}: {cause}); "
                       f"repair the install, e.g. pip install --force-reinstall 'sibscan[{extra}]'")
        else:
            quoted = f" ({cause})" if cause is not None else ""
            message = f"{package} is needed{what}; install it with: pip install 'sibscan[{extra}]'{quoted}"
        super().__init__(message)
        self.package = package
        self.extra = extra


def _installed(package: str) -> bool:
    """Whether ``package`` is found on the import path (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str, purpose: str = ""):
    """Import an optional dependency lazily, or raise :class:`MissingDependencyError` quoting why."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(module.split(".")[0], extra, purpose, cause=exc) from exc
