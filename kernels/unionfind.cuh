// unionfind.cuh -- the one union-find core of meshccl.
//
// Every labelling path (meshes, graphs, batches) keeps a parent array P in
// which P[x] <= x for every element.  A root is an element with P[x] == x.
// Two rules keep that invariant and make the result deterministic:
//
//   * find() walks towards the root with *path halving*: each visited
//     element is re-pointed at its grandparent.  The stores are plain
//     stores; they only ever replace a parent by one of its ancestors, so a
//     stale or lost store costs time, never correctness (ECL-CC calls this
//     intermediate pointer jumping).
//   * unite() hooks the *larger* root under the *smaller* one with an
//     atomic compare-and-swap that succeeds only while the larger one is
//     still a root.  On failure it re-finds and tries again.
//
// Because parents only ever point to smaller indices, when all unions are
// done the root of every tree is the smallest index of its component.  For
// an image stored in raster (C) order that is the component's first cell,
// which is exactly the order in which skimage numbers its labels.
//
// During the final flatten every element stores its root into its own slot,
// and a plain halving store by another thread could land after that and put
// back a non-root ancestor.  find_final() therefore halves with a CAS that
// only replaces the exact parent it read, so an element's root, once stored,
// stays.
//
// Reads of P during the union phase go through __ldcg (cached in L2 only):
// L1 is not coherent between multiprocessors, and a find() that kept
// re-reading a stale L1 line could spin on an old root.
#pragma once

namespace meshccl {

// Parent loads: from global memory through L2 (see above), or from shared
// memory as volatile loads, for the tile-local forests of mesh.cu.
template <bool Shared, typename I>
__device__ __forceinline__ I load_parent(const I* P, I x) {
    if (Shared) return *(const volatile I*)(P + x);
    return __ldcg(P + x);
}

// Find with path halving.
template <bool Shared = false, typename I>
__device__ __forceinline__ I find(I* P, I x) {
    I p = load_parent<Shared>(P, x);
    while (p != x) {
        I g = load_parent<Shared>(P, p);
        if (g == p) return p;
        P[x] = g;  // halve the path: x now skips its parent
        x = g;
        p = load_parent<Shared>(P, x);
    }
    return x;
}

__device__ __forceinline__ int cas(int* a, int expected, int desired) {
    return atomicCAS(a, expected, desired);
}
__device__ __forceinline__ long long cas(long long* a, long long expected, long long desired) {
    return (long long)atomicCAS((unsigned long long*)a, (unsigned long long)expected,
                                (unsigned long long)desired);
}

// Find for the flatten pass: path halving through CAS (see above).
template <typename I>
__device__ __forceinline__ I find_final(I* P, I x) {
    I p = load_parent<false>(P, x);
    while (p != x) {
        I g = load_parent<false>(P, p);
        if (g == p) return p;
        cas(P + x, p, g);
        x = g;
        p = load_parent<false>(P, x);
    }
    return x;
}

// Merge the sets of a and b: the larger root is hooked under the smaller.
// Shared selects a forest in shared memory (one thread block's tile).
template <bool Shared = false, typename I>
__device__ __forceinline__ void unite(I* P, I a, I b) {
    a = find<Shared>(P, a);
    b = find<Shared>(P, b);
    while (a != b) {
        if (a < b) { I t = a; a = b; b = t; }   // a is now the larger root
        I old = cas(P + a, a, b);
        if (old == a) return;                   // hooked
        a = find<Shared>(P, old);               // a gained a parent meanwhile
        b = find<Shared>(P, b);
    }
}

}  // namespace meshccl
