"""Graph connected components: meshccl against
scipy.sparse.csgraph.connected_components on generated graphs, side by side
in one process, every result checked identical to SciPy's.  Writes a
markdown table.

    python benchmarks/graph_bench.py [--scale 20] [--out DIR]
    python benchmarks/graph_bench.py --gpu --scale 22 --grid-side 4096 --out DIR

CPU columns: SciPy and meshccl's CPU backend (CSR and edge-list input), wall
clock, median of --reps after a warm-up.  With --gpu (needs CuPy and a GPU;
refused clearly otherwise) every GPU method also runs on the graph held on
the device as a cupyx CSR matrix (and 'unionfind' also on the edge list),
timed end to end -- validation, kernels, relabel and the one synchronisation
for the count -- with CUDA events, median of --reps after a warm-up; the
table adds edges per second and the best GPU method per graph.
"""

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components as scipy_cc

import meshccl
from meshccl import graph_generators as gen
from meshccl.graph import GPU_METHODS, Edges, connected_components


def timed(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def timed_gpu(f, reps):
    """Median seconds of f() by CUDA events, after one warm-up call (which
    also compiles the kernels)."""
    import cupy

    out = f()
    cupy.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        out = f()
        stop.record()
        stop.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(ts)), out


def cases(s, side):
    n = 2 ** s
    return [
        (f"RMAT scale {s}, edge factor 16", lambda: gen.rmat(s, 16, seed=1)),
        (f"2-D grid {side}²", lambda: gen.grid((side, side))),
        (f"road-like grid {side}², 55% of edges", lambda: gen.grid((side, side), keep=0.55, seed=2)),
        (f"Watts–Strogatz, {n} vertices, k=8, p=0.1", lambda: gen.watts_strogatz(n, 8, 0.1, seed=5)),
        (f"line, {n} vertices", lambda: gen.line(n)),
        (f"disjoint: 64 trees of {n // 64}", lambda: gen.disjoint(64, n // 64, seed=3)),
        (f"random, {n} vertices, {n} edges", lambda: gen.random_edges(n, n, seed=4)),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=20, help="2**scale vertices (RMAT scale)")
    ap.add_argument("--grid-side", type=int, default=None,
                    help="side of the 2-D grids (default 2**(scale/2))")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gpu", action="store_true", help="also time every GPU method (needs CuPy and a GPU)")
    ap.add_argument("--symmetric", action="store_true",
                    help="store every edge in both directions and tell meshccl so (symmetric=True)")
    ap.add_argument("--only", default=None, help="run only graphs whose name contains this text")
    ap.add_argument("--out", default=None)
    opt = ap.parse_args(argv)
    if opt.gpu and not meshccl.gpu_available():
        print("--gpu: no CUDA GPU is usable (CuPy missing or no device)", file=sys.stderr)
        return 2
    s = opt.scale
    side = opt.grid_side or int(2 ** (s / 2))
    gpu_methods = [m for m in GPU_METHODS] if opt.gpu else []
    rows = []
    for name, make in cases(s, side):
        if opt.only and opt.only not in name:
            continue
        e = make()
        n = e.n_vertices
        if opt.symmetric:
            e = Edges(np.concatenate([e.src, e.dst]), np.concatenate([e.dst, e.src]), n)
        csr = sp.coo_matrix((np.ones(e.src.size, np.int8), (e.src, e.dst)), shape=(n, n)).tocsr()
        t_s, (n_s, lab_s) = timed(lambda: scipy_cc(csr, directed=True, connection="weak"), opt.reps)
        t_m, (n_m, lab_m) = timed(lambda: connected_components(csr), opt.reps)
        t_e, (n_e, lab_e) = timed(lambda: connected_components(e), opt.reps)
        same = n_s == n_m == n_e and np.array_equal(lab_s, lab_m) and np.array_equal(lab_s, lab_e)
        gpu = {}
        if gpu_methods:
            import cupy
            import cupyx.scipy.sparse as csp

            g_csr = csp.csr_matrix((cupy.ones(csr.nnz, cupy.float32), cupy.asarray(csr.indices),
                                    cupy.asarray(csr.indptr)), shape=csr.shape)
            g_edges = Edges(cupy.asarray(e.src), cupy.asarray(e.dst), n)
            runs = [(m, "CSR", g_csr) for m in gpu_methods] + [("unionfind", "edges", g_edges),
                                                               ("auto", "edges", g_edges)]
            for method, form, g in runs:
                t, (c, lab) = timed_gpu(lambda: connected_components(g, method=method,
                                                                     symmetric=opt.symmetric), opt.reps)
                ok = c == n_s and np.array_equal(lab.get(), lab_s)
                same = same and ok
                gpu[f"{method} ({form})"] = (t, ok)
            del g_csr, g_edges
            cupy.get_default_memory_pool().free_all_blocks()
        rows.append((name, n, csr.nnz, n_s, t_s, t_m, t_e, gpu, same))
        line = (f"{name:44s} scipy {t_s*1e3:9.1f} ms  meshccl CPU CSR {t_m*1e3:8.1f} ms  "
                f"edges {t_e*1e3:8.1f} ms")
        for k, (t, ok) in gpu.items():
            line += f"  | GPU {k} {t*1e3:7.2f} ms{'' if ok else ' MISMATCH'}"
        print(line + f"  {'identical' if same else 'MISMATCH'}", flush=True)

    head = (f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
            f"{_gpu_name() if gpu_methods else ''}; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"meshccl {meshccl.__version__}, SciPy {scipy.__version__}; "
            f"command: `python {' '.join(sys.argv)}`; median of {opt.reps} after a warm-up"
            f"{'; GPU times by CUDA events, end to end (validation, kernels, relabel, count)' if gpu_methods else ''}"
            f"{'; every edge stored both ways, symmetric=True' if opt.symmetric else ''}.")
    lines = [head, "", "| graph | vertices | stored edges | components | scipy ms | meshccl CPU (CSR) ms | "
             "meshccl CPU (edge list) ms | speed-up (CPU CSR) | labels |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, n, m, c, ts_, tm, te, gpu, same in rows:
        lines.append(f"| {name} | {n} | {m} | {c} | {ts_*1e3:.1f} | {tm*1e3:.1f} | {te*1e3:.1f} | "
                     f"{ts_/tm:.2f}× | {'identical' if same else 'MISMATCH'} |")
    if gpu_methods:
        keys = list(rows[0][7]) if rows else []
        lines += ["", "GPU, ms (edges/s), every method; labels checked equal to SciPy's:", "",
                  "| graph | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
        for name, n, m, *_, gpu, _same in rows:
            cells = [f"{t*1e3:.2f} ({m / t:.3g}){'' if ok else ' MISMATCH'}" for t, ok in gpu.values()]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines += ["", "Best GPU method per graph:", "",
                  "| graph | stored edges | best | ms | edges/s | speed-up vs scipy | 'auto' picked, ms |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for name, n, m, c, ts_, tm, te, gpu, same in rows:
            best = min(gpu, key=lambda k: gpu[k][0])
            t = gpu[best][0]
            lines.append(f"| {name} | {m} | {best} | {t*1e3:.2f} | {m / t:.3g} | {ts_ / t:.1f}× | "
                         f"{gpu['auto (CSR)'][0]*1e3:.2f} |")
    table = "\n".join(lines)
    print(table)
    if opt.out:
        Path(opt.out).mkdir(parents=True, exist_ok=True)
        fname = "graph_bench_gpu.md" if gpu_methods else "graph_bench.md"
        Path(opt.out, fname).write_text(table + "\n")
    return 0 if all(r[-1] for r in rows) else 1


def _gpu_name():
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return f", GPU: {name}, CuPy {cupy.__version__}"


if __name__ == "__main__":
    sys.exit(main())
