"""Out-of-core search: peak RSS and time as the sharded train set grows.

For each train size, train embeddings (float16, dim 256) are written as shards on disk; then a
fresh subprocess searches 1,000 queries against them with a fixed memory budget and reports its
peak resident memory (``VmHWM`` from /proc/self/status, which counts file pages and allocator
arenas that tracemalloc misses) and the search time.  The same is done loading the whole train
array into memory for contrast.  Expected: time linear in the train size, sharded peak RSS flat.

    python -m benchmarks.outofcore [--quick]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks._common import print_table, write_results

CHILD = r"""
import json, sys, time
import numpy as np
from sibscan.search import search
from sibscan.store.shards import ShardedEmbeddings

path, mode, budget, backend = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
q = np.load(path + "/queries.npy")
db = ShardedEmbeddings(path + "/train")
if mode == "memory":
    db = db.read()
search(q[:4], db if mode == "memory" else q[:64], 1, backend=backend, progress=False)  # warm-up
t0 = time.perf_counter()
search(q, db, 5, backend=backend, memory_limit=budget, progress=False)
seconds = time.perf_counter() - t0
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({"seconds": seconds, "peak_rss_mib": hwm / 1024}))
"""


def _write_train(path: Path, n: int, d: int, chunk: int = 50000) -> None:
    from sibscan.store.shards import ShardedEmbeddings

    sh = ShardedEmbeddings.create(path, d, dtype="float16", shard_rows=100000)
    rng = np.random.default_rng(n)
    for s in range(0, n, chunk):
        x = rng.standard_normal((min(chunk, n - s), d), dtype=np.float32)
        sh.append(x / np.linalg.norm(x, axis=1, keepdims=True))


def _child(path: Path, mode: str, budget: int, backend: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode, str(budget), backend],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds; used by the tests)")
    ap.add_argument("--backend", default=None, choices=["torch", "numpy", "faiss"],
                    help="search backend (default torch; numpy with --quick, to skip importing torch)")
    args = ap.parse_args(argv)
    args.backend = args.backend or ("numpy" if args.quick else "torch")
    d = 64 if args.quick else 256
    sizes = [5000, 10000, 20000] if args.quick else [50000, 100000, 200000, 400000, 800000]
    budget = (8 if args.quick else 64) << 20
    rows = []
    with tempfile.TemporaryDirectory(prefix="sibscan-ooc-") as tmp:
        tmp = Path(tmp)
        rng = np.random.default_rng(0)
        q = rng.standard_normal((200 if args.quick else 1000, d), dtype=np.float32)
        np.save(tmp / "queries.npy", q / np.linalg.norm(q, axis=1, keepdims=True))
        for n in sizes:
            import shutil

            shutil.rmtree(tmp / "train", ignore_errors=True)
            _write_train(tmp / "train", n, d)
            for mode in ("sharded", "memory"):
                r = _child(tmp, mode, budget, args.backend)
                rows.append({"train_rows": n, "mode": mode, "train_mib": n * d * 2 / 2**20,
                             "seconds": r["seconds"], "us_per_train_row": r["seconds"] / n * 1e6,
                             "peak_rss_mib": r["peak_rss_mib"]})
    print_table(rows, ["train_rows", "mode", "train_mib", "seconds", "us_per_train_row", "peak_rss_mib"])
    sharded = [r for r in rows if r["mode"] == "sharded"]
    summary = {
        "rss_growth_mib_sharded": sharded[-1]["peak_rss_mib"] - sharded[0]["peak_rss_mib"],
        "time_ratio_last_first": sharded[-1]["seconds"] / sharded[0]["seconds"],
        "size_ratio_last_first": sizes[-1] / sizes[0],
    }
    print(summary)
    path = write_results("outofcore" + ("_quick" if args.quick else ""),
                         {"dim": d, "memory_limit_bytes": budget, "backend": args.backend,
                          "rows": rows, "summary": summary})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
