"""Verified nearest-neighbour scores of real items, siblings and non-siblings apart: the data that
``benchmarks.calibration_coverage`` simulates from.

    python -m benchmarks.score_samples          # rebuild benchmarks/data/verified_scores.json (a few minutes)

For every planted set of :mod:`benchmarks.planted` (image tiles and digits, pydoc paragraphs and
docstrings, the UCR series that aeon ships and digit rows) the scan's default path is run as a scan
runs it: the default encoder of the modality, exact top-10 candidates, the default verifier re-scores
them, and each test item's deciding score is its best verified score.  Kept per set:

* ``sibling``: the deciding score of planted test items whose best pair is their true source;
* ``other``: the deciding score of clean test items (most share a class, photo or template with
  train items: hard negatives);
* ``random``: verified scores of random (test, train) pairs (the baseline a scan computes), so a
  simulation can place the candidate range where a scan would;
* ``planted_elsewhere``: how many planted items had another train item as their best pair (left out
  of both samples: a labeller shown that pair would answer "different" for a sibling item).

Scores are rounded to 5 decimals; the file is small and committed, so the coverage simulation never
rebuilds scans.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Dict

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "verified_scores.json"
VERIFIERS = {"image": "imagecorr", "text": "textalign", "table": "lagcorr"}
K = 10
N_RANDOM = 2000


def scores_of(ps, seed: int = 0) -> Dict[str, object]:
    """The deciding scores of one planted set under the default encoder and verifier."""
    from sibscan.encoders import default_encoder, get_encoder
    from sibscan.verify import get_verifier

    from benchmarks.quality import top_k

    enc = get_encoder(default_encoder(ps.modality), device="cpu")
    ver = get_verifier(VERIFIERS[ps.modality])
    train_emb, test_emb = enc.encode(ps.train.content), enc.encode(ps.test.content)
    _, idx = top_k(test_emb, train_emb, K)
    n = len(test_emb)
    q = np.repeat(np.arange(n), idx.shape[1])
    v = np.asarray(ver.verify(ps.test, q, ps.train, idx.reshape(-1)).scores, np.float64).reshape(idx.shape)
    best = np.argmax(v, axis=1)
    score, nb = v[np.arange(n), best], idx[np.arange(n), best]
    rng = np.random.default_rng(seed)
    ti, tj = rng.integers(0, n, N_RANDOM), rng.integers(0, len(train_emb), N_RANDOM)
    keep = ps.source[ti] != tj  # a random pair that happens to be a planted pair is not chance
    rand = np.asarray(ver.verify(ps.test, ti[keep], ps.train, tj[keep]).scores, np.float64)
    found = ps.planted & (nb == ps.source)
    r = lambda a: np.round(np.sort(a[np.isfinite(a)]), 5).tolist()  # noqa: E731
    return {"modality": ps.modality, "encoder": enc.identity, "verifier": ver.identity, "n_train": len(ps.train),
            "sibling": r(score[found]), "other": r(score[~ps.planted]), "random": r(rand),
            "planted_elsewhere": int((ps.planted & ~found).sum())}


def build(seed: int = 0) -> dict:
    from benchmarks.planted import image_set, row_sets, text_set

    t0 = time.perf_counter()
    sets = {}
    with tempfile.TemporaryDirectory(prefix="sibscan-scores-") as tmp:
        planted = [image_set(Path(tmp) / "images", seed=seed), text_set(seed=seed), *row_sets(seed=seed)]
        for ps in planted:
            sets[ps.name] = scores_of(ps, seed)
            s = sets[ps.name]
            print(f"{ps.name}: {len(s['sibling'])} siblings, {len(s['other'])} others, "
                  f"{s['planted_elsewhere']} planted items paired elsewhere", flush=True)
    return {"command": "python -m benchmarks.score_samples", "seed": seed, "k": K,
            "seconds": round(time.perf_counter() - t0, 1), "sets": sets}


def load() -> dict:
    """The committed score samples (``{"sets": {name: {"sibling", "other", "random", ...}}}``)."""
    with open(DATA, encoding="utf-8") as fh:
        return json.load(fh)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.score_samples", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from sibscan.atomic import write_json

    data = build(args.seed)
    write_json(DATA, data)
    print(f"written: {DATA} ({data['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
