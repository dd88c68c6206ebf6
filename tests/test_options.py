"""The option groups: one check before any work, flat names kept, CLI flags generated once."""
from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.config import ScanConfig
from sibscan.errors import SibscanError
from sibscan.options import GROUPS, OWNER, LoadOptions, SearchOptions

runner = CliRunner()


@pytest.fixture()
def data(tmp_path):
    for name in ("train", "test"):
        (tmp_path / f"{name}.csv").write_text("a,b,c\n1,2,3\n4,5,7\n2,9,1\n")
    return tmp_path


@pytest.mark.parametrize("flags, message", [
    (["--directions", "test-train,sideways"],
     "unknown direction 'sideways' in --directions; available: test-train, train-test, test-test"),
    (["--k", "0"], "--k must be an integer >= 1, got 0"),
    (["--device", "tpu"], "unknown device 'tpu'; available: auto, cpu, cuda"),
    (["--encoder", "clp"], "unknown encoder 'clp'; available: "),
    (["--verifier", "nope"], "unknown verifier 'nope'; available: "),
    (["--chunk-stride", "4"], "--chunk-stride needs --chunk-words N"),
    (["--calibration", "no-such-calibration"], "no calibration 'no-such-calibration'"),
])
def test_a_bad_option_fails_before_anything_is_written(data, flags, message):
    out = data / "scan"
    res = runner.invoke(app, ["scan", "--train", str(data / "train.csv"), "--test", str(data / "test.csv"),
                              "--out", str(out), "--no-progress", *flags])
    assert res.exit_code == 1, res.output
    assert res.output.startswith(f"error: {message}"), res.output
    assert not out.exists()  # nothing read into it, nothing written: not even manifest.json or cache/


@pytest.mark.parametrize("flag, value, choices", [
    ("--backend", "nope", ("auto", "torch", "faiss", "numpy")),
    ("--engine", "spark", ("local", "ray")),
    ("--modality", "audio", ("table", "text", "image")),
])
def test_a_value_outside_a_choice_is_refused_by_the_parser_with_the_choices(data, flag, value, choices):
    """A fixed set of values is a choice on the command line: the parser refuses another value and lists
    the valid ones (before this the scan's own check did, with the same list); from Python or a config
    file the group's check still refuses it."""
    out = data / "scan"
    res = runner.invoke(app, ["scan", str(data / "train.csv"), str(data / "test.csv"), "--out", str(out), flag, value],
                        env={"COLUMNS": "250"})
    assert res.exit_code == 1, res.output
    assert f"Invalid value for '{flag}'" in res.output and all(repr(c) in res.output for c in choices), res.output
    assert not out.exists()
    name = flag[2:]
    with pytest.raises(SibscanError, match=f"{value}.*{', '.join(choices)}"):
        ScanConfig(**{name: value}).check()


def test_flat_names_reach_their_groups():
    cfg = ScanConfig(train="a.csv", k=5, directions="test-train,test-test", verify=False)
    assert cfg.k == 5 and cfg.search.k == 5 and cfg.search.directions == ("test-train", "test-test")
    assert cfg.load == LoadOptions(train="a.csv") and cfg.verification.verify is False
    assert cfg.merged({"k": 7, "encoder": None}).k == 7 and cfg.merged({"k": 7}).encoder is None
    assert ScanConfig(search=SearchOptions(k=3)).k == 3 and cfg == ScanConfig(**cfg.options())
    assert set(cfg.options()) == set(OWNER) and "out" not in cfg.parameters() and cfg.parameters()["k"] == 5
    with pytest.raises(SibscanError, match="unknown scan option\\(s\\) kk; valid: "):
        cfg.merged({"kk": 1})
    with pytest.raises(AttributeError, match="merged"):
        cfg.k = 3


def test_every_option_name_is_unique_and_has_a_flag():
    names = [f for group in GROUPS.values() for f in group.__dataclass_fields__]
    assert len(names) == len(set(names))
    for group in GROUPS.values():
        for field in group.__dataclass_fields__.values():
            assert field.metadata["flags"][0] == "--" + field.name.replace("_", "-"), field.name


def _params(command_name: str, sub: str = None) -> dict:
    command = typer.main.get_command(app)
    cmd = command.commands[command_name]
    if sub is not None:
        cmd = cmd.commands[sub]
    return {p.name: p for p in cmd.params if p.param_type_name == "option"}


def test_scan_and_index_build_share_the_generated_flags():
    scan, build = _params("scan"), _params("index", "build")
    shared = set(scan) & set(build) - {"force", "out", "help"}
    assert {"modality", "label", "id", "text_field", "decimals", "znorm", "encoder", "model_path", "device"} <= shared
    for name in shared:
        assert (scan[name].opts, scan[name].secondary_opts, scan[name].help) == \
               (build[name].opts, build[name].secondary_opts, build[name].help), name
    # every flag the README and the tests use is still there
    for flag in ("--train", "--test", "--out", "-o", "--k", "-k", "--k-reverse", "--encoder", "-e", "--no-verify",
                 "--cutoff", "--calibration", "--force", "--no-progress", "--config", "--json", "--engine", "--address"):
        assert any(flag in p.opts or flag in p.secondary_opts for p in _params("scan").values()), flag
