"""Loading tables and time series: every format, modality detection, and each bad-input message."""
from __future__ import annotations

import numpy as np
import pytest

from sibscan.errors import InputError, SibscanError
from sibscan.loaders import load, modality_of


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------- formats

def test_csv_with_header_label_id_group(tmp_path):
    p = write(tmp_path / "a.csv", "pid,x1,x2,diag,site\np1,1.5,-0.0,yes,A\np2,,3,no,B\np3,?,NA,yes,A\n")
    items = load(p, "train", label="diag", id="pid", group="site")
    assert items.modality == "table" and items.values.dtype == np.float64
    assert list(items.ids) == ["p1", "p2", "p3"]
    assert list(items.labels) == ["yes", "no", "yes"] and list(items.groups) == ["A", "B", "A"]
    np.testing.assert_array_equal(items.values, [[1.5, -0.0], [np.nan, 3.0], [np.nan, np.nan]])


def test_csv_auto_label_column_and_row_index_ids(tmp_path):
    p = write(tmp_path / "a.csv", "a,b,Class\n1,2,x\n3,4,y\n")
    items = load(p, "test")
    assert list(items.labels) == ["x", "y"] and list(items.ids) == ["0", "1"]
    assert items.values.shape == (2, 2)


def test_ucr_headerless_tsv_label_first(tmp_path):
    p = write(tmp_path / "X_TRAIN.tsv", "1\t0.5\t0.25\t1e-3\n-1\t2\t3\t4\n")
    items = load(p, "train")
    assert list(items.labels) == ["1", "-1"]
    np.testing.assert_array_equal(items.values, [[0.5, 0.25, 1e-3], [2, 3, 4]])


def test_headerless_csv_has_no_default_label(tmp_path):
    p = write(tmp_path / "a.csv", "1,2,3\n4,5,6\n")
    assert load(p, "train").labels is None
    assert list(load(p, "train", label="0").labels) == ["1", "4"]


def test_ts_multivariate_variable_length_missing(tmp_path):
    p = write(tmp_path / "a.ts", "# comment\n@problemName demo\n@univariate false\n@dimensions 2\n"
              "@equalLength false\n@classLabel true a b\n@data\n"
              "1,2,3:4,5,6:a\n7,?:8,9,10,11:b\n")
    items = load(p, "train")
    assert items.shape == (2, 4) and items.values.shape == (2, 8)
    assert list(items.labels) == ["a", "b"]
    nan = np.nan
    np.testing.assert_array_equal(items.values, [[1, 2, 3, nan, 4, 5, 6, nan], [7, nan, nan, nan, 8, 9, 10, 11]])


def test_ts_without_labels(tmp_path):
    p = write(tmp_path / "a.ts", "@classLabel false\n@data\n1,2\n3,4\n")
    items = load(p, "test")
    assert items.labels is None and items.shape == (1, 2)


def test_arff_numeric_with_nominal_class(tmp_path):
    p = write(tmp_path / "a.arff", "% comment\n@relation demo\n@attribute 'x 1' numeric\n@attribute x2 REAL\n"
              "@attribute target {'pos',neg}\n@data\n1.0,2.0,'pos'\n?,4,neg\n")
    items = load(p, "train")
    assert list(items.labels) == ["pos", "neg"]
    np.testing.assert_array_equal(items.values, [[1, 2], [np.nan, 4]])


def test_npy_with_label_file_and_3d(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.array([1.0, 2.0, 1.0, 2.0]))
    items = load(tmp_path / "x.npy", "train", labels_path=tmp_path / "y.npy")
    assert items.shape == (2, 3) and items.values.shape == (4, 6)
    assert list(items.labels) == ["1", "2", "1", "2"]
    (tmp_path / "y.txt").write_text("a\nb\nc\nd\n")
    assert list(load(tmp_path / "x.npy", "train", labels_path=tmp_path / "y.txt").labels) == list("abcd")


def test_npz_with_named_arrays(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.ones((3, 2)), y=np.array(["u", "v", "w"]))
    items = load(tmp_path / "d.npz", "test")
    assert list(items.labels) == ["u", "v", "w"] and items.values.shape == (3, 2)


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"id": ["a", "b"], "f1": [1.0, None], "f2": [3, 4], "label": ["x", "y"]})
    pq.write_table(table, tmp_path / "t.parquet")
    items = load(tmp_path / "t.parquet", "train", id="id")
    assert list(items.ids) == ["a", "b"] and list(items.labels) == ["x", "y"]
    np.testing.assert_array_equal(items.values, [[1, 3], [np.nan, 4]])
    pq.write_table(pa.table({"text": ["hi", "yo"], "f": [1, 2]}), tmp_path / "s.parquet")
    with pytest.raises(InputError, match=r"column 'text' has type string, not numeric.*--text-field"):
        load(tmp_path / "s.parquet", "train")


def test_modality_detection(tmp_path):
    (tmp_path / "imgs").mkdir()
    assert modality_of(tmp_path / "imgs") == "image"
    assert modality_of(tmp_path / "a.jsonl") == "text"
    assert modality_of(tmp_path / "a.csv") == "table"
    assert modality_of(tmp_path / "a.csv", text_field="body") == "text"
    assert modality_of(tmp_path / "a.parquet", path_field="file") == "image"
    assert modality_of(tmp_path / "a.ts") == "table"
    with pytest.raises(SibscanError, match="unknown modality 'tabel'; available: table, text, image"):
        modality_of(tmp_path / "a.csv", modality="tabel")
    with pytest.raises(InputError, match=r"cannot tell the modality from '\.xyz'.*--modality"):
        modality_of(tmp_path / "a.xyz")


# ------------------------------------------------------------------------------------- bad input

def test_empty_file(tmp_path):
    with pytest.raises(InputError, match=r"a\.csv: empty file"):
        load(write(tmp_path / "a.csv", ""), "train")
    with pytest.raises(InputError, match=r"a\.ts: empty file"):
        load(write(tmp_path / "a.ts", "\n\n"), "train")


def test_header_only(tmp_path):
    with pytest.raises(InputError, match=r"a\.csv: has a header but no data rows"):
        load(write(tmp_path / "a.csv", "x,y,label\n"), "train")


def test_missing_data_section(tmp_path):
    with pytest.raises(InputError, match=r"a\.ts: no @data line"):
        load(write(tmp_path / "a.ts", "@problemName x\n@classLabel true 1 2\n"), "train")
    with pytest.raises(InputError, match=r"a\.arff: no @data line"):
        load(write(tmp_path / "a.arff", "@relation r\n@attribute x numeric\n"), "train")


def test_ragged_rows(tmp_path):
    with pytest.raises(InputError, match=r"a\.csv, row 3: has 2 cells, expected 3 \(as in the header\)"):
        load(write(tmp_path / "a.csv", "a,b,label\n1,2,x\n3,4\n"), "train")
    with pytest.raises(InputError, match=r"b\.tsv, row 2: has 4 cells, expected 3 \(as in the first row\)"):
        load(write(tmp_path / "b.tsv", "1\t2\t3\n1\t2\t3\t4\n"), "train")
    with pytest.raises(InputError, match=r"c\.ts, row 5: series length 2 differs from 3, but @equalLength is true"):
        load(write(tmp_path / "c.ts", "@equalLength true\n@classLabel true a\n@data\n1,2,3:a\n1,2:a\n"), "train")
    with pytest.raises(InputError, match=r"d\.ts, row 3: has 1 dimensions, expected 2"):
        load(write(tmp_path / "d.ts", "@data\n1,2:3,4\n1,2\n"), "train")
    with pytest.raises(InputError, match=r"e\.arff, row 4: has 1 values, expected 2"):
        load(write(tmp_path / "e.arff", "@attribute x numeric\n@attribute c {a}\n@data\n1\n"), "train")


def test_non_numeric_cells(tmp_path):
    with pytest.raises(InputError, match=r"a\.csv, row 3: column 'b' has a non-numeric cell 'oops'.*--text-field"):
        load(write(tmp_path / "a.csv", "a,b,label\n1,2,x\n3,oops,y\n"), "train")
    with pytest.raises(InputError, match=r"a\.ts, row 2: non-numeric value 'x'"):
        load(write(tmp_path / "a.ts", "@data\n1,x,3\n"), "train")
    with pytest.raises(InputError, match=r"b\.arff: attribute 's' is string, not numeric"):
        load(write(tmp_path / "b.arff", "@attribute s string\n@attribute c {a}\n@data\n'hi',a\n"), "train")


def test_unknown_label_column(tmp_path):
    p = write(tmp_path / "a.csv", "a,b\n1,2\n")
    with pytest.raises(InputError, match=r"a\.csv: unknown label column 'cls'; available: a, b"):
        load(p, "train", label="cls")


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(InputError, match=r"nope\.csv: file not found"):
        load(tmp_path / "nope.csv", "train")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputError, match=r"bin\.csv: cannot read"):
        load(tmp_path / "bin.csv", "train")
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(InputError, match=r"bad\.npy: cannot read"):
        load(tmp_path / "bad.npy", "train")


def test_label_array_length_mismatch(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((3, 2)))
    np.save(tmp_path / "y.npy", np.ones(2))
    with pytest.raises(InputError, match=r"y\.npy: has 2 labels for 3 rows"):
        load(tmp_path / "x.npy", "train", labels_path=tmp_path / "y.npy")


def test_relational_arff_refused(tmp_path):
    p = write(tmp_path / "a.arff", "@attribute bag relational\n@attribute c {a}\n@data\n")
    with pytest.raises(InputError, match=r"relational .*load the \.ts version"):
        load(p, "train")
