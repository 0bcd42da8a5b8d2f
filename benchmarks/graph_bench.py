"""Graph connected components: meshccl against
scipy.sparse.csgraph.connected_components on generated graphs, side by side
in one process, every result checked identical to SciPy's.  Writes a
markdown table.

    python benchmarks/graph_bench.py [--scale 20] [--out DIR]
    python benchmarks/graph_bench.py --gpu --scale 22 --grid-side 4096 --reps 5 --out DIR
    python benchmarks/graph_bench.py --networkx --scale 16

CPU columns: SciPy and meshccl's CPU backend (CSR and edge-list input), wall
clock, median of --reps after a warm-up.  With --gpu (needs CuPy and a GPU;
refused clearly otherwise) every GPU method also runs on the graph held on
the device as a cupyx CSR matrix (and 'unionfind' also on the edge list),
timed end to end -- validation, kernels, relabel and the one synchronisation
for the count -- with CUDA events, median of --reps after a warm-up; the
table adds edges per second and the best GPU method per graph.  The
iterative methods ('sv', 'edge-lp', 'vertex-lp', 'bfs-cc') run with
max_iterations=--max-passes; a run that reaches it is reported "stopped"
(with the time it took, a lower bound) and not repeated.  A summary line
gives the geometric-mean speed-up of 'ecl' over Hawick's kernels and SV
(issue 5 asks for >= 1.8x).  --networkx adds networkx.connected_components
(graph built beforehand, not timed) as a peer, at --scale <= 16 only.
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
from meshccl.errors import NotConverged
from meshccl.graph import GPU_METHODS, ITERATIVE, Edges, connected_components

#: the GPU methods timed ('async' and 'bfs' are aliases)
BENCH_METHODS = [m for m in GPU_METHODS if m not in ("async", "bfs")]
#: the methods 'ecl' is compared with in the summary line
HAWICK_SV = ("edge-lp", "vertex-lp", "bfs-cc", "sv")


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
    also compiles the kernels).  A NotConverged run gives (seconds of the
    stopped run, None) and is not repeated."""
    import cupy

    try:
        out = f()
    except NotConverged:
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        try:
            f()
        except NotConverged:
            pass
        stop.record()
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3, None
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
    ap.add_argument("--max-passes", type=int, default=20000,
                    help="max_iterations of the iterative GPU methods (beyond: 'stopped')")
    ap.add_argument("--networkx", action="store_true",
                    help="also time networkx.connected_components (only at --scale <= 16)")
    ap.add_argument("--out", default=None)
    opt = ap.parse_args(argv)
    if opt.gpu and not meshccl.gpu_available():
        print("--gpu: no CUDA GPU is usable (CuPy missing or no device)", file=sys.stderr)
        return 2
    s = opt.scale
    side = opt.grid_side or int(2 ** (s / 2))
    gpu_methods = BENCH_METHODS if opt.gpu else []
    nx = None
    if opt.networkx:
        if opt.scale > 16:
            print("--networkx: only at --scale <= 16 (networkx is pure Python)", file=sys.stderr)
            return 2
        try:
            import networkx as nx
        except ImportError:
            print("--networkx: networkx is not importable", file=sys.stderr)
            return 2
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
        t_nx = None
        if nx is not None:
            G = nx.Graph()
            G.add_nodes_from(range(n))
            G.add_edges_from(zip(e.src.tolist(), e.dst.tolist()))
            t_nx, comps = timed(lambda: list(nx.connected_components(G)), opt.reps)
            same = same and len(comps) == n_s
            del G
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
                kw = {"max_iterations": opt.max_passes} if method in ITERATIVE else {}
                t, out = timed_gpu(lambda: connected_components(g, method=method,
                                                                symmetric=opt.symmetric, **kw),
                                   opt.reps)
                if out is None:
                    gpu[f"{method} ({form})"] = (t, "stopped")
                    continue
                c, lab = out
                ok = c == n_s and np.array_equal(lab.get(), lab_s)
                same = same and ok
                gpu[f"{method} ({form})"] = (t, ok)
            del g_csr, g_edges
            cupy.get_default_memory_pool().free_all_blocks()
        rows.append((name, n, csr.nnz, n_s, t_s, t_m, t_e, gpu, same, t_nx))
        line = (f"{name:44s} scipy {t_s*1e3:9.1f} ms  meshccl CPU CSR {t_m*1e3:8.1f} ms  "
                f"edges {t_e*1e3:8.1f} ms" + (f"  networkx {t_nx*1e3:9.1f} ms" if t_nx else ""))
        for k, (t, ok) in gpu.items():
            line += f"  | GPU {k} {t*1e3:7.2f} ms{_mark(ok)}"
        print(line + f"  {'identical' if same else 'MISMATCH'}", flush=True)

    head = (f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
            f"{_gpu_name() if gpu_methods else ''}; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"meshccl {meshccl.__version__}, SciPy {scipy.__version__}; "
            f"command: `python {' '.join(sys.argv)}`; median of {opt.reps} after a warm-up"
            f"{'; GPU times by CUDA events, end to end (validation, kernels, relabel, count)' if gpu_methods else ''}"
            f"{'; every edge stored both ways, symmetric=True' if opt.symmetric else ''}.")
    nxh = (" networkx ms |", "---:|") if nx is not None else ("", "")
    lines = [head, "", "| graph | vertices | stored edges | components | scipy ms |" + nxh[0] +
             " meshccl CPU (CSR) ms | meshccl CPU (edge list) ms | speed-up (CPU CSR) | labels |",
             "|---|---:|---:|---:|---:|" + nxh[1] + "---:|---:|---:|---|"]
    for name, n, m, c, ts_, tm, te, gpu, same, t_nx in rows:
        nxc = f" {t_nx*1e3:.1f} |" if nx is not None else ""
        lines.append(f"| {name} | {n} | {m} | {c} | {ts_*1e3:.1f} |{nxc} {tm*1e3:.1f} | {te*1e3:.1f} | "
                     f"{ts_/tm:.2f}× | {'identical' if same else 'MISMATCH'} |")
    if gpu_methods:
        keys = list(rows[0][7]) if rows else []
        lines += ["", "GPU, ms (edges/s), every method; labels checked equal to SciPy's:", "",
                  "| graph | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
        for name, n, m, *_, gpu, _same, _nx in rows:
            cells = [(f"stopped after {t*1e3:.0f} ms" if ok == "stopped" else
                      f"{t*1e3:.2f} ({m / t:.3g}){_mark(ok)}") for t, ok in gpu.values()]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines += ["", "Best GPU method per graph:", "",
                  "| graph | stored edges | best | ms | edges/s | speed-up vs scipy | 'auto' picked, ms |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for name, n, m, c, ts_, tm, te, gpu, same, _nx in rows:
            best = min((k for k in gpu if gpu[k][1] is True), key=lambda k: gpu[k][0])
            t = gpu[best][0]
            lines.append(f"| {name} | {m} | {best} | {t*1e3:.2f} | {m / t:.3g} | {ts_ / t:.1f}× | "
                         f"{gpu['auto (CSR)'][0]*1e3:.2f} |")
        lines += ["", _ecl_summary(rows)]
    table = "\n".join(lines)
    print(table)
    if opt.out:
        Path(opt.out).mkdir(parents=True, exist_ok=True)
        fname = "graph_bench_gpu.md" if gpu_methods else "graph_bench.md"
        Path(opt.out, fname).write_text(table + "\n")
    return 0 if all(r[-2] for r in rows) else 1


def _mark(ok):
    return "" if ok is True else (" stopped" if ok == "stopped" else " MISMATCH")


def _ecl_summary(rows):
    """ECL vs Hawick/SV: geometric mean over graphs and methods of
    t(method) / t(ecl), CSR input.  A stopped run counts with the time it
    took before stopping (a lower bound on the speed-up)."""
    ratios, parts, stopped = [], [], 0
    for method in HAWICK_SV:
        rs = []
        for *_, gpu, _same, _nx in rows:
            t_ecl, ok_ecl = gpu.get("ecl (CSR)", (None, False))
            t, ok = gpu.get(f"{method} (CSR)", (None, False))
            if t_ecl is None or t is None or ok_ecl is not True or ok is False:
                continue
            stopped += ok == "stopped"
            rs.append(t / t_ecl)
        if rs:
            parts.append(f"{method} {np.exp(np.mean(np.log(rs))):.1f}×")
            ratios += rs
    if not ratios:
        return "ECL vs Hawick/SV: no data."
    g = float(np.exp(np.mean(np.log(ratios))))
    return (f"ECL vs Hawick/SV (geometric-mean speed-up of 'ecl' over {', '.join(HAWICK_SV)}, "
            f"CSR, {len(rows)} graphs): {'≥ ' if stopped else ''}{g:.1f}× "
            f"({'; '.join(parts)}; issue 5 target ≥ 1.8×: {'met' if g >= 1.8 else 'NOT met'}"
            f"{f'; {stopped} stopped runs count with their time so far' if stopped else ''}).")


def _gpu_name():
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return f", GPU: {name}, CuPy {cupy.__version__}"


if __name__ == "__main__":
    sys.exit(main())
