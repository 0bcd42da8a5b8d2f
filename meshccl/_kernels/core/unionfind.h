// The union-find core shared by the host build (meshccl/_cpu/core) and,
// later, the CUDA kernels: plain C++17, no std:: containers, every function
// MESHCCL_HD (__host__ __device__ under nvcc / NVRTC, nothing on the host).
//
// A forest in one integer array: P[x] is x's parent, a root is its own
// parent.  Parents always point to smaller indices:
//
//     find(P, x)     walks to the root, halving the path as it goes: every
//                    node it passes is re-hung on its grandparent (ECL-CC's
//                    "intermediate pointer jumping");
//     hook(P, a, b)  for two roots (or a root and `none`, a value larger than
//                    every index), hangs the larger under the smaller and
//                    returns the smaller;
//     unite_cas(...) the same with a compare-and-swap, for forests that
//                    several threads share; retried from the new roots
//                    when another thread hooked first.
//
// So every set's root is its smallest index: in raster order, the first
// cell of a component (or the first provisional label of a run-based
// labeller).  number_table() then numbers the roots 1..N in increasing order
// in one forward pass (a non-root's parent is smaller, so already holds its
// set's number): labels in raster order of each component's first cell,
// skimage's numbering.
//
// The index type I is a template parameter (int32 or int64): arrays of
// 2**31 cells or more take int64.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define MESHCCL_HD __host__ __device__
#else
#define MESHCCL_HD
#endif

// (The host build compiles its kernels once per instruction set, each in a
// namespace of its own -- MESHCCL_UF_NS -- so that the copies built for
// different CPUs never merge at link time.  Default: meshccl::uf.)
#ifndef MESHCCL_UF_NS
#define MESHCCL_UF_NS uf
#endif

namespace meshccl {
namespace MESHCCL_UF_NS {

template <class I>
MESHCCL_HD inline I find(I* P, I x) {
    I p = P[x];
    while (p != x) {
        I g = P[p];
        if (g == p) return p;
        P[x] = g;  // halving: x now hangs on its grandparent
        x = g;
        p = P[x];
    }
    return x;
}

// Roots a and b (one may be a sentinel larger than every index, whose entry
// exists and is only written): the larger hangs under the smaller.
template <class I>
MESHCCL_HD inline I hook(I* P, I a, I b) {
    I lo = a < b ? a : b;
    I hi = a < b ? b : a;
    P[hi] = lo;
    return lo;
}

template <class I>
MESHCCL_HD inline bool unite(I* P, I a, I b) {
    a = find(P, a);
    b = find(P, b);
    if (a == b) return false;
    hook(P, a, b);
    return true;
}

// Loads and stores that other threads may race with: relaxed atomics on the
// host (the parent of a node only ever moves up its own path, so any value
// read is an ancestor), plain accesses on the device (as unionfind.cuh).
template <class I>
MESHCCL_HD inline I load_shared(const I* p) {
#if defined(__CUDA_ARCH__)
    return *(volatile const I*)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

template <class I>
MESHCCL_HD inline void store_shared(I* p, I v) {
#if defined(__CUDA_ARCH__)
    *(volatile I*)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

template <class I>
MESHCCL_HD inline bool cas(I* p, I old, I nw) {
#if defined(__CUDA_ARCH__)
    if (sizeof(I) == 4)
        return atomicCAS((unsigned int*)p, (unsigned int)old, (unsigned int)nw) == (unsigned int)old;
    return atomicCAS((unsigned long long*)p, (unsigned long long)old, (unsigned long long)nw) ==
           (unsigned long long)old;
#else
    return __atomic_compare_exchange_n(p, &old, nw, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

template <class I>
MESHCCL_HD inline I find_shared(I* P, I x) {
    I p = load_shared(P + x);
    while (p != x) {
        I g = load_shared(P + p);
        if (g == p) return p;
        store_shared(P + x, g);  // halving: x is no root, so only halvings move its parent
        x = g;
        p = load_shared(P + x);
    }
    return x;
}

template <class I>
MESHCCL_HD inline void unite_cas(I* P, I a, I b) {
    for (;;) {
        a = find_shared(P, a);
        b = find_shared(P, b);
        if (a == b) return;
        if (a < b) { I t = a; a = b; b = t; }
        if (cas(P + a, a, b)) return;
    }
}

// E[1..nl]: a forest whose parents are smaller labels (E[0], the
// background, is 0).  Afterwards E[l] is the number, 1..N in increasing
// order of the roots, of l's set.  Returns N.
template <class I>
MESHCCL_HD inline I number_table(I* E, I nl) {
    I count = 0;
    for (I l = 1; l <= nl; ++l) {
        I p = E[l];
        if (p == l) E[l] = ++count;
        else E[l] = E[p];
    }
    return count;
}

}  // namespace MESHCCL_UF_NS
}  // namespace meshccl
