"""Exact top-k search speed: our backends vs faiss IndexFlatIP vs sklearn, against the GEMM rate.

CPU (default): 10,000 x 200,000 x 512 exact top-1 and top-5.  Reported as GFLOP/s-equivalent
(2 m n d / seconds) and as ratios to faiss IndexFlatIP, to sklearn NearestNeighbors(brute, cosine)
(timed on a subset of the queries and scaled linearly, which is how its brute search scales), and
to a plain float32 matmul of the same shape measured in the same run.

GPU (``--device cuda``): 10,000 x 1,000,000 x 512 exact top-1 (and top-5) with the bf16 candidate
path, as TFLOP/s against a plain bf16 ``torch.matmul`` of the search's block shape (target >= 50 %).

    python -m benchmarks.search [--quick] [--device cuda]
"""
from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

from benchmarks._common import best_time, print_table, write_results


def _unit(rng, n, d):
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def _data(m, n, d, seed=0):
    """Random database; half the queries are noisy copies of database rows (planted siblings)."""
    rng = np.random.default_rng(seed)
    x = _unit(rng, n, d)
    h = m // 2
    q = np.concatenate([x[rng.integers(0, n, h)] + 0.05 * _unit(rng, h, d), _unit(rng, m - h, d)])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q, x


def run_cpu(m: int, n: int, d: int, ks, sklearn_queries: int, repeat: int) -> dict:
    from sibscan.search import search

    q, x = _data(m, n, d)
    flops = 2.0 * m * n * d
    # plain float32 matmul of the whole problem, blocked like the search (GEMM floor)
    buf = np.empty((min(m, 4096), 16384), np.float32)

    def matmul():
        for s in range(0, n, 16384):
            xb = x[s:s + 16384]
            for q0 in range(0, m, 4096):
                np.matmul(q[q0:q0 + 4096], xb.T, out=buf[: min(4096, m - q0), : xb.shape[0]])

    t_mm = best_time(matmul, repeat)
    rows = [{"method": "float32 matmul (numpy BLAS)", "k": "-", "seconds": t_mm, "gflops": flops / t_mm / 1e9}]
    results = {"matmul_gflops": flops / t_mm / 1e9, "runs": []}
    have_faiss = importlib.util.find_spec("faiss") is not None
    have_sklearn = importlib.util.find_spec("sklearn") is not None
    for k in ks:
        times = {}
        answer = None
        if have_faiss:
            import faiss

            index = faiss.IndexFlatIP(d)
            index.add(x)
            times["faiss IndexFlatIP"] = best_time(lambda: index.search(q, k), repeat)
            answer = index.search(q, k)[1]
        for backend in ("torch", "numpy") + (("faiss",) if have_faiss else ()):
            if backend == "torch" and importlib.util.find_spec("torch") is None:
                continue
            search(q[:8], x[:4096], k, backend=backend, progress=False)  # warm-up: imports, thread pools
            times[f"sibscan {backend}"] = best_time(lambda: search(q, x, k, backend=backend, progress=False), repeat)
            if answer is not None:
                got = search(q, x, k, backend=backend, progress=False)[1]
                results.setdefault("top1_agreement_with_faiss", {})[f"{backend}@{k}"] = float(
                    (got[:, 0] == answer[:, 0]).mean())
        if have_sklearn:
            from sklearn.neighbors import NearestNeighbors

            sub = min(m, sklearn_queries)
            nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric="cosine").fit(x)
            t_sub = best_time(lambda: nn.kneighbors(q[:sub]), 1)
            times[f"sklearn brute cosine (x{m / sub:.0f} from {sub} queries)"] = t_sub * m / sub
        ref = times.get("faiss IndexFlatIP")
        skl = next((v for key, v in times.items() if key.startswith("sklearn")), None)
        for name, t in times.items():
            row = {"method": name, "k": k, "seconds": t, "gflops": flops / t / 1e9,
                   "x_matmul": t_mm / t}
            if ref:
                row["x_faiss"] = ref / t
            if skl:
                row["x_sklearn"] = skl / t
            rows.append(row)
            results["runs"].append(row)
    print_table(rows, ["method", "k", "seconds", "gflops", "x_matmul", "x_faiss", "x_sklearn"])
    return results


def run_cuda(m: int, n: int, d: int, ks, repeat: int) -> dict:
    import torch

    from sibscan.kernels.topk_torch import search_blocks_torch
    from sibscan.search import plan_blocks

    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(n, d, device=dev, generator=g)
    x /= x.norm(dim=1, keepdim=True)
    h = m // 2
    q = torch.cat([x[torch.randint(0, n, (h,), device=dev, generator=g)]
                   + 0.05 * torch.randn(h, d, device=dev, generator=g),
                   torch.randn(m - h, d, device=dev, generator=g)])
    q = (q / q.norm(dim=1, keepdim=True)).cpu().numpy()
    query_block, block_rows, _ = plan_blocks(m, n, d, device="cuda")
    flops = 2.0 * m * n * d

    def sync(fn):
        def run():
            fn()
            torch.cuda.synchronize()
        return run

    # the card's bf16 rate on the search's own matrix shapes
    qh = torch.as_tensor(q, device=dev).to(torch.bfloat16)
    xh = x.to(torch.bfloat16)

    def mm():
        for s in range(0, n, block_rows):
            for q0 in range(0, m, query_block):
                qh[q0:q0 + query_block] @ xh[s:s + block_rows].T

    sync(mm)()
    t_mm = best_time(sync(mm), repeat)
    mm_tflops = flops / t_mm / 1e12
    rows = [{"method": "bf16 matmul", "k": "-", "seconds": t_mm, "tflops": mm_tflops, "x_matmul": 1.0}]
    results = {"bf16_matmul_tflops": mm_tflops, "query_block": query_block, "block_rows": block_rows, "runs": []}

    def blocks():
        return ((s, x[s:s + block_rows]) for s in range(0, n, block_rows))

    ref = {}
    for half in ("bf16", "fp16", None):
        for k in ks:
            stats = {}
            fn = sync(lambda: search_blocks_torch(q, blocks, k, device="cuda", half=half,
                                                  query_block=query_block, stats=stats))
            fn()  # warm-up (cuBLAS heuristics, allocator)
            t = best_time(fn, repeat)
            sims, ids = search_blocks_torch(q, blocks, k, device="cuda", half=half, query_block=query_block)
            name = f"sibscan torch {half or 'fp32'}"
            row = {"method": name, "k": k, "seconds": t, "tflops": flops / t / 1e12, "x_matmul": t_mm / t,
                   "uncertified_rows": stats.get("uncertified_rows", 0)}
            if half is None:
                ref[k] = (sims, ids)
            rows.append(row)
            results["runs"].append(row)
            results.setdefault("_answers", {})[(name, k)] = (sims, ids)
    answers = results.pop("_answers")
    for (name, k), (sims, ids) in answers.items():
        rs, ri = ref[k]
        results.setdefault("agreement_with_fp32", {})[f"{name}@{k}"] = {
            "top1_equal": float((ids[:, 0] == ri[:, 0]).mean()),
            "max_abs_sim_diff": float(np.abs(sims - rs).max()),
        }
    print_table(rows, ["method", "k", "seconds", "tflops", "x_matmul", "uncertified_rows"])
    print("agreement with the fp32 search:", results["agreement_with_fp32"], flush=True)
    return results


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds; used by the tests)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.device == "cuda":
        m, n, d = (2000, 50000, 128) if args.quick else (10000, 1000000, 512)
        res = run_cuda(m, n, d, (1, 5), args.repeat or 3)
        name = "search_cuda" + ("_quick" if args.quick else "")
    else:
        m, n, d = (300, 5000, 64) if args.quick else (10000, 200000, 512)
        res = run_cpu(m, n, d, (1, 5), sklearn_queries=100 if args.quick else 1000, repeat=args.repeat or 1)
        name = "search" + ("_quick" if args.quick else "")
    res.update({"shape": {"queries": m, "database": n, "dim": d}, "device": args.device,
                "wall_seconds": time.perf_counter() - t0})
    path = write_results(name, res)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
