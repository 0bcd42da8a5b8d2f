"""The label pass's loads before its wait (MESHCCL_LABEL_EARLY=1): F, S, A
and P at the run starts that are not piece roots are final before
meshccl_label_pieces may let the label pass start (kernels/launch.cuh), so
they can be loaded in the room that kernel's last blocks leave; =0 loads
everything after the wait, as before.  Per case and connectivity, one
event-timed call (the bench's way: results dropped, so the plan's graph at
the call's addresses replays) and the device time behind a busy kernel,
two rounds, alternating; labels must be equal.  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/label_early.py [2|3 ...]"""
import sys

import _defines
import cupy

import meshccl
from meshccl._gpu import plan
import phases as ph
from _common import device_ms, time_ms


def use(early):
    _defines.use(MESHCCL_LABEL_EARLY=early)
    plan._local.__dict__.pop("plans", None)


dims = tuple(int(a) for a in sys.argv[1:]) or (2, 3)
for name, x in ph.standard_cases(dims):
    for c in sorted({1, x.ndim}):
        ref, row = None, []
        for rnd in range(2):
            for early in ((0, 1) if rnd % 2 == 0 else (1, 0)):
                use(early)
                out = meshccl.label(x, connectivity=c)
                if ref is None:
                    ref = out
                elif not bool(cupy.array_equal(out, ref)):
                    raise SystemExit(f"{name} c={c}: labels differ with MESHCCL_LABEL_EARLY={early}")
                call = time_ms(lambda: meshccl.label(x, connectivity=c))
                dev = device_ms(lambda: meshccl.label(x, connectivity=c))
                row.append(f"early={early}: {call:.4f}/{dev:.4f}")
        print(f"{name:22s} c={c} (call/device ms) | " + " | ".join(row), flush=True)
use(1)
