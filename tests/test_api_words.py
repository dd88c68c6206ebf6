"""Python users get Python words (issue 29): ``progress=False`` prints nothing, ``sibscan.progress``
is reachable after ``import sibscan``, refusals name the keyword and the method (not the CLI's flag
and SCAN_DIR), an unknown keyword suggests the closest one, wide float arrays are said to be read as
table rows, and ``Scan.flagged`` is a DataFrame of the rows flagged.csv holds."""
from __future__ import annotations

import logging
import subprocess
import sys
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

import sibscan

FAST = dict(baseline_pairs=400, verified_baseline_pairs=150)


def _walks(seed: int, n: int, width: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, width)).cumsum(axis=1)


@pytest.fixture(scope="module")
def data():
    """30 train random walks; test: 4 exact copies, 3 rescaled noisy copies, 5 fresh walks."""
    train = _walks(0, 30, 16)
    noise = np.random.default_rng(1).normal(scale=0.02, size=(3, 16))
    test = np.vstack([train[:4], train[4:7] * 2 + 1 + noise, _walks(2, 5, 16)])
    return train, test


@pytest.fixture(scope="module")
def done(data, tmp_path_factory):
    """A finished scan without a cutoff (the errors below are raised on it or next to it)."""
    return sibscan.scan(*data, out=tmp_path_factory.mktemp("done") / "s", progress=False, **FAST)


def _printed(capsys, caplog, fn):
    """What ``fn()`` writes on stdout, stderr and to logging at the level an unconfigured Python shows
    (WARNING: INFO and DEBUG records reach only those who configure logging for them)."""
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        result = fn()
    out, err = capsys.readouterr()
    return result, out + err + "".join(r.getMessage() + "\n" for r in caplog.records)


def _verification_warning() -> str:
    """The one line a silenced scan of series still shows where its verifier cannot run (a core install
    without torch): a warning about the result, not progress."""
    from sibscan.verify import verifier_class

    ok, why = verifier_class("lagcorr").available()
    return "" if ok else f"verification is off: verifier 'lagcorr' cannot run here ({why})\n"


_warned = _verification_warning()


@pytest.mark.parametrize("silence", [dict(progress=False), dict(quiet=True)])
def test_progress_false_silences_every_line_a_scan_prints(data, tmp_path, capsys, caplog, monkeypatch, silence):
    monkeypatch.setenv("SIBSCAN_PROGRESS_INTERVAL", "0.01")  # a bar's timed line would show too
    _, loud = _printed(capsys, caplog, lambda: sibscan.scan(*data, out=tmp_path / "loud", **FAST))
    assert "sibscan: search" in loud  # the capture sees the stage lines a scan prints by default
    scan, printed = _printed(capsys, caplog, lambda: sibscan.scan(*data, out=tmp_path / "quiet", **silence, **FAST))
    assert printed == _warned
    assert not sibscan.progress.is_quiet()  # only that scan: the setting before it is back
    assert scan.report()["sibling_rate"]["test_to_train"]["exact"]["count"] == 4  # (no pandas needed)
    # in a notebook (bars instead of stage lines) the same
    monkeypatch.setattr(sibscan.progress, "_on_terminal", lambda: True)
    _, printed = _printed(capsys, caplog, lambda: sibscan.scan(*data, out=tmp_path / "nb", **silence, **FAST))
    assert printed == _warned


def test_sibscan_progress_needs_no_import_of_its_own():
    code = "import sibscan; sibscan.progress.set_quiet(True); assert sibscan.progress.is_quiet(); print('ok')"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
    assert "progress" in dir(sibscan)


def _no_cutoff_calibration(scan) -> str:
    """A calibration folder with labels but no fitted cutoff yet."""
    cal = scan.calibrate("none", labels=[], calibration_dir=str(scan.path.parent / "cal"))
    assert cal.cutoff is None
    return str(scan.path.parent / "cal")


@pytest.mark.parametrize("case, call, words", [
    ("no features_id", lambda d, s: sibscan.scan(*d, train_features=d[0], test_features=d[1]), ["features_id="]),
    ("one split's features", lambda d, s: sibscan.scan(*d, train_features=d[0]),
     ["train_features=", "test_features="]),
    ("features and an encoder", lambda d, s: sibscan.scan(*d, train_features=d[0], test_features=d[1],
                                                          features_id="m", encoder="znorm"), ["encoder="]),
    ("unknown encoder", lambda d, s: sibscan.scan(*d, encoder="clp"), ["unknown encoder 'clp'; available: "]),
    ("bad k", lambda d, s: sibscan.scan(*d, k=0), ["k= must be an integer >= 1, got 0"]),
    ("k not an int", lambda d, s: sibscan.scan(*d, k=2.5), ["k= must be an integer"]),
    ("cutoff out of range", lambda d, s: sibscan.scan(*d, cutoff=2.0), ["cutoff= is a similarity in [-1, 1], got 2"]),
    ("cutoff and calibration", lambda d, s: sibscan.scan(*d, cutoff=0.9, calibration="x"),
     ["give cutoff= or calibration=, not both"]),
    ("unknown backend", lambda d, s: sibscan.scan(*d, backend="gpu"), ["unknown backend='gpu'; available"]),
    ("unknown direction", lambda d, s: sibscan.scan(*d, directions="test-train,sideways"),
     ["unknown direction 'sideways' in directions=; available: "]),
    ("none among extra views", lambda d, s: sibscan.scan(*d, extra_views="none,pixels"),
     ["extra_views='none' stands alone"]),
    ("verifier without verifying", lambda d, s: sibscan.scan(*d, verifier="lagcorr", verify=False),
     ["verifier='lagcorr' and verify=False contradict"]),
    ("no test split", lambda d, s: sibscan.scan(d[0]), ["pass test="]),
    ("report at a cutoff out of range", lambda d, s: s.report(cutoff=2), ["cutoff= is a similarity"]),
    ("report with a calibration that has no cutoff", lambda d, s: s.report(calibration=_no_cutoff_calibration(s)),
     ["label more pairs with scan.calibrate()", "pass cutoff=X"]),
    ("calibrate with an unknown ui", lambda d, s: s.calibrate("tui"), ["unknown ui='tui'"]),
    ("calibrate with no pairs", lambda d, s: s.calibrate("none", n_pairs=0), ["n_pairs= must be at least 1"]),
    ("calibrate with a bad precision", lambda d, s: s.calibrate("none", target_precision=2),
     ["target_precision= is a fraction"]),
    ("calibrate with an unknown answer", lambda d, s: s.calibrate("none", labels=[{"test_id": "4", "train_id": "5",
                                                                               "label": "yes"}]),
     ["labels[0]: unknown label 'yes'; use one of: same, different, skip"]),
    ("resume with other options", lambda d, s: sibscan.scan(*d, out=s.path, k=3, **FAST),
     ["options (k=3 (the scan there: 10))", "pass force=True", "choose another out="]),
    ("open a folder with no scan", lambda d, s: sibscan.Scan(s.path.parent / "nothing"), ["run sibscan.scan() first"]),
])
def test_api_errors_name_the_keyword_and_the_method(data, done, case, call, words):
    with pytest.raises(sibscan.SibscanError) as err:
        call(data, done)
    text = str(err.value)
    for w in words:
        assert w in text, (case, text)
    assert "--" not in text and "SCAN_DIR" not in text and "'sibscan " not in text, (case, text)


def test_a_flag_with_its_value_becomes_a_keyword_with_its_value(data, tmp_path):
    """A value after a flag is quoted at the source, so it joins its keyword: ``device='cuda'``, not
    ``device= cuda`` (the value left behind a bare ``device=``)."""
    from sibscan.device import cuda_available

    if cuda_available():
        pytest.skip("a CUDA GPU is visible: device='cuda' runs here")
    with pytest.raises(sibscan.SibscanError) as err:
        sibscan.scan(*data, out=tmp_path / "s", device="cuda", progress=False, **FAST)
    text = str(err.value)
    assert text.startswith("device='cuda' ") and "= " not in text and "--" not in text, text
    import importlib.util

    # with torch: no GPU here, so the fix names the other values; without it (a core install): the extra to install
    fix = "use device='cpu' or 'auto'" if importlib.util.find_spec("torch") else "pip install 'sibscan[gpu]'"
    assert fix in text, text


def test_the_command_line_keeps_its_flags(data, tmp_path):
    from sibscan.cli import app

    np.save(tmp_path / "a.npy", data[0])
    np.save(tmp_path / "b.npy", data[1])
    args = ["scan", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--out", str(tmp_path / "s")]
    res = CliRunner().invoke(app, [*args, "--train-features", str(tmp_path / "a.npy"),
                                   "--test-features", str(tmp_path / "b.npy")])
    assert res.exit_code == 1 and "need --features-id NAME" in res.output, res.output
    res = CliRunner().invoke(app, [*args, "--verifier", "lagcorr", "--no-verify"])
    assert res.exit_code == 1 and "--verifier 'lagcorr' and --no-verify contradict" in res.output, res.output


def test_reword_leaves_what_has_no_keyword_alone():
    from sibscan.pywords import reword

    assert reword("run 'sibscan encoders --modality table' for the ones that fit") == \
        "run 'sibscan encoders --modality table' for the ones that fit"
    pip = "pip install --force-reinstall 'sibscan[minilm]'"
    assert reword(pip) == pip
    assert reword("--n-pairs must be at least 1") == "--n-pairs must be at least 1"  # not a keyword of this call
    assert reword("--n-pairs must be at least 1", keywords={"n_pairs"}) == "n_pairs= must be at least 1"
    assert reword("'sibscan report SCAN_DIR --predictions FILE'", keywords={"predictions"}) == \
        "scan.report(predictions=FILE)"
    assert reword("re-run the 'sibscan scan' command with --force") == "re-run the sibscan.scan() call with force=True"


def test_an_unknown_keyword_is_a_type_error_with_the_closest_valid_one(data, done):
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'treshold'; did you mean 'cutoff' "
                                        r"\(sibscan's word for 'threshold'\)\? \(valid: address, .*, znorm\)"):
        sibscan.scan(*data, treshold=0.9)
    with pytest.raises(TypeError, match="'k_revers'; did you mean 'k_reverse'"):
        sibscan.scan(*data, k_revers=2)
    with pytest.raises(TypeError, match=r"'zzz' \(valid: "):  # nothing close: the list alone
        sibscan.scan(*data, zzz=1)
    with pytest.raises(TypeError, match=r"Scan.calibrate\(\) got an unexpected keyword argument 'npairs'; "
                                        r"did you mean 'n_pairs'\?"):
        done.calibrate("none", npairs=3)


def test_every_scan_method_suggests_the_keyword_it_takes(done):
    """Not only sibscan.scan and Scan.calibrate: scan.report(threshold=) is the likeliest slip of all (Python's
    own TypeError named neither 'cutoff' nor the valid keywords); a synonym of a keyword the method does not
    take suggests nothing."""
    with pytest.raises(TypeError, match=r"^Scan.report\(\) got an unexpected keyword argument 'threshold'; did you "
                                        r"mean 'cutoff' \(sibscan's word for 'threshold'\)\? \(valid: calibration, "
                                        r"correct, cutoff, force, predictions\)$"):
        done.report(threshold=0.9)
    with pytest.raises(TypeError, match=r"^Scan.report\(\) got an unexpected keyword argument 'prediction'; "
                                        r"did you mean 'predictions'\?"):
        done.report(prediction="p.csv")
    with pytest.raises(TypeError, match=r"^Scan.write_reports\(\) got an unexpected keyword argument 'fromats'; "
                                        r"did you mean 'formats'\? \(valid: formats, out\)$"):
        done.write_reports(fromats=["md"])
    with pytest.raises(TypeError, match=r"^Scan.write_reports\(\) got an unexpected keyword argument 'threshold' "
                                        r"\(valid: formats, out\)$"):
        done.write_reports(threshold=0.9)
    with pytest.raises(TypeError, match=r"^Scan\(\) got an unexpected keyword argument 'pth'; did you mean 'path'\?"):
        sibscan.Scan(done.path, pth="x")
    with pytest.raises(TypeError, match=r"^Scan.to_pandas\(\) got an unexpected keyword argument 'columns' "
                                        r"\(it takes no keyword arguments\)$"):
        done.to_pandas(columns=["test_id"])
    assert done.report(cutoff=0.99)["headline"]["cutoff"] == pytest.approx(0.99)  # the keywords it takes still work


def test_the_other_public_functions_speak_python_too(data, done, tmp_path):
    """sibscan.find_twins, build_report, resolve_device … serve the command line too; reached as sibscan.NAME
    their refusals name that function's keywords, and an unknown keyword suggests one of them."""
    from sibscan.twins import find_twins  # where the CLI gets it: its words stay the CLI's

    with pytest.raises(sibscan.SibscanError, match=r"^decimals= must be an integer in 0\.\.20, got -1"):
        sibscan.find_twins(*data, decimals=-1)
    with pytest.raises(sibscan.SibscanError, match=r"^--decimals must be an integer in 0\.\.20, got -1"):
        find_twins(*data, decimals=-1)
    with pytest.raises(TypeError, match=r"^sibscan.find_twins\(\) got an unexpected keyword argument 'decimal'; "
                                        r"did you mean 'decimals'\?"):
        sibscan.find_twins(*data, decimal=3)
    with pytest.raises(sibscan.SibscanError, match=r"^cutoff= is a similarity in \[-1, 1\], got 3"):
        sibscan.build_report(done.path, cutoff=3)
    with pytest.raises(TypeError, match=r"^sibscan.build_report\(\) got an unexpected keyword argument 'threshold'; "
                                        r"did you mean 'cutoff'"):
        sibscan.build_report(done.path, threshold=0.9)
    with pytest.raises(sibscan.SibscanError) as err:
        sibscan.build_report(tmp_path / "nothing")
    assert "run sibscan.scan() first" in str(err.value) and "'sibscan " not in str(err.value), str(err.value)
    assert sibscan.build_report(done.path)["headline"] == done.rate  # the function itself, unchanged
    # a scan option's flag becomes a keyword only for a function that takes it
    from sibscan.pywords import reword

    assert reword("--label y and --decimals 3", keywords={"decimals"}, scan_options=False) == \
        "--label y and decimals=3"


def test_a_warning_for_the_user_points_at_the_users_line_through_the_wrapper(data):
    """The python_words wrapper is one more frame: a warning meant for the caller's line (the deprecated
    max_pct=) points there whether the function is reached as sibscan.NAME (wrapped) or from its module."""
    from sibscan.twins import assert_no_twins

    train = data[0]
    test = train[10:14] + 100.0  # shifted: no twins, so only the warning
    for fn in (sibscan.assert_no_twins, assert_no_twins):
        with pytest.warns(FutureWarning, match="max_pct is deprecated") as record:
            fn(train, test, max_pct=1)
        assert [w.filename for w in record] == [__file__], (fn, [w.filename for w in record])


def test_wide_float_arrays_are_said_to_be_read_as_table_rows(tmp_path):
    train, test = _walks(3, 12, 64), _walks(4, 5, 64)
    with pytest.warns(UserWarning) as record:
        sibscan.scan(train, test, out=tmp_path / "wide", progress=False, **FAST)
    ours = [w for w in record if "table rows" in str(w.message)]
    text = str(ours[0].message)
    assert len(ours) == 1 and "width 64" in text and "train_features=" in text and "test_features=" in text
    assert ours[0].filename == __file__  # points at the caller's line, not into sibscan
    for name, kwargs in (("narrow", dict(data=(train[:, :63], test[:, :63]))),
                         ("said to be a table", dict(data=(train, test), modality="table")),
                         ("as embeddings", dict(data=(None, None), train_features=train, test_features=test,
                                                features_id="m"))):
        d = kwargs.pop("data")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sibscan.scan(*d, out=tmp_path / name, progress=False, **kwargs, **FAST)
        assert not [w for w in caught if "table rows" in str(w.message)], name


def test_flagged_is_a_dataframe_of_the_rows_flagged_csv_holds(data, done, tmp_path):
    pd = pytest.importorskip("pandas")
    from sibscan.report.items import COLUMNS

    cut = sibscan.scan(*data, out=tmp_path / "cut", cutoff=0.99, progress=False, **FAST)
    flagged = cut.flagged
    assert isinstance(flagged, pd.DataFrame) and list(flagged.columns) == list(COLUMNS)
    every = cut.to_pandas()
    assert sorted(flagged["test_id"]) == sorted(every.loc[every["sibling"].fillna(False), "test_id"]) == \
        [str(i) for i in range(7)]
    assert flagged["exact"].tolist() == [True] * 4 + [False] * 3 and flagged["sibling"].dtype.name == "boolean"
    csv = pd.read_csv(cut.write_reports(["csv"])["csv"], dtype={"test_id": str, "train_id": str})
    assert csv["test_id"].tolist() == flagged["test_id"].tolist()
    np.testing.assert_allclose(csv["score"], flagged["score"].astype(float))
    # no cutoff: the near copies are not assessed, so only the exact twins are flagged
    assert done.rate["state"] == "not_assessed" and done.flagged["test_id"].tolist() == ["0", "1", "2", "3"]
    assert done.flagged["exact"].all()
