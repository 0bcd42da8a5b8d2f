"""The 2-D border kernel with fewer blocks resident per multiprocessor
(mesh23.RUNS_2D_BORDER_SHARED: dynamic shared memory it does not use), so
that a wave of blocks covers fewer tile rows: per 2-D case at full
connectivity, the border kernel's union counts (MESHCCL_BORDER_DIAG: the
most parent loads of one union), then the call / device times under
ab-alternation and the phases.  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/border_occupancy.py"""
import cupy

import _defines
from _common import alternate
import meshccl
from meshccl._gpu import loader, mesh23, plan
import phases as ph

VARIANTS = {"7/SM": 0, "4/SM": 54 * 1024, "3/SM": 72 * 1024, "2/SM": 110 * 1024}


def names(c):
    t, i, nw = "unsigned char", "int", mesh23.RUNS_2D_WARPS
    return tuple([f"meshccl_runs2d_tile<{t}, {i}, {c}, {nw}, {f}>" for f in ("true", "false")]
                 + [f"meshccl_runs2d_border<{t}, {i}, {c}, {f}>" for f in ("true", "false")])


def use(name):
    mesh23.RUNS_2D_BORDER_SHARED = VARIANTS[name]
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
_defines.use(MESHCCL_BORDER_DIAG=1)
for v in VARIANTS:
    use(v)
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
        hist = " ".join(f"{1 << k}:{int(n)}" for k, n in enumerate(h[8:32]) if n)
        print(f"{v} {name:20s} c={c} unions {int(h[0])} loads/union {h[1] / max(h[0], 1):.2f} "
              f"max loads {int(h[2])} failed CAS {int(h[3])} | loads >= {hist}", flush=True)
_defines.use()
alternate(cases, VARIANTS, use, conns=lambda x: (2,))
for v in VARIANTS:
    use(v)
    ph.report(v, cases, keys=("tile", "border", "roots"))
