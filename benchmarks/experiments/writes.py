"""Store-only bandwidth on the device, by the values written: 16-byte stores
of int32 (a constant, zeros, each cell's index, index >> 12, a hash),
against a copy and a read-modify-write of the same array, at the sizes of
the label pass (67 MB and 537 MB of int32).  Why: cupy's fill of a 67 MB
array took 0.088 ms and a copy of it 0.040 (label_pass.py), and the label
pass got slower when its loads were taken out (H200 experiment,
2026-11-24)."""
from _common import time_ms
import cupy
import numpy as np

src = r"""
extern "C" __global__ void store(int4* out, long long n4, int mode) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    int b = (int)(i * 4);
    int4 v;
    if (mode == 0) v = make_int4(7, 7, 7, 7);
    else if (mode == 1) v = make_int4(0, 0, 0, 0);
    else if (mode == 2) v = make_int4(b, b + 1, b + 2, b + 3);
    else if (mode == 3) v = make_int4(b >> 12, b >> 12, b >> 12, b >> 12);
    else { unsigned h = (unsigned)b * 2654435761u; v = make_int4(h, h ^ 1, h ^ 2, h ^ 3); }
    out[i] = v;
}
extern "C" __global__ void copy(const int4* in, int4* out, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) out[i] = in[i];
}
extern "C" __global__ void rmw(int4* out, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) { int4 v = out[i]; v.x += 1; out[i] = v; }
}
"""
mod = cupy.RawModule(code=src)
store, copy, rmw = (mod.get_function(k) for k in ("store", "copy", "rmw"))




for n in (4096 * 4096, 512 ** 3):
    x = cupy.zeros(n, cupy.int32)
    y = cupy.zeros(n, cupy.int32)
    n4 = n // 4
    grid = ((n4 + 255) // 256,)
    mb = n * 4 / 1e6
    row = [f"{mb:.0f} MB"]
    for mode, name in enumerate(("const", "zeros", "index", "index>>12", "hash")):
        t = time_ms(lambda: store(grid, (256,), (x, np.int64(n4), np.int32(mode))))
        row.append(f"store {name} {t:.3f} ({mb / t / 1e3:.2f} TB/s)")
    t = time_ms(lambda: copy(grid, (256,), (y, x, np.int64(n4))))
    row.append(f"copy {t:.3f} ({2 * mb / t / 1e3:.2f} TB/s r+w)")
    t = time_ms(lambda: rmw(grid, (256,), (x, np.int64(n4))))
    row.append(f"rmw {t:.3f} ({2 * mb / t / 1e3:.2f} TB/s r+w)")
    row.append(f"cupy fill(7) {time_ms(lambda: x.fill(7)):.3f}")
    row.append(f"cupy fill(0) {time_ms(lambda: x.fill(0)):.3f}")
    print("\n  ".join(row), flush=True)
