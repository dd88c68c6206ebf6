"""Verification cost of very long texts: ``textalign`` on a 1-million-word train text.

Three measurements, each on synthetic texts (words ``w0`` .. ``w19999`` drawn uniformly, seeded)
with a verbatim passage planted so the pair must score 1:

* ``prepare``: the first ``verify`` call on a pair of new Items, which tokenises both splits and
  counts their boilerplate shingles (done once per split in a scan, shared by all its pairs);
* ``pair``: one pair verified again on the same Items (the per-pair cost: boilerplate masks, the
  longest run, the LCS);
* ``long x long``: a pair of two long texts, whose LCS would cost ``n_a * n_b`` word pairs, so it
  is aligned in windows around the longest run (``sibscan.verify.text.LCS_CELLS``).

Times are the best of ``--repeat`` runs (wall clock; the machine's load average is recorded).
Run ``python -m benchmarks.verify_long [--quick]``; results go to
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


def measure(n_long: int, n_short: int, repeat: int, seed: int = 0) -> Dict[str, object]:
    """Seconds to prepare and to verify one (``n_short``-word test, ``n_long``-word train) pair."""
    from sibscan.items import Items
    from sibscan.verify import get_verifier

    rng = np.random.default_rng(seed)
    long_text, short_text, at = _texts(rng, n_long, n_short, planted=min(100, n_short // 2))
    prepare, pair, result = float("inf"), float("inf"), None
    for _ in range(max(1, repeat)):
        train = Items("train", "text", ids=["long"], texts=[long_text])
        test = Items("test", "text", ids=["short"], texts=[short_text])
        verifier = get_verifier("textalign", progress=False)
        t0 = time.perf_counter()
        verifier.verify(test, np.array([0]), train, np.array([0]))
        prepare = min(prepare, time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = verifier.verify(test, np.array([0]), train, np.array([0]))
        pair = min(pair, time.perf_counter() - t0)
    return {"train_words": n_long, "test_words": n_short, "planted_at": at,
            "first_verify_s (tokenise + count + pair)": prepare, "pair_s (splits prepared)": pair,
            "score": float(result.scores[0]), "detail": result.details[0]}


def main(argv=None) -> Dict[str, object]:
    from benchmarks._common import print_table, write_results

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best time is kept")
    args = ap.parse_args(argv)
    import tqdm.auto  # noqa: F401  (imported once here, not inside the first timed call)

    cases = [(20_000, 200), (20_000, 20_000)] if args.quick else [(1_000_000, 200), (100_000, 100_000)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows: List[Dict[str, object]] = [measure(n_long, n_short, args.repeat) for n_long, n_short in cases]
    print_table([{k: v for k, v in r.items() if k != "detail"} for r in rows])
    for r in rows:
        print(f"{r['train_words']} x {r['test_words']}: {r['detail']}")
    payload = {"quick": args.quick, "repeat": args.repeat, "load_average_1min_at_start": load, "cases": rows}
    path = write_results(RESULTS_NAME, payload)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
