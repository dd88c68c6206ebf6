"""Who labelled a calibration, said in every output: "hand labels" for a person's answers, "oracle labels"
for answers written from the planted truth (records with ``"labeller": "oracle"``)."""
from __future__ import annotations

import json

from _helpers import oracle_file, write_jsonl
from typer.testing import CliRunner

from sibscan import labeller
from sibscan.calibration import calibrate, load_calibration
from planted_scan import planted_scan
from sibscan.cli import app
from sibscan.report import build_report, render_markdown


def test_the_kind_of_a_set_of_answers():
    assert labeller.of_records([{"labeller": "oracle"}, {"labeller": " Oracle "}]) == "oracle"
    assert labeller.of_records([{"labeller": "alice"}, {}]) == "hand"  # a login name, or none: a person
    assert labeller.of_records([{"labeller": "oracle"}, {"labeller": "alice"}]) == "hand and oracle"
    assert labeller.of_records([]) == "hand"
    assert [labeller.noun(k) for k in (None, "hand", "oracle")] == ["hand labels", "hand labels", "oracle labels"]
    assert [labeller.by(k) for k in (None, "oracle", "hand and oracle")] == ["by hand", "by the oracle", "by hand or by the oracle"]


def _planted(tmp_path):
    planted = planted_scan(tmp_path / "scan", n_train=300, n_test=150, rate=0.1, seed=3)
    # 60 pairs: at 40 the oracle's answers hold 4 'same' and do not support the cutoff (state needs_labels,
    # tests/test_needs_labels.py), which the words checked here are not about
    calibrate(planted.path, ui="none", n_pairs=60)
    return planted


def test_a_calibration_from_oracle_answers_says_oracle_labels_everywhere(tmp_path):
    planted = _planted(tmp_path)
    labels = oracle_file(tmp_path, planted, planted.path / "calibration", labeller="oracle")
    res = CliRunner().invoke(app,
                             ["calibrate", str(planted.path), "--ui", "none", "--n-pairs", "60", "--labels",
                              str(labels)])
    assert res.exit_code == 0, res.output
    cal = load_calibration(planted.path / "calibration")
    used = cal.extra["n_labels_used"]
    assert cal.extra["labeller"] == "oracle"
    assert json.loads((planted.path / "calibration" / "cutoff.json").read_text())["labeller"] == "oracle"
    assert f"calibrated with {used} oracle labels" in res.stdout and "hand label" not in res.stdout
    assert f"oracle labels: {cal.n_labels['same']} same" in res.stdout
    rep = build_report(planted.path)
    assert rep["headline"]["labeller"] == "oracle" and rep["cutoff"]["labeller"] == "oracle"
    assert "P(same) of the oracle labels" in rep["headline"]["text"]
    md = render_markdown(rep)
    assert f"calibrated with {used} oracle labels" in md and "hand label" not in md
    chk = CliRunner().invoke(app, ["check", str(planted.path), "--max-rate", "0.9"])
    assert chk.exit_code == 0 and f"calibrated with {used} oracle labels" in chk.stdout, chk.output


def test_answers_without_the_field_are_a_persons(tmp_path):
    planted = _planted(tmp_path)
    labels = oracle_file(tmp_path, planted, planted.path / "calibration")  # no labeller field
    calibrate(planted.path, ui="none", n_pairs=60, labels=labels)
    cal = load_calibration(planted.path / "calibration")
    assert cal.extra["labeller"] == "hand"
    head = build_report(planted.path)["headline"]
    assert f"calibrated with {head['n_labels']} hand labels" in head["text"]
    # a calibration written before the field (no 'labeller' in cutoff.json) reads as hand labels
    path = planted.path / "calibration" / "cutoff.json"
    rec = json.loads(path.read_text())
    del rec["labeller"]
    path.write_text(json.dumps(rec))
    head = build_report(planted.path)["headline"]
    assert head["labeller"] is None and f"calibrated with {head['n_labels']} hand labels" in head["text"]


def test_a_mix_of_oracle_and_hand_answers_says_both(tmp_path):
    planted = _planted(tmp_path)
    labels = oracle_file(tmp_path, planted, planted.path / "calibration", labeller="oracle")
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    rows[0]["labeller"] = "alice"
    write_jsonl(labels, rows)
    calibrate(planted.path, ui="none", n_pairs=60, labels=labels)
    head = build_report(planted.path)["headline"]
    assert f"calibrated with {head['n_labels']} hand and oracle labels" in head["text"]


def test_every_page_that_describes_the_kept_demo_calibration_says_oracle_labels():
    """The kept demo-series calibration was made from the planted truth: a README or docs paragraph, or the
    preset's comment, that speaks of it (names demo-series and a calibration) says "oracle"."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md")),
             root / "configs" / "sibscan" / "configs" / "demo-series.toml"]
    speaking = []
    for page in pages:
        for para in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            # a calibration spoken of, not a folder or module path (OUT/calibration/, sibscan.calibration.flow)
            if "demo-series" in para and re.search(r"(?<![/.\w])calibrat\w*(?![/.\w])", para, re.I):
                speaking.append((page.relative_to(root), para))
    assert len(speaking) >= 4, [str(p) for p, _ in speaking]  # README's audit demo, docs, the preset
    silent = [f"{page}: {para[:200]}" for page, para in speaking if "oracle" not in para]
    assert not silent, "\n\n".join(silent)
