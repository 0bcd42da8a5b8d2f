"""The 2-D border kernel launched late (after the tile kernel has ended, as
now: mesh23.EARLY_FACES False) or early (programmatic dependent launch: its
blocks may be sent out while the tile kernel's last ones run), on the
kernels as they are since the two forms of 2026-11-25: per 2-D case and
connectivity, call / device times under ab-alternation, labels equal.
(pdl.py measured this on 2026-11-24, on older kernels.)  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/faces_early.py [--3d]"""
import sys

from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

VARIANTS = {"late": False, "early": True}


def use(name):
    mesh23.EARLY_FACES = VARIANTS[name]
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2, 3) if "--3d" in sys.argv else (2,))
alternate(cases, VARIANTS, use)
use("late")
