"""Bands of two rows (mesh23.RUNS_2D_BANDS) with the tiles' slots on
(RUNS_2D_SLOTS): do the binary 2-D cases at connectivity 2 still gain from
bands once few-run tiles keep their piece roots in slots?  Per case, one
event-timed call and the device time behind a busy kernel, two rounds in
alternating order, labels equal; then the phases.  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/bands_slots.py"""
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph


def use(bands):
    mesh23.RUNS_2D_BANDS = bands
    plan._local.__dict__.pop("plans", None)


cases = [(n, x) for n, x in ph.standard_cases((2,)) if "potts" not in n]
alternate(cases, (True, False), use, conns=lambda x: (2,))
for bands in (True, False):
    use(bands)
    ph.report(f"bands={int(bands)}", cases, keys=None)
use(True)
