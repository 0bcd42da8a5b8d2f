"""The CPU backend's parallel plain case against its serial labeller by
array size, for several fewest-cells-per-slab settings
(meshccl._cpu.mesh.SLAB_MIN_CELLS; 1: slabs of any size; the slabs run
in numba's parallel regions since 2026-11-26, on Python threads before): median wall time of
``meshccl.label(a, cpu_threads=0)`` on NumPy blobs and percolation images,
2-D and 3-D.  Run on the bench host (16 cores) to choose the default.

    python benchmarks/experiments/slab_min.py [--reps 30]"""
import argparse

from _common import wall_ms
import meshccl
from meshccl import patterns as P
from meshccl._cpu import mesh

ap = argparse.ArgumentParser()
ap.add_argument("--reps", type=int, default=30)
args = ap.parse_args()
SETTINGS = [1, 1 << 12, 1 << 14, 1 << 15, 1 << 16, 1 << 17]


def wall_us(f):
    return wall_ms(f, args.reps) * 1e3


import numba  # noqa: E402

print(f"numba threads {numba.config.NUMBA_NUM_THREADS}; us per call; serial, then "
      + ", ".join(f"slab min {s}" for s in SETTINGS), flush=True)
cases = []
for n in (64, 128, 256, 362, 512, 724, 1024, 2048, 4096):
    cases += [(f"blobs {n}^2", P.blobs((n, n))),
              (f"perc {n}^2", P.percolation((n, n), 0.5927))]
for n in (32, 64, 128, 256):
    cases += [(f"blobs {n}^3", P.blobs((n,) * 3))]
for name, a in cases:
    row = [wall_us(lambda: meshccl.label(a))]
    for s in SETTINGS:
        mesh.SLAB_MIN_CELLS = s
        row.append(wall_us(lambda: meshccl.label(a, cpu_threads=0)))
    print(f"{name:14s} {a.size:>9d} | " + " ".join(f"{x:9.0f}" for x in row), flush=True)
