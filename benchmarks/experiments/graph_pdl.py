"""Programmatic dependent launch inside the graphs a plan records at the
call's addresses (plan.py): the chain as it is (the relabel kernels early,
the border kernels not: mesh23.EARLY_FACES False), every kernel after the
tile kernel early (EARLY_FACES True), and no early launches at all
(launch.PDL False).  Per case and connectivity, one event-timed call (the
bench's way, results dropped so the graph replays) and the device time
behind a busy kernel, two rounds; labels must be equal.  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/graph_pdl.py [2|3]
"""
import sys

from _common import alternate
from meshccl._gpu import launch, mesh23, plan
import phases as ph

VARIANTS = {"as is": (True, False), "faces early": (True, True), "no PDL": (False, False)}


def use(name):
    launch.PDL, mesh23.EARLY_FACES = VARIANTS[name]
    plan._local.__dict__.pop("plans", None)


dims = tuple(int(a) for a in sys.argv[1:]) or (2,)
alternate(ph.standard_cases(dims), VARIANTS, use)
use("as is")
