"""The shared core: items, atomic writes, the scan-directory tables, the device policy, the CLI root."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import sibscan
from hypothesis import given, settings
from hypothesis import strategies as st

from sibscan.atomic import _json_default, append_jsonl, dumps_json, write_json
from sibscan.cli import app
from sibscan.device import resolve_device
from sibscan.errors import InputError, SibscanError
from sibscan.items import Items
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours


def test_version_cli():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"sibscan {sibscan.__version__}"


def test_public_api_sorted_and_importable():
    assert sibscan.__all__ == sorted(sibscan.__all__)
    for name in sibscan.__all__:
        assert getattr(sibscan, name) is not None


def test_items_validates_lengths_and_ids(tmp_path):
    with pytest.raises(ValueError, match="labels has 1 entries for 2 items"):
        Items("train", "text", ids=["a", "b"], labels=["x"], texts=["1", "2"])
    items = Items("train", "text", ids=["a", "a"], texts=["1", "2"], source="f.txt")
    with pytest.raises(InputError, match=r"f.txt: duplicate id 'a' \(rows 0 and 1\)"):
        items.check_unique_ids()


def test_items_roundtrip_through_scandir(tmp_path):
    values = np.array([[1.0, np.nan], [2.0, 3.0]])
    items = Items("train", "table", ids=["r0", "r1"], labels=["1", "2"], values=values, source="x.csv")
    fp = np.array([[1, 2], [3, 4]], dtype=np.uint64)
    sd = ScanDir(tmp_path)
    sd.write_items(items, fp)
    back, fp2 = sd.fingerprints("train") is not None, sd.fingerprints("train")
    loaded = sd.items("train")
    assert back and np.array_equal(fp2, fp)
    assert list(loaded.ids) == ["r0", "r1"] and list(loaded.labels) == ["1", "2"]
    assert np.array_equal(loaded.values, values, equal_nan=True)
    texts = Items("test", "text", ids=["t"], texts=["héllo\nworld"])
    sd.write_items(texts)
    assert sd.items("test").texts == ["héllo\nworld"]


def test_neighbours_score_top1_and_roundtrip(tmp_path):
    nb = Neighbours({
        "query_split": ["test"] * 4,
        "query_id": ["a", "a", "b", "b"],
        "query_index": [0, 0, 1, 1],
        "rank": [0, 1, 0, 1],
        "neighbour_split": ["train"] * 4,
        "neighbour_id": ["x", "y", "x", "z"],
        "neighbour_index": [0, 1, 0, 2],
        "similarity": [0.9, 0.8, 0.7, 0.6],
        "verified": [0.5, 0.95, np.nan, np.nan],
        "exact": [False, False, False, False],
    })
    assert np.allclose(nb["score"], [0.5, 0.95, 0.7, 0.6])
    top = nb.top1()
    assert list(top["neighbour_id"]) == ["y", "x"]
    sd = ScanDir(tmp_path)
    sd.write_neighbours(nb)
    back = sd.neighbours()
    assert list(back["detail"]) == [""] * 4 and np.allclose(back["score"], nb["score"])
    assert (tmp_path / "neighbours.csv").read_text().splitlines()[0].startswith("query_split,query_id")


@pytest.mark.parametrize("seed", range(3))
def test_top1_rows_against_a_loop(seed):
    # each query's row with the highest deciding score (verified
    # where present), ties to the lower rank, then the earlier row
    rng = np.random.default_rng(seed)
    m = 60
    q = rng.integers(0, 12, m)
    sim = rng.choice([0.2, 0.5, 0.9], m).astype(np.float32)
    ver = np.where(rng.random(m) < 0.3, np.nan, rng.choice([0.5, 0.9], m)).astype(np.float32)
    nb = Neighbours({"query_split": ["test"] * m, "query_id": [f"q{i}" for i in q], "query_index": q,
                     "rank": rng.integers(0, 3, m).astype(np.int32), "neighbour_split": ["train"] * m,
                     "neighbour_id": [f"n{i}" for i in range(m)], "neighbour_index": np.arange(m),
                     "similarity": sim, "verified": ver, "exact": np.zeros(m, bool)})
    score, rank = nb["score"], nb["rank"]
    want = [min((r for r in range(m) if q[r] == i), key=lambda r: (np.isnan(score[r]), -score[r], rank[r], r))
            for i in sorted(set(q.tolist()))]
    assert nb.top1_rows().tolist() == want
    assert nb.top1()["neighbour_index"].tolist() == want


def test_atomic_json_and_append(tmp_path):
    p = tmp_path / "a" / "b.json"
    write_json(p, {"x": np.float32(1.5), "n": np.int64(3)})
    assert json.loads(p.read_text()) == {"x": 1.5, "n": 3}
    assert not [f for f in p.parent.iterdir() if f.name.endswith(".tmp")]
    log = tmp_path / "labels.jsonl"
    append_jsonl(log, {"a": 1})
    append_jsonl(log, {"a": 2})
    assert [json.loads(x)["a"] for x in log.read_text().splitlines()] == [1, 2]


_long_ints = st.lists(st.integers(-(2 ** 70), 2 ** 70), min_size=60, max_size=140)
_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | _long_ints | _long_ints.map(tuple)
    | st.lists(st.integers() | st.booleans(), min_size=64, max_size=80)  # true/false stay true/false
    | st.lists(st.integers(-(2 ** 62), 2 ** 62), min_size=0, max_size=90).map(lambda v: np.array(v, np.int64))
    | st.just(f"\x00sibscan-int-run-{'0' * 16}-0"),  # looks like the placeholder
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_json_like, st.sampled_from([None, 1, 2, 4, "\t"]))
def test_dumps_json_writes_what_json_dumps_writes(obj, indent):
    """Long int lists are joined in one piece (issue 31); the text must stay json.dumps's, byte for byte."""
    obj = {"x": obj}
    want = json.dumps(obj, indent=indent, default=_json_default, ensure_ascii=False, allow_nan=False)
    assert dumps_json(obj, indent=indent) == want


def test_device_policy():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda")
    with pytest.raises(SibscanError, match="unknown device 'tpu'; available: auto, cpu, cuda"):
        resolve_device("tpu")


def test_public_api_names_resolve_to_callables_not_submodules():
    import types

    for name in sibscan.__all__:
        if name == "__version__":
            continue
        assert not isinstance(getattr(sibscan, name), types.ModuleType), name


def test_neighbours_csv_parses_back_with_the_csv_module():
    import csv
    import io

    nb = Neighbours({
        "query_split": ["test", "test"], "query_id": ['a,"1"', "b\nc"], "query_index": [0, 1], "rank": [0, 0],
        "neighbour_split": ["train", "train"], "neighbour_id": ["x", "y"], "neighbour_index": [3, 4],
        "similarity": [0.5, 0.25], "verified": [np.nan, 0.75], "exact": [True, False],
        "detail": ["flipped, shifted 2 px", ""],
    })
    rows = list(csv.reader(io.StringIO(nb.to_csv())))
    assert rows[0][:3] == ["query_split", "query_id", "query_index"]
    assert rows[1][1] == 'a,"1"' and rows[2][1] == "b\nc"
    header = rows[0]
    assert rows[1][header.index("verified")] == "" and rows[2][header.index("verified")] == "0.750000"
    assert rows[1][header.index("exact")] == "1" and rows[1][header.index("detail")] == "flipped, shifted 2 px"
    assert rows[2][header.index("score")] == "0.750000" and rows[1][header.index("score")] == "0.500000"


def test_registry_warns_when_a_name_is_registered_again():
    from sibscan.registry import Registry

    reg = Registry("widget", builtin="sibscan.errors")

    class First:
        name, modality = "w", "table"

    class Second:
        name, modality = "w", "table"

    reg.register(First)
    reg.register(First)  # the same class again (a re-imported module) is not a clash
    with pytest.warns(UserWarning, match=r"widget 'w' registered again: .*Second replaces .*First"):
        reg.register(Second)
    assert reg.get("w") is Second and reg.list("table") == [Second] and reg.list("text") == []
    with pytest.raises(SibscanError, match="unknown widget 'x'; available: w"):
        reg.get("x")


def test_items_coerce_one_rule_for_texts_arrays_and_items():
    texts = Items.coerce(["a b", "c"], "test")
    assert texts.modality == "text" and texts.ids.tolist() == ["0", "1"] and texts.texts == ["a b", "c"]
    assert Items.coerce(texts, "test") is texts
    assert Items.coerce(np.arange(3), "train").values.shape == (3, 1)
    series = Items.coerce(np.zeros((4, 2, 5), np.float32), "train")  # multivariate: flattened per item
    assert series.modality == "table" and series.values.shape == (4, 10) and series.values.dtype == np.float64
    with pytest.raises(SibscanError, match=r"train: expected Items, a list of strings or a numeric array"):
        Items.coerce([["a", 1]], "train")


def test_as_items_loads_a_path(tmp_path):
    from sibscan.loaders import as_items

    (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4\n")
    items = as_items(tmp_path / "t.csv", "test")
    assert items.modality == "table" and items.values.tolist() == [[1, 2], [3, 4]] and items.split == "test"


def test_verification_reranks_and_keeps_the_embedding_rank():
    from sibscan.stages.candidates import verify_neighbours
    from sibscan.verify import VerifyResult

    class Stub:  # a verifier that prefers the embedding's second candidate
        def verify(self, q, qi, d, di):
            return VerifyResult(scores=np.where(np.asarray(di) == 1, 0.9, 0.4).astype(np.float32),
                                details=["d"] * len(qi))

    nb = Neighbours({
        "query_split": ["test"] * 2, "query_id": ["a", "a"], "query_index": [0, 0], "rank": [0, 1],
        "neighbour_split": ["train"] * 2, "neighbour_id": ["x", "y"], "neighbour_index": [0, 1],
        "similarity": [0.9, 0.8], "exact": [False, False],
    })
    assert list(nb["embedding_rank"]) == [0, 1]  # unverified: the search's rank
    out = verify_neighbours(nb, Stub(), {"test": None, "train": None})
    assert list(out["neighbour_id"]) == ["y", "x"]
    assert list(out["rank"]) == [0, 1] and list(out["embedding_rank"]) == [1, 0]
    assert "embedding_rank" in out.to_csv().splitlines()[0].split(",")


def test_ray_session_names_an_unreachable_cluster(monkeypatch):
    """The one place Ray is started (sibscan.raystart) turns a cluster it cannot reach into one line."""
    import types

    import sibscan.raystart as raystart
    from sibscan.errors import SibscanError

    def refuse(**kwargs):
        raise ConnectionError("no GCS at 10.0.0.9:6379")

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=refuse)
    monkeypatch.setattr(raystart, "require", lambda *a: fake)
    with pytest.raises(SibscanError, match=r"cannot reach the Ray cluster at '10.0.0.9:6379' \(no GCS.*ray status"):
        raystart.ray_session("10.0.0.9:6379")
    started = types.SimpleNamespace(is_initialized=lambda: True, init=refuse)
    monkeypatch.setattr(raystart, "require", lambda *a: started)
    assert raystart.ray_session("10.0.0.9:6379") is started  # a running session is joined, not restarted


def test_ray_session_names_an_address_that_is_none(tmp_path):
    """``--address x`` reached the user as Ray's own traceback (ValueError: Invalid address format: x); it
    is one line naming the option and the forms an address takes, from the scan's command line too."""
    pytest.importorskip("ray")
    import sibscan.raystart as raystart
    from sibscan.errors import SibscanError

    with pytest.raises(SibscanError, match=r"--address 'x' is not a Ray address .*HOST:PORT"):
        raystart.ray_session("x")


@pytest.mark.slow  # a fresh process importing Ray (default tier under 3 minutes on a cold clone)
def test_scan_with_an_address_that_is_none_is_one_line(tmp_path):
    pytest.importorskip("ray")
    train, test = tmp_path / "a.csv", tmp_path / "b.csv"
    for path in (train, test):
        path.write_text("f1,f2,f3\n" + "\n".join(f"{i},{i * 2},{i % 3}" for i in range(12)) + "\n")
    r = subprocess.run([sys.executable, "-m", "sibscan", "scan", str(train), str(test), "--out", str(tmp_path / "s"),
                        "--engine", "ray", "--address", "x"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "--address 'x' is not a Ray address" in r.stderr
