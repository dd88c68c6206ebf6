"""The fixed-default methods :mod:`benchmarks.quality` runs side by side with sibscan, each at its
own default: exact hashing, imagededup's PHash, cleanlab Datalab's ``near_duplicate``, datasketch
MinHashLSH.  Each returns :func:`benchmarks.quality_metrics.detection_metrics` (None where the
package is not installed).
"""
from __future__ import annotations

import hashlib
import logging
import warnings
from typing import Optional, Sequence

import numpy as np

from benchmarks.planted import PlantedSet
from benchmarks.quality_metrics import detection_metrics


def exact_hashing(ps: PlantedSet) -> dict:
    """blake2b of the raw bytes: a test item is flagged when its digest occurs in train."""
    digest = lambda b: hashlib.blake2b(b, digest_size=16).hexdigest()  # noqa: E731
    train = {}
    for j, b in enumerate(ps.content_bytes("train")):
        train.setdefault(digest(b), j)
    hit = np.array([train.get(digest(b), -1) for b in ps.content_bytes("test")])
    return detection_metrics(ps, hit >= 0, ps.planted & (hit == ps.source))


def imagededup_phash(ps: PlantedSet, max_distance: int = 10) -> Optional[dict]:
    """imagededup's PHash at its default ``max_distance_threshold`` (10 bits of 64)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from imagededup.methods import PHash
    except ImportError:
        return None
    logging.getLogger("imagededup").setLevel(logging.ERROR)
    ph = PHash(verbose=False)

    def codes(paths: Sequence[str]) -> np.ndarray:
        return np.array([int(ph.encode_image(image_file=p), 16) for p in paths], dtype=np.uint64)

    a, b = codes(ps.train.paths), codes(ps.test.paths)
    dist = np.bitwise_count(b[:, None] ^ a[None, :]).astype(np.int64)
    nb = dist.argmin(axis=1)
    d = dist[np.arange(len(b)), nb]
    return detection_metrics(ps, d <= max_distance, ps.planted & (nb == ps.source), -d.astype(np.float64))


def cleanlab_near_duplicate(ps: PlantedSet, train_emb: np.ndarray, test_emb: np.ndarray) -> Optional[dict]:
    """cleanlab Datalab ``near_duplicate`` at its defaults, on train + test embeddings together."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from cleanlab import Datalab
    except ImportError:
        return None
    n_train = len(train_emb)
    feats = np.concatenate([train_emb, test_emb]).astype(np.float32)
    lab = Datalab(data={"id": np.arange(len(feats))}, verbosity=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab.find_issues(features=feats, issue_types={"near_duplicate": {}})
    issues = lab.get_issues("near_duplicate")
    sets = issues["near_duplicate_sets"].to_numpy()[n_train:]
    flagged = np.array([bool(len(s)) and bool((np.asarray(s) < n_train).any()) for s in sets])
    correct = np.array([src >= 0 and src in set(np.asarray(s).tolist()) for s, src in zip(sets, ps.source)])
    return detection_metrics(ps, flagged, correct)


def datasketch_lsh(ps: PlantedSet, threshold: float = 0.5, num_perm: int = 128) -> Optional[dict]:
    """datasketch MinHashLSH at its default threshold, on each text's set of (lower-cased) words."""
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        return None

    def mh(text: str) -> "MinHash":
        m = MinHash(num_perm=num_perm, seed=1)
        m.update_batch([w.encode("utf-8") for w in set(text.lower().split())])
        return m

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    train_mh = [mh(t) for t in ps.train.texts]
    for j, m in enumerate(train_mh):
        lsh.insert(j, m)
    flagged = np.zeros(len(ps.test), bool)
    correct = np.zeros(len(ps.test), bool)
    for i, t in enumerate(ps.test.texts):
        hits = lsh.query(mh(t))
        flagged[i] = bool(hits)
        correct[i] = ps.source[i] >= 0 and int(ps.source[i]) in hits
    return detection_metrics(ps, flagged, correct)
