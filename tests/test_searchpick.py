"""``auto`` on the CPU: the backend measured fastest on this machine, cached per machine key."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from sibscan.search import pick as searchpick
from sibscan.search.exact import _measured_run, brute_force_search, search

HAS_TWO = importlib.util.find_spec("faiss") is not None or importlib.util.find_spec("torch") is not None
BIG = (5000, 100000, 512, 5)  # above MEASURE_ABOVE_FLOPS


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SIBSCAN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SIBSCAN_SEARCH_MEASURE", raising=False)
    monkeypatch.setattr(searchpick, "_memo", {})
    return tmp_path / "search_backend.json"


def fake_measure(times, calls):
    """A measurement that records its calls and answers with the given seconds per backend."""
    def measure(dim, run, backends, shape=None):
        calls.append((dim, list(backends)))
        seconds = {kc: {b: [times[kc][b]] for b in backends} for kc in ("1", "k")}
        choice = {kc: min(backends, key=lambda b: times[kc][b]) for kc in ("1", "k")}
        return {"choice": choice, "seconds": seconds, "shape": [1, 1, dim]}
    return measure


def test_small_searches_use_the_fallback_without_measuring(cache, monkeypatch):
    monkeypatch.setattr(searchpick, "measure", lambda *a, **kw: pytest.fail("measured a small search"))
    assert searchpick.cpu_backend(100, 5000, 64, 5, _measured_run) == searchpick.fallback_backend()
    assert not cache.exists()


@pytest.mark.skipif(not HAS_TWO, reason="needs faiss or torch beside numpy (pip install 'sibscan[faiss]')")
def test_measured_choice_is_kept_per_machine_and_read_back(cache, monkeypatch):
    cands = searchpick.candidates()
    slow, fast = cands[0], cands[-1]
    times = {"1": {b: 2.0 for b in cands}, "k": {b: 2.0 for b in cands}}
    times["1"][fast], times["k"][slow] = 1.0, 1.0
    calls = []
    monkeypatch.setattr(searchpick, "measure", fake_measure(times, calls))
    assert searchpick.cpu_backend(*BIG[:3], 1, _measured_run) == fast
    assert searchpick.cpu_backend(*BIG[:3], 5, _measured_run) == slow
    assert len(calls) == 1 and calls[0] == (512, cands)
    stored = json.loads(cache.read_text())
    (key, record), = stored.items()
    assert json.loads(key) == searchpick.machine_key(512)
    assert record["choice"] == {"1": fast, "k": slow}
    # a new process (empty memo) reads the file instead of measuring
    monkeypatch.setattr(searchpick, "_memo", {})
    assert searchpick.cpu_backend(*BIG, _measured_run) == slow and len(calls) == 1
    # another dimension is another key: measured again
    searchpick.cpu_backend(5000, 100000, 256, 1, _measured_run)
    assert len(calls) == 2 and len(json.loads(cache.read_text())) == 2


@pytest.mark.skipif(not HAS_TWO, reason="needs faiss or torch beside numpy (pip install 'sibscan[faiss]')")
def test_override_and_unreadable_cache(cache, monkeypatch):
    calls = []
    cands = searchpick.candidates()
    times = {kc: {b: float(i + 1) for i, b in enumerate(reversed(cands))} for kc in ("1", "k")}
    monkeypatch.setattr(searchpick, "measure", fake_measure(times, calls))
    monkeypatch.setenv("SIBSCAN_SEARCH_MEASURE", "0")
    assert searchpick.cpu_backend(*BIG, _measured_run) == searchpick.fallback_backend() and not calls
    monkeypatch.delenv("SIBSCAN_SEARCH_MEASURE")
    cache.write_text("{not json")
    assert searchpick.cpu_backend(*BIG, _measured_run) == cands[-1] and len(calls) == 1
    assert json.loads(cache.read_text())  # replaced by a valid record


@pytest.mark.slow  # a real measurement on a full search tile: ~7 s on 2 cores
def test_measure_times_every_candidate_and_auto_gives_the_exact_answer(cache, monkeypatch):
    record = searchpick.measure(16, _measured_run, shape=(64, 2048), rounds=2)
    for kc in ("1", "k"):
        assert set(record["seconds"][kc]) == set(searchpick.candidates()) - set(record["failed"])
        assert all(len(v) == 2 and min(v) > 0 for v in record["seconds"][kc].values())
        assert record["choice"][kc] in record["seconds"][kc]
    assert record["threads"]["cores"] >= 1
    # auto on a "large" search takes the measured backend and still returns the exact top-k
    monkeypatch.setattr(searchpick, "MEASURE_ABOVE_FLOPS", 0)
    monkeypatch.setattr(searchpick, "SHAPE", (32, 1024))
    monkeypatch.setattr(searchpick, "ROUNDS", 1)
    rng = np.random.default_rng(3)
    q = rng.standard_normal((40, 16)).astype(np.float32)
    x = rng.standard_normal((3000, 16)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    for k in (1, 5):
        sims, ids = search(q, x, k, progress=False)
        ref_sims, ref_ids = brute_force_search(q, x, k)
        np.testing.assert_allclose(sims, ref_sims, atol=2e-6)
        assert (ids != ref_ids).mean() < 0.01
    assert cache.exists()


@pytest.mark.skipif(not HAS_TWO, reason="needs faiss or torch beside numpy (pip install 'sibscan[faiss]')")
def test_auto_measures_on_the_tile_a_large_search_runs(cache, monkeypatch):
    """The pick compares the kernels at the (query, database) block a large CPU search uses."""
    from sibscan.search.exact import resolve_backend, plan_blocks

    shapes = []

    def measure(dim, run, backends, shape=None):
        shapes.append(shape)
        return {"choice": {"1": backends[0], "k": backends[0]}, "seconds": {}}

    monkeypatch.setattr(searchpick, "measure", measure)
    resolve_backend("auto", "cpu", BIG)
    tile = plan_blocks(1 << 20, 1 << 30, BIG[2])[:2]
    assert shapes == [tile] and tile[0] >= 1024 and tile[1] >= 16384
    (key,) = json.loads(cache.read_text())
    assert json.loads(key)["tile"] == list(tile)


def test_a_backend_failing_on_the_full_tile_is_left_out_and_a_failed_measurement_falls_back(cache, monkeypatch):
    def run(q, x, k, b):  # "big" fails only on the measured tile (e.g. out of memory), never in the warm-up
        if b == "big" and len(q) > 64:
            raise MemoryError("no room for the score tile")
        return None

    record = searchpick.measure(8, run, ["big", "small"], shape=(128, 4096), rounds=2)
    assert record["choice"] == {"1": "small", "k": "small"}
    assert "MemoryError" in record["failed"]["big"] and "big" not in record["seconds"]["1"]

    monkeypatch.setattr(searchpick, "candidates", lambda: ["faiss", "torch"])
    monkeypatch.setattr(searchpick, "measure", lambda *a, **kw: (_ for _ in ()).throw(RuntimeError("broken")))
    assert searchpick.cpu_backend(*BIG, _measured_run) == searchpick.fallback_backend()


def test_the_fallback_keeps_its_place_in_a_tie_within_the_margin(monkeypatch):
    # medians 2 % apart: faiss (the fallback, the reference kernel) stays; 10 % apart: the faster wins
    monkeypatch.setattr(searchpick, "fallback_backend", lambda: "faiss")
    assert searchpick._fastest({"faiss": [1.00, 1.01, 0.99], "numpy": [0.98, 0.98, 0.98]}) == "faiss"
    assert searchpick._fastest({"faiss": [1.00, 1.01, 0.99], "numpy": [0.90, 0.90, 0.89]}) == "numpy"
    assert searchpick._fastest({"faiss": [0.90], "numpy": [1.00]}) == "faiss"
    # without the fallback among the measured, the lowest median wins
    assert searchpick._fastest({"torch": [1.0], "numpy": [0.99]}) == "numpy"
    monkeypatch.setattr(searchpick, "fallback_backend", lambda: "numpy")
    assert searchpick._fastest({}) == "numpy"
