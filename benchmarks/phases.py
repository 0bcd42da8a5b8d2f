"""Time each phase of the GPU mesh path (tile, union, flatten, scan, relabel)
with CUDA events on the standard cases: a diagnostic for benchmarks/NOTES.md.

    python benchmarks/phases.py
"""

import cupy
import numpy as np

from meshccl import neighbourhood
from meshccl import patterns as P
from meshccl._gpu.mesh import mesh_steps
from meshccl._gpu.relabel import relabel_steps


def phases(a, conn, reps=10):
    v = a.reshape(-1)
    shape = tuple(s for s in a.shape if s != 1)
    out = cupy.empty(a.size, dtype=cupy.int32)
    steps = (mesh_steps(v, out, shape, conn, True, np.uint8(0))
             + relabel_steps(out, a.size))
    ev = [cupy.cuda.Event() for _ in range(len(steps) + 1)]
    times = {name: [] for name, _ in steps}
    for _ in range(reps):
        ev[0].record()
        for k, (name, f) in enumerate(steps):
            f()
            ev[k + 1].record()
        ev[-1].synchronize()
        for k, (name, _) in enumerate(steps):
            times[name].append(cupy.cuda.get_elapsed_time(ev[k], ev[k + 1]))
    return {k: float(np.median(x)) for k, x in times.items()}


if __name__ == "__main__":
    import argparse

    import meshccl._gpu.mesh as gm

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tile-log", type=int, action="append",
                    help="log2 of the tile size to try (repeatable; default: the library's)")
    ap.add_argument("--only", default="", help="substring of the case names to run")
    opts = ap.parse_args()
    cases = [("spiral 4096^2", P.spiral(4096, xp=cupy)), ("blobs 4096^2", P.blobs((4096, 4096), xp=cupy)),
             ("perc 8192^2 p=.5927", P.percolation((8192, 8192), 0.5927, xp=cupy)),
             ("perc 8192^2 p=.4073", P.percolation((8192, 8192), 0.4073, xp=cupy)),
             ("blobs 512^3", P.blobs((512,) * 3, xp=cupy)),
             ("perc 512^3 p=.3116", P.percolation((512,) * 3, 0.3116, xp=cupy)),
             ("perc 512^3 p=.1369", P.percolation((512,) * 3, 0.1369, xp=cupy))]
    names = ("tile", "union", "flatten", "scan", "relabel")
    for tlog in opts.tile_log or [neighbourhood.TILE_LOG]:
        neighbourhood.TILE_LOG = tlog
        gm._device_geometry.cache_clear()
        print(f"tiles of up to {1 << tlog} cells")
        print(f"{'case':22s} conn " + " ".join(f"{k:>8s}" for k in names) + "    total (ms)")
        for name, a in cases:
            if opts.only not in name:
                continue
            for c in (1, a.ndim):
                r = phases(a, c)
                print(f"{name:22s} {c:4d} " + " ".join(f"{r[k]:8.3f}" for k in names)
                      + f" {sum(r.values()):8.3f}")
