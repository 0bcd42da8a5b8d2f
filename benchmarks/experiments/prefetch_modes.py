"""The tile kernels' prefetch of P (mesh23.RUNS_PREFETCH) by mode: 1, a
prefetch per 32-byte sector that holds a run start; 2, one per row that has
any (its first cell's line); on the standard 2-D and 3-D cases where the
prefetch is on by default, and 2-D c1 (H200 experiment, 2026-11-24).

    python benchmarks/experiments/prefetch_modes.py"""
import _common  # noqa: F401  (sys.path)
import cupy
import phases as ph

import meshccl
from meshccl._gpu import mesh23, plan

DEFAULT = dict(mesh23.RUNS_PREFETCH)
VARIANTS = {
    "off": {k: 0 for k in DEFAULT},
    "default": DEFAULT,
    "lines": {k: (2 if v else 0) for k, v in DEFAULT.items()} | {(2, 1): 2},
}
cases = ph.standard_cases()


def use(name):
    mesh23.RUNS_PREFETCH.update(VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


for name, a in cases:
    for c in sorted({1, a.ndim}):
        got = []
        for v in VARIANTS:
            use(v)
            got.append(meshccl.label(a, connectivity=c))
        same = all(bool(cupy.array_equal(got[0], g)) for g in got[1:])
        print(f"{name} c={c}: labels {'equal' if same else 'DIFFER'}", flush=True)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        ph.report(f"{v:8s}", cases, keys=("tile",))
use("default")
