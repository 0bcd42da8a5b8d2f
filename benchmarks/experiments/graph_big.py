"""Graphs at the call's addresses (meshccl/_gpu/plan.py, GRAPH_AFTER) on
and off: per standard 2-D and 3-D case and connectivity, one call timed
with CUDA events as bench.py does (the host's lead-in included) and the
device time behind a busy kernel, each result dropped (so the labels come
back at one address and the graph replays); then calls whose results are
all kept (a new address every call, so no graph: the bookkeeping's cost).
Labels must be equal.  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/graph_big.py [2|3]
"""
import sys

import _common  # noqa: F401  (sys.path)
import cupy
import numpy as np

import meshccl
from meshccl._gpu import plan as planmod
import phases as ph
from _common import device_ms, time_ms


def kept_ms(x, c, reps=30):
    """Median event time of calls whose results all stay alive."""
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    keep, ts = [], []
    for _ in range(reps):
        s.record()
        keep.append(meshccl.label(x, connectivity=c))
        e.record()
        e.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))


dims = tuple(int(a) for a in sys.argv[1:]) or (2, 3)
for name, x in ph.standard_cases(dims):
    for c in (1, x.ndim):
        out, row = {}, []
        for rnd in range(2):
            for after in (0, 2):
                planmod.GRAPH_AFTER = after
                planmod._local.__dict__.pop("plans", None)
                out[after] = meshccl.label(x, connectivity=c)
                call = time_ms(lambda: meshccl.label(x, connectivity=c))
                dev = device_ms(lambda: meshccl.label(x, connectivity=c))
                kept = kept_ms(x, c) if rnd == 0 else float("nan")
                row.append(f"{'graphs' if after else 'off   '} call {call:.4f} device {dev:.4f}"
                           f" kept {kept:.4f}")
        same = bool(cupy.array_equal(out[0], out[2]))
        print(f"{name:22s} c={c} labels {'equal' if same else 'DIFFER'} | " + " | ".join(row),
              flush=True)
planmod.GRAPH_AFTER = 2
