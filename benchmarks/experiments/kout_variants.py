"""Experiment: ways to run k-out sampling (k = 2) on the GPU, timed per kernel.

    python benchmarks/experiments/kout_variants.py [--shrink K] [--reps R]

On the GConn-shaped graphs of graph_bench.py --papers (symmetric CSR).
Variants of the sampling step (all followed by the same compress, frequent
root and finish pass, so the finish time shows the sample's quality):

  both     one kernel, each vertex unites its first 2 entries (meshccl's kout
           until 2026-11-22)
  rounds   Afforest: entry 0 of every vertex, compress, entry 1, compress
  nocomp   entry 0 of every vertex, then entry 1 (no compress between)
  both2, rounds+ttas, rounds+warp, rounds+tw: with contention guards in the
           union (see unite_x below)
  early    entry 0, compress, the frequent root L, then entry 1 only for the
           vertices not under L (L only grows, and an edge from L to a vertex
           outside L is still taken from that vertex's side)
  adaptive entry 0, compress, L and its share of the picks; entry 1 (guarded)
           skips L's vertices only when the share is >= --share; compress
  init2    init, compress, L; then local minima unite entry 0 and all
           vertices entry 1 (guarded, skipping L as adaptive); compress
  init     entry 0 stored without atomics when it is smaller than v (the
           rows are sorted, so it is v's smallest neighbour; ECL-CC's init
           with one read), then a kernel unites entry 1 (and entry 0 when it
           was larger than v)

Labels are checked against meshccl.graph.connected_components.
"""
import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))

CODE = r'''
#include "unionfind.cuh"
__device__ __forceinline__ long long tid() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long tcount() { return (long long)gridDim.x * blockDim.x; }

// unite() with a contention guard, MODE 1: re-read the larger root's slot
// before the CAS (test and test-and-set); 2: lanes of a warp that would CAS
// the same root elect one leader, which CASes for them; 3: both.
template <int MODE>
__device__ __forceinline__ void unite_x(int* P, int a, int b) {
    a = meshccl::find(P, a);
    b = meshccl::find(P, b);
    while (a != b) {
        if (a < b) { int t = a; a = b; b = t; }
        if (MODE & 1) {
            const int pa = __ldcg(P + a);
            if (pa != a) { a = meshccl::find(P, pa); b = meshccl::find(P, b); continue; }
        }
        int old;
        if (MODE & 2) {
            const unsigned mask = __activemask();
            const unsigned peers = __match_any_sync(mask, a);
            const int leader = __ffs(peers) - 1;
            const int lane = threadIdx.x & 31;
            int o = 0;
            if (lane == leader) o = atomicCAS(P + a, a, b);
            o = __shfl_sync(peers, o, leader);
            const int bl = __shfl_sync(peers, b, leader);
            old = o == a ? (lane == leader ? a : bl) : o;
        } else {
            old = atomicCAS(P + a, a, b);
        }
        if (old == a) return;
        a = meshccl::find(P, old);
        b = meshccl::find(P, b);
    }
}
template <int MODE>
__device__ void round_x(const long long* indptr, const int* idx, int* P, int n, int r) {
    for (long long v = tid(); v < n; v += tcount()) {
        long long k = indptr[v] + r;
        if (k < indptr[v + 1]) { int u = idx[k]; if (u != v) unite_x<MODE>(P, (int)v, u); }
    }
}
extern "C" __global__ void x_round1(const long long* a, const int* b, int* P, int n, int r) { round_x<1>(a, b, P, n, r); }
extern "C" __global__ void x_round2(const long long* a, const int* b, int* P, int n, int r) { round_x<2>(a, b, P, n, r); }
extern "C" __global__ void x_round3(const long long* a, const int* b, int* P, int n, int r) { round_x<3>(a, b, P, n, r); }
// entry r of the vertices not already under the frequent root L = big[0]
extern "C" __global__ void x_round_skip(const long long* indptr, const int* idx, int* P, int n, int r,
                                        const int* big) {
    const int L = big[0];
    for (long long v = tid(); v < n; v += tcount()) {
        if (__ldcg(P + v) == L) continue;
        long long k = indptr[v] + r;
        if (k < indptr[v + 1]) { int u = idx[k]; if (u != v) meshccl::unite(P, (int)v, u); }
    }
}
extern "C" __global__ void x_both2(const long long* indptr, const int* idx, int* P, int n) {
    for (long long v = tid(); v < n; v += tcount()) {
        long long b = indptr[v], e = indptr[v + 1];
        if (e > b + 2) e = b + 2;
        for (long long k = b; k < e; ++k) { int u = idx[k]; if (u != v) unite_x<2>(P, (int)v, u); }
    }
}
extern "C" __global__ void x_both3(const long long* indptr, const int* idx, int* P, int n) {
    for (long long v = tid(); v < n; v += tcount()) {
        long long b = indptr[v], e = indptr[v + 1];
        if (e > b + 2) e = b + 2;
        for (long long k = b; k < e; ++k) { int u = idx[k]; if (u != v) unite_x<3>(P, (int)v, u); }
    }
}
// after x_init: local minima unite entry 0, every vertex entry 1 (guarded);
// vertices under L = big[0] skip when skipL
extern "C" __global__ void x_after_init3(const long long* indptr, const int* idx, int* P, int n,
                                         const int* big, int skipL) {
    const int L = skipL ? big[0] : -1;
    for (long long v = tid(); v < n; v += tcount()) {
        if (__ldcg(P + v) == L) continue;
        long long b = indptr[v], e = indptr[v + 1];
        if (b < e) { int u = idx[b]; if (u > v) unite_x<3>(P, (int)v, u); }
        if (b + 1 < e) { int u = idx[b + 1]; if (u != v) unite_x<3>(P, (int)v, u); }
    }
}
extern "C" __global__ void x_round3_skip(const long long* indptr, const int* idx, int* P, int n, int r,
                                         const int* big, int skipL) {
    const int L = skipL ? big[0] : -1;
    for (long long v = tid(); v < n; v += tcount()) {
        if (__ldcg(P + v) == L) continue;
        long long k = indptr[v] + r;
        if (k < indptr[v + 1]) { int u = idx[k]; if (u != v) unite_x<3>(P, (int)v, u); }
    }
}
extern "C" __global__ void x_both(const long long* indptr, const int* idx, int* P, int n) {
    for (long long v = tid(); v < n; v += tcount()) {
        long long b = indptr[v], e = indptr[v + 1];
        if (e > b + 2) e = b + 2;
        for (long long k = b; k < e; ++k) { int u = idx[k]; if (u != v) meshccl::unite(P, (int)v, u); }
    }
}
extern "C" __global__ void x_round(const long long* indptr, const int* idx, int* P, int n, int r) {
    for (long long v = tid(); v < n; v += tcount()) {
        long long k = indptr[v] + r;
        if (k < indptr[v + 1]) { int u = idx[k]; if (u != v) meshccl::unite(P, (int)v, u); }
    }
}
extern "C" __global__ void x_init(const long long* indptr, const int* idx, int* P, int n) {
    for (long long v = tid(); v < n; v += tcount()) {
        long long b = indptr[v];
        int p = (int)v;
        if (b < indptr[v + 1]) { int u = idx[b]; if (u < p) p = u; }
        P[v] = p;
    }
}
extern "C" __global__ void x_after_init(const long long* indptr, const int* idx, int* P, int n) {
    for (long long v = tid(); v < n; v += tcount()) {
        long long b = indptr[v], e = indptr[v + 1];
        if (b < e) { int u = idx[b]; if (u > v) meshccl::unite(P, (int)v, u); }
        if (b + 1 < e) { int u = idx[b + 1]; if (u != v) meshccl::unite(P, (int)v, u); }
    }
}
extern "C" __global__ void x_compress(int* P, int n) {
    for (long long v = tid(); v < n; v += tcount()) {
        int r = meshccl::find_final(P, (int)v);
        if (P[v] != r) P[v] = r;
    }
}
// finish: vertices outside L unite their entries from `skip` on (symmetric graph)
extern "C" __global__ void x_finish(const long long* indptr, const int* idx, int* P, int n, int skip, const int* big) {
    const int L = big[0];
    for (long long v = tid(); v < n; v += tcount()) {
        if (__ldcg(P + v) == L || meshccl::find(P, (int)v) == L) continue;
        for (long long k = indptr[v] + skip, e = indptr[v + 1]; k < e; ++k) {
            int u = idx[k]; if (u != v) meshccl::unite(P, (int)v, u);
        }
    }
}
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=None)
    ap.add_argument("--share", type=float, default=0.5,
                    help="adaptive/init2: skip L's vertices in entry 1 when L holds this share of the picks")
    ap.add_argument("--variants", default="both,both2,both3,rounds+tw,early,adaptive,init2")
    opt = ap.parse_args()
    import cupy
    import numpy as np

    import graph_bench
    import meshccl.graph as mg
    from meshccl._gpu.loader import kernel_dir

    mod = cupy.RawModule(code=CODE, options=("-std=c++17", f"-I{kernel_dir()}"))
    K = {k: mod.get_function("x_" + k) for k in
         ("both", "both2", "both3", "after_init3", "round3_skip", "round", "round1", "round2", "round3", "round_skip", "init", "after_init", "compress",
          "finish")}
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    print("GPU:", cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())

    def grid(n):
        return (max(1, min((n + 255) // 256, 32 * sms)),)

    for name, _p, make in graph_bench.paper_cases(opt.shrink):
        if opt.only and opt.only not in name:
            continue
        e = make()
        _h, g = graph_bench._symmetric_csr(e, True)
        del e, _h
        n = g.shape[0]
        indptr = g.indptr.astype(cupy.int64)
        idx = g.indices
        nn = np.int32(n)
        _, ref = mg.connected_components(g, method="ecl", symmetric=True)
        print(f"\n## {name}: n {n}, stored {idx.size}")
        rng = np.random.default_rng(0)
        picks = cupy.asarray(rng.integers(0, n, 1024))

        def frequent(P):
            vals, counts = cupy.unique(P[picks], return_counts=True)
            return vals[int(counts.argmax())].reshape(1)

        def variant(v, P, ev, state):
            if v in ("adaptive", "init2"):
                if v == "adaptive":
                    K["round"](grid(n), (256,), (indptr, idx, P, nn, np.int32(0))); ev("entry0")
                else:
                    K["init"](grid(n), (256,), (indptr, idx, P, nn)); ev("init")
                K["compress"](grid(n), (256,), (P, nn)); ev("compress0")
                vals, counts = cupy.unique(P[picks], return_counts=True)
                j = int(counts.argmax())
                state["share"] = int(counts[j]) / picks.size
                state["big"] = vals[j].reshape(1)
                skip = np.int32(state["share"] >= opt.share)
                ev("(mode)")
                if v == "adaptive":
                    K["round3_skip"](grid(n), (256,), (indptr, idx, P, nn, np.int32(1), state["big"], skip))
                else:
                    K["after_init3"](grid(n), (256,), (indptr, idx, P, nn, state["big"], skip))
                ev("entry1")
                K["compress"](grid(n), (256,), (P, nn)); ev("compress")
                vals, counts = cupy.unique(P[picks], return_counts=True)
                state["big"] = vals[int(counts.argmax())].reshape(1)
                ev("(mode)")
                return
            if v in ("both", "both2", "both3"):
                K[v](grid(n), (256,), (indptr, idx, P, nn)); ev("sample")
            elif v.startswith("rounds+"):
                kr = K["round" + {"ttas": "1", "warp": "2", "tw": "3"}[v[7:]]]
                kr(grid(n), (256,), (indptr, idx, P, nn, np.int32(0))); ev("entry0")
                K["compress"](grid(n), (256,), (P, nn)); ev("compress0")
                kr(grid(n), (256,), (indptr, idx, P, nn, np.int32(1))); ev("entry1")
            elif v == "early":
                K["round"](grid(n), (256,), (indptr, idx, P, nn, np.int32(0))); ev("entry0")
                K["compress"](grid(n), (256,), (P, nn)); ev("compress0")
                state["big"] = frequent(P); ev("(mode)")
                K["round_skip"](grid(n), (256,), (indptr, idx, P, nn, np.int32(1), state["big"]))
                ev("entry1")
                K["compress"](grid(n), (256,), (P, nn)); ev("compress")
                return
            elif v in ("rounds", "nocomp"):
                K["round"](grid(n), (256,), (indptr, idx, P, nn, np.int32(0))); ev("entry0")
                if v == "rounds":
                    K["compress"](grid(n), (256,), (P, nn)); ev("compress0")
                K["round"](grid(n), (256,), (indptr, idx, P, nn, np.int32(1))); ev("entry1")
            elif v == "init":
                K["init"](grid(n), (256,), (indptr, idx, P, nn)); ev("init")
                K["after_init"](grid(n), (256,), (indptr, idx, P, nn)); ev("rest")
            K["compress"](grid(n), (256,), (P, nn)); ev("compress")

        for v in opt.variants.split(","):
            times = {}
            for rep in range(opt.reps + 1):
                P = cupy.arange(n, dtype=cupy.int32)
                cupy.cuda.Device().synchronize()
                marks = [cupy.cuda.Event()]
                marks[0].record()
                names = []

                def ev(label):
                    e = cupy.cuda.Event(); e.record(); marks.append(e); names.append(label)

                state = {}
                variant(v, P, ev, state)
                if "big" in state:
                    big = state["big"]
                else:
                    big = frequent(P)
                    ev("(mode)")
                K["finish"](grid(n), (256,), (indptr, idx, P, nn, np.int32(2), big)); ev("finish")
                K["compress"](grid(n), (256,), (P, nn)); ev("flatten")
                marks[-1].synchronize()
                if rep == 0:
                    _, inv = cupy.unique(P, return_inverse=True)
                    ok = bool((inv.ravel() == ref).all())
                    continue
                for a, b, lab in zip(marks, marks[1:], names):
                    times.setdefault(lab, []).append(cupy.cuda.get_elapsed_time(a, b))
            med = {k: statistics.median(t) for k, t in times.items()}
            core = sum(t for k, t in med.items() if k not in ("(mode)", "flatten"))
            cells = "  ".join(f"{k} {t:.3f}" for k, t in med.items())
            if "share" in state:
                cells += f" | L share after entry 0 {state['share']:.2f}"
            print(f"{v:7s} sample+finish {core:.3f} ms | {cells} | labels {'ok' if ok else 'WRONG'}")
        g = indptr = idx = ref = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
