"""Binary 2-D images at connectivity 2 in bands of two rows
(mesh23.RUNS_2D_BANDS, runs.cuh band_node) against by rows: labels equal,
then each phase and the whole call's device time (behind a busy kernel),
variants alternating, two rounds (H200 experiment, 2026-11-24).

    python benchmarks/experiments/bands.py"""
import cupy

import meshccl
from _common import device_ms, labels_agree
import phases as ph

from meshccl._gpu import mesh23, plan

VARIANTS = ("rows", "bands")
cases = ph.standard_cases(dims=(2,))


def use(name):
    mesh23.RUNS_2D_BANDS = name == "bands"
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, VARIANTS, use)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        ph.report(f"{v:6s}", cases)
for rep in range(2):
    for name, a in cases:
        for v in VARIANTS:
            use(v)
            ms = device_ms(lambda: meshccl.label(a, connectivity=2))
            print(f"device {v:6s} {name:20s} c=2 {ms:.4f} ms", flush=True)
use("bands")
