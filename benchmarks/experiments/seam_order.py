"""The 3-D face kernels' planes in a scattered order (H100 experiment,
2026-11-26 night; benchmarks/NOTES.md), after the 2-D border kernel's tile
rows were (experiments/border_order.py, runs2d.cu scattered_row).

meshccl_runs3d_seams takes blocks of `walk` planes (blockIdx.z) and
meshccl_runs3d_zface one brick boundary (blockIdx.z); both go out in grid
order, so the blocks at work at one time cover neighbouring planes.
Variants (runs3d.cu patched at run time): plain; seams53 (the seam
kernel's plane blocks taken as blockIdx.z * 53 mod their number); zface53
(the same for the z faces); both53.  53 is prime and divides none of the
standard cases' counts, so each is a permutation there.

    python benchmarks/experiments/seam_order.py"""
import _common  # noqa: F401  (sys.path)
from _common import alternate, patched_source, recompile
from meshccl._gpu import loader
import phases as ph

_source = loader.source
SEAMS = ("    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, zb = (I)blockIdx.z * walk;\n",
         "    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, "
         "zb = (I)(((unsigned long long)blockIdx.z * 53ull) % gridDim.z) * walk;\n")
ZFACE = ("    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, z = ((I)blockIdx.z + 1) * NZ;\n",
         "    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, "
         "z = ((I)(((unsigned long long)blockIdx.z * 53ull) % gridDim.z) + 1) * NZ;\n")
VARIANTS = {"plain": (), "seams53": (SEAMS,), "zface53": (ZFACE,), "both53": (SEAMS, ZFACE)}


def use(name):
    pairs = VARIANTS[name]
    loader.source = patched_source(_source, "runs3d.cu", *pairs) if pairs else _source
    recompile()


alternate(ph.standard_cases((3,)), VARIANTS, use)
use("plain")
