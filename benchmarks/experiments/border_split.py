"""The 2-D border kernel's two kinds of seams in two launches
(mesh23.RUNS_BORDER_SPLIT: 1 the left seams first, 2 the top seams first)
against one launch (0): labels equal, then each phase and the whole call's
device time (behind a busy kernel) and call time at both connectivities,
variants alternating, two rounds (H200 experiment, 2026-11-25).

    python benchmarks/experiments/border_split.py"""
import meshccl
from _common import device_ms, labels_agree, time_ms
import phases as ph

from meshccl._gpu import mesh23, plan

VARIANTS = ("one", "left first", "top first")
cases = ph.standard_cases(dims=(2,))


def use(name):
    mesh23.RUNS_BORDER_SPLIT = VARIANTS.index(name)
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, VARIANTS, use)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        ph.report(f"{v:10s}", cases)
for rep in range(2):
    for name, a in cases:
        for c in (1, 2):
            for v in VARIANTS:
                use(v)
                f = lambda: meshccl.label(a, connectivity=c)  # noqa: E731
                dev, call = device_ms(f), time_ms(f)
                print(f"device {v:10s} {name:20s} c={c} {dev:.4f} ms  call {call:.4f} ms",
                      flush=True)
use("left first")
