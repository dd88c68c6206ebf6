"""Helpers shared by the CLI commands: user-error handling, the flags every command has, option parsing.

Conventions of every command: the data are positional arguments; every option shows its default in
``--help`` (``[default: X]``, or "(default: …)" in its help where the default is a behaviour);
boolean flags take no value and show no metavar; a command that prints a result has ``--json``;
``--quiet`` silences progress and notes on stderr (results and errors still print).
"""
from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import logging
import re
import sys
from enum import Enum
from typing import Callable, List, Optional, Sequence, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from ..errors import SibscanError
from ..progress import set_quiet

F = TypeVar("F", bound=Callable)

__all__ = ["Command", "Group", "choice", "conform", "flag", "json_flag", "parse_float_list", "parse_int_list", "setup_logging",
           "user_errors"]


class Command(TyperCommand):
    """A command whose ``--help`` flag, like every flag, shows no value metavar, and whose usage line
    shows its arguments as its peers' do: ``SCAN_DIR`` when required, ``[TRAIN]`` when not."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def format_help(self, ctx, formatter) -> None:
        for p in self.params:  # options valued by a registry's names (cli._options.REGISTERED) list them
            names = getattr(self.callback, "registered_names", {}).get(p.name)
            if names is not None and "Available:" not in (p.help or ""):
                p.help = f"{p.help} Available: {', '.join(names())}."
        return super().format_help(ctx, formatter)

    def collect_usage_pieces(self, ctx) -> List[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if p.param_type_name != "argument":
                pieces.extend(p.get_usage_pieces(ctx))
                continue
            name = p.metavar or p.name.upper()
            if p.nargs != 1 and not name.endswith("..."):
                name += "..."
            pieces.append(name if p.required else f"[{name}]")
        return pieces


class Group(TyperGroup):
    """A group of commands (``sibscan``, ``sibscan index``) that holds every command to the conventions
    of this module, wherever the command was declared (:func:`conform`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            conform(command)

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def make_context(self, info_name, args, parent=None, **extra):
        with _usage_errors_in_one_line():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        with _usage_errors_in_one_line():
            return super().invoke(ctx)


@contextlib.contextmanager
def _usage_errors_in_one_line():
    """A command line the parser refuses (an unknown option, a value outside its choices, a missing
    argument) is bad input like any other: one line on stderr that names the option and the fix, exit 1
    (the parser's own box of usage, hint and error exits 2)."""
    try:  # newer Typer runs on its own copy of click (as in cli._options)
        from typer._click.exceptions import UsageError
    except ImportError:  # an older Typer runs on click itself
        from click.exceptions import UsageError

    try:
        yield
    except UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `sibscan` alone shows the help, as asked
            raise
        path = exc.ctx.command_path if exc.ctx is not None else "sibscan"
        message = re.sub(r"\bValue error, ", "", exc.format_message()).replace("\n", " ").strip().rstrip(".")
        typer.echo(f"{path}: {message} (see {path} --help)", err=True)
        raise typer.Exit(1) from None


_QUIET_HELP = "No progress or notes on stderr; results and errors still print."


def _apply_quiet(ctx, param, value: bool) -> None:
    if value:
        set_quiet(True)


def _quiet_option():
    """A ``--quiet``/``-q`` option that applies itself (its value never reaches the command)."""
    probe = typer.Typer()

    @probe.command()
    def _probe(quiet: bool = typer.Option(False, "--quiet", "-q", metavar="", show_default=False, help=_QUIET_HELP,
                                          callback=_apply_quiet, expose_value=False)) -> None:
        """The one parameter, as Typer makes it."""

    return typer.main.get_command(probe).params[0]


def conform(command) -> None:
    """Hold ``command`` to the conventions: no value metavar on a flag (nor on ``--help``), ``--quiet``
    on every command, arguments named in capitals (``SCAN_DIR``), choices passed as plain strings, and a default in every option's help
    (an option that defaults to nothing and says nothing about it gets "(default: none)"; one whose
    help says it is required gets none)."""
    if isinstance(command, TyperGroup):
        return  # a group conforms its own commands
    if type(command) is TyperCommand:
        command.__class__ = Command  # same fields; only how its help is shown differs
    if command.callback is not None and not getattr(command.callback, "plain_values", False):
        command.callback = _plain_values(command.callback)
    names = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    for p in command.params:
        if p.param_type_name == "argument":
            if p.metavar is None:  # a placeholder in capitals, as the help text names it: SCAN_DIR, TRAIN
                p.metavar = re.sub(r"_arg$", "", p.name).upper()
            continue
        if p.param_type_name != "option":
            continue
        if p.is_flag or p.count:
            p.metavar = ""
        elif (p.default is None and not p.required and not p.hidden and not re.search(r"default: \S", p.help or "")
              and not re.search(r"\brequired\b", p.help or "")):
            p.help = f"{(p.help or '').rstrip()} (default: none)".strip()
    if "--quiet" not in names:
        quiet_option = _quiet_option()
        if "-q" in names:
            quiet_option.opts = ["--quiet"]
        command.params.append(quiet_option)


def choice(values: Sequence[str]) -> type:
    """The annotation of an option with a fixed set of ``values``: ``--help`` shows them and the parser
    refuses another value with the list.  An Enum (every Typer since 0.18 takes one; Literal needs a
    newer one); the command receives the plain string (:func:`conform` unwraps it)."""
    return Enum("Choice", {v: v for v in values}, type=str)


def _plain_values(callback: Callable) -> Callable:
    """``callback`` receiving a :func:`choice` option's value as the plain string, not the Enum member."""
    @functools.wraps(callback)
    def command(*args, **kwargs):
        return callback(*args, **{k: v.value if isinstance(v, Enum) else v for k, v in kwargs.items()})

    command.plain_values = True
    return command


def flag(*names: str, help: str, panel: Optional[str] = None):  # noqa: A002 - Typer's word
    """A boolean flag (off unless given): no value, no metavar; ``panel``: its help panel."""
    return typer.Option(False, *names, help=help, metavar="", show_default=False, rich_help_panel=panel)


def json_flag():
    return flag("--json", help="Print the result as JSON on stdout (for scripts).")



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


#: the exit status of a writer that SIGPIPE ended (128 + 13), as a shell reports it
_SIGPIPE_EXIT = 141


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush meets no closed pipe either."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # stdout that is no file (tests)
        pass


def user_errors(fn: F) -> F:
    """Turn a :class:`SibscanError` (or an operating-system error: a full disk, a permission) into one
    line on stderr and exit code 1 (no traceback); Ctrl-C into exit code 130; a closed output pipe
    into a quiet exit 141 (SIGPIPE's status)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:  # the reader went away ('| head -1'): stop quietly, as Unix tools do
            _stdout_to_devnull()
            raise typer.Exit(_SIGPIPE_EXIT)
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
