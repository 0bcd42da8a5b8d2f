"""Host microseconds of the expressions a CuPy call of meshccl.label goes
through before its first launch (and a few alternatives), each in a loop of
20 000: what the event-timed call's lead-in is made of.  (H200 host,
2026-11-25.)

    python benchmarks/experiments/host_parts.py"""
import time

import cupy
import numpy as np

x = cupy.zeros((4096, 4096), cupy.uint8)
mem = cupy.cuda.alloc(x.size * 4)
nd, i32 = cupy.ndarray, np.dtype(np.int32)
plans = {((4096, 4096), "B", None, type(None), 2, int, None, 0, 0): 1}


def host_us(g, n=20000):
    """Host microseconds per call of g()."""
    t0 = time.perf_counter()
    for _ in range(n):
        g()
    return 1e6 * (time.perf_counter() - t0) / n


tests = {
    "empty lambda": lambda: None,
    "type(x).__module__.startswith": lambda: type(x).__module__.startswith("cupy"),
    "type(x) is nd": lambda: type(x) is nd,
    "isinstance": lambda: isinstance(x, nd),
    "x.flags.c_contiguous": lambda: x.flags.c_contiguous,
    "x._c_contiguous": lambda: getattr(x, "_c_contiguous", None),
    "x.dtype.kind": lambda: x.dtype.kind,
    "x.dtype.char": lambda: x.dtype.char,
    "x.dtype": lambda: x.dtype,
    "x.shape": lambda: x.shape,
    "x.ndim": lambda: x.ndim,
    "x.size": lambda: x.size,
    "x.data": lambda: x.data,
    "x.data.ptr": lambda: x.data.ptr,
    "x.data.device_id": lambda: x.data.device_id,
    "x.data.mem": lambda: x.data.mem,
    "x.device.id": lambda: x.device.id,
    "get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
    "get_current_stream()": lambda: cupy.cuda.get_current_stream(),
    "runtime.getDevice": lambda: cupy.cuda.runtime.getDevice(),
    "alloc": lambda: cupy.cuda.alloc(x.size * 4),
    "ndarray(memptr)": lambda: cupy.ndarray(x.shape, dtype=cupy.int32, memptr=mem),
    "ndarray(memptr, np dtype)": lambda: cupy.ndarray(x.shape, dtype=i32, memptr=mem),
    # the plan key of plan.fast_label, built and looked up
    "9-tuple build+dict get": lambda: plans.get(
        (x.shape, x.dtype.char, None, type(None), 2, int, None, x.data.device_id,
         cupy.cuda.get_current_stream().ptr)),
}
for k, g in tests.items():
    print(f"{k:32s} {host_us(g):6.3f} us", flush=True)
print("cupy", cupy.__version__, [a for a in dir(x) if "contig" in a])
