"""Piece roots per thread handled together (int32 labels) in
meshccl_piece_roots (MESHCCL_ROOTS_GROUP_32, the "roots" phase) and
meshccl_label_pieces (MESHCCL_LABEL_GROUP_32, "pieces"), on the standard
2-D and 3-D cases (H200 experiment, 2026-11-24)."""
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
variants = [int(v) for v in sys.argv[1:]] or [4, 8, 16]
for roots in variants:
    for lab in variants:
        if lab > roots:
            continue
        loader.source = lambda f, r=roots, l=lab: (
            f"#define MESHCCL_ROOTS_GROUP_32 {r}\n#define MESHCCL_LABEL_GROUP_32 {l}\n"
            + _source(f))
        loader._module.cache_clear()
        loader._functions.cache_clear()
        for name, a in cases:
            for c in ((1, 2) if a.ndim == 2 else (1, 3)):
                r, tot = ph.phases(a, c, "fixed", 10)
                print(f"roots={roots:2d} label={lab:2d} {name:17s} c={c} roots {r['roots']:.3f} "
                      f"pieces {r['pieces']:.3f} total {tot:.3f}", flush=True)
