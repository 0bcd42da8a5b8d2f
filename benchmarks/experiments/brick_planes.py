"""runs3d.cu bricks of 8 or 16 planes (mesh23.RUNS_3D_PLANES): phases of
the standard 3-D cases (H200 experiment, 2026-11-24)."""
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
for planes in (8, 16, 8, 16):
    mesh23.RUNS_3D_PLANES = planes
    for name, a in cases:
        for c in (1, 3):
            r, tot = ph.phases(a, c, "fixed", 10)
            parts = " ".join(f"{k} {v:.3f}" for k, v in r.items())
            print(f"planes={planes:2d} {name:17s} c={c} {parts} | total {tot:.3f}", flush=True)
