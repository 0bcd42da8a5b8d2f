"""Where the CPU slabs' time goes: each round of ``_label_slabs`` (the
slabs, the seams, the numbering, the gathers) timed on its own, for 1..16
slabs, with a fresh label buffer per call (as ``meshccl.label`` does) and
with one buffer reused (already paged in).  Median wall µs over ``--reps``
calls after one warm-up; labels checked against the serial labeller.  Run
on the bench host (16 cores).

    python benchmarks/experiments/slab_rounds.py [--reps 21]"""
import argparse
import time

import numpy as np

from _common import wall_ms  # noqa: F401  (puts the repository on sys.path)
import meshccl
from meshccl import patterns as P
from meshccl._cpu import mesh
from meshccl.neighbourhood import offset_table

ap = argparse.ArgumentParser()
ap.add_argument("--reps", type=int, default=21)
args = ap.parse_args()


def rounds(values, L, shape, table, T):
    """_label_slabs with a clock after each round; returns (count, times)."""
    t = [time.perf_counter()]
    rows = int(shape[0])
    plane = values.shape[0] // rows
    cuts = [rows * s // T for s in range(T + 1)]
    shapes = []
    for s in range(T):
        sh = shape.copy()
        sh[0] = cuts[s + 1] - cuts[s]
        shapes.append(sh)
    sl = [slice(cuts[s] * plane, cuts[s + 1] * plane) for s in range(T)]
    pool = mesh._slab_pool(T)
    bg = values.dtype.type(0)
    res = mesh._run(pool, lambda s: mesh._slab(values[sl[s]], L[sl[s]], shapes[s], table, True,
                                               bg), range(T))
    t.append(time.perf_counter())
    offsets = np.zeros(T + 1, dtype=np.int64)
    for s in range(T):
        offsets[s + 1] = offsets[s] + res[s][2]
    N = int(offsets[T])
    G = np.arange(N + 1, dtype=np.int64)
    mesh._run(pool, lambda s: mesh._seam(values, L, shape, table, cuts[s], res[s - 1][0],
                                         offsets[s - 1], res[s][0], offsets[s], G), range(1, T))
    t.append(time.perf_counter())
    count = mesh._number_table(G, N)
    t.append(time.perf_counter())
    mesh._run(pool, lambda s: mesh._gather(L[sl[s]], res[s][0], res[s][1], G, offsets[s]),
              range(T))
    t.append(time.perf_counter())
    return count, np.diff(t)


cases = []
for n in (512, 1024, 2048):
    cases += [(f"blobs {n}^2", P.blobs((n, n))), (f"perc {n}^2", P.percolation((n, n), 0.5927))]
cases += [(f"blobs {n}^3", P.blobs((n,) * 3)) for n in (64,)]
print("µs: total = slabs + seams + number + gathers; 'fresh' = np.empty per call, "
      "'reused' = one buffer", flush=True)
for name, a in cases:
    want = meshccl.label(a, connectivity=1, dtype=np.int32).ravel()
    values = np.ascontiguousarray(a).ravel()
    shape = np.asarray(a.shape, dtype=np.int64)
    table = offset_table(a.shape, 1, None)
    ser = []
    for _ in range(args.reps):
        L = np.empty(values.shape[0], np.int32)
        t0 = time.perf_counter()
        mesh.label_mesh(values, L, shape, table, True, values.dtype.type(0))
        ser.append(time.perf_counter() - t0)
    print(f"{name:12s} serial label_mesh {np.median(ser) * 1e6:7.0f}", flush=True)
    for T in (2, 4, 8, 16):
        for mode in ("fresh", "reused"):
            buf = np.empty(values.shape[0], np.int32)
            rounds(values, buf, shape, table, T)
            ts = []
            for _ in range(args.reps):
                L = np.empty(values.shape[0], np.int32) if mode == "fresh" else buf
                c, dt = rounds(values, L, shape, table, T)
                ts.append(dt)
            if not np.array_equal(L, want):
                raise SystemExit(f"{name} T={T}: labels differ")
            m = np.median(np.array(ts), axis=0) * 1e6
            print(f"{name:12s} T={T:2d} {mode:6s} total {m.sum():7.0f} = "
                  + " + ".join(f"{x:6.0f}" for x in m), flush=True)
