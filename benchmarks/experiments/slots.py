"""The run starts' piece roots of a 2-D tile in slots (mesh23.RUNS_2D_SLOTS
= 512: consecutive words per tile, only piece roots written in the labels
array; with the labels array's rows prefetched, RUNS_2D_SLOTS_PREFETCH, or
not) against at the run starts in the labels array (= 0, as before
2026-11-25); tiles with more run starts than slots keep them there too
("np": no prefetch in tiles with slots).  Per 2-D case and connectivity: one event-timed call (the
bench's way) and the device time behind a busy kernel, two rounds in
alternating order, labels equal; then the phases of each.  (H200
experiment, 2026-11-25.)

    python benchmarks/experiments/slots.py"""
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

DEFAULT = (mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_PREFETCH)
VARIANTS = {"none": (0, False), "192 np": (192, False), "256 np": (256, False)}


def use(name):
    mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_PREFETCH = VARIANTS[name]
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
alternate(cases, VARIANTS, use, conns=lambda x: (1, 2))
for v in VARIANTS:
    use(v)
    ph.report(v, cases)
mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_PREFETCH = DEFAULT
