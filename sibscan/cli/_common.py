"""Helpers shared by the CLI commands: user-error handling, the flags every command has, option parsing.

Conventions of every command: the data are positional arguments; every option shows its default in
``--help`` (``[default: X]``, or "(default: …)" in its help where the default is a behaviour);
boolean flags take no value and show no metavar; a command that prints a result has ``--json``;
``--quiet`` silences progress and notes on stderr (results and errors still print).
"""
from __future__ import annotations

import functools
import logging
import sys
from typing import Callable, List, Optional, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from ..errors import SibscanError
from ..progress import set_quiet

F = TypeVar("F", bound=Callable)

__all__ = ["Command", "Group", "flag", "json_flag", "parse_int_list", "quiet", "quiet_flag", "setup_logging",
           "user_errors"]


class Command(TyperCommand):
    """A command whose ``--help`` flag, like every flag, shows no value metavar."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


class Group(TyperGroup):
    """A group of commands (``sibscan``, ``sibscan index``), its ``--help`` as :class:`Command`'s."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


def flag(*names: str, help: str):  # noqa: A002 - Typer's word
    """A boolean flag (off unless given): no value, no metavar."""
    return typer.Option(False, *names, help=help, metavar="", show_default=False)


def json_flag():
    return flag("--json", help="Print the result as JSON on stdout (for scripts).")


def quiet_flag():
    return flag("--quiet", "-q", help="No progress or notes on stderr; results and errors still print.")


def quiet(value: bool) -> None:
    """Apply a command's ``--quiet`` (the root's ``sibscan -q`` was applied before the command ran)."""
    if value:
        set_quiet(True)

log = logging.getLogger("sibscan")


def user_errors(fn: F) -> F:
    """Turn a :class:`SibscanError` into one line on stderr and exit code 1 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SibscanError as exc:
            typer.echo(f"error: {exc}", err=True)
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
