"""Write a small demo dataset with planted siblings (no download): ``python examples/make_demo.py demo``.

* ``demo/series_train.tsv`` / ``demo/series_test.tsv`` — UCR-style series (label first, no header):
  1,000 train series in 3 classes; the test set holds 10 value-for-value copies of train rows,
  10 rescaled + noisy copies, and 180 new series.
* ``demo/text_train.jsonl`` / ``demo/text_test.jsonl`` — paragraphs from Python's own documentation
  (``pydoc_data``): 900 train paragraphs; the test set holds 10 copies with changed case/whitespace,
  10 truncated copies, and 150 paragraphs that are not in train.
* ``demo/text_predictions.csv`` — a topic classifier's predictions for the text test set
  (id,prediction,label; the label is the documentation topic a paragraph comes from), right on the 20
  planted copies and 60 % right on the rest, as a model that memorised its training set would be.
* ``demo/test_predictions.csv`` — a model's predictions for the series test set (id,prediction), to
  see accuracy split into sibling rows and the rest.
* for ``sibscan audit``: ``demo/series_val.tsv`` (a validation split of 100 new series),
  ``demo/runs/seed{0,1,2}.csv`` (three seeds' predictions for the series test set),
  ``demo/checkpoints.csv`` (validation and test accuracy per epoch; epoch 8 is best on test, epoch 6
  on validation), and a forecasting pair ``demo/forecast_targets.npy`` / ``forecast_predictions.npy``
  (60 samples x 24 steps x 16 points, the first 4 steps given; 3 of the 60 forecasts are the targets
  themselves).
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np


def _series(rng: np.random.Generator, labels: np.ndarray, length: int = 64) -> np.ndarray:
    base = {c: np.sin(np.linspace(0, c * np.pi, length)) for c in (1, 2, 3)}
    return np.array([base[c] + rng.normal(scale=0.25, size=length).cumsum() for c in labels])


def _write_series(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    path.write_text("".join(f"{lab}\t" + "\t".join(f"{v:.6f}" for v in row) + "\n" for row, lab in zip(X, y)))


def series(out: Path, rng: np.random.Generator) -> np.ndarray:
    """Write the series train/test files and the predictions; return the test labels."""
    n_train, length = 1000, 64
    labels = rng.integers(1, 4, n_train)
    train = _series(rng, labels, length)
    exact = train[:10]
    near = train[10:20] * 2.5 + 0.7 + rng.normal(scale=0.02, size=(10, length))
    new_labels = rng.integers(1, 4, 180)
    fresh = _series(rng, new_labels, length)
    test = np.vstack([exact, near, fresh])
    test_labels = np.concatenate([labels[:20], new_labels])

    _write_series(out / "series_train.tsv", train, labels)
    _write_series(out / "series_test.tsv", test, test_labels)
    # a model that memorised its training set: right on copies, 70 % right elsewhere
    correct = np.concatenate([np.ones(20, bool), rng.random(180) < 0.7])
    pred = np.where(correct, test_labels, test_labels % 3 + 1)
    (out / "test_predictions.csv").write_text("id,prediction\n" + "".join(f"{i},{p}\n" for i, p in enumerate(pred)))
    return test_labels


def audit_files(out: Path, test_labels: np.ndarray, rng: np.random.Generator) -> None:
    """Inputs for ``sibscan audit`` (see the module docstring); their own generator, so the files above stay put."""
    val_labels = rng.integers(1, 4, 100)
    _write_series(out / "series_val.tsv", _series(rng, val_labels), val_labels)
    (out / "runs").mkdir(exist_ok=True)
    n = len(test_labels)
    for seed in range(3):
        r = np.random.default_rng(100 + seed)
        correct = np.concatenate([np.ones(20, bool), r.random(n - 20) < 0.68 + 0.02 * seed])
        pred = np.where(correct, test_labels, test_labels % 3 + 1)
        (out / "runs" / f"seed{seed}.csv").write_text(
            "id,prediction\n" + "".join(f"{i},{p}\n" for i, p in enumerate(pred)))
    val_acc = [0.52, 0.61, 0.66, 0.69, 0.71, 0.74, 0.72, 0.73, 0.70, 0.71]
    test_acc = [0.50, 0.60, 0.66, 0.70, 0.71, 0.72, 0.73, 0.76, 0.72, 0.71]
    (out / "checkpoints.csv").write_text("epoch,val_accuracy,test_accuracy\n" + "".join(
        f"{e},{v:.2f},{t:.2f}\n" for e, (v, t) in enumerate(zip(val_acc, test_acc), start=1)))
    steps, points, init = 24, 16, 4
    y = 2.0 + np.sin(np.linspace(0, 2 * np.pi, points))[None, None, :] * rng.uniform(0.5, 2.0, (60, 1, 1))
    y = y + rng.normal(scale=0.1, size=(60, steps, points)).cumsum(axis=1)
    p = y + rng.normal(scale=0.05, size=y.shape) * np.arange(steps)[None, :, None] ** 0.5
    p[:, :init] = y[:, :init]  # the given initial condition is part of every forecast
    p[[7, 23, 41]] = y[[7, 23, 41]]  # three forecasts that are the targets themselves
    np.save(out / "forecast_targets.npy", y.astype(np.float32))
    np.save(out / "forecast_predictions.npy", p.astype(np.float32))


def text(out: Path, seed: int) -> None:
    """Write the text train/test files and the predictions for the text test set."""
    import pydoc_data.topics

    topic_of: dict = {}  # paragraph -> the first (sorted) documentation topic that holds it: its label
    for name, doc in sorted(pydoc_data.topics.topics.items()):
        for p in doc.split("\n\n"):
            topic_of.setdefault(" ".join(p.split()), name)
    paragraphs = sorted(topic_of)
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
    labels = [topic_of[p] for p in train[:20] + fresh]
    text_predictions(out, labels, sorted(set(topic_of.values())), np.random.default_rng(seed + 2))


def text_predictions(out: Path, labels: list, topics: list, rng: np.random.Generator) -> None:
    """``text_predictions.csv`` (id,prediction,label): a classifier of each paragraph's documentation topic
    that memorised its training set, right on the 20 planted copies and 60 % right on the rest; its own
    generator, so the files above stay put."""
    correct = np.concatenate([np.ones(20, bool), rng.random(len(labels) - 20) < 0.6])
    wrong = [topics[(topics.index(lab) + 1 + int(rng.integers(len(topics) - 1))) % len(topics)] for lab in labels]
    rows = [f"q{i},{lab if ok else other},{lab}\n" for i, (lab, ok, other) in enumerate(zip(labels, correct, wrong))]
    (out / "text_predictions.csv").write_text("id,prediction,label\n" + "".join(rows))


def main(argv: list[str]) -> None:
    out = Path(argv[1] if len(argv) > 1 else "demo")
    out.mkdir(parents=True, exist_ok=True)
    test_labels = series(out, np.random.default_rng(0))
    text(out, 0)
    audit_files(out, test_labels, np.random.default_rng(1))
    print(f"wrote the demo dataset to {out}/")


if __name__ == "__main__":
    main(sys.argv)
