"""Small synthetic scan directories with planted siblings (not a test module itself).

* :func:`make_scan`: planted exact twins, near siblings, duplicates and conflicts, with the neighbours
  table written directly, so the planted truth is known exactly (test_report.py, test_check.py,
  test_split.py, test_report_browser.py, ...).
* :func:`planted_scan`: random embeddings with a share of planted siblings and hard negatives, and
  :func:`oracle_labels` / :func:`write_oracle_labels` answering a calibration's draw as a careful
  person would (the calibration, labelling and rate tests).  It lived in the installed package as
  ``sibscan.calibration.synthetic`` until issue 33; only tests use it.
* :func:`planted_images`: small images and shifted copies (test_api.py, test_notebook_browser.py).

Imported as ``from planted_scan import ...`` (tests/ is on the path, tests/conftest.py's folder).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict

import numpy as np

from sibscan.items import Items
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours

CUTOFF = 0.9


def _rows(query_split, q_ids, q_idx, nb_split, nb_ids, nb_idx, rank, sim, ver, exact):
    return {
        "query_split": np.full(len(q_idx), query_split), "query_id": q_ids[q_idx], "query_index": q_idx,
        "rank": rank, "neighbour_split": np.full(len(q_idx), nb_split), "neighbour_id": nb_ids[nb_idx],
        "neighbour_index": nb_idx, "similarity": sim, "verified": ver, "exact": exact,
    }


def make_scan(path, *, seed: int = 0, n_train: int = 60, n_test: int = 30, k: int = 3, modality: str = "table",
              sources: bool = True, cutoff=CUTOFF, cutoff_source: str = "calibrated", baseline: bool = True):
    """Write a planted scan to ``path``; return the truth as a dict.

    Planted (test -> train): test 0-3 exact twins of train 0-3 (test 1's label differs: a conflict),
    test 4-8 near siblings of train 10-14 with scores 0.91..0.99, test 9 just below the cutoff
    (0.89). Within test: test 20 and 21 are exact duplicates. Sources: test 25-27 share a source
    with train 40.
    """
    rng = np.random.default_rng(seed)
    labels_train = np.array(["a", "b", "c"])[np.arange(n_train) % 3]
    labels_test = np.array(["a", "b", "c"])[rng.integers(0, 3, n_test)]
    fp_train = rng.integers(1, 2**63, size=(n_train, 2), dtype=np.uint64)
    fp_test = rng.integers(1, 2**63, size=(n_test, 2), dtype=np.uint64)
    fp_test[0:4] = fp_train[0:4]
    labels_test[[0, 2, 3]] = labels_train[[0, 2, 3]]
    labels_test[1] = "c" if labels_train[1] != "c" else "a"
    labels_test[4:9] = labels_train[10:15]
    fp_test[21] = fp_test[20]
    values_train = rng.normal(size=(n_train, 8))
    values_test = rng.normal(size=(n_test, 8))
    values_test[0:4] = values_train[0:4]
    values_test[21] = values_test[20]
    ids_train = np.array([f"tr{i}" for i in range(n_train)])
    ids_test = np.array([f"te{i}" for i in range(n_test)])
    groups_train = np.array([f"s{i % 20}" for i in range(n_train)]) if sources else None
    groups_test = np.array([f"u{i}" for i in range(n_test)]) if sources else None
    if sources:
        groups_test[25:28] = groups_train[40]
    if modality == "table":
        kw_train, kw_test = {"values": values_train}, {"values": values_test}
    else:
        kw_train = {"texts": [f"train item number {i} about {labels_train[i]}" for i in range(n_train)]}
        kw_test = {"texts": [f"test item number {i} about {labels_test[i]}" for i in range(n_test)]}
    if modality == "text":
        for i in range(4):
            kw_test["texts"][i] = kw_train["texts"][i]
        for j, i in enumerate(range(4, 9)):
            kw_test["texts"][i] = kw_train["texts"][10 + j] + " (copy)"
        kw_test["texts"][21] = kw_test["texts"][20]
    train = Items("train", modality, ids_train, labels=labels_train, groups=groups_train, **kw_train)
    test = Items("test", modality, ids_test, labels=labels_test, groups=groups_test, **kw_test)
    sd = ScanDir(path)
    sd.write_items(train, fp_train)
    sd.write_items(test, fp_test)

    # test -> train, k neighbours each; rank 0 carries the planted pair
    q = np.repeat(np.arange(n_test), k)
    rank = np.tile(np.arange(k), n_test).astype(np.int32)
    nbi = rng.integers(20, n_train, size=q.size)
    sim = rng.uniform(0.2, 0.85, size=q.size).astype(np.float32)
    sim = np.where(rank == 0, sim, sim - 0.1 * rank).astype(np.float32)
    ver = np.full(q.size, np.nan, np.float32)
    exact = np.zeros(q.size, bool)
    r0 = rank == 0
    for i in range(4):
        m = r0 & (q == i)
        nbi[m], sim[m], exact[m] = i, 1.0, True
    for j, i in enumerate(range(4, 9)):
        m = r0 & (q == i)
        nbi[m], sim[m], ver[m] = 10 + j, 0.8, 0.91 + 0.02 * j  # verification lifts them
    m = r0 & (q == 9)
    nbi[m], sim[m], ver[m] = 15, 0.95, 0.89  # verification drops it just below
    # a rank-1 row that verification lifts above rank 0 for test 12 (top1 must use score)
    m = (rank == 1) & (q == 12)
    ver[m] = 0.905
    tt = _rows("test", ids_test, q, "train", ids_train, nbi, rank, sim, ver, exact)

    # train -> test, k=1: train 0-3 see their twins, train 10-14 their near siblings
    rq = np.arange(n_train)
    rn = rng.integers(22, n_test, size=n_train)
    rs = rng.uniform(0.2, 0.8, size=n_train).astype(np.float32)
    rex = np.zeros(n_train, bool)
    rn[0:4], rs[0:4], rex[0:4] = np.arange(4), 1.0, True
    rn[10:15], rs[10:15] = np.arange(4, 9), 0.95
    rt = _rows("train", ids_train, rq, "test", ids_test, rn, np.zeros(n_train, np.int32), rs,
               np.full(n_train, np.nan, np.float32), rex)

    # test -> test, k=1 (self removed): 20<->21 exact, 22<->23 near
    wq = np.arange(n_test)
    wn = (wq + 5) % n_test
    ws = rng.uniform(0.1, 0.7, size=n_test).astype(np.float32)
    wex = np.zeros(n_test, bool)
    wn[20], wn[21], ws[20], ws[21], wex[20], wex[21] = 21, 20, 1.0, 1.0, True, True
    wn[22], wn[23], ws[22], ws[23] = 23, 22, 0.97, 0.97
    ww = _rows("test", ids_test, wq, "test", ids_test, wn, np.zeros(n_test, np.int32), ws,
               np.full(n_test, np.nan, np.float32), wex)
    nb = Neighbours.concat([Neighbours(tt), Neighbours(rt), Neighbours(ww)])
    sd.write_neighbours(nb)
    sd.write_manifest({
        "sibscan_version": "0.1.0", "created": "2024-01-01T00:00:00", "status": "complete", "modality": modality,
        "inputs": {"train": {"source": "train.csv", "fingerprint": "ab", "n_items": n_train, "n_skipped": 0},
                   "test": {"source": "test.csv", "fingerprint": "cd", "n_items": n_test, "n_skipped": 0}},
        "dataset_fingerprint": "abcd", "encoder": {"name": "znorm", "identity": "znorm-v1", "dim": 8},
        "verifier": {"name": "lagcorr", "identity": "lagcorr-v1"},
        "parameters": {"k": k, "decimals": 6, "directions": ["test-train", "train-test", "test-test"]},
        "cutoff": {"value": cutoff, "source": cutoff_source if cutoff is not None else "none",
                   "calibration": None, "interval": [0.88, 0.93] if cutoff is not None else None, "score": "verified"},
        "timings": {"search": 0.1}, "skipped": {"train": [], "test": []},
    })
    if baseline:
        from sibscan.calibration.baseline import compute_baseline

        sd.write_baseline(compute_baseline(rng.normal(size=(n_train, 8)), rng.normal(size=(n_test, 8)), n_pairs=3000,
                                           seed=seed))
    return {"train": train, "test": test, "fp_train": fp_train, "fp_test": fp_test, "neighbours": nb}


def planted_images(rng):
    """16 smooth 24-px RGB train images (uint8 arrays); test: 3 copies, 3 shifted + brightened copies of
    train 3-5, 4 fresh images."""
    def smooth():
        x = rng.normal(size=(6, 6, 3)).repeat(4, 0).repeat(4, 1)
        return np.clip(128 + 40 * x, 0, 255).astype(np.uint8)

    train = [smooth() for _ in range(16)]
    near = [np.clip(np.roll(t, 2, axis=1).astype(int) + 12, 0, 255).astype(np.uint8) for t in train[3:6]]
    return train, train[:3] + near + [smooth() for _ in range(4)]


# --- random embeddings with planted siblings, and the oracle (was sibscan.calibration.synthetic) ---
# Train embeddings are random Gaussian vectors.  A share ``rate`` of the test items are planted
# siblings (a train vector plus a little noise: similarity about 0.89-1.0), a share ``hard`` are hard
# negatives (a train vector plus much noise: about 0.45-0.7, the same region as the best chance
# matches), the rest are unrelated.  :func:`oracle_labels` answers like a careful person would.

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
    """Write a complete scan directory with planted siblings (see the comment above).

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
        "inputs": {"train": {"n_items": n_train, "fingerprint": f"train-{seed}"},
                   "test": {"n_items": n_test, "fingerprint": f"test-{seed}"}},
        "dataset_fingerprint": f"planted-{seed}",
        "encoder": {"name": "planted", "identity": encoder_identity, "dim": dim},
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
    from sibscan.calibration.controlanswers import CONTROLS_FILE

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
