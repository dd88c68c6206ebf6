"""Issue 13, memory bounded by the block size at the load stage: a scan's CSV/TSV train table is parsed
chunk by chunk straight into the spill files (values and fingerprints), never whole in memory.

Peak memory is measured by ``python -m benchmarks.memory --parts scan`` (tracemalloc's peak beside the
RSS); here the chunks must not change a byte: a 3-row chunk gives the items, fingerprints and digests
of the whole load, and the scan of a chunk-loaded CSV is the scan of the same rows given from Python.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import sibscan.loaders.tables as tables_module
from rel_helpers import FAST, cli


def _npz(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _hostile_csv(path, n=23):
    """Labels, an id column, missing-value tokens, -0.0, integers and long decimals."""
    rng = np.random.default_rng(11)
    values = np.stack([rng.normal(size=n).round(d) for d in (0, 2, 8, 4, 17)], axis=1)
    values[::4, 1] = -0.0
    lines = ["id,c0,c1,label,c2,c3,c4"]
    for i, row in enumerate(values):
        cells = [repr(float(v)) for v in row]
        if i % 5 == 2:
            cells[3] = ["", "NA", "?", "nan"][i % 4]
        lines.append(",".join([f"row{i:03d}", *cells[:2], f"k{i % 3}", *cells[2:]]))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("decimals,znorm", [(6, False), (2, True)])
def test_chunked_spill_gives_the_items_fingerprints_and_digests_of_the_whole_load(tmp_path, monkeypatch, decimals, znorm):
    from sibscan.store.diskarray import is_disk_array
    from sibscan.fingerprint import dataset_fingerprint, fingerprint, ids_fingerprint, items_fingerprint
    from sibscan.store.spill import RowSpill

    csv = _hostile_csv(tmp_path / "train.csv")
    whole = tables_module.load_table(csv, "train", id="id")
    whole_fp = fingerprint(whole, decimals=decimals, znorm=znorm)
    monkeypatch.setattr(tables_module, "_CHUNK_ROWS", 3)
    spilled = []
    spill = RowSpill(tmp_path / "v.npy", tmp_path / "f.npy", decimals, znorm, spilled)
    items = tables_module.load_table(csv, "train", id="id", sink=spill)
    assert spilled == [tmp_path / "v.npy", tmp_path / "f.npy"]
    assert is_disk_array(items.values) and is_disk_array(spill.fingerprints)
    assert np.asarray(items.values).tobytes() == whole.values.tobytes()  # every bit, NaN and -0.0 included
    np.testing.assert_array_equal(np.asarray(spill.fingerprints), whole_fp)
    for name in ("ids", "labels"):
        np.testing.assert_array_equal(getattr(items, name), getattr(whole, name))
    fp = np.asarray(spill.fingerprints)
    assert dataset_fingerprint(items, decimals=decimals, znorm=znorm, fp=fp) == \
        dataset_fingerprint(whole, decimals=decimals, znorm=znorm, fp=whole_fp)
    assert items_fingerprint(items, fp) == items_fingerprint(whole, whole_fp)
    assert ids_fingerprint(items, fp) == ids_fingerprint(whole, whole_fp)
    np.save(tmp_path / "ref_v.npy", whole.values)
    np.save(tmp_path / "ref_f.npy", whole_fp)
    assert (tmp_path / "v.npy").read_bytes() == (tmp_path / "ref_v.npy").read_bytes()  # the files np.save writes
    assert (tmp_path / "f.npy").read_bytes() == (tmp_path / "ref_f.npy").read_bytes()


def test_a_bad_row_in_a_later_chunk_is_named_and_leaves_no_file(tmp_path, monkeypatch):
    from sibscan.errors import InputError
    from sibscan.store.spill import RowSpill

    csv = _hostile_csv(tmp_path / "train.csv")
    lines = csv.read_text().splitlines()
    lines[12] = lines[12].replace("k", "", 1).replace(",", ",oops", 2)
    csv.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(tables_module, "_CHUNK_ROWS", 3)
    spill = RowSpill(tmp_path / "v.npy", tmp_path / "f.npy", 6, False, [])
    with pytest.raises(InputError, match="line 13|row 13"):
        tables_module.load_table(csv, "train", id="id", sink=spill)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.csv"]  # both unfinished spills dropped


def test_scan_of_a_chunk_loaded_csv_equals_the_scan_of_the_same_rows_from_python(tmp_path, monkeypatch):
    """The CSV's train table goes to disk 3 rows at a time (with its fingerprints); the same rows given
    from Python are moved to disk whole: the two scans write the same files."""
    from sibscan import scan

    csv = _hostile_csv(tmp_path / "train.csv", n=40)
    rng = np.random.default_rng(5)
    whole = tables_module.load_table(csv, "train", id="id")
    test_values = np.vstack([whole.values[[0, 1, 3, 4, 5]], rng.normal(size=(7, 5))])
    (tmp_path / "test.csv").write_text("id,c0,c1,c2,c3,c4\n" + "".join(
        ",".join([f"t{i}", *(repr(float(v)) for v in row)]) + "\n" for i, row in enumerate(test_values)))
    monkeypatch.setattr(tables_module, "_CHUNK_ROWS", 3)
    result = cli("scan", "--train", csv, "--test", tmp_path / "test.csv", "--id", "id", "--out",
                 tmp_path / "csv", *FAST)
    assert result.exit_code == 0, result.output
    test = tables_module.load_table(tmp_path / "test.csv", "test", id="id")
    scan(whole, test, out=tmp_path / "py", encoder="raw", verify=False, baseline_pairs=500, progress=False)
    for name in ("items/train.npz", "items/test.npz", "neighbours.npz"):
        a, b = _npz(tmp_path / "csv" / name), _npz(tmp_path / "py" / name)
        assert sorted(a) == sorted(b), name
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{name}:{k}")
    assert (tmp_path / "csv" / "baseline.json").read_bytes() == (tmp_path / "py" / "baseline.json").read_bytes()
    manifests = [json.loads((tmp_path / o / "manifest.json").read_text()) for o in ("csv", "py")]
    assert manifests[0]["summary"] == manifests[1]["summary"] and manifests[0]["summary"]["exact_test_rows_with_train_twin"] == 5
    for key in ("fingerprint", "items_fingerprint", "ids_fingerprint", "n_items"):
        assert manifests[0]["inputs"]["train"][key] == manifests[1]["inputs"]["train"][key], key
    assert manifests[0]["dataset_fingerprint"] == manifests[1]["dataset_fingerprint"]
    assert manifests[0]["items_fingerprint"] == manifests[1]["items_fingerprint"]
    assert not [p.name for p in (tmp_path / "csv").iterdir() if p.name.startswith(".")]  # no spill left
