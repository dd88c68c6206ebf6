"""Helpers for the reliability suite (imported by its tests as ``rel_helpers``): small data written by the tests, the
CLI run as a user runs it.

Every test here is one case of issue 13 (a silent wrong answer, a traceback or hang, memory that
grew with the data, the labelling server, the outputs): it builds its own tiny input, and checks
that the answer is right or that the refusal is one line naming the file and the fix.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from typer.testing import CliRunner

from sibscan.cli import app

runner = CliRunner()

#: fast scan flags: a weight-free encoder, no verifier (no torch import), a small baseline
FAST = ("--encoder", "raw", "--no-verify", "--baseline-pairs", "500", "--no-progress")


def write_table(path: Path, values: np.ndarray, labels: Optional[Sequence] = None, fmt: str = "{!r}") -> Path:
    """A CSV with a header (``c0..c{d-1}`` and ``label`` when given), one row per item."""
    values = np.asarray(values, dtype=np.float64)
    head = [f"c{j}" for j in range(values.shape[1])] + (["label"] if labels is not None else [])
    lines = [",".join(head)]
    for i, row in enumerate(values):
        cells = [fmt.format(float(v)) for v in row]
        if labels is not None:
            cells.append(str(labels[i]))
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(*args: str):
    """Run ``sibscan ARGS`` in-process; the result has ``exit_code``, ``output`` (stdout + stderr) and ``stderr``."""
    return runner.invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *needles: str) -> None:
    """Exit 1, no traceback, and an ``error:`` line holding every needle."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


