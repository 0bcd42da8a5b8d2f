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
// Reads of P during the union phase go through __ldcg (cached in L2 only):
// L1 is not coherent between multiprocessors, and a find() that kept
// re-reading a stale L1 line could spin on an old root.
#pragma once

namespace meshccl {

template <typename I>
__device__ __forceinline__ I load_parent(const I* P, I x) {
    return __ldcg(P + x);
}

// Find with path halving.
template <typename I>
__device__ __forceinline__ I find(I* P, I x) {
    I p = load_parent(P, x);
    while (p != x) {
        I g = load_parent(P, p);
        if (g == p) return p;
        P[x] = g;  // halve the path: x now skips its parent
        x = g;
        p = load_parent(P, x);
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

// Merge the sets of a and b: the larger root is hooked under the smaller.
template <typename I>
__device__ __forceinline__ void unite(I* P, I a, I b) {
    a = find(P, a);
    b = find(P, b);
    while (a != b) {
        if (a < b) { I t = a; a = b; b = t; }   // a is now the larger root
        I old = cas(P + a, a, b);
        if (old == a) return;                   // hooked
        a = find(P, old);                       // a gained a parent meanwhile
        b = find(P, b);
    }
}

}  // namespace meshccl
