"""Cells per lane of meshccl_runs2d_label (mesh23.RUNS_LABEL_CELLS, int32
labels): 4 (eight lanes per tile row) or 8 (four), the "cells" phase on the
standard cases (H200 experiment, 2026-11-24)."""
import sys

sys.path.insert(0, "benchmarks")
import cupy

from meshccl import patterns as P
from meshccl._gpu import mesh23
import phases as ph

cases = [("spiral 4096^2", P.spiral(4096, xp=cupy)),
         ("blobs 4096^2", P.blobs((4096, 4096), xp=cupy)),
         ("perc 8192^2", P.percolation((8192, 8192), 0.5927, xp=cupy)),
         ("potts 4096^2", P.potts((4096, 4096), 4, xp=cupy)),
         ("potts 256^3", P.potts((256,) * 3, 4, xp=cupy)),
         ("blobs 512^3", P.blobs((512,) * 3, xp=cupy)),
         ("perc 512^3 .3116", P.percolation((512,) * 3, 0.3116, xp=cupy)),
         ("perc 512^3 .1369", P.percolation((512,) * 3, 0.1369, xp=cupy))]
for w in (4, 8, 4, 8):
    mesh23.RUNS_LABEL_CELLS = {4: w, 8: 4}
    for name, a in cases:
        for c in ((1, 2) if a.ndim == 2 else (1, 3)):
            r, tot = ph.phases(a, c, "fixed", 10)
            print(f"cells/lane={w} {name:17s} c={c} cells {r['cells']:.3f} total {tot:.3f}",
                  flush=True)
