"""Issue 14, "labels belong to pairs": each pair is verified once, in one orientation, and every row of
the pair carries that score (:mod:`sibscan.stages.pairverify`).

A scan's table holds (test i, train j) as a test→train row and often again as a train→test row, and
(test i, test j) as i→j and j→i; an image verifier searches the query inside the database image, so
the two orientations scored apart gave two scores of one pair (and twice the verifier's time).
"""
from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from sibscan.stages.candidates import neighbours_table, reverse_blocks, verify_neighbours
from sibscan.config import ScanConfig
from sibscan.errors import SibscanError
from sibscan.items import Items
from sibscan.options import SearchOptions
from sibscan.stages.pairverify import PAIRING, VerifiedPairs, canonical_pairs
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours
from sibscan.verify import VerifyResult


class Oriented:
    """A verifier whose score depends on the orientation (as the image verifiers' does), counting the
    pairs it is handed per (query split, database split)."""

    name, identity = "oriented", "oriented-v1"

    def __init__(self):
        self.pairs = {}

    @staticmethod
    def score(qs, qi, ds, di):
        return 0.3 + 0.01 * qi - 0.003 * di + (0.2 if qs == "train" else 0.0)

    def verify(self, q, qi, d, di):
        qi, di = np.asarray(qi, np.int64), np.asarray(di, np.int64)
        key = f"{q.split}>{d.split}"
        self.pairs[key] = self.pairs.get(key, 0) + len(qi)
        return VerifyResult(scores=self.score(q.split, qi, d.split, di).astype(np.float32),
                            details=[f"{q.split}{a} in {d.split}{b}" for a, b in zip(qi.tolist(), di.tolist())])


def _case(n_train, n_test=15, seed=0, dim=8):
    rng = np.random.default_rng(seed)
    tr = rng.standard_normal((n_train, dim)).astype(np.float32)
    te = rng.standard_normal((n_test, dim)).astype(np.float32)
    te[:5] = tr[:5] + 0.05 * rng.standard_normal((5, dim)).astype(np.float32)  # near copies: pairs in both directions
    emb = {s: v / np.linalg.norm(v, axis=1, keepdims=True) for s, v in (("train", tr), ("test", te))}
    splits = {s: Items(s, "table", ids=[f"{s[:2]}{i}" for i in range(len(v))], values=v.astype(np.float64))
              for s, v in emb.items()}
    fps = {s: np.stack([np.arange(len(v)), np.full(len(v), 7 if s == "train" else 9)], 1).astype(np.uint64)
           for s, v in emb.items()}
    return emb, splits, fps


def _scanned(n_train, verifier, block_rows=7, n_test=15):
    """The held table (test→train, test→test) verified, then train→test streamed as the scan does."""
    emb, splits, fps = _case(n_train, n_test)
    options = SearchOptions(k=5, k_reverse=3, backend="numpy")
    counts = {}
    held = verify_neighbours(neighbours_table(emb, splits, fps, options, progress=False,
                                              directions=["test-train", "test-test"]),
                             verifier, splits, progress=False, counts=counts)
    parts = list(reverse_blocks(emb, splits, fps, options, verifier, progress=False, block_rows=block_rows,
                                held=held, counts=counts))
    return Neighbours.concat([held, *parts]), counts, (emb, splits, fps, options)


def _unordered(nb):
    """Each row's pair as (canonical query split, row, database split, row)."""
    out = []
    for r in range(len(nb)):
        cq, ci, cd, di = canonical_pairs(nb["query_split"][r], nb["query_index"][r:r + 1],
                                         nb["neighbour_split"][r], nb["neighbour_index"][r:r + 1])
        out.append((cq, int(ci[0]), cd, int(di[0])))
    return out


def test_the_rows_of_one_pair_carry_one_score_the_canonical_orientations():
    nb, _, _ = _scanned(40, Oriented())
    by_pair = {}
    for pair, v, d in zip(_unordered(nb), nb["verified"].tolist(), nb["detail"].tolist()):
        by_pair.setdefault(pair, set()).add((v, d))
    twice = [p for p in by_pair if sum(q == p for q in _unordered(nb)) > 1]
    assert sum(p[0] != p[2] for p in twice) >= 3 and sum(p[0] == p[2] for p in twice) >= 1  # both kinds occur
    assert all(len(v) == 1 for v in by_pair.values()), {p: v for p, v in by_pair.items() if len(v) > 1}
    for (cq, ci, cd, di), values in by_pair.items():  # test queries train; the lower test row queries
        assert cq == "test" and (cd == "train" or ci < di)
        ((v, d),) = values
        assert v == pytest.approx(Oriented.score(cq, ci, cd, di)) and d == f"{cq}{ci} in {cd}{di}"
    np.testing.assert_array_equal(nb["score"], nb["verified"])


def test_each_pair_goes_to_the_verifier_once_and_the_counts_say_which_direction_claimed_it():
    verifier = Oriented()
    nb, counts, _ = _scanned(40, verifier)
    pairs = _unordered(nb)
    distinct = set(pairs)
    assert sum(verifier.pairs.values()) == len(distinct) < len(nb)  # the overlap is not verified again
    assert set(verifier.pairs) == {"test>train", "test>test"}  # train→test pairs are asked with test as query
    tt = nb.mask("test", "train")
    cross = {p for p, m in zip(pairs, tt) if m}
    reverse_new = {p for p, m in zip(pairs, nb.mask("train", "test")) if m} - cross
    assert counts == {"test>train": len(cross), "test>test": len({p for p in distinct if p[2] == "test"}),
                      "train>test": len(reverse_new)}
    assert counts["train>test"] < nb.mask("train", "test").sum()


def test_streamed_blocks_equal_one_verification_of_the_whole_table():
    """The held table looked up block by block gives what one verification of every direction gives
    (the cascade's way: all directions held), row for row."""
    nb, _, (emb, splits, fps, options) = _scanned(40, Oriented(), block_rows=6)
    whole_counts = {}
    whole = verify_neighbours(neighbours_table(emb, splits, fps, options, progress=False), Oriented(), splits,
                              progress=False, counts=whole_counts)
    order = lambda t: np.lexsort((t["neighbour_index"], t["query_index"], t["neighbour_split"], t["query_split"]))  # noqa: E731
    a, b = nb.select(order(nb)), whole.select(order(whole))
    for name in ("query_index", "neighbour_index", "rank", "verified", "score", "detail"):
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert sum(whole_counts.values()) == len(set(_unordered(whole)))


def test_the_lookup_is_bounded_by_the_test_side_and_the_stream_by_its_block(monkeypatch):
    import sibscan.stages.pairverify as pairverify

    sizes = []
    real = pairverify.VerifiedPairs.of
    monkeypatch.setattr(pairverify.VerifiedPairs, "of",
                        classmethod(lambda cls, nb, n: (sizes.append(len(r := real(nb, n))), r)[1]))
    peaks = {}
    for n_train in (1_000, 4_000):
        emb, splits, fps = _case(n_train, n_test=30, seed=1)
        options = SearchOptions(k=5, k_reverse=3, backend="numpy")
        verifier = Oriented()
        held = verify_neighbours(neighbours_table(emb, splits, fps, options, progress=False,
                                                  directions=["test-train"]), verifier, splits, progress=False)
        tracemalloc.start()
        for _ in reverse_blocks(emb, splits, fps, options, verifier, progress=False, block_rows=250, held=held):
            pass
        peaks[n_train] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert sizes == [30 * 5, 30 * 5]  # one key per held test→train pair, whatever n_train
    assert peaks[4_000] - peaks[1_000] < 3_000 * 16, peaks  # well under 16 bytes a train row


def test_verified_pairs_lookup_against_a_dict():
    rng = np.random.default_rng(3)
    qi, ni = rng.integers(0, 9, 40), rng.integers(0, 50, 40)
    nb = Neighbours({"query_split": np.full(40, "test"), "query_id": qi.astype(str), "query_index": qi,
                     "rank": np.zeros(40), "neighbour_split": np.full(40, "train"), "neighbour_id": ni.astype(str),
                     "neighbour_index": ni, "similarity": np.zeros(40), "exact": np.zeros(40, bool),
                     "verified": (qi * 100 + ni).astype(np.float32), "detail": [f"{a}-{b}" for a, b in zip(qi, ni)]})
    known = VerifiedPairs.of(nb, 50)
    ref = {(a, b): a * 100 + b for a, b in zip(qi.tolist(), ni.tolist())}
    assert len(known) == len(ref)
    ask_t, ask_n = rng.integers(0, 10, 300), rng.integers(0, 50, 300)
    found, verified, detail = known.lookup(ask_t, ask_n)
    for a, b, f, v, d in zip(ask_t.tolist(), ask_n.tolist(), found, verified, detail):
        assert f == ((a, b) in ref) and (v == ref[(a, b)] if f else np.isnan(v)) and d == (f"{a}-{b}" if f else "")
    empty = VerifiedPairs.of(nb.select(np.zeros(40, bool)), 50).lookup(ask_t, ask_n)
    assert not empty[0].any() and np.isnan(empty[1]).all()


def test_a_scan_gives_both_rows_of_a_pair_one_score_and_refuses_a_folder_of_the_old_pairing(flip_and_crop_folders):
    pytest.importorskip("torch", reason="verified scores need the image verifier, which runs on torch")
    from sibscan.scan import run_scan

    tmp_path = flip_and_crop_folders
    cfg = dict(train=str(tmp_path / "train"), test=str(tmp_path / "test"), out=str(tmp_path / "out"), encoder="pixels",
               extra_views=(), k=6, k_reverse=2, baseline_pairs=200, verified_baseline_pairs=20, progress=False)
    res = run_scan(ScanConfig(**cfg))
    nb = ScanDir(tmp_path / "out").neighbours()
    tt, rt = nb.direction("test", "train"), nb.direction("train", "test")
    forward = {(q, n): (v, d)
               for q, n, v, d in zip(tt["query_index"], tt["neighbour_index"], tt["verified"], tt["detail"])}
    shared = [(forward[(n, q)], (v, d)) for q, n, v, d in
              zip(rt["query_index"], rt["neighbour_index"], rt["verified"], rt["detail"]) if (n, q) in forward]
    assert len(shared) >= 2 and all(a == b for a, b in shared), shared
    assert res.manifest["pairing"] == PAIRING
    counts = res.manifest["pairs_verified"]
    assert counts["test>train"] == len(tt) and counts["train>test"] == len(rt) - len(shared)
    manifest = tmp_path / "out" / "manifest.json"
    old = json.loads(manifest.read_text())
    old.pop("pairing")  # as a scan that verified each direction's rows in their own orientation
    old["stages"] = [s for s in old["stages"] if s != "baseline"]
    manifest.write_text(json.dumps(old))
    with pytest.raises(SibscanError, match=r"other options \(another pairing of verified scores .*\); pass --force"):
        run_scan(ScanConfig(**cfg))
    old["pairing"] = PAIRING  # the same pairing, interrupted after the search: resumed, its counts carried over
    manifest.write_text(json.dumps(old))
    again = run_scan(ScanConfig(**cfg))
    assert "search" in old["stages"] and again.manifest["pairs_verified"] == counts
