"""The CI gate: exit codes and messages pinned; the pytest helper against brute force."""
from __future__ import annotations

import numpy as np
import pytest
from planted_scan import make_scan
from typer.testing import CliRunner

from sibscan.check import assert_no_siblings, check
from sibscan.cli import app
from sibscan.errors import SibscanError


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    make_scan(d)
    return d


def test_check_fails_with_reason_and_pairs(scan):
    res = check(scan, max_rate=0.05)
    assert not res.passed and res.exit_code == 1
    # the headline's sentence, as every output prints it (issue 30), then the limit
    assert res.message.startswith(f"FAIL: {res.headline['text']}: 33.3 % is above the limit --max-rate 5.0 %.")
    assert res.headline["text"].startswith("10 of 30 test items (33.3 %) flagged at verified "
                                           "similarity ≥ 0.9000 (recorded by the scan; no hand "
                                           "labels of this data, so no sibling-rate interval")
    assert "First offending pairs: test te0 ~ train tr0 (exact); test te1 ~ train tr1 (exact)" in res.message
    assert len(res.offending) == 5 and res.rates["siblings"] == pytest.approx(1 / 3)


def test_check_cli_exit_codes(scan):
    runner = CliRunner()
    r = runner.invoke(app, ["check", str(scan), "--max-rate", "0.05"])
    assert r.exit_code == 1 and "FAIL: 10 of 30 test items" in r.output
    r = runner.invoke(app, ["check", str(scan), "--max-rate", "0.34", "--max-exact", "0.2"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == ("OK: 10 of 30 test items (33.3 %) flagged at verified similarity ≥ 0.9000 (recorded "
                                "by the scan; no hand labels of this data, so no sibling-rate interval: calibrate "
                                "with 'sibscan calibrate SCAN_DIR'): 33.3 % is within the limit --max-rate 34.0 %; "
                                "4 of 30 (13.3 %) are exact twins, within the limit --max-exact 20.0 %.")
    r = runner.invoke(app, ["check", str(scan), "--max-exact", "0.1"])
    assert r.exit_code == 1 and "4 of 30 (13.3 %) are exact twins, above the limit --max-exact 10.0 %" in r.output
    r = runner.invoke(app, ["check", str(scan), "--max-rate", "0.05", "--cutoff", "0.995"])
    assert r.exit_code == 1 and "4 of 30 test items (13.3 %) flagged at verified similarity ≥ 0.9950 (given by hand;" in r.output
    r = runner.invoke(app, ["check", str(scan), "--max-rate", "5"])
    assert r.exit_code == 1 and r.output.strip() == "error: --max-rate is a fraction in [0, 1] (0.01 = 1 %), got 5"
    r = runner.invoke(app, ["check", str(scan)])
    assert r.exit_code == 1 and "error: give a limit: --max-rate X" in r.output


def test_max_rate_needs_a_cutoff(tmp_path):
    make_scan(tmp_path, cutoff=None)
    with pytest.raises(SibscanError, match="--max-rate needs a cutoff but the scan has none"):
        check(tmp_path, max_rate=0.1)
    assert check(tmp_path, max_exact=0.2).passed


def test_assert_no_siblings_tables_and_text():
    rng = np.random.default_rng(0)
    train = rng.normal(size=(50, 16))
    test = rng.normal(size=(20, 16))
    assert assert_no_siblings(train, test, cutoff=0.9) == {"n_test": 20, "exact": 0, "near": 0, "rate": 0.0}
    test[3] = train[7]
    test[5] = 2 * train[9] + 1  # a rescaled copy: Pearson r = 1, not an exact twin
    with pytest.raises(AssertionError,
                       match=r"1 of 20 test items \(5.0 %\) have a sibling in train \(exact twins only; 1 exact, 0 near\)"):
        assert_no_siblings(train, test)
    with pytest.raises(AssertionError, match=r"2 of 20 .* test 3 \(exact twin\); test 5 ~ train 9 \(cosine 1.0000\)"):
        assert_no_siblings(train, test, cutoff=0.95)
    # brute force: the near decision equals max Pearson r over train
    r = np.corrcoef(test, train)[:20, 20:].max(axis=1)
    out = assert_no_siblings(train, test, cutoff=0.95, max_rate=0.1)
    assert out["exact"] + out["near"] == int(((r >= 0.95 - 1e-6)).sum()) == 2
    texts = ["the cat sat on the mat", "a completely different sentence here"]
    with pytest.raises(AssertionError, match="1 of 1 test items"):
        assert_no_siblings(texts, ["the cat sat on the mat"])
    with pytest.raises(SibscanError, match="max_rate is a fraction"):
        assert_no_siblings(texts, texts, max_rate=2)


def test_fail_advice_names_the_split_that_leaves_no_sibling_across(scan, tmp_path):
    """The FAIL paragraph's split command is the one that leaves no sibling pair across the boundary (complete
    linkage, the default, can leave some: the advice says so instead of calling it leak-free)."""
    import json

    res = check(scan, max_rate=0.05)
    assert "groups.csv --linkage single --resplit DIR` writes a split with no sibling pair across it" in res.message
    assert "complete keeps exact twins together but can leave sibling pairs across" in res.message
    r = CliRunner().invoke(app, ["split", str(scan), "--out", str(tmp_path / "g.csv"), "--linkage", "single",
                                 "--resplit", str(tmp_path / "rs"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["resplit"]["siblings_left"] == 0 and json.loads(r.output)["resplit"]["twins_left"] == 0
