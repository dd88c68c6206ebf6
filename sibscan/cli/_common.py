"""Helpers shared by the CLI commands: user-error handling and option parsing."""
from __future__ import annotations

import errno
import functools
import logging
import sys
from typing import Callable, List, Optional, TypeVar

import typer

from ..errors import SibscanError

F = TypeVar("F", bound=Callable)

log = logging.getLogger("sibscan")


_OS_FIXES = {
    errno.ENOSPC: "the disk is full: free some space (or choose another --out) and re-run the same command; "
                  "what was finished is kept and resumed",
    errno.EDQUOT: "the disk quota is used up: free some space and re-run the same command; what was finished is kept",
    errno.EACCES: "permission denied: fix the permissions or choose another path",
    errno.EPERM: "permission denied: fix the permissions or choose another path",
    errno.EROFS: "the file system is read-only: choose another path",
    errno.ENOENT: "no such file or folder",
}


def os_error_line(exc: OSError) -> str:
    """An operating-system error (full disk, permissions, a vanished file) as one line naming the file and the fix."""
    where = f"{exc.filename}: " if exc.filename else ""
    fix = _OS_FIXES.get(exc.errno or -1)
    what = exc.strerror or str(exc)
    return f"{where}{what}" + (f" ({fix})" if fix and fix != "no such file or folder" else "")


def user_errors(fn: F) -> F:
    """Turn a :class:`SibscanError` (or an operating-system error: a full disk, a permission) into one
    line on stderr and exit code 1 (no traceback); Ctrl-C into exit code 130."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SibscanError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1)
        except OSError as exc:
            typer.echo(f"error: {os_error_line(exc)}", err=True)
            raise typer.Exit(1)
        except KeyboardInterrupt:
            typer.echo("interrupted; re-run the same command to resume", err=True)
            raise typer.Exit(130)

    return wrapper  # type: ignore[return-value]


def parse_float_list(text: Optional[str], what: str) -> Optional[List[float]]:
    """Parse ``"0.1,0.2"`` into floats (``--augment``, ``--padding``), or raise a user error naming the option."""
    if text is None:
        return None
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise SibscanError(f"{what} takes comma-separated numbers, got {text!r}") from None


def parse_int_list(text: Optional[str], what: str) -> Optional[List[int]]:
    if text is None:
        return None
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise SibscanError(f"{what} takes comma-separated integers, got {text!r}") from None


def setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("sibscan").setLevel(level)
