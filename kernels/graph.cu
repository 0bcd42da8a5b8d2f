// graph.cu -- connected components of general graphs on the one union-find core.
//
// A graph arrives either as CSR (a row-offset array `indptr` of n + 1
// entries and the neighbour array `indices`) or as an edge list (`src`,
// `dst`).  Every stored entry (v, u) is an edge; the components wanted are
// the weak ones, so an edge stored only in one direction still joins both
// ends.  Every method below only ever calls unite() and find() of
// unionfind.cuh, so the forest keeps its one rule -- a parent is never
// larger than its child -- and each component's root ends up being its
// smallest vertex.  relabel.cu then numbers the roots in increasing order,
// which is SciPy's numbering plus one.
//
// Three ways of feeding edges to unite():
//
// * ECL-CC (Jaiganesh and Burtscher, 2018).  An init pass lets each vertex
//   point at the first neighbour in its list that is smaller than itself
//   (or at itself when there is none).  That is a union done without any
//   atomic: nobody else writes the slot yet, and the pointer goes to a
//   smaller vertex of the same component, so the forest rule holds.  Then
//   one thread per vertex unites the edges of low-degree vertices (at most
//   16 entries); vertices with 17..352 entries are pushed to the front of
//   one worklist of n slots, and those with more to its back.  A second
//   kernel spends a warp on each front vertex and a third a whole block on
//   each back vertex, so one huge vertex never serialises a thread.  The
//   thread kernel skips the edge the init pass already used.  When the
//   caller promises that the graph is stored symmetrically, an edge is
//   only taken from its larger end (it is stored at both); otherwise every
//   stored edge is united where it is stored.
//
// * Edge-centric union-find (the asynchronous union-find variants that
//   Hong, Dhulipala and Shun found fastest without sampling): one thread per
//   stored edge unites its two ends.  For CSR input the thread finds its
//   edge's row by a binary search in indptr, so no row array is built.
//
// * k-out sampling and finish (Sutton et al.'s Afforest, as generalised by
//   GConn).  First every vertex unites only its first k edges; the forest
//   is then flattened, 1024 random vertices are looked up and the root that
//   comes up most often -- almost always the giant component -- is called
//   L.  In the finish pass a vertex whose root is not L unites its
//   remaining edges.  A vertex already under L may skip its remaining edges
//   only when the graph is stored symmetrically (the other end, if outside
//   L, will process the reverse edge).  Without that promise it still reads
//   its neighbours but calls unite() only for a neighbour whose parent is
//   not L: a parent equal to L proves the neighbour is in L's set already,
//   and any doubt (a parent re-pointed by path halving) just costs a unite.
//   The finish pass reuses the three ECL-CC compute kernels for balance.
//
// Index types: I is the vertex / parent type (int below 2**31 vertices,
// long long beyond), J the stored type of the neighbour arrays (int or long
// long, as the caller's arrays are), and row offsets are always long long
// (the host widens indptr, which is only n + 1 entries).  Every loop runs
// over 64-bit counters with a grid stride, so any number of edges fits a
// launch of bounded size.

#include "unionfind.cuh"

#define MESHCCL_GRAPH_THREAD_MAX 16   // thread kernel: up to this many entries
#define MESHCCL_GRAPH_WARP_MAX 352    // warp kernel: up to this many; block kernel above

namespace meshccl {
namespace graph {

// What the vertex-centric kernels do with an edge.
enum Mode { ECL = 0, FINISH = 1 };

// Is v in the set of the frequent root L?  A parent equal to L proves it;
// otherwise look the root up.
template <typename I>
__device__ __forceinline__ bool in_big(I* P, I v, I L) {
    return __ldcg(P + v) == L || find(P, v) == L;
}

// The entries a vertex-centric kernel visits for v: all of them for
// ECL-CC, those after the first `skip` (already united by sampling) for the
// finish pass.
__device__ __forceinline__ void row_range(const long long* indptr, long long v, int skip,
                                          long long& begin, long long& end) {
    begin = indptr[v] + skip;
    end = indptr[v + 1];
}

// One stored edge (v, u) met by a vertex-centric kernel.  vin: v is in L's
// set (finish pass only).
template <typename I, int M, bool Sym>
__device__ __forceinline__ void take_edge(I* P, I v, I u, bool vin, I L) {
    if (u == v) return;
    if (M == ECL) {
        if (Sym && u > v) return;  // stored at both ends: take it at the larger one
    } else if (vin && __ldcg(P + u) == L) {
        return;                    // both ends already in L's set
    }
    unite(P, v, u);
}

// The binary search of the edge-centric kernel: the row r with
// indptr[r] <= e < indptr[r + 1] (rows may be empty).
template <typename I>
__device__ __forceinline__ I row_of(const long long* indptr, I n, long long e) {
    I lo = 0, hi = n;  // indptr[lo] <= e < indptr[hi]
    while (hi - lo > 1) {
        const I mid = lo + (hi - lo) / 2;
        if (indptr[mid] <= e) lo = mid; else hi = mid;
    }
    return lo;
}

__device__ __forceinline__ unsigned long long mix64(unsigned long long x) {
    // splitmix64's finaliser: a cheap, well-spread hash for sampling
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__device__ __forceinline__ long long thread_id() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long thread_count() {
    return (long long)gridDim.x * blockDim.x;
}

}  // namespace graph
}  // namespace meshccl

// ---------------------------------------------------------------- ECL-CC

// P[v] = first neighbour smaller than v in v's list, else v.
template <typename I, typename J>
__global__ void meshccl_graph_ecl_init(const long long* __restrict__ indptr,
                                       const J* __restrict__ indices, I* P, I n) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        I p = (I)v;
        for (long long e = indptr[v], end = indptr[v + 1]; e < end; ++e) {
            const I u = (I)indices[e];
            if (u < p) { p = u; break; }
        }
        P[v] = p;
    }
}

// Thread per vertex: unite the edges of vertices with at most 16 entries to
// visit; push the others to the worklist (17..352 at the front, more at the
// back).  M = ECL: skip = 0.  M = FINISH: skip = k and big[0] is L.
// top[0] / top[1] count the front / back entries of wl (n slots).
template <typename I, typename J, int M, bool Sym>
__global__ void meshccl_graph_vertex_thread(const long long* __restrict__ indptr,
                                            const J* __restrict__ indices, I* P, I n, int skip,
                                            const I* __restrict__ big, I* __restrict__ wl,
                                            unsigned long long* top) {
    using namespace meshccl::graph;
    const I L = M == FINISH ? big[0] : (I)-1;
    for (long long vv = thread_id(); vv < (long long)n; vv += thread_count()) {
        const I v = (I)vv;
        long long begin, end;
        row_range(indptr, vv, skip, begin, end);
        if (begin >= end) continue;
        bool vin = false;
        if (M == FINISH) {
            vin = in_big(P, v, L);
            if (Sym && vin) continue;  // the other ends process the reverse edges
        }
        const long long deg = end - begin;
        if (deg > MESHCCL_GRAPH_WARP_MAX) {
            wl[(long long)n - 1 - (long long)atomicAdd(top + 1, 1ull)] = v;
        } else if (deg > MESHCCL_GRAPH_THREAD_MAX) {
            wl[atomicAdd(top, 1ull)] = v;
        } else {
            bool init_edge = M == ECL;  // the first smaller neighbour: united by the init pass
            for (long long e = begin; e < end; ++e) {
                const I u = (I)indices[e];
                if (init_edge && u < v) { init_edge = false; continue; }
                take_edge<I, M, Sym>(P, v, u, vin, L);
            }
        }
    }
}

// Warp per vertex of the worklist's front.
template <typename I, typename J, int M, bool Sym>
__global__ void meshccl_graph_vertex_warp(const long long* __restrict__ indptr,
                                          const J* __restrict__ indices, I* P, I n, int skip,
                                          const I* __restrict__ big, const I* __restrict__ wl,
                                          const unsigned long long* top) {
    using namespace meshccl::graph;
    const I L = M == FINISH ? big[0] : (I)-1;
    const long long count = (long long)top[0];
    const int lane = threadIdx.x & 31;
    const long long warps = thread_count() >> 5;
    for (long long w = thread_id() >> 5; w < count; w += warps) {
        const I v = wl[w];
        long long begin, end;
        row_range(indptr, (long long)v, skip, begin, end);
        const bool vin = M == FINISH && in_big(P, v, L);
        for (long long e = begin + lane; e < end; e += 32)
            take_edge<I, M, Sym>(P, v, (I)indices[e], vin, L);
    }
}

// Block per vertex of the worklist's back.
template <typename I, typename J, int M, bool Sym>
__global__ void meshccl_graph_vertex_block(const long long* __restrict__ indptr,
                                           const J* __restrict__ indices, I* P, I n, int skip,
                                           const I* __restrict__ big, const I* __restrict__ wl,
                                           const unsigned long long* top) {
    using namespace meshccl::graph;
    const I L = M == FINISH ? big[0] : (I)-1;
    const long long count = (long long)top[1];
    for (long long b = blockIdx.x; b < count; b += gridDim.x) {
        const I v = wl[(long long)n - 1 - b];
        long long begin, end;
        row_range(indptr, (long long)v, skip, begin, end);
        const bool vin = M == FINISH && in_big(P, v, L);
        for (long long e = begin + threadIdx.x; e < end; e += blockDim.x)
            take_edge<I, M, Sym>(P, v, (I)indices[e], vin, L);
    }
}

// ------------------------------------------------- edge-centric union-find

// One thread per stored edge e.  Csr: the edge's first end is its row in
// indptr (src is unused); otherwise src[e].  Sym: the graph is stored in
// both directions, so only the copy with src > dst is taken.
template <typename I, typename J, bool Csr, bool Sym>
__global__ void meshccl_graph_edges(const long long* __restrict__ indptr,
                                    const J* __restrict__ src, const J* __restrict__ dst,
                                    I* P, I n, long long m) {
    using namespace meshccl::graph;
    for (long long e = thread_id(); e < m; e += thread_count()) {
        const I a = Csr ? row_of(indptr, n, e) : (I)src[e];
        const I b = (I)dst[e];
        if (a == b || (Sym && a < b)) continue;
        meshccl::unite(P, a, b);
    }
}

// ------------------------------------------------------ k-out sampling

// Unite each vertex with the first k entries of its list.
template <typename I, typename J>
__global__ void meshccl_graph_kout(const long long* __restrict__ indptr,
                                   const J* __restrict__ indices, I* P, I n, int k) {
    using namespace meshccl::graph;
    for (long long vv = thread_id(); vv < (long long)n; vv += thread_count()) {
        const I v = (I)vv;
        const long long begin = indptr[vv];
        const long long stop = indptr[vv + 1];
        const long long end = begin + k < stop ? begin + k : stop;
        for (long long e = begin; e < end; ++e) {
            const I u = (I)indices[e];
            if (u != v) meshccl::unite(P, v, u);
        }
    }
}

// Point every vertex straight at its root (no unions run meanwhile).
template <typename I>
__global__ void meshccl_graph_compress(I* P, I n) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        const I r = meshccl::find_final(P, (I)v);
        if (P[v] != r) P[v] = r;
    }
}

// out[i] = root of a pseudo-random vertex, i < count.
template <typename I>
__global__ void meshccl_graph_sample(I* P, I n, I* __restrict__ out, int count,
                                     unsigned long long seed) {
    using namespace meshccl::graph;
    for (long long i = thread_id(); i < count; i += thread_count()) {
        const I x = (I)(mix64(seed + (unsigned long long)i) % (unsigned long long)n);
        out[i] = meshccl::find(P, x);
    }
}

// One block of MESHCCL_GRAPH_SAMPLES threads: big[0] = the value that occurs
// most often in samples[0..count) (the smallest such value on a tie).
#define MESHCCL_GRAPH_SAMPLES 1024
template <typename I>
__global__ void __launch_bounds__(MESHCCL_GRAPH_SAMPLES)
meshccl_graph_mode(const I* __restrict__ samples, int count, I* __restrict__ big) {
    __shared__ I value[MESHCCL_GRAPH_SAMPLES];
    __shared__ int freq[MESHCCL_GRAPH_SAMPLES];
    const int t = threadIdx.x;
    if (t < count) value[t] = samples[t];
    __syncthreads();
    int c = 0;
    if (t < count)
        for (int j = 0; j < count; ++j) c += value[j] == value[t];
    freq[t] = c;
    __syncthreads();
    // tree reduction to the (largest count, smallest value) pair
    for (int half = MESHCCL_GRAPH_SAMPLES / 2; half > 0; half >>= 1) {
        if (t < half) {
            const int o = t + half;
            if (freq[o] > freq[t] || (freq[o] == freq[t] && freq[o] > 0 && value[o] < value[t])) {
                freq[t] = freq[o];
                value[t] = value[o];
            }
        }
        __syncthreads();
    }
    if (t == 0) big[0] = value[0];
}

// ------------------------------------------- edge list -> CSR (for ECL / k-out)

// deg[src[e] + 1] += 1 (deg: n + 1 zeros; its prefix sum is indptr).
template <typename J>
__global__ void meshccl_graph_degree(const J* __restrict__ src, long long m,
                                     unsigned long long* deg) {
    using namespace meshccl::graph;
    for (long long e = thread_id(); e < m; e += thread_count())
        atomicAdd(deg + (long long)src[e] + 1, 1ull);
}

// Place dst[e] in row src[e]; cursor starts as indptr[:-1].  The order
// inside a row depends on timing, the components do not.
template <typename J>
__global__ void meshccl_graph_scatter(const J* __restrict__ src, const J* __restrict__ dst,
                                      long long m, unsigned long long* cursor,
                                      J* __restrict__ indices) {
    using namespace meshccl::graph;
    for (long long e = thread_id(); e < m; e += thread_count())
        indices[atomicAdd(cursor + (long long)src[e], 1ull)] = dst[e];
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Every instantiation meshccl/_gpu/graph.py can ask for: (I, J) in
// {(int, int), (int, long long), (long long, long long)}.
#define MESHCCL_GRAPH_VERTEX(I, J, M, S)                                                       \
    template __global__ void meshccl_graph_vertex_thread<I, J, M, S>(                          \
        const long long*, const J*, I*, I, int, const I*, I*, unsigned long long*);            \
    template __global__ void meshccl_graph_vertex_warp<I, J, M, S>(                            \
        const long long*, const J*, I*, I, int, const I*, const I*, const unsigned long long*); \
    template __global__ void meshccl_graph_vertex_block<I, J, M, S>(                           \
        const long long*, const J*, I*, I, int, const I*, const I*, const unsigned long long*);
#define MESHCCL_GRAPH_IJ(I, J)                                                                  \
    template __global__ void meshccl_graph_ecl_init<I, J>(const long long*, const J*, I*, I);   \
    template __global__ void meshccl_graph_kout<I, J>(const long long*, const J*, I*, I, int); \
    MESHCCL_GRAPH_VERTEX(I, J, 0, false)                                                        \
    MESHCCL_GRAPH_VERTEX(I, J, 0, true)                                                         \
    MESHCCL_GRAPH_VERTEX(I, J, 1, false)                                                        \
    MESHCCL_GRAPH_VERTEX(I, J, 1, true)                                                         \
    template __global__ void meshccl_graph_edges<I, J, false, false>(                           \
        const long long*, const J*, const J*, I*, I, long long);                                \
    template __global__ void meshccl_graph_edges<I, J, false, true>(                            \
        const long long*, const J*, const J*, I*, I, long long);                                \
    template __global__ void meshccl_graph_edges<I, J, true, false>(                            \
        const long long*, const J*, const J*, I*, I, long long);                                \
    template __global__ void meshccl_graph_edges<I, J, true, true>(                             \
        const long long*, const J*, const J*, I*, I, long long);
MESHCCL_GRAPH_IJ(int, int)
MESHCCL_GRAPH_IJ(int, long long)
MESHCCL_GRAPH_IJ(long long, long long)
#define MESHCCL_GRAPH_I(I)                                                                      \
    template __global__ void meshccl_graph_compress<I>(I*, I);                                  \
    template __global__ void meshccl_graph_sample<I>(I*, I, I*, int, unsigned long long);       \
    template __global__ void meshccl_graph_mode<I>(const I*, int, I*);
MESHCCL_GRAPH_I(int)
MESHCCL_GRAPH_I(long long)
#define MESHCCL_GRAPH_J(J)                                                                      \
    template __global__ void meshccl_graph_degree<J>(const J*, long long, unsigned long long*); \
    template __global__ void meshccl_graph_scatter<J>(const J*, const J*, long long,            \
                                                      unsigned long long*, J*);
MESHCCL_GRAPH_J(int)
MESHCCL_GRAPH_J(long long)
#endif
