"""meshccl_runs2d_label in two forms (kernels/relabel.cu, MESHCCL_LABEL_LEAN):
0, each lane resolving the run starts among its own cells with one
predicated load per cell and step (about 310 warp instructions a warp on
blobs 4096^2 c2, 40 registers, 6 blocks per SM), against 1, each row's run
starts shared out over the row's lanes, resolved into a table in shared
memory that the lanes then read their cells' labels from (31-32
registers), and 2, the same table filled by each lane from the run
starts among its own cells (ffs, no nth_bit).  (The first run also had the
old form capped at 32 registers, "cells 32 regs": MESHCCL_LABEL_BOUNDS
"256, 8".)
Event-timed call and device ms on the standard cases (2-D and 3-D,
connectivity 1 and full), two rounds in alternating order, labels equal.
(H100 experiment, 2026-11-26.)

    python benchmarks/experiments/label_lean.py [--2d]

The forms were switched by MESHCCL_LABEL_LEAN at commit 2bdf3cc; since then
the kernel has form 2 only, so run this at that commit to compare them.
Logs: benchmarks/results/h100-2026-11-26b/label_lean/."""
import sys

import _common  # noqa: F401  (sys.path)
import _defines
from _common import alternate
from meshccl._gpu import plan
import phases as ph

VARIANTS = {
    "cells": dict(MESHCCL_LABEL_LEAN=0),
    "rows' starts": dict(MESHCCL_LABEL_LEAN=1),
    "own starts": dict(MESHCCL_LABEL_LEAN=2),
}


def use(name):
    _defines.use(**VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


alternate(ph.standard_cases((2,) if "--2d" in sys.argv else (2, 3)), VARIANTS, use)
