"""A small scan directory with planted siblings, for tests, benchmarks and trying the labelling UIs.

Train embeddings are random Gaussian vectors.  A share ``rate`` of the test items are planted
siblings (a train vector plus a little noise: similarity about 0.89-1.0), a share ``hard`` are hard
negatives (a train vector plus much noise: about 0.45-0.7, the same region as the best chance
matches), the rest are unrelated.  :func:`oracle` answers like a careful person would.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict

import numpy as np

from sibscan.items import Items
from sibscan.store.scandir import Neighbours, ScanDir

__all__ = ["PlantedScan", "planted_scan", "oracle_labels", "write_oracle_labels"]

_WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
          "romeo sierra tango uniform victor whiskey xray yankee zulu").split()


@dataclass
class PlantedScan:
    """Where the scan is and the truth: ``sibling_of[test_id] = train_id`` for planted siblings."""

    path: Path
    sibling_of: Dict[str, str]
    n_test: int
    n_train: int

    @property
    def true_rate(self) -> float:
        return len(self.sibling_of) / self.n_test


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def planted_scan(path: str | Path, *, n_train: int = 400, n_test: int = 200, rate: float = 0.1, hard: float = 0.1,
                 dim: int = 32, k: int = 3, seed: int = 0, modality: str = "table", verifier: bool = False,
                 encoder_identity: str = "planted-encoder/v1") -> PlantedScan:
    """Write a complete scan directory with planted siblings (see the module docstring).

    Parameters
    ----------
    modality : {"table", "text", "image"}
        Content of the items: the embedding rows themselves, word strings (siblings change one
        word), or tiny PNG files (siblings are the same picture slightly brightened).
    verifier : bool
        Record a verifier (its ``verified`` column equals the similarity) so the verified path is used.
    """
    rng = np.random.default_rng(seed)
    path = Path(path)
    train = rng.standard_normal((n_train, dim))
    n_sib, n_hard = int(round(rate * n_test)), int(round(hard * n_test))
    src = rng.choice(n_train, size=n_sib + n_hard, replace=False)
    test = rng.standard_normal((n_test, dim))
    sib_noise = rng.uniform(0.0, 0.5, n_sib)[:, None]
    hard_noise = rng.uniform(1.0, 2.0, n_hard)[:, None]
    test[:n_sib] = train[src[:n_sib]] + sib_noise * rng.standard_normal((n_sib, dim))
    test[n_sib:n_sib + n_hard] = train[src[n_sib:]] + hard_noise * rng.standard_normal((n_hard, dim))
    perm = rng.permutation(n_test)
    test = test[perm]
    train_ids = np.array([f"tr{i}" for i in range(n_train)])
    test_ids = np.array([f"te{i}" for i in range(n_test)])
    where = np.argsort(perm)  # where[j] = new row of original test row j
    sibling_of = {str(test_ids[where[j]]): str(train_ids[src[j]]) for j in range(n_sib)}

    sd = ScanDir(path)
    tr_emb, te_emb = _unit(train), _unit(test)
    content: Dict[str, dict] = {}
    if modality == "table":
        content = {"train": {"values": train}, "test": {"values": test}}
    elif modality == "text":
        def sentence(v: np.ndarray) -> str:
            return " ".join(_WORDS[int(i)] for i in (np.abs(v[:12]) * 7).astype(int) % len(_WORDS))
        tr_txt = [sentence(v) for v in train]
        te_txt = [sentence(v) for v in test]
        for j in range(n_sib):  # a sibling is its source sentence with one word changed
            words = tr_txt[src[j]].split()
            words[int(rng.integers(len(words)))] = "changed"
            te_txt[where[j]] = " ".join(words)
        content = {"train": {"texts": tr_txt}, "test": {"texts": te_txt}}
    elif modality == "image":
        from PIL import Image

        img_dir = path.parent / f"{path.name}-images"
        img_dir.mkdir(parents=True, exist_ok=True)

        def pictures(v: np.ndarray, prefix: str) -> list:
            out = []
            for i, row in enumerate(v):
                px = (np.clip(np.tile(row[:48].reshape(4, 4, 3), (4, 4, 1)) * 40 + 128, 0, 255)).astype(np.uint8)
                p = img_dir / f"{prefix}{i}.png"
                Image.fromarray(px).resize((64, 64), Image.NEAREST).save(p)
                out.append(str(p))
            return out
        if dim < 48:
            raise ValueError("image modality needs dim >= 48")
        content = {"train": {"paths": pictures(train, "tr")}, "test": {"paths": pictures(test, "te")}}
    else:
        raise ValueError(f"unknown modality {modality!r}; available: table, text, image")
    sd.write_items(Items("train", modality, ids=train_ids, **content["train"]))
    sd.write_items(Items("test", modality, ids=test_ids, **content["test"]))
    sd.write_embeddings("train", tr_emb)
    sd.write_embeddings("test", te_emb)
    sim = te_emb @ tr_emb.T
    top = np.argsort(-sim, axis=1)[:, :k]
    qi = np.repeat(np.arange(n_test), k)
    ni = top.ravel()
    s = sim[qi, ni]
    sd.write_neighbours(Neighbours({
        "query_split": ["test"] * len(qi), "query_id": test_ids[qi], "query_index": qi,
        "rank": np.tile(np.arange(k), n_test), "neighbour_split": ["train"] * len(qi), "neighbour_id": train_ids[ni],
        "neighbour_index": ni, "similarity": s, "verified": s if verifier else np.full(len(s), np.nan, np.float32),
        "exact": np.zeros(len(qi), bool),
    }), csv=False)
    sd.write_manifest({
        "sibscan_version": "test", "status": "complete", "modality": modality,
        "inputs": {"train": {"n_items": n_train, "fingerprint": f"train-{seed}"}, "test": {"n_items": n_test, "fingerprint": f"test-{seed}"}},
        "dataset_fingerprint": f"planted-{seed}", "encoder": {"name": "planted", "identity": encoder_identity, "dim": dim},
        "verifier": {"name": "same", "identity": "planted-verifier/v1"} if verifier else None,
        "parameters": {"k": k},
    })
    return PlantedScan(path=path, sibling_of=sibling_of, n_test=n_test, n_train=n_train)


def oracle_labels(planted: PlantedScan, pairs: list) -> list:
    """The true label of each ``(query_id, neighbour_id)`` pair: same only for a planted sibling's source."""
    return ["same" if planted.sibling_of.get(q) == t else "different" for q, t in pairs]


def write_oracle_labels(planted: PlantedScan, draw_file: Path, out: Path, *, error_rate: float = 0.0, seed: int = 0,
                        **override) -> Path:
    """Label every pair of a recorded draw (``draw.json``) as the truth says, in the labels.jsonl
    form, at ``out``, and every control pair listed beside it (``controls.json``) by its known answer
    (records with a ``control_id``); ``override`` replaces fields of every record (to test refusals).

    ``error_rate``: each answer, pairs and controls alike, is flipped with this probability (a labeller
    who is sometimes wrong; drawn from ``seed``)."""
    from .controlanswers import CONTROLS_FILE

    if not 0.0 <= error_rate <= 1.0:
        raise ValueError(f"error_rate is a fraction in [0, 1], got {error_rate}")
    draw = json.loads(Path(draw_file).read_text())
    pairs = [(p["query_id"], p["neighbour_id"]) for p in draw["pairs"]]
    controls_file = Path(draw_file).parent / CONTROLS_FILE
    controls = json.loads(controls_file.read_text())["controls"] if controls_file.exists() else []
    answers = [({"query_id": q, "neighbour_id": t}, lab) for (q, t), lab in zip(pairs, oracle_labels(planted, pairs))]
    answers += [({"query_id": c["query_id"], "neighbour_id": c["shown_id"], "control_id": c["id"]}, c["truth"])
                for c in controls]
    flip = np.random.default_rng(seed).random(len(answers)) < error_rate
    with open(out, "w") as fh:
        for (ids, lab), wrong in zip(answers, flip):
            if wrong:
                lab = "different" if lab == "same" else "same"
            rec = {"dataset_fingerprint": draw["dataset_fingerprint"], "encoder_identity": draw["encoder_identity"],
                   "verifier_identity": draw["verifier_identity"], **ids, "label": lab}
            rec.update(override)
            fh.write(json.dumps(rec) + "\n")
    return Path(out)
