"""Randomized linking in the 2-D border kernel, each component's first cell
carried at its root (H100 experiment, 2026-11-27; benchmarks/NOTES.md).

The sequential model (border_sim.py) puts the spiral's forest of hooked
piece roots at 331 deep on average under the library's rule (the larger root
hooked under the smaller), and at 4.9 under linking by a hash priority (the
graph path's 'jtb' rule).  The relabelling needs each component's first
cell, which a priority root is not, so this variant carries it:

* runs2d.cu's border kernel (patched): ``unite_jtb_min``.  A root is a
  piece root whose P is itself (its component's first cell is itself) or
  negative, -2 - m (the first cell is m).  A union hooks the root of lower
  priority under the other by CAS on its whole P value, then carries its
  first cell into the other tree's root (a CAS loop that follows that root
  if it has been hooked meanwhile).
* relabel.cu's meshccl_piece_roots (patched): every piece root (A, not only
  the hooked ones) walks to its root, publishing its progress as before,
  and stores -2 - m, m its component's first cell; the roots counted are the
  piece roots with m equal to themselves.  Counting waits for the block's
  walks.  A walk that meets a negative value has its answer.
* meshccl_label_pieces (patched): the label of a piece root is the rank of
  m, read from its own P.

Forced for every image (a library would pick it per plan, as it picks the
slot form).  Prints each standard 2-D case's event-timed call and device
time under both, two rounds in alternating order, labels equal
(_common.alternate, which exits if they differ).

    python benchmarks/experiments/border_jtb.py [--phases]
"""
import _common  # noqa: F401  (sys.path)
from _common import alternate, recompile
from meshccl._gpu import loader

_source = loader.source
ANCHOR = "__device__ __forceinline__ unsigned scattered_row(unsigned b, unsigned rows) {\n"
BORDER = r"""
namespace meshccl {
// a root: P itself (first cell: itself) or negative (-2 - first cell)
template <typename I>
__device__ __forceinline__ bool jroot(I p, I x) { return p < 0 || p == x; }
template <typename I>
__device__ __forceinline__ I find_jroot(I* P, I x) {
    I p = __ldcg(P + x);
    while (!jroot(p, x)) {
        const I g = __ldcg(P + p);
        if (jroot(g, p)) return p;
        P[x] = g;
        x = g;
        p = __ldcg(P + x);
    }
    return x;
}
template <typename I>
__device__ __forceinline__ void unite_jtb_min(I* P, unsigned* H, I a, I b) {
    a = find_jroot(P, a);
    b = find_jroot(P, b);
    while (a != b) {
        if (jtb_before(b, a)) { I t = a; a = b; b = t; }  // a: the lower key, hooked
        const I va = __ldcg(P + a);
        if (!jroot(va, a) || cas(P + a, va, b) != va) {  // a changed meanwhile
            a = find_jroot(P, a);
            b = find_jroot(P, b);
            continue;
        }
        const I m = va < 0 ? (I)-2 - va : a;  // a's tree's first cell, into b's root
        for (;;) {
            const I vb = __ldcg(P + b);
            if (!jroot(vb, b)) {
                b = find_jroot(P, vb);
                continue;
            }
            const I mb = vb < 0 ? (I)-2 - vb : b;
            if (mb <= m || cas(P + b, vb, (I)-2 - m) == vb) break;
        }
        return;
    }
}
}  // namespace meshccl
#define unite_recording unite_jtb_min
"""

# The kernel's head (the roots counted from A & ~H) gives way to walks of
# every piece root that find the roots; its counting and ticket code stay
# as they are; its walks of the hooked roots (the tail) go.
HEAD_START = "    unsigned hooked[W], roots[W];\n"
HEAD_END = "    // the counts first (they do not depend on the walks)\n"
TAIL_START = "    // then the walk of each hooked root, MESHCCL_PIECE_GROUP at a time (over\n"
TAIL_END = "// sums[b]: roots in words"
HEAD = r"""    unsigned pieces[W], roots[W];
#pragma unroll
    for (int k = 0; k < W; ++k) {
        const I w = w0 + k;
        pieces[k] = w < words ? A[w] : 0u;
        roots[k] = 0u;
    }
    // every piece root walks to its root and keeps -2 - m, m the first cell
    unsigned long long h = pieces[0];
    if (W == 2) h |= (unsigned long long)pieces[W - 1] << 32;
    while (h) {
        I x[MESHCCL_PIECE_GROUP], r[MESHCCL_PIECE_GROUP], m[MESHCCL_PIECE_GROUP];
#pragma unroll
        for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g) {
            x[g] = (I)-1;
            if (h) {
                x[g] = (w0 << 5) + (I)(__ffsll(h) - 1);
                h &= h - 1ull;
            }
            r[g] = x[g];
            m[g] = (I)-1;
        }
        for (bool moved = true; moved;) {
            moved = false;
            I p[MESHCCL_PIECE_GROUP];
#pragma unroll
            for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g)
                p[g] = (x[g] < 0 || m[g] >= 0) ? (I)0 : __ldcg(P + r[g]);
#pragma unroll
            for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g) {
                if (x[g] < 0 || m[g] >= 0) continue;
                if (p[g] < 0) {
                    m[g] = (I)-2 - p[g];
                } else if (p[g] == r[g]) {
                    m[g] = r[g];
                } else {
                    if (r[g] != x[g]) P[x[g]] = p[g];
                    r[g] = p[g];
                    moved = true;
                }
            }
        }
#pragma unroll
        for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g) {
            if (x[g] < 0) continue;
            P[x[g]] = (I)-2 - m[g];
            if (m[g] == x[g]) {
                const int off = (int)(x[g] - (w0 << 5));
                if (off < 32) roots[0] |= 1u << off;
                else roots[W - 1] |= 1u << (off - 32);
            }
        }
    }
    int count = 0;
#pragma unroll
    for (int k = 0; k < W; ++k) count += __popc(roots[k]);
"""
LABEL_OLD = "            if (x[g] >= 0) P[x[g]] = rank_of(r[g], roots, incl, block_incl);\n"
LABEL_NEW = "            if (x[g] >= 0) P[x[g]] = rank_of((I)-2 - r[g], roots, incl, block_incl);\n"


def jtb_source(filename):
    text = _source(filename)
    if filename == "runs2d.cu":
        assert text.count(ANCHOR) == 1
        text = text.replace(ANCHOR, BORDER + ANCHOR)
    elif filename == "relabel.cu":
        i, j = text.index(TAIL_START), text.index(TAIL_END)
        text = text[:i] + "}\n\n" + text[j:]
        i, j = text.index(HEAD_START), text.index(HEAD_END)
        text = text[:i] + HEAD + text[j:]
        assert text.count(LABEL_OLD) == 1
        text = text.replace(LABEL_OLD, LABEL_NEW)
    return text


def use(variant):
    loader.source = jtb_source if variant == "jtb" else _source
    recompile()


if __name__ == "__main__":
    import argparse

    import phases as ph

    ap = argparse.ArgumentParser()
    ap.add_argument("--phases", action="store_true",
                    help="per-kernel times at connectivity 2 (spiral, blobs, percolation .4073) "
                         "instead of whole calls")
    opt = ap.parse_args()
    cases = ph.standard_cases((2,))
    if not opt.phases:
        alternate(cases, {"library": 0, "jtb": 1}, use)
    else:
        for name, a in cases:
            if not (name.startswith(("spiral", "blobs")) or "4073" in name):
                continue
            for rnd in range(2):
                for v in ("library", "jtb"):
                    use(v)
                    t, total = ph.phases(a, 2, "fixed", reps=20)
                    print(f"{name:20s} c2 {v:8s} " + " ".join(f"{k} {x:.4f}" for k, x in t.items())
                          + f" total {total:.4f}", flush=True)
    use("library")
