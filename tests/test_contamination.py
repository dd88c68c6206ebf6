"""Contamination audit, corpus side: n-gram hashing and index against brute force, provenance,
control thresholds, the combined verdict, bad input, and the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.contamination import ContaminationConfig, audit, build_index, controls_needed
from sibscan.contamination.combine import OperatingPoint, auc, combine_z, robust_z, weight_by_auc
from sibscan.contamination.examples import load_examples
from sibscan.contamination.labels import load_labels
from sibscan.contamination.overlap import overlap_with_sources
from sibscan.contamination.index import NgramIndex
from sibscan.errors import CompatibilityError, InputError, SibscanError
from sibscan.kernels.hashbuckets import bucket_lookup, bucket_pack, bucket_span, bucket_unpack
from sibscan.kernels.ngramhash import (batch_word_ids, longest_chained_run, longest_hit_run, ngram_hashes,
                                      ngram_position_tags, sorted_lookup, sorted_member)
from sibscan.kernels.textalign import tokenize

WORDS = [f"w{i}" for i in range(2000)]


def docs(rng, n, length):
    return [" ".join(rng.choice(WORDS, length)) for _ in range(n)]


def brute_ngrams(text, n):
    w = tokenize(text)
    return [tuple(w[i:i + n]) for i in range(len(w) - n + 1)]


def test_ngram_hashes_equal_iff_ngrams_equal():
    rng = np.random.default_rng(0)
    texts = docs(rng, 30, 25) + ["a b c d", "x y", "", "a b c d e"]
    ids, off = batch_word_ids(texts)
    h, starts = ngram_hashes(ids, off, 4)
    grams = [g for t in texts for g in brute_ngrams(t, 4)]
    assert len(h) == len(grams)  # no n-gram across a document boundary, none missing
    by_gram = {}
    for g, x in zip(grams, h.tolist()):
        assert by_gram.setdefault(g, x) == x
    assert len(set(by_gram.values())) == len(by_gram)  # distinct n-grams, distinct hashes
    # the same words give the same hash in another batch (stable ids, not per-batch vocabularies)
    ids2, off2 = batch_word_ids(["A B C D"])
    assert ngram_hashes(ids2, off2, 4)[0][0] == by_gram[("a", "b", "c", "d")]


def brute_longest_in_one_doc(text, corpus, n):
    """Longest run of the text's words (>= n) that occurs contiguously in one corpus document."""
    w = tokenize(text)
    padded = [" " + " ".join(tokenize(d)) + " " for d in corpus]
    best = 0
    for i in range(len(w)):
        k = best + 1
        while i + k <= len(w) and any(" " + " ".join(w[i:i + k]) + " " in d for d in padded):
            best, k = k, k + 1
    return best if best >= n else 0


def test_longest_hit_run_and_membership():
    assert longest_hit_run(np.array([0, 1, 1, 0, 1, 1, 1, 0], bool), 5) == (3 + 4, 4)
    assert longest_hit_run(np.zeros(4, bool), 5) == (0, 0)
    hit = np.array([0, 1, 1, 1, 1, 1, 0], bool)
    # tags step by one inside a document; a jump (another document) breaks the run
    assert longest_chained_run(hit, np.array([0, 7, 8, 9, 500, 501, 0], np.uint16), 5) == (3 + 4, 1)
    assert longest_chained_run(hit, np.array([0, 65534, 65535, 0, 1, 2, 0], np.uint16), 5) == (5 + 4, 1)  # wraps
    assert longest_chained_run(np.zeros(4, bool), np.zeros(4, np.uint16), 5) == (0, 0)
    table = np.sort(np.array([5, 9, 2**63 + 7], np.uint64))
    assert sorted_member(table, np.array([9, 10, 2**63 + 7, 0], np.uint64)).tolist() == [True, False, True, False]


def test_index_matches_brute_force_set(tmp_path):
    rng = np.random.default_rng(1)
    corpus = docs(rng, 120, 60)
    idx = build_index(corpus, tmp_path / "idx", n=5, shard_size=800, progress=False)
    assert len(idx.manifest["shards"]) > 3  # several shards: the range partition is exercised
    brute = {g for t in corpus for g in brute_ngrams(t, 5)}
    assert idx.n_stored == len(brute)  # distinct n-grams, each stored once across shards
    shards = idx.manifest["shards"]
    assert idx.manifest["format"] == "sibscan-ngram-index-v3"
    assert sum(np.load(idx.path / s["file"], mmap_mode="r").nbytes for s in shards) == 8 * idx.n_stored  # 48+16 bits
    # the bucket counts of the top 16 hash bits: 2**16 in all, one more per range boundary inside a bucket
    counts = [np.load(idx.path / s["buckets"]) for s in shards]
    assert sum(len(c) for c in counts) <= 2**16 + len(shards) - 1 and all(c.dtype == np.uint8 for c in counts)
    queries = docs(rng, 10, 30) + [corpus[7][:200]]
    res = overlap_with_sources(queries, {"c": idx})
    for text, r in zip(queries, res):
        grams = brute_ngrams(text, 5)
        hits = [g in brute for g in grams]
        assert r.per_source["c"].overlap_fraction == pytest.approx(np.mean(hits))
        assert r.per_source["c"].longest_match_tokens == brute_longest_in_one_doc(text, corpus, 5)
    assert res[-1].per_source["c"].overlap_fraction > 0.9


def test_position_tags_step_by_one_within_a_document():
    ids, off = batch_word_ids(["a b c d e f g", "x y", "a b c d e f g h i"])
    h, starts = ngram_hashes(ids, off, 3)
    tags = ngram_position_tags(h, starts, off).astype(np.int64)
    assert np.all((np.diff(tags[:5]) & 0xFFFF) == 1) and np.all((np.diff(tags[5:]) & 0xFFFF) == 1)
    assert (tags[5] - tags[4]) & 0xFFFF != 1  # the next document's tags do not continue the first's


def test_longest_run_never_joins_matches_from_different_documents(tmp_path):
    rng = np.random.default_rng(11)
    x = list(rng.choice(WORDS, 60))
    text = " ".join(x)
    a, b, other = " ".join(x[:30]), " ".join(x[20:60]), " ".join(rng.choice(WORDS, 50))
    idx = build_index([a, other, b], tmp_path / "idx", n=5, shard_size=40, progress=False)
    assert len(idx.manifest["shards"]) > 1
    m = overlap_with_sources([text], {"c": idx})[0].per_source["c"]
    assert m.overlap_fraction == 1.0  # every n-gram matches, in one document or the other ...
    assert longest_hit_run(np.ones(56, bool), 5)[0] == 60  # ... which chained blindly would read as 60 words
    # the longest passage in one document is b's 40 words; the n-grams of x[20:30] keep the tag of their
    # first occurrence (in a), so b's run is seen from x[26]: 34 words, at most the truth, never 60
    assert brute_longest_in_one_doc(text, [a, other, b], 5) == 40
    assert (m.longest_match_tokens, m.run_start) == (34, 26)
    # with b first, its n-grams are the first occurrences: the whole 40-word passage
    again = build_index([b, other, a], tmp_path / "idx2", n=5, shard_size=5, progress=False)
    r = overlap_with_sources([text], {"c": again})[0].per_source["c"]
    assert (r.longest_match_tokens, r.run_start) == (40, 20)


def test_index_reused_when_corpus_unchanged_and_rebuilt_when_changed(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("one two three four five six seven")
    first = build_index(folder, tmp_path / "idx", n=3, progress=False)
    t = (tmp_path / "idx" / "manifest.json").stat().st_mtime_ns
    again = build_index(folder, tmp_path / "idx", n=3, progress=False)
    assert (tmp_path / "idx" / "manifest.json").stat().st_mtime_ns == t and again.n_stored == first.n_stored
    (folder / "b.txt").write_text("eight nine ten eleven")
    assert build_index(folder, tmp_path / "idx", n=3, progress=False).n_stored == first.n_stored + 2
    with pytest.raises(SibscanError, match="built as"):
        build_index(folder, tmp_path / "idx", n=4, progress=False)


def test_bucketed_lookup_matches_sorted_lookup():
    rng = np.random.default_rng(5)
    top = 1 << 64
    for lo, hi in [(0, top), (top // 3, 2 * top // 3), (2 * top // 3, top), (5 << 48, (5 << 48) + 1000)]:
        span = hi - lo
        h = np.unique(np.array([lo + int(x) * span // 2**62 for x in rng.integers(0, 2**62, 3000)]
                               + [lo, hi - 1, lo + (1 << 48) - 1, lo + (1 << 48)], dtype=object)
                      .astype(np.uint64))
        h = h[(h >= np.uint64(lo)) & (h <= np.uint64(hi - 1))]
        tags = rng.integers(0, 2**16, len(h)).astype(np.uint16)
        first, n_buckets = bucket_span(lo, hi)
        counts, packed = bucket_pack(h, tags, first, n_buckets)
        assert packed.dtype == np.uint64 and len(packed) == len(h) and int(counts.sum()) == len(h)
        back = bucket_unpack(counts, packed, first)
        assert np.array_equal(back[0], h) and np.array_equal(back[1], tags)
        queries = np.concatenate([h, h + np.uint64(1), h - np.uint64(1),
                                  rng.integers(0, 2**63, 2000).astype(np.uint64) * 2,
                                  np.array([0, 2**64 - 1], np.uint64)])
        got, want = bucket_lookup(counts, packed, first, queries), sorted_lookup(h, tags, queries)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert got[0][:len(h)].all()
    # a bucket holding more than 255 entries widens the counts' dtype, and the lookup still matches
    h = np.arange(7 << 48, (7 << 48) + 3000, dtype=np.uint64)
    counts, packed = bucket_pack(h, np.zeros(3000, np.uint16), 0, 2**16)
    assert counts.dtype == np.uint16 and bucket_lookup(counts, packed, 0, h)[0].all()
    assert bucket_lookup(np.zeros(3, np.uint8), np.empty(0, np.uint64), 0, h)[0].sum() == 0


def test_flat_v2_index_still_read_with_identical_results(tmp_path):
    rng = np.random.default_rng(6)
    corpus = docs(rng, 80, 60)
    new = build_index(corpus, tmp_path / "v3", n=5, shard_size=700, progress=False)
    old = build_index(corpus, tmp_path / "v2", n=5, shard_size=700, progress=False, layout="flat")
    assert (new.manifest["format"], old.manifest["format"]) == ("sibscan-ngram-index-v3", "sibscan-ngram-index-v2")
    assert new.manifest["shards"][0].keys() != old.manifest["shards"][0].keys() and len(new.manifest["shards"]) > 2
    for s_new, s_old in zip(new.manifest["shards"], old.manifest["shards"]):
        a, b = new.layout.read(new.path, s_new), old.layout.read(old.path, s_old)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    # payload: 8 bytes per n-gram plus one byte per bucket count (a fixed 2**16 + boundaries per index:
    # smaller than flat's 2 extra bytes per n-gram from 2**15 n-grams up, so not for this tiny corpus)
    def payload(ix):
        return sum(np.load(ix.path / f, mmap_mode="r").nbytes for s in ix.manifest["shards"]
                   for f in ix.layout.files(s))
    n_counts = sum(len(np.load(new.path / s["buckets"])) for s in new.manifest["shards"])
    assert payload(new) == 8 * new.n_stored + n_counts and payload(old) == 10 * old.n_stored
    assert n_counts <= 2**16 + len(new.manifest["shards"]) - 1
    queries = docs(rng, 10, 30) + [corpus[3][:300], " ".join(corpus[5].split()[10:50])]
    r_new, r_old = overlap_with_sources(queries, {"c": new}), overlap_with_sources(queries, {"c": old})
    assert [x.per_source for x in r_new] == [x.per_source for x in r_old]
    assert r_new[-1].per_source["c"].longest_match_tokens == 40
    # the index cache: the same corpus in the old format is rebuilt in the new one
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text(corpus[0])
    build_index(folder, tmp_path / "cache", n=5, progress=False, layout="flat")
    assert build_index(folder, tmp_path / "cache", n=5, progress=False).manifest["format"] == "sibscan-ngram-index-v3"
    with pytest.raises(SibscanError, match="unknown index layout 'dense'; available: bucketed, flat"):
        build_index(folder, tmp_path / "x", n=5, progress=False, layout="dense")


def test_unreadable_index_format_refused_in_one_line(tmp_path):
    idx = build_index(docs(np.random.default_rng(7), 5, 20), tmp_path / "idx", n=3, progress=False)
    mf = idx.path / "manifest.json"
    mf.write_text(mf.read_text().replace("sibscan-ngram-index-v3", "sibscan-ngram-index-v1"))
    with pytest.raises(CompatibilityError) as err:
        NgramIndex(idx.path)
    assert "\n" not in str(err.value) and "'sibscan-ngram-index-v1' is not readable" in str(err.value)
    assert "rebuild it" in str(err.value)
    result = CliRunner().invoke(app, ["contamination", "--examples", str(_examples_file(tmp_path)),
                                      "--corpus", str(idx.path)])
    assert result.exit_code == 1 and "rebuild it" in result.output and "Traceback" not in result.output


def _examples_file(tmp_path):
    f = tmp_path / "ex.jsonl"
    f.write_text(json.dumps({"id": "a", "text": "w1 w2 w3 w4 w5 w6"}) + "\n")
    return f


def test_provenance_per_source_and_unscorable_listed():
    rng = np.random.default_rng(2)
    train, held = docs(rng, 40, 80), docs(rng, 40, 80)
    examples = {"clean": " ".join(rng.choice(WORDS, 50)), "train_leak": train[3], "test_leak": held[5],
                "short": "only five words here now"}
    r = audit(examples, sources={"train": train, "test": held}, config=ContaminationConfig(n=8), progress=False)
    recs = {x["example_id"]: x for x in r.to_dict()["examples"]}
    assert recs["train_leak"]["best_source"] == "train" and recs["train_leak"]["matched_sources"] == ["train"]
    assert recs["test_leak"]["best_source"] == "test"
    assert recs["test_leak"]["per_source"]["test"] == {"overlap_fraction": 1.0, "longest_match_tokens": 80}
    assert recs["test_leak"]["per_source"]["train"]["overlap_fraction"] == 0.0
    assert recs["clean"]["flagged"] is False and recs["train_leak"]["flagged"] is True
    assert "overlap:train" in recs["train_leak"]["reasons"] and "overlap:test" in recs["test_leak"]["reasons"]
    # shorter than n: not scorable, no verdict, listed — never counted as clean
    assert recs["short"]["scorable"] is False and recs["short"]["flagged"] is None
    assert recs["short"]["overlap_fraction"] is None
    d = r.to_dict()
    assert d["unscorable"] == ["short"] and d["summary"]["flagged"]["n"] == 3
    # without named sources: no provenance
    plain = audit(examples, corpus=train, config=ContaminationConfig(n=8), progress=False).to_dict()["examples"]
    assert all(x["best_source"] is None and x["per_source"] == {} for x in plain)


def test_control_threshold_and_required_count():
    assert controls_needed(99) == 299 and controls_needed(95) == 59
    rng = np.random.default_rng(3)
    phrases = [" ".join(rng.choice(WORDS, 12)) for _ in range(100)]  # shared innocent phrases

    def text(k=10):
        return " ".join(rng.choice(phrases, k))

    corpus = [text() for _ in range(200)]
    controls = [text() for _ in range(40)]
    examples = {f"c{i}": text() for i in range(30)}
    examples["leak"] = corpus[0]
    cfg = ContaminationConfig(n=4, overlap_floor=0.7)
    plain = audit(examples, sources={"web": corpus}, config=cfg, progress=False)
    # innocent phrases push clean texts over the absolute floor ...
    assert sum(bool(f) for f in plain.flagged) > 10
    cal = audit(examples, sources={"web": corpus}, controls={"web": controls}, config=cfg, progress=False)
    src = cal.to_dict()["sources"]["web"]
    assert src["threshold_from"] == "controls" and src["controls"]["n_controls"] == 40
    assert src["controls"]["is_well_estimated"] is False and src["controls"]["n_needed"] == 299
    # ... the control threshold does not flag them, and still flags the verbatim copy
    recs = {x["example_id"]: x for x in cal.to_dict()["examples"]}
    assert recs["leak"]["flagged"] is True
    assert sum(bool(x["flagged"]) for k, x in recs.items() if k != "leak") <= 2


def test_robust_z_auc_weights_and_prevalence():
    x = np.array([0.0] * 18 + [0.5, np.nan])
    z = robust_z(x)
    assert np.isnan(z[-1]) and z[18] > 3 and (z[:18] == z[0]).all()
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert auc([1, 1, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.5)  # ties count half
    assert weight_by_auc({"a": 0.9, "b": 0.5, "c": 0.3, "d": None}) == pytest.approx({"a": 0.8, "b": 0, "c": 0, "d": 0})
    # direction matters: perplexity is lower for members; combining without the sign cancels the signal
    members = np.array([1] * 5 + [0] * 15, bool)
    ppl = np.where(members, 5.0, 20.0) + np.arange(20) * 0.01
    minkpp = np.where(members, 2.0, -1.0) + np.arange(20) * 0.01
    zc = combine_z({"perplexity": ppl, "min_k_pp": minkpp}, methods=("perplexity", "min_k_pp"))["combined"]
    assert auc(zc, members) == 1.0
    op = OperatingPoint(tpr=0.9, fpr=0.05, n_positive=10, n_negative=100)
    assert op.precision_at_prevalence(0.01) == pytest.approx(0.009 / (0.009 + 0.0495))
    assert op.review_queue_size(10_000, 0.01) == pytest.approx(10_000 * (0.009 + 0.0495))


def test_absolute_floor_flags_when_most_leaked():
    # 80 % of the benchmark leaked: the median is a leak, z-scores alone would flag almost nothing
    rng = np.random.default_rng(4)
    corpus = docs(rng, 50, 60)
    ex = {f"l{i}": corpus[i] for i in range(16)}
    ex.update({f"c{i}": " ".join(rng.choice(WORDS, 60)) for i in range(4)})
    r = audit(ex, corpus=corpus, config=ContaminationConfig(n=8), progress=False)
    recs = {x["example_id"]: x for x in r.to_dict()["examples"]}
    assert all(recs[f"l{i}"]["flagged"] for i in range(16))
    assert not any("z" in recs[f"l{i}"]["reasons"] for i in range(16))


def test_labels_give_auc_and_operating_point():
    rng = np.random.default_rng(5)
    corpus = docs(rng, 30, 50)
    ex = {f"l{i}": corpus[i] for i in range(5)}
    ex.update({f"c{i}": " ".join(rng.choice(WORDS, 50)) for i in range(15)})
    labels = {k: k.startswith("l") for k in ex}
    d = audit(ex, corpus=corpus, labels=labels, config=ContaminationConfig(n=8, prevalence=0.01),
              progress=False).to_dict()
    ev = d["evaluation"]
    assert ev["auc"]["overlap_fraction"] == 1.0 and ev["n_contaminated"] == 5
    assert ev["flags"]["tpr"] == 1.0 and ev["flags"]["fpr"] == 0.0 and ev["flags"]["precision_at_prevalence"] == 1.0
    with pytest.raises(InputError, match="unknown example id"):
        audit(ex, corpus=corpus, labels={"nope": True}, progress=False)


def test_bad_labels_name_the_file_and_its_line(tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", [{"id": f"e{i}", "text": f"w{i} w1 w2 w3 w4 w5"} for i in range(3)])
    corpus = tmp_path / "c.txt"
    corpus.write_text("w1 w2 w3 w4 w5 w6 w7")
    bad_value = tmp_path / "labels.csv"
    bad_value.write_text("id,contaminated\ne0,1\ne1,maybe\n")  # the bad cell is on line 3
    (tmp_path / "labels.jsonl").write_text('{"id": "e0", "contaminated": 1}\n\n{"id": "e1", "contaminated": 0}\n'
                                           '{"id": "e9", "contaminated": 1}\n')  # unknown id on line 4
    runner = CliRunner()
    for f, want in ((bad_value, "labels.csv, row 3: label 'maybe' is not one of"),
                    (tmp_path / "labels.jsonl", "labels.jsonl, row 4: label for unknown example id 'e9'")):
        res = runner.invoke(app, ["contamination", str(bench), "--corpus", str(corpus), "--labels", str(f),
                                  "--work", str(tmp_path / "work"), "--quiet"])
        assert res.exit_code == 1 and want in res.output and "Traceback" not in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1
    with pytest.raises(InputError, match="labels, row 2: label for unknown example id 'nope'"):
        load_labels({"e0": True, "nope": False}, load_examples(bench))


def test_bad_examples_are_refused(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no examples"):
        load_examples(empty)
    no_id = tmp_path / "noid.jsonl"
    no_id.write_text('{"text": "a b c"}\n')
    with pytest.raises(InputError, match="no id column"):
        load_examples(no_id)
    blank_id = tmp_path / "blank.jsonl"
    blank_id.write_text('{"id": "a", "text": "x y"}\n{"id": "", "text": "a b c"}\n')
    with pytest.raises(InputError, match="row 2: no id in column .id.; give every record its own .id."):
        load_examples(blank_id)
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(InputError, match="duplicate id 'a'"):
        load_examples(dup)
    some_empty = tmp_path / "some.jsonl"
    some_empty.write_text('{"id": "a", "text": "x y z"}\n{"id": "b", "text": "  "}\n')
    ex = load_examples(some_empty)
    assert ex.ids == ["a"] and len(ex.skipped) == 1 and "empty text" in ex.skipped[0].reason


def test_non_utf8_corpus_files_skipped_with_offset(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "good.txt").write_text("alpha beta gamma delta epsilon")
    (folder / "bad.txt").write_bytes(b"alpha beta \xff gamma")
    mixed = b'{"text": "one two three"}\n{"text": "caf\xe9 x"}\n{"text": "four five six"}\n'
    (folder / "mixed.jsonl").write_bytes(mixed)
    idx = build_index(folder, tmp_path / "idx", n=2, progress=False)
    skipped = {(s["path"].rsplit("/", 1)[-1], s["offset"]) for s in idx.manifest["skipped"]}
    assert skipped == {("bad.txt", 11), ("mixed.jsonl", mixed.index(b"\xe9"))}
    assert idx.manifest["n_docs"] == 3  # good.txt and two JSONL lines


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_table_json_html_and_errors(tmp_path):
    rng = np.random.default_rng(6)
    corpus_docs = docs(rng, 40, 60)
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_jsonl(folder / "part.jsonl", [{"text": t} for t in corpus_docs])
    bench = write_jsonl(tmp_path / "bench.jsonl", [{"id": f"e{i}", "text": " ".join(rng.choice(WORDS, 40))}
                                                   for i in range(10)] + [{"id": "leak", "text": corpus_docs[2]}])
    runner = CliRunner()
    work = ["--work", str(tmp_path / "work"), "--quiet"]
    res = runner.invoke(app, ["contamination", "--examples", str(bench), "--corpus", str(folder), *work])
    assert res.exit_code == 0, res.output
    first = res.output.splitlines()[:2]
    assert first[0].split() == ["example", "overlap", "run", "z", "flag"] and first[1].startswith("leak")
    res = runner.invoke(app, ["contamination", str(bench), "--source", f"web={folder}", "--json",
                              "--html", str(tmp_path / "r.html"), *work])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    leak = next(x for x in d["examples"] if x["example_id"] == "leak")
    assert leak["best_source"] == "web" and leak["flagged"] is True and leak["longest_match_tokens"] == 60
    assert set(leak) >= {"example_id", "scorable", "overlap_fraction", "longest_match_tokens", "flagged",
                         "best_source", "per_source"}
    assert "<mark>" in (tmp_path / "r.html").read_text()
    # bad input: one line, exit 1, no traceback
    dup = write_jsonl(tmp_path / "dup.jsonl", [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}])
    res = runner.invoke(app, ["contamination", str(dup), "--corpus", str(folder), *work])
    assert res.exit_code == 1 and "duplicate id 'a'" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["contamination", str(bench), "--source", "web", *work])
    assert res.exit_code == 1 and "NAME=PATH" in res.output
    fresh = tmp_path / "fresh"
    res = runner.invoke(app, ["contamination", str(bench), "--corpus", str(folder), "--engine", "spark",
                              "--work", str(fresh)], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "'spark' is not one of 'local', 'ray'" in res.output  # a parser choice
    assert not fresh.exists()  # options are checked before anything is read or written
    res = runner.invoke(app, ["contamination", "--help"])
    assert "[default: 13]" in " ".join(res.output.split())
