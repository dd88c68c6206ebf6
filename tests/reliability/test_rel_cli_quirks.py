"""Issue 32, the smaller things seen in the same runs: a closed output pipe, --quiet and audit's
warning, text records' label column, the contamination work folder and terminal table."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from rel_helpers import FAST, cli


def test_a_closed_output_pipe_ends_quietly(tables):
    """``sibscan report DIR | head -1`` printed "error: Broken pipe"; now nothing on stderr, SIGPIPE's status."""
    out = tables / "scan"
    assert cli("scan", tables / "train.csv", tables / "test.csv", "--out", out, *FAST).exit_code == 0
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line: every write meets EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "sibscan", "report", str(out)], stdout=w,
                              stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(w)
    assert proc.stderr.decode() == "", proc.stderr.decode()
    assert proc.returncode == 141


def test_quiet_silences_audits_runs_warning(tmp_path):
    ids = [f"s{i}" for i in range(40)]
    rng = np.random.default_rng(0)
    y = rng.normal(size=40)
    (tmp_path / "t.csv").write_text("id,target\n" + "".join(f"{i},{v!r}\n" for i, v in zip(ids, y)))
    (tmp_path / "p.csv").write_text("id,prediction\n" + "".join(f"{i},{v + 0.3!r}\n" for i, v in zip(ids, y)))
    loud = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv")
    assert "only 1 run" in loud.stderr
    quiet = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv", "-q")
    assert quiet.exit_code == loud.exit_code and quiet.stderr == "", quiet.stderr
    as_json = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv", "-q", "--json")
    assert any("only 1 run" in w for w in json.loads(as_json.stdout)["warnings"])  # still in the result


def _texts(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_twins_reads_a_text_records_label_field_as_its_help_says(tmp_path):
    """``twins train.jsonl test.jsonl`` said "no label checks" beside a ``label`` field; --help says a
    column named label is the default (as for tables and in-memory columns)."""
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    train = [{"id": f"a{i}", "text": " ".join(words[i:] + words[:i]) + f" item {i}", "label": i % 2} for i in range(12)]
    test = [{"id": f"b{i}", "text": train[i]["text"], "label": 1 - i % 2} for i in range(3)]  # copies, other label
    test += [{"id": "b9", "text": "something else entirely", "label": 0}]
    a, b = _texts(tmp_path / "train.jsonl", train), _texts(tmp_path / "test.jsonl", test)
    default = cli("twins", a, b, "--json")
    named = cli("twins", a, b, "--json", "--label", "label")
    assert default.exit_code == 0 and named.exit_code == 0, default.output + named.output
    assert "no label checks" not in cli("twins", a, b).output
    got, want = json.loads(default.stdout), json.loads(named.stdout)
    assert got == want
    assert got["test_rows_with_train_twin"] == 3 and got["test_twins_without_same_label_train_twin"] == 3


def test_a_scan_of_text_records_carries_their_label_field(tmp_path):
    from sibscan.loaders import load

    rows = [{"text": f"text number {i}", "Class": "x" if i % 2 else "y"} for i in range(4)]
    items = load(_texts(tmp_path / "t.jsonl", rows), "train")
    assert items.labels.tolist() == ["y", "x", "y", "x"]
    from sibscan.loaders.records import label_field  # the one rule: text records, listings, tables, memory

    assert label_field(["path", "target"], ("path",)) == "target"
    assert label_field(["text", "label"], ("label",)) is None  # a column in use is not the label


def _corpus(tmp_path):
    words = [f"w{i}" for i in range(60)]
    (tmp_path / "corpus.txt").write_text(" ".join(words) + "\n" + " ".join(reversed(words)) + "\n")
    examples = [{"id": "leak", "text": " ".join(words[5:30])}, {"id": "clean", "text": " ".join(f"z{i}" for i in range(25))},
                {"id": "short", "text": "w1 w2"}]
    return tmp_path / "corpus.txt", _texts(tmp_path / "ex.jsonl", examples)


def test_contamination_with_another_n_in_the_same_work_folder_builds_its_index(tmp_path):
    """Changing --n with one --work was refused with advice to use an --index option contamination lacks."""
    corpus, ex = _corpus(tmp_path)
    work = tmp_path / "work"
    for n in ("8", "5", "8"):
        result = cli("contamination", ex, "--corpus", corpus, "--work", work, "--n", n, "--json", "-q")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["sources"]["corpus"]["n"] == int(n)
    assert "--index" not in result.output


def test_contamination_table_shows_thresholds_and_label_results_with_their_denominators(tmp_path):
    """The terminal table left out the control thresholds and the --labels results that --json/--html
    give, and the flags' recall is over the labelled examples with a verdict: now said."""
    corpus, ex = _corpus(tmp_path)
    controls = _texts(tmp_path / "controls.jsonl", [{"text": " ".join(f"c{i}_{j}" for j in range(20))} for i in range(5)])
    labels = tmp_path / "labels.csv"
    labels.write_text("id,contaminated\nleak,1\nclean,0\nshort,1\n")
    args = (ex, "--corpus", corpus, "--work", tmp_path / "work", "--n", "8", "--control", f"corpus={controls}",
            "--labels", labels, "-q")
    table = cli("contamination", *args)
    assert table.exit_code == 0, table.output
    data = json.loads(cli("contamination", *args, "--json").stdout)
    th = data["sources"]["corpus"]
    assert f"source corpus: flagged at overlap > {th['overlap_threshold']:.3f}" in table.stdout
    assert f"of {th['controls']['n_controls']} control texts" in table.stdout
    fl = data["evaluation"]["flags"]
    assert data["evaluation"]["n_without_verdict"] == 1  # "short": fewer than n words
    assert (fl["n_positive"], fl["n_negative"]) == (1, 1)
    assert f"recall {fl['tpr']:.3f} (of 1 contaminated)" in table.stdout
    assert "1 labelled example(s) without a verdict (shorter than n words) left out" in table.stdout
    assert "AUC:" in table.stdout


def test_audit_md_says_which_predictions_accuracy_is_over_and_why(tmp_path):
    """A missing prediction leaves the denominator, a NaN one counts as wrong: said in audit.md's metrics."""
    ids = [f"s{i}" for i in range(10)]
    (tmp_path / "t.csv").write_text("id,target\n" + "".join(f"{i},{k % 2}\n" for k, i in enumerate(ids)))
    preds = [str(k % 2) for k in range(10)]
    preds[0] = "nan"
    rows = [f"{i},{p}\n" for i, p in zip(ids, preds)][:-1]  # s9 has no prediction
    (tmp_path / "p.csv").write_text("id,prediction\n" + "".join(rows))
    result = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv", "--out", tmp_path / "a", "--json")
    acc = json.loads(result.stdout)["metrics"]["accuracy"]
    assert acc["mean"] == 8 / 9  # 9 scored (s9 left out), the NaN one wrong
    md = (tmp_path / "a" / "audit.md").read_text()
    assert "`accuracy` is over the test items with a prediction: a missing one" in md
    assert "a NaN or empty prediction is an answer, and a wrong one" in md


def test_audit_terminal_says_which_predictions_accuracy_is_over_when_one_is_missing_or_nan(tmp_path):
    """The rule audit.md states (metrics.SCORED_SAMPLES) printed under the terminal's metrics too, where a
    missing or NaN prediction makes it matter; nothing when every prediction is there and a number."""
    ids = [f"s{i}" for i in range(10)]
    (tmp_path / "t.csv").write_text("id,target\n" + "".join(f"{i},{k % 2}\n" for k, i in enumerate(ids)))
    preds = [str(k % 2) for k in range(10)]
    preds[0] = "nan"
    (tmp_path / "p.csv").write_text("id,prediction\n" + "".join(f"{i},{p}\n" for i, p in zip(ids, preds)))
    (tmp_path / "ok.csv").write_text("id,prediction\n" + "".join(f"{i},{k % 2}\n" for k, i in enumerate(ids)))
    nan = cli("audit", tmp_path / "p.csv", "--targets", tmp_path / "t.csv", "-q")
    assert nan.exit_code == 1, nan.output
    assert "accuracy and macro_f1 are over the test items with a prediction: a missing one" in nan.stdout
    assert "a NaN or empty prediction is an answer, and a wrong one" in nan.stdout
    ok = cli("audit", tmp_path / "ok.csv", "--targets", tmp_path / "t.csv", "-q", "--max-agreement", "1")
    assert "over the test items with a prediction" not in ok.stdout, ok.stdout
