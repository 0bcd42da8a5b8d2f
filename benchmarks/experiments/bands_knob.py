"""Bands of two rows (mesh23.RUNS_2D_BANDS) against rows of runs for the
binary 2-D cases at connectivity 2, on the kernels as they are since the
slots and the two forms: call / device times under ab-alternation, labels
equal.  (bands.py measured this on 2026-11-24, before slots.)  (H200
experiment, 2026-11-25.)

    python benchmarks/experiments/bands_knob.py"""
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

VARIANTS = {"bands": True, "rows": False}


def use(variant):
    mesh23.RUNS_2D_BANDS = VARIANTS[variant]
    plan._local.__dict__.pop("plans", None)


cases = [c for c in ph.standard_cases((2,)) if "potts" not in c[0]]
alternate(cases, VARIANTS, use, conns=lambda x: (2,))
