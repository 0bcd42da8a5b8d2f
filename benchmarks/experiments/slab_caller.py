"""The CPU backend's slabs with the calling thread taking the first item of
each round itself (meshccl._cpu.mesh.SLAB_CALLER_WORKS) against waiting
for the pool: median wall µs of ``meshccl.label(a, cpu_threads=0)``,
ab-alternated, labels checked equal, beside the serial labeller.  Run on
the bench host (16 cores).

    python benchmarks/experiments/slab_caller.py [--reps 15]"""
import argparse

import numpy as np

from _common import wall_ms
import meshccl
from meshccl import patterns as P
from meshccl._cpu import mesh

# Python threads drive the slabs only where numba's parallel regions may not
# run since 2026-11-26 (slab_driver.py); this experiment is about that driver.
mesh.SLAB_DRIVER = "pool"

ap = argparse.ArgumentParser()
ap.add_argument("--reps", type=int, default=15)
args = ap.parse_args()
cases = []
for n in (512, 724, 1024, 2048):
    cases += [(f"blobs {n}^2", P.blobs((n, n))), (f"perc {n}^2", P.percolation((n, n), 0.5927))]
cases += [(f"blobs {n}^3", P.blobs((n,) * 3)) for n in (64, 128)]
print("us per call: serial | pool waits / caller works, two rounds", flush=True)
for name, a in cases:
    want = meshccl.label(a)
    row = [f"serial {wall_ms(lambda: meshccl.label(a), args.reps) * 1e3:.0f}"]
    for rnd in range(2):
        for v in ((False, True) if rnd == 0 else (True, False)):
            mesh.SLAB_CALLER_WORKS = v
            if not np.array_equal(meshccl.label(a, cpu_threads=0), want):
                raise SystemExit(f"{name}: labels differ")
            us = wall_ms(lambda: meshccl.label(a, cpu_threads=0), args.reps) * 1e3
            row.append(f"{'caller works' if v else 'pool waits'} {us:.0f}")
    print(f"{name:12s} | " + " | ".join(row), flush=True)
