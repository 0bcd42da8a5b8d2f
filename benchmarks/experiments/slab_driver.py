"""The CPU backend's slabs driven by numba parallel regions
(meshccl._cpu.mesh.SLAB_DRIVER = "numba", :func:`_slabs`) against Python
threads ("pool", :func:`_label_slabs`): median wall µs of
``meshccl.label(a, cpu_threads=0)`` in blocks of calls per driver (two
rounds, order swapped), labels checked equal, beside the serial labeller.
Also prints numba's threading layer.  Run on the bench host (16 cores).

    python benchmarks/experiments/slab_driver.py [--reps 15]"""
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
cases = [("blobs 64^2 c1", P.blobs((64, 64)), 1)]
for n in (512, 724, 1024, 2048, 4096):
    cases += [(f"blobs {n}^2 c1", P.blobs((n, n)), 1),
              (f"perc {n}^2 c1", P.percolation((n, n), 0.5927), 1)]
cases += [("potts4 1024^2 c2", P.potts((1024, 1024), 4), 2)]
cases += [(f"blobs {n}^3 c1", P.blobs((n,) * 3), 1) for n in (64, 128, 256)]
cases += [("perc 256^3 c3", P.percolation((256,) * 3, 0.1369), 3)]
meshccl.label(P.blobs((512, 512)), cpu_threads=0)
print("numba threading layer:", numba.threading_layer(), "threads:",
      numba.config.NUMBA_NUM_THREADS, flush=True)
print("us per call: serial | driver, two rounds", flush=True)
for name, a, c in cases:
    want = meshccl.label(a, connectivity=c)
    row = [f"serial {wall_ms(lambda: meshccl.label(a, connectivity=c), args.reps) * 1e3:.0f}"]
    for rnd in range(2):
        for d in (("pool", "numba") if rnd == 0 else ("numba", "pool")):
            mesh.SLAB_DRIVER = d
            if not np.array_equal(meshccl.label(a, connectivity=c, cpu_threads=0), want):
                raise SystemExit(f"{name}: labels differ ({d})")
            for _ in range(3):
                meshccl.label(a, connectivity=c, cpu_threads=0)
            us = wall_ms(lambda: meshccl.label(a, connectivity=c, cpu_threads=0), args.reps) * 1e3
            row.append(f"{d} {us:.0f}")
    print(f"{name:16s} | " + " | ".join(row), flush=True)
mesh.SLAB_DRIVER = "numba"
