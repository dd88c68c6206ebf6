"""The Python API on data where users keep it: a scan from a DataFrame, an in-memory Hugging Face
Dataset, a list of PIL images, a torch Dataset or precomputed embeddings gives the same pairs as the
same data on disk; the Scan object's contract (to_pandas columns, rate, flagged, calibrate)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from planted_scan import planted_images

import sibscan
from sibscan.store.scandir import ScanDir

FAST = dict(baseline_pairs=400, verified_baseline_pairs=150, progress=False)


def _tt(path):
    """The test → train rows of a scan's neighbours table, as comparable tuples."""
    nb = ScanDir(path).neighbours().direction("test", "train")
    return sorted(zip(nb["query_index"].tolist(), nb["rank"].tolist(), nb["neighbour_index"].tolist(),
                      nb["similarity"].tolist(), nb["score"].tolist(), nb["exact"].tolist()))


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """30 train random walks; test: 4 exact copies, 3 rescaled noisy copies, 5 fresh; written as CSV too."""
    d = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(0)
    train = rng.normal(size=(30, 16)).cumsum(axis=1)
    test = np.vstack([train[:4], train[4:7] * 2 + 1 + rng.normal(scale=0.02, size=(3, 16)),
                      rng.normal(size=(5, 16)).cumsum(axis=1)])
    y_train = np.arange(30) % 3
    y_test = np.r_[y_train[:7], np.arange(5) % 3]
    y_test[1] = 2  # test 1 is an exact copy of train 1 (label 1) with another label
    for name, x, y in (("train", train, y_train), ("test", test, y_test)):
        lines = [",".join([*(f"f{i}" for i in range(16)), "label"])]
        lines += [",".join([*(repr(float(v)) for v in row), str(lab)]) for row, lab in zip(x, y)]
        (d / f"{name}.csv").write_text("\n".join(lines) + "\n")
    return d, train, test, y_train, y_test


def test_a_dataframe_gives_the_pairs_of_the_same_csv_and_the_scan_contract(tables, tmp_path):
    pd = pytest.importorskip("pandas")
    d, train, test, y_train, y_test = tables
    cols = [f"f{i}" for i in range(16)]
    disk = sibscan.scan(str(d / "train.csv"), str(d / "test.csv"), out=tmp_path / "disk", cutoff=0.99, **FAST)
    mem = sibscan.scan(pd.DataFrame(train, columns=cols).assign(label=y_train),
                       pd.DataFrame(test, columns=cols).assign(label=y_test), out=tmp_path / "mem", cutoff=0.99, **FAST)
    assert _tt(mem.path) == _tt(disk.path) and len(_tt(mem.path)) == 12 * 10
    assert ScanDir(mem.path).items("test").labels.tolist() == [str(v) for v in y_test]
    # the run record hashes the files a scan read; in-memory data is named by the dataset fingerprint
    assert [i["role"] for i in disk.manifest["run"]["inputs"]] == ["train", "test"]
    assert mem.manifest["run"]["inputs"] == [] and mem.manifest["dataset_fingerprint"] == disk.manifest["dataset_fingerprint"]

    df = mem.to_pandas()
    assert len(df) == 12 and list(df.columns[:7]) == ["test_id", "train_id", "similarity", "score", "exact", "sibling",
                                                      "label_conflict"]
    assert df["exact"].tolist() == [True] * 4 + [False] * 8 and df["train_id"][:7].tolist() == [str(i) for i in range(7)]
    assert df["sibling"].dtype.name == "boolean" and df["sibling"][:7].all() and not df["sibling"][7:].any()
    assert df["label_conflict"].tolist() == [False, True, False, False, False, False, False] + [False] * 5
    assert mem.pairs[1]["label_conflict"] is True and mem.pairs[1]["why"].startswith("exact copy")
    rep = mem.report()
    flagged = rep["flagged"]  # the same siblings as the rate counts: exact twins first, then by score
    assert sorted(f["test_id"] for f in flagged) == [str(i) for i in range(7)] and all(f["exact"] for f in flagged[:4])
    assert [f["score"] for f in flagged[4:]] == sorted([f["score"] for f in flagged[4:]], reverse=True)
    assert rep["sibling_rate"]["test_to_train"]["any"]["count"] == 7 == int(df["sibling"].sum())
    # a hand-given cutoff, no hand labels: the share flagged, and no interval it cannot back
    assert {k: mem.rate[k] for k in ("state", "estimate", "lo", "hi", "level", "n_labels", "cutoff", "definition")} == {
        "state": "baseline_only", "estimate": 7 / 12, "lo": None, "hi": None, "level": 0.95, "n_labels": 0,
        "cutoff": 0.99, "definition": None}
    assert mem.rate == rep["headline"]
    written = mem.write_reports()
    on_disk = json.loads(written["json"].read_text())
    assert on_disk["flagged"] == rep["flagged"] and written["csv"].read_text().count("\n") == 8

    # without a cutoff a near copy is not assessed (NA), never "not a sibling"
    bare = sibscan.Scan(disk.path).to_pandas()
    assert bare["sibling"].isna().sum() == 0  # disk scan had a cutoff too: all assessed
    none = sibscan.scan(str(d / "train.csv"), str(d / "test.csv"), out=tmp_path / "none", **FAST)
    sib = none.to_pandas()["sibling"]
    assert sib[:4].tolist() == [True] * 4 and sib[4:].isna().all()
    assert none.rate["state"] == "not_assessed" and none.rate["estimate"] is None


def test_rate_is_the_reports_headline_read_from_the_verdict_without_a_report(tables, tmp_path, monkeypatch):
    """Scan.rate is the headline report.json holds, read from the scan's Verdict: no report is built for it
    (before, reading the rate built the whole report); once a report is kept, it is that very object."""
    import sibscan.report as report_mod
    import sibscan.report.compute as compute

    d = tables[0]
    s = sibscan.scan(str(d / "train.csv"), str(d / "test.csv"), out=tmp_path / "s", verify=False, cutoff=0.9, **FAST)

    def refuse(*a, **k):
        raise AssertionError("Scan.rate built a report")

    real = compute.build_report
    monkeypatch.setattr(report_mod, "build_report", refuse)
    monkeypatch.setattr(compute, "build_report", refuse)
    rate = s.rate
    monkeypatch.setattr(report_mod, "build_report", real)
    assert rate == s.report()["headline"] and rate["state"] == "baseline_only"
    assert s.rate is s.report()["headline"]


def test_precomputed_embeddings_give_the_pairs_of_the_encoder_on_disk(tables, tmp_path):
    pd = pytest.importorskip("pandas")
    d, train, test, y_train, y_test = tables
    enc = sibscan.get_encoder("znorm", dim=16)
    disk = sibscan.scan(str(d / "train.csv"), str(d / "test.csv"), out=tmp_path / "disk", **FAST)
    cols = [f"f{i}" for i in range(16)]
    own = sibscan.scan(pd.DataFrame(train, columns=cols).assign(label=y_train),
                       pd.DataFrame(test, columns=cols).assign(label=y_test), out=tmp_path / "own",
                       train_features=enc.encode(train), test_features=enc.encode(test),
                       features_id=enc.identity, **FAST)
    assert own.manifest["encoder"] == {"name": "precomputed", "identity": enc.identity, "dim": 16}
    a, b = _tt(disk.path), _tt(own.path)
    # same neighbours and verified scores; the similarities differ only by the cache's float16 storage
    assert [(q, r, n, e) for q, r, n, _, _, e in a] == [(q, r, n, e) for q, r, n, _, _, e in b]
    np.testing.assert_allclose([x[3] for x in a], [x[3] for x in b], atol=2e-3)
    np.testing.assert_allclose([x[4] for x in a], [x[4] for x in b], atol=2e-3)
    # the vectors alone: items are the vectors, exact twins are equal vectors
    alone = sibscan.scan(train_features=enc.encode(train), test_features=enc.encode(test), features_id=enc.identity,
                         out=tmp_path / "alone", **FAST)
    assert alone.to_pandas()["exact"].sum() == 4 and alone.manifest["verifier"] is None
    with pytest.raises(sibscan.SibscanError, match="features_id|--features-id"):
        sibscan.scan(train, test, train_features=train, test_features=test, out=tmp_path / "x", **FAST)
    with pytest.raises(sibscan.InputError, match="test_features has 3 rows but the test split has 12"):
        sibscan.scan(train, test, train_features=train, test_features=test[:3], features_id="m",
                     out=tmp_path / "y", **FAST)


def test_pil_images_an_hf_dataset_and_a_torch_dataset_give_the_pairs_of_the_same_folder(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(3)
    train, test = planted_images(rng)
    for name, arrays in (("train", train), ("test", test)):
        (tmp_path / name).mkdir()
        for i, a in enumerate(arrays):
            Image.fromarray(a).save(tmp_path / name / f"{i:02d}.png")
    opts = dict(encoder="pixels", **FAST)
    disk = sibscan.scan(str(tmp_path / "train"), str(tmp_path / "test"), out=tmp_path / "disk", **opts)
    expected = _tt(disk.path)
    assert [r[2] for r in expected if r[1] == 0][:6] == [0, 1, 2, 3, 4, 5]  # planted pairs are each other's nearest

    pil = [[Image.fromarray(a) for a in arrays] for arrays in (train, test)]
    from_pil = sibscan.scan(pil[0], pil[1], out=tmp_path / "pil", **opts)
    assert _tt(from_pil.path) == expected

    datasets = pytest.importorskip("datasets")
    hf = [datasets.Dataset.from_dict({"image": images, "label": [i % 2 for i in range(len(images))]})
          .cast_column("image", datasets.Image()).cast_column("label", datasets.ClassLabel(names=["cat", "dog"]))
          for images in pil]
    from_hf = sibscan.scan(hf[0], hf[1], out=tmp_path / "hf", **opts)
    assert _tt(from_hf.path) == expected
    assert ScanDir(from_hf.path).items("train").labels[:3].tolist() == ["cat", "dog", "cat"]

    torch = pytest.importorskip("torch")

    class Pairs(torch.utils.data.Dataset):  # yields (image tensor as ToTensor makes it, label)
        def __init__(self, arrays):
            self.arrays = arrays

        def __len__(self):
            return len(self.arrays)

        def __getitem__(self, i):
            return torch.from_numpy(self.arrays[i]).permute(2, 0, 1).float() / 255, i % 3

    from_torch = sibscan.scan(Pairs(train), Pairs(test), out=tmp_path / "torch", **opts)
    assert _tt(from_torch.path) == expected
    stored = sorted(p.name for p in (tmp_path / "torch" / "inputs").iterdir())
    assert len(stored) == 16 + 4 + 3 and all(n.endswith(".png") for n in stored)  # copies stored once, by content



def test_from_memory_leaves_paths_to_the_file_loaders():
    from sibscan.loaders.memory import from_memory

    with pytest.raises(sibscan.SibscanError, match="train: data/train.csv is a path; read it with sibscan.load"):
        from_memory("data/train.csv", "train")
