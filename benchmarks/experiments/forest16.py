"""The 2-D tile kernel's occupancy: its block's forest as int (37 KB of
shared memory a block) or 16-bit nodes (MESHCCL_FOREST16=1: 21 KB), and
the registers left to the compiler or capped for 8 blocks per
multiprocessor (MESHCCL_TILE_MIN_BLOCKS=8: 32 registers, no spills by
ptxas).  Today's kernel (int, no cap: 40 registers at connectivity 2)
fits 6 blocks of 8 warps.  Prints each variant's registers, shared memory
and blocks per multiprocessor, then per 2-D case and connectivity one
event-timed call and the device time behind a busy kernel, two rounds in
alternating order; labels must be equal.  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/forest16.py"""
import _defines
import cupy

from meshccl._gpu import plan
from meshccl._gpu.loader import kernels
import phases as ph
from _common import alternate

VARIANTS = {"int": (0, 0), "int/8": (0, 8), "short": (1, 0), "short/8": (1, 8)}


def use(name):
    f16, mb = VARIANTS[name]
    _defines.use(MESHCCL_FOREST16=f16, MESHCCL_TILE_MIN_BLOCKS=mb)
    plan._local.__dict__.pop("plans", None)


for v in VARIANTS:
    use(v)
    for c in (1, 2):
        k, = kernels("runs2d.cu", f"meshccl_runs2d_tile<unsigned char, int, {c}, 8>")
        try:  # (RawKernel.kernel: the driver's function)
            blocks = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                k.kernel.ptr, 256, 0)
        except Exception as exc:
            blocks = f"? ({exc})"
        print(f"{v:8s} c={c}: {k.num_regs} registers, {k.shared_size_bytes} B shared, "
              f"{k.local_size_bytes} B local, {blocks} blocks per SM", flush=True)

alternate(ph.standard_cases((2,)), VARIANTS, use, conns=lambda x: (1, 2))
use("int")
