"""Graph connected components: meshccl (CPU backend) against
scipy.sparse.csgraph.connected_components on generated graphs, side by side
in one process, labels checked identical.  Writes a markdown table.

    python benchmarks/graph_bench.py [--scale 20] [--out DIR]
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
from meshccl.graph import connected_components


def timed(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=20, help="RMAT scale (2**scale vertices)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    opt = ap.parse_args(argv)
    s = opt.scale
    side = int(2 ** (s / 2))
    cases = [
        (f"RMAT scale {s}, edge factor 16", gen.rmat(s, 16, seed=1)),
        (f"road-like grid {side}², 55% of edges", gen.grid((side, side), keep=0.55, seed=2)),
        (f"line, {2**s} vertices", gen.line(2 ** s)),
        (f"disjoint: 64 trees of {2**s // 64}", gen.disjoint(64, 2 ** s // 64, seed=3)),
        (f"random, {2**s} vertices, {2**s} edges", gen.random_edges(2 ** s, 2 ** s, seed=4)),
    ]
    rows = []
    for name, e in cases:
        n = e.n_vertices
        csr = sp.coo_matrix((np.ones(e.src.size, np.int8), (e.src, e.dst)), shape=(n, n)).tocsr()
        t_s, (n_s, lab_s) = timed(lambda: scipy_cc(csr, directed=True, connection="weak"), opt.reps)
        t_m, (n_m, lab_m) = timed(lambda: connected_components(csr), opt.reps)
        t_e, (n_e, lab_e) = timed(lambda: connected_components(e), opt.reps)
        same = n_s == n_m == n_e and np.array_equal(lab_s, lab_m) and np.array_equal(lab_s, lab_e)
        rows.append((name, n, csr.nnz, n_s, t_s, t_m, t_e, same))
        print(f"{name:40s} scipy {t_s*1e3:9.1f} ms  meshccl CSR {t_m*1e3:9.1f} ms  "
              f"edges {t_e*1e3:9.1f} ms  {'identical' if same else 'MISMATCH'}", flush=True)
    head = (f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"meshccl {meshccl.__version__}, SciPy {scipy.__version__}; "
            f"command: `python {' '.join(sys.argv)}`; median of {opt.reps} after a warm-up.")
    lines = [head, "", "| graph | vertices | stored edges | components | scipy ms | meshccl (CSR) ms | meshccl (edge list) ms | speed-up (CSR) | labels |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, n, m, c, ts_, tm, te, same in rows:
        lines.append(f"| {name} | {n} | {m} | {c} | {ts_*1e3:.1f} | {tm*1e3:.1f} | {te*1e3:.1f} | "
                     f"{ts_/tm:.2f}× | {'identical' if same else 'MISMATCH'} |")
    table = "\n".join(lines)
    print(table)
    if opt.out:
        Path(opt.out).mkdir(parents=True, exist_ok=True)
        Path(opt.out, "graph_bench.md").write_text(table + "\n")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
