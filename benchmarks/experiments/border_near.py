"""The 2-D border kernel's unions with one path-free CAS first
(unionfind.cuh, unite_recording_near; mesh23.RUNS_BORDER_NEAR) against the
ordinary union: labels equal, then each phase and the whole call's device
time (behind a busy kernel) and call time at both connectivities,
variants alternating, two rounds (H200 experiment, 2026-11-25).

    python benchmarks/experiments/border_near.py"""
import cupy

import meshccl
from _common import device_ms, labels_agree, time_ms
import phases as ph

from meshccl._gpu import mesh23, plan

VARIANTS = ("find", "near")
cases = ph.standard_cases(dims=(2,))


def use(name):
    mesh23.RUNS_BORDER_NEAR = name == "near"
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, VARIANTS, use)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        ph.report(f"{v:6s}", cases)
for rep in range(2):
    for name, a in cases:
        for c in (1, 2):
            for v in VARIANTS:
                use(v)
                f = lambda: meshccl.label(a, connectivity=c)  # noqa: E731
                dev, call = device_ms(f), time_ms(f)
                print(f"device {v:6s} {name:20s} c={c} {dev:.4f} ms  call {call:.4f} ms",
                      flush=True)
use("near")
