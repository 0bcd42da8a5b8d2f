"""A launch plan's choice between the 2-D tile kernel with slots and the
same kernel compiled without them (mesh23.RUNS_2D_SLOTS_SHARE): per 2-D
case and connectivity, the share of tiles whose run starts fit their slots
(the count the border kernel reports), then one event-timed call and the
device time behind a busy kernel under "slots" (always that kernel),
"plain" (never) and "auto" (the plan's choice), two rounds in alternating
order, labels equal; then the phases of the first two.  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/slot_choice.py"""
import cupy

import meshccl
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

DEFAULT = dict(mesh23.RUNS_2D_SLOTS_SHARE)
VARIANTS = {"slots": {1: 0.0, 2: 0.0}, "plain": {1: 2.0, 2: 2.0}, "auto": DEFAULT}


def use(name):
    mesh23.RUNS_2D_SLOTS_SHARE = dict(VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
for name, x in cases:
    for c in (1, 2):
        use("auto")  # (no plans: the call's is the only one)
        meshccl.label(x, connectivity=c)
        cupy.cuda.Device().synchronize()
        p, = plan._local.plans.values()
        tiles = -(-x.shape[0] // 32) * -(-x.shape[1] // 32)
        fitted = int(p.report[0])
        meshccl.label(x, connectivity=c)
        print(f"{name:22s} c={c} tiles fitting their slots {fitted} of {tiles} "
              f"({fitted / tiles:.3f}); next call takes slots: {p.slot_tiles}", flush=True)
alternate(cases, VARIANTS, use, conns=lambda x: (1, 2))
for v, st in (("slots", True), ("plain", False)):
    ph.report(v, cases, slot_tiles=st)
use("auto")
