"""The seams between strips of the 2-D run path done at the end of the tile
kernel, each by the last block of the strips it reads (runs2d.cu,
strip_seams; mesh23.RUNS_2D_FUSED_SEAMS), against the border kernel: labels
equal, then each phase and the whole call's device time (behind a busy
kernel) and call time, variants alternating, two rounds (H200 experiment,
2026-11-25).

    python benchmarks/experiments/fused_seams.py"""
import meshccl
from _common import device_ms, labels_agree, time_ms
import phases as ph

from meshccl._gpu import mesh23, plan

VARIANTS = ("border", "fused")
cases = ph.standard_cases(dims=(2,))


def use(name):
    mesh23.RUNS_2D_FUSED_SEAMS = name == "fused"
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
use("fused")
