"""Piece roots kept in L2 between the 2-D tile kernel and the kernels after it
(H100 experiment, 2026-11-26 late; benchmarks/NOTES.md).

The question.  The 2-D border kernel's unions walk chains of piece roots,
and on the spiral one union walks about 100 dependent loads (NOTES,
2026-11-25), which is about the kernel's whole time at roughly half a
microsecond a load: DRAM latency rather than L2's.  The tile kernel wrote
every piece root into P, but it also wrote every other run start's P (the
spiral's P is 67 MB, more than L2), so by the time the border kernel runs
most of those lines are gone from L2.  If the piece roots' lines stayed in
L2 (an evict-last policy on their stores), the walks of the border kernel,
of the roots phase and of the label pass would hit L2.

Variants (a copy of kernels/ with text replaced; the library is not touched):

  library     the kernels as they are: since this experiment, the slotted
              tiles store their piece roots with an L2 evict-last policy
              (runs.cuh, store_kept)
  plain       the kernels before it: a plain store there too
  st_last     every tile stores its piece roots (only those) in P with
              that policy
  st_last_ld  st_last, and every global parent load of the union-find core
              (load_parent: the border kernel, the roots phase) with the
              same policy
  ld_last     only the loads (a control)
  st_half     st_last with a fractional policy of 0.5 in the tiles without
              slots (half of the lines)

(Before store_kept was kept, "library" here was "plain", and "st_slot" was
today's library: results/h100-2026-11-26f/l2_roots.log, l2_slot.log.)

Prints the phases of the 2-D cases (phases.report) and the event-timed /
device times of whole calls, two rounds in alternating order, labels equal
(_common.alternate).

    python benchmarks/experiments/l2_roots.py [--variants library,st_last] [--no-phases]"""
import argparse
import shutil
import tempfile
from pathlib import Path

import _common  # noqa: F401  (sys.path)
from _common import alternate, recompile
from meshccl._gpu import loader
import phases as ph

ORIG = loader.kernel_dir()

HELPERS = r"""
namespace meshccl {
// L2 cache-policy stores and loads (experiment l2_roots.py)
template <typename I>
__device__ __forceinline__ void st_last(I* p, I v) {
    if (sizeof(I) == 4)
        asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, FRACTION;\n\t"
                     "st.global.L2::cache_hint.b32 [%0], %1, pol;\n\t}" ::"l"(p), "r"((int)v) : "memory");
    else
        asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, FRACTION;\n\t"
                     "st.global.L2::cache_hint.b64 [%0], %1, pol;\n\t}" ::"l"(p), "l"((long long)v) : "memory");
}
template <typename I>
__device__ __forceinline__ I ld_last(const I* p) {
    if (sizeof(I) == 4) {
        int v;
        asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                     "ld.global.cg.L2::cache_hint.b32 %0, [%1], pol;\n\t}" : "=r"(v) : "l"(p) : "memory");
        return (I)v;
    }
    long long v;
    asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                 "ld.global.cg.L2::cache_hint.b64 %0, [%1], pol;\n\t}" : "=l"(v) : "l"(p) : "memory");
    return (I)v;
}
}  // namespace meshccl
"""

STORES = [
    ("            if (!(SL && slotted)) {\n                P[tile0 + (I)r * nx + b] = g;\n",
     "            if (!(SL && slotted)) {\n                if (root) meshccl::st_last(P + tile0 + (I)r * nx + b, g);\n"
     "                else P[tile0 + (I)r * nx + b] = g;\n"),
]
PLAIN = [
    ("            if (root) meshccl::runs::store_kept(P + tile0 + (I)r * nx + b, g);  // (runs.cuh)\n",
     "            if (root) P[tile0 + (I)r * nx + b] = g;\n"),
]
LOADS = [
    ("    return __ldcg(P + x);\n}\n", "    return ld_last(P + x);\n}\n"),
]


def make(name):
    """A kernel folder for variant ``name`` (None: the library's)."""
    if name == "library":
        return ORIG
    d = Path(tempfile.mkdtemp(prefix=f"l2roots_{name}_"))
    for p in ORIG.iterdir():
        if p.is_file():
            shutil.copy(p, d / p.name)
    frac = "0.5" if name == "st_half" else "1.0"

    def edit(fname, pairs, helpers):
        text = (d / fname).read_text()
        for old, new in pairs:
            assert text.count(old) == 1, (fname, old)
            text = text.replace(old, new)
        if helpers:
            text = text.replace("#pragma once\n", "#pragma once\n" + HELPERS.replace("FRACTION", frac), 1)
        (d / fname).write_text(text)

    # the helpers go into unionfind.cuh, which every kernel file includes
    edit("unionfind.cuh", LOADS if name in ("st_last_ld", "ld_last") else [], True)
    if name in ("st_last", "st_last_ld", "st_half"):
        edit("runs2d.cu", STORES, False)
    if name == "plain":
        edit("runs2d.cu", PLAIN, False)
    return d


DIRS = {}


def use(name):
    if name not in DIRS:
        DIRS[name] = make(name)
    loader.kernel_dir = lambda: DIRS[name]
    recompile()


ap = argparse.ArgumentParser()
ap.add_argument("--variants", default="plain,library,st_last,st_last_ld,ld_last,st_half")
ap.add_argument("--no-phases", action="store_true")
ap.add_argument("--only", default="", help="substring of the case names")
opt = ap.parse_args()
variants = opt.variants.split(",")
cases = [c for c in ph.standard_cases((2,)) if opt.only in c[0]]
if not opt.no_phases:
    for v in variants:
        use(v)
        ph.report(f"{v:11s}", cases, keys=["tile", "border", "roots", "pieces", "cells"])
alternate(cases, {v: v for v in variants}, use)
use("library")
