"""The CPU backend's parallel non-plain cases (a mask, a tolerance, axes:
numba chunks of rows, meshccl._cpu.mesh._label_parallel) against the
serial labeller by array size, for several fewest-cells-per-thread
settings (meshccl._cpu.mesh.CHUNK_MIN_CELLS): median wall µs of
``meshccl.label(..., cpu_threads=0)``, labels checked equal to the serial
call.  Run on the bench host (16 cores) to choose the default.

    python benchmarks/experiments/chunk_min.py [--reps 15]"""
import argparse

import numba
import numpy as np

from _common import wall_ms
import meshccl
from meshccl import patterns as P
from meshccl._cpu import mesh

ap = argparse.ArgumentParser()
ap.add_argument("--reps", type=int, default=15)
args = ap.parse_args()
SETTINGS = [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18]
print(f"numba threads {numba.config.NUMBA_NUM_THREADS}; us per call; serial, then "
      + ", ".join(f"chunk min {s}" for s in SETTINGS), flush=True)


def variants(n):
    a = P.blobs((n, n))
    field = P.blobs((n, n)).astype(np.float32) + np.random.default_rng(0).random((n, n),
                                                                              np.float32)
    yield f"blobs {n}^2 mask", a, dict(mask=P.percolation((n, n), 0.9) > 0)
    yield f"field {n}^2 tol", field, dict(tolerance=0.3, background=None)
    stack = P.blobs((n // 2, n // 2, 8))  # the last axis not labelled: chunks, not slabs
    yield f"blobs {n // 2}^2x8 axes", stack, dict(axes=(0, 1))


for n in (128, 256, 512, 1024, 2048):
    for name, a, kw in variants(n):
        want = meshccl.label(a, **kw)
        row = [wall_ms(lambda: meshccl.label(a, **kw), args.reps) * 1e3]
        for s in SETTINGS:
            mesh.CHUNK_MIN_CELLS = s
            if not np.array_equal(meshccl.label(a, cpu_threads=0, **kw), want):
                raise SystemExit(f"{name}: labels differ at {s}")
            row.append(wall_ms(lambda: meshccl.label(a, cpu_threads=0, **kw), args.reps) * 1e3)
        print(f"{name:22s} {a.size:>9d} | " + " ".join(f"{x:9.0f}" for x in row), flush=True)
