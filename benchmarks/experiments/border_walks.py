"""What the 2-D border kernel's unions do on the GPU, counted (H100
experiment, 2026-11-27; benchmarks/NOTES.md).

runs2d.cu's border kernel patched at run time: every union goes through a
copy of the union that counts, into device globals, its parent loads, its
failed CAS and its clock cycles (clock64, on its multiprocessor), under the
library's rule (the larger root hooked under the smaller) or randomized
linking with each tree's first cell carried at its root (border_jtb.py's
rule).  Printed per case (one warm call, then the counted one): unions,
loads per union (mean; how many passed 16 and 64; the most), failed CAS,
cycles per union (mean, most), and the kernel's time from the phases.

    python benchmarks/experiments/border_walks.py
"""
import _common  # noqa: F401  (sys.path)
from _common import fixed_steps, recompile, record_modules
import cupy

from meshccl._gpu import loader
import border_jtb as bj

_source = loader.source
MODULES = record_modules("runs2d.cu")

COUNTERS = r"""
// [0] unions, [1] loads, [2] past 16, [3] past 64, [4] most loads,
// [5] failed CAS, [6] cycles, [7] most cycles
__device__ unsigned long long meshccl_walks[8];
namespace meshccl {
template <typename I>
__device__ __forceinline__ I walk_find(I* P, I x, unsigned& loads, bool jtb) {
    I p = __ldcg(P + x);
    ++loads;
    auto root = [&](I v, I at) { return jtb ? (v < 0 || v == at) : v == at; };
    while (!root(p, x)) {
        const I g = __ldcg(P + p);
        ++loads;
        if (root(g, p)) return p;
        P[x] = g;
        x = g;
        p = __ldcg(P + x);
        ++loads;
    }
    return x;
}
template <typename I>
__device__ __forceinline__ void unite_counted(I* P, unsigned* H, I a, I b) {
    const long long t0 = clock64();
    unsigned loads = 0, failed = 0;
    const bool jtb = %(jtb)d;
    a = walk_find(P, a, loads, jtb);
    b = walk_find(P, b, loads, jtb);
    while (a != b) {
        if (jtb) {
            if (jtb_before(b, a)) { I t = a; a = b; b = t; }
        } else if (a < b) {
            I t = a; a = b; b = t;
        }
        const I va = __ldcg(P + a);
        ++loads;
        const bool rooted = jtb ? (va < 0 || va == a) : va == a;
        if (!rooted || cas(P + a, va, b) != va) {
            ++failed;
            a = walk_find(P, a, loads, jtb);
            b = walk_find(P, b, loads, jtb);
            continue;
        }
        if (!jtb) {
            atomicOr(H + (a >> 5), 1u << (a & 31));
        } else {
            const I m = va < 0 ? (I)-2 - va : a;
            for (;;) {
                const I vb = __ldcg(P + b);
                ++loads;
                if (!(vb < 0 || vb == b)) {
                    b = walk_find(P, vb, loads, jtb);
                    continue;
                }
                const I mb = vb < 0 ? (I)-2 - vb : b;
                if (mb <= m) break;
                if (cas(P + b, vb, (I)-2 - m) == vb) break;
                ++failed;
            }
        }
        break;
    }
    const unsigned long long dt = (unsigned long long)(clock64() - t0);
    atomicAdd(&meshccl_walks[0], 1ull);
    atomicAdd(&meshccl_walks[1], (unsigned long long)loads);
    if (loads > 16) atomicAdd(&meshccl_walks[2], 1ull);
    if (loads > 64) atomicAdd(&meshccl_walks[3], 1ull);
    atomicMax(&meshccl_walks[4], (unsigned long long)loads);
    if (failed) atomicAdd(&meshccl_walks[5], (unsigned long long)failed);
    atomicAdd(&meshccl_walks[6], dt);
    atomicMax(&meshccl_walks[7], dt);
}
}  // namespace meshccl
#define unite_recording unite_counted
"""


def use(rule):
    jtb = rule == "jtb"

    def source(filename):
        text = (bj.jtb_source if jtb else _source)(filename)
        if filename == "runs2d.cu":
            if jtb:  # the counted union replaces border_jtb's
                text = text.replace("#define unite_recording unite_jtb_min\n", "")
            text = text.replace(bj.ANCHOR, COUNTERS % {"jtb": int(jtb)} + bj.ANCHOR)
        return text

    loader.source = source
    recompile()


def counted(a, conn, rule):
    use(rule)
    MODULES.clear()
    steps = dict(fixed_steps(a, conn)[0])
    mod = MODULES[-1]
    c = cupy.ndarray((8,), cupy.uint64, memptr=mod.get_global("meshccl_walks"))
    ev = [cupy.cuda.Event() for _ in range(3)]
    for rep in range(2):  # the first call warms up
        c[...] = 0
        steps["tile"]()
        ev[0].record()
        steps["border"]()
        ev[1].record()
        ev[1].synchronize()
    n, loads, past16, past64, most, failed, cycles, most_cycles = (int(x) for x in c.get())
    ms = cupy.cuda.get_elapsed_time(ev[0], ev[1])
    return (f"unions {n} loads mean {loads / max(n, 1):.2f} >16 {past16} >64 {past64} "
            f"most {most} | failed CAS {failed} | cycles mean {cycles / max(n, 1):.0f} "
            f"most {most_cycles} | border {ms:.4f} ms (counting included)")


if __name__ == "__main__":
    import phases as ph

    for name, a in ph.standard_cases((2,)):
        if not (name.startswith(("spiral", "blobs")) or "4073" in name):
            continue
        for rule in ("library", "jtb"):
            print(f"{name:20s} c2 {rule:8s} {counted(a, 2, rule)}", flush=True)
    loader.source = _source
    recompile()
