"""Control pairs in the calibration flow (issue 30): pairs whose answer is known, mixed into the pairs shown
at a set share, looking like any other pair in the page's JSON and the terminal, answered into their own
store (never labels of pairs), counted by ``controls_of`` and kept on resume."""
from __future__ import annotations

import io
import json
import re
from dataclasses import asdict

import numpy as np
import pytest
from _helpers import label_session, oracle_file, read_labels
from typer.testing import CliRunner

from sibscan.calibration import calibrate, describe, load_calibration
from sibscan.calibration.controlanswers import (ANSWERS_FILE, CONTROLS_FILE, answers_line, check_share, controls_of,
                                                read_controls)
from sibscan.calibration.copies import copy_text, copy_values
from planted_scan import planted_scan
from sibscan.calibration.terminal import run_terminal
from sibscan.calibration.web import LabelServer
from sibscan.cli import app
from sibscan.errors import SibscanError
from sibscan.store.scandir import ScanDir
from sibscan.stats import ControlAnswers


def _calibrated(tmp_path, modality="text", n_pairs=30, controls=0.1, seed=3):
    if modality == "image":  # an image scan, and its controls' copies, need Pillow (the images extra)
        pytest.importorskip("PIL", reason="image items need Pillow (pip install 'sibscan[images]')")
    p = planted_scan(tmp_path / "scan", n_train=300, n_test=150, seed=seed, modality=modality, dim=48)
    cal = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal, ui="none", n_pairs=n_pairs, controls=controls)
    return p, cal


def _controls(cal):
    return read_controls(cal)["controls"]


def _answers(cal):
    path = cal / ANSWERS_FILE
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_controls_come_one_in_each_block_at_the_set_share_with_both_truths(tmp_path):
    p, cal = _calibrated(tmp_path, n_pairs=60, controls=0.1)
    made = _controls(cal)
    shown = 60 + len(made)
    assert 6 <= len(made) <= 7  # one in ten of the ~66 pairs shown
    for b in range(shown // 10):  # every whole block of ten places holds exactly one control
        assert sum(b * 10 <= c.slot < b * 10 + 10 for c in made) == 1, [c.slot for c in made]
    assert {c.truth for c in made} == {"same", "different"}
    assert abs(sum(c.truth == "same" for c in made) - sum(c.truth == "different" for c in made)) <= 1
    # a fifth: twice as many
    p2, cal2 = _calibrated(tmp_path / "b", n_pairs=60, controls=0.2)
    assert 14 <= len(_controls(cal2)) <= 16


def test_controls_zero_turns_them_off(tmp_path):
    p = planted_scan(tmp_path / "scan", n_train=300, n_test=150, seed=3, modality="text")
    res = CliRunner().invoke(app, ["calibrate", str(p.path), "--ui", "none", "--n-pairs", "30", "--controls", "0"])
    assert res.exit_code == 0, res.output
    assert not (p.path / "calibration" / CONTROLS_FILE).exists()
    assert "control pairs: not assessed (none answered)" in res.stdout
    assert json.loads((p.path / "calibration" / "cutoff.json").read_text())["controls"] == asdict(ControlAnswers())
    session = label_session(p.path, p.path / "calibration", controls=0)
    assert all(kind == "pair" for kind, _ in session.seq)


@pytest.mark.parametrize("bad", [0.9, -0.1, "many"])
def test_a_share_out_of_range_is_one_line_naming_the_option(tmp_path, bad):
    p = planted_scan(tmp_path / "scan", n_train=60, n_test=30, seed=3, modality="text")
    res = CliRunner().invoke(app, ["calibrate", str(p.path), "--ui", "none", "--controls", str(bad)])
    assert res.exit_code != 0 and "controls" in res.output
    if bad != "many":  # typer refuses a non-number itself
        assert res.exit_code == 1 and "Traceback" not in res.output
        with pytest.raises(SibscanError, match="controls is the share of control pairs"):
            calibrate(p.path, ui="none", controls=bad)
    assert check_share(0) == 0.0 and check_share(0.5) == 0.5


def _same_shape(a, b):
    """The same keys all the way down (values aside)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_shape(a[k], b[k]) for k in a)
    if isinstance(a, list) and a and isinstance(a[0], list):
        return isinstance(b, list) and all(len(x) == len(y) for x, y in zip(a, b))
    return type(a) is type(b) or {type(a), type(b)} <= {int, float}


@pytest.mark.parametrize("modality", ["text", "table", "image"])
def test_a_control_looks_like_a_pair_in_the_session_and_the_pages_json(tmp_path, modality):
    p, cal = _calibrated(tmp_path, modality=modality, n_pairs=30)
    session = label_session(p.path, cal, controls=0.1)
    sd = ScanDir(p.path)
    test_ids, train_ids = set(sd.items("test").ids.astype(str)), set(sd.items("train").ids.astype(str))
    controls = [i for i, (kind, _) in enumerate(session.seq) if kind == "control"]
    pairs = [i for i, (kind, _) in enumerate(session.seq) if kind == "pair"]
    assert len(controls) >= 3 and {session.seq[i][1].kind for i in controls} >= {"copy", "random"}
    views = [session.view(i) for i in range(len(session))]
    for i in controls:
        v = views[i]
        assert _same_shape(v, views[pairs[0]]) and "score" not in v and "label" not in v
        assert v["left"]["id"] in test_ids and v["right"]["id"] in train_ids
    # no test item is shown twice (a control's test item is kept out of the draw)
    assert len({v["left"]["id"] for v in views}) == len(views)
    with LabelServer(session) as server:
        base = f"http://127.0.0.1:{server.port}"
        import urllib.request

        def get(path):
            with urllib.request.urlopen(f"{base}{path}?t={server.token}", timeout=10) as r:
                return r.read()

        bodies = {i: get(f"/api/pair/{i}") for i in (controls[0], pairs[0])}
        a, b = (json.loads(x) for x in bodies.values())
        assert _same_shape(a, b) and a.keys() == b.keys()
        for c in _controls(cal):
            assert c.id.encode() not in bodies[controls[0]]
        assert not re.search(rb"control|copy|truth|random", bodies[controls[0]])
        if modality == "image":
            png = get(f"/api/item/{controls[0]}/right")
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
    copies = [c for c in _controls(cal) if c.kind == "copy"]
    if modality == "image":  # the copy is a file in the calibration folder, the same size as its original
        from PIL import Image

        for c in copies:
            with Image.open(cal / c.image) as im, Image.open(sd.items("test").paths[c.query_index]) as orig:
                assert im.size == orig.size


@pytest.mark.parametrize("modality", ["text", "image"])
def test_the_terminal_shows_a_control_as_it_shows_a_pair(tmp_path, modality):
    p, cal = _calibrated(tmp_path, modality=modality, n_pairs=12)
    session = label_session(p.path, cal, controls=0.3)
    out = io.StringIO()
    assert run_terminal(session, stdin=io.StringIO("y\n" * len(session)), stdout=out) == "done"
    text = out.getvalue()
    blocks = re.findall(r"\npair \d+ of \d+ \(#(\d+)\)\n(.*?)same\? ", text, flags=re.S)
    assert len(blocks) == len(session) >= 14
    shape = re.compile(r"(  see the pair at \S+\n)?  test  te\d+:?\n(    .*\n)?  train tr\d+:?\n(    .*\n)?$")
    for _, block in blocks:
        assert shape.fullmatch(block), block
    assert ".png" not in text and str(cal) not in text  # no file path tells a copy from a train item
    kinds = {int(i): session.seq[int(i)][0] for i, _ in blocks}
    assert set(kinds.values()) == {"pair", "control"}
    # the count shown is of every pair shown, controls included, from the first pair on
    assert set(re.findall(r"\npair \d+ of (\d+) ", text)) == {str(len(session))}
    assert f"all {len(session)} pairs labelled" in text


def test_answers_on_controls_go_to_their_own_store_and_are_counted(tmp_path):
    p, cal = _calibrated(tmp_path, n_pairs=20)
    session = label_session(p.path, cal, controls=0.3)
    controls = {i: c for i, (kind, c) in enumerate(session.seq) if kind == "control"}
    # answer every pair "same", the controls: right, except a skip on the first and one known-different answered "same"
    ordered = sorted(controls)
    wrong = next(i for i in ordered if controls[i].truth == "different" and i != ordered[0])
    for i in range(len(session)):
        c = controls.get(i)
        label = "same" if c is None else "skip" if i == ordered[0] else "same" if i == wrong else c.truth
        session.answer(i, label)
    labels = read_labels(cal)
    assert len(labels) == 20 and not any("control_id" in r for r in labels)
    assert {(r["query_id"], r["neighbour_id"]) for r in labels}.isdisjoint({(c.query_id, c.shown_id) for c in controls.values()})
    answered = _answers(cal)
    assert len(answered) == len(controls) and {r["control_id"] for r in answered} == {c.id for c in controls.values()}
    counted = [c for i, c in controls.items() if i != ordered[0]]
    n_same = sum(c.truth == "same" for c in counted)
    assert controls_of(cal) == ControlAnswers(n_same=n_same, same_answered_same=n_same,
                                              n_different=len(counted) - n_same, different_answered_same=1)
    # undo withdraws the latest answer, here the last place's, wherever it is kept
    last = len(session) - 1
    assert session.undo() == last
    if last in controls:
        assert _answers(cal)[-1]["label"] == "undo" and controls_of(cal).n == len(counted) - 1
    else:
        assert read_labels(cal)[-1]["label"] == "undo"
    assert session.next_pending() == last


def test_an_interrupted_session_resumes_onto_the_same_controls(tmp_path):
    p, cal = _calibrated(tmp_path, n_pairs=20)
    s1 = label_session(p.path, cal, controls=0.3)
    first = [(kind, x.id if kind == "control" else s1.keys[x]) for kind, x in s1.seq]
    k = next(i for i, (kind, _) in enumerate(s1.seq) if kind == "control") + 1
    assert run_terminal(s1, stdin=io.StringIO("n\n" * k), stdout=io.StringIO()) == "quit"
    s2 = label_session(p.path, cal, controls=0.3)
    assert [(kind, x.id if kind == "control" else s2.keys[x]) for kind, x in s2.seq] == first
    assert s2.next_pending() == k and len(s2.answers()) == k
    assert len(_answers(cal)) == 1 and controls_of(cal).n == 1
    # controls made for another scan's inputs are set aside: new ones are made
    doc = json.loads((cal / CONTROLS_FILE).read_text())
    doc["dataset_fingerprint"] = "another scan"
    doc["controls"][0]["id"] = "cforeign"
    (cal / CONTROLS_FILE).write_text(json.dumps(doc))
    s3 = label_session(p.path, cal, controls=0.3)
    assert "cforeign" not in {x.id for kind, x in s3.seq if kind == "control"}
    assert read_controls(cal)["identity"]["dataset_fingerprint"] == "planted-3"


@pytest.mark.parametrize("error_rate", [0.0, 1.0])
def test_the_oracle_answers_controls_and_the_calibration_says_the_measured_error(tmp_path, error_rate):
    p, cal = _calibrated(tmp_path, n_pairs=40)
    made = _controls(cal)
    n_same = sum(c.truth == "same" for c in made)
    # an oracle is never wrong: answers flipped on purpose are a fallible labeller's (read with its error)
    labels = oracle_file(tmp_path, p, cal, error_rate=error_rate, labeller="oracle" if error_rate == 0 else "simulated")
    said: list = []
    res = calibrate(p.path, calibration_dir=cal, ui="none", n_pairs=40, labels=labels, echo=said.append)
    assert any(f"imported {len(made)} answers on control pairs" in x for x in said), said
    assert not any("control_id" in r for r in read_labels(cal))
    want = (ControlAnswers(n_same, n_same, len(made) - n_same, 0) if error_rate == 0 else
            ControlAnswers(n_same, 0, len(made) - n_same, len(made) - n_same))
    assert controls_of(cal) == want
    import sibscan.calibration

    assert sibscan.calibration.controls_of(cal) == want  # the package's API names it too
    assert load_calibration(cal).extra["controls"] == asdict(want)
    line = (f"control pairs: {want.same_answered_same} of {n_same} known-same answered same, "
            f"{want.different_answered_same} of {len(made) - n_same} known-different answered same")
    assert line in describe(res) and answers_line(want) == line


def test_known_different_controls_are_random_pairs_far_below_the_neighbours(tmp_path):
    p, cal = _calibrated(tmp_path, n_pairs=60, controls=0.3)
    sd = ScanDir(p.path)
    te, tr = sd.embeddings("test"), sd.embeddings("train")
    sim_all = (te @ tr.T) / np.outer(np.linalg.norm(te, axis=1), np.linalg.norm(tr, axis=1))
    nb = sd.neighbours().top1("test", "train")
    top1 = dict(zip(nb["query_index"].astype(int), nb["score"]))
    different = [c for c in _controls(cal) if c.truth == "different"]
    assert len(different) >= 3
    for c in different:
        s = sim_all[c.query_index, c.train_index]
        assert s < np.quantile(sim_all, 0.6) and s < top1[c.query_index] - 0.2
        assert p.sibling_of.get(c.query_id) != c.shown_id


def test_copies_are_light_and_repeatable():
    text = "The quick brown fox\njumps over the lazy dog."
    a, how = copy_text(text, np.random.default_rng([0, 5]))
    assert a == copy_text(text, np.random.default_rng([0, 5]))[0] and a != text and how.startswith("text: ")
    assert "\n" in a and abs(len(a.split()) - len(text.split())) <= 1
    v = np.array([1.0, 3.0, np.nan, -2.0, 0.5])
    c, _ = copy_values(v, np.random.default_rng(1))
    assert np.isnan(c[2]) and np.corrcoef(c[[0, 1, 3, 4]], v[[0, 1, 3, 4]])[0, 1] > 0.99 and not np.allclose(c[[0, 1]], v[[0, 1]])


def test_a_scan_with_exact_twins_gets_twin_controls_alternating_with_copies(tmp_path):
    from sibscan.store.neighbourtable import Neighbours

    p = planted_scan(tmp_path / "scan", n_train=300, n_test=150, seed=3, modality="text")
    sd = ScanDir(p.path)
    nb = sd.neighbours()
    cols = {c: np.asarray(v).copy() for c, v in nb.columns.items()}
    top = cols["rank"] == 0
    twins = np.flatnonzero(top)[:8]  # eight test items whose nearest train item is their exact copy
    cols["exact"][twins] = True
    sd.write_neighbours(Neighbours(cols), csv=False)
    fps = {s: np.stack([np.arange(n, dtype=np.uint64) + off, np.zeros(n, np.uint64)], axis=1)
           for s, n, off in (("test", 150, 10_000), ("train", 300, 0))}
    fps["test"][cols["query_index"][twins]] = fps["train"][cols["neighbour_index"][twins]]
    for s in ("test", "train"):
        sd.write_items(sd.items(s), fps[s])
    cal = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal, ui="none", n_pairs=40, controls=0.3)
    same = [c for c in sorted(_controls(cal), key=lambda c: c.slot) if c.truth == "same"]
    assert [c.kind for c in same][:4] == ["copy", "twin", "copy", "twin"]
    pairs = {(str(q), str(t)) for q, t in zip(cols["query_id"][twins], cols["neighbour_id"][twins])}
    assert all((c.query_id, c.shown_id) in pairs for c in same if c.kind == "twin")
    session = label_session(p.path, cal, controls=0.3)
    views = [session.view(i) for i in range(len(session))]
    assert len({v["left"]["id"] for v in views}) == len(views)


def test_a_chunked_text_scan_gets_controls_by_its_documents(tmp_path):
    """A chunked scan embeds several rows per document: the known-"different" pairs are found by each
    document's first chunk (as the baseline represents it), never by a chunk row taken for a document."""
    import pydoc_data.topics

    topics = sorted(pydoc_data.topics.topics.values(), key=len)[-40:]
    docs = [" ".join(t.split()[:200]) for t in topics]
    for name, part in (("train", docs[:28]), ("test", docs[28:])):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"id": f"{name}{i}", "text": t}) + "\n"
                                                        for i, t in enumerate(part)))
    res = CliRunner().invoke(app,
                             ["scan", "--train", str(tmp_path / "train.jsonl"), "--test", str(tmp_path / "test.jsonl"),
                                   "--id", "id", "--out", str(tmp_path / "scan"), "--encoder", "ngram",
                                   "--chunk-words", "50", "--no-verify", "--no-progress"])
    assert res.exit_code == 0, res.output
    sd = ScanDir(tmp_path / "scan")
    assert len(sd.embeddings("test")) > len(sd.items("test"))  # chunk rows, not documents
    calibrate(sd.path, calibration_dir=tmp_path / "cal", ui="none", n_pairs=4, controls=0.5)
    made = _controls(tmp_path / "cal")
    assert {c.truth for c in made} == {"same", "different"}
    from sibscan.calibration.flow import _doc_index

    splits = {s: sd.items(s) for s in ("train", "test")}
    first = {s: np.unique(d, return_index=True)[1] for s, d in _doc_index(sd.manifest(), splits).items()}
    te, tr = sd.embeddings("test")[first["test"]], sd.embeddings("train")[first["train"]]
    for c in made:
        assert c.query_id == str(splits["test"].ids[c.query_index])
        if c.kind == "random":
            a, b = te[c.query_index], tr[c.train_index]
            assert c.shown_id == str(splits["train"].ids[c.train_index])
            assert c.score == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)), abs=1e-5)


def test_on_a_verified_scan_a_random_control_reveals_no_similarity_as_its_score(tmp_path):
    """The score revealed after an answer is the deciding score: a verified scan's random control has none
    measured (its embedding similarity is another score), so none is shown."""
    p = planted_scan(tmp_path / "scan", n_train=300, n_test=150, seed=3, modality="text", verifier=True)
    with pytest.warns(UserWarning, match="no baseline.json"):  # the planted scan stops before its baseline
        calibrate(p.path, calibration_dir=tmp_path / "cal", ui="none", n_pairs=30, controls=0.3)
    random = [c for c in _controls(tmp_path / "cal") if c.kind == "random"]
    assert random and all(c.score is None for c in random)
