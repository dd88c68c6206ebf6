"""Issue 32, items 1 and 6: the contamination audit on a corpus of nothing, and provenance where there is none.

An empty corpus file gave every overlap 0.00 and "0 flagged" without a word (an empty folder was
refused); an example matching no source was given the first source as ``best_source``.
"""
from __future__ import annotations

import json

import pytest

from rel_helpers import assert_one_line_error, cli
from sibscan.contamination import build_index

WORDS = "the quick brown fox jumps over the lazy dog while seven wizards quietly hex every jolly bat".split()


def _examples(path, texts):
    path.write_text("".join(json.dumps({"id": f"e{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    return path


@pytest.mark.parametrize("content, needles", [
    (b"", ("empty.txt", "no text", "every overlap would be 0")),
    (b"\xff\xfe not utf-8", ("empty.txt", "no text", "not valid UTF-8")),
    (b"three short words", ("empty.txt", "no corpus document has 13 words", "smaller n (--n)")),
])
def test_corpus_with_no_ngram_is_refused(tmp_path, content, needles):
    (tmp_path / "empty.txt").write_bytes(content)
    examples = _examples(tmp_path / "ex.jsonl", [" ".join(WORDS)])
    result = cli("contamination", examples, "--corpus", tmp_path / "empty.txt", "--work", tmp_path / "work")
    assert_one_line_error(result, *needles)


def test_python_api_refuses_an_empty_iterable_corpus(tmp_path):
    with pytest.raises(ValueError, match="corpus: the corpus holds no text"):
        build_index([], tmp_path / "idx", n=5, progress=False)


def test_best_source_is_empty_where_no_source_matched(tmp_path):
    text = " ".join(WORDS)
    (tmp_path / "a.txt").write_text("nothing alike here " * 20)
    (tmp_path / "b.txt").write_text(text)
    examples = _examples(tmp_path / "ex.jsonl", [text, " ".join(reversed(WORDS))])
    args = ("contamination", examples, "--source", f"A={tmp_path / 'a.txt'}", "--source", f"B={tmp_path / 'b.txt'}",
            "--n", "5", "--work", tmp_path / "work")
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    recs = {r["example_id"]: r for r in json.loads(result.stdout)["examples"]}
    assert recs["e0"]["best_source"] == "B" and recs["e0"]["matched_sources"] == ["B"]
    assert recs["e1"]["matched_sources"] == [] and recs["e1"]["best_source"] is None
    assert recs["e1"]["overlap_fraction"] == 0.0  # measured: no n-gram found anywhere, not "n/a"
    table = cli(*args)
    row = next(line for line in table.stdout.splitlines() if line.startswith("e1 "))
    assert "—" in row.split() and "A" not in row.split()
