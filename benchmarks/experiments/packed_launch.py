"""Launch plans with the kernels' arguments packed for the driver
(meshccl/_gpu/launch.py) against CuPy's kernel calls (plan.PACKED False):
per standard case and connectivity, one call timed with CUDA events around
it (as bench.py does, host time before the first kernel included), the
host time per call in a loop without synchronising, and the GPU time per
call in that loop.  Both variants must give the same labels (H200
experiment, 2026-11-24).

    python benchmarks/experiments/packed_launch.py
"""
import time

import _common  # noqa: F401  (sys.path)
import cupy
import numpy as np

import meshccl
from meshccl import patterns
from meshccl._gpu import plan
import phases as ph


def measure(x, c, reps=30, loop=50):
    for _ in range(3):
        meshccl.label(x, connectivity=c)
    cupy.cuda.Device().synchronize()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    single = []
    for _ in range(reps):
        s.record()
        meshccl.label(x, connectivity=c)
        e.record()
        e.synchronize()
        single.append(cupy.cuda.get_elapsed_time(s, e))
    t0 = time.perf_counter()
    for _ in range(loop):
        meshccl.label(x, connectivity=c)
    t1 = time.perf_counter()
    cupy.cuda.Device().synchronize()
    t2 = time.perf_counter()
    return float(np.median(single)), 1e6 * (t1 - t0) / loop, 1e3 * (t2 - t0) / loop


cases = ph.standard_cases() + [("blobs 256^2", patterns.blobs((256, 256), xp=cupy))]
print("one call (events, ms) | host per call in a loop (µs) | wall per call in the loop (ms)")
for name, x in cases:
    for c in (1, x.ndim):
        row, ref = [], None
        for packed in (False, True, False, True):
            plan.PACKED = packed
            plan._local.plans = None  # new plans: packed or not
            out = meshccl.label(x, connectivity=c)
            if ref is None:
                ref = out
            elif not bool((out == ref).all()):
                raise SystemExit(f"{name} c={c}: labels differ with PACKED={packed}")
            one, host, wall = measure(x, c)
            row.append(f"{'packed' if packed else 'cupy  '} {one:.4f} {host:6.1f} {wall:.4f}")
        print(f"{name:20s} c={c} | " + " | ".join(row), flush=True)
plan.PACKED = True
