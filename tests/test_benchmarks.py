"""The benchmarks: their planted sets, metrics and --quick runs, and sibscan on those planted sets.

The one test module that imports ``benchmarks`` (pyproject puts the repository root on the path):
tests that need a benchmark's planted data (the image verifier on the planted photos) live here.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

# the planted sets are made from packages of the dev extra (photos, digits, fonts) and Pillow
for _module in ("PIL.Image", "sklearn", "skimage", "scipy"):
    pytest.importorskip(_module, reason=f"{_module} is not installed (pip install -e '.[dev]')")

from benchmarks import _common, planted, quality, scan_e2e  # noqa: E402
from benchmarks.verify import pixel_embeddings, planted_photos  # noqa: E402
from sibscan.errors import SibscanError  # noqa: E402
from sibscan.items import Items  # noqa: E402
from sibscan.verify import get_verifier  # noqa: E402
from sibscan.verify.images import ImageCorrVerifier  # noqa: E402
from sibscan.encoders import get_encoder  # noqa: E402


@pytest.fixture
def bench_results(tmp_path, monkeypatch):
    """The benchmarks' results folder moved to ``tmp_path``, both ways it is found: ``_common.RESULTS`` and
    ``$SIBSCAN_BENCH_RESULTS`` (which write_results prefers, and a benchmark run in a subprocess inherits)."""
    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    monkeypatch.setenv("SIBSCAN_BENCH_RESULTS", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    return {
        "images": planted.image_set(root, n_train=40, per_transform=2, n_clean=20, seed=1),
        "text": planted.text_set(n_train=60, per_transform=2, n_clean=20, seed=1),
        "rows": planted.row_sets(n_train=60, per_transform=2, n_clean=20, seed=1, datasets=("digits",))[0],
    }


@pytest.mark.parametrize("name, encoder", [("images", "pixels"), ("text", "ngram"), ("rows", "znorm")])
def test_planted_negatives_are_hard(sets, name, encoder):
    ps = sets[name]
    enc = get_encoder(encoder, device="cpu")
    # 2,000 random pairs (the benchmarks draw 20,000) estimate the random-pair median of these sets'
    # under 2,000 distinct (test, train) pairs just as well; gathering 20,000 wide rows took ~3 s
    stats = planted.difficulty(ps, enc.encode(ps.train.content), enc.encode(ps.test.content), n_pairs=2000)
    planted.check_difficulty(stats, name)  # raises when the negatives are trivially different
    assert stats["best_negative"] > stats["random_median"]
    assert ps.hard.sum() >= 0.5 * (~ps.planted).sum()


def test_check_difficulty_refuses_trivial_negatives():
    with pytest.raises(AssertionError, match="trivially different"):
        planted.check_difficulty({"best_negative": 0.1, "random_median": 0.2}, "toy")


@pytest.mark.parametrize("name", ["images", "text", "rows"])
def test_planted_truth(sets, name):
    ps = sets[name]
    transforms = {"images": planted.IMAGE_TRANSFORMS, "text": planted.TEXT_TRANSFORMS,
                  "rows": planted.ROW_TRANSFORMS}[name]
    assert set(ps.transform[ps.planted]) == set(transforms)
    assert (ps.transform[~ps.planted] == "").all()
    assert ps.source.max() < len(ps.train) and len(ps.source) == len(ps.test)
    train_bytes = ps.content_bytes("train")
    test_bytes = ps.content_bytes("test")
    for i in np.flatnonzero(ps.transform == "exact"):
        assert test_bytes[i] == train_bytes[ps.source[i]]
    for i in np.flatnonzero(ps.planted & (ps.transform != "exact") & (ps.transform != "noise-below-rounding")):
        assert test_bytes[i] != train_bytes[ps.source[i]], ps.transform[i]
    # clean items are not copies of any train item (the pool was deduplicated)
    train_set = set(train_bytes)
    assert not any(test_bytes[i] in train_set for i in np.flatnonzero(~ps.planted))


def test_dedupe_pool_matches_greedy_reference():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(30, 8))
    x = np.concatenate([base, base[:10] + 1e-3 * rng.normal(size=(10, 8))])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    kept = planted.dedupe_pool(x, 0.99)
    ref = []
    for i in range(len(x)):
        if all(x[i] @ x[j] < 0.99 for j in ref):
            ref.append(i)
    assert kept.tolist() == ref


def test_top_k_matches_full_sort():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(50, 6)).astype(np.float32), rng.normal(size=(12, 6)).astype(np.float32)
    sims, idx = quality.top_k(b, a, 4)
    ref = np.argsort(-(b @ a.T), axis=1)[:, :4]
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_allclose(sims, np.take_along_axis(b @ a.T, ref, axis=1), rtol=1e-6)


def test_auc_and_recall_at_precision_match_brute_force():
    from sklearn.metrics import roc_auc_score

    from benchmarks import quality_metrics

    rng = np.random.default_rng(2)
    score = np.round(rng.uniform(size=80), 2)  # ties on purpose
    planted_ = rng.random(80) < 0.4
    correct = planted_ & (rng.random(80) < 0.8)
    assert quality_metrics._auc(score[planted_], score[~planted_]) == pytest.approx(roc_auc_score(planted_, score))
    best = 0.0
    for c in np.unique(score):
        flagged = score >= c
        if (flagged & correct).sum() / flagged.sum() >= 0.6:
            best = max(best, (flagged & correct).sum() / planted_.sum())
    assert quality_metrics.recall_at_precision(score, correct, planted_, 0.6) == pytest.approx(best)


def test_calibrate_puts_the_cutoff_between_separated_classes():
    rng = np.random.default_rng(3)
    same = np.r_[np.ones(30, bool), np.zeros(170, bool)]
    score = np.where(same, rng.uniform(0.9, 1.0, 200), rng.uniform(0.3, 0.8, 200))
    cal = quality.calibrate(score, np.arange(200), same, rng.uniform(0.0, 0.75, 5000), n_labels=40)
    assert 0.8 <= cal["cutoff"] <= 0.9
    assert cal["labelled"] == 40 and 0 < cal["labelled_same"] < 40


def test_detection_metrics_reweight_to_one_percent_prevalence(sets):
    ps = sets["rows"]
    flagged = ps.planted.copy()
    flagged[np.flatnonzero(~ps.planted)[:2]] = True  # two false alarms
    m = quality.detection_metrics(ps, flagged, ps.planted)
    fpr = 2 / (~ps.planted).sum()
    assert m["recall"] == 1.0 and m["fpr"] == pytest.approx(fpr)
    assert m["precision_at_1pct"] == pytest.approx(0.01 / (0.01 + 0.99 * fpr))


@pytest.mark.slow  # ~60 s: the three image verifiers on every view, the union view included
def test_quality_quick_writes_results(tmp_path, bench_results):
    quality.main(["--quick", "--no-neural", "--sets", "images,text,rows"])
    data = json.loads((tmp_path / "quality.json").read_text())["runs"]["seed0"]
    assert {"images", "text", "rows:digits-rows"} <= set(data["sets"])
    for name, s in data["sets"].items():
        assert s["difficulty"]["best_negative"] > s["difficulty"]["random_median"], name
        assert "exact hash (blake2b)" in s["fixed_defaults"]
        for enc, entry in s["encoders"].items():
            modes = [m for m in entry if m == "embedding" or m.startswith("verified")]
            # a union of views has no embedding of its own: only verified modes
            joined = enc.startswith(("union:", "cascade:"))
            assert ("embedding" in modes) != joined and "verified" in modes, (name, enc)
            for mode in modes:
                m = entry[mode]["metrics"]
                assert {"recall", "precision", "precision_at_1pct", "auc", "recall_at_p95"} <= set(m), (name, enc)
                assert m["recall"] is None or 0.0 <= m["recall"] <= 1.0
                assert 0.0 <= entry[mode]["source_in_candidates"] <= 1.0
                # a calibration that refuses gives no cutoff, as a user gets none (its figures at the cutoff: None)
                cal = entry[mode]["calibration"]
                assert cal["cutoff"] is not None or (cal["status"].startswith("no cutoff (not assessed)")
                                                     and m["recall"] is None), (name, enc, mode)
                assert set(entry[mode]["per_transform"]) == set(s["encoders"]["pixels" if joined else enc]
                                                                ["embedding"]["per_transform"])
    images = data["sets"]["images"]
    # without effnet the default encoder is pixels; the scan's extra views add windows (pixels itself once)
    assert set(images["encoders"]) >= {"pixels", "phash", "union:pixels+windows"}
    # the union of views holds at least the candidates of the encoder
    union = images["encoders"]["union:pixels+windows"]["verified:imagematch"]["source_in_candidates"]
    assert union >= images["encoders"]["pixels"]["verified:imagematch"]["source_in_candidates"]
    assert set(images["time_share"]["verifiers"]) == {"imagecorr", "imagematch", "imagefuse"}
    # the cascade verifies a subset of the union's pairs, and its share counts its windows scoring
    cascade = images["encoders"]["cascade:pixels+windows"]["verified:imagematch"]["source_in_candidates"]
    assert cascade <= union and 0 < images["cascade"]["cascade_pairs"] < images["cascade"]["union_pairs"]
    share = images["time_share_cascade"]
    assert share["candidate_pairs"] == images["cascade"]["cascade_pairs"] and share["cascade_seconds"] > 0
    assert share["verifiers"]["imagematch"]["seconds"] > share["cascade_seconds"]
    # exact copies are found by every calibrated encoder
    assert data["sets"]["text"]["encoders"]["ngram"]["embedding"]["per_transform"]["exact"]["recall"] == 1.0


@pytest.mark.slow  # ~10 s on the shared machine: planted crops, three views
def test_quality_candidates_only_per_view_and_union(tmp_path, bench_results):
    quality.main(["--quick", "--no-neural", "--sets", "crops", "--candidates-only", "--k", "4", "--k-view", "3",
                  "--name", "views"])
    cr = json.loads((tmp_path / "views.json").read_text())["runs"]["seed0"]["sets"]["crops"]["candidate_recall"]
    assert (cr["k"], cr["k_view"]) == (4, 3) and set(cr["views"]) == {"pixels", "phash", "windows"}
    views, union = cr["views"], cr["unions"]["pixels+windows"]
    assert all(0.0 <= v["all"] <= 1.0 and v["candidates_per_item"] == 4 for v in views.values())
    # the encoder's top 4 joined with windows' top 3: at least the encoder's hits, at most 7 pairs an item
    assert views["pixels"]["all"] <= union["all"] and 4 <= union["candidates_per_item"] <= 7
    assert set(union["per_transform"]) == {"crop", "zoom-out", "rotate", "colour", "crop-flip-jpeg"}


def test_results_compact_or_not_serialise_numpy_and_nan_alike(tmp_path, bench_results):
    # the compact side files once had their own json.dumps: numpy floats raised there, NaN went out as NaN
    payload = {"f": np.float32(0.5), "i": np.int64(3), "b": np.bool_(True), "nan": np.float32("nan"),
               "inf": np.float32("inf"), "a": np.arange(3, dtype=np.float32), "p": tmp_path}
    plain = _common.read_results(_common.write_results("plain", payload))
    compact = _common.read_results(_common.write_results("plain_pairs", payload, compact=True))
    drop = ("benchmark", "created")
    assert {k: v for k, v in plain.items() if k not in drop} == {k: v for k, v in compact.items() if k not in drop}
    assert {k: compact[k] for k in payload} == {"f": 0.5, "i": 3, "b": True, "nan": None, "inf": None,
                                                "a": [0.0, 1.0, 2.0], "p": str(tmp_path)}
    for compact_form in (False, True):  # a Python NaN (np.float64 is a float) is not strict JSON: refused by both
        for nan in (float("nan"), np.float64("nan")):
            with pytest.raises(ValueError, match="Out of range float"):
                _common.write_results("bad", {"x": nan}, compact=compact_form)


def test_add_next_pairs_writes_the_side_file_with_the_one_serialiser(tmp_path, bench_results):
    # add_next_pairs rewrote side files with a json.dumps of its own (bare NaN out, numpy scalars raised)
    from benchmarks.quality_pairs import add_next_pairs

    truth = {"source": [1, -1], "hard": [False, True], "featureless": [False, False], "test_ids": ["a", "b"]}
    method = {"score": [0.9, 0.2], "nb": [1, 0], "random_scores": [0.1, 0.3]}
    side = _common.write_run("old_pairs", "seed0", {"sets": {"s": {**truth, "methods": {"m": dict(method)}}}},
                             compact=True)
    rerun = _common.write_run("new_pairs", "seed0", {"sets": {"s": {**truth, "methods": {"m": {
        **method, "score2": [0.4, None], "nb2": [2, -1]}}}}}, compact=True)
    assert add_next_pairs(side, rerun) == 1
    back = _common.read_results(side)["runs"]["seed0"]["sets"]["s"]["methods"]["m"]
    assert back["score2"] == [0.4, None] and back["nb2"] == [2, -1] and back["score"] == [0.9, 0.2]
    # a re-run holding a bare NaN (json's default writes it) is refused at the write, as write_results refuses
    import gzip
    import json
    bad = tmp_path / "nan_pairs.json.gz"
    bad.write_bytes(gzip.compress(json.dumps({"runs": {"seed0": {"sets": {"s": {**truth, "methods": {"m": {
        **method, "score2": [float("nan"), None], "nb2": [2, -1]}}}}}}}).encode()))
    before = side.read_bytes()
    with pytest.raises(ValueError, match="Out of range float"):
        add_next_pairs(side, bad)
    assert side.read_bytes() == before  # nothing written


def test_windows_speed_quick_writes_results(tmp_path, bench_results):
    import benchmarks.windows_speed as bench

    payload = bench.main(["--quick", "--sizes", "6x20,8x30", "--pairs-per-item", "3"])
    assert [(r["n_test"], r["n_train"], r["cascade_pairs"]) for r in payload["rows"]] == [(6, 20, 18), (8, 30, 24)]
    assert all(r["view_seconds"] > 0 and r["cascade_seconds"] > 0 for r in payload["rows"])
    assert payload["effnet_images_per_s"] is None  # --quick embeds nothing
    assert (tmp_path / "windows_speed_quick.json").exists()


@pytest.mark.slow  # ~20 s: two whole image scans (effnet, both verifiers) of 60 images
def test_verify_share_quick_writes_results(tmp_path, bench_results):
    import benchmarks.verify_share as bench

    payload = bench.main(["--quick", "--configs", "default,cascade"])["default+cascade_60"]
    assert json.loads((tmp_path / "verify_share_quick.json").read_text())["runs"]["default+cascade_60"]["complete"]
    rows = {r["config"]: r for r in payload["results"]}
    assert set(rows) == {"default", "cascade"} and payload["complete"]
    for r in rows.values():
        assert (r["n_train"], r["n_test"]) == (50, 10)
        assert r["timings"]["verify"] > 0 and r["timings"]["encode"] > 0 and r["pairs_verified"]["baseline"] > 0
        assert 0 < r["share_verify_of_verify_and_encode"] < 1
    # the cascade verifies fewer of the candidates than the default does (every one)
    assert rows["cascade"]["pairs_verified"]["test>train"] < rows["default"]["pairs_verified"]["test>train"]
    assert rows["cascade"]["verifier"].startswith("imagematch") and rows["default"]["verifier"].startswith("imagecorr")
    # each pair goes to the verifier once: a train→test row of a test→train pair is not verified again
    calls, rows_ = rows["default"]["pairs_to_verifier"], rows["default"]["pairs_verified"]
    # NaN rows: unscored
    assert calls["test>train"] >= rows_["test>train"] and calls["train>test"] < rows_["train>test"]
    assert (tmp_path / "verify_share_quick.json").exists()


def test_verify_share_options_are_scan_options(tmp_path, capsys, bench_results):
    import benchmarks.verify_share as bench

    assert bench._option("k=5") == ("k", 5) and bench._option("verifier=imagefuse") == ("verifier", "imagefuse")
    assert set(bench.OWNED) >= {k for c in bench.CONFIGS.values() for k in c}  # what defines a configuration
    for bad, says in (("kk=3", "unknown scan option(s) kk; valid: "), ("k", "--option takes KEY=VALUE"),
                      ("out=/tmp/x", "--option out: set by the benchmark itself"),
                      ("verifier=imagefuse", "--option verifier: set by the benchmark itself"),
                      ("cascade=true", "--option cascade: set by the benchmark"),
                      ("device=cuda", "--option device: set by the benchmark"),
                      ("verify=false", "--option verify: set by the benchmark"),
                      ("index=idx", "--option index: set by the benchmark"),
                      ("train_features=a.npy", "--option train_features: set by the benchmark"),
                      ("test_features=b.npy", "--option test_features: set by the benchmark"),
                      ("features_id=x", "--option features_id: set by the benchmark"),
                      ("k=null", "--option k: give a value"), ("k=NaN", "--option k: give a value"),
                      ("encoder=", "--option encoder: give a value"), ('encoder=""', "--option encoder: give a value"),
                      ("encoder=  ", "--option encoder: give a value"),
                      ("directions=[]", "--option directions: give a value"),
                      ("extra_views={}", "--option extra_views: give a value")):
        with pytest.raises(SystemExit):  # refused before any image is written or scanned
            bench.main(["--quick", "--option", bad])
        assert says in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_verify_share_sizes_are_runs_of_one_file(tmp_path, capsys, monkeypatch, bench_results):
    # issue 31: each size was its own file (--images 14400 --name verify_share_s9_14400); now a run each
    import benchmarks.verify_share as bench

    with pytest.raises(SystemExit):
        bench.main(["--quick", "--images", "24,48", "--key", "x"])
    assert "--key names one run; --images gives 2 sizes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--images", "24,8"])
    assert "--images 8: give at least 12 images" in capsys.readouterr().err
    _common.write_results("verify_share_quick", {"results": []})  # a file of another form: refused before any scan
    with pytest.raises(SystemExit, match="verify_share_quick.json: not a file of runs by key"):
        bench.main(["--quick"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verify_share_quick.json"]
    sizes = []  # the scans themselves: test_verify_share_quick_writes_results
    monkeypatch.setattr(bench, "_run_size", lambda args, n, wanted, extra, name, key:
                        sizes.append((n, key)) or {"images": n})
    (tmp_path / "verify_share_quick.json").unlink()
    out = bench.main(["--quick", "--configs", "default", "--images", "24,48"])
    assert sizes == [(24, "default_24"), (48, "default_48")] and list(out) == ["default_24", "default_48"]
    runs = json.loads((tmp_path / "verify_share_quick.json").read_text())["runs"]
    assert {k: r["images"] for k, r in runs.items()} == {"default_24": 24, "default_48": 48}


def test_verify_share_refuses_cuda_without_a_gpu(tmp_path, capsys, bench_results):
    import benchmarks.verify_share as bench
    from sibscan.device import cuda_available

    if cuda_available():
        pytest.skip("a CUDA GPU is visible: --device cuda runs here")
    with pytest.raises(SystemExit):  # the scan's own refusal, before any image is written
        bench.main(["--quick", "--device", "cuda"])
    assert "--device 'cuda' was asked for but" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.slow  # a whole image scan of 60 images, then its pairs verified three more times
def test_pair_once_quick_counts_what_the_scan_hands_the_verifier(tmp_path, bench_results):
    import benchmarks.pair_once as bench

    d = bench.main(["--quick", "--repeats", "1"])
    cross, test = d["train_test_rows_that_are_test_train_rows"], d["test_pairs_in_both_orders"]
    assert cross > 0 and d["pairs_once"] == d["pairs_per_row"] - cross - test
    assert sum(d["scan_pairs_verified"].values()) == d["pairs_once"]  # the scan verified each pair once too
    assert d["orientation_gap"]["cross"]["pairs"] == cross and d["orientation_gap"]["cross"]["max"] > 0
    # one file, a run per verifier and size (issue 31: --verifier imagefuse had a --name of its own)
    assert json.loads((tmp_path / "pair_once_quick.json").read_text())["runs"]["imagecorr_60"]["pairs_once"] == \
        d["pairs_once"]


def test_photo_halves_are_disjoint_cover_every_photo_and_each_has_textured_and_featureless_cells(tmp_path):
    from benchmarks import planted_crops as pc

    fit, held = (set(pc.PHOTO_SPLIT[h]) for h in ("fit", "heldout"))
    assert not fit & held
    assert {n for n, _ in pc._all_photos()} <= fit | held  # a new shipped photo must be put in a half
    ps = pc.small_set(tmp_path, n_train=40, per_transform=2, n_clean=20, seed=0, photos="heldout")
    assert set(ps.notes["photos"]) <= held and len(ps.notes["photos"]) > 1
    assert ps.notes["train"]["featureless"] > 0 and ps.notes["clean"]["featureless"] > 0
    assert ps.notes["clean"]["textured"] > 0
    names = {n for n in ps.test.labels.tolist() + ps.train.labels.tolist() if n.startswith("photo:")}
    assert names and {n[6:] for n in names} <= held
    # the verifier's reported transforms read back as the planted ones for most planted pairs
    from sibscan.verify import get_verifier

    found = pc.alignment_accuracy(ps, get_verifier("imagefuse", device="cpu", progress=False))
    assert found["pairs"] == int(ps.planted.sum()) and set(found["per_transform"]) == set(ps.transform[ps.planted])
    assert found["accuracy"] >= 0.5, found
    with pytest.raises(ValueError, match="unknown photo half"):
        pc.photo_names("train")
    fitted = json.loads((_common.RESULTS / "imagefuse_fit.json").read_text())["photos"]
    assert fitted and set(fitted) <= fit  # imagefuse's coefficients saw none of the held-out photographs


def test_alignment_matches_reads_the_planted_and_the_found_transform():
    from benchmarks.planted_crops import alignment_matches

    assert alignment_matches("crop", "crop 0.62", "crop 0.6 (test inside train) at x 3 y 9")
    assert not alignment_matches("crop", "crop 0.62", "crop 0.5 (train inside test) at x 3 y 9")  # other way round
    assert not alignment_matches("crop", "crop 0.62", "crop 0.6 (test inside train) at x 3 y 9, rotated +4 deg")
    assert not alignment_matches("crop", "crop 0.52", "crop 0.7 (test inside train) at x 3 y 9")  # scale off by 0.18
    assert alignment_matches("zoom-out", "zoom out 0.71", "crop 0.7 (train inside test) at x 0 y 1")
    assert alignment_matches("colour", "crop 0.93, colour", "aligned")
    flip = "crop 0.66, flip, jpeg 36"
    assert alignment_matches("crop-flip-jpeg", flip, "crop 0.7 (test inside train) at x 1 y 1, flipped")
    assert not alignment_matches("crop-flip-jpeg", flip, "crop 0.7 (test inside train) at x 1 y 1")
    # the search rotates the test item back: the opposite sign undoes the planted rotation
    rot, found = "rotate +8.6 deg, crop 0.85", "crop 0.8 (test inside train) at x 5 y 5, rotated {} deg"
    assert alignment_matches("rotate", rot, found.format("-8"))
    assert not alignment_matches("rotate", rot, found.format("+8"))


def test_quality_rejects_unknown_set(capsys):
    with pytest.raises(SystemExit):
        quality.main(["--quick", "--sets", "imags"])
    assert "unknown set(s) imags" in capsys.readouterr().err


def test_write_run_keeps_the_other_runs_of_the_file(tmp_path, bench_results):
    # issue 31: each seed or size of one benchmark went to a file of its own (NAME_seed2.json, ...)
    _common.write_run("b", "seed0", {"x": 1})
    _common.write_run("b", "seed2", {"x": 2}, shared="yes")
    path = _common.write_run("b", "seed0", {"x": 3}, shared="yes")  # a run again replaces only its own key
    data = json.loads(path.read_text())
    assert path.name == "b.json" and {k: r["x"] for k, r in data["runs"].items()} == {"seed0": 3, "seed2": 2}
    assert data["shared"] == "yes" and all({"created", "machine"} <= set(r) for r in data["runs"].values())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]
    _common.write_results("single", {"sets": {}})  # a file of another form is not overwritten
    with pytest.raises(SystemExit, match="single.json: not a file of runs by key"):
        _common.write_run("single", "seed0", {"x": 1})


def test_quality_seeds_go_to_one_file_and_replay_each_run(tmp_path, bench_results, capsys):
    # issue 31: a run per seed wrote NAME_seedN.json + NAME_seedN_pairs.json.gz; now one file and one side file
    quality.main(["--quick", "--no-neural", "--sets", "rows", "--seed", "0,1", "--name", "t"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json", "t_pairs.json.gz"]
    runs = json.loads((tmp_path / "t.json").read_text())["runs"]
    side = _common.read_results(tmp_path / "t_pairs.json.gz")["runs"]
    assert list(runs) == list(side) == ["seed0", "seed1"] and [runs[k]["seed"] for k in runs] == [0, 1]
    assert [side[k]["seed"] for k in side] == [0, 1] and all(r["photos"] == "all" for r in runs.values())
    # the calibration replayed from the side file, each run against its own run of t.json: the cutoffs it recorded
    out = quality.main(["--calibration-only", str(tmp_path / "t_pairs.json.gz")])
    assert list(out) == ["seed0", "seed1"]
    for key, o in out.items():
        assert o["seed"] == runs[key]["seed"]
        for set_name, methods in o["sets"].items():
            for method, r in methods.items():
                enc, mode = method.split("|", 1)
                recorded = runs[key]["sets"][set_name]["encoders"][enc][mode]["calibration"]["cutoff"]
                assert r["before"]["cutoff"] == recorded and r["now"]["calibration"]["cutoff"] == pytest.approx(
                    recorded), (key, set_name, method)
    recal = json.loads((tmp_path / "t_recalibrated.json").read_text())["runs"]
    assert list(recal) == ["seed0", "seed1"]
    # a run of the side file that t.json lacks is refused, by key
    data = json.loads((tmp_path / "t.json").read_text())
    del data["runs"]["seed1"]
    (tmp_path / "t.json").write_text(json.dumps(data))
    with pytest.raises(SystemExit, match="t.json holds no run seed1 of t_pairs.json.gz"):
        quality.main(["--calibration-only", str(tmp_path / "t_pairs.json.gz")])


def test_quality_refuses_bad_seed_and_photo_lists_and_a_file_of_another_form(tmp_path, bench_results, capsys):
    for args, says in ((["--seed", "1,x"], "'1,x': give a comma list of int values"),
                       (["--seed", "2,2"], "'2,2' names a value twice"),
                       (["--photos", "all,half"], "unknown half; available: all, fit, heldout")):
        with pytest.raises(SystemExit):
            quality.main(["--quick", "--sets", "rows", *args])
        assert says in capsys.readouterr().err
    _common.write_results("old", {"sets": {}})
    with pytest.raises(SystemExit, match="old.json: not a file of runs by key"):  # before any set is made
        quality.main(["--quick", "--no-neural", "--sets", "rows", "--name", "old"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


@pytest.mark.slow  # seconds (default tier under 3 minutes on a cold clone)
def test_scan_e2e_quick_writes_results(tmp_path, bench_results):
    scan_e2e.main(["--quick", "--cases", "table,text"])
    data = json.loads((tmp_path / "scan_e2e.json").read_text())
    cases = {c["modality"]: c for c in data["cases"]}
    assert data["dont_write_bytecode"] == sys.dont_write_bytecode
    assert set(cases) == {"table", "text"}
    for c in cases.values():
        assert c["items_per_s"] > 0 and c["bare_seconds"] > 0
        assert {"load", "fingerprint", "models", "encode", "search", "baseline"} <= set(c["timings"])
    # the planted exact copies (a third of the planted table rows) are found exactly
    assert cases["table"]["exact_test_twins"] >= cases["table"]["planted"] // 3



def test_image32_case_is_cifar_sized_jpegs_with_planted_copies(tmp_path):
    case = scan_e2e.write_image32_case(tmp_path, 36, seed=2)
    from PIL import Image

    train, test = sorted((tmp_path / "train").iterdir()), sorted((tmp_path / "test").iterdir())
    assert (len(train), len(test)) == (case["n_train"], case["n_test"]) == (30, 6)
    assert case["planted"] == min(len(planted.IMAGE_TRANSFORMS), 6)  # one of each transform, capped by the test split
    for p in train:
        with Image.open(p) as im:
            assert (im.format, im.size) == ("JPEG", (32, 32))
    # the first planted test item is an "exact" copy: the same pixels saved the same way, so the same bytes
    assert any(test[0].read_bytes() == p.read_bytes() for p in train)
    # every train item is a fresh draw: no two train files are the same
    assert len({p.read_bytes() for p in train}) == len(train)


def test_search_benchmark_quick_pairs_auto_with_raw_faiss(tmp_path, bench_results):
    pytest.importorskip("faiss", reason="the pairing is with raw faiss (pip install 'sibscan[faiss]')")
    from benchmarks import search as search_bench

    search_bench.main(["--quick", "--repeat", "3", "--others-repeat", "0"])
    data = json.loads((tmp_path / "search_quick.json").read_text())
    assert len(data["auto_vs_raw_faiss"]) == 4  # two shapes x top-1, top-5
    for shape in data["shapes"]:
        # the quick shapes are below searchpick's threshold: auto takes faiss without measuring
        assert shape["auto_backend"] == {"top1": "faiss", "top5": "faiss"} and shape["auto_pick"] is None
        for entry in shape["auto_vs_raw_faiss"].values():
            ratios = np.array(entry["ratios"])
            assert len(ratios) == len(entry["load_average_1min_per_pair"]) == 3
            np.testing.assert_allclose(ratios, np.array(entry["raw_seconds"]) / entry["auto_seconds"], rtol=0.05)
            assert entry["ratio_median"] == pytest.approx(np.median(ratios), rel=1e-3)
            # sibscan's own work around the kernel is measured, and is a small part of the kernel's time
            assert 0 < entry["auto_own_seconds"] and entry["auto_own_share_of_raw"] < 1

# -- image verifier on real photos ----------------------------------------------------------------
@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    pytest.importorskip("torch", reason="the image verifier runs on torch (pip install 'sibscan[torch]')")
    data = planted_photos(tmp_path_factory.mktemp("photos"),
                          photos=("astronaut", "chelsea", "coffee", "camera", "rocket", "immunohistochemistry"))
    train = Items("train", "image", ids=data["train_ids"], paths=data["train_paths"])
    test = Items("test", "image", ids=data["test_ids"], paths=data["test_paths"])
    return data, train, test


def test_imagecorr_beats_embedding_and_every_hard_negative(photos):
    data, train, test = photos
    qi, di = (a.ravel() for a in np.meshgrid(np.arange(len(test)), np.arange(len(train)), indexing="ij"))
    res = get_verifier("imagecorr", device="cpu", progress=False).verify(test, qi, train, di)
    assert res.scores.shape == (len(qi),) and len(res.details) == len(qi)
    truth = np.char.add(np.array(data["test_photo"])[qi], "-A") == np.array(data["train_ids"])[di]
    cosine = (pixel_embeddings(data["test_paths"])[qi] * pixel_embeddings(data["train_paths"])[di]).sum(1)
    pos, neg = res.scores[truth], res.scores[~truth]
    kinds = np.array(data["test_transform"])[qi]
    geometric = truth & np.isin(kinds, ["shift", "flip", "crop"])
    # geometric changes break the plain pixel cosine; the verifier sees through them (a crop between
    # the tried scales misaligns the fine detail, which costs the detail band most: 0.88-0.93 here)
    assert (res.scores[geometric] > cosine[geometric] + 0.01).all()
    # photometric changes (colour, JPEG q20) the 32 px cosine already tolerates (JPEG noise costs
    # the 64 px correlation up to ~0.03, its detail band up to ~0.05); they stay far above every negative
    assert (res.scores[truth & ~geometric] > 0.94).all()
    assert pos.min() > neg.max() + 0.25, (pos.min(), neg.max())
    # the hard negatives include the other half of the same photo
    same_photo = ~truth & (np.array(data["test_photo"])[qi] == np.array([i.rsplit("-", 1)[0] for i in data["train_ids"]])[di])
    assert same_photo.sum() == len(test)
    details = np.array(res.details, dtype=object)
    assert all("flipped" in s for s in details[truth & (kinds == "flip")])
    assert all("crop" in s for s in details[truth & (kinds == "crop")])
    assert all("shifted" in s for s in details[truth & (kinds == "shift")])


def test_imagecorr_decodes_only_items_in_pairs_once(photos, monkeypatch):
    _, train, test = photos
    verifier = ImageCorrVerifier(device="cpu", progress=False)
    calls = []
    real = verifier.load_array
    monkeypatch.setattr(verifier, "load_array", lambda p: calls.append(p) or real(p))
    qi = np.array([0, 0, 0, 1, 1, 1, 0])
    di = np.array([2, 3, 4, 2, 3, 4, 2])
    res = verifier.verify(test, qi, train, di)
    assert len(res.scores) == 7
    assert sorted(calls) == sorted([test.paths[0], test.paths[1]] + [train.paths[i] for i in (2, 3, 4)])


def test_imagecorr_threads_change_no_score_and_are_restored(photos):
    import torch

    _, train, test = photos
    qi, di = np.array([0, 1, 2, 3, 0, 1]), np.array([0, 1, 2, 3, 4, 5])
    before = torch.get_num_threads()
    one = ImageCorrVerifier(device="cpu", progress=False).verify(test, qi, train, di)  # threads=1, the default
    two = ImageCorrVerifier(device="cpu", progress=False, threads=2).verify(test, qi, train, di)
    assert torch.get_num_threads() == before
    np.testing.assert_allclose(one.scores, two.scores, atol=1e-6)
    assert ImageCorrVerifier(device="cpu", threads=2).identity == ImageCorrVerifier(device="cpu").identity  # speed only
    with pytest.raises(SibscanError, match="threads must be at least 1"):
        ImageCorrVerifier(device="cpu", threads=0)


def test_imagecorr_options_identity_and_errors(photos):
    a = ImageCorrVerifier(device="cpu")
    assert a.identity.startswith("imagecorr-v3(") and a.identity == ImageCorrVerifier(device="cpu").identity
    assert ImageCorrVerifier(detail=0.0, device="cpu").identity != a.identity
    assert ImageCorrVerifier(max_shift=2, device="cpu").identity != a.identity
    assert ImageCorrVerifier(colour="rgb", device="cpu").identity != a.identity
    with pytest.raises(SibscanError, match="unknown colour mode 'hsv'; available: gray, rgb"):
        ImageCorrVerifier(colour="hsv")
    with pytest.raises(SibscanError, match="max_shift must be between 0 and 15"):
        ImageCorrVerifier(max_shift=40)
    with pytest.raises(SibscanError, match=r"detail must lie in \[0, 1\], got 2"):
        ImageCorrVerifier(detail=2)
    _, train, _ = photos
    table = Items("test", "table", ids=["a"], values=np.zeros((1, 3)))
    with pytest.raises(SibscanError, match="imagecorr works on images, not table"):
        a.verify(table, np.array([0]), train, np.array([0]))


def test_imagecorr_rgb_mode_runs(photos):
    _, train, test = photos
    res = ImageCorrVerifier(colour="rgb", device="cpu", progress=False).verify(
        test, np.array([0, 0]), train, np.array([0, 2]))
    assert res.scores[0] > 0.9 > res.scores[1]


def test_benchmark_quick_runs(tmp_path, monkeypatch, bench_results):
    import benchmarks.fingerprint as bench

    monkeypatch.setattr(bench, "RESULTS_NAME", "fingerprint_quick_test")
    result = bench.main(["--quick"])
    assert result["rows"] == 2000 and result["fingerprints_agree_with_blake2b"]
    assert (tmp_path / "fingerprint_quick_test.json").exists()


@pytest.mark.slow  # seconds (default tier under 3 minutes on a cold clone)
def test_twins_process_quick_runs(tmp_path, bench_results):
    """Both processes run to the end and agree on the counts (400 test rows are train copies)."""
    pytest.importorskip("pandas", reason="the reference process is pandas")
    import benchmarks.twins_process as bench

    result = bench.main(["--quick"])
    assert result["counts"]["sibscan"] == result["counts"]["pandas"] and result["counts"]["sibscan"][0] == 400
    assert all(len(v) == 2 for v in result["seconds"].values()) and result["speedup_vs_pandas"] > 0
    assert (tmp_path / "twins_process.json").exists()



def test_verify_long_quick_writes_results(tmp_path, bench_results):
    import benchmarks.verify_long as bench

    payload = bench.main(["--quick", "--repeat", "1"])
    short, counted, long_ = payload["cases"]
    assert short["score"] == counted["score"] == long_["score"] == 1.0  # the planted 100-word passage is found
    assert counted["detail"] == short["detail"]  # 50 other train texts: shingles counted, nothing masked
    assert "100-word run" in short["detail"] and "windows" not in short["detail"]
    assert "aligned in windows" in long_["detail"]  # 20,000 x 20,000 words is over LCS_CELLS
    assert short["pair_s (splits prepared)"] > 0
    assert (tmp_path / "verify_long.json").exists()


@pytest.mark.slow  # twins on CSVs of 2 and 8 MB and scan on 2k and 8k rows, each in a subprocess
def test_memory_quick_writes_results(tmp_path, bench_results):
    import benchmarks.memory as bench

    payload = bench.main(["--quick"])
    small, large = payload["twins"]["cases"]
    assert large["file_MB"] > 3 * small["file_MB"]
    assert small["peak_MB"] > payload["twins"]["fixed_MB"] > 0
    fewer, more = payload["scan"]["cases"]
    assert more["train_rows"] == 4 * fewer["train_rows"]
    assert fewer["peak_MB"] == pytest.approx(payload["scan"]["fixed_MB"] + fewer["beyond_fixed_MB"])
    growth = payload["scan"]["growth_largest_over_smallest"]
    assert payload["scan"]["met"] is (None if growth is None else growth <= 1.2)
    # tracemalloc's peak, from a second run: above its fixed cost, which is far below the RSS's
    assert 0 < payload["scan"]["traced_fixed_MB"] < payload["scan"]["fixed_MB"]
    assert more["traced_peak_MB"] == pytest.approx(payload["scan"]["traced_fixed_MB"] + more["traced_beyond_fixed_MB"])
    assert more["traced_beyond_fixed_MB"] > 0
    traced = payload["scan"]["traced_growth_largest_over_smallest"]
    assert payload["scan"]["traced_met"] is (None if traced is None else traced <= 1.2)
    # one file, a run per choice of parts (issue 31: --parts scan --name memory_scan had a file of its own)
    assert json.loads((tmp_path / "memory.json").read_text())["runs"]["twins+scan"]["complete"]


# -- contamination: the planted language-model-corpus benchmark --------------------------------


@pytest.mark.slow  # seconds (default tier under 3 minutes on a cold clone)
def test_contamination_synthetic_benchmark_negatives_are_hard_and_quick_run_writes_results(tmp_path, bench_results):
    """The planted benchmark cannot silently become easy: clean examples share most of their
    5-grams with the corpus; the --quick run writes every table docs/benchmarks.md quotes."""
    from benchmarks import contamination as bench

    out = bench.main(["--quick", "--parts", "synthetic"])["synthetic"]
    assert out["clean_overlap_n5"]["mean"] >= 0.8
    data = json.loads((tmp_path / "contamination_synthetic.json").read_text())
    assert data["seeds"] == 2 and set(data["mean_sd"]) >= {"verbatim", "partial", "paraphrased", "fpr"}
    assert data["mean_sd"]["verbatim"]["auc_overlap"]["mean"] > 0.9
    rows = data["prevalence_sweep"]["rows"]
    assert [r["setting"] for r in rows] == ["n=13 (defaults)", "n=8", "n=13, 300 controls"]
    for r in rows:
        assert r["true"] + r["missed"] == r["real"] == 20 and r["true"] + r["false"] == r["flagged"]


def test_contamination_throughput_pairs_are_robust_to_a_load_change():
    """Min-K%++ vs forward: timing each batch as a back-to-back pair and taking the median of the
    pairs' ratios recovers the true ratio when the machine's load drops 8x mid-run (the old
    best-of-three per method read 3.18 for a true ~1.0 in that situation)."""
    import numpy as np

    from benchmarks.contamination_lm import paired_times

    now, calls = [0.0], []

    def work(cost):
        def run(chunk):
            calls.append((cost, chunk))
            now[0] += cost * len(chunk) * (8.0 if len(calls) <= 11 else 1.0)  # the load falls mid-pair
        return run

    chunks = [[1, 2], [3, 4, 5], [6], [7, 8]]
    pairs = paired_times(work(1.0), work(1 / 0.95), chunks, repeats=3, clock=lambda: now[0])
    assert len(pairs) == 12 and [p["chunk"] for p in pairs[:4]] == [0, 1, 2, 3]
    assert [p["a_first"] for p in pairs[:4]] == [True, False, True, False]  # alternating order
    ratios = np.array([p["a_seconds"] / p["b_seconds"] for p in pairs])
    assert np.median(ratios) == pytest.approx(0.95) and np.sum(~np.isclose(ratios, 0.95)) == 1

# -- temporal: the time-permutation test on UCR data vs the paper ------------------------------


@pytest.mark.slow  # aeon's import and MiniRocket's first compile
def test_temporal_quick_benchmark(tmp_path, bench_results):
    pytest.importorskip("aeon", reason="the temporal benchmark needs aeon (pip install 'sibscan[temporal]')")
    import benchmarks.temporal as bench

    res = bench.main(["--quick", "--work", str(tmp_path / "work")])
    saved = json.loads((tmp_path / "temporal_quick.json").read_text())
    assert saved["datasets_run"] == sorted(bench.QUICK_DATASETS) == res["datasets_run"]
    agreement = saved["agreement"]
    assert agreement["n"] == 3 and 0 <= agreement["agree"] <= 3
    for row in saved["per_dataset"]:
        assert set(row["sibscan"]) >= {"acc_original_mean", "acc_permuted_mean", "time_matters"}
        assert len(row["sibscan_runs"]["acc_original"]) == 2 and len(row["paper_runs"]["acc_original"]) == 2
    assert all(d in agreement["disagreements"] for d in saved["per_dataset"] if not d["agree"])
    sp = saved["speed"]
    assert sp["same_accuracies"] is True  # the wrapper scores exactly what aeon's own fit/predict scores
    assert sp["aeon_seconds"] > 0 and sp["wrapper_seconds"] > 0


def test_temporal_paper_rows_give_the_published_verdict_inputs():
    from benchmarks.temporal import paper_rows

    rows = paper_rows()
    assert len(rows) == 112
    gp = rows["GunPoint"]  # seeds 1 and 2 of cor_nor_seed*.csv
    assert gp["acc_original"] == [0.9933333333333333, 0.9933333333333333] and gp["acc_permuted"] == [0.96, 0.96]
    assert gp["time_matters"] is True


# -- import cost: the numbers behind the imports kept inside a function ------------------------------


def test_import_cost_measures_each_listed_import_after_the_entry_point_its_reason_names():
    from benchmarks import import_cost
    from test_architecture import LAZY_IMPORTS_ALLOWED, function_level_imports

    rows = import_cost.lazy_for_import_time()
    timed = [r for targets in LAZY_IMPORTS_ALLOWED.values() for r in targets.values() if r.startswith("import time")]
    assert len(rows) == len(timed) > 50  # every import kept lazy for its import time, and only those
    row = next(r for r in rows if (r["module"], r["imports"]) == ("sibscan.cli.scan", "sibscan.scan"))
    assert row["entry"] == "sibscan.cli"  # `sibscan --help`
    added = import_cost.added_by(row["entry"], function_level_imports("sibscan.cli.scan")["sibscan.scan"], runs=1)
    assert added["modules"] > 10 and added["ms"] > 0  # the scan's stages, search, encoders...
    assert import_cost.added_by("sibscan.cli", ["from sibscan.progress import message"], runs=1)["modules"] == 0


# -- install size: what the README's CPU-only install saves ----------------------------------------


def test_install_size_counts_each_file_once_by_the_distribution_that_installed_it(tmp_path):
    from benchmarks.install_size import venv_size

    sp = tmp_path / "lib" / "python3.11" / "site-packages"
    for dist, files in (("torch-2.13.0+cpu", {"torch/lib/libtorch_cpu.so": 700, "functorch/_C.so": 50}),
                        ("nvidia_cublas_cu12-12.8", {"nvidia/cublas/lib/libcublas.so": 300}),
                        ("triton-3.5.0", {"triton/_C/libtriton.so": 90}),
                        ("torchvision-0.28.0", {"torchvision/_C.so": 20}),
                        ("numpy-2.3.0", {"numpy/core.so": 30})):
        info = sp / f"{dist}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_bytes(b"m" * 5)
        record = [f"{dist}.dist-info/METADATA,,5", f"{dist}.dist-info/RECORD,,"]
        for rel, size in files.items():
            (sp / rel).parent.mkdir(parents=True, exist_ok=True)
            (sp / rel).write_bytes(b"x" * size)
            record.append(f"{rel},sha256=abc,{size}")
        (info / "RECORD").write_text("\n".join(record) + "\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_bytes(b"y" * 8)  # no RECORD lists it
    os.link(sp / "numpy" / "core.so", tmp_path / "bin" / "core-again.so")  # a hard link counts once
    sizes = venv_size(tmp_path)
    records = {d: len((sp / f"{d}.dist-info" / "RECORD").read_bytes())
               for d in ("torch-2.13.0+cpu", "nvidia_cublas_cu12-12.8", "triton-3.5.0", "torchvision-0.28.0",
                         "numpy-2.3.0")}
    assert sizes["torch"] == 750 + 5 + records["torch-2.13.0+cpu"]
    assert sizes["nvidia"] == 300 + 5 + records["nvidia_cublas_cu12-12.8"]
    assert sizes["triton"] == 90 + 5 + records["triton-3.5.0"]
    assert sizes["torchvision"] == 20 + 5 + records["torchvision-0.28.0"]
    assert sizes["other"] == 30 + 5 + records["numpy-2.3.0"] + 8
    assert sizes["total"] == sum(v for k, v in sizes.items() if k != "total")


@pytest.mark.slow  # seconds (default tier under 3 minutes on a cold clone)
def test_calibration_coverage_quick_writes_results(tmp_path, bench_results):
    import benchmarks.calibration_coverage as bench

    summary = bench.main(["--quick", "--name", "calibration_coverage_quick_test"])
    saved = json.loads((tmp_path / "calibration_coverage_quick_test.json").read_text())["runs"]
    assert list(saved) == ["labeller_error"]  # the --oracle run goes beside it, under "oracle"
    saved = saved["labeller_error"]
    # one data set per kind and prevalence, and one more each with 10 % of the answers on control pairs
    assert saved["quick"] and saved["labeller_error"] == 0.03 and len(saved["datasets"]) == 18
    assert sum(r["control_share"] > 0 for r in saved["datasets"]) == 9
    for r in saved["datasets"]:  # the point estimate sits inside its interval at every checkpoint
        for key in ("at_30", "at_60"):
            assert r[key]["lo"] <= r[key]["mid"] <= r[key]["hi"] and r[key]["covered"] == (r[key]["lo"] <= r["true"] <= r[key]["hi"])
        assert r["at_60"]["controls"] == (6 if r["control_share"] else 0)
    assert 0 <= summary["coverage_min"]["60"] <= 1 and len(summary["cells"]) == 18
    assert all(c["width 60"] > 0 for c in summary["cells"])


def test_calibration_coverage_subset_flags(capsys):
    import benchmarks.calibration_coverage as bench

    with pytest.raises(SystemExit):
        bench.main(["--kinds", "imgae", "--quick"])
    assert "unknown kind imgae; available: image, text, series" in capsys.readouterr().err
    result = bench.run(1, (200,), 50, (30,), kinds=("image",), prevalences=(0.03,), workers=1)
    assert [(r["kind"], r["prevalence"], r["n"]) for r in result["runs"]] == [("image", 0.03, 200)]


@pytest.mark.slow
def test_image_scale_quick_scores_each_mode(tmp_path, monkeypatch, bench_results):
    pytest.importorskip("torch", reason="effnet runs on torch (pip install 'sibscan[torch]')")
    from benchmarks import image_scale

    monkeypatch.setenv("SIBSCAN_CACHE_DIR", str(tmp_path / "cache"))
    image_scale.main(["--quick", "--sets", "images-32px", "--sizes", "32", "--no-previous"])
    # one file, a run per sets, sizes and modes (issue 31: each had a --name of its own)
    data = json.loads((tmp_path / "image_scale_quick.json").read_text())["runs"]["images-32px_32"]
    modes = data["sets"]["images-32px"]["modes"]
    assert set(modes) == {"32", "auto"}
    assert "size=32" in modes["32"]["identity"]
    for entry in modes.values():
        for view in ("embedding", "verified"):
            assert 0 <= entry[view]["recall_at_p95"] <= 1 and 0 <= entry[view]["auc"] <= 1
    scan = modes["auto"]["scan"]  # the default scan's candidates, at the auto size only
    assert "scan" not in modes["32"]
    assert scan["views"]["source_in_candidates"] >= scan["encoder_only"]["source_in_candidates"]
    assert 0 <= scan["views"]["recall_at_p95"] <= 1 and scan["verify_seconds"] > 0


def test_variants_of_one_command_refuse_a_results_file_of_another_form(tmp_path, capsys, bench_results):
    # issue 31: pair_once --verifier imagefuse, image_scale's sizes and memory's parts wrote files of their own;
    # now runs of one file, and a file of the old form is refused before the work (not overwritten after it)
    import benchmarks.pair_once as pair_once
    from benchmarks import image_scale

    import benchmarks.memory as memory

    for module, name in ((pair_once, "pair_once_quick"), (image_scale, "image_scale_quick"), (memory, "memory")):
        _common.write_results(name, {"sets": {}})
        with pytest.raises(SystemExit, match=f"{name}.json: not a file of runs by key"):
            module.main(["--quick"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["image_scale_quick.json", "memory.json",
                                                          "pair_once_quick.json"]


def test_image_scale_scan_row_follows_the_scan_defaults(sets, monkeypatch):
    """The scan row reads k, the extra views, k_view and the verifier from the scan's own defaults,
    and verifies the encoder's top-k joined with each view's top-k_view (pixels embeddings stand in
    for effnet's here: the candidates, not the encoder, are under test)."""
    from benchmarks import image_scale
    from sibscan.options import SearchOptions

    ps = sets["images"]
    enc = get_encoder("pixels")
    tr, te = enc.encode(ps.train.paths), enc.encode(ps.test.paths)
    monkeypatch.setattr("sibscan.stages.views.default_views", lambda modality, verifying: ("windows",))
    monkeypatch.setattr("sibscan.encoders.build.default_encoder", lambda modality: "effnet")
    out = image_scale.score_scan(ps, tr, te, n_labels=10, n_verified_random=20, seed=0)
    d = out["defaults"]
    assert (d["k"], d["k_view"], d["views"], d["verifier"]) == (SearchOptions().k, SearchOptions().k_view,
                                                                ["windows"], "imagecorr")
    n_test, k = len(ps.test), min(d["k"], len(ps.train))
    assert n_test * k < out["candidate_pairs"] <= n_test * (k + d["k_view"])  # the view added candidates
    assert out["candidate_pairs"] <= out["verified_pairs"] <= out["candidate_pairs"] + 20  # union + random, once each
    assert out["views"]["source_in_candidates"] >= out["encoder_only"]["source_in_candidates"]
    assert set(out["view_seconds"]) == {"windows"}


@pytest.mark.slow  # about a minute on the shared 2-core machine (two planted sets, the search on default threads)
def test_imagematch_speed_quick_writes_results(tmp_path, bench_results):
    pytest.importorskip("torch", reason="the image verifier runs on torch (pip install 'sibscan[torch]')")
    import benchmarks.imagematch_speed as bench

    payload = bench.main(["--quick", "--repeat", "1", "--keep", "6"])
    rows = payload["rows"]
    assert [(r["set"], r["coarse"], r["keep"]) for r in rows] == [(s, c, k) for s in ("crops", "small32")
                                                                  for c, k in ((0, 1), (0, 1), (32, 6))]
    assert all(r["pairs"] > r["true_pairs"] > 0 and r["seconds"] > 0 for r in rows)
    assert rows[0]["same_variant"] == 1.0 and rows[0]["true_max_abs_change"] == 0.0  # the reference against itself
    assert (tmp_path / "imagematch_speed_quick.json").exists()


def test_calibration_only_recalibrates_from_the_saved_scores(tmp_path, monkeypatch, capsys, bench_results):
    # the side file a run writes (benchmarks.quality_pairs), made by hand: 40 planted pairs high, 60 clean low
    from benchmarks import quality_pairs

    monkeypatch.setattr(_common, "machine", lambda: {})  # not torch's import time
    rng = np.random.default_rng(4)
    source = np.r_[np.arange(40), np.full(60, -1)]
    score = np.r_[rng.uniform(0.6, 1.0, 40), rng.uniform(0.0, 0.5, 60)]
    score[45] = 0.9  # one clean item among the siblings: a hard negative above any cutoff the labels allow
    hard = np.r_[np.zeros(40, bool), np.ones(60, bool)]
    evaluated = {"calibration": {"cutoff": 0.123}, "hard_negatives_flagged": 7, "metrics": {"recall": 0.5},
                 quality_pairs.POPULATION_KEY: quality_pairs.population(score, np.arange(100), rng.uniform(0, 0.3, 500))}
    results = {"crops": {"encoders": {"enc": {"verified:v": evaluated}}}}
    truth = {"crops": {"source": source.tolist(), "hard": hard.tolist(), "featureless": [False] * 100}}
    side = quality_pairs.split_pairs(results, truth)
    assert quality_pairs.POPULATION_KEY not in evaluated and list(side["sets"]["crops"]["methods"]) == ["enc|verified:v"]
    _common.write_run("run", "seed1", {"sets": results})
    pairs_path = _common.write_run("run_pairs", "seed1", {"seed": 1, **side}, compact=True)
    assert pairs_path.name == "run_pairs.json.gz" and _common.read_results(pairs_path)["runs"]["seed1"]["seed"] == 1
    out = quality.main(["--calibration-only", str(pairs_path)])["seed1"]
    r = out["sets"]["crops"]["enc|verified:v"]
    assert r["before"] == {"cutoff": 0.123, "hard_negatives_flagged": 7, "recall": 0.5}  # as recorded in run.json
    cal = quality.calibrate(score, np.arange(100), source >= 0,
                            np.asarray(side["sets"]["crops"]["methods"]["enc|verified:v"]
                                                                          ["random_scores"]), 60, seed=1)
    assert r["now"]["calibration"]["cutoff"] == pytest.approx(cal["cutoff"])
    assert r["now"]["hard_negatives_above_cutoff"] == int(((score >= cal["cutoff"]) & hard).sum()) == 1
    # the hard negative at 0.9 was drawn and labelled "different": by the rule of a scan it is not flagged
    # (this side file has no next pairs: its other candidates are unknown, and said so)
    labels = dict(zip(r["now"]["labels"]["rows"], r["now"]["labels"]["same"]))
    assert labels[45] is False and r["now"]["hard_negatives_flagged"] == 0 and r["now"]["next_pair"] == "unknown"
    assert r["now"]["recall"] == pytest.approx(((score >= cal["cutoff"]) & (source >= 0)).mean() / 0.4)
    assert json.loads((tmp_path / "run_recalibrated.json").read_text())["runs"]["seed1"]["sets"]["crops"][
        "enc|verified:v"]["now"]
    assert "cutoff now" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        quality.main(["--calibration-only", str(tmp_path / "run.json")])


def _mixed_answers():
    """Scores where every fifth pair and the one three after it are siblings: the answers never make a run
    the cutoff rule accepts, so the calibration refuses (as it would for a user)."""
    n = 100
    score = np.linspace(0.31, 1.0, n)
    same = np.array([i % 5 in (0, 3) for i in range(n)])
    return score, same, np.random.default_rng(0).uniform(0.0, 0.3, 2000)


def test_calibrate_that_refuses_gives_no_cutoff_not_the_lowest_same():
    # the old fallback put the cutoff at the lowest 'same' answer and flagged every 'different' above it
    score, same, random_scores = _mixed_answers()
    cal = quality.calibrate(score, np.arange(100), same, random_scores, n_labels=60, seed=1)
    assert cal["cutoff"] is None and cal["status"].startswith("no cutoff (not assessed): not enough labels")
    # a true no-flip keeps its convention: every labelled pair 'same' flags down to the baseline's q99
    allsame = quality.calibrate(score, np.arange(100), np.ones(100, bool), random_scores, n_labels=60, seed=1)
    assert allsame["cutoff"] == pytest.approx(allsame["lo"])
    from benchmarks import quality_pairs

    assert set(quality_pairs.flag_counts(score, None, same, same, ~same, np.zeros(100, bool)).values()) == {None}


def test_write_back_blanks_the_figures_of_a_refused_calibration(tmp_path, monkeypatch, capsys, bench_results):
    from benchmarks import quality_pairs

    monkeypatch.setattr(_common, "machine", lambda: {})
    score, same, random_scores = _mixed_answers()
    source = np.where(same, np.arange(100), -1)
    evaluated = {"calibration": {"cutoff": 0.31}, "hard_negatives_flagged": 60, "featureless_flagged": 0,
                 "metrics": {**dict.fromkeys(quality_pairs.AT_CUTOFF, 0.5), "auc": 0.5, "recall_at_p95": 0.1},
                 "per_transform": {"crop": {"n": 40, "recall": 1.0, "auc": 0.5, "precision_at_1pct": 0.01}},
                 quality_pairs.POPULATION_KEY: quality_pairs.population(score, np.arange(100), random_scores)}
    results = {"crops": {"encoders": {"enc": {"embedding": evaluated}}}}
    side = quality_pairs.split_pairs(results, {"crops": {"source": source.tolist(), "hard": (~same).tolist(),
                                                         "featureless": [False] * 100}})
    _common.write_run("run", "seed1", {"n_labels": 60, "sets": results})
    pairs_path = _common.write_run("run_pairs", "seed1", {"seed": 1, **side}, compact=True)  # no n_labels: NAME.json's
    out = quality.main(["--calibration-only", str(pairs_path), "--write-back"])["seed1"]
    assert out["n_labels_from"] == "NAME.json"
    r = out["sets"]["crops"]["enc|embedding"]["now"]
    assert r["calibration"]["cutoff"] is None and r["hard_negatives_flagged"] is None and r["recall"] is None
    entry = json.loads((tmp_path / "run.json").read_text())["runs"]["seed1"]
    rec = entry["recalibrated"]
    entry = entry["sets"]["crops"]["encoders"]["enc"]["embedding"]
    assert entry["calibration"]["cutoff"] is None and entry["calibration"]["status"].startswith("no cutoff (not assessed)")
    assert entry["hard_negatives_flagged"] is None and entry["featureless_flagged"] is None
    assert all(entry["metrics"][k] is None for k in quality_pairs.AT_CUTOFF)
    assert entry["metrics"]["auc"] == 0.5 and entry["metrics"]["recall_at_p95"] == 0.1  # threshold-free: kept
    assert entry["per_transform"]["crop"] == {"n": 40, "recall": None, "auc": 0.5, "precision_at_1pct": None}
    assert rec["methods"] == ["crops enc|embedding"] and "--write-back" in rec["command"]
    assert "rewrote run.json: 1 methods" in capsys.readouterr().out
    assert list(json.loads((tmp_path / "run.json").read_text())["runs"]) == ["seed1"]
    with pytest.raises(SystemExit):
        quality.main(["--write-back"])


def test_calibration_only_draws_the_labels_of_the_run_it_replays(bench_results, monkeypatch):
    from benchmarks import quality_pairs

    monkeypatch.setattr(_common, "machine", lambda: {})
    rng = np.random.default_rng(4)
    score = np.r_[rng.uniform(0.6, 1.0, 40), rng.uniform(0.0, 0.5, 60)]
    evaluated = {quality_pairs.POPULATION_KEY: quality_pairs.population(score, np.arange(100), rng.uniform(0, 0.3, 500))}
    results = {"crops": {"encoders": {"enc": {"verified": evaluated}}}}
    side = quality_pairs.split_pairs(results, {"crops": {"source": np.r_[np.arange(40), np.full(60, -1)].tolist(),
                                                         "hard": [False] * 100, "featureless": [False] * 100}})
    # a run made with 30 labels: the side file says so, whatever the flags of the replay say (60)
    pairs_path = _common.write_run("run30_pairs", "seed0", {"seed": 0, "n_labels": 30, **side}, compact=True)
    out = quality_pairs.calibration_only(pairs_path, 60, 0)
    assert out["n_labels"] == 30 and out["n_labels_from"] == "side file"
    assert out["sets"]["crops"]["enc|verified"]["now"]["calibration"]["labelled"] == 30


def test_cutoff_rule_sim_quick_bound_rule_flags_fewer_pairs_below_half(tmp_path, bench_results):
    import benchmarks.cutoff_rule_sim as bench

    payload = bench.main(["--quick"])
    assert (tmp_path / "cutoff_rule_sim_quick.json").exists()
    rows = payload["rows"]
    assert len(rows) == 2 * len(bench.SIZES) * len(bench.WIDTHS)
    share = {r: np.mean([x["share_first_flagged_below_half"] for x in rows if x["rule"] == r])
             for r in ("bound", "point")}
    # the point estimate puts its cutoff where P(same) is about one half; the bound stays above it
    assert share["bound"] < share["point"] / 2, share


def test_next_pair_and_the_labels_rule_in_the_benchmark():
    from benchmarks import quality_pairs

    s2, n2 = quality_pairs.next_pair(np.array([[0.9, 0.5, 0.7], [0.3, 0.3, 0.3]]), np.array([[1, 2, 3], [4, 4, 4]]),
                                     np.array([1, 4]))
    assert s2[0] == 0.7 and n2[0] == 3 and np.isnan(s2[1]) and n2[1] == -1  # a row of one train item has no next
    # item 0: nearest 0.9 answered "different", next 0.7 above the cutoff (its source): flagged by the next pair;
    # item 1: 0.8 answered "different", next 0.2: not flagged; item 2: 0.3 answered "same": flagged below the cutoff
    score, score2 = np.array([0.9, 0.8, 0.3, 0.1]), np.array([0.7, 0.2, np.nan, 0.05])
    m = quality_pairs.flag_masks(score, 0.5, np.zeros(4, bool), (np.array([0, 1, 2]), np.array([False, False, True])),
                                 score2, np.array([True, False, False, False]))
    assert m["flagged"].tolist() == [True, False, True, False] and m["above"].tolist() == [True, True, False, False]
    assert m["hit"].tolist() == [True, False, False, False]


def test_write_back_applies_the_labels_without_moving_the_cutoff(tmp_path, monkeypatch, capsys, bench_results):
    from benchmarks import quality_pairs
    from types import SimpleNamespace

    monkeypatch.setattr(_common, "machine", lambda: {})
    rng = np.random.default_rng(4)
    source = np.r_[np.arange(40), np.full(60, -1)]
    score = np.r_[rng.uniform(0.6, 1.0, 40), rng.uniform(0.0, 0.5, 60)]
    score[45] = 0.9  # a hard negative the draw labels "different"
    score2 = np.minimum(score, rng.uniform(0.0, 0.3, 100))
    random_scores = rng.uniform(0, 0.3, 500)
    planted, hard = source >= 0, ~(source >= 0)
    correct = planted & (np.arange(100) == source)
    cal = quality.calibrate(score, np.arange(100), correct, random_scores, 60, seed=1)
    quality_pairs.take_labels(cal)
    above = score >= cal["cutoff"]
    ps = SimpleNamespace(planted=planted, transform=np.where(planted, "crop", ""))
    evaluated = {"calibration": cal, "hard_negatives_flagged": int((above & hard).sum()), "featureless_flagged": 0,
                 "metrics": quality.detection_metrics(ps, above, correct, score),
                 "per_transform": quality.per_transform(ps, above, correct, score),
                 quality_pairs.POPULATION_KEY: quality_pairs.population(score, np.arange(100), random_scores, score2,
                                                                        np.full(100, 99))}
    results = {"crops": {"encoders": {"enc": {"verified:v": evaluated}}}}
    side = quality_pairs.split_pairs(results, {"crops": {"source": source.tolist(), "hard": hard.tolist(),
                                                         "featureless": [False] * 100,
                                                         "transform": ps.transform.tolist()}})
    _common.write_run("run", "seed1", {"n_labels": 60, "sets": json.loads(json.dumps(_common.finite(results)))})
    pairs_path = _common.write_run("run_pairs", "seed1", {"seed": 1, **side}, compact=True)
    quality.main(["--calibration-only", str(pairs_path), "--write-back"])
    entry = json.loads((tmp_path / "run.json").read_text())["runs"]["seed1"]
    assert "labels_decide" in entry
    e = entry["sets"]["crops"]["encoders"]["enc"]["verified:v"]
    assert e["calibration"]["cutoff"] == cal["cutoff"]  # the cutoff does not move
    assert e["hard_negatives_above_cutoff"] == 1 and e["hard_negatives_flagged"] == 0
    assert e["above_cutoff"]["recall"] == pytest.approx(evaluated["metrics"]["recall"])


def test_write_results_goes_to_results_unless_the_environment_names_another_folder(tmp_path, monkeypatch):
    """bench_results sets both ways; this keeps each covered on its own."""
    monkeypatch.delenv("SIBSCAN_BENCH_RESULTS", raising=False)
    monkeypatch.setattr(_common, "RESULTS", tmp_path / "results")
    assert _common.write_results("x", {"a": 1}) == tmp_path / "results" / "x.json"
    monkeypatch.setenv("SIBSCAN_BENCH_RESULTS", str(tmp_path / "env"))
    assert _common.write_results("x", {"a": 2}) == tmp_path / "env" / "x.json"
    assert json.loads((tmp_path / "results" / "x.json").read_text())["a"] == 1


def test_chance_baseline_quick_counts_what_all_pairs_give(tmp_path, bench_results):
    """The chance-siblings benchmark on two small UCR sets aeon ships (7,500 and 6,300 pairs: more than
    ALL_VERIFIED_MAX, so the verified baseline is a uniform sample): its count at r >= 0.9999 is the one
    all pairs give, and the scan's note is the benchmark's."""
    pytest.importorskip("aeon", reason="aeon ships the UCR sets this benchmark reads (pip install -e '.[dev]')")
    import benchmarks.chance_baseline as bench
    from sibscan.calibration.baseline import ALL_VERIFIED_MAX

    payload = bench.main(["--quick", "--work", str(tmp_path / "work"), "--repeat", "1"])
    rows = {r["dataset"]: r for r in payload["datasets"]}
    assert set(rows) == {"GunPoint", "ArrowHead"}
    for r in rows.values():
        assert r["all_pairs"]["n_pairs"] == r["n_test"] * r["n_train"] > ALL_VERIFIED_MAX
        assert r["after"]["draw"] == "uniform" and r["after"]["n_pairs"] < r["all_pairs"]["n_pairs"]
        assert r["after"]["expected"] == pytest.approx(r["all_pairs"]["expected"], abs=1.0)
        assert r["note"] == r["scan_note"]
    assert [t["now"]["draw"] for t in payload["timing"]] == ["all", "all"]
    assert (tmp_path / "chance_baseline_quick.json").exists()
