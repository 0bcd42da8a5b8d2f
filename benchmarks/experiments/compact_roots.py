"""store_piece_roots (kernels/runs.cuh): run starts 32 at a time up to
MESHCCL_COMPACT_MAX per tile, else a turn per row; nth_bit by __fns or by
popc halving (MESHCCL_SELECT_FNS).  Tile-kernel time per variant on the
standard 2-D and 3-D cases (H200 experiment, 2026-11-24).

The two macros are those of commit b85f1a8's kernels/runs.cuh (run it with
``git checkout b85f1a8 -- kernels``); the kernels now take the threshold as
a template argument chosen from these numbers (benchmarks/NOTES.md)."""
import sys

sys.path.insert(0, "benchmarks")
import cupy

from meshccl import patterns as P
from meshccl._gpu import loader
import phases as ph

_source = loader.source
cases = [("spiral 4096^2", P.spiral(4096, xp=cupy)),
         ("blobs 4096^2", P.blobs((4096, 4096), xp=cupy)),
         ("perc 8192^2", P.percolation((8192, 8192), 0.5927, xp=cupy)),
         ("potts 4096^2", P.potts((4096, 4096), 4, xp=cupy)),
         ("potts 256^3", P.potts((256,) * 3, 4, xp=cupy)),
         ("blobs 512^3", P.blobs((512,) * 3, xp=cupy)),
         ("perc 512^3 .3116", P.percolation((512,) * 3, 0.3116, xp=cupy)),
         ("perc 512^3 .1369", P.percolation((512,) * 3, 0.1369, xp=cupy))]
variants = [(0, 1), (64, 1), (128, 1), (256, 1), (1024, 1), (128, 0), (1024, 0)]
for compact, fns in variants:
    loader.source = lambda f, c=compact, s=fns: (
        f"#define MESHCCL_COMPACT_MAX {c}\n#define MESHCCL_SELECT_FNS {s}\n" + _source(f))
    loader._module.cache_clear()
    loader._functions.cache_clear()
    for name, a in cases:
        for c in ((1, 2) if a.ndim == 2 else (1, 3)):
            r, tot = ph.phases(a, c, "fixed", 10)
            print(f"max={compact:4d} fns={fns} {name:17s} c={c} tile {r['tile']:.3f} "
                  f"total {tot:.3f}", flush=True)
