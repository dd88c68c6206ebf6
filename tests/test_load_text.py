"""Loading text (JSONL, CSV/TSV, Parquet, TXT), exact fingerprints, and chunking."""
from __future__ import annotations

import hashlib
import json
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sibscan.errors import InputError
from sibscan.items import Items
from sibscan.fingerprint import raw_text_fingerprints, text_fingerprints
from sibscan.kernels.textalign import normalise_text
from sibscan.loaders.text import chunk_items, load_text


def _jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def test_jsonl_columns_and_empty_texts(tmp_path):
    p = _jsonl(tmp_path / "d.jsonl", [
        {"text": "Hello world", "y": "pos", "key": "a", "src": "s1"},
        {"text": "   ", "y": "neg", "key": "b", "src": "s1"},
        {"text": None, "y": "neg", "key": "c", "src": "s2"},
        {"text": "Zweiter Satz", "y": "neg", "key": "d", "src": "s2"},
    ])
    items = load_text(p, "test", label="y", id="key", group="src")
    assert items.modality == "text" and items.texts == ["Hello world", "Zweiter Satz"]
    assert list(items.ids) == ["a", "d"] and list(items.labels) == ["pos", "neg"] and list(items.groups) == ["s1", "s2"]
    # rows are file lines, counted from 1 as for tables (records 1 and 2 are lines 2 and 3)
    assert [(s.where, s.reason) for s in items.skipped] == [(f"{p}, row 2", "empty text"),
                                                            (f"{p}, row 3", "empty text")]
    default_ids = load_text(p, "test")
    assert list(default_ids.ids) == ["0", "3"]  # record numbers: skipping never renumbers


def test_missing_text_column_lists_columns(tmp_path):
    p = _jsonl(tmp_path / "d.jsonl", [{"body": "x", "label": 1}])
    with pytest.raises(InputError,
                       match=r"d.jsonl: no 'text' column; columns: body, label \(choose one with --text-field\)"):
        load_text(p, "train")
    assert load_text(p, "train", text_field="body").texts == ["x"]
    with pytest.raises(InputError, match=r"no id column 'uid'; columns: body, label"):
        load_text(p, "train", text_field="body", id="uid")


def test_csv_tsv_parquet_txt(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_bytes('\ufefftext,label\n"line one\nline two",a\n"with, comma",b\n'.encode("utf-8"))
    items = load_text(csv, "train", label="label")
    assert items.texts == ["line one\nline two", "with, comma"] and list(items.labels) == ["a", "b"]
    tsv = tmp_path / "d.tsv"
    tsv.write_text("id\ttext\nx1\tfirst\nx2\tsecond\n")
    assert list(load_text(tsv, "train", id="id").ids) == ["x1", "x2"]
    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\nok,a\ntoo,many,fields\n")
    with pytest.raises(InputError, match=r"bad.csv, row 3: has 3 fields, the header has 2"):
        load_text(bad, "train")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"text": ["α", "", "β"], "y": [1, 2, 3]}), tmp_path / "d.parquet")
    items = load_text(tmp_path / "d.parquet", "test", label="y")
    assert items.texts == ["α", "β"] and list(items.labels) == ["1", "3"] and len(items.skipped) == 1
    txt = tmp_path / "d.txt"
    txt.write_bytes(b"first line\r\n\r\nthird line\nfourth\n")
    items = load_text(txt, "test")
    assert items.texts == ["first line", "third line", "fourth"] and list(items.ids) == ["0", "2", "3"]
    with pytest.raises(InputError, match="a .txt file has no columns"):
        load_text(txt, "test", label="y")


def test_bad_text_files(tmp_path):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("ok\nsecond line caf\u00e9\n".encode("latin-1"))
    with pytest.raises(InputError,
                       match=r"latin.txt: not valid UTF-8 at byte offset 18 \(line 2: byte 0xe9\); re-save"):
        load_text(latin, "train")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbftext\nab\xff\n")
    with pytest.raises(InputError, match=r"bom.csv: not valid UTF-8 at byte offset 10 \(line 2: byte 0xff\)"):
        load_text(bom, "train")
    broken = tmp_path / "b.jsonl"
    broken.write_text('{"text": "a"}\n{"text": \n')
    with pytest.raises(InputError, match=r"b.jsonl, row 2: not valid JSON \(Expecting value, column 10\)"):
        load_text(broken, "train")  # the column on row 2
    arr = tmp_path / "arr.jsonl"
    arr.write_text('["a"]\n')
    with pytest.raises(InputError, match="row 1: a JSON list, not an object"):
        load_text(arr, "train")
    nested = _jsonl(tmp_path / "n.jsonl", [{"text": {"a": 1}}])
    with pytest.raises(InputError, match=r"n.jsonl, row 1: text field 'text' holds a JSON dict"):
        load_text(nested, "train")
    empty = _jsonl(tmp_path / "e.jsonl", [{"text": ""}, {"text": " \t"}])
    with pytest.raises(InputError, match=r"no non-empty texts \(2 rows, all empty\)"):
        load_text(empty, "train")
    dup = _jsonl(tmp_path / "dup.jsonl", [{"text": "a", "id": 1}, {"text": "b", "id": 1}])
    with pytest.raises(InputError, match=r"duplicate id '1' in column 'id' \(rows 1 and 2\)"):
        load_text(dup, "train", id="id")
    with pytest.raises(InputError, match="unsupported text file type '.docx'"):
        (tmp_path / "x.docx").write_text("x")
        load_text(tmp_path / "x.docx", "train")
    with pytest.raises(InputError, match="no such file"):
        load_text(tmp_path / "none.jsonl", "train")


@pytest.mark.parametrize("id_", [None, "id"])
def test_an_id_field_names_records_and_a_repeat_or_a_gap_is_refused_as_with_id(tmp_path, id_):
    # an "id" field found without --id is used as --id id would use it: a repeated or missing id is refused
    # in one line naming the file, both rows and the fix (before, the whole split silently took row numbers)
    rows = [{"id": f"q{i}", "text": f"text number {i}"} for i in range(4)]
    assert list(load_text(_jsonl(tmp_path / "ok.jsonl", rows), "test", id=id_).ids) == ["q0", "q1", "q2", "q3"]
    dup = _jsonl(tmp_path / "dup.jsonl", [*rows, {"id": "q1", "text": "another text"}])
    with pytest.raises(InputError, match=r"dup.jsonl: duplicate id 'q1' in column 'id' \(rows 2 and 5\); ids must be "
                                         r"unique within a split: give every record its own 'id', or name another "
                                         r"id column with --id COLUMN$"):
        load_text(dup, "test", id=id_)
    gap = _jsonl(tmp_path / "gap.jsonl", [*rows[:2], {"text": "no id here"}, *rows[2:]])
    with pytest.raises(InputError, match=r"gap.jsonl, row 3: no id in column 'id'; give every record its own 'id'"):
        load_text(gap, "test", id=id_)
    csv = tmp_path / "dup.csv"
    csv.write_text("id,text\na,one\nb,two\na,three\n")
    with pytest.raises(InputError, match=r"dup.csv: duplicate id 'a' in column 'id' \(rows 2 and 4\)"):
        load_text(csv, "test", id=id_)


def test_fingerprints_normalise_case_space_and_unicode_forms():
    texts = [
        "The ﬁrst  Rule\n of  Ｆight Club",   # ligature, full-width letter, odd spacing
        "the first rule of fight club",
        "THE FIRST RULE OF FIGHT CLUB ",
        "the first rule of fight clubs",
    ]
    fp = text_fingerprints(texts)
    assert fp.shape == (4, 2) and fp.dtype == np.uint64
    assert (fp[0] == fp[1]).all() and (fp[1] == fp[2]).all() and not (fp[1] == fp[3]).all()
    raw = raw_text_fingerprints(texts)
    assert len({tuple(r) for r in raw}) == 4
    # brute-force reference
    ref = hashlib.blake2b(" ".join(unicodedata.normalize("NFKC", texts[0]).casefold().split()).encode(),
                          digest_size=16).digest()
    assert fp[0].astype("<u8").tobytes() == ref
    assert normalise_text("Straße\u00a0 X") == "strasse x"


def _brute_chunks(words, w, s):
    if len(words) <= w:
        return [words]
    out, start = [], 0
    while True:
        out.append(words[start:start + w])
        if start + w >= len(words):
            return out
        start = min(start + s, len(words) - w)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(1, 8), st.data())
def test_chunks_cover_every_word(n_words, w, data):
    s = data.draw(st.integers(1, w))
    words = [f"w{i}" for i in range(n_words)] or ["only"]
    items = Items("train", "text", ids=["d"], texts=[" ".join(words)])
    chunks = chunk_items(items, w, s)
    got = [t.split() for t in chunks.texts]
    assert got == _brute_chunks(words, w, s)
    covered = {x for c in got for x in c}
    assert covered == set(words)


def test_chunk_items_ids_extra_and_labels(tmp_path):
    p = _jsonl(tmp_path / "d.jsonl", [
        {"text": "one two three four five six seven", "y": "a", "id": "doc1"},
        {"text": "short text", "y": "b", "id": "doc2"},
    ])
    items = load_text(p, "test", label="y", id="id", chunk_words=3, chunk_stride=2)
    assert list(items.ids) == ["doc1#chunk0", "doc1#chunk1", "doc1#chunk2", "doc2#chunk0"]
    assert items.texts == ["one two three", "three four five", "five six seven", "short text"]
    assert list(items.extra["doc_index"]) == [0, 0, 0, 1] and list(items.extra["chunk"]) == [0, 1, 2, 0]
    assert list(items.extra["doc_id"]) == ["doc1"] * 3 + ["doc2"]
    assert list(items.labels) == ["a", "a", "a", "b"]
    sub = items.subset([3, 0])
    assert list(sub.extra["doc_id"]) == ["doc2", "doc1"]
    with pytest.raises(InputError, match=r"--chunk-stride must be an integer in 1\.\.3, got 4"):
        chunk_items(load_text(p, "test"), 3, 4)
    with pytest.raises(InputError, match="--chunk-words must be an integer >= 1, got 0"):
        chunk_items(load_text(p, "test"), 0)
    with pytest.raises(InputError, match=r"chunk_stride needs chunk_words"):
        load_text(p, "test", chunk_stride=2)
