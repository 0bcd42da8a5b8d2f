"""The run kernels' piece roots labelled inside meshccl_piece_roots
(relabel.cu, Fold: decoupled look-back, labels stored negated, walks that
end at a label; mesh23.PIECES_FOLDED) against meshccl_label_pieces after
it: labels equal, then each phase, the whole call's device time (behind a
busy kernel) and call time, variants alternating, two rounds (H200
experiment, 2026-11-25).

    python benchmarks/experiments/pieces_folded.py [2] [3]"""
import sys

import meshccl
from _common import device_ms, labels_agree, time_ms
import phases as ph

from meshccl._gpu import mesh23, plan

VARIANTS = ("pieces", "folded")
dims = tuple(int(d) for d in sys.argv[1:]) or (2, 3)
cases = ph.standard_cases(dims=dims)


def use(name):
    mesh23.PIECES_FOLDED = name == "folded"
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, VARIANTS, use)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        ph.report(f"{v:6s}", cases)
for rep in range(2):
    for name, a in cases:
        for c in sorted({1, a.ndim}):
            for v in VARIANTS:
                use(v)
                f = lambda: meshccl.label(a, connectivity=c)  # noqa: E731
                dev, call = device_ms(f), time_ms(f)
                print(f"device {v:6s} {name:20s} c={c} {dev:.4f} ms  call {call:.4f} ms",
                      flush=True)
use("folded")
