"""Tile kernel of kernels/runs2d.cu with 2, 4 or 8 warps (tiles) per block (H200 experiment, 2026-11-24)."""
import sys
sys.path.insert(0, "benchmarks")
import cupy
from meshccl import patterns as P
from meshccl._gpu import mesh23
import phases as ph
cases = [("spiral", P.spiral(4096, xp=cupy)), ("blobs", P.blobs((4096, 4096), xp=cupy)),
         ("perc8192", P.percolation((8192, 8192), 0.5927, xp=cupy)), ("potts", P.potts((4096, 4096), 4, xp=cupy))]
for nw in (2, 4, 8):
    mesh23.RUNS_2D_WARPS = nw
    for name, a in cases:
        for c in (1, 2):
            r, tot = ph.phases(a, c, "fixed", 10)
            print(f"NW={nw} {name:9s} c={c} tile {r['tile']:.3f} border {r['border']:.3f} total {tot:.3f}", flush=True)
