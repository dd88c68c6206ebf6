"""Issue 13, 'twins on a 304 MB CSV peaks at 6.2 GB': a CSV is parsed in chunks of rows.

Peak memory is measured by ``python -m benchmarks.memory``; here the chunked parse must give the
same items as one chunk, and messages must still name the file line, in any chunk.
"""
from __future__ import annotations

import numpy as np
import pytest

import sibscan.loaders.tables as tables_module
from sibscan.errors import InputError
from sibscan.loaders.tables import load_table

CSV = "id,a,b,label,grp\n" + "".join(f"r{i}, {i}.5 ,{-i},{'xy'[i % 2]}, g{i // 3}\n\n" for i in range(11))


@pytest.mark.parametrize("chunk", [1, 3, 4, 1000])
def test_chunked_csv_gives_the_same_items(tmp_path, monkeypatch, chunk):
    path = tmp_path / "t.csv"
    path.write_text(CSV)
    monkeypatch.setattr(tables_module, "_CHUNK_ROWS", chunk)
    items = load_table(path, "train", id="id", group="grp")
    np.testing.assert_array_equal(items.values, np.array([[i + 0.5, -i] for i in range(11)]))
    assert list(items.ids) == [f"r{i}" for i in range(11)]
    assert list(items.labels) == ["xy"[i % 2] for i in range(11)]
    assert list(items.groups) == [f"g{i // 3}" for i in range(11)]


def test_bad_cell_in_a_later_chunk_names_its_file_line(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(9)) + "1,oops\n2,3\n")
    monkeypatch.setattr(tables_module, "_CHUNK_ROWS", 4)
    with pytest.raises(InputError, match=r"t\.csv, row 11.*'oops'"):
        load_table(path, "train")
    path.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(9)) + "4\n")
    with pytest.raises(InputError, match=r"t\.csv, row 11: has 1 cells, expected 2"):
        load_table(path, "train")


def test_header_only_empty_and_non_utf8_csv(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n\n")
    with pytest.raises(InputError, match="has a header but no data rows"):
        load_table(path, "train")
    path.write_text("")
    with pytest.raises(InputError, match=r"empty file"):
        load_table(path, "train")
    path.write_bytes(b"a,b\n1,2\n3,\xff\n")
    with pytest.raises(InputError, match=r"t\.csv: cannot read: not UTF-8 .*save the file as UTF-8"):
        load_table(path, "train")


def _table(n: int):
    from sibscan.store.neighbourtable import Neighbours

    rng = np.random.default_rng(0)
    verified = rng.random(n).astype(np.float32)
    verified[::4] = np.nan
    return Neighbours({
        "query_split": np.array(["test", "train"])[np.arange(n) % 2], "query_id": [f"q,{i}" for i in range(n)],
        "query_index": np.arange(n), "rank": np.arange(n) % 3, "neighbour_split": np.full(n, "train"),
        "neighbour_id": [f'n"{i}' for i in range(n)], "neighbour_index": np.arange(n)[::-1],
        "similarity": rng.random(n).astype(np.float32), "verified": verified, "exact": np.arange(n) % 5 == 0,
        "detail": ["" if i % 3 else f"shift {i}" for i in range(n)],
    })


@pytest.mark.parametrize("block", [1, 3, 7, 100])
def test_neighbours_csv_in_blocks_is_the_whole_table_text(tmp_path, block):
    """neighbours.csv is written a block of rows at a time (one block's cells in memory, not the
    table's): the same bytes as the whole table in one piece."""
    nb = _table(11)
    whole = "".join(nb.iter_csv(block=10**9))
    assert "".join(nb.iter_csv(block=block)) == whole
    assert whole.count("\n") == 12 and '"q,3"' in whole and '"n""4"' in whole
    nb.write_csv(tmp_path / "n.csv")
    assert (tmp_path / "n.csv").read_bytes() == whole.encode()
    assert "".join(_table(0).iter_csv(block=block)) == whole.splitlines(keepends=True)[0]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bound", [None, 1])
def test_chunks_fill_one_buffer_whatever_the_line_ends(tmp_path, monkeypatch, newline, bound):
    """The chunks' floats go into one buffer sized by the file's line ends (no join holding them
    twice); a bound too small (forced here) grows the buffer instead of losing rows."""
    path = tmp_path / "t.csv"
    path.write_bytes(("a,b" + newline + "".join(f"{i},{-i}{newline}{newline}" for i in range(10))).encode())
    monkeypatch.setattr(tables_module, "_CHUNK_ROWS", 3)
    if bound is not None:
        monkeypatch.setattr(tables_module, "line_bound", lambda p: bound)
    items = load_table(path, "train")
    np.testing.assert_array_equal(items.values, np.array([[i, -i] for i in range(10)], float))
    assert items.values.flags.c_contiguous
