"""Contamination audit, model side: Min-K%/Min-K%++ statistics against a float64 reference on a
random-initialised tiny Llama (built here, no download), the Zipf pitfall, guided prompting's
LCS F1, an OpenAI-compatible endpoint served locally (log-probs, time-out, missing log-probs,
resume), and one slow test on the real SmolLM2 GGUF."""
from __future__ import annotations

import inspect
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from sibscan.contamination import ContaminationConfig, audit, lcs_prf, min_k_scores
from sibscan.contamination.endpoint import CompletionsEndpoint
from sibscan.contamination.guided import split_prefix
from sibscan.contamination.minkprob import distribution_stats_numpy
from sibscan.errors import SibscanError

WORDS = [f"tok{i}" for i in range(60)]


def test_zipf_pitfall_mu_and_sigma_are_expectations_under_p():
    torch = pytest.importorskip("torch")
    from sibscan.contamination.minkprob import distribution_stats

    v = np.arange(1, 50_001, dtype=np.float64)
    p = v ** -1.2
    p /= p.sum()
    logits = torch.tensor(np.log(p), dtype=torch.float32)[None]
    lp, mu, sigma = distribution_stats(logits, torch.tensor([0]))
    naive_mu, naive_sigma = np.log(p).mean(), np.log(p).std()
    assert naive_mu == pytest.approx(-13.40, abs=0.01)
    assert float(mu) == pytest.approx(-5.40, abs=0.01)
    assert float(sigma) / naive_sigma == pytest.approx(2.89, abs=0.05)  # the naive sigma is ~3x too small
    assert float(lp) == pytest.approx(np.log(p[0]), abs=1e-4)


def test_min_k_scores_by_hand():
    logp = np.array([-1.0, -4.0, -2.0, -8.0, -0.5])
    mu = np.full(5, -2.0)
    sigma = np.full(5, 2.0)
    s = min_k_scores(logp, mu, sigma, k=0.4)  # lowest 2 of 5
    assert s["min_k"] == pytest.approx(-6.0)
    assert s["min_k_pp"] == pytest.approx(((-8 + 2) / 2 + (-4 + 2) / 2) / 2)
    assert s["perplexity"] == pytest.approx(np.exp(15.5 / 5))
    assert min_k_scores(np.empty(0))["min_k"] is None


def test_guided_lcs_f1_punishes_verbose_continuations():
    suffix = "the quick brown fox jumps over the lazy dog"
    verbose = " ".join(f"filler{i} {w}" for i, w in enumerate(suffix.split())) + " " + " ".join(
        f"more{i}" for i in range(200))
    p, r, f1 = lcs_prf(verbose, suffix)
    assert r == 1.0 and f1 < 0.1 and p == pytest.approx(9 / len(verbose.split()))
    assert lcs_prf(suffix, suffix) == (1.0, 1.0, 1.0)
    assert lcs_prf("", suffix) == (0.0, 0.0, 0.0)
    prefix, rest = split_prefix("one two three four five")
    assert prefix == "one two three" and rest == "four five"


@pytest.fixture(scope="module")
def tiny_lm():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers", reason="needs pip install 'sibscan[lm]'")
    tokenizers = pytest.importorskip("tokenizers")
    from sibscan.contamination.lm import CausalLM

    vocab = {"<pad>": 0, "<s>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.decoder = tokenizers.decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                                unk_token="<unk>")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                                   pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = transformers.LlamaForCausalLM(cfg)
    return CausalLM(model, fast, "tiny-llama-test", device="cpu", batch_size=3, max_tokens=64)


def test_token_stats_match_float64_reference_with_padding(tiny_lm):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, n)) for n in (5, 17, 9, 30, 2, 12, 1)]
    got = tiny_lm.token_stats(texts)  # batched longest-first with right padding
    # the LM head applied chunk-wise to the hidden states, where the model's forward takes logits_to_keep
    # (transformers >= 4.50); an older transformers gives the model's own logits, compared the same way
    fusable = "logits_to_keep" in inspect.signature(tiny_lm.model.forward).parameters
    assert tiny_lm._fused is fusable
    tiny_lm._fused = False
    try:
        full = tiny_lm.token_stats(texts)  # the model's own logits
    finally:
        tiny_lm._fused = fusable
    for a, b in zip(got, full):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, atol=1e-5)
    for text, (lp, mu, sd) in zip(texts, got):
        ids = tiny_lm.encode(text)
        with torch.no_grad():
            logits = tiny_lm.model(torch.tensor([ids])).logits[0, :-1].double()
        ref_lp = torch.log_softmax(logits, -1).numpy()
        rmu, rsd = distribution_stats_numpy(ref_lp)
        target = ref_lp[np.arange(len(ids) - 1), ids[1:]]
        assert len(lp) == len(ids) - 1 == len(text.split())
        np.testing.assert_allclose(lp, target, atol=1e-4)
        np.testing.assert_allclose(mu, rmu, atol=1e-4)
        np.testing.assert_allclose(sd, rsd, atol=1e-4)


def test_audit_with_model_and_completer_resumes_from_cache(tiny_lm, tmp_path):
    rng = np.random.default_rng(1)
    ex = {f"e{i}": " ".join(rng.choice(WORDS, 20)) for i in range(6)}
    calls = []

    def complete(prefix, max_new_tokens):
        calls.append(prefix)
        return ex["e0"][len(prefix):] if ex["e0"].startswith(prefix) else "tok1 tok2"

    r = audit(ex, model=tiny_lm, complete=complete, labels={"e0": True, "e1": False, "e2": False},
              config=ContaminationConfig(weight_by_auc=True), work_dir=tmp_path, progress=False)
    d = r.to_dict()
    e0 = next(x for x in d["examples"] if x["example_id"] == "e0")
    assert e0["guided_f1"] == 1.0 and e0["min_k_pp_support"] == "full" and e0["n_tokens"] == 20
    assert {"min_k", "min_k_pp", "perplexity", "guided_f1", "z", "flagged"} <= set(e0)
    assert e0["overlap_fraction"] is None and e0["best_source"] is None
    assert d["evaluation"]["auc"]["guided_f1"] == 1.0 and d["evaluation"]["weights"]["guided_f1"] == 1.0
    assert set(d["methods"]["ran"]) == {"min_k", "min_k_pp", "perplexity", "guided_f1"}
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 6  # model results kept; a bare callable has no identity, so it is not cached
    again = audit(ex, model=tiny_lm, work_dir=tmp_path, progress=False).to_dict()
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 6  # all read back, none recomputed
    assert [x["min_k_pp"] for x in again["examples"]] == [x["min_k_pp"] for x in d["examples"]]


class _Handler(BaseHTTPRequestHandler):
    mode = "ok"
    seen = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        if type(self).mode == "slow" and len(type(self).seen) > 2:
            time.sleep(1.5)
        words = body["prompt"].split()
        if type(self).mode == "nologprobs":
            reply = {"choices": [{"text": ""}]}
        elif body.get("echo"):
            lps = [None] + [-1.0 - (i % 3) for i in range(1, len(words))]
            tops = [None] + [{w: lp, "other": -0.3} for w, lp in zip(words[1:], lps[1:])]
            reply = {"choices": [{"text": body["prompt"], "logprobs": {"tokens": words, "token_logprobs": lps,
                                                                       "top_logprobs": tops}}]}
        else:
            reply = {"choices": [{"text": " tok1 tok2 tok3"}]}
        data = json.dumps(reply).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def server():
    _Handler.mode, _Handler.seen = "ok", []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield srv, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_endpoint_logprobs_and_topk_support(server):
    _, url = server
    ep = CompletionsEndpoint(url, model="m", top_logprobs=2)
    lp, mu, sd = ep.token_stats("a b c d")
    np.testing.assert_allclose(lp, [-2.0, -3.0, -1.0])
    # mu over the renormalised {target, other}: p ∝ exp(lp), exp(-0.3)
    a = np.array([-2.0, -0.3])
    p = np.exp(a) / np.exp(a).sum()
    assert mu[0] == pytest.approx((p * a).sum())
    assert _Handler.seen[0]["echo"] is True and _Handler.seen[0]["model"] == "m"
    assert ep.complete("a b", 8) == " tok1 tok2 tok3"


def test_endpoint_errors_name_the_endpoint_and_keep_partial_results(server, tmp_path):
    srv, url = server
    ex = {f"e{i}": f"tok1 tok2 tok3 tok{i + 4} tok5" for i in range(5)}
    _Handler.mode = "slow"  # the third request onwards takes 1.5 s, past the 0.5 s time-out
    ep = CompletionsEndpoint(url, timeout=0.5)
    with pytest.raises(SibscanError,
                       match=r"endpoint http://127\.0\.0\.1:\d+/v1/completions timed out.*2 of 5 examples"):
        audit(ex, model=ep, work_dir=tmp_path, progress=False)
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 2
    _Handler.mode, _Handler.seen = "ok", []
    d = audit(ex, model=ep, work_dir=tmp_path, progress=False).to_dict()
    assert len(_Handler.seen) == 3  # resumed: only the three missing examples were asked for
    assert all(x["min_k_pp_support"] == "top-20" for x in d["examples"])
    _Handler.mode = "nologprobs"
    with pytest.raises(SibscanError, match="returned no log-probs"):
        audit({"x": "tok1 tok2 tok3"}, model=ep, progress=False)
    with pytest.raises(SibscanError, match="unreachable"):
        CompletionsEndpoint("http://127.0.0.1:9", timeout=2).complete("a", 2)


@pytest.mark.slow
def test_real_smollm2_scores_and_generates():
    pytest.importorskip("transformers", reason="needs pip install 'sibscan[lm]'")
    pytest.importorskip("gguf", reason="needs pip install 'sibscan[lm]'")
    from sibscan.contamination.lm import load_causal_lm, smollm2_gguf

    try:
        smollm2_gguf()
    except SibscanError as exc:
        pytest.skip(str(exc))
    lm = load_causal_lm("smollm2", device="cpu", max_tokens=32)
    assert "paris" in lm.complete("The capital of France is", 6).lower()
    fluent = "The capital of France is Paris, and the capital of Germany is Berlin."
    scrambled = "Berlin capital is the Paris of and Germany France, capital the is of."
    (a, _, _), (b, _, _) = lm.token_stats([fluent, scrambled])
    assert min_k_scores(a)["perplexity"] < min_k_scores(b)["perplexity"]


def test_cli_model_complete_and_labels_from_a_saved_folder(tiny_lm, tmp_path):
    from typer.testing import CliRunner

    from sibscan.cli import app

    folder = tmp_path / "model"
    tiny_lm.model.save_pretrained(folder)
    tiny_lm.tokenizer.save_pretrained(folder)
    rng = np.random.default_rng(2)
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps({"id": f"e{i}", "text": " ".join(rng.choice(WORDS, 12))}) + "\n"
                             for i in range(5)))
    labels = tmp_path / "labels.csv"
    labels.write_text("id,contaminated\ne0,1\ne1,0\ne2,0\n")
    res = CliRunner().invoke(app, ["contamination", str(bench), "--lm", str(folder), "--complete", str(folder),
                                   "--labels", str(labels), "--prevalence", "0.01", "--device", "cpu",
                                   "--work", str(tmp_path / "work"), "--quiet", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    e = d["examples"][0]
    assert e["min_k_pp_support"] == "full" and e["guided_recall"] is not None and e["overlap_fraction"] is None
    assert set(d["evaluation"]["auc"]) == {"min_k", "min_k_pp", "perplexity", "guided_f1"}
    assert d["evaluation"]["flags"]["prevalence"] == 0.01
    res = CliRunner().invoke(app, ["contamination", str(bench), "--lm", str(tmp_path / "nope"), "--quiet"])
    assert res.exit_code == 1 and "never downloads weights" in res.output
