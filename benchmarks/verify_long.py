"""Verification cost of very long texts: ``textalign`` on a 1-million-word train text.

Three measurements, each on synthetic texts (words ``w0`` .. ``w19999`` drawn uniformly, seeded)
with a verbatim passage planted so the pair must score 1:

* ``prepare``: the first ``verify`` call on a pair of new Items, which tokenises both splits and
  counts their boilerplate shingles (done once per split in a scan, shared by all its pairs; with
  a one-text train split no shingle can reach the boilerplate threshold of 3 texts, so nothing is
  counted: the case "among N short texts" puts the long text in a train split of N + 1 texts,
  where the counting is done);
* ``reference tokenise``: the previous tokenisation of the long text in the same run (``tokenize``,
  a ``re.findall`` of the words, then ids from one dictionary), for the ratio;
* ``pair``: one pair verified again on the same Items (the per-pair cost: boilerplate masks, the
  longest run, the LCS);
* ``long x long``: a pair of two long texts, whose LCS would cost ``n_a * n_b`` word pairs, so it
  is aligned in windows around the longest run (``sibscan.verify.text.LCS_CELLS``).

The first case's first run is also the process's first verification (module tables such as the
hash powers are built there); ``first_verify_s each run`` keeps every run.  Times are the best of ``--repeat`` runs
(wall clock; the machine's load average is recorded). Run ``python -m benchmarks.verify_long [--quick]``; results go to
``benchmarks/results/verify_long.json``.
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Dict, List

import numpy as np

RESULTS_NAME = "verify_long"


def _texts(rng: np.random.Generator, n_long: int, n_short: int, planted: int):
    vocab = np.array([f"w{i}" for i in range(20_000)])
    long_words = vocab[rng.integers(0, len(vocab), n_long)]
    at = n_long // 2
    short_words = np.concatenate([long_words[at:at + planted], vocab[rng.integers(0, len(vocab), n_short - planted)]])
    return " ".join(long_words), " ".join(short_words), at


def _reference_tokenise(text: str) -> np.ndarray:
    """The previous path: ``tokenize`` then ids from a dictionary in order of first occurrence."""
    from sibscan.kernels.textalign import tokenize

    vocab: Dict[str, int] = {}
    w = tokenize(text)
    new = [t for t in dict.fromkeys(w) if t not in vocab]
    vocab.update(zip(new, range(len(vocab), len(vocab) + len(new))))
    return np.fromiter(map(vocab.__getitem__, w), np.int64, len(w))


def measure(n_long: int, n_short: int, repeat: int, others: int = 0, seed: int = 0) -> Dict[str, object]:
    """Seconds to prepare and to verify one (``n_short``-word test, ``n_long``-word train) pair;
    ``others`` short (200-word) texts join the long one in the train split."""
    from sibscan.items import Items
    from sibscan.kernels.textalign import batch_token_ids
    from sibscan.verify import get_verifier

    rng = np.random.default_rng(seed)
    long_text, short_text, at = _texts(rng, n_long, n_short, planted=min(100, n_short // 2))
    extra = [_texts(rng, 200, 2, 1)[0] for _ in range(others)]
    prepare, pair, result = float("inf"), float("inf"), None
    prepare_runs: List[float] = []
    ref_tok, new_tok = float("inf"), float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        _reference_tokenise(long_text)
        ref_tok = min(ref_tok, time.perf_counter() - t0)
        t0 = time.perf_counter()
        batch_token_ids([long_text])
        new_tok = min(new_tok, time.perf_counter() - t0)
        train = Items("train", "text", ids=["long"] + [f"s{i}" for i in range(others)], texts=[long_text] + extra)
        test = Items("test", "text", ids=["short"], texts=[short_text])
        verifier = get_verifier("textalign", progress=False)
        t0 = time.perf_counter()
        verifier.verify(test, np.array([0]), train, np.array([0]))
        prepare_runs.append(time.perf_counter() - t0)
        prepare = min(prepare, prepare_runs[-1])
        t0 = time.perf_counter()
        result = verifier.verify(test, np.array([0]), train, np.array([0]))
        pair = min(pair, time.perf_counter() - t0)
    return {"train_words": n_long, "test_words": n_short, "other_train_texts": others, "planted_at": at,
            "first_verify_s (tokenise + count + pair)": prepare, "first_verify_s each run": prepare_runs,
            "pair_s (splits prepared)": pair,
            "tokenise_long_s": new_tok, "reference_tokenise_long_s": ref_tok,
            "tokenise_speedup (reference / new)": ref_tok / new_tok,
            "score": float(result.scores[0]), "detail": result.details[0]}


def main(argv=None) -> Dict[str, object]:
    from benchmarks._common import print_table, write_results

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best time is kept")
    args = ap.parse_args(argv)
    import tqdm.auto  # noqa: F401  (imported once here, not inside the first timed call)

    cases = ([(20_000, 200, 0), (20_000, 200, 50), (20_000, 20_000, 0)] if args.quick
             else [(1_000_000, 200, 0), (1_000_000, 200, 2_000), (100_000, 100_000, 0)])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows: List[Dict[str, object]] = [measure(n_long, n_short, args.repeat, others) for n_long, n_short, others in cases]
    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print_table([{k: v for k, v in r.items() if k != "detail"} for r in rows])
    for r in rows:
        print(f"{r['train_words']} (+{r['other_train_texts']}) x {r['test_words']}: {r['detail']}")
    print(f"load average (1 min) at start {load}, at end {load_end}")
    payload = {"quick": args.quick, "repeat": args.repeat, "load_average_1min_at_start": load,
               "load_average_1min_at_end": load_end, "cases": rows}
    path = write_results(RESULTS_NAME, payload)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
