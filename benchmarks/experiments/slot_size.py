"""Slots per 2-D tile (mesh23.RUNS_2D_SLOTS) beyond 192: per 2-D case and
connectivity, the share of tiles whose run starts fit under each size, then
the call / device times with the tile kernel without slots ("plain") and
with slots of each size (always taken), two rounds in alternating order,
labels equal.  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/slot_size.py [size ...]   (default 192 320 512)"""
import sys

import cupy

import meshccl
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

sizes = [int(s) for s in sys.argv[1:]] or [192, 320, 512]
VARIANTS = {"plain": (192, 2.0)}
VARIANTS.update({f"slots {s}": (s, 0.0) for s in sizes})


def use(name):
    s, share = VARIANTS[name]
    mesh23.RUNS_2D_SLOTS = s
    mesh23.RUNS_2D_SLOTS_SHARE = {1: share, 2: share}
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
for name, x in cases:
    for c in (1, 2):
        row = []
        for s in sizes:
            mesh23.RUNS_2D_SLOTS = s
            mesh23.RUNS_2D_SLOTS_SHARE = {1: 0.5, 2: 0.5}
            plan._local.__dict__.pop("plans", None)
            meshccl.label(x, connectivity=c)
            cupy.cuda.Device().synchronize()
            p, = plan._local.plans.values()
            tiles = -(-x.shape[0] // 32) * -(-x.shape[1] // 32)
            row.append(f"{s}: {int(p.report[0]) / tiles:.3f}")
        print(f"{name:22s} c={c} share of tiles fitting | " + " | ".join(row), flush=True)
alternate(cases, VARIANTS, use, conns=lambda x: (1, 2))
for v in VARIANTS:
    use(v)
    ph.report(v, cases, keys=("tile", "border", "cells"), slot_tiles=VARIANTS[v][1] < 1)
use("plain")
