"""The run starts' piece roots of a 2-D tile in slots (mesh23.RUNS_2D_SLOTS
= 512: consecutive words per tile, only piece roots written in the labels
array; with the labels array's rows prefetched, RUNS_2D_SLOTS_PREFETCH, or
not) against at the run starts in the labels array (= 0, as before
2026-11-25); tiles with more run starts than slots keep them there too
("np": no prefetch in tiles with slots).  Per 2-D case and connectivity: one event-timed call (the
bench's way) and the device time behind a busy kernel, two rounds in
alternating order, labels equal; then the phases of each.  (H200
experiment, 2026-11-25.)

    python benchmarks/experiments/slots.py"""
import _common  # noqa: F401  (sys.path)
import cupy

import meshccl
from meshccl._gpu import mesh23, plan
import phases as ph
from _common import device_ms, time_ms

DEFAULT = (mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_PREFETCH)
VARIANTS = {"none": (0, False), "192 np": (192, False), "256 np": (256, False)}


def use(name):
    mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_PREFETCH = VARIANTS[name]
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
for name, x in cases:
    for c in (1, 2):
        ref, row = None, []
        for rnd in range(2):
            for v in (list(VARIANTS) if rnd % 2 == 0 else list(VARIANTS)[::-1]):
                use(v)
                out = meshccl.label(x, connectivity=c)
                if ref is None:
                    ref = out
                elif not bool(cupy.array_equal(out, ref)):
                    raise SystemExit(f"{name} c={c}: labels differ under {v}")
                call = time_ms(lambda: meshccl.label(x, connectivity=c))
                dev = device_ms(lambda: meshccl.label(x, connectivity=c))
                row.append(f"{v}: {call:.4f}/{dev:.4f}")
        print(f"{name:22s} c={c} (call/device ms) | " + " | ".join(row), flush=True)
for v in VARIANTS:
    use(v)
    ph.report(v, cases)
mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_PREFETCH = DEFAULT
