"""The host's lead-in of one meshccl.label call on a CuPy image (blobs
4096^2, connectivity 2): the bench times a call with CUDA events around it,
so everything the host does before the first kernel starts is in the
figure.  Here: the event-timed call against the same call queued behind a
busy kernel (the device's time alone), and the host cost of each step of
the plan path in a loop of 2000 (H200 experiment, 2026-11-24; the graph
at the call's addresses added 2026-11-25).

    python benchmarks/experiments/host_lead.py"""
import time

from _common import device_ms, time_ms
import cupy

import meshccl
from meshccl import patterns
from meshccl._gpu import plan

x = patterns.blobs((4096, 4096), xp=cupy)
f = lambda: meshccl.label(x, connectivity=2)  # noqa: E731
f()
cupy.cuda.Device().synchronize()


def host_us(g, n=2000):
    """Host microseconds per call of g(), synchronising every 50 calls so
    that the launch queue never fills."""
    total = 0.0
    for k in range(0, n, 50):
        t0 = time.perf_counter()
        for _ in range(50):
            g()
        total += time.perf_counter() - t0
        cupy.cuda.Device().synchronize()
    return 1e6 * total / n


print(f"call {time_ms(f):.4f} ms, behind a busy kernel {device_ms(f, 50):.4f} ms", flush=True)
p = next(iter(plan._local.plans.values()))
stream = cupy.cuda.get_current_stream().ptr
P = cupy.empty(x.shape, dtype=cupy.int32)
vptr, pptr = x.data.ptr, P.data.ptr
first = p.packed[0]
for _ in range(3):
    f()  # the plan records its graph at (x, labels) on the second such call
graph = next(iter(p.at.values()))[0] if p.at else None
nbytes = x.size * 4
steps = {
    "label()": f,
    "fast_label()": lambda: plan.fast_label(x, 0, 2, None, False),
    "plan(x)": lambda: p(x, False),
    "launches only": lambda: p._launch(x, P),
    "first launch": lambda: first(vptr, pptr, stream),
    "graph launch": (lambda: graph.launch(cupy.cuda.get_current_stream())) if graph else f,
    "cupy.cuda.alloc": lambda: cupy.cuda.alloc(nbytes),
    "cupy.empty": lambda: cupy.empty(x.shape, dtype=cupy.int32),
    "x.device.id": lambda: x.device.id,
    "x.data.device_id": lambda: x.data.device_id,
    "current stream": lambda: cupy.cuda.get_current_stream().ptr,
    "x.flags.c_contiguous": lambda: x.flags.c_contiguous,
}
for name, g in steps.items():
    print(f"{name:22s} {host_us(g):7.2f} us", flush=True)
