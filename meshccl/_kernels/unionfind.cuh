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
// memory as volatile loads, for the tile-local forests of general.cu.
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

// The CAS of a guarded unite (Guard below): the lanes of a warp that are
// about to hook the same root a elect one leader, which CASes for them;
// the others take the leader's outcome as if their own CAS had failed
// after the leader's (it changed P[a] to the leader's b, or it read the
// parent a had gained).  One atomic per distinct root per warp instead of
// one per lane.  Global memory only.
template <typename I>
__device__ __forceinline__ I cas_elected(I* P, I a, I b) {
    const unsigned peers = __match_any_sync(__activemask(), a);
    const int leader = __ffs(peers) - 1;
    const int lane = threadIdx.x & 31;
    I old = lane == leader ? cas(P + a, a, b) : (I)0;
    old = __shfl_sync(peers, old, leader);
    const I leader_b = __shfl_sync(peers, b, leader);
    return old == a && lane != leader ? leader_b : old;
}

// Merge the sets of a and b: the larger root is hooked under the smaller.
// Shared selects a forest in shared memory (one thread block's tile).
// Returns the root this call hooked (it stopped being a root), or -1 when
// a and b were already in one set.  The 2-D / 3-D mesh path records the
// hooked roots (cells3d.cu and the run kernels); the others only ask "did it hook?" (unite()).
//
// Guard (global memory only) is for unions that many threads aim at the
// same few roots at once -- k-out sampling of a graph whose giant
// component is still in pieces, where every thread with an edge between
// two big pieces tries to hook the same root, and each failed CAS is
// another serialised atomic on one address.  The guarded loop re-reads a's
// parent first and only CASes while a still looks like a root (test and
// test-and-set), and the CAS is warp-elected (cas_elected).  Same hooks,
// same forest rule; more loads on uncontended unions, so it is opt-in
// (docs/graph.md has the measurement).
template <bool Shared = false, bool Guard = false, typename I>
__device__ __forceinline__ I unite_hooked(I* P, I a, I b) {
    a = find<Shared>(P, a);
    b = find<Shared>(P, b);
    while (a != b) {
        if (a < b) { I t = a; a = b; b = t; }   // a is now the larger root
        I old;
        if (Guard && !Shared) {
            old = load_parent<false>(P, a);
            if (old == a) old = cas_elected(P, a, b);
        } else {
            old = cas(P + a, a, b);
        }
        if (old == a) return a;                 // hooked
        a = find<Shared>(P, old);               // a gained a parent meanwhile
        b = find<Shared>(P, b);
    }
    return (I)-1;
}

// unite_hooked() for callers that only need to know whether this call
// merged two sets (spanning forests record those edges); callers that only
// want the components ignore the result.
template <bool Shared = false, bool Guard = false, typename I>
__device__ __forceinline__ bool unite(I* P, I a, I b) {
    return unite_hooked<Shared, Guard>(P, a, b) >= 0;
}

// unite() for the mesh kernels' border passes, which record in the bit
// array H each root they hook (that root stopped being a root: the pieces
// path of number_pieces.cu resolves exactly those).
template <typename I>
__device__ __forceinline__ void unite_recording(I* P, unsigned* H, I a, I b) {
    const I h = unite_hooked(P, a, b);
    if (h >= 0) atomicOr(H + (h >> 5), 1u << (h & 31));
}

// ===================================================================
// Alternative union and compression rules (GConn / ConnectIt), used only
// by the graph methods 'async' with a compression keyword, 'rem-cas',
// 'early', 'hooks' and 'jtb' (kernels/graph.cu).  The default find() /
// unite() above stay the ones every mesh kernel and the default graph
// methods use.  All but the JTB rule keep the invariant P[x] <= x, so the
// root of every tree is still its smallest element.
//
// Compression rules (on-the-fly, during the walks of a union):
//   NONE      walk to the root, store nothing
//   HALVING   x -> grandparent, continue from the grandparent (= find())
//   SPLITTING x -> grandparent, continue from the old parent
//   FULL      walk to the root, then point every element of the walk at it
//   SPLICING  Rem's splice: while walking up from rx, re-point rx at the
//             other walk's (smaller) parent (rem-cas only)
// Which rule goes with which union is listed in meshccl/graph/_methods.py
// (COMPRESSION); the host refuses the other combinations.

enum Compression { COMPRESS_NONE = 0, COMPRESS_HALVING = 1, COMPRESS_SPLITTING = 2,
                   COMPRESS_FULL = 3, COMPRESS_SPLICING = 4 };
enum UnionRule { UNION_ASYNC = 0, UNION_REM_CAS = 1, UNION_EARLY = 2, UNION_HOOKS = 3,
                 UNION_JTB = 4 };

// Find without compression.
template <typename I>
__device__ __forceinline__ I find_naive(const I* P, I x) {
    I p = __ldcg(P + x);
    while (p != x) {
        x = p;
        p = __ldcg(P + x);
    }
    return x;
}

// Find with path splitting: every element of the walk is re-pointed at its
// grandparent and the walk goes on from its old parent.  Plain stores, as
// in find(): a parent is only ever replaced by one of its ancestors.
template <typename I>
__device__ __forceinline__ I find_splitting(I* P, I x) {
    I p = __ldcg(P + x);
    while (p != x) {
        const I g = __ldcg(P + p);
        if (g == p) return p;
        P[x] = g;
        x = p;
        p = g;
    }
    return x;
}

// Find with full compression: find the root r, then point the walk's
// elements at r.  Needs P[x] <= x: the second walk stops at the first
// element not above r (someone may have compressed past r meanwhile, and
// r itself may have been hooked: storing r is still storing an ancestor).
template <typename I>
__device__ __forceinline__ I find_full(I* P, I x) {
    const I r = find_naive(P, x);
    while (x > r) {
        const I p = __ldcg(P + x);
        if (p <= r) break;
        P[x] = r;
        x = p;
    }
    return r;
}

template <int C, typename I>
__device__ __forceinline__ I find_with(I* P, I x) {
    if (C == COMPRESS_NONE) return find_naive(P, x);
    if (C == COMPRESS_SPLITTING) return find_splitting(P, x);
    if (C == COMPRESS_FULL) return find_full(P, x);
    return find<false>(P, x);  // COMPRESS_HALVING
}

// Union-Async with a chosen find: unite_hooked() with find_with<C>.
//
// Every union rule below returns, as unite_hooked() does, the root it
// hooked (which stopped being a root: each element is hooked at most once,
// so the incremental structure of incremental.cu records the edge of that
// union in the hooked root's slot), or -1 when a and b were in one set.
template <int C, typename I>
__device__ __forceinline__ I unite_async(I* P, I a, I b) {
    a = find_with<C>(P, a);
    b = find_with<C>(P, b);
    while (a != b) {
        if (a < b) { I t = a; a = b; b = t; }
        const I old = cas(P + a, a, b);
        if (old == a) return a;
        a = find_with<C>(P, old);
        b = find_with<C>(P, b);
    }
    return (I)-1;
}

// Rem's algorithm, lock-free (Union-Rem-CAS): two walks move up in
// lock-step by parent value; the one with the larger parent steps (or, at a
// root, is hooked by CAS under the other's parent, which is smaller and so
// outside its tree).  Equal parents prove one set.  C: NONE, HALVING,
// SPLITTING (one CAS-guarded step each time the walk moves) or SPLICING.
template <int C, typename I>
__device__ __forceinline__ I unite_rem_cas(I* P, I a, I b) {
    I rx = a, ry = b;
    while (true) {
        I px = __ldcg(P + rx), py = __ldcg(P + ry);
        if (px == py) return (I)-1;
        if (px < py) { I t = rx; rx = ry; ry = t; t = px; px = py; py = t; }
        if (rx == px) {                                  // rx is a root
            if (cas(P + rx, rx, py) == rx) return rx;
            continue;
        }
        if (C == COMPRESS_SPLICING) {
            cas(P + rx, px, py);                         // rx joins ry's side
            rx = px;
        } else if (C == COMPRESS_SPLITTING) {
            const I g = __ldcg(P + px);
            cas(P + rx, px, g);
            rx = px;
        } else if (C == COMPRESS_HALVING) {
            const I g = __ldcg(P + px);
            cas(P + rx, px, g);
            rx = g;
        } else {
            rx = px;
        }
    }
}

// Union-Early: the two walks go up together (the larger element steps)
// and stop as soon as they meet; a root met by the larger walk is hooked
// under the other walk's current element, which is smaller and so outside
// the root's tree.  The walk itself stores nothing; C (NONE, HALVING,
// SPLITTING, FULL) compresses the paths of a and b afterwards.
template <int C, typename I>
__device__ __forceinline__ I unite_early(I* P, I a, I b) {
    I u = a, v = b;
    I hooked = (I)-1;
    while (u != v) {
        if (u < v) { I t = u; u = v; v = t; }
        const I pu = __ldcg(P + u);
        if (pu == u) {
            if (cas(P + u, u, v) == u) { hooked = u; break; }
        } else {
            u = pu;
        }
    }
    if (C != COMPRESS_NONE) {
        find_with<C>(P, a);
        find_with<C>(P, b);
    }
    return hooked;
}

// Union-Hooks: the CAS goes to an auxiliary array H (all -1 at the start)
// instead of P, so the store into P[root] is uncontended: the thread that
// claims H[r] is the only one that writes P[r] while r is a root.  A root
// already claimed (its P store not yet seen) is followed through H.
template <int C, typename I>
__device__ __forceinline__ I unite_hooks(I* P, I* H, I a, I b) {
    a = find_with<C>(P, a);
    b = find_with<C>(P, b);
    while (a != b) {
        if (a < b) { I t = a; a = b; b = t; }
        const I h = cas(H + a, (I)-1, b);
        if (h == (I)-1) {
            P[a] = b;
            return a;
        }
        a = find_with<C>(P, h);
        b = find_with<C>(P, b);
    }
    return (I)-1;
}

// Union-JTB (Jayanti, Tarjan and Boix-Adserà): randomized linking -- the
// root of lower random priority is hooked under the other.  The order is
// (hash(x), x), total, so no cycle forms, but roots are no longer the
// smallest elements: the caller turns the forest into smallest-element
// pointers afterwards (meshccl_graph_jtb_* in graph.cu).  C: NONE or
// SPLITTING (through CAS, as in the paper's find).
__device__ __forceinline__ unsigned jtb_priority(unsigned long long x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (unsigned)x;
}

template <typename I>
__device__ __forceinline__ bool jtb_before(I a, I b) {  // a's key below b's
    const unsigned pa = jtb_priority((unsigned long long)a);
    const unsigned pb = jtb_priority((unsigned long long)b);
    return pa < pb || (pa == pb && a < b);
}

template <int C, typename I>
__device__ __forceinline__ I find_jtb(I* P, I x) {
    I p = __ldcg(P + x);
    while (p != x) {
        const I g = __ldcg(P + p);
        if (g == p) return p;
        if (C == COMPRESS_SPLITTING) cas(P + x, p, g);
        x = p;
        p = g;
    }
    return x;
}

template <int C, typename I>
__device__ __forceinline__ I unite_jtb(I* P, I a, I b) {
    a = find_jtb<C>(P, a);
    b = find_jtb<C>(P, b);
    while (a != b) {
        if (jtb_before(b, a)) { I t = a; a = b; b = t; }  // a: the lower key
        const I old = cas(P + a, a, b);
        if (old == a) return a;
        a = find_jtb<C>(P, old);
        b = find_jtb<C>(P, b);
    }
    return (I)-1;
}

// One union by rule R with compression C; H is Union-Hooks' array.  The
// root it hooked, or -1 when a and b were in one set already.
template <int R, int C, typename I>
__device__ __forceinline__ I unite_by(I* P, I* H, I a, I b) {
    if (R == UNION_REM_CAS) return unite_rem_cas<C>(P, a, b);
    if (R == UNION_EARLY) return unite_early<C>(P, a, b);
    if (R == UNION_HOOKS) return unite_hooks<C>(P, H, a, b);
    if (R == UNION_JTB) return unite_jtb<C>(P, a, b);
    return unite_async<C>(P, a, b);
}

// The root of x for a query beside the unions of rule R with compression
// C: JTB's own find (its roots are not the smallest elements); Rem's
// splicing is a rule of its union walk, not a find, so its queries halve.
template <int R, int C, typename I>
__device__ __forceinline__ I find_by(I* P, I x) {
    if (R == UNION_JTB) return find_jtb<C>(P, x);
    if (C == COMPRESS_SPLICING) return find<false>(P, x);
    return find_with<C>(P, x);
}

// Whether a and b are in one set, linearisable against unite_by<R, C>()
// running at the same time (Anderson and Woll's same-set test): two
// different roots prove two sets only if the first is still a root after
// the second was found -- a hooked root never becomes a root again, so at
// the moment the second root was read both were roots.  Otherwise the
// first root was hooked meanwhile: look again.  Not for Rem's rule, whose
// splicing moves subtrees between two sets before their union completes:
// its queries run apart from its unions (incremental.cu).
// The fence keeps the second look at a after the loads that found b's
// root (the proof needs that order; it costs only queries of two sets).
template <int R, int C, typename I>
__device__ __forceinline__ bool same_set(I* P, I a, I b) {
    while (true) {
        a = find_by<R, C>(P, a);
        b = find_by<R, C>(P, b);
        if (a == b) return true;
        __threadfence();
        if (__ldcg(P + a) == a) return false;
    }
}

}  // namespace meshccl
