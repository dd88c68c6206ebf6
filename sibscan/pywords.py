"""The Python API's words for the messages it shares with the command line.

A check below both front ends (``EncoderOptions.check``, ``check_cutoff_value``, the calibration's
refusals…) names what to change the way a shell user types it: ``--features-id NAME``, ``--no-verify``,
``'sibscan calibrate SCAN_DIR'``.  From Python the same refusal should name the keyword and the
method: ``features_id=NAME``, ``verify=False``, ``scan.calibrate()``.  The CLI keeps its words (tests
pin them); :func:`python_words` rewrites the message of a :class:`~sibscan.errors.SibscanError` on
its way out of an API call, from one map of flag → keyword, the one the CLI is generated from
(each field's flags in :mod:`sibscan.options`).  A flag of another command (``--n-pairs`` of
calibrate) becomes its keyword only where the called method takes a keyword of that name; anything
else is left as it is, so a reworded message never names a keyword that does not exist.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import re
from typing import Callable, Collection, Dict, Iterable, Mapping, Optional, Tuple

from .errors import SibscanError

__all__ = ["SYNONYMS", "did_you_mean", "flag_keywords", "keywords_of", "python_words", "reword", "unknown_keyword"]

#: words used elsewhere for our keywords, so that a near miss of them suggests ours (where the call takes it)
SYNONYMS = {"threshold": "cutoff", "similarity_threshold": "cutoff", "top_k": "k", "n_neighbors": "k",
            "n_neighbours": "k", "verbose": "progress", "embeddings_train": "train_features",
            "embeddings_test": "test_features", "model_name": "encoder"}

#: ``'sibscan CMD …'`` commands that a Python user runs as a call: the call, and what "command" becomes
_CALLS = {"scan": "sibscan.scan", "calibrate": "scan.calibrate", "report": "scan.report"}
#: placeholders of the CLI's positional arguments, in a Python user's words
_POSITIONAL = {"TRAIN": "train=", "TEST": "test="}

_VALUE = r"'[^']*'|-?\d+(?:\.\d+)?(?:e-?\d+)?\b|[A-Z][A-Z_]*\b|[/.~][^\s;,)]*"
_PATTERN = re.compile(
    r"'sibscan (?P<cmd>[a-z]+)(?P<args>[^']*)'(?P<command> command)?"  # a quoted command
    r"|\bsibscan calibrate SCAN_DIR\b"  # the same, unquoted
    rf"|--(?P<flag>[a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?: (?P<value>{_VALUE}))?"
    r"|\b(?P<positional>TRAIN|TEST)\b"
)


@functools.lru_cache(maxsize=None)
def _scan_options() -> Tuple[Dict[str, str], frozenset]:
    """(long flag → keyword, the bool keywords) of every scan option, from the fields' own flags."""
    from .options import GROUPS

    flags, bools = {}, set()
    for group in GROUPS.values():
        for f in dataclasses.fields(group):
            for flag in f.metadata["flags"]:
                if flag.startswith("--"):
                    flags[flag[2:]] = f.name
            if isinstance(f.default, bool) or "bool" in str(f.type):
                bools.add(f.name)
    return flags, frozenset(bools)


def flag_keywords() -> Dict[str, str]:
    """Every scan option's long flag (``--features-id``) and its keyword (``features_id``)."""
    return {f"--{flag}": name for flag, name in _scan_options()[0].items()}


def reword(text: str, keywords: Collection[str] = (), bools: Collection[str] = (), *,
           scan_options: bool = True) -> str:
    """``text`` with CLI flags and commands in Python words.

    Parameters
    ----------
    text : str
        A message worded for the command line.
    keywords, bools : collection of str
        The keywords (and which of them are bools) of the called method besides the scan options:
        a flag ``--n-pairs`` becomes ``n_pairs=`` only where ``n_pairs`` is among them.
    scan_options : bool
        Whether every scan option's flag becomes its keyword (the called function takes them all, as
        :func:`sibscan.scan` does); False: only ``keywords`` (``sibscan.find_twins``' ``decimals=``).

    Returns
    -------
    str
        ``--features-id NAME`` → ``features_id=NAME``, ``--no-verify`` → ``verify=False``, ``--force``
        → ``force=True``, ``unknown --backend 'x'`` → ``unknown backend='x'``, ``'sibscan calibrate
        SCAN_DIR'`` → ``scan.calibrate()``, ``'sibscan report SCAN_DIR --predictions FILE'`` →
        ``scan.report(predictions=FILE)``.
    """
    scan_flags, scan_bools = _scan_options() if scan_options else ({}, frozenset())
    bools = set(scan_bools) | set(bools)

    def keyword(flag: str) -> Optional[Tuple[str, bool]]:
        """(keyword, whether it is the negation ``--no-X``) of a flag, or None when there is none."""
        for name, negated in ((flag, False), (flag[3:], True) if flag.startswith("no-") else (None, False)):
            if name is None:
                continue
            kw = scan_flags.get(name) or (name.replace("-", "_") if name.replace("-", "_") in keywords else None)
            if kw is not None and (not negated or kw in bools):
                return kw, negated
        return None

    def as_keyword(flag: str, value: Optional[str]) -> Optional[str]:
        """``kw=value``, ``kw=True``/``kw=False`` for a bool (a value after it is left after it), or None."""
        found = keyword(flag)
        if found is None:
            return None
        kw, negated = found
        if kw in bools:
            return f"{kw}={not negated}" + (f" {value}" if value is not None else "")
        return f"{kw}={value or ''}"

    def call(cmd: str, args: str) -> Optional[str]:
        if cmd not in _CALLS:
            return None
        given = [as_keyword(m.group("flag"), m.group("value")) for m in _PATTERN.finditer(args) if m.group("flag")]
        if any(g is None for g in given):  # a flag this call has no keyword for: the command stays as it is
            return None
        return f"{_CALLS[cmd]}({', '.join(given)})"

    def one(m: re.Match) -> str:
        if m.group("cmd") is not None:
            made = call(m.group("cmd"), m.group("args"))
            if made is None:
                return m.group(0)
            return made + (" call" if m.group("command") else "")
        if m.group("flag") is not None:
            made = as_keyword(m.group("flag"), m.group("value"))
            return m.group(0) if made is None else made
        if m.group("positional") is not None:
            return _POSITIONAL[m.group("positional")]
        return f"{_CALLS['calibrate']}()"

    return _PATTERN.sub(one, text)


def keywords_of(functions: Iterable[Callable]) -> Tuple[set, set]:
    """The keyword parameters of ``functions`` and which of them default to a bool."""
    names, bools = set(), set()
    for fn in functions:
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.add(p.name)
                if isinstance(p.default, bool):
                    bools.add(p.name)
    return names, bools


def _call_name(fn: Callable) -> str:
    """How a user calls ``fn``: ``Scan.report``, ``Scan`` for a constructor, ``sibscan.scan``."""
    name = fn.__qualname__
    if name.endswith(".__init__"):
        return name[: -len(".__init__")]
    return name if "." in name else f"sibscan.{name}"


def python_words(*also: Callable[[], Callable], scan_options: bool = True) -> Callable:
    """Decorate an API function: a :class:`SibscanError` leaving it is reworded by :func:`reword`, and an
    unknown keyword is refused before the call with the closest valid one (:func:`unknown_keyword`).

    ``also`` are zero-argument callables returning the functions the decorated one passes keywords
    on to (``lambda: sibscan.calibration.calibrate``), imported only when an error needs them.  The
    exception keeps its type, traceback and attributes; only its message changes.  A function taking
    ``**options`` checks their names itself (against what it passes them on to).  ``scan_options``: as
    :func:`reword`'s (False for a function that does not take the scan's options as keywords).
    """
    def wrap(fn: Callable) -> Callable:
        params = inspect.signature(fn).parameters.values()
        named = None if any(p.kind is p.VAR_KEYWORD for p in params) else keywords_of([fn])[0]

        @functools.wraps(fn)
        def _python_words_call(*args, **kwargs):  # its name marks the frame for errors.user_stacklevel
            if named is not None:
                unknown = sorted(set(kwargs) - named)
                if unknown:  # Python's own TypeError would name neither the closest keyword nor the valid ones
                    valid = [n for n in named if not n.startswith("_") and n != "self"]
                    raise unknown_keyword(_call_name(fn), unknown[0], valid, SYNONYMS)
            try:
                return fn(*args, **kwargs)
            except SibscanError as exc:
                if exc.args and isinstance(exc.args[0], str):
                    keywords, bools = keywords_of([fn, *(get() for get in also)])
                    exc.args = (reword(exc.args[0], keywords, bools, scan_options=scan_options), *exc.args[1:])
                raise
        return _python_words_call
    return wrap


def did_you_mean(name: str, valid: Iterable[str], synonyms: Optional[Mapping[str, str]] = None) -> str:
    """``did you mean 'cutoff'?`` for the closest valid name (difflib), or ``""`` when none is close.

    ``synonyms`` maps words people use elsewhere to ours (``"threshold": "cutoff"``): a name close
    to a synonym suggests the name it stands for.
    """
    choices = {v: v for v in valid}
    for word, ours in (synonyms or {}).items():
        if ours in choices:  # a synonym of a keyword this call does not take suggests nothing
            choices.setdefault(word, ours)
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.75)
    if not close:
        return ""
    ours = choices[close[0]]
    aka = f" (sibscan's word for {close[0]!r})" if close[0] != ours else ""
    return f"did you mean {ours!r}{aka}?"


def unknown_keyword(function: str, name: str, valid: Iterable[str],
                    synonyms: Optional[Mapping[str, str]] = None) -> TypeError:
    """Python's own TypeError for an unexpected keyword, with the closest valid one and the list."""
    valid = sorted(valid)
    hint = did_you_mean(name, valid, synonyms)
    takes = f"valid: {', '.join(valid)}" if valid else "it takes no keyword arguments"
    return TypeError(f"{function}() got an unexpected keyword argument {name!r}{'; ' + hint if hint else ''} "
                     f"({takes})")
