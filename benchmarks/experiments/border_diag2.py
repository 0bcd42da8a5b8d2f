"""What the 2-D border kernel's unions do: compiled with
MESHCCL_BORDER_DIAG (runs2d.cu), each union counts its parent loads,
failed CAS and clock cycles into a device array; per 2-D case at full
connectivity and per border walk (mesh23.RUNS_2D_BORDER_WALK): unions,
loads per union, the most loads and cycles of one union, failed CAS, and
a histogram of loads per union by powers of two.  Then the warp-guarded
union (MESHCCL_BORDER_GUARD, unionfind.cuh's Guard) against the plain one
under ab-alternation, and their border phases.  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/border_diag2.py"""
import cupy
import numpy as np

import _defines
from _common import alternate
import meshccl
from meshccl._gpu import loader, mesh23, plan
import phases as ph


def names(c):
    t, i, nw = "unsigned char", "int", mesh23.RUNS_2D_WARPS
    return tuple([f"meshccl_runs2d_tile<{t}, {i}, {c}, {nw}, {f}>" for f in ("true", "false")]
                 + [f"meshccl_runs2d_border<{t}, {i}, {c}, {f}>" for f in ("true", "false")])


def fresh(walk=1):
    mesh23.RUNS_2D_BORDER_WALK = {1: walk, 2: walk}
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
_defines.use(MESHCCL_BORDER_DIAG=1)
for walk in (1, 2, 4):
    fresh(walk)
    for name, x in cases:
        c = 2
        for _ in range(2):
            meshccl.label(x, connectivity=c)
        cupy.cuda.Device().synchronize()
        mod = loader._module(cupy.cuda.Device().id, "runs2d.cu", names(c))
        d = cupy.ndarray((32,), cupy.uint64, mod.get_global("meshccl_border_diag"))
        d[:] = 0
        meshccl.label(x, connectivity=c)
        cupy.cuda.Device().synchronize()
        h = d.get()
        hist = " ".join(f"{1 << k}:{int(v)}" for k, v in enumerate(h[8:32]) if v)
        print(f"walk {walk} {name:20s} c={c} unions {int(h[0])} loads/union "
              f"{h[1] / max(h[0], 1):.2f} max loads {int(h[2])} failed CAS {int(h[3])} "
              f"hooks {int(h[4])} max cycles {int(h[5])} | loads >= {hist}", flush=True)
fresh(1)

VARIANTS = {"plain": {}, "guard": {"MESHCCL_BORDER_GUARD": 1}}


def use(name):
    _defines.use(**VARIANTS[name])
    fresh(1)


alternate(cases, VARIANTS, use, conns=lambda x: (2,))
for v in VARIANTS:
    use(v)
    ph.report(v, cases, keys=("tile", "border", "roots"))
