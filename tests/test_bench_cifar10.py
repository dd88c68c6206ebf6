"""benchmarks/cifar10.py: the sampling rule, and a whole run on a tiny CIFAR-shaped folder with its own duplicate
list."""
from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import cifar10


def _index(n_train_per_class, n_test_per_class, classes=("cat", "dog")):
    index = {"train": {}, "test": {}}
    for split, n in (("train", n_train_per_class), ("test", n_test_per_class)):
        i = 0
        for r in range(n):
            for c in classes:  # classes interleaved in original index order, as in the CIFAR batches
                index[split][i] = f"{split}/{c}/{r:04d}.jpg"
                i += 1
    return index


def test_the_sample_is_evenly_spaced_per_class_and_keeps_every_listed_image():
    index = _index(8, 4)
    pairs = [(5, 9, 1)]  # test 5 (dog 0002), train 9 (dog 0004)
    keep = cifar10.sample(index, pairs, 0.25)
    for split, n in (("train", 8), ("test", 4)):
        for c in ("cat", "dog"):
            kept = [i for i in keep[split] if index[split][i].split("/")[1] == c]
            listed = {5} if (split, c) == ("test", "dog") else {9} if (split, c) == ("train", "dog") else set()
            # every 4th image of the class by original index, plus the listed one
            spaced = [i for r, i in enumerate(sorted(j for j in index[split] if index[split][j].split("/")[1] == c))
                      if r % 4 == 3]
            assert set(kept) == set(spaced) | listed, (split, c)
    assert cifar10.sample(index, pairs, 1.0) == {s: sorted(v) for s, v in index.items()}


@pytest.mark.slow  # a real scan in a subprocess (pixels encoder, imagecorr verifier): ~20 s
def test_a_run_counts_the_listed_partner_and_leaves_precision_unassessed(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="the scan verifies images with imagecorr, which runs on torch")
    from PIL import Image

    monkeypatch.setenv("SIBSCAN_BENCH_RESULTS", str(tmp_path))
    rng = np.random.default_rng(0)
    data, meta = tmp_path / "data", tmp_path / "meta"
    index = _index(6, 2)
    pictures = {}
    for split in ("train", "test"):
        for i, rel in index[split].items():
            (data / rel).parent.mkdir(parents=True, exist_ok=True)
            img = np.clip(128 + 60 * rng.normal(size=(4, 4, 3)).repeat(8, 0).repeat(8, 1), 0, 255).astype(np.uint8)
            if (split, i) == ("test", 1):
                img = np.clip(pictures[7].astype(int) + 6, 0, 255).astype(np.uint8)  # a brighter copy of train 7
            pictures[i] = img if split == "train" else None
            Image.fromarray(img).save(data / rel, quality=90)
    meta.mkdir()
    (meta / "index_map.json").write_text(json.dumps({s: {str(i): p for i, p in v.items()} for s, v in index.items()}))
    (meta / "ciFAIR_duplicates_cifar10.csv").write_text("TestID,TrainID,Distance,Judgment\n1,7,0.05,1\n")
    result = cifar10.main(["--data", str(data), "--meta", str(meta), "--work", str(tmp_path / "work"),
                           "--scan-args", "--encoder pixels --k 2", "--fraction", "0.5"])
    assert result["listed_pairs"] == 1 and result["partner_among_candidates"] == 1
    assert result["partner_found_by_view"]["pixels"] == 1
    assert result["recall_at_listed_count"]["listed_found"] == 1  # the copy is the best verified pair
    assert result["precision"].startswith("not assessed")
    assert {"encode", "search", "verify", "total"} <= set(result["timings"])
    saved = json.loads((tmp_path / "cifar10.json").read_text())
    run = saved["runs"]["f0.5"]
    assert set(saved["runs"]) == {"f0.5"} and run["n_train"] == 6  # every 2nd a class (train 7 is one of them)
    assert run["n_test"] == 3  # every 2nd a class, and the listed test 1 (the first dog, not one of them)
