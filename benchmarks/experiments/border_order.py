"""The 2-D border kernel's tile rows in other orders (H100 experiment,
2026-11-26 night; benchmarks/NOTES.md).

The border kernel's blocks go out in grid order.  Taken as tile rows top to
bottom (as it was until 2026-11-26), a wave of blocks covers consecutive tile
rows; since then the kernel takes them scattered (runs2d.cu, scattered_row,
which this experiment chose).  On the
spiral, whose ring roots end up in chains that one union walks for about
100 dependent loads (NOTES, 2026-11-25), the order in which seams are met
decides how those chains grow.  Variants (runs2d.cu's border kernel patched
at run time, nothing else):

  plain      tile row = blockIdx.y (the kernel before scattered_row)
  library    the kernel as it is (split_sc_bu since 2026-11-27)
  scattered_both  both kinds of warp on scattered_row's tile row (the
             kernel from 2026-11-26 to 2026-11-27)
  reverse    bottom to top
  scattered  tile row = blockIdx.y * 53 mod rows (a permutation when the
             number of tile rows is a power of two, as in every case here)
  halves     top and bottom halves interleaved
  golden     tile row = blockIdx.y * (0.618 rows, odd) mod rows
  bitrev     tile row = blockIdx.y with its bits reversed
  stride2    the even tile rows top to bottom, then the odd ones
(all permutations where the number of tile rows is a power of two)
  rowK       tile row = blockIdx.y * K mod rows (scattered is row53)
  split_td_bu  top seams top to bottom, the strips' left seams bottom to top
  split_sc_bu  top seams scattered, left seams bottom to top
  split_sc_bu53  top seams scattered, left seams scattered from the bottom
  split_sc_half  top seams scattered, left seams half the image further
  lin53, lin_golden   whole blocks scattered: block number in grid order
             times 53 (or 0.618 blocks, odd) modulo the number of blocks

Prints the standard 2-D cases' event-timed calls and device times, two
rounds in alternating order, labels equal (_common.alternate).

    python benchmarks/experiments/border_order.py [--variants plain,scattered,...]"""
import argparse

import _common  # noqa: F401  (sys.path)
from _common import alternate, patched_source, recompile
from meshccl._gpu import loader
import phases as ph

_source = loader.source
LINE = ("    const I y0 = (up ? (I)scattered_row(blockIdx.y, gridDim.y)\n"
        "                     : (I)(gridDim.y - 1u - blockIdx.y)) * 32;\n")
ROW = {
    "plain": "(I)blockIdx.y",
    "library": None,  # the kernel as it is: split_sc_bu since 2026-11-27
    "scattered_both": "(I)scattered_row(blockIdx.y, gridDim.y)",  # the kernel of 2026-11-26
    "reverse": "(I)(gridDim.y - 1u - blockIdx.y)",
    "scattered": "(I)((blockIdx.y * 53u) % gridDim.y)",
    "halves": "(I)((blockIdx.y & 1u) ? (gridDim.y + 1u) / 2u + blockIdx.y / 2u : blockIdx.y / 2u)",
    "golden": "(I)((blockIdx.y * ((unsigned)(0.618 * gridDim.y) | 1u)) % gridDim.y)",
    "bitrev": "(I)(__brev(blockIdx.y) >> (33 - __ffs(gridDim.y)))",
    "stride2": "(I)(blockIdx.y < gridDim.y / 2u ? 2u * blockIdx.y : 2u * (blockIdx.y - gridDim.y / 2u) + 1u)",
    # the top-seam warps and the strip-seam warps of a block on different
    # tile rows (2026-11-27: a sequential model of the spiral's unions,
    # experiments/border_sim.py, put its forest's depth at 341 on average
    # as the library orders them, 44 with the top seams top down and the
    # strip seams bottom up)
    "split_td_bu": "(up ? (I)blockIdx.y : (I)(gridDim.y - 1u - blockIdx.y))",
    "split_sc_bu": "(up ? (I)scattered_row(blockIdx.y, gridDim.y) : (I)(gridDim.y - 1u - blockIdx.y))",
    "split_sc_bu53": ("(up ? (I)scattered_row(blockIdx.y, gridDim.y) : "
                      "(I)scattered_row(gridDim.y - 1u - blockIdx.y, gridDim.y))"),
    "split_sc_half": ("(up ? (I)scattered_row(blockIdx.y, gridDim.y) : "
                      "(I)((scattered_row(blockIdx.y, gridDim.y) + gridDim.y / 2u) % gridDim.y))"),
}


BXLINE = ("    const I bx = (I)blockIdx.x * tb + (up ? warp : (warp - tb) * strip), "
          "ntx = (nx + 31) >> 5;\n")
# whole blocks scattered: the block's number in grid order times K, modulo
# the number of blocks (K odd: a permutation when that number is a power of
# two), read back as (column of blocks, tile row)
LINEAR = {"lin53": "53ull", "lin_golden": "(((unsigned long long)(0.618 * n_)) | 1ull)"}


def use(name):
    if name in LINEAR:
        k = LINEAR[name]
        pre = ("    const unsigned n_ = gridDim.x * gridDim.y, l_ = (unsigned)(((unsigned long long)"
               f"(blockIdx.y * gridDim.x + blockIdx.x) * {k}) % n_);\n"
               "    const unsigned bxp_ = l_ % gridDim.x, byp_ = l_ / gridDim.x;\n")
        loader.source = patched_source(
            _source, "runs2d.cu",
            (BXLINE, pre + BXLINE.replace("(I)blockIdx.x", "(I)bxp_")),
            (LINE, "    const I y0 = (I)byp_ * 32;\n"))
    else:
        row = ROW[name] if name in ROW else \
            f"(I)((blockIdx.y * {int(name[3:])}ull) % gridDim.y)"  # rowK: any multiplier K
        loader.source = _source if row is None else patched_source(
            _source, "runs2d.cu", (LINE, f"    const I y0 = {row} * 32;\n"))
    recompile()


ap = argparse.ArgumentParser()
ap.add_argument("--variants", default=",".join(list(ROW) + list(LINEAR)))
ap.add_argument("--potts", action="store_true", help="Potts 4096^2 too")
opt = ap.parse_args()
cases = [c for c in ph.standard_cases((2,)) if opt.potts or not c[0].startswith("potts")]
alternate(cases, {v: v for v in opt.variants.split(",")}, use)
use("library")
