"""Definitions travel with labels (issue 30): an imported labels file keeps the definition of "same" it was made
under (in labels.jsonl and cutoff.json, and so in every output), and a calibration whose definition differs from
the answers' says so with both wordings, one line each — never the default in their place."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from _helpers import oracle_file, read_labels, write_jsonl

from sibscan.calibration import DEFINITIONS, calibrate, describe, load_calibration
from sibscan.calibration.summary import headline_of
from planted_scan import planted_scan
from sibscan.report import build_report, render_markdown

MINE = "the same row of values after a rescale, a shift or a little noise; a different row is never the same"
OTHER = "the same measurement session, whatever the values"


@pytest.fixture
def planted(tmp_path):
    planted = planted_scan(tmp_path / "scan", n_train=300, n_test=150, rate=0.1, seed=3)
    calibrate(planted.path, ui="none", n_pairs=60)  # the draw, made under the default definition
    return planted


def _import(planted, labels, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = calibrate(planted.path, ui="none", n_pairs=60, labels=labels, **kw)
    return cal, [str(w.message) for w in caught if "definition of 'same'" in str(w.message)]


def test_an_imported_file_keeps_the_definition_it_was_made_under(planted, tmp_path):
    labels = oracle_file(tmp_path, planted, planted.path / "calibration", definition=MINE)
    cal, said = _import(planted, labels)
    # on the old code: the default definition for tables, with a warning that the answers differ from it
    assert cal.extra["definition"] == MINE and cal.extra["definition_source"] == "the answers" and said == []
    on_disk = json.loads((planted.path / "calibration" / "cutoff.json").read_text())
    assert on_disk["definition"] == MINE and on_disk["definitions"] == {MINE: 60}
    assert {r["definition"] for r in read_labels(planted.path / "calibration")} == {MINE}  # kept with every answer
    assert f"('same' means: {MINE})" in describe(cal, headline_of(planted.path, cal))[1]
    rep = build_report(planted.path)
    assert rep["headline"]["definition"] == rep["cutoff"]["definition"] == MINE
    assert f"'Same' means: {MINE}." in render_markdown(rep)
    # a later run without --definition keeps it; new answers are recorded under it
    again, said = _import(planted, None)
    assert again.extra["definition"] == MINE and said == []


def test_a_definition_given_against_the_answers_shows_both_wordings(planted, tmp_path):
    labels = oracle_file(tmp_path, planted, planted.path / "calibration", definition=OTHER)
    # the console command, as a person sees the warning (one "warning:" line, then one line per wording)
    r = subprocess.run([sys.executable, "-m", "sibscan", "calibrate", str(planted.path), "--ui", "none", "--labels",
                        str(labels), "--definition", MINE], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    start = lines.index("warning: the definition of 'same' differs (cutoff.json lists every definition answers were "
                        "given under; the estimate mixes them):")
    assert lines[start + 1:start + 3] == [f"  this calibration's (from --definition): {MINE!r}",
                                          f"  60 answers were given under: {OTHER!r}"]
    cal = load_calibration(planted.path / "calibration")
    assert cal.extra["definition"] == MINE and cal.extra["definitions"] == {OTHER: 60}
    # the wording given with --definition stays the calibration's in later runs, and the mismatch is said again
    again, said = _import(planted, None)
    assert again.extra["definition"] == MINE and again.extra["definition_source"] == "--definition"
    assert len(said) == 1 and f"60 answers were given under: {OTHER!r}" in said[0]


def test_answers_under_two_definitions_keep_the_most_answered_and_name_the_other(planted, tmp_path):
    labels = oracle_file(tmp_path, planted, planted.path / "calibration", definition=MINE)
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    for r in rows[:5]:
        r["definition"] = OTHER
    write_jsonl(labels, rows)
    cal, said = _import(planted, labels)
    assert cal.extra["definition"] == MINE and cal.extra["definitions"] == {MINE: 55, OTHER: 5}
    assert len(said) == 1 and said[0].splitlines()[1:] == [f"  this calibration's (from the answers): {MINE!r}",
                                                           f"  5 answers were given under: {OTHER!r}"]


def test_answers_without_a_definition_leave_the_draws(planted, tmp_path):
    labels = oracle_file(tmp_path, planted, planted.path / "calibration")  # no definition field
    cal, said = _import(planted, labels)
    assert cal.extra["definition"] == DEFINITIONS["table"] and cal.extra["definition_source"] == "the draw" and said == []
