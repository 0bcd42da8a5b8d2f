"""Large percolation images: the CPU slab drivers (numba regions / Python threads), wall ms per call, blocks of 7 calls, two rounds."""
import sys; sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import wall_ms
import numpy as np, meshccl
from meshccl import patterns as P
from meshccl._cpu import mesh
for name, a, c in [("perc 8192^2 c1", P.percolation((8192,8192), 0.5927), 1),
                   ("perc 8192^2 c2", P.percolation((8192,8192), 0.4073), 2),
                   ("perc 4096^2 c1", P.percolation((4096,4096), 0.5927), 1)]:
    row=[]
    for rnd in range(2):
        for d in (("pool","numba") if rnd==0 else ("numba","pool")):
            mesh.SLAB_DRIVER=d
            for dt in (None,):
                meshccl.label(a, connectivity=c, cpu_threads=0)
                row.append(f"{d} {wall_ms(lambda: meshccl.label(a, connectivity=c, cpu_threads=0), 7):.1f}")
    print(name, " | ".join(row), flush=True)
