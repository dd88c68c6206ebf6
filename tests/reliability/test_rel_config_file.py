"""Issue 32, items 3 and 4: a config file is checked as flags are.

A ``[Scan]`` section or a key beside ``[scan]`` was ignored without a word (the scan ran on defaults),
and ``verify = "no"`` was kept as a string, so the verifier ran; each is now one line naming the file
and the key, with the nearest valid name.
"""
from __future__ import annotations

import pytest

from rel_helpers import FAST, assert_one_line_error, cli
from sibscan.config import list_presets, load_config_file


@pytest.mark.parametrize("text, needles", [
    ('[Scan]\nk = 5\n', ("[Scan]", "did you mean 'scan'")),
    ('k = 5\n[scan]\nk = 3\n', ("'k'", "outside [scan]", "move it under [scan]")),
    ('[scan]\nverify = "no"\n', ("verify", "true or false", "'no'")),
    ('[scan]\nk = "ten"\n', ("[scan] k", "whole number")),
    ('[scan]\nkk = 3\n', ("'kk'", "did you mean 'k'")),
    ('[scan]\nbaseline_pairs = 1.5\n', ("baseline_pairs", "whole number")),
    ('[scan]\ncutoff = "0.9"\n', ("cutoff", "a number")),
    ('[scan.search]\nk = 3\n', ("[scan.search]",)),
    ('[scans]\nk = 3\n', ("[scans]", "did you mean 'scan'")),
    # a value outside the field's choices or bounds names the file and key too, not only the flag
    ('[scan]\nk = 0\n', ("[scan] k = 0", "--k must be an integer >= 1")),
    ('[scan]\nbackend = "foo"\n', ("[scan] backend = 'foo'", "available: auto")),
    ('decimals = 30\n', ("decimals = 30", "0..20")),
])
def test_bad_config_file_is_refused_naming_file_and_key(tables, text, needles):
    path = tables / "bad.toml"
    path.write_text(text)
    result = cli("scan", tables / "train.csv", tables / "test.csv", "--out", tables / "scan", "--config", path, *FAST)
    assert_one_line_error(result, "bad.toml", *needles)
    assert not (tables / "scan").exists()


def test_good_config_values_are_kept_typed(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text('[scan]\nverify = false\nk = 4\ncutoff = 1\ndirections = ["test-train"]\nmodel-path = "m"\n')
    assert load_config_file(str(path)) == {"verify": False, "k": 4, "cutoff": 1, "directions": ["test-train"],
                                           "model_path": "m"}
    top = tmp_path / "top.toml"
    top.write_text('k = 4\nextra-views = "none"\n')  # a file without sections: the top level holds the options
    assert load_config_file(str(top)) == {"k": 4, "extra_views": "none"}


@pytest.mark.parametrize("name", sorted(list_presets()))
def test_every_preset_passes_the_check(name):
    assert load_config_file(name)
