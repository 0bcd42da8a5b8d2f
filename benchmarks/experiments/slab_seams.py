"""The CPU backend's parallel plain case with the seams between slabs
united one after another in the calling thread (as before 2026-11-26)
against on the slabs' worker threads with CAS hooks (meshccl._cpu.mesh
_label_slabs_threads now), and the serial labeller: median wall ms of
``meshccl.label(a, connectivity=c, cpu_threads=0)``, ab-alternated, labels
checked equal.  Run on the bench host (16 cores).

    python benchmarks/experiments/slab_seams.py [--reps 7]"""
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
ap.add_argument("--reps", type=int, default=7)
args = ap.parse_args()
threaded = mesh._slab_pool


class _SerialSeams:
    """A pool whose map runs the seams (the second of the three maps of a
    call) in the calling thread, one after another."""

    def __init__(self, pool):
        self.pool, self.calls = pool, 0

    def map(self, f, items):
        self.calls += 1
        if self.calls % 3 == 2:
            return [f(i) for i in items]
        return self.pool.map(f, items)


def use(variant):
    if variant == "serial seams":
        mesh._slab_pool = lambda T: _SerialSeams(threaded(T))
    else:
        mesh._slab_pool = threaded


def wall(f):
    return wall_ms(f, args.reps)


VARIANTS = ["serial seams", "seams on threads"]
cases = [(f"blobs {n}^3", P.blobs((n,) * 3)) for n in (64, 128, 256, 512)]
cases += [(f"perc {n}^3", P.percolation((n,) * 3, 0.3116)) for n in (128, 256)]
cases += [(f"blobs {n}^2", P.blobs((n, n))) for n in (1024, 4096)]
print("ms per call: serial labeller | " + " | ".join(VARIANTS) + " (two rounds)", flush=True)
for name, a in cases:
    for c in sorted({1, a.ndim}):
        want = meshccl.label(a, connectivity=c)
        row = [f"serial {wall(lambda: meshccl.label(a, connectivity=c)):.2f}"]
        for rnd in range(2):
            for v in (VARIANTS if rnd == 0 else VARIANTS[::-1]):
                use(v)
                if not np.array_equal(meshccl.label(a, connectivity=c, cpu_threads=0), want):
                    raise SystemExit(f"{name} c={c}: labels differ under {v}")
                row.append(f"{v} {wall(lambda: meshccl.label(a, connectivity=c, cpu_threads=0)):.2f}")
        use("seams on threads")
        print(f"{name:12s} c={c} | " + " | ".join(row), flush=True)
