"""Programmatic dependent launch (kernels/launch.cuh, launch.PDL) off, and
on with the kernels right after the tile kernel (mesh23.EARLY_FACES) late or
early: per standard case and connectivity, one
meshccl.label call timed with CUDA events around it as bench.py does
("call": host time before the first kernel included), and the same call
queued behind a busy kernel ("gpu": the device's time, gaps between kernels
included, the host's lead-in not); then the 256^2 latency loop (a CUDA
graph: is it still recorded?).  Labels must be equal under every variant
(H200 experiment, 2026-11-24).

    python benchmarks/experiments/pdl.py"""
import time

from _common import device_ms, labels_agree, time_ms
import cupy
import phases as ph

import meshccl
from meshccl import patterns
from meshccl._gpu import launch, mesh23, plan


VARIANTS = {"off": None, "faces late": False, "faces early": True}
DEFAULT = mesh23.EARLY_FACES


def use(variant):
    """PDL off, or on with the kernels after the tile kernel (border,
    z-face) late / early (the relabel chain always early)."""
    faces = VARIANTS[variant]
    launch.PDL = faces is not None
    mesh23.EARLY_FACES = DEFAULT if faces is None else faces
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases()
print("pdl available:", launch.pdl_available(), flush=True)
labels_agree(cases, VARIANTS, use)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        for name, a in cases:
            for c in (1, a.ndim):
                f = lambda: meshccl.label(a, connectivity=c)  # noqa: E731
                print(f"{v:12s} {name:20s} c={c} call {time_ms(f):.4f} gpu {device_ms(f):.4f}",
                      flush=True)
small = patterns.blobs((256, 256), xp=cupy)
for v in ("off", "faces early", "off", "faces early"):
    use(v)
    meshccl.label(small)
    p = next(iter(plan._local.plans.values()))
    for _ in range(20):
        meshccl.label(small)
    cupy.cuda.Device().synchronize()
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        meshccl.label(small)
    cupy.cuda.Device().synchronize()
    print(f"{v:12s} 256^2 loop {1e6 * (time.perf_counter() - t0) / n:.1f} us per call, "
          f"graph {'recorded' if p.graph is not None else 'NOT recorded'}", flush=True)
mesh23.EARLY_FACES = DEFAULT
launch.PDL = True
plan._local.__dict__.pop("plans", None)
