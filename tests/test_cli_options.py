"""One option system (issue 33): every flag of every command is a field of a typed option group, taken
through ``cli._options.with_options``; a flag name has one help and one type wherever it appears (or is on
the short, reasoned allow-list below); constraints are checked before any file is read; a renamed flag's
old name still works for one release, with a note."""
from __future__ import annotations

import dataclasses
import re
import typing

import pytest
from typer.testing import CliRunner

from _helpers import cli_commands
from sibscan.cli import app
from sibscan.cli._common import _QUIET_HELP
from sibscan.cli._options import _cli_type, declared_options
from sibscan.errors import SibscanError
from sibscan.options import GROUPS, CutoffOptions, LoadOptions, check_fields

runner = CliRunner()
COMMANDS = cli_commands()
IDS = [" ".join(p) or "sibscan" for p, _ in COMMANDS]

#: the program's own flags, on the root callback: --version (eager, prints and exits), -v (a count), --quiet
ROOT = {"version", "verbose", "quiet"}

#: flag -> how many different declarations it may have, and why: a word whose object is the command's own
#: (what it writes, forces, seeds or attaches), each help saying which
ALLOWED = {
    "--out": (8, "what each command writes: a scan, a report folder, a groups CSV, an index, a calibration, ..."),
    "--force": (5, "the refusal each command overrides: a finished scan, foreign labels, a calibration, ..."),
    "--seed": (5, "each command's own random draw: baseline pairs, the pair draw, the re-split, runs, walks"),
    "--format": (2, "the format of what the command writes: report files (a comma list), series files"),
    "--scan": (2, "what is attached to the scan: temporal's result; audit's record (and its labels as targets)"),
    "--labels": (2, "what is labelled: calibrate's pairs (same/different), contamination's examples (1/0)"),
    "--decimals": (2, "twins also takes a comma list, a sweep of roundings; the others one rounding"),
    "--id": (3, "audit reads several files (targets, splits) with it; index add defaults to the build's"),
    "--label": (2, "audit reads several files with it, and with --scan the scan's columns"),
    "--modality": (2, "encoders filters the list by it; the others read the items as it"),
    "--predictions": (2, "audit takes one file per run (repeatable); report and twins one file"),
    "--text-field": (2, "contamination names the examples' and the corpora's column, default 'text'"),
}


def _field(group: type, name: str) -> dataclasses.Field:
    return group.__dataclass_fields__[name[:-len("__old")] if name.endswith("__old") else name]


def _expected_flags(group: type, name: str) -> set:
    """The flags the declaration of ``name`` makes: its own (a toggle also --no-X), or its old names."""
    meta = _field(group, name).metadata
    if name.endswith("__old"):
        return set(meta["old"])
    flags = set(meta["flags"])
    hint = _cli_type(typing.get_type_hints(group)[_field(group, name).name])
    if hint is bool and meta["toggle"]:
        flags.add(f"--no-{meta['flags'][0][2:]}")
    return flags


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=IDS)
def test_every_option_is_declared_in_an_option_group(path, cmd):
    """A Typer option written by hand in a command's signature is not in ``declared_options``."""
    declared = declared_options(cmd)
    for p in cmd.params:
        if p.param_type_name != "option" or p.name == "help":
            continue
        if not path:
            assert p.name in ROOT, f"sibscan: {p.opts}"
            continue
        if p.name == "quiet" and p.help == _QUIET_HELP:  # the one every command gets (cli._common.conform)
            continue
        assert p.name in declared, f"{' '.join(path)}: {p.opts} is not declared in an option group"
        assert {*p.opts, *p.secondary_opts} == _expected_flags(declared[p.name], p.name), (path, p.opts)


def test_a_flag_has_one_help_and_type_in_every_command():
    """Same name, same meaning: the help and type of each visible flag are one declaration's (or allowed)."""
    seen: dict = {}
    for path, cmd in COMMANDS:
        declared = declared_options(cmd)
        for p in cmd.params:
            if p.name not in declared or p.hidden:
                continue
            group, field = declared[p.name], _field(declared[p.name], p.name)
            kind = (_cli_type(typing.get_type_hints(group)[field.name]), field.metadata["choices"])
            long = next(o for o in p.opts if o.startswith("--"))
            seen.setdefault(long, {}).setdefault((field.metadata["help"], kind), []).append(" ".join(path))
    several = {flag: len(ways) for flag, ways in seen.items() if len(ways) > 1}
    assert several == {flag: n for flag, (n, _why) in ALLOWED.items()}, {f: seen[f] for f in several}
    assert len(seen["--cutoff"]) == len(seen["--calibration"]) == len(seen["--engine"]) == 1
    assert sorted(seen["--cutoff"].popitem()[1]) == ["check", "report", "scan", "split"]


@pytest.mark.parametrize("args, words", [
    (["calibrate", "{missing}", "--n-pairs", "0"], "--n-pairs must be an integer >= 1, got 0"),
    (["report", "{missing}", "--cutoff", "2"], "--cutoff is a similarity in [-1, 1], got 2"),
    (["check", "{missing}", "--cutoff", "0.5", "--calibration", "x"], "give --cutoff or --calibration, not both"),
    (["split", "{missing}", "--out", "g.csv", "--cutoff", "-3"], "--cutoff is a similarity in [-1, 1], got -3"),
    (["check", "{missing}", "--max-exact", "5"], "--max-exact is a fraction in [0, 1] (0.01 = 1 %), got 5"),
    (["audit", "{missing}", "--targets", "{missing}", "--rtol", "-1"], "--rtol must be >= 0, got -1"),
    (["contamination", "{missing}", "--n", "0"], "--n must be an integer >= 1, got 0"),  # ContaminationConfig.check's
    (["augment", "{missing}", "{missing}", "--padding", "0.1", "--out", "o", "--sigma", "-1"], "--sigma must be >= 0, got -1"),
])
def test_a_bad_value_is_refused_before_any_file_is_read(tmp_path, args, words):
    """The constraint declared on the field, checked before the command opens SCAN_DIR or any input (which
    does not exist here: reading it first would give a different error)."""
    res = runner.invoke(app, [a.replace("{missing}", str(tmp_path / "nope")) for a in args])
    assert res.exit_code == 1, res.output
    assert res.output.strip() == f"error: {words}", res.output


@pytest.mark.parametrize("old, new, rest", [
    ("--k", "--min-k", ["0.3"]),
    ("--model", "--lm", ["smollm2"]),
])
def test_contamination_old_names_still_work_with_a_note(tmp_path, old, new, rest, monkeypatch):
    seen = {}
    import sibscan.contamination.config as cfg

    def stop(self):  # the option reached the config: stop before any file is read
        seen.update(k=self.k)
        raise SibscanError("stopped")

    monkeypatch.setattr(cfg.ContaminationConfig, "check", stop)
    res = runner.invoke(app, ["contamination", str(tmp_path / "b.jsonl"), old, *rest])
    assert f"note: {old} is now {new} (the old name goes in the next release)" in res.output, res.output
    assert res.exit_code == 1 and "error: stopped" in res.output
    if old == "--k":
        assert seen["k"] == 0.3
    both = runner.invoke(app, ["contamination", str(tmp_path / "b.jsonl"), old, *rest, new, *rest])
    assert both.exit_code == 1 and f"{old} is the old name of {new}; give {new} once" in both.output, both.output


def test_the_old_names_are_hidden_and_the_new_ones_shown():
    for path, old, new in ((["contamination"], "--k", "--min-k"), (["contamination"], "--model", "--lm"),
                           (["audit"], "--verify", "--verify-run")):
        text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "1000"}).output
        assert re.search(rf"{re.escape(new)}\b", text) and not re.search(rf"{re.escape(old)}(?![-\w])", text), path


def test_audit_verify_under_its_old_name(tmp_path):
    res = runner.invoke(app, ["audit", "--verify", str(tmp_path)])
    assert "note: --verify is now --verify-run" in res.output and res.exit_code == 1, res.output
    new = runner.invoke(app, ["audit", "--verify-run", str(tmp_path)])
    assert "note:" not in new.output and new.exit_code == 1


def test_every_group_checks_its_declared_constraints_from_python():
    """One rule for every group: ``check()`` runs check_fields, so a bound declared on a field holds from the
    Python API too (CutoffOptions, new here, as the scan's groups)."""
    with pytest.raises(SibscanError, match=r"--cutoff is a similarity in \[-1, 1\], got 2"):
        CutoffOptions(cutoff=2.0).check()
    with pytest.raises(SibscanError, match=r"--decimals must be an integer in 0\.\.20, got 21"):
        check_fields(LoadOptions(decimals=21))
    for group in (*GROUPS.values(), CutoffOptions):
        bounded = [f for f in dataclasses.fields(group) if f.metadata.get("minimum") is not None]
        for f in bounded:
            bad = f.metadata["minimum"] - 1
            with pytest.raises(SibscanError, match=re.escape(next(x for x in f.metadata["flags"] if x.startswith("--")))):
                group(**{f.name: bad}).check()


def test_every_config_class_checks_itself_the_same_way(tmp_path):
    """``check()`` refuses a bad value with a SibscanError naming the option, and returns the config: the
    scan's groups, CutoffOptions, ScanConfig, AuditConfig, ContaminationConfig and ArchiveConfig alike (the
    audit's and the contamination's were ``validate``, one returning None; the archive's refused in
    ``__post_init__``, and a bound declared on a contamination field was checked by a second hand-written rule)."""
    from pathlib import Path

    from sibscan.audit import AuditConfig
    from sibscan.config import ScanConfig
    from sibscan.contamination.config import ContaminationConfig
    from sibscan.temporal.archive import ArchiveConfig
    from sibscan.temporal.classifiers import classifier_spec

    good = [*(group() for group in GROUPS.values()), CutoffOptions(cutoff=0.5),
            ScanConfig().merged({"train": str(tmp_path), "test": str(tmp_path), "out": str(tmp_path / "o")}),
            AuditConfig(train=Path("t.csv")), ContaminationConfig(),
            ArchiveConfig(classifiers=(classifier_spec("euclidean-1nn"),))]
    for config in good:
        assert config.check() is config, type(config).__name__
    bad = [(LoadOptions(decimals=-1), "--decimals"), (CutoffOptions(calibration="c", cutoff=0.5), "--cutoff"),
           (AuditConfig(train=Path("t.csv"), rtol=-1.0), "--rtol"), (ContaminationConfig(engine="dask"), "engine"),
           (ArchiveConfig(classifiers=(classifier_spec("euclidean-1nn"),), runs=0), "--runs")]
    bad += [(ContaminationConfig(**{f.name: f.metadata["minimum"] - 1}), f.metadata["flags"][0])
            for f in dataclasses.fields(ContaminationConfig) if f.metadata.get("minimum") is not None]
    assert len(bad) >= 8  # --n, --shard-size and --run-floor declare their minimum on the field
    for config, name in bad:
        with pytest.raises(SibscanError, match=re.escape(name)):
            config.check()
    assert not hasattr(ContaminationConfig, "validate")  # one name for the one check


def test_contamination_thresholds_are_declared_once_on_their_config():
    """Their defaults and help live on ContaminationConfig's fields; the command line is made from them (it
    held a second copy of every default: 13, 1 << 22, 0.2, ...)."""
    from sibscan.contamination.config import ContaminationConfig

    declared = declared_options(dict(COMMANDS)[("contamination",)])
    fields = {f.name for f in dataclasses.fields(ContaminationConfig) if "flags" in f.metadata}
    assert fields >= {"n", "shard_size", "k", "overlap_floor", "run_floor", "prevalence"}
    assert all(declared[name] is ContaminationConfig for name in fields)
    assert declared["engine"].__name__ == "SearchOptions"  # one --engine, the scan's
