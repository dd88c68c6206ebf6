"""Issue 32, item 2: a neighbours table copied from another scan is refused wherever it is read.

The scan records in its manifest what ``neighbours.npz`` was computed from and stores the same digest
in the table; a table from another scan (other train rows here) stored another, and report, check,
split, calibrate and the Python API read it as the scan's own (10 % where the scan's own gave 74.5 %).
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import sibscan
from rel_helpers import FAST, assert_one_line_error, cli, write_table
from sibscan.store.scandir import ScanDir


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """``own``: a scan whose table was replaced by that of ``other`` (another train set, same test set)."""
    d = tmp_path_factory.mktemp("foreign")
    rng = np.random.default_rng(3)
    train = rng.normal(size=(30, 6)).cumsum(axis=1)
    write_table(d / "train.csv", train)
    write_table(d / "other_train.csv", rng.normal(size=(30, 6)).cumsum(axis=1))
    write_table(d / "test.csv", np.vstack([train[:4], rng.normal(size=(6, 6)).cumsum(axis=1)]))
    write_table(d / "short_test.csv", rng.normal(size=(7, 6)).cumsum(axis=1))
    for name, train_file, test_file in (("own", "train.csv", "test.csv"), ("other", "other_train.csv", "test.csv"),
                                        ("short", "train.csv", "short_test.csv")):
        result = cli("scan", d / train_file, d / test_file, "--out", d / name, *FAST)
        assert result.exit_code == 0, result.output
    return d


@pytest.fixture
def mixed(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    shutil.copy(scans / "other" / "neighbours.npz", scan / "neighbours.npz")
    return scan


@pytest.mark.parametrize("command", [
    ("report", "{scan}", "--cutoff", "0.99"),
    ("check", "{scan}", "--max-rate", "0.2", "--cutoff", "0.99"),
    ("split", "{scan}", "--out", "{tmp}/split", "--cutoff", "0.99"),
    ("calibrate", "{scan}", "--ui", "none", "--labels", "{tmp}/labels.jsonl"),
])
def test_foreign_neighbours_table_is_refused_by_every_command(mixed, tmp_path, command):
    fingerprint = json.loads((mixed / "manifest.json").read_text())["dataset_fingerprint"]
    (tmp_path / "labels.jsonl").write_text(json.dumps({"query_id": "0", "neighbour_id": "0", "label": "same",
                                                       "dataset_fingerprint": fingerprint}) + "\n")
    result = cli(*(a.format(scan=mixed, tmp=tmp_path) for a in command))
    assert_one_line_error(result, "neighbours.npz", "another scan", "--force")


def test_foreign_neighbours_table_is_refused_by_the_python_api(mixed):
    with pytest.raises(sibscan.SibscanError, match="neighbours.npz.*force=True"):
        sibscan.Scan(mixed).report(cutoff=0.99)


def test_own_table_is_read_and_resumed(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    result = cli("report", scan, "--cutoff", "0.99")
    assert result.exit_code == 0, result.output
    again = cli("scan", scans / "train.csv", scans / "test.csv", "--out", scan, *FAST)
    assert again.exit_code == 0 and "resuming" in again.output, again.output


def test_force_recomputes_a_foreign_table(scans, mixed):
    result = cli("scan", scans / "train.csv", scans / "test.csv", "--out", mixed, "--force", *FAST)
    assert result.exit_code == 0, result.output
    assert cli("report", mixed, "--cutoff", "0.99").exit_code == 0


def test_a_resumed_scan_refuses_a_foreign_table(scans, mixed):
    """Resume is the one reader that would otherwise keep the table and rewrite the manifest around it."""
    result = cli("scan", scans / "train.csv", scans / "test.csv", "--out", mixed, *FAST)
    assert_one_line_error(result, "neighbours.npz", "another scan", "--force")


# The other tables of a scan folder, behind the same door (ScanDir): baseline.json and embeddings/*.npy.
# Before, a baseline.json copied from another scan (other train rows) was read as the scan's own, so the
# expected chance siblings of every output were that scan's (0.151 where the demo's own gave < 0.01),
# and a copied embeddings file gave calibrate's control pairs from other items' similarities (an
# IndexError when its rows were fewer).

@pytest.fixture
def foreign_baseline(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    own = json.loads((scan / "baseline.json").read_text())
    other = json.loads((scans / "other" / "baseline.json").read_text())
    assert own["quantiles"] != other["quantiles"]  # a wrong answer if it were read
    shutil.copy(scans / "other" / "baseline.json", scan / "baseline.json")
    return scan


@pytest.mark.parametrize("command", [
    ("report", "{scan}", "--cutoff", "0.99"),
    ("calibrate", "{scan}", "--ui", "none", "--out", "{tmp}/cal"),
    ("scan", "{train}", "{test}", "--out", "{scan}", *FAST),
])
def test_foreign_baseline_is_refused_by_every_reader(scans, foreign_baseline, tmp_path, command):
    args = (str(a).format(scan=foreign_baseline, tmp=tmp_path, train=scans / "train.csv", test=scans / "test.csv")
            for a in command)
    assert_one_line_error(cli(*args), "baseline.json", "another scan", "delete it")


def test_foreign_baseline_is_refused_by_the_python_api(foreign_baseline):
    with pytest.raises(sibscan.SibscanError, match="baseline.json.*another scan"):
        sibscan.Scan(foreign_baseline).report(cutoff=0.99)


def test_a_deleted_foreign_baseline_is_computed_again_as_the_scans_own(scans, foreign_baseline):
    own = json.loads((scans / "own" / "baseline.json").read_text())
    (foreign_baseline / "baseline.json").unlink()
    result = cli("scan", scans / "train.csv", scans / "test.csv", "--out", foreign_baseline, *FAST)
    assert result.exit_code == 0, result.output
    assert json.loads((foreign_baseline / "baseline.json").read_text()) == own


def test_an_unstamped_baseline_says_why_it_cannot_be_checked(scans, tmp_path):
    """A baseline.json written before baselines carried their scan's stamp is not called "copied from another
    scan": the line says it cannot be checked, and the re-run that recomputes it."""
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    baseline = json.loads((scan / "baseline.json").read_text())
    del baseline["source"]
    (scan / "baseline.json").write_text(json.dumps(baseline))
    assert_one_line_error(cli("report", scan, "--cutoff", "0.99"), "baseline.json", "does not say which scan",
                          "delete it")
    (scan / "baseline.json").unlink()
    result = cli("scan", scans / "train.csv", scans / "test.csv", "--out", scan, *FAST)
    assert result.exit_code == 0, result.output
    assert json.loads((scan / "baseline.json").read_text())["source"] is not None


def test_foreign_embeddings_are_refused_and_a_rerun_rewrites_them(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    shutil.copy(scans / "other" / "embeddings" / "train.npy", scan / "embeddings" / "train.npy")
    result = cli("calibrate", scan, "--ui", "none", "--out", tmp_path / "cal")
    assert_one_line_error(result, "embeddings/train.npy", "another scan", "re-run the same 'sibscan scan'")
    again = cli("scan", scans / "train.csv", scans / "test.csv", "--out", scan, *FAST)
    assert again.exit_code == 0 and "resuming" in again.output, again.output
    assert cli("calibrate", scan, "--ui", "none", "--out", tmp_path / "cal").exit_code == 0


def test_embeddings_of_the_same_shape_in_another_order_are_refused(scans, tmp_path):
    """Same rows, dim and dtype: only the digest's rows tell them apart (the controls' similarities would move)."""
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    emb = np.load(scan / "embeddings" / "train.npy")
    np.save(scan / "embeddings" / "train.npy", emb[::-1])
    with pytest.raises(sibscan.SibscanError, match="train.npy was not computed by the scan"):
        ScanDir(scan).embeddings("train")
    assert ScanDir(scan).embeddings("test").shape[0] == 10  # the file left as written still reads


# items/<split>.npz: every reader takes the ids, labels and contents of the rows the table points at from
# them. Before, another scan's train items (as many rows) were read as the scan's own: the demo's report
# read 31 % accuracy where its own items gave 73 %; with fewer rows, an IndexError traceback.

@pytest.mark.parametrize("source, split", [("other", "train"), ("short", "test")])
@pytest.mark.parametrize("command", [
    ("report", "{scan}", "--cutoff", "0.99"),
    ("check", "{scan}", "--max-rate", "0.2", "--cutoff", "0.99"),
    ("split", "{scan}", "--out", "{tmp}/split", "--cutoff", "0.99"),
    ("calibrate", "{scan}", "--ui", "none", "--out", "{tmp}/cal"),
])
def test_foreign_items_are_refused_by_every_command(scans, tmp_path, source, split, command):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    shutil.copy(scans / source / "items" / f"{split}.npz", scan / "items" / f"{split}.npz")
    result = cli(*(a.format(scan=scan, tmp=tmp_path) for a in command))
    assert_one_line_error(result, f"items/{split}.npz", "another scan", "re-run the same 'sibscan scan'")


def test_foreign_items_are_refused_by_the_python_api_and_a_rerun_rewrites_them(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    shutil.copy(scans / "other" / "items" / "train.npz", scan / "items" / "train.npz")
    with pytest.raises(sibscan.SibscanError, match="train.npz was not computed by the scan"):
        sibscan.Scan(scan).report(cutoff=0.99)
    again = cli("scan", scans / "train.csv", scans / "test.csv", "--out", scan, *FAST)
    assert again.exit_code == 0 and "resuming" in again.output, again.output
    assert cli("report", scan, "--cutoff", "0.99").exit_code == 0


def test_items_written_before_their_fingerprint_was_stored_are_checked_by_their_count(scans, tmp_path):
    scan = tmp_path / "scan"
    shutil.copytree(scans / "own", scan)
    for source in ("own", "short"):  # as an older sibscan wrote them: no items_fingerprint member
        with np.load(scans / source / "items" / "test.npz") as z:
            np.savez(scan / "items" / "test.npz", **{k: z[k] for k in z.files if k != "items_fingerprint"})
        result = cli("report", scan, "--cutoff", "0.99")
        if source == "own":
            assert result.exit_code == 0, result.output
        else:
            assert_one_line_error(result, "items/test.npz", "another scan")
