"""The ``sibscan`` command line: a thin layer over the Python API, one module per command."""
from __future__ import annotations

import importlib
from typing import Optional

import typer

from ..progress import set_quiet
from ._common import Group, setup_logging
from .._version import __version__

app = typer.Typer(
    name="sibscan",
    help=(
        "Find training-set siblings of evaluation items: exact copies (fingerprints) and near copies "
        "(embeddings + verification), with a calibrated cutoff, and report the sibling rate next to "
        "the accuracy it qualifies."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=Group,
)

# One module per command; each defines ``register(app)``.
COMMANDS = ("twins", "encoders", "scan", "calibrate", "report", "check", "split", "index", "temporal", "augment",
            "contamination", "audit")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sibscan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit.", metavar=""
    ),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, metavar="",
                                help="More log output (-v info, -vv debug)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", metavar="", show_default=False,
                               help="No progress or notes on stderr, for every command (each also takes --quiet)."),
) -> None:
    setup_logging(verbose)
    set_quiet(quiet)  # every invocation decides afresh (tests run many in one process)


for _name in COMMANDS:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as a person reads it on the command line: "warning: ..." (the message says the file,
    row and fix), not Python's "path/to/module.py:126: UserWarning: ..." and the source line."""
    return f"warning: {message}\n"


def main() -> None:
    """The ``sibscan`` console command (and ``python -m sibscan``)."""
    import warnings

    warnings.formatwarning = _one_line_warning
    app()
