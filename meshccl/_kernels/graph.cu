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
//   remaining edges.  The sampling runs in one of two ways (the host picks
//   by average degree, meshccl/_gpu/graph.py):
//   - dense graphs: one kernel unites all k entries of every vertex, with
//     the guarded unite() of unionfind.cuh, since on a graph like a
//     Kronecker one thousands of threads hook the same roots at once;
//   - otherwise Afforest's rounds: entry 0 of every vertex, flatten, find
//     L; then entry 1 of every vertex *not already under L* (L's set only
//     grows, and on a symmetric graph an edge between L's set and a vertex
//     outside it is still taken by that vertex, in this round or in the
//     finish; without the symmetric promise nobody skips), flatten, find
//     L again.  The skip is used only when L already holds at least half
//     of the sampled vertices; otherwise entry 1 would be needed to glue
//     the giant component's pieces together and skipping it would leave
//     most vertices to the finish pass.
//   In the finish pass a vertex already under L may skip its remaining
//   edges only when the graph is stored symmetrically (the other end, if
//   outside L, will process the reverse edge).  Without that promise it still reads
//   its neighbours but calls unite() only for a neighbour whose parent is
//   not L: a parent equal to L proves the neighbour is in L's set already,
//   and any doubt (a parent re-pointed by path halving) just costs a unite.
//   The finish pass reuses the three ECL-CC compute kernels for balance.
//
// * Tiles of consecutive vertices ('tiles'), for graphs numbered with
//   locality: chains, cycles, meshes and road grids numbered along their
//   rows, where most entries (v, u) have u close to v.  There a union-find
//   in global memory is slow for a reason that has nothing to do with the
//   amount of work: with the larger root always hooked under the smaller,
//   unions started together along a path numbered in order build a chain
//   as long as the path (ECL-CC's first smaller neighbours of a mesh
//   numbered row by row are whole columns), and every find then walks it
//   with dependent loads at global-memory latency.  Here one block takes a
//   tile of 2^shift consecutive vertices (8192: 32 KiB of shared memory),
//   unites in shared memory every entry with both ends in the tile (a
//   walk step costs a shared load, not an L2 round trip), and writes each
//   vertex's parent as its tile root: the smallest vertex of its piece of
//   the tile, so the forest rule holds.  A second launch unites, in global
//   memory, the entries whose ends lie in two tiles; their finds start one
//   step from a tile root, and the trees above the tile roots are as long
//   as the chain of tiles (n / 8192 on a path), not of vertices.  The
//   cross unions use the guarded unite: on a mesh all the entries between
//   two tiles hook the same pair of tile roots.  Entries whose other end
//   lies in the tile are never read in global memory; on a graph without
//   locality every entry crosses and the method is a plain union-find
//   over the edges (the host's rule picks it only where a sample of
//   entries says at least half are tile-local).
//
// Index types: I is the vertex / parent type (int below 2**31 vertices,
// long long beyond), J the stored type of the neighbour arrays (int or long
// long, as the caller's arrays are), and row offsets are always long long
// (the host widens indptr, which is only n + 1 entries).  Every loop runs
// over 64-bit counters with a grid stride, so any number of edges fits a
// launch of bounded size.

#include "launch.cuh"
#include "unionfind.cuh"

#define MESHCCL_GRAPH_THREAD_MAX 16   // thread kernel: up to this many entries
#define MESHCCL_GRAPH_WARP_MAX 352    // warp kernel: up to this many; block kernel above
#define MESHCCL_GRAPH_SAMPLES 1024    // vertices looked up for the frequent root L

namespace meshccl {
namespace graph {

// What the vertex-centric kernels do with an edge.
enum Mode { ECL = 0, FINISH = 1 };

// Entry e of a row as a vertex u; false (skip the entry) when its value
// lies outside [0, n).  The vertex-centric methods run beside the check of
// CuPy CSR input (check_aside in meshccl/_gpu/graph.py) and read their rows
// through a clamped copy of indptr, so on invalid input they must stay in
// bounds on their own; the host raises the input's error afterwards.  On
// valid input the test always passes.
template <typename I, typename J>
__device__ __forceinline__ bool vertex_of(const J* __restrict__ indices, long long e, I n, I& u) {
    const J x = indices[e];
    u = (I)x;
    return (unsigned long long)(long long)x < (unsigned long long)(long long)n;
}

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

// The entries first, first + stride, ... of v's row range (a warp's or a
// block's share of a high-degree vertex of the worklist).
template <typename I, typename J, int M, bool Sym>
__device__ __forceinline__ void take_row(const long long* indptr, const J* indices, I* P, I n,
                                         I v, int skip, I L, long long first, long long stride) {
    long long begin, end;
    row_range(indptr, (long long)v, skip, begin, end);
    const bool vin = M == FINISH && in_big(P, v, L);
    for (long long e = begin + first; e < end; e += stride) {
        I u;
        if (vertex_of(indices, e, n, u)) take_edge<I, M, Sym>(P, v, u, vin, L);
    }
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

// The ends (a, b) of stored edge e of an edge-centric kernel: for CSR its
// row (row_of) and column, else src[e] and dst[e].  False for an edge to
// skip: a self-loop, or with Sym the copy with a < b (its reverse copy is
// taken).  The edge-list kernels pass no indptr and n = 0.
template <typename I, typename J, bool Csr, bool Sym>
__device__ __forceinline__ bool edge_ends(const long long* indptr, const J* src, const J* dst,
                                          I n, long long e, I& a, I& b) {
    a = Csr ? row_of(indptr, n, e) : (I)src[e];
    b = (I)dst[e];
    return a != b && !(Sym && a < b);
}

// Unite v with the first k entries of its list (k-out and HB sampling).
template <typename I, typename J>
__device__ __forceinline__ void unite_first(const long long* indptr, const J* indices, I* P, I n,
                                            I v, int k) {
    const long long begin = indptr[v];
    const long long stop = indptr[(long long)v + 1];
    const long long end = begin + k < stop ? begin + k : stop;
    for (long long e = begin; e < end; ++e) {
        I u;
        if (vertex_of(indices, e, n, u) && u != v) meshccl::unite(P, v, u);
    }
}

__device__ __forceinline__ unsigned long long mix64(unsigned long long x) {
    // splitmix64's finaliser: a cheap, well-spread hash for sampling
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

using meshccl::thread_count;  // (launch.cuh)
using meshccl::thread_id;

// The entries of a warp's 32 rows, lane l's row b .. e - 1 (as that lane
// holds them): a row of more than 32 entries is spread over the warp's
// lanes, one such row after another; a shorter one is walked by its own
// lane.  f(k, l) for entry k of lane l's row.  Called by all 32 lanes.
template <typename F>
__device__ __forceinline__ void warp_rows(long long b, long long e, int lane, F f) {
    const bool long_row = e - b > 32;
    unsigned todo = __ballot_sync(0xffffffffu, long_row);
    while (todo) {
        const int src = __ffs(todo) - 1;
        todo &= todo - 1;
        const long long hb = __shfl_sync(0xffffffffu, b, src);
        const long long he = __shfl_sync(0xffffffffu, e, src);
        for (long long k = hb + lane; k < he; k += 32) f(k, src);
    }
    if (!long_row)
        for (long long k = b; k < e; ++k) f(k, lane);
}

// f(k, v) for every entry k of every row v of a CSR (rows 0..n-1), over
// the whole grid: a row of more than 32 entries by its whole warp (the
// lanes stride over it), a shorter one by its own thread, so that a hub's
// row does not keep one thread busy long after the rest.  blockDim must be
// a multiple of 32 (every lane of a warp runs the same iterations).
template <typename F>
__device__ __forceinline__ void each_entry(const long long* __restrict__ indptr, long long n,
                                           F f) {
    const int lane = threadIdx.x & 31;
    for (long long base = thread_id() - lane; base < n; base += thread_count()) {
        const long long v = base + lane;
        long long b = 0, e = 0;
        if (v < n) {
            b = indptr[v];
            e = indptr[v + 1];
        }
        warp_rows(b, e, lane, [&](long long k, int l) { f(k, base + l); });
    }
}

}  // namespace graph
}  // namespace meshccl

// ---------------------------------------------------------------- ECL-CC

// P[v] = first neighbour smaller than v among the first 16 entries of v's
// list, else v.  The cap keeps one thread from scanning a hub's whole row
// (a hub numbered early has no smaller neighbour, and on a Barabasi-Albert
// graph the uncapped scan took half of ECL-CC's time; docs/graph.md:
// "kernel choices").
// It changes nothing below: the thread kernel, which skips the edge the
// init used, only takes rows of at most 16 entries, and the warp and block
// kernels take every edge of the longer rows.
namespace meshccl {
namespace graph {
template <typename I, typename J>
__device__ __forceinline__ I first_smaller(const J* __restrict__ indices, I n, long long v,
                                           long long begin, long long stop) {
    const long long end = stop - begin > MESHCCL_GRAPH_THREAD_MAX
                              ? begin + MESHCCL_GRAPH_THREAD_MAX : stop;
    for (long long e = begin; e < end; ++e) {
        I u;
        if (vertex_of(indices, e, n, u) && u < (I)v) return u;
    }
    return (I)v;
}
}  // namespace graph
}  // namespace meshccl

template <typename I, typename J>
__global__ void meshccl_graph_ecl_init(const long long* __restrict__ indptr,
                                       const J* __restrict__ indices, I* P, I n) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count())
        P[v] = first_smaller<I, J>(indices, n, v, indptr[v], indptr[v + 1]);
}

// The same start for HB sampling, which also lists the vertices left roots
// that have entries (list[0 .. count[0])), so that the hook step runs one
// thread per listed root.  The loop is block-uniform (a block's threads
// are consecutive vertices) and a block takes its list slots with one
// atomicAdd (one per warp means tens of thousands of atomics on one
// counter; docs/graph.md: "kernel choices").  Blocks of at most 1024.
template <typename I, typename J>
__global__ void meshccl_graph_hb_init(const long long* __restrict__ indptr,
                                      const J* __restrict__ indices, I* P, I n,
                                      I* __restrict__ list, unsigned long long* count) {
    using namespace meshccl::graph;
    __shared__ unsigned warp_base[32];
    __shared__ unsigned long long block_base;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (long long b = (long long)blockIdx.x * blockDim.x; b < (long long)n; b += thread_count()) {
        const long long v = b + threadIdx.x;
        bool listed = false;
        if (v < (long long)n) {
            const long long begin = indptr[v], stop = indptr[v + 1];
            const I p = first_smaller<I, J>(indices, n, v, begin, stop);
            P[v] = p;
            listed = p == (I)v && stop > begin;
        }
        const unsigned m = __ballot_sync(0xffffffffu, listed);
        if (lane == 0) warp_base[warp] = __popc(m);
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned total = 0;
            for (int w = 0; w < warps; ++w) {
                const unsigned c = warp_base[w];
                warp_base[w] = total;
                total += c;
            }
            block_base = total ? atomicAdd(count, (unsigned long long)total) : 0;
        }
        __syncthreads();
        if (listed)
            list[block_base + warp_base[warp] + __popc(m & ((1u << lane) - 1u))] = (I)v;
        __syncthreads();  // warp_base and block_base are reused by the next round
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
                I u;
                if (!vertex_of(indices, e, n, u)) continue;
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
    for (long long w = thread_id() >> 5; w < count; w += warps)
        take_row<I, J, M, Sym>(indptr, indices, P, n, wl[w], skip, L, lane, 32);
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
    for (long long b = blockIdx.x; b < count; b += gridDim.x)
        take_row<I, J, M, Sym>(indptr, indices, P, n, wl[(long long)n - 1 - b], skip, L,
                               threadIdx.x, blockDim.x);
}

// ---------------------------------------------------------------- tiles

namespace meshccl {
namespace graph {

// Entry k of row i of the tile starting at base (size vertices), united
// in the tile's shared forest S when its other end lies in the tile.
template <typename I, typename J>
__device__ __forceinline__ void tile_entry(const J* __restrict__ indices, long long k, I n,
                                           long long base, int size, int i, int* S) {
    I u;
    if (!vertex_of(indices, k, n, u)) return;
    const long long d = (long long)u - base;
    if (d >= 0 && d < size && d != i) meshccl::unite<true>(S, i, (int)d);
}

}  // namespace graph
}  // namespace meshccl

// One block per tile of 2^shift consecutive vertices (grid-stride over the
// tiles; dynamic shared memory of 4 << shift bytes): every entry with both
// ends in the tile is united in shared memory, then each vertex's parent
// becomes base + its tile root.  Writes every P[v], v < n (no other
// initialisation).  A row of more than 32 entries is spread over its
// warp's lanes, so a hub does not serialise one thread.  blockDim must be
// a multiple of 32.
template <typename I, typename J>
__global__ void meshccl_graph_tile_local(const long long* __restrict__ indptr,
                                         const J* __restrict__ indices, I* P, I n, int shift) {
    using namespace meshccl::graph;
    extern __shared__ int S[];
    const int lane = threadIdx.x & 31;
    const long long tile = 1ll << shift;
    for (long long base = (long long)blockIdx.x << shift; base < (long long)n;
         base += (long long)gridDim.x << shift) {
        const int size = (int)((long long)n - base < tile ? (long long)n - base : tile);
        for (int i = threadIdx.x; i < size; i += blockDim.x) S[i] = i;
        __syncthreads();
        for (int w = (int)threadIdx.x - lane; w < size; w += blockDim.x) {  // warp-uniform
            const int i = w + lane;
            long long b = 0, e = 0;
            if (i < size) {
                b = indptr[base + i];
                e = indptr[base + i + 1];
            }
            warp_rows(b, e, lane, [&](long long k, int l) {
                tile_entry<I, J>(indices, k, n, base, size, w + l, S);
            });
        }
        __syncthreads();
        for (int i = threadIdx.x; i < size; i += blockDim.x)
            P[base + i] = (I)(base + meshccl::find<true>(S, i));
        __syncthreads();  // S is reused by the block's next tile
    }
}

// Every entry (v, u) whose ends lie in two tiles, united in global memory
// (after meshccl_graph_tile_local; Sym: the graph is stored both ways,
// so each such edge is taken at its larger end only).
template <typename I, typename J, bool Sym>
__global__ void meshccl_graph_tile_cross(const long long* __restrict__ indptr,
                                         const J* __restrict__ indices, I* P, I n, int shift) {
    using namespace meshccl::graph;
    each_entry(indptr, (long long)n, [&](long long k, long long v) {
        I u;
        if (!vertex_of(indices, k, n, u)) return;
        if (((long long)u >> shift) == (v >> shift)) return;  // united in the tile
        if (Sym && (long long)u > v) return;
        meshccl::unite<false, true>(P, (I)v, u);
    });
}

// For method='auto' (meshccl/_gpu/graph.py, tile_probe): one block of
// MESHCCL_GRAPH_SAMPLES threads; hits[0] = how many of s = min(m, 1024)
// pseudo-random stored entries (v, u) have u in v's tile of 2^shift
// vertices (the share of 'tiles'' work done in shared memory).  Runs on
// the caller's arrays before they are validated: the row search stays in
// [0, n) and e < m whatever indptr holds, so every read is in bounds.
template <typename P, typename J>
__global__ void __launch_bounds__(MESHCCL_GRAPH_SAMPLES)
meshccl_graph_tile_probe(const P* __restrict__ indptr, const J* __restrict__ indices,
                         long long n, long long m, int shift, long long* hits,
                         unsigned long long seed) {
    using namespace meshccl::graph;
    const int t = threadIdx.x;
    bool hit = false;
    if (t < m) {
        const long long e = (long long)(mix64(seed + (unsigned long long)t) % (unsigned long long)m);
        long long lo = 0, hi = n;  // the row of e: indptr[lo] <= e < indptr[lo + 1]
        while (hi - lo > 1) {
            const long long mid = lo + (hi - lo) / 2;
            if ((long long)indptr[mid] <= e) lo = mid; else hi = mid;
        }
        hit = ((long long)indices[e] >> shift) == (lo >> shift);
    }
    const int count = __syncthreads_count(hit);
    if (t == 0) hits[0] = count;
}

// ------------------------------------------------------ k-out sampling

// Unite each vertex with entries first .. first + count - 1 of its list
// (Guard: the guarded unite of unionfind.cuh).  big[0] = L and big[1] =
// how many of the MESHCCL_GRAPH_SAMPLES picks had root L (zeros before L
// is known): when that is at least half, the vertices whose parent is
// already L skip their entries (see the essay at the top).
template <typename I, typename J, bool Guard>
__global__ void meshccl_graph_kout(const long long* __restrict__ indptr,
                                   const J* __restrict__ indices, I* P, I n, int first, int count,
                                   const I* __restrict__ big) {
    using namespace meshccl::graph;
    const I L = 2 * (long long)big[1] >= MESHCCL_GRAPH_SAMPLES ? big[0] : (I)-1;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        if (L >= 0 && __ldcg(P + v) == L) continue;
        const long long stop = indptr[v + 1];
        long long e = indptr[v] + first;
        const long long end = e + count < stop ? e + count : stop;
        for (; e < end; ++e) {
            I u;
            if (vertex_of(indices, e, n, u) && u != (I)v) meshccl::unite<false, Guard>(P, (I)v, u);
        }
    }
}

// Point every vertex straight at its root (no unions run meanwhile).
// Walk = false: find_final, which halves the path with a CAS per step
// (after kout's CAS unions, whose trees are shallow, and on grid-like
// graphs, whose long chains the halving shortens for every later walk).
// Walk = true: a read-only walk and one store, the vertex's own (after HB's
// 'link' hook step; its trees are deeper, and on a Kronecker graph every
// walk passes the few hot vertices at the top, where the halving CASes
// queue; docs/graph.md: "kernel choices").
template <typename I, bool Walk>
__global__ void meshccl_graph_compress(I* P, I n) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        const I r = Walk ? meshccl::find_naive(P, (I)v) : meshccl::find_final(P, (I)v);
        if (P[v] != r) P[v] = r;
    }
}

namespace meshccl {
namespace graph {

// One block of MESHCCL_GRAPH_SAMPLES threads, each holding one value in
// value[t] (t < count; the others are ignored): big[0] = the value that
// occurs most often (the smallest such value on a tie), and big[1] = how
// often it occurs.  The values are sorted in shared memory (bitonic, 55
// steps for 1024); the last element of each run of equal values finds the
// run's first element by binary search, which gives the run's length, and
// a tree reduction keeps the longest run (rather than counting each value
// against all 1024).
template <typename I>
__device__ __forceinline__ void block_mode(I* value, int* freq, int count, I* big) {
    constexpr int S = MESHCCL_GRAPH_SAMPLES;  // a power of two
    // I is a signed index type; unused slots hold its largest value and sort last
    constexpr I pad = (I)((1ull << (8 * sizeof(I) - 1)) - 1);
    const int t = threadIdx.x;
    if (t >= count) value[t] = pad;
    __syncthreads();
    for (int size = 2; size <= S; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            const int o = t ^ stride;
            if (o > t) {
                const I a = value[t], b = value[o];
                if ((a > b) == ((t & size) == 0)) {  // ascending where bit `size` of t is 0
                    value[t] = b;
                    value[o] = a;
                }
            }
            __syncthreads();
        }
    }
    int c = 0;
    if (t < count && (t + 1 == count || value[t + 1] != value[t])) {
        int lo = 0, hi = t;  // the first index whose value is value[t]
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (value[mid] < value[t]) lo = mid + 1; else hi = mid;
        }
        c = t - lo + 1;
    }
    freq[t] = c;
    __syncthreads();
    // tree reduction to the (largest count, smallest value) pair
    for (int half = S / 2; half > 0; half >>= 1) {
        if (t < half) {
            const int o = t + half;
            if (freq[o] > freq[t] || (freq[o] == freq[t] && freq[o] > 0 && value[o] < value[t])) {
                freq[t] = freq[o];
                value[t] = value[o];
            }
        }
        __syncthreads();
    }
    if (t == 0) {
        big[0] = value[0];
        big[1] = (I)freq[0];
    }
}

}  // namespace graph
}  // namespace meshccl

// One block of MESHCCL_GRAPH_SAMPLES threads: big = the most frequent value
// of samples[0..count) and its count (block_mode).
template <typename I>
__global__ void __launch_bounds__(MESHCCL_GRAPH_SAMPLES)
meshccl_graph_mode(const I* __restrict__ samples, int count, I* __restrict__ big) {
    __shared__ I value[MESHCCL_GRAPH_SAMPLES];
    __shared__ int freq[MESHCCL_GRAPH_SAMPLES];
    if ((int)threadIdx.x < count) value[threadIdx.x] = samples[threadIdx.x];
    meshccl::graph::block_mode(value, freq, count, big);
}

// The 1024 picks of the frequent root and their mode in one launch: thread t
// (t < count) takes the root of the pseudo-random vertex
// mix64(seed + t) % n, and big gets the most frequent of those roots.
template <typename I>
__global__ void __launch_bounds__(MESHCCL_GRAPH_SAMPLES)
meshccl_graph_sample_mode(I* P, I n, int count, unsigned long long seed, I* __restrict__ big) {
    using namespace meshccl::graph;
    __shared__ I value[MESHCCL_GRAPH_SAMPLES];
    __shared__ int freq[MESHCCL_GRAPH_SAMPLES];
    const int t = threadIdx.x;
    if (t < count)
        value[t] = meshccl::find(P, (I)(mix64(seed + (unsigned long long)t) % (unsigned long long)n));
    block_mode(value, freq, count, big);
}

// ------------------------------------------------ validation of CuPy input

// meshccl/_gpu/graph.py's check(): the facts meshccl/graph/_input.py validates CuPy
// input with, in one pass over the caller's arrays and one transfer.
// meshccl_graph_check: each block writes part[3 b .. 3 b + 2] = (smallest
// and largest value of a[0, m) and, unless b is null, of b[0, m); 1 if
// indptr[k + 1] < indptr[k] for some k + 1 < nptr, else 0).  Values are
// compared in their own type (no subtraction, so nothing overflows) and
// only the block's results are widened to long long, unsigned values above
// LLONG_MAX clamped to it (such a value is an error anyway, and the host
// recomputes the exact one for its message).  A block that saw no value
// writes (LLONG_MAX, LLONG_MIN).  Each thread issues four loads per array
// before it uses any, so enough bytes are in flight to stream the arrays
// at copy bandwidth.  meshccl_graph_check_done (one block of 1024) folds
// the parts into facts[0..4] = (indptr[0], indptr[nptr - 1] (0 and 0 when
// nptr = 0, clamped as above), -1 if any block saw a decrease else 0,
// smallest value, largest value); facts[5] is left to the probes of 'auto'.
namespace meshccl {
namespace graph {

#define MESHCCL_GRAPH_LL_MAX 0x7fffffffffffffffLL
#define MESHCCL_GRAPH_LL_MIN (-MESHCCL_GRAPH_LL_MAX - 1)

// The range of T (int, long long, unsigned int, unsigned long long).
template <typename T>
struct Limits {
    static constexpr bool is_unsigned = (T)-1 > (T)0;
    static constexpr T max = is_unsigned ? (T)~0ull : (T)(~0ull >> (65 - 8 * sizeof(T)));
    static constexpr T min = is_unsigned ? (T)0 : (T)(-max - 1);
};

// x as a long long, an unsigned value above LLONG_MAX clamped to LLONG_MAX.
template <typename T>
__device__ __forceinline__ long long clamped(T x) {
    return Limits<T>::is_unsigned && (unsigned long long)x > (unsigned long long)MESHCCL_GRAPH_LL_MAX
               ? MESHCCL_GRAPH_LL_MAX : (long long)x;
}

// lo, hi = min, max over the block's threads' lo, hi, in thread 0 (a
// multiple of 32 threads; call it once per kernel: its shared slots are
// not fenced for reuse).
template <typename T>
__device__ __forceinline__ void block_min_max(T& lo, T& hi) {
    __shared__ T slo[32], shi[32];
    for (int o = 16; o > 0; o >>= 1) {
        const T l = __shfl_xor_sync(0xffffffffu, lo, o), h = __shfl_xor_sync(0xffffffffu, hi, o);
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        slo[warp] = lo;
        shi[warp] = hi;
    }
    __syncthreads();
    if (warp == 0) {
        const int w = lane < (int)(blockDim.x >> 5) ? lane : 0;  // lane 0's again: no change
        lo = slo[w];
        hi = shi[w];
        for (int o = 16; o > 0; o >>= 1) {
            const T l = __shfl_xor_sync(0xffffffffu, lo, o), h = __shfl_xor_sync(0xffffffffu, hi, o);
            lo = l < lo ? l : lo;
            hi = h > hi ? h : hi;
        }
    }
}

// lo, hi updated with x[0 .. k).
template <typename J, int K>
__device__ __forceinline__ void fold_min_max(const J (&x)[K], J& lo, J& hi) {
#pragma unroll
    for (int u = 0; u < K; ++u) {
        lo = x[u] < lo ? x[u] : lo;
        hi = x[u] > hi ? x[u] : hi;
    }
}

// lo, hi updated with this thread's share of a[0, m) (and b[0, m) if Both):
// grid stride, four strides per step with every load issued first.  Where
// the arrays start on 16 bytes (CuPy's allocations do; a view may not),
// each load takes 16 bytes (4 or 2 values), so that the check keeps
// enough bytes in flight with the few blocks per multiprocessor it gets
// when it runs beside the method (meshccl/_gpu/graph.py, check_aside).
// The values past the last whole 16 bytes, or all of them when an array is
// not aligned, go one value per load.
template <typename J, bool Both>
__device__ __forceinline__ void thread_min_max(const J* __restrict__ a, const J* __restrict__ b,
                                               long long m, J& lo, J& hi) {
    constexpr int V = 16 / sizeof(J);  // values per 16-byte load
    const long long s = thread_count();
    long long e = 0;  // a[0, e) is done
    if (((unsigned long long)a & 15) == 0 && (!Both || ((unsigned long long)b & 15) == 0)) {
        const uint4* __restrict__ av = reinterpret_cast<const uint4*>(a);
        const uint4* __restrict__ bv = reinterpret_cast<const uint4*>(b);
        const long long chunks = m / V;
        long long c = thread_id();
        for (; c + 3 * s < chunks; c += 4 * s) {
            uint4 x[Both ? 8 : 4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                x[u] = av[c + u * s];
                if (Both) x[4 + u] = bv[c + u * s];
            }
#pragma unroll
            for (int u = 0; u < (Both ? 8 : 4); ++u) {
                J v[V];
                memcpy(v, &x[u], 16);
                fold_min_max(v, lo, hi);
            }
        }
        for (; c < chunks; c += s) {
            J v[V];
            uint4 x = av[c];
            memcpy(v, &x, 16);
            fold_min_max(v, lo, hi);
            if (Both) {
                x = bv[c];
                memcpy(v, &x, 16);
                fold_min_max(v, lo, hi);
            }
        }
        e = chunks * V;
    }
    for (e += thread_id(); e + 3 * s < m; e += 4 * s) {
        J x[Both ? 8 : 4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            x[u] = a[e + u * s];
            if (Both) x[4 + u] = b[e + u * s];
        }
        fold_min_max(x, lo, hi);
    }
    for (; e < m; e += s) {
        const J v[2] = {a[e], Both ? b[e] : a[e]};
        fold_min_max(v, lo, hi);
    }
}

}  // namespace graph
}  // namespace meshccl

template <typename P, typename J>
__global__ void meshccl_graph_check(const P* __restrict__ indptr, long long nptr,
                                    const J* __restrict__ a, const J* __restrict__ b, long long m,
                                    long long* part) {
    using namespace meshccl::graph;
    const long long s = thread_count();
    bool dec = false;
    long long k = thread_id();
    for (; k + 3 * s + 1 < nptr; k += 4 * s) {
        P x[4], y[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            x[u] = indptr[k + u * s];
            y[u] = indptr[k + u * s + 1];
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) dec |= y[u] < x[u];
    }
    for (; k + 1 < nptr; k += s) dec |= indptr[k + 1] < indptr[k];
    J lo = Limits<J>::max, hi = Limits<J>::min;
    if (b != nullptr)
        thread_min_max<J, true>(a, b, m, lo, hi);
    else
        thread_min_max<J, false>(a, nullptr, m, lo, hi);
    block_min_max(lo, hi);
    const int any = __syncthreads_or(dec);
    if (threadIdx.x == 0) {
        const bool seen = (long long)blockIdx.x * blockDim.x < m;  // thread t starts at t
        long long* out = part + 3 * (long long)blockIdx.x;
        out[0] = seen ? clamped(lo) : MESHCCL_GRAPH_LL_MAX;
        out[1] = seen ? clamped(hi) : MESHCCL_GRAPH_LL_MIN;
        out[2] = any ? 1 : 0;
    }
}

template <typename P>
__global__ void __launch_bounds__(1024)
meshccl_graph_check_done(const long long* __restrict__ part, int blocks,
                         const P* __restrict__ indptr, long long nptr, long long* facts) {
    using namespace meshccl::graph;
    long long lo = MESHCCL_GRAPH_LL_MAX, hi = MESHCCL_GRAPH_LL_MIN;
    bool dec = false;
    for (int i = threadIdx.x; i < blocks; i += blockDim.x) {
        const long long l = part[3 * (long long)i], h = part[3 * (long long)i + 1];
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
        dec |= part[3 * (long long)i + 2] != 0;
    }
    block_min_max(lo, hi);
    const int any = __syncthreads_or(dec);
    if (threadIdx.x == 0) {
        facts[0] = nptr ? clamped(indptr[0]) : 0;
        facts[1] = nptr ? clamped(indptr[nptr - 1]) : 0;
        facts[2] = any ? -1 : 0;
        facts[3] = lo;
        facts[4] = hi;
    }
}

// Validation without waiting (meshccl/graph/_dispatch.py, for 'ecl', 'kout' and 'hb'
// on CSR input): out[k] = indptr[k] as a long long, clamped to [0, m].  The
// check runs beside the method on another stream (check_aside in
// meshccl/_gpu/graph.py), and the method reads rows only through out: on
// invalid input its rows stay inside indices[0, m) (a decreasing pair is an
// empty row), vertex_of() skips values outside [0, n), so the parent array
// stays in range and nothing faults; the host reads the facts with the
// component count at the end, one transfer, and raises then.  It stands in
// for the widening copy of indptr those methods made anyway.
template <typename P>
__global__ void meshccl_graph_clamp_indptr(const P* __restrict__ indptr, long long nptr,
                                           long long m, long long* __restrict__ out) {
    using namespace meshccl::graph;
    for (long long k = thread_id(); k < nptr; k += thread_count()) {
        const long long x = clamped(indptr[k]);
        out[k] = x < 0 ? 0 : x > m ? m : x;
    }
}

// For method='auto' on an edge list (meshccl/_gpu/graph.py, chain_probe_edges):
// one block of MESHCCL_GRAPH_SAMPLES threads; hits[0] = how many of
// min(m, 1024) hashed edges e (hashed: evenly spaced ones alias with a
// grid's rows) have |src[e] - dst[e]| = 1 (a path numbered in order has
// only such edges).  Reads only src[0..m) and dst[0..m), so it may run
// before validation.
template <typename J>
__global__ void __launch_bounds__(MESHCCL_GRAPH_SAMPLES)
meshccl_graph_chain_probe_edges(const J* __restrict__ src, const J* __restrict__ dst,
                                long long m, long long* hits, unsigned long long seed) {
    using namespace meshccl::graph;
    const int t = threadIdx.x;
    bool hit = false;
    if (t < m) {
        const long long e = (long long)(mix64(seed + (unsigned long long)t) % (unsigned long long)m);
        const long long d = (long long)dst[e] - (long long)src[e];
        hit = d == 1 || d == -1;
    }
    const int count = __syncthreads_count(hit);
    if (t == 0) hits[0] = count;
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

// The transpose of a CSR: v goes to row indices[e] of the transpose for
// every entry e of row v; cursor starts as the transpose's indptr[:-1]
// (meshccl_graph_degree over indices gives its counts).  The rows are read
// by each_entry, so no row array is built.  The order inside a row of the
// transpose depends on timing.
template <typename J>
__global__ void meshccl_graph_scatter_rows(const long long* __restrict__ indptr,
                                           const J* __restrict__ indices, long long n,
                                           unsigned long long* cursor, J* __restrict__ out) {
    meshccl::graph::each_entry(indptr, n, [&](long long k, long long v) {
        out[atomicAdd(cursor + (long long)indices[k], 1ull)] = (J)v;
    });
}

// ------------------------------------ the GConn union rules, edge-centric

// One thread per stored edge e unites its ends (edge_ends: for CSR the
// thread finds its edge's row by binary search, so no row array is built;
// with Sym only one copy of each edge is taken) with union rule R and
// compression C of unionfind.cuh (H: Union-Hooks' array, else unused).
// 'unionfind' is R = UNION_ASYNC, C = COMPRESS_HALVING: the core's unite().
template <typename I, typename J, bool Csr, bool Sym, int R, int C>
__global__ void meshccl_graph_rule(const long long* __restrict__ indptr,
                                   const J* __restrict__ src, const J* __restrict__ dst,
                                   I* P, I* H, I n, long long m) {
    using namespace meshccl::graph;
    I a, b;
    for (long long e = thread_id(); e < m; e += thread_count())
        if (edge_ends<I, J, Csr, Sym>(indptr, src, dst, n, e, a, b))
            meshccl::unite_by<R, C>(P, H, a, b);
}

// JTB leaves each component's root at a random member.  Three passes turn
// the forest into pointers at the smallest member: R[v] = root of v (P
// untouched); P[root] = min over its members (atomicMin; a root starts at
// itself); P[v] = P[R[v]] for the other vertices (roots are not written).
template <typename I>
__global__ void meshccl_graph_jtb_roots(const I* P, I* R, I n) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count())
        R[v] = meshccl::find_naive(P, (I)v);
}

__device__ __forceinline__ int atomic_min(int* a, int v) { return atomicMin(a, v); }
__device__ __forceinline__ long long atomic_min(long long* a, long long v) {
    return atomicMin(a, v);
}

template <typename I>
__global__ void meshccl_graph_jtb_min(I* P, const I* R, I n) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count())
        if (R[v] != (I)v) atomic_min(P + R[v], (I)v);
}

template <typename I>
__global__ void meshccl_graph_jtb_assign(I* P, const I* R, I n) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count())
        if (R[v] != (I)v) P[v] = P[R[v]];
}

// ---------------------------------------------------- spanning forest

// Edge-centric union-find that records every edge whose unite() hooked:
// fe[k] = its index, k from atomicAdd(count).  Exactly n - components
// edges hook, and they form a forest (each hook joins two trees).
template <typename I, typename J, bool Csr>
__global__ void meshccl_graph_forest(const long long* __restrict__ indptr,
                                     const J* __restrict__ src, const J* __restrict__ dst,
                                     I* P, I n, long long m, long long* __restrict__ fe,
                                     unsigned long long* count) {
    using namespace meshccl::graph;
    I a, b;
    for (long long e = thread_id(); e < m; e += thread_count())
        if (edge_ends<I, J, Csr, false>(indptr, src, dst, n, e, a, b) && meshccl::unite(P, a, b))
            fe[atomicAdd(count, 1ull)] = e;
}

// ------------------------------------------- Hawick et al.'s graph kernels
//
// Label propagation: every vertex starts with its own index as label and
// labels only ever decrease (atomicMin), so at the fixed point every
// vertex holds the smallest index of its component -- a parent array in
// which every component is a star under its smallest vertex, ready for the
// relabel path.  Each pass sets its own change flag; the host reads the
// flags of several passes at once (meshccl/_gpu/graph.py), and a pass that
// changed nothing proves the fixed point, so the result is exact.

// rows[e] = the row of entry e (CSR -> the sources of an edge list), by
// each_entry.
template <typename J>
__global__ void meshccl_graph_rows(const long long* __restrict__ indptr, long long n,
                                   J* __restrict__ rows) {
    meshccl::graph::each_entry(indptr, n, [&](long long k, long long v) { rows[k] = (J)v; });
}

// Kernel 1 (edge-centric): every edge lowers the larger label of its two
// ends to the smaller.  Sym: the reverse copy (src < dst) is skipped.
template <typename I, typename J, bool Sym>
__global__ void meshccl_graph_edge_lp(const J* __restrict__ src, const J* __restrict__ dst,
                                      I* P, long long m, int* flag) {
    using namespace meshccl::graph;
    I a, b;
    for (long long e = thread_id(); e < m; e += thread_count()) {
        if (!edge_ends<I, J, false, Sym>(nullptr, src, dst, (I)0, e, a, b)) continue;
        const I la = __ldcg(P + a), lb = __ldcg(P + b);
        if (la < lb) {
            if (atomic_min(P + b, la) > la) *flag = 1;
        } else if (lb < la) {
            if (atomic_min(P + a, lb) > lb) *flag = 1;
        }
    }
}

// Kernel 2 (vertex-centric, over a symmetric CSR): an active vertex
// compares its label with each neighbour's and lowers the larger one; a
// vertex whose label dropped is active in the next pass.  `active` is read
// and cleared (only v's thread touches active[v]); `next` is the other
// buffer.  The host swaps them every pass.
template <typename I, typename J>
__global__ void meshccl_graph_vertex_lp(const long long* __restrict__ indptr,
                                        const J* __restrict__ indices, I* P, I n,
                                        unsigned char* active, unsigned char* next, int* flag) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        if (!active[v]) continue;
        active[v] = 0;
        I lv = __ldcg(P + v);
        for (long long e = indptr[v], end = indptr[v + 1]; e < end; ++e) {
            const I u = (I)indices[e];
            const I lu = __ldcg(P + u);
            if (lv < lu) {
                if (atomic_min(P + u, lv) > lv) { next[u] = 1; *flag = 1; }
            } else if (lu < lv) {
                if (atomic_min(P + v, lu) > lu) { next[v] = 1; *flag = 1; }
                lv = lu;
            }
        }
    }
}

// Breadth-first search, level by level, over CSR.  Unvisited vertices hold
// P = -1; the frontier `in` (in_count[0] entries) claims each unvisited
// neighbour with a CAS to label[0] and appends it to `out`; minv[0] keeps
// the smallest vertex claimed (BFS sampling needs it).
template <typename I, typename J>
__global__ void meshccl_graph_bfs_expand(const long long* __restrict__ indptr,
                                         const J* __restrict__ indices, I* P,
                                         const I* __restrict__ in,
                                         const unsigned long long* in_count, I* __restrict__ out,
                                         unsigned long long* out_count, const I* label, I* minv) {
    using namespace meshccl::graph;
    const long long count = (long long)in_count[0];
    const I lab = label[0];
    for (long long i = thread_id(); i < count; i += thread_count()) {
        const I v = in[i];
        for (long long e = indptr[v], end = indptr[v + 1]; e < end; ++e) {
            const I u = (I)indices[e];
            if (__ldcg(P + u) == (I)-1 && meshccl::cas(P + u, (I)-1, lab) == (I)-1) {
                out[atomicAdd(out_count, 1ull)] = u;
                atomic_min(minv, u);
            }
        }
    }
}

// Kernel 3's host loop, on the device (one block): after a level, the
// consumed frontier's count is reset (its buffer is the next `out`); if the
// new frontier is empty, the smallest unvisited vertex at or after
// cursor[0] starts the next search (P = itself, label = itself), so every
// component is labelled by its smallest vertex.  flag: work remains.
template <typename I>
__global__ void meshccl_graph_bfs_next(I* P, I n, unsigned long long* in_count, I* out,
                                       unsigned long long* out_count, I* label,
                                       long long* cursor, int* flag) {
    __shared__ unsigned long long found;
    __shared__ int more;
    const int t = threadIdx.x;
    if (t == 0) {
        in_count[0] = 0;
        more = out_count[0] > 0;
        if (more) *flag = 1;
        found = ~0ull;
    }
    __syncthreads();
    if (more) return;
    for (long long c = cursor[0]; c < (long long)n; c += blockDim.x) {
        const long long i = c + t;
        if (i < (long long)n && P[i] == (I)-1) atomicMin(&found, (unsigned long long)i);
        __syncthreads();
        const bool done = found != ~0ull;
        __syncthreads();
        if (done) break;
    }
    if (t == 0) {
        if (found != ~0ull) {
            const I s = (I)found;
            P[s] = s;
            out[0] = s;
            out_count[0] = 1;
            label[0] = s;
            cursor[0] = (long long)found + 1;
            *flag = 1;
        } else {
            cursor[0] = (long long)n;
        }
    }
}

// ------------------------------------------------ Shiloach-Vishkin
//
// Dehne and Yogaratnam's GPU formulation: grid-stride ("striding") loops
// over edges and vertices, hooking and pointer jumping in separate kernels
// (a barrier between them).  Hook: across an edge whose ends have different
// parents, a parent that is a root is hooked under the smaller parent
// (plain concurrent stores: one writer wins, a lost hook leaves its flag
// set and is retried).  Jump: P[v] = P[P[v]].  One pass is a hook and a
// jump; a pass that changes nothing leaves stars with no edge between them.

template <typename I, typename J, bool Sym>
__global__ void meshccl_graph_sv_hook(const J* __restrict__ src, const J* __restrict__ dst,
                                      I* P, long long m, int* flag) {
    using namespace meshccl::graph;
    I a, b;
    for (long long e = thread_id(); e < m; e += thread_count()) {
        if (!edge_ends<I, J, false, Sym>(nullptr, src, dst, (I)0, e, a, b)) continue;
        const I pa = __ldcg(P + a), pb = __ldcg(P + b);
        if (pa == pb) continue;
        const I hi = pa > pb ? pa : pb, lo = pa > pb ? pb : pa;
        if (__ldcg(P + hi) == hi) {
            P[hi] = lo;
            *flag = 1;
        }
    }
}

template <typename I>
__global__ void meshccl_graph_sv_jump(I* P, I n, int* flag) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        const I p = __ldcg(P + v);
        const I g = __ldcg(P + p);
        if (g != p) {
            P[v] = g;
            *flag = 1;
        }
    }
}

// ------------------------------------------------ GConn's other samplers

// Hook-based sampling, step 2: every vertex still a root after the start
// (meshccl_graph_ecl_init or meshccl_graph_hb_init) joins its first k
// entries.  Two ways (the host picks by the caller's symmetric promise,
// meshccl/_gpu/graph.py):
//
// * meshccl_graph_hb_hook, GConn's: one pass of CAS unions.  On a Kronecker
//   graph it convoys.  After the start a root's first entry lies in a tree
//   rooted at or below the root, so that union hooks the root's own slot;
//   but its second entry often lies in another tree, and the union then
//   hooks the larger of the two tree roots under the smaller.  A few hot
//   tree roots receive thousands of such hooks (scale 21: 14 328 onto one),
//   and every failed CAS re-finds and tries again on the winner, whose own
//   slot the other losers then fight over (few active threads per warp,
//   stalled on memory).
//
// * meshccl_graph_hb_link (graphs promised symmetric), over the roots with
//   entries that meshccl_graph_hb_init listed: the same unions made by link_min below,
//   with atomicMin instead of CAS.  A hot root's claimants each lower it
//   once; every parent one of them replaces is handed back to that thread
//   alone, which joins it to its own smaller vertex, on addresses nobody
//   else fights over (about five times faster than the CAS pass on a
//   Kronecker graph; docs/graph.md: "kernel choices").
//
// Forms tried and dropped: a root storing only its own parent; atomicMin
// claims then own stores (both left the giant component in pieces);
// atomicMin claims then a CAS repair pass (as fast as link, in two
// passes); link_min with path halving (slower).
template <typename I, typename J>
__global__ void meshccl_graph_hb_hook(const long long* __restrict__ indptr,
                                      const J* __restrict__ indices, I* P, I n, int k) {
    using namespace meshccl::graph;
    for (long long v = thread_id(); v < (long long)n; v += thread_count())
        if (__ldcg(P + v) == (I)v) unite_first(indptr, indices, P, n, (I)v, k);
}

namespace meshccl {
namespace graph {
// Join the sets of a and b with atomicMin only (the 'link' hook step).
// Walk up the larger of the two (Rem's order); at a root x, lower P[x] to
// the smaller one, b.  atomicMin returns what P[x] held: x itself (hooked),
// or the parent another thread gave x meanwhile, old.  If old > b, the
// atomicMin replaced old with b, so old must still be joined to b; if
// old < b, nothing was written and b must be joined to old.  Either way the
// walk goes on with the pair (old, b), whose larger member is below x, so
// it ends.  Every replaced parent is handed to exactly one thread, which
// is what keeps many hooks on one hot root from convoying as failed CASes
// do.  A parent only ever moves to a smaller vertex of the same component.
template <typename I>
__device__ __forceinline__ void link_min(I* P, I a, I b) {
    while (a != b) {
        if (a < b) { const I t = a; a = b; b = t; }  // a is the larger
        const I p = __ldcg(P + a);
        if (p != a) {
            a = p;  // not a root: walk up
            continue;
        }
        const I old = atomic_min(P + a, b);
        if (old == a) return;
        a = old;
    }
}
}  // namespace graph
}  // namespace meshccl

// The 'link' hook step: every listed root joins its first k entries with
// link_min.
template <typename I, typename J>
__global__ void meshccl_graph_hb_link(const long long* __restrict__ indptr,
                                      const J* __restrict__ indices, I* P, I n, int k,
                                      const I* __restrict__ list,
                                      const unsigned long long* __restrict__ count) {
    using namespace meshccl::graph;
    const long long roots = (long long)count[0];
    for (long long i = thread_id(); i < roots; i += thread_count()) {
        const I v = list[i];
        const long long begin = indptr[v], stop = indptr[(long long)v + 1];
        const long long end = stop - begin > k ? begin + k : stop;
        for (long long e = begin; e < end; ++e) {
            I u;
            if (vertex_of(indices, e, n, u)) link_min(P, v, u);
        }
    }
}

// BFS sampling: one block of MESHCCL_GRAPH_SAMPLES threads; out[0] = the
// vertex of largest degree among pseudo-random picks (smallest on a tie).
template <typename I>
__global__ void __launch_bounds__(MESHCCL_GRAPH_SAMPLES)
meshccl_graph_pick_source(const long long* __restrict__ indptr, I n, I* out,
                          unsigned long long seed) {
    using namespace meshccl::graph;
    __shared__ long long deg[MESHCCL_GRAPH_SAMPLES];
    __shared__ I vtx[MESHCCL_GRAPH_SAMPLES];
    const int t = threadIdx.x;
    const I x = (I)(mix64(seed + (unsigned long long)t) % (unsigned long long)n);
    vtx[t] = x;
    deg[t] = indptr[(long long)x + 1] - indptr[x];
    __syncthreads();
    for (int half = MESHCCL_GRAPH_SAMPLES / 2; half > 0; half >>= 1) {
        if (t < half) {
            const int o = t + half;
            if (deg[o] > deg[t] || (deg[o] == deg[t] && vtx[o] < vtx[t])) {
                deg[t] = deg[o];
                vtx[t] = vtx[o];
            }
        }
        __syncthreads();
    }
    if (t == 0) out[0] = vtx[0];
}

// BFS sampling: start the search at source[0] (one thread).
template <typename I>
__global__ void meshccl_graph_bfs_seed(I* P, const I* source, I* frontier,
                                       unsigned long long* count, I* minv) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        const I s = source[0];
        P[s] = s;
        frontier[0] = s;
        count[0] = 1;
        minv[0] = s;
    }
}

// BFS sampling, after the levels: the vertices reached form one connected
// set whose smallest member is minv[0]; they point at it, the others at
// themselves.  minv[0] is then the frequent root L of the finish pass.
template <typename I>
__global__ void meshccl_graph_bfs_sample_done(I* P, I n, const I* minv) {
    using namespace meshccl::graph;
    const I L = minv[0];
    for (long long v = thread_id(); v < (long long)n; v += thread_count())
        P[v] = P[v] == (I)-1 ? (I)v : L;
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
    template __global__ void meshccl_graph_kout<I, J, false>(const long long*, const J*, I*, I, \
                                                             int, int, const I*);              \
    template __global__ void meshccl_graph_kout<I, J, true>(const long long*, const J*, I*, I,  \
                                                            int, int, const I*);               \
    template __global__ void meshccl_graph_tile_local<I, J>(const long long*, const J*, I*, I, \
                                                            int);                              \
    template __global__ void meshccl_graph_tile_cross<I, J, false>(const long long*, const J*, \
                                                                   I*, I, int);                \
    template __global__ void meshccl_graph_tile_cross<I, J, true>(const long long*, const J*,  \
                                                                  I*, I, int);                 \
    MESHCCL_GRAPH_VERTEX(I, J, 0, false)                                                        \
    MESHCCL_GRAPH_VERTEX(I, J, 0, true)                                                         \
    MESHCCL_GRAPH_VERTEX(I, J, 1, false)                                                        \
    MESHCCL_GRAPH_VERTEX(I, J, 1, true)
MESHCCL_GRAPH_IJ(int, int)
MESHCCL_GRAPH_IJ(int, long long)
MESHCCL_GRAPH_IJ(long long, long long)
#define MESHCCL_GRAPH_I(I)                                                                      \
    template __global__ void meshccl_graph_compress<I, false>(I*, I);                           \
    template __global__ void meshccl_graph_compress<I, true>(I*, I);                            \
    template __global__ void meshccl_graph_mode<I>(const I*, int, I*);                          \
    template __global__ void meshccl_graph_sample_mode<I>(I*, I, int, unsigned long long, I*);
MESHCCL_GRAPH_I(int)
MESHCCL_GRAPH_I(long long)
#define MESHCCL_GRAPH_J(J)                                                                      \
    template __global__ void meshccl_graph_degree<J>(const J*, long long, unsigned long long*); \
    template __global__ void meshccl_graph_scatter<J>(const J*, const J*, long long,            \
                                                      unsigned long long*, J*);                 \
    template __global__ void meshccl_graph_scatter_rows<J>(const long long*, const J*, long long, \
                                                           unsigned long long*, J*);
MESHCCL_GRAPH_J(int)
MESHCCL_GRAPH_J(long long)
#define MESHCCL_GRAPH_PROBE(P, J)                                                                \
    template __global__ void meshccl_graph_tile_probe<P, J>(const P*, const J*, long long,      \
                                                            long long, int, long long*,         \
                                                            unsigned long long);
MESHCCL_GRAPH_PROBE(int, int)
MESHCCL_GRAPH_PROBE(int, long long)
MESHCCL_GRAPH_PROBE(long long, int)
MESHCCL_GRAPH_PROBE(long long, long long)
template __global__ void meshccl_graph_chain_probe_edges<int>(const int*, const int*, long long,
                                                             long long*, unsigned long long);
template __global__ void meshccl_graph_chain_probe_edges<long long>(
    const long long*, const long long*, long long, long long*, unsigned long long);
#define MESHCCL_GRAPH_CHECK(P, J)                                                                \
    template __global__ void meshccl_graph_check<P, J>(const P*, long long, const J*, const J*, \
                                                       long long, long long*);
#define MESHCCL_GRAPH_CHECK_P(P)                                                                 \
    MESHCCL_GRAPH_CHECK(P, int) MESHCCL_GRAPH_CHECK(P, long long)                               \
    MESHCCL_GRAPH_CHECK(P, unsigned int) MESHCCL_GRAPH_CHECK(P, unsigned long long)             \
    template __global__ void meshccl_graph_check_done<P>(const long long*, int, const P*,       \
                                                         long long, long long*);
MESHCCL_GRAPH_CHECK_P(int)
MESHCCL_GRAPH_CHECK_P(long long)
MESHCCL_GRAPH_CHECK_P(unsigned int)
MESHCCL_GRAPH_CHECK_P(unsigned long long)
template __global__ void meshccl_graph_clamp_indptr<int>(const int*, long long, long long,
                                                         long long*);
template __global__ void meshccl_graph_clamp_indptr<long long>(const long long*, long long, long long,
                                                               long long*);
template __global__ void meshccl_graph_clamp_indptr<unsigned int>(const unsigned int*, long long,
                                                                  long long, long long*);
template __global__ void meshccl_graph_clamp_indptr<unsigned long long>(
    const unsigned long long*, long long, long long, long long*);
// The new kernels' instantiations.
#define MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, R, C)                                            \
    template __global__ void meshccl_graph_rule<I, J, CSR, SYM, R, C>(                          \
        const long long*, const J*, const J*, I*, I*, I, long long);
#define MESHCCL_GRAPH_RULE4(I, J, CSR, SYM, R)                                                 \
    MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, R, 0) MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, R, 1)       \
    MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, R, 2) MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, R, 3)
#define MESHCCL_GRAPH_RULES(I, J, CSR, SYM)                                                    \
    MESHCCL_GRAPH_RULE4(I, J, CSR, SYM, 0)                                                      \
    MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, 1, 0) MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, 1, 1)       \
    MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, 1, 2) MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, 1, 4)       \
    MESHCCL_GRAPH_RULE4(I, J, CSR, SYM, 2)                                                      \
    MESHCCL_GRAPH_RULE4(I, J, CSR, SYM, 3)                                                      \
    MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, 4, 0) MESHCCL_GRAPH_RULE_C(I, J, CSR, SYM, 4, 2)
#define MESHCCL_GRAPH_IJ2(I, J)                                                                 \
    MESHCCL_GRAPH_RULES(I, J, false, false) MESHCCL_GRAPH_RULES(I, J, false, true)              \
    MESHCCL_GRAPH_RULES(I, J, true, false) MESHCCL_GRAPH_RULES(I, J, true, true)                \
    template __global__ void meshccl_graph_forest<I, J, false>(                                 \
        const long long*, const J*, const J*, I*, I, long long, long long*, unsigned long long*); \
    template __global__ void meshccl_graph_forest<I, J, true>(                                  \
        const long long*, const J*, const J*, I*, I, long long, long long*, unsigned long long*); \
    template __global__ void meshccl_graph_edge_lp<I, J, false>(const J*, const J*, I*, long long, int*); \
    template __global__ void meshccl_graph_edge_lp<I, J, true>(const J*, const J*, I*, long long, int*); \
    template __global__ void meshccl_graph_sv_hook<I, J, false>(const J*, const J*, I*, long long, int*); \
    template __global__ void meshccl_graph_sv_hook<I, J, true>(const J*, const J*, I*, long long, int*); \
    template __global__ void meshccl_graph_vertex_lp<I, J>(const long long*, const J*, I*, I,  \
                                                           unsigned char*, unsigned char*, int*); \
    template __global__ void meshccl_graph_bfs_expand<I, J>(                                   \
        const long long*, const J*, I*, const I*, const unsigned long long*, I*,                \
        unsigned long long*, const I*, I*);                                                     \
    template __global__ void meshccl_graph_hb_hook<I, J>(const long long*, const J*, I*, I, int); \
    template __global__ void meshccl_graph_hb_init<I, J>(const long long*, const J*, I*, I, I*, \
                                                         unsigned long long*);                  \
    template __global__ void meshccl_graph_hb_link<I, J>(const long long*, const J*, I*, I, int, \
                                                         const I*, const unsigned long long*);
MESHCCL_GRAPH_IJ2(int, int)
MESHCCL_GRAPH_IJ2(int, long long)
MESHCCL_GRAPH_IJ2(long long, long long)
#define MESHCCL_GRAPH_I2(I)                                                                     \
    template __global__ void meshccl_graph_jtb_roots<I>(const I*, I*, I);                       \
    template __global__ void meshccl_graph_jtb_min<I>(I*, const I*, I);                         \
    template __global__ void meshccl_graph_jtb_assign<I>(I*, const I*, I);                      \
    template __global__ void meshccl_graph_bfs_next<I>(I*, I, unsigned long long*, I*,          \
                                                       unsigned long long*, I*, long long*, int*); \
    template __global__ void meshccl_graph_sv_jump<I>(I*, I, int*);                             \
    template __global__ void meshccl_graph_pick_source<I>(const long long*, I, I*, unsigned long long); \
    template __global__ void meshccl_graph_bfs_seed<I>(I*, const I*, I*, unsigned long long*, I*); \
    template __global__ void meshccl_graph_bfs_sample_done<I>(I*, I, const I*);
MESHCCL_GRAPH_I2(int)
MESHCCL_GRAPH_I2(long long)
template __global__ void meshccl_graph_rows<int>(const long long*, long long, int*);
template __global__ void meshccl_graph_rows<long long>(const long long*, long long, long long*);
#endif
