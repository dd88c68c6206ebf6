"""Checking the keys and values of a config file against typed option fields, as flags are checked.

A flag that does not exist or a value of the wrong type is refused by the command line; a TOML file
held the same options but was read without either check (a ``[Scan]`` section or a key beside
``[scan]`` ignored, ``verify = "no"`` kept as a string).  :func:`suggest` and :func:`check_value`
are the two rules, for any config kind whose options are typed dataclass fields.
"""
from __future__ import annotations

import difflib
import typing
from typing import Any, Iterable

from .errors import SibscanError

__all__ = ["check_value", "suggest"]


def suggest(name: str, valid: Iterable[str]) -> str:
    """``" (did you mean 'k'?)"`` for the valid name closest to ``name`` (case ignored), or ``""``."""
    valid = list(valid)
    lower = {v.lower(): v for v in valid}
    if name.lower() in lower:
        return f" (did you mean {lower[name.lower()]!r}?)"
    close = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.6)
    return f" (did you mean {lower[close[0]]!r}?)" if close else ""


def _kind(hint: Any) -> Any:
    """The type a field holds, without Optional."""
    if typing.get_origin(hint) is typing.Union:
        return next(a for a in typing.get_args(hint) if a is not type(None))
    return hint


def check_value(value: Any, hint: Any, where: str) -> Any:
    """``value`` when it has the type ``hint`` names (as a flag of that type would be parsed), else a
    one-line :class:`SibscanError` naming ``where``: a bool must be true/false (not "no"), an int a whole
    number, a float a number, a str text, a tuple of str a comma list or a list of text."""
    kind = _kind(hint)
    if kind is bool:
        ok, want = isinstance(value, bool), "true or false"
    elif kind is int:
        ok, want = isinstance(value, int) and not isinstance(value, bool), "a whole number"
    elif kind is float:
        ok, want = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif typing.get_origin(kind) is tuple:
        ok = isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        want = 'a comma list "a,b" or a list ["a", "b"]'
    else:
        ok, want = isinstance(value, str), "a string"
    if not ok:
        raise SibscanError(f"{where} must be {want}, got {value!r}")
    return value
