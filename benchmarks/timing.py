"""Timing helpers shared by the graph benchmarks (list ranking, strong
components, incremental connectivity): medians of wall-clock time on the
CPU, and of CUDA events on the GPU, in milliseconds; and the check that a
GPU run has a GPU."""

from __future__ import annotations

import statistics
import sys
import time


def require_gpu(what):
    """Exit with a message naming ``what`` unless CuPy sees a CUDA device."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        sys.exit(f"{what} needs CuPy and a CUDA device ({e})")


def wall_ms(fn, reps, warmup=True):
    """Median wall-clock ms of ``reps`` calls of ``fn``, after one call
    that is not timed when ``warmup`` (numba's compile, first touches)."""
    if warmup:
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def events_ms(fn):
    """Milliseconds between CUDA events around one call of ``fn``, the
    device idle before it."""
    import cupy

    cupy.cuda.Device().synchronize()
    a, b = cupy.cuda.Event(), cupy.cuda.Event()
    a.record()
    fn()
    b.record()
    b.synchronize()
    return cupy.cuda.get_elapsed_time(a, b)


def median_events_ms(fn, reps):
    """Median of :func:`events_ms` over ``reps`` calls, after one warm-up
    call (kernel compiles, memory pool growth)."""
    fn()
    return statistics.median(events_ms(fn) for _ in range(reps))
