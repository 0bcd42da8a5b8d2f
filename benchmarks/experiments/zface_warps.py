"""Warps (bricks) per block of meshccl_runs3d_zface (mesh23.RUNS_ZFACE_WARPS):
its phase time on the standard 3-D cases (H200 experiment, 2026-11-24)."""
import sys

sys.path.insert(0, "benchmarks")
import cupy

from meshccl import patterns as P
from meshccl._gpu import mesh23
import phases as ph

cases = [("potts 256^3", P.potts((256,) * 3, 4, xp=cupy)),
         ("blobs 512^3", P.blobs((512,) * 3, xp=cupy)),
         ("perc 512^3 .3116", P.percolation((512,) * 3, 0.3116, xp=cupy)),
         ("perc 512^3 .1369", P.percolation((512,) * 3, 0.1369, xp=cupy))]
for nw in (1, 2, 4, 8):
    mesh23.RUNS_ZFACE_WARPS = nw
    for name, a in cases:
        for c in (1, 3):
            r, tot = ph.phases(a, c, "fixed", 10)
            print(f"warps={nw} {name:17s} c={c} zface {r['zface']:.3f} total {tot:.3f}", flush=True)
