"""Every command's --help reads like its peers' (issue 29): options in panels, a fixed set of values shown
as a choice and refused by the parser, placeholders in capitals, one meaning per short flag, and no option
that is both required and defaulted.  Walks every command ``sibscan --help`` lists (and ``index``'s)."""
from __future__ import annotations

import importlib.util
import re

import pytest
from typer.testing import CliRunner

from _helpers import cli_commands
from sibscan.cli import app
from sibscan.options import PANELS

runner = CliRunner()
WIDE = {"COLUMNS": "1000"}  # one line per option row


COMMANDS = cli_commands()
IDS = [" ".join(p) or "sibscan" for p, _ in COMMANDS]


def _help(*path: str) -> str:
    res = runner.invoke(app, [*path, "--help"], env=WIDE)
    assert res.exit_code == 0, res.output
    return res.output


def _panels(text: str) -> dict:
    """Panel title -> the option rows under it."""
    panels, title = {}, None
    for line in text.splitlines():
        head = re.match(r"╭─ (.+?) ─", line)
        if head:
            title = head.group(1)
            panels[title] = []
        elif line.startswith("│") and title is not None:
            panels[title].append(line.strip("│ "))
    return panels


def _row(text: str, flag: str) -> str:
    """The help row of ``flag``."""
    rows = [r for rows in _panels(text).values() for r in rows if re.match(rf"(\* +)?{re.escape(flag)}\b(?!-)", r)]
    assert len(rows) == 1, (flag, rows)
    return rows[0]


def test_scan_help_shows_its_options_in_panels_in_the_order_of_the_flow():
    text = _help("scan")
    panels = _panels(text)
    assert [t for t in panels if t not in ("Arguments", "Options")] == list(PANELS)
    assert [r.split()[0] for r in panels["Options"]] == ["--config", "--json", "--quiet", "--help"]
    where = {r.split()[0]: title for title, rows in panels.items() for r in rows}
    expected = {"--index": "Inputs", "--modality": "Inputs", "--label": "Inputs", "--chunk-words": "Inputs",
                "--encoder": "Encoding", "--train-features": "Encoding", "--k": "Search", "--directions": "Search",
                "--verify": "Verification", "--cascade": "Verification", "--cutoff": "Cutoff",
                "--calibration": "Cutoff", "--baseline-pairs": "Cutoff", "--out": "Output", "--force": "Output",
                "--device": "Performance", "--batch-size": "Performance", "--backend": "Performance",
                "--engine": "Performance", "--block-size": "Performance", "--cache-dir": "Performance"}
    assert {flag: where.get(flag) for flag in expected} == expected


def test_a_shared_option_sits_in_the_same_panel_in_every_command():
    """The panel is a property of the option group: index build shows the scan's panels; the cutoff options
    of report, check and split sit where the scan's do."""
    def panel_of(path):
        return {r.lstrip("* ").split()[0]: t for t, rows in _panels(_help(*path)).items() for r in rows
                if r.lstrip("* ").startswith("--")}

    scan = panel_of(["scan"])
    build = panel_of(["index", "build"])
    shared = set(scan) & set(build) - {"--help", "--quiet", "--json"}
    assert {"--modality", "--encoder", "--device", "--out", "--force"} <= shared
    assert {f: build[f] for f in shared} == {f: scan[f] for f in shared}
    assert (build["--encoder"], build["--out"], scan["--cutoff"]) == ("Encoding", "Output", "Cutoff")
    shown = [t for t in _panels(_help("index", "build")) if t in PANELS]
    assert shown == sorted(shown, key=PANELS.index) == ["Inputs", "Encoding", "Output", "Performance"]
    for path in (["report"], ["check"], ["split"]):
        panels = panel_of(path)
        assert panels["--cutoff"] == panels["--calibration"] == panels["--force"] == scan["--cutoff"], path


CHOICES = [
    (["scan"], "--modality", ("table", "text", "image")),
    (["scan"], "--backend", ("auto", "torch", "faiss", "numpy")),
    (["scan"], "--engine", ("local", "ray")),
    (["index", "build"], "--modality", ("table", "text", "image")),
    (["twins"], "--modality", ("table", "text", "image")),
    (["encoders"], "--modality", ("table", "text", "image")),
    (["calibrate"], "--ui", ("web", "terminal", "none")),
    (["split"], "--linkage", ("complete", "single")),
    (["temporal"], "--normalisation", ("demean", "znorm")),
    (["temporal"], "--engine", ("local", "ray")),
    (["augment"], "--format", ("auto", "tsv", "ts")),
    (["contamination"], "--engine", ("local", "ray")),
    (["audit"], "--task", ("auto", "classification", "regression", "forecast")),
    (["audit"], "--mode", ("auto", "max", "min")),
]


@pytest.mark.parametrize("path, flag, choices", CHOICES, ids=[f"{' '.join(p)} {f}" for p, f, _ in CHOICES])
def test_a_fixed_set_of_values_is_shown_and_checked_as_a_choice(path, flag, choices):
    assert re.search(rf"[<\[]{re.escape('|'.join(choices))}[>\]]", _row(_help(*path), flag))  # Typer 0.18: [a|b]
    res = runner.invoke(app, [*path, flag, "not-a-choice"], env=WIDE)
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1, res.output  # bad input: one line, exit 1
    assert f"Invalid value for '{flag}'" in res.output and all(repr(c) in res.output for c in choices), res.output


@pytest.mark.parametrize("path, flag, shown", [
    (["scan"], "--device", "<auto|cpu|cuda[:N]>"),
    (["contamination"], "--device", "<auto|cpu|cuda[:N]>"),
    (["scan"], "--directions", "<test-train|train-test|test-test>,..."),
    (["report"], "--format", "<json|md|html|csv>,..."),
])
def test_a_value_set_that_is_not_a_single_choice_is_shown_as_one(path, flag, shown):
    """cuda:N and comma lists cannot be a parser choice; help shows the set, the check lists it on a bad value."""
    assert shown in _row(_help(*path), flag)


def test_registry_names_are_listed_in_help():
    from sibscan.encoders.base import list_encoders
    from sibscan.verify.base import list_verifiers

    for path in (["scan"], ["index", "build"]):
        row = _row(_help(*path), "--encoder")
        assert "Available: " + ", ".join(c.name for c in list_encoders()) + "." in row
    assert "Available: " + ", ".join(c.name for c in list_verifiers()) + "." in _row(_help("scan"), "--verifier")


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=IDS)
def test_placeholders_are_in_capitals(path, cmd):
    text = _help(*path)
    usage = next(line for line in text.splitlines() if "Usage:" in line).split("Usage:")[1].split()
    for piece in usage[len(path) + 1:]:
        assert re.fullmatch(r"\[?[A-Z][A-Z0-9_]*(\.\.\.)?\]?(\.\.\.)?", piece), f"usage piece {piece!r}: {usage}"
    if importlib.util.find_spec("typer._click") is None:
        return  # a Typer on click itself (the lower bound, 0.18) names arguments by parameter in its panel
    for row in _panels(text).get("Arguments", []):
        name = row.lstrip("* ").split()[0]
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*(\.\.\.)?", name), f"argument {name!r} in {' '.join(path)}"


def test_a_short_flag_means_one_thing_in_every_command():
    meaning = {}
    for path, cmd in COMMANDS:
        for p in cmd.params:
            names = [*p.opts, *p.secondary_opts]
            long = next((o for o in names if o.startswith("--")), None)
            for short in (o for o in names if re.fullmatch(r"-\w", o)):
                meaning.setdefault(short, {}).setdefault(long, []).append(" ".join(path) or "sibscan")
    two = {short: longs for short, longs in meaning.items() if len(longs) > 1}
    assert not two, f"short flags with two meanings: {two}"
    assert meaning["-c"] == {"--classifier": ["temporal"]}  # the README's 'temporal ... -c euclidean-1nn'


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=IDS)
def test_no_option_is_both_required_and_defaulted(path, cmd):
    text = _help(*path)
    for p in cmd.params:
        if p.param_type_name != "option" or p.hidden or p.name == "help":
            continue
        row = _row(text, next(o for o in p.opts if o.startswith("--")))
        if re.search(r"\brequired\b", row):
            assert not re.search(r"default[:s]", row), f"{' '.join(path)}: {row}"


@pytest.mark.parametrize("args, words", [
    (["scan", "a", "b", "--kk", "3"], ["sibscan scan:", "No such option", "--kk", r"(Possible options: |Did you mean ')--k\b", "sibscan scan --help"]),
    (["--bogus"], ["sibscan:", "No such option", "--bogus"]),
    (["index", "build", "--x"], ["sibscan index build:", "No such option", "--x"]),
    (["check"], ["sibscan check:", "Missing argument 'SCAN_DIR'"]),
    (["nosuch"], ["No such command 'nosuch'"]),
])
def test_a_command_line_the_parser_refuses_is_one_line_and_exit_1(args, words):
    """Bad input like any other (the parser's own box of usage, hint and error exited 2 in five lines).
    The parser's words differ by version ("No such option: --kk (Possible options: --k)" on Typer's
    own click, "No such option '--kk'. Did you mean '--k'?" on click 8.1 under Typer 0.18)."""
    res = runner.invoke(app, args, env=WIDE)
    assert res.exit_code == 1, res.output
    assert len(res.output.strip().splitlines()) == 1 and all(re.search(w, res.output) for w in words), res.output


def test_sibscan_alone_still_shows_the_help():
    res = runner.invoke(app, [], env=WIDE)
    assert "Usage:" in res.output and "scan" in res.output
