"""Which CPU search backend ``auto`` runs: the fastest where it runs, measured once per machine.

Every CPU backend spends nearly all of a large search in one matrix product, and each brings its
own BLAS: faiss's wheel bundles OpenBLAS, torch's x86 wheels MKL, numpy its own OpenBLAS build
(all three are measured where installed).
Which is fastest depends on the CPU and the builds installed (on one 2-core AVX-512 machine torch's
MKL product ran ~125 GFLOP/s against ~88 for faiss's kernel), so ``auto`` measures instead of
assuming: the installed candidates search the same random problem (one full tile of a large search,
``4,096 x 35,746`` rows at d=512 and the default memory budget, so torch's top-k over its score tile
is measured at the size it runs; top-1 and top-10) in alternating rounds, and the lowest median time wins, for
``k = 1`` and for ``k > 1`` separately — except that the fallback (faiss where installed) keeps its place
unless another backend is at least :data:`SWITCH_MARGIN` (5 %) faster: a tie within the rounds' noise
leaves faiss's kernel, the reference, in place.  The answer is kept in the user cache
(``$SIBSCAN_CACHE_DIR`` or ``~/.cache/sibscan``, file ``search_backend.json``) under a key made of
the CPU model, the cores this process may use, the numpy / faiss / torch versions, sibscan's
version, the dimension and the tile, so a new machine or a library upgrade measures again.

Only searches of at least :data:`MEASURE_ABOVE_FLOPS` multiply-adds (about two seconds of work)
trigger the measurement (~30 s on 2 cores, once); smaller ones, and every search when
``SIBSCAN_SEARCH_MEASURE=0``, use the fallback: faiss when installed, else numpy.  A backend named
explicitly (``--backend faiss``) is never second-guessed.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import time
from typing import Callable, Dict, List, Optional

import numpy as np

from .._version import __version__
from ..atomic import write_json
from ..encoders.onnxrt import cache_root

__all__ = ["MEASURE_ABOVE_FLOPS", "cpu_backend", "fallback_backend", "machine_key", "measure"]

log = logging.getLogger("sibscan.search")

#: searches with at least this many flops (2 m n d) are worth a one-off measurement (~2 s of work)
MEASURE_ABOVE_FLOPS = 2e11
#: the measured problem: queries x database rows (of the search's dimension), and its rounds
SHAPE = (2048, 16384)
ROUNDS = 3
#: another backend replaces the fallback only when its median time is at least this much lower
SWITCH_MARGIN = 0.05
_FORMAT = 4  # 4: the fallback kept within SWITCH_MARGIN; 3: numpy measured beside faiss and torch, faiss split by query rows (2: one full tile)
_FILE = "search_backend.json"
_memo: Dict[str, dict] = {}
#: one exact CPU search: ``run(queries, database, k, backend)`` (passed in by ``sibscan.search``)
Runner = Callable[[np.ndarray, np.ndarray, int, str], object]


def fallback_backend() -> str:
    """The CPU backend when nothing is measured: faiss when installed, else numpy."""
    return "faiss" if importlib.util.find_spec("faiss") is not None else "numpy"


def candidates() -> List[str]:
    """Installed CPU backends worth measuring: faiss and torch where installed, and numpy always
    (its BLAS build can be the machine's fastest: 192-197 GFLOP/s against faiss's ~183 on a 2-core
    AMD EPYC)."""
    return [b for b in ("faiss", "torch") if importlib.util.find_spec(b) is not None] + ["numpy"]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> Optional[str]:
    for name in (dist, f"{dist}-cpu", f"{dist}-gpu"):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def machine_key(dim: int, tile=None) -> dict:
    """What a measurement is valid for: CPU model, usable cores, library versions, dimension and
    the measured tile (default :data:`SHAPE`)."""
    return {"format": _FORMAT, "cpu": _cpu_model(), "cores": _cores(), "dim": int(dim),
            "tile": [int(t) for t in (tile or SHAPE)],
            "sibscan": __version__, "numpy": _version("numpy"), "faiss": _version("faiss"),
            "torch": _version("torch")}


def _threads() -> dict:
    """Threads each library will use (recorded beside the times: all should equal the cores)."""
    out = {"cores": _cores()}
    if importlib.util.find_spec("torch") is not None:
        import torch

        out["torch"] = torch.get_num_threads()
    if importlib.util.find_spec("faiss") is not None:
        import faiss

        out["faiss"] = faiss.omp_get_max_threads()
    return out


def measure(dim: int, run: Runner, backends: Optional[List[str]] = None, *, shape=None,
            rounds: Optional[int] = None) -> dict:
    """Time each backend on one random problem of dimension ``dim``, top-1 and top-10.

    Parameters
    ----------
    dim : int
    run : callable ``run(queries, database, k, backend)``
        One exact CPU search (``sibscan.search.search`` with that backend).
    backends : list of str, optional
        Default: :func:`candidates`.
    shape : (int, int), optional
        Queries and database rows of the measured problem (default :data:`SHAPE`).
    rounds : int, optional
        Alternating rounds (default :data:`ROUNDS`; the order rotates each round, so a load that
        drifts favours none).

    Returns
    -------
    dict
        ``{"choice": {"1": name, "k": name}, "seconds": {"1": {name: [s, ...]}, "k": {...}},
        "shape": [m, n, dim], "threads": {...}, "load_average": float, "failed": {name: reason}}``
    """
    backends = list(backends or candidates())
    m, n = shape or SHAPE
    rounds = rounds or ROUNDS
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.standard_normal((m, dim), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    failed: Dict[str, str] = {}
    for b in list(backends):  # warm-up: imports, thread pools; a backend that fails here is left out
        try:
            run(q[:64], x[:2048], 10, b)
        except Exception as err:  # noqa: BLE001 -- a broken optional library must not stop a search
            failed[b] = f"{type(err).__name__}: {err}"
            backends.remove(b)
    seconds: Dict[str, Dict[str, list]] = {"1": {b: [] for b in backends}, "k": {b: [] for b in backends}}
    for r in range(max(1, rounds)):
        for kc, k in (("1", 1), ("k", 10)):
            for b in backends[r % len(backends):] + backends[: r % len(backends)] if backends else ():
                if b in failed:
                    continue
                t0 = time.perf_counter()
                try:
                    run(q, x, k, b)
                except Exception as err:  # noqa: BLE001 -- e.g. out of memory on the full tile: left out
                    failed[b] = f"{type(err).__name__}: {err}"
                    continue
                seconds[kc][b].append(round(time.perf_counter() - t0, 6))
    for times in seconds.values():
        for b in failed:
            times.pop(b, None)
    choice = {kc: _fastest(times) for kc, times in seconds.items()}
    return {"choice": choice, "seconds": seconds, "shape": [m, n, int(dim)], "threads": _threads(),
            "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None, "failed": failed}


def _fastest(times: Dict[str, list]) -> str:
    """The backend with the lowest median time; the fallback (faiss where installed) keeps its place
    unless another is at least :data:`SWITCH_MARGIN` faster, so that a tie inside the rounds' noise
    does not swap the kernel (measured on a 2-core AMD EPYC: numpy's top-1 median 0.3 % below
    faiss's in the pick, 1.3 % slower than raw faiss in the search that followed)."""
    keep = fallback_backend()
    if not times:
        return keep
    median = {b: float(np.median(t)) for b, t in times.items()}
    best = min(median, key=median.get)
    if keep in median and median[best] > median[keep] * (1.0 - SWITCH_MARGIN):
        return keep
    return best


def _cache_file():
    return cache_root() / _FILE


def _read(path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        log.warning("search backend measurements in %s unreadable (%s); measuring again", path, err)
        return {}
    return data if isinstance(data, dict) else {}


def cpu_backend(m: int, n: int, dim: int, k: int, run: Runner, tile=None) -> str:
    """The CPU backend ``auto`` uses for an ``m x n x dim`` top-``k`` search.

    Measured once per machine key (see the module docstring) for searches of at least
    :data:`MEASURE_ABOVE_FLOPS` (``run`` as in :func:`measure`; ``tile``, the (query, database)
    block a large search uses, is the measured problem, so the kernels are compared at the tile
    they run: torch's top-k cost and MKL's speed depend on it); otherwise, or with ``SIBSCAN_SEARCH_MEASURE=0``, or if the
    measurement cannot run, :func:`fallback_backend`.
    """
    if 2.0 * m * n * dim < MEASURE_ABOVE_FLOPS or os.environ.get("SIBSCAN_SEARCH_MEASURE", "1") == "0":
        return fallback_backend()
    cands = candidates()
    if len(cands) == 1:
        return cands[0]
    key = json.dumps(machine_key(dim, tile), sort_keys=True)
    record = _memo.get(key)
    if record is None:
        path = _cache_file()
        record = _read(path).get(key)
        if record is None:
            t0 = time.perf_counter()
            try:
                record = measure(dim, run, cands, shape=tile)
            except Exception as err:  # noqa: BLE001 -- the measurement must never stop a search
                log.warning("could not measure the search backends (%s: %s); using %s", type(err).__name__,
                            err, fallback_backend())
                return fallback_backend()
            record["measured_seconds"] = round(time.perf_counter() - t0, 3)
            log.info("search backend measured on this machine in %.1f s: %s for top-1, %s for top-k "
                     "(kept in %s; SIBSCAN_SEARCH_MEASURE=0 or an explicit backend skips this)",
                     record["measured_seconds"], record["choice"]["1"], record["choice"]["k"], path)
            try:
                stored = _read(path)
                stored[key] = record
                path.parent.mkdir(parents=True, exist_ok=True)
                write_json(path, stored)
            except OSError as err:
                log.warning("could not keep the search backend measurement in %s (%s); it holds for "
                            "this process only", path, err)
        _memo[key] = record
    choice = record.get("choice", {}).get("1" if k == 1 else "k")
    return choice if choice in cands else fallback_backend()
