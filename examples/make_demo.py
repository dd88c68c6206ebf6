"""Write a small demo dataset with planted siblings (no download): ``python examples/make_demo.py demo``.

* ``demo/series_train.tsv`` / ``demo/series_test.tsv`` — UCR-style series (label first, no header):
  1,000 train series in 3 classes; the test set holds 10 value-for-value copies of train rows,
  10 rescaled + noisy copies, and 180 new series.
* ``demo/text_train.jsonl`` / ``demo/text_test.jsonl`` — paragraphs from Python's own documentation
  (``pydoc_data``): 900 train paragraphs; the test set holds 10 copies with changed case/whitespace,
  10 truncated copies, and 150 paragraphs that are not in train.
* ``demo/test_predictions.csv`` — a model's predictions for the series test set (id,prediction), to
  see accuracy split into sibling rows and the rest.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np


def series(out: Path, rng: np.random.Generator) -> None:
    n_train, length = 1000, 64
    labels = rng.integers(1, 4, n_train)
    base = {c: np.sin(np.linspace(0, c * np.pi, length)) for c in (1, 2, 3)}
    train = np.array([base[c] + rng.normal(scale=0.25, size=length).cumsum() for c in labels])
    exact = train[:10]
    near = train[10:20] * 2.5 + 0.7 + rng.normal(scale=0.02, size=(10, length))
    new_labels = rng.integers(1, 4, 180)
    fresh = np.array([base[c] + rng.normal(scale=0.25, size=length).cumsum() for c in new_labels])
    test = np.vstack([exact, near, fresh])
    test_labels = np.concatenate([labels[:20], new_labels])

    def write(path: Path, X: np.ndarray, y: np.ndarray) -> None:
        path.write_text("".join(f"{lab}\t" + "\t".join(f"{v:.6f}" for v in row) + "\n" for row, lab in zip(X, y)))

    write(out / "series_train.tsv", train, labels)
    write(out / "series_test.tsv", test, test_labels)
    # a model that memorised its training set: right on copies, 70 % right elsewhere
    correct = np.concatenate([np.ones(20, bool), rng.random(180) < 0.7])
    pred = np.where(correct, test_labels, test_labels % 3 + 1)
    (out / "test_predictions.csv").write_text("id,prediction\n" + "".join(f"{i},{p}\n" for i, p in enumerate(pred)))


def text(out: Path, seed: int) -> None:
    import pydoc_data.topics

    paragraphs = sorted({" ".join(p.split()) for doc in pydoc_data.topics.topics.values() for p in doc.split("\n\n")})
    paragraphs = [p for p in paragraphs if 15 <= len(p.split()) <= 120]
    random.Random(seed).shuffle(paragraphs)
    train, fresh = paragraphs[:900], paragraphs[900:1050]
    test = [p.upper().replace(" ", "  ") for p in train[:10]]
    test += [" ".join(p.split()[: int(len(p.split()) * 0.7)]) for p in train[10:20]]
    test += fresh
    with open(out / "text_train.jsonl", "w", encoding="utf-8") as fh:
        for i, p in enumerate(train):
            fh.write(json.dumps({"id": f"doc{i}", "text": p}) + "\n")
    with open(out / "text_test.jsonl", "w", encoding="utf-8") as fh:
        for i, p in enumerate(test):
            fh.write(json.dumps({"id": f"q{i}", "text": p}) + "\n")


def main(argv: list[str]) -> None:
    out = Path(argv[1] if len(argv) > 1 else "demo")
    out.mkdir(parents=True, exist_ok=True)
    series(out, np.random.default_rng(0))
    text(out, 0)
    print(f"wrote the demo dataset to {out}/")


if __name__ == "__main__":
    main(sys.argv)
