"""Issue 32, items 8-11, 13 and 14: the newer entry points (the Python API, temporal, a train index)
and a full disk under the cache, each refused in one line naming the input and the fix (a
keyword argument from Python, a file or option from the CLI), before any work where the input
decides it."""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from rel_helpers import FAST, assert_one_line_error, cli, write_table
import sibscan
from sibscan.errors import InputError


def _scan_dir(tmp_path, labels=True):
    rng = np.random.default_rng(3)
    train = rng.normal(size=(30, 6)).cumsum(axis=1)
    test = np.vstack([train[:4], rng.normal(size=(6, 6)).cumsum(axis=1)])
    kw = dict(encoder="raw", verify=False, baseline_pairs=200, progress=False)
    if labels:  # CSV files with a label column (a core install has no pandas for DataFrames)
        paths = []
        for name, rows in (("train", train), ("test", test)):
            table = np.column_stack([rows, np.arange(len(rows)) % 2])
            header = ",".join([f"f{j}" for j in range(rows.shape[1])] + ["label"])
            np.savetxt(tmp_path / f"{name}.csv", table, delimiter=",", header=header, comments="", fmt="%.17g")
            paths.append(str(tmp_path / f"{name}.csv"))
        return sibscan.scan(*paths, out=tmp_path / "s", **kw)
    return sibscan.scan(train, test, out=tmp_path / "s", **kw)


# --- 8: an empty split from Python -----------------------------------------------------------------
def test_empty_test_features_are_refused_naming_the_keyword(tmp_path):
    with pytest.raises(InputError, match=r"^test_features: no items .*shape \(0, 8\)"):
        sibscan.scan(train_features=np.random.rand(40, 8), test_features=np.zeros((0, 8)), features_id="m",
                     out=tmp_path / "s", progress=False)
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("empty", ["train", "test"])
def test_an_empty_array_split_is_refused_naming_it(tmp_path, empty):
    data = {"train": np.random.rand(40, 8), "test": np.random.rand(5, 8)}
    data[empty] = np.zeros((0, 8))
    with pytest.raises(InputError, match=rf"^{empty}: no items"):
        sibscan.scan(data["train"], data["test"], out=tmp_path / "s", encoder="raw", verify=False, progress=False)


# --- 9: predictions given as values ----------------------------------------------------------------
def test_report_predictions_as_an_array_are_scored_against_the_test_labels(tmp_path):
    s = _scan_dir(tmp_path)
    labels = np.array([row["test_label"] for row in s.pairs])  # (Scan.pairs: no pandas needed)
    preds = labels.copy()
    preds[:3] = np.where(preds[:3] == "1", "0", "1")  # three wrong
    acc = s.report(predictions=list(preds))["accuracy"]["exact_twins"]["all"]
    assert (acc["n"], acc["correct"]) == (10, 7)
    # the same answer as a predictions file with the same values
    path = tmp_path / "preds.txt"
    path.write_text("\n".join(preds) + "\n")
    assert s.report(predictions=path)["accuracy"] == s.report(predictions=list(preds))["accuracy"]


@pytest.mark.parametrize("given, needle", [
    ([1, 2], r"^predictions: 2 predictions for 10 test items"),
    (5, r"^predictions: give a predictions file .* or an array of shape \(10,\)"),
    ([[0, 1]] * 10, r"^predictions: .*shape \(10, 2\)"),
])
def test_report_predictions_of_the_wrong_shape_name_the_keyword(tmp_path, given, needle):
    s = _scan_dir(tmp_path)
    with pytest.raises(InputError, match=needle):
        s.report(predictions=given)


def test_report_predictions_without_test_labels_say_what_to_give(tmp_path):
    s = _scan_dir(tmp_path, labels=False)
    with pytest.raises(InputError, match=r"^predictions: the test items have no labels.*correct="):
        s.report(predictions=[0] * 10)


# --- 10: series too short for the classifier --------------------------------------------------------
def _tiny_series(d: Path, length: int):
    rng = np.random.default_rng(0)
    for name, n in (("tiny_TRAIN.tsv", 20), ("tiny_TEST.tsv", 10)):
        (d / name).write_text("".join(f"{i % 2}\t" + "\t".join(f"{v:.3f}" for v in rng.normal(size=length)) + "\n"
                                      for i in range(n)))
    return d / "tiny_TRAIN.tsv", d / "tiny_TEST.tsv"


@pytest.mark.parametrize("extra", [(), ("--param", "n_kernels=84")])  # its kernels are 9 long, whatever the count
def test_temporal_refuses_series_shorter_than_minirocket_takes_before_training(tmp_path, monkeypatch, extra):
    from sibscan.temporal import permutation

    train, test = _tiny_series(tmp_path, 4)
    monkeypatch.setattr(permutation, "fit_score", lambda *a, **k: pytest.fail("training started"))
    result = cli("temporal", "--runs", "2", train, test, "--no-progress", *extra)
    assert_one_line_error(result, str(train), "4 time points", "minirocket", "at least 9", "-c euclidean-1nn",
                          "sibscan augment --padding 1.25")


def test_every_registered_classifier_trains_at_its_stated_minimum_length_and_not_below():
    """The minimum lengths in the registry are what aeon accepts (measured: one below fails)."""
    pytest.importorskip("aeon")
    from sibscan.temporal.classifiers import REGISTRY, as_input, make_classifier

    rng = np.random.default_rng(0)
    y = np.arange(20) % 2
    for name in ("minirocket", "catch22", "weasel", "cif"):  # stc's search is slow; its minimum (2) is smaller
        spec = REGISTRY[name]
        for length, ok in ((spec.min_length, True), (spec.min_length - 1, False)):
            x = rng.normal(size=(20, 1, length))
            est, wants_3d = make_classifier(name, random_state=0)
            try:
                est.fit(as_input(x, wants_3d), y)
                trained = True
            except (ValueError, ZeroDivisionError):
                trained = False
            assert trained is ok, (name, length)


def test_an_archive_dataset_too_short_for_a_classifier_is_skipped_with_the_reason(tmp_path):
    from sibscan.temporal.archive import ArchiveConfig, discover, run_unit

    (tmp_path / "tiny").mkdir()
    _tiny_series(tmp_path / "tiny", 4)
    config = ArchiveConfig.build(["euclidean-1nn", "minirocket"], runs=1)
    unit = run_unit(discover(tmp_path)[0], 0, config)
    assert "minirocket classifier needs at least 9" in unit["skipped"], unit


# --- 11: a truncated index.json ----------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["half", "list"])
def test_a_truncated_index_json_is_one_line_naming_it_and_the_rebuild(tables, damage):
    ix = tables / "ix"
    assert cli("index", "build", tables / "train.csv", "--out", ix, "--encoder", "raw").exit_code == 0
    meta = ix / "index.json"
    text = meta.read_text()
    meta.write_text(text[: len(text) // 2] if damage == "half" else "[1, 2]")
    out = tables / "s"
    result = cli("scan", "--index", ix, tables / "test.csv", "--out", out, *FAST[2:])
    assert_one_line_error(result, str(meta), "corrupt or truncated", "sibscan index build --force")
    assert not out.exists()


# --- 13: rows of one value ----------------------------------------------------------------------------
def test_a_one_column_table_is_refused_before_any_work(tables):
    rng = np.random.default_rng(1)
    write_table(tables / "one_train.csv", rng.normal(size=(30, 1)))
    write_table(tables / "one_test.csv", rng.normal(size=(8, 1)))
    out = tables / "s"
    result = cli("scan", tables / "one_train.csv", tables / "one_test.csv", "--out", out, "--no-progress")
    assert_one_line_error(result, str(tables / "one_train.csv"), "one value each", "znorm", "two or more values")
    assert "baseline" not in result.output
    assert not out.exists()  # nothing was written


@pytest.mark.parametrize("encoder", ["znorm", "raw"])
def test_a_1d_array_is_refused_from_python_naming_the_argument(tmp_path, encoder, monkeypatch):
    from sibscan import fingerprint as fp_mod

    monkeypatch.setattr(fp_mod, "dataset_fingerprint", lambda *a, **k: pytest.fail("the scan went on"))
    with pytest.raises(InputError, match=rf"^train: .*one value each.*the {encoder} encoder cannot compare them"):
        sibscan.scan(np.random.rand(40), np.random.rand(10), out=tmp_path / "s", encoder=encoder, verify=False,
                     progress=False)


def test_a_numeric_encoder_built_for_one_value_is_refused():
    from sibscan.encoders import get_encoder

    with pytest.raises(InputError, match="one value each"):
        get_encoder("znorm", dim=1)
    enc = get_encoder("raw")
    with pytest.raises(InputError, match="one value each"):
        enc.encode(np.ones((3, 1)))
    assert get_encoder("znorm", dim=2).encode(np.array([[1.0, 2.0]])).shape == (1, 2)


# --- 14: a full disk under the cache in the output folder ----------------------------------------------
def test_a_full_disk_while_the_cache_is_written_is_the_clear_line(tables, monkeypatch):
    """The cache's shards (OUT/cache/*.npy) are written on a full disk: each temporary file is a link
    to /dev/full, whose writes fail with ENOSPC as a full file system's do.  (numpy's np.save wrote
    them with ndarray.tofile, whose short write raised "N requested and M written", no errno.)"""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    real = tempfile.mkstemp

    def full_mkstemp(*args, dir=None, suffix=None, **kwargs):  # noqa: A002 - tempfile's name
        fd, name = real(*args, dir=dir, suffix=suffix, **kwargs)
        if dir is not None and "cache" in Path(dir).parts and (suffix or "").endswith(".npy"):  # the shards
            os.unlink(name)
            os.symlink("/dev/full", name)  # fd still names the unlinked file: its chmod touches nothing else
        return fd, name

    rng = np.random.default_rng(5)  # shards of 2,000 x 64 float16 (256 kB): numpy's short write, not a buffered one
    write_table(tables / "big.csv", rng.normal(size=(2000, 8)))
    monkeypatch.setattr(tempfile, "mkstemp", full_mkstemp)
    out = tables / "scan"
    result = cli("scan", tables / "big.csv", tables / "test.csv", "--out", out, *FAST)
    assert_one_line_error(result, "No space left on device", "free some space", str(out / "cache"))
    assert "requested and" not in result.output
    assert not [p for p in out.rglob("*") if p.is_symlink()]  # no temporary left behind


def test_key_buckets_on_a_full_disk_raise_enospc(tmp_path):
    """The cache lookup's bucket files (system temp folder) fail with ENOSPC; ndarray.tofile lost a
    small write to a full disk without a word (a bucket's keys gone)."""
    from sibscan.store import keybuckets

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    os.symlink("/dev/full", tmp_path / "c0")
    rec = np.zeros(4, dtype=[("hi", "<u8"), ("lo", "<u8")])
    with pytest.raises(OSError) as info:
        keybuckets.spread(tmp_path, "c", rec, np.zeros(4, np.int64))
    assert info.value.errno == errno.ENOSPC


def test_1d_features_are_refused_naming_the_argument_once(tmp_path):
    with pytest.raises(InputError) as info:
        sibscan.scan(train_features=np.random.rand(40), test_features=np.random.rand(10, 1), features_id="m",
                     out=tmp_path / "s", progress=False)
    assert str(info.value).startswith("train_features must be a numeric array of shape (n, dim)"), info.value
