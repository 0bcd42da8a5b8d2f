"""What the experiment scripts share.

Importing it puts ``benchmarks/`` (for ``graph_bench``) and the repository
root (for ``meshccl``) on ``sys.path``; :func:`busy` keeps the GPU busy so
that a timing sees the device work without the host's launch time.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent.parent, HERE.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def busy(milliseconds: float) -> None:
    """Queue a kernel on the current stream that spins for about this long
    (clock cycles at the device's clock rate), so that the host has issued
    whatever comes next before the GPU gets to it: events around a call
    queued behind it time the GPU work and the gaps between kernels, not
    the host."""
    import cupy
    import numpy as np

    dev = cupy.cuda.Device()
    if not hasattr(busy, "kernel"):
        busy.kernel = cupy.RawKernel(r"""
        extern "C" __global__ void spin(long long cycles) {
            const long long t0 = clock64();
            while (clock64() - t0 < cycles) {}
        }""", "spin")
        busy.khz = {}
    if dev.id not in busy.khz:
        busy.khz[dev.id] = cupy.cuda.runtime.getDeviceProperties(dev.id)["clockRate"]
    busy.kernel((1,), (1,), (np.int64(milliseconds * busy.khz[dev.id]),))
