"""The 2-D border kernel taking several tile rows per block, top to bottom
one after the other (mesh23.RUNS_2D_BORDER_WALK), against one tile row per
block: per 2-D case and connectivity, one event-timed call and the device
time behind a busy kernel under each walk, two rounds in alternating order,
labels equal; then the phases under each.  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/border_walk.py [walk ...]   (default 1 2 4 8)"""
import sys

from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

walks = [int(w) for w in sys.argv[1:]] or [1, 2, 4, 8]
VARIANTS = {f"walk {w}": w for w in walks}


def use(name):
    w = VARIANTS[name]
    mesh23.RUNS_2D_BORDER_WALK = {1: w, 2: w}
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
alternate(cases, VARIANTS, use, conns=lambda x: (1, 2))
for v in VARIANTS:
    use(v)
    ph.report(v, cases, keys=("tile", "border", "roots"))
