"""Issue 13, 'scan --encoder raw ... about 8 KB per train row': the train→test direction is searched,
verified and written a block of train rows at a time, the train embeddings go straight to disk.

Peak memory is measured by ``python -m benchmarks.memory --parts scan``; here the blocks must not
change a byte: the same scan with a 3-row block and with one block writes the same files, and the
block-by-block writer gives what the whole-table writer gives.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import sibscan.stages.candidates as candidates_module
from rel_helpers import FAST, cli
from sibscan.store.neighbourfile import NeighboursWriter
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours


def _scan(d, out, *flags):
    return cli("scan", "--train", d / "train.csv", "--test", d / "test.csv", "--out", out, *flags)


def _npz(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _assert_same_npz(a, b):
    a, b = _npz(a), _npz(b)
    assert sorted(a) == sorted(b)
    for k in b:
        assert a[k].dtype == b[k].dtype, k
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("flags", [
    FAST,  # unverified: train→test sits between the other two directions, as searched
    ("--encoder", "raw", "--baseline-pairs", "500", "--verified-baseline-pairs", "60", "--no-progress"),  # lagcorr
])
def test_tiny_blocks_write_the_same_scan_as_one_block(tables, monkeypatch, flags):
    outs = {}
    for block in (3, 10**6):
        monkeypatch.setattr(candidates_module, "REVERSE_BLOCK", block)
        outs[block] = tables / f"scan{block}"
        result = _scan(tables, outs[block], *flags)
        assert result.exit_code == 0, result.output
    tiny, whole = outs[3], outs[10**6]
    for name in ("neighbours.csv", "baseline.json", "embeddings/train.npy", "embeddings/test.npy"):
        assert (tiny / name).read_bytes() == (whole / name).read_bytes(), name
    _assert_same_npz(tiny / "neighbours.npz", whole / "neighbours.npz")
    summary = [json.loads((o / "manifest.json").read_text())["summary"] for o in (tiny, whole)]
    assert summary[0] == summary[1]
    nb = ScanDir(tiny).neighbours()
    assert len(nb.direction("train", "test")) == 40 * 3 and len(nb.direction("test", "train")) == 12 * 10
    # train embeddings written block by block are the file np.save writes
    emb = np.load(tiny / "embeddings" / "train.npy")
    np.save(tables / "ref.npy", emb)
    assert (tables / "ref.npy").read_bytes() == (tiny / "embeddings" / "train.npy").read_bytes()


def _table(n: int, split: str = "train") -> Neighbours:
    rng = np.random.default_rng(n)
    verified = rng.random(n).astype(np.float32)
    verified[::4] = np.nan
    return Neighbours({
        "query_split": np.full(n, split), "query_id": [f"q,{i}" * (1 + i % 4) for i in range(n)],
        "query_index": np.arange(n), "rank": np.arange(n) % 3, "neighbour_split": np.full(n, "test"),
        "neighbour_id": [f'n"{i}' for i in range(n)], "neighbour_index": np.arange(n)[::-1],
        "similarity": rng.random(n).astype(np.float32), "verified": verified, "exact": np.arange(n) % 5 == 0,
        "detail": ["" if i % 3 else f"lag {i}" * (i % 5) for i in range(n)], "view": np.full(n, "raw", dtype=object),
    })


@pytest.mark.parametrize("cuts", [[], [0], [1, 2], [5, 5, 9], list(range(1, 23))])
def test_writer_in_parts_gives_the_whole_table_files(tmp_path, cuts):
    whole = Neighbours.concat([_table(7, "test"), _table(16)])
    whole.save(tmp_path / "ref.npz")
    whole.write_csv(tmp_path / "ref.csv")
    with NeighboursWriter(tmp_path / "n.npz", tmp_path / "n.csv") as writer:
        for part in np.split(np.arange(len(whole)), cuts):
            writer.append(whole.select(part))
    assert (tmp_path / "n.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()
    _assert_same_npz(tmp_path / "n.npz", tmp_path / "ref.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.csv", "n.npz", "ref.csv", "ref.npz"]  # no spool left


def test_writer_of_no_rows_and_an_interrupted_writer(tmp_path):
    Neighbours.empty().save(tmp_path / "ref.npz")
    with NeighboursWriter(tmp_path / "n.npz", tmp_path / "n.csv"):
        pass
    _assert_same_npz(tmp_path / "n.npz", tmp_path / "ref.npz")
    assert (tmp_path / "n.csv").read_text() == Neighbours.empty().to_csv()
    before = {p: p.read_bytes() for p in (tmp_path / "n.npz", tmp_path / "n.csv")}
    with pytest.raises(KeyboardInterrupt):
        with NeighboursWriter(tmp_path / "n.npz", tmp_path / "n.csv") as writer:
            writer.append(_table(5))
            raise KeyboardInterrupt
    assert {p: p.read_bytes() for p in before} == before  # the previous files stay, no temporaries
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.csv", "n.npz", "ref.npz"]


def test_resumed_scan_reads_back_without_the_reverse_rows_and_gives_the_same_baseline(tables):
    out = tables / "scan"
    assert _scan(tables, out, *FAST).exit_code == 0
    baseline = (out / "baseline.json").read_bytes()
    (out / "baseline.json").unlink()  # the baseline is computed again from the table on disk
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["stages"] = [s for s in manifest["stages"] if s != "baseline"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = _scan(tables, out, *FAST)
    assert result.exit_code == 0 and "resuming" in result.output, result.output
    assert (out / "baseline.json").read_bytes() == baseline
    held = ScanDir(out).neighbours(skip=[("train", "test")])
    assert len(held.direction("train", "test")) == 0 and len(held.direction("test", "train")) == 12 * 10


def test_scattered_rows_are_read_in_bounded_runs_and_npz_copies_disk_arrays(tmp_path, monkeypatch):
    import sibscan.store.diskarray as diskarray
    from sibscan.atomic import save_npz

    values = np.random.default_rng(0).normal(size=(500, 4))
    np.save(tmp_path / "v.npy", values)
    arr = diskarray.NpyArray(tmp_path / "v.npy")
    reads = []
    real = arr.read
    monkeypatch.setattr(arr, "read", lambda a, b: reads.append(b - a) or real(a, b))
    monkeypatch.setattr(diskarray, "_RUN_BYTES", 10 * arr.row_bytes)
    index = np.random.default_rng(1).integers(0, 500, 300)
    np.testing.assert_array_equal(arr[index], values[index])
    assert max(reads) <= 10  # rows close together, but never more than _RUN_BYTES read at once
    save_npz(tmp_path / "a.npz", values=arr, ids=np.arange(500).astype(str))
    np.savez(tmp_path / "b.npz", values=values, ids=np.arange(500).astype(str))
    _assert_same_npz(tmp_path / "a.npz", tmp_path / "b.npz")


def test_scan_from_python_leaves_the_callers_items_and_no_temporary(tmp_path):
    from sibscan import scan
    from sibscan.items import Items

    rng = np.random.default_rng(3)
    train = Items.coerce(rng.normal(size=(30, 6)), "train")
    values = train.values
    scan(train, rng.normal(size=(8, 6)), out=tmp_path / "s", encoder="raw", verify=False, baseline_pairs=200,
         progress=False)
    assert train.values is values  # the scan read its own copy's values from disk, not the caller's
    assert not [p.name for p in (tmp_path / "s").iterdir() if p.name.startswith(".")]  # the temporary is gone
    assert json.loads((tmp_path / "s" / "manifest.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("existing", [False, True])
def test_spill_files_of_a_killed_scan_neither_block_nor_outlive_the_next_one(tables, existing):
    """A scan killed outright while loading leaves its spill (and the writer's temporary of it, named
    '..values-…'): the next scan into that --out neither refuses it as a foreign folder nor keeps it."""
    out = tables / "scan"
    if existing:
        assert _scan(tables, out, *FAST).exit_code == 0
    out.mkdir(exist_ok=True)
    left = [out / ".values-train-999.tmp.npy", out / "..values-train-999.tmp.npy.abc123.tmp.npy",
            out / "..values-train-fp-999.tmp.npy.def456.tmp.npy"]
    for p in left:
        p.write_bytes(b"half a spill")
    result = _scan(tables, out, *FAST, "--force")
    assert result.exit_code == 0, result.output
    assert not [p.name for p in out.iterdir() if "values-" in p.name]


def test_a_failed_fingerprint_spill_removes_the_values_spill(tmp_path, monkeypatch):
    """A full disk after the values' spill (the fingerprints' write fails) leaves no temporary behind."""
    import errno
    import importlib

    from sibscan import scan
    from sibscan.items import Items

    inputs = importlib.import_module("sibscan.stages.inputs")  # the load stage, which spills the train table
    real, calls = inputs._to_disk, []

    def full_on_second(array, path, spilled):
        calls.append(path)
        if len(calls) == 2:
            spilled.append(path)  # as the real one does before its first byte
            path.write_bytes(b"partial")
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(array, path, spilled)

    monkeypatch.setattr(inputs, "_to_disk", full_on_second)
    rng = np.random.default_rng(4)
    with pytest.raises(OSError, match="No space"):
        scan(Items.coerce(rng.normal(size=(30, 6)), "train"), rng.normal(size=(8, 6)), out=tmp_path / "s",
             encoder="raw", verify=False, baseline_pairs=200, progress=False)
    assert len(calls) == 2 and calls[0].name.endswith(".tmp.npy")
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]  # neither spill is left anywhere


@pytest.mark.parametrize("verify", [False, True])
def test_streamed_reverse_direction_equals_the_whole_table_search_and_verification(verify):
    """The blocks (and a 5-row tail, searched with the block before it, its rows handed on apart, so no
    part holds more than a block of train rows) give the rows one whole search of the direction and one
    verification give: same order, ids, similarities and scores."""
    from sibscan.stages.candidates import neighbours_table, reverse_blocks, verify_neighbours
    from sibscan.fingerprint import fingerprint
    from sibscan.items import Items
    from sibscan.options import SearchOptions
    from sibscan.verify import get_verifier

    rng = np.random.default_rng(7)
    block, d = 16, 512
    n_train, n_test = 2 * block + 5, 40
    tr, te = rng.standard_normal((n_train, d), dtype=np.float32), rng.standard_normal((n_test, d), dtype=np.float32)
    te[:3] = tr[[4, 20, 36]]  # copies, one of them in the tail
    splits = {"train": Items("train", "table", ids=[f"r{i}" for i in range(n_train)], values=tr),
              "test": Items("test", "table", ids=[f"t{i}" for i in range(n_test)], values=te)}
    emb = {s: (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
           for s, v in (("train", tr), ("test", te))}
    fps = {s: fingerprint(splits[s]) for s in splits}
    options = SearchOptions(directions=("train-test",), k_reverse=3)
    if verify:
        pytest.importorskip("torch", reason="the lagcorr verifier runs on torch (pip install 'sibscan[torch]')")
    verifier = get_verifier("lagcorr") if verify else None
    whole = verify_neighbours(neighbours_table(emb, splits, fps, options, device="cpu", progress=False,
                                               view="raw", directions=["train-test"]), verifier, splits, progress=False)
    parts = list(reverse_blocks(emb, splits, fps, options, verifier, device="cpu", progress=False, view="raw",
                                block_rows=block))
    assert [len(p) for p in parts] == [block * 3, block * 3, 5 * 3]  # the tail's rows: a part of their own
    cols = {name: np.concatenate([p.columns[name] for p in parts]) for name in whole.columns}
    for name, col in whole.columns.items():
        if name in ("similarity", "score"):
            # the same dot products in GEMMs of other shapes: numpy's BLAS (the backend of a core install,
            # without faiss or torch) may round them differently in the last bit (1.8e-7 seen)
            np.testing.assert_allclose(cols[name], col, rtol=0, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(cols[name], col, err_msg=name)


# --- nothing held per train row: row-number ids made on demand, train fingerprints and the
# --- train→test pairs read back from disk (issue 13: peak RSS bounded by the block size)
@pytest.mark.parametrize("n", [0, 1, 10, 11, 101, 1234])
def test_row_number_ids_are_the_strings_of_arange(n):
    from sibscan.rowids import RowNumberIds, lexicographic_order

    ids, ref = RowNumberIds(n), np.arange(n).astype(str)
    assert len(ids) == n and ids.dtype == ref.dtype and np.asarray(ids).dtype == ref.dtype
    np.testing.assert_array_equal(np.asarray(ids), ref)
    np.testing.assert_array_equal(lexicographic_order(ids), np.argsort(ref, kind="stable"))
    assert list(ids) == list(ref) and ids.tolist() == ref.tolist() and ids.tobytes() == ref.tobytes()
    if n:
        pick = np.array([n - 1, 0, -1, n // 2])
        assert ids[pick].dtype == ref.dtype
        np.testing.assert_array_equal(ids[pick], ref[pick])
        np.testing.assert_array_equal(ids[np.arange(n) % 3 == 1], ref[np.arange(n) % 3 == 1])
        np.testing.assert_array_equal(ids[1:n:2], ref[1:n:2])
        assert ids[-1] == ref[-1] and (ids == ref[n // 2]).sum() == 1
        with pytest.raises(IndexError):
            ids[n]
        with pytest.raises(IndexError):
            ids[np.array([n])]


def test_row_number_ids_give_the_digests_and_items_file_of_the_held_strings(tmp_path):
    from sibscan.fingerprint import fingerprint, ids_fingerprint, items_fingerprint
    from sibscan.items import Items
    from sibscan.rowids import RowNumberIds
    from sibscan.store.scandir import save_items

    values = np.random.default_rng(5).normal(size=(123, 3))
    lazy = Items("train", "table", ids=RowNumberIds(123), values=values)
    held = Items("train", "table", ids=np.arange(123).astype(str), values=values)
    assert isinstance(lazy.ids, RowNumberIds) and isinstance(held.ids, np.ndarray)
    fp = fingerprint(held)
    assert items_fingerprint(lazy, fp) == items_fingerprint(held, fp)
    assert ids_fingerprint(lazy, fp) == ids_fingerprint(held, fp)
    save_items(tmp_path / "a", lazy, fp)
    save_items(tmp_path / "b", held, fp)
    _assert_same_npz(tmp_path / "a" / "items" / "train.npz", tmp_path / "b" / "items" / "train.npz")


def test_fingerprint_membership_reads_a_disk_array_in_blocks(tmp_path):
    from sibscan.store.diskarray import NpyArray
    from sibscan.kernels.rowhash import fingerprint_membership

    rng = np.random.default_rng(2)
    b = rng.integers(0, 2**63, size=(600, 2), dtype=np.uint64)
    a = np.vstack([b[[3, 599, 300]], rng.integers(0, 2**63, size=(4, 2), dtype=np.uint64)])
    np.save(tmp_path / "b.npy", b)
    got = fingerprint_membership(a, NpyArray(tmp_path / "b.npy"), block_rows=64)
    np.testing.assert_array_equal(got, fingerprint_membership(a, b))
    assert got.tolist() == [True] * 3 + [False] * 4


def test_train_to_test_pairs_read_back_a_block_at_a_time_are_the_whole_column(tables):
    """The train→test pairs are read back from neighbours.npz a block at a time (never a key per train
    row in memory): the same pairs as the whole column."""
    out = tables / "scan"
    assert _scan(tables, out, *FAST).exit_code == 0
    sd = ScanDir(out)
    qi, ni = sd.neighbour_pairs("train", "test")
    blocks = list(sd.iter_neighbour_pairs("train", "test", block_rows=7))
    assert len(blocks) > 3
    np.testing.assert_array_equal(np.concatenate([b[0] for b in blocks]), qi)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in blocks]), ni)
    ones = list(sd.iter_neighbour_pairs("train", "test", block_rows=0))  # clamped to one row, nothing skipped
    np.testing.assert_array_equal(np.concatenate([b[0] for b in ones]), qi)


def test_scan_of_row_numbered_csv_equals_scan_of_the_same_items_with_held_ids(tables):
    """A CSV without an id column names its rows by number without holding the strings; the scan is the
    one of the same rows given with those ids as strings (exact twins, neighbours, baseline)."""
    from sibscan import scan
    from sibscan.items import Items
    from sibscan.loaders.tables import load_table
    from sibscan.rowids import RowNumberIds

    assert _scan(tables, tables / "csv", *FAST).exit_code == 0
    splits = {s: load_table(tables / f"{s}.csv", s) for s in ("train", "test")}
    assert isinstance(splits["train"].ids, RowNumberIds)
    held = {s: Items(s, "table", ids=np.asarray(it.ids), labels=it.labels, values=it.values, source=it.source)
            for s, it in splits.items()}
    scan(held["train"], held["test"], out=tables / "py", encoder="raw", verify=False, baseline_pairs=500,
         progress=False)
    _assert_same_npz(tables / "csv" / "neighbours.npz", tables / "py" / "neighbours.npz")
    assert (tables / "csv" / "baseline.json").read_bytes() == (tables / "py" / "baseline.json").read_bytes()
    for split in ("train", "test"):
        _assert_same_npz(tables / "csv" / "items" / f"{split}.npz", tables / "py" / "items" / f"{split}.npz")
    summaries = [json.loads((tables / o / "manifest.json").read_text())["summary"] for o in ("csv", "py")]
    assert summaries[0] == summaries[1] and summaries[0]["exact_test_rows_with_train_twin"] == 6


def test_manifest_digests_of_fingerprints_on_disk_are_those_of_the_array(tmp_path, monkeypatch):
    """The scan's manifest reads the train fingerprints from disk a block at a time (the dataset
    digest sorts them a bucket at a time): the digests are the ones the whole array gives."""
    import sibscan.fingerprint as fingerprint_module
    import sibscan.store.keybuckets as keybuckets
    from sibscan.store.diskarray import NpyWriter
    from sibscan.fingerprint import dataset_fingerprint, ids_fingerprint, items_fingerprint
    from sibscan.items import Items

    monkeypatch.setattr(keybuckets, "SORT_ROWS", 64)  # 16 buckets for 1,000 rows
    monkeypatch.setattr(fingerprint_module, "SORT_ROWS", 64)  # read in blocks of that size (imported at its top)
    rng = np.random.default_rng(7)
    fp = rng.integers(0, 2**64, size=(1_000, 2), dtype=np.uint64)
    fp[500:600] = fp[:100]  # repeated fingerprints
    fp[600:650, 0] = fp[650:700, 0]  # equal first lanes: the second decides the order
    items = Items("train", "table", ids=np.arange(1_000).astype(str), values=rng.normal(size=(1_000, 3)))
    with NpyWriter(tmp_path / "fp.npy", np.uint64, (2,)) as writer:
        for start in range(0, 1_000, 300):
            writer.append(fp[start:start + 300])
        on_disk = writer.close()
    assert dataset_fingerprint(items, fp=on_disk) == dataset_fingerprint(items, fp=fp)
    assert items_fingerprint(items, on_disk) == items_fingerprint(items, fp)
    assert ids_fingerprint(items, on_disk) == ids_fingerprint(items, fp)
    assert dataset_fingerprint(items, fp=fp[::-1].copy()) == dataset_fingerprint(items, fp=fp)  # order-free
    assert [p.name for p in tmp_path.iterdir()] == ["fp.npy"]  # nothing beside the fingerprints' file
