"""Bands of two rows (mesh23.RUNS_2D_BANDS) with the tiles' slots on
(RUNS_2D_SLOTS): do the binary 2-D cases at connectivity 2 still gain from
bands once few-run tiles keep their piece roots in slots?  Per case, one
event-timed call and the device time behind a busy kernel, two rounds in
alternating order, labels equal; then the phases.  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/bands_slots.py"""
import _common  # noqa: F401  (sys.path)
import cupy

import meshccl
from meshccl._gpu import mesh23, plan
import phases as ph
from _common import device_ms, time_ms


def use(bands):
    mesh23.RUNS_2D_BANDS = bands
    plan._local.__dict__.pop("plans", None)


cases = [(n, x) for n, x in ph.standard_cases((2,)) if "potts" not in n]
for name, x in cases:
    ref, row = None, []
    for rnd in range(2):
        for bands in ((True, False) if rnd % 2 == 0 else (False, True)):
            use(bands)
            out = meshccl.label(x, connectivity=2)
            if ref is None:
                ref = out
            elif not bool(cupy.array_equal(out, ref)):
                raise SystemExit(f"{name}: labels differ with bands={bands}")
            call = time_ms(lambda: meshccl.label(x, connectivity=2))
            dev = device_ms(lambda: meshccl.label(x, connectivity=2))
            row.append(f"bands={int(bands)}: {call:.4f}/{dev:.4f}")
    print(f"{name:22s} c=2 (call/device ms) | " + " | ".join(row), flush=True)
for bands in (True, False):
    use(bands)
    ph.report(f"bands={int(bands)}", cases, keys=None)
use(True)
