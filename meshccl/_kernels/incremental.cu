// incremental.cu -- incremental connectivity: batches of edge inserts and
// connectivity queries on a parent array that lives between batches
// (meshccl.graph.IncrementalConnectivity; Hong, Dhulipala and Shun, GConn,
// section 3.6).
//
// The structure is the union-find forest of unionfind.cuh, kept on the
// device from one batch to the next: P (parents), H (Union-Hooks' claims,
// -1 while unclaimed; only for that rule) and, when the spanning forest is
// kept, FS / FD.  A batch is a list of operations in COO form -- src[e],
// dst[e] and, for a mixed batch, kinds[e] (0: insert, 1: query).  One
// thread per operation:
//
// * an insert calls unite_by<R, C>() of unionfind.cuh, the union rule and
//   compression the structure was built with.  Previous batches are never
//   read again: the union-find rules are root-based, so the forest alone
//   holds everything the earlier edges said (GConn's Algorithm 3).  When
//   the union hooked a root h, the edge is stored in FS[h], FD[h]: each
//   element is hooked at most once, so the slots need no counter and no
//   atomic, and the non-roots name exactly the edges that joined two trees
//   -- a spanning forest, kept as the batches arrive.
// * a query calls same_set<R, C>(), which is linearisable against the
//   unions running beside it: every answer of a mixed batch agrees with
//   one order of the batch's operations.  Rem's rule (R = UNION_REM_CAS)
//   splices subtrees between sets before their union completes, so its
//   batches run as two launches: inserts, then queries (ConnectIt's rule
//   for it) -- also one such order.
//
// `mask` selects the kinds a launch takes (1: inserts, 2: queries, 3:
// both); without kinds every operation is of the one kind the mask names.
// out[e] (when given) receives the answer of a query and false for an
// insert.  A vertex outside [0, n) is skipped (an insert does nothing, a
// query answers false): the host validates unless the caller promised
// valid input, and even then no thread reads or writes out of bounds.
//
// The vertex count grows on the host (meshccl/_gpu/incremental.py): the
// arrays have a capacity beyond n whose slots already hold their initial
// values, so growing within it is a change of n alone.

#include "unionfind.cuh"

namespace meshccl {
namespace incremental {

template <typename I, typename J>
__device__ __forceinline__ bool vertex(J x, I n) {
    return (unsigned long long)(long long)x < (unsigned long long)(long long)n;
}

}  // namespace incremental
}  // namespace meshccl

// Edge loads of the insert kernel: V consecutive endpoints of one array in
// loads of up to 16 bytes (int4: four int32 or two int64), streamed past L1 and
// marked evict-first in L2 when S (the parent array, read at random, is
// what L2 should keep), else through the read-only path.
namespace meshccl {
namespace incremental {

template <typename J, int V> struct Lanes { using T = int4; };  // 16 bytes and more
template <> struct Lanes<int, 1> { using T = int; };
template <> struct Lanes<int, 2> { using T = int2; };
template <> struct Lanes<long long, 1> { using T = long long; };

template <typename J, int V, bool S>
__device__ __forceinline__ void load_lanes(const J* p, J (&out)[V]) {
    using T = typename Lanes<J, V>::T;
    constexpr int W = (int)(V * sizeof(J) / sizeof(T));  // loads of T
    union { T v[W]; J a[V]; } u;
#pragma unroll
    for (int w = 0; w < W; ++w) u.v[w] = S ? __ldcs((const T*)p + w) : __ldg((const T*)p + w);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = u.a[k];
}

// An edge's first parent read: through L2 only as every other read of P,
// or with L through L1 too, where hubs' parents stay -- a stale value is
// one P[v] held earlier, an element of v's set, which is all
// insert_from() and rem_cas_walk() ask of it (their later reads go to L2).
template <bool L, typename I>
__device__ __forceinline__ I first_parent(const I* P, I v) {
    return L ? __ldca(P + v) : __ldcg(P + v);
}

// The insert of edge (x, y), its two parents px, py already read.  Equal
// parents prove one set: nothing to do.  Rem's rule with K continues its
// walk from them (rem_cas_walk); the other rules unite the two parents
// (the same two sets, one load fewer on each side).  The hooked root, if
// any, records the edge.
template <typename I, typename J, int R, int C, bool K>
__device__ __forceinline__ void insert_from(I* P, I* H, I* FS, I* FD, J x, J y, I px, I py) {
    if (px == py) return;
    I h;
    if (R == UNION_REM_CAS) {
        h = K ? rem_cas_walk<C>(P, (I)x, (I)y, px, py) : unite_by<R, C>(P, H, (I)x, (I)y);
    } else {
        h = unite_by<R, C>(P, H, px, py);
    }
    if (FS != nullptr && h >= 0) {
        FS[h] = (I)x;
        FD[h] = (I)y;
    }
}

}  // namespace incremental
}  // namespace meshccl

// A batch of any kinds (connected(), process(); Rem's rule: one launch for
// its inserts, one for its queries).  With F every operation first reads
// the two parents: equal parents answer a query True and make an insert
// nothing to do, else the query's finds and the insert's union start from
// them (insert_from, as the insert kernel).  Without F, same_set() and
// unite_by() from the two vertices.
template <typename I, typename J, int R, int C, bool F>
__global__ void meshccl_incr_batch(const unsigned char* __restrict__ kinds,
                                   const J* __restrict__ src, const J* __restrict__ dst,
                                   long long m, int mask, I* P, I* H, I n,
                                   I* __restrict__ FS, I* __restrict__ FD,
                                   bool* __restrict__ out) {
    using namespace meshccl::incremental;
    const int only = mask == 2 ? 1 : 0;  // the kind of every operation without kinds
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < m; e += stride) {
        const int kind = kinds != nullptr ? (int)kinds[e] : only;
        if (kind > 1 || !((mask >> kind) & 1)) continue;  // (kinds other than 0, 1: skipped)
        const J x = src[e], y = dst[e];
        const bool valid = vertex(x, n) && vertex(y, n);
        if (kind != 0) {
            bool same = valid && x == y;
            if (valid && x != y) {
                if (F) {
                    const I px = __ldcg(P + x), py = __ldcg(P + y);
                    same = px == py || meshccl::same_set<R, C>(P, px, py);
                } else {
                    same = meshccl::same_set<R, C>(P, (I)x, (I)y);
                }
            }
            out[e] = same;
            continue;
        }
        if (out != nullptr) out[e] = false;
        if (!valid || x == y) continue;
        if (F) {
            insert_from<I, J, R, C, true>(P, H, FS, FD, x, y, __ldcg(P + x), __ldcg(P + y));
            continue;
        }
        const I h = meshccl::unite_by<R, C>(P, H, (I)x, (I)y);
        if (FS != nullptr && h >= 0) {
            FS[h] = (I)x;
            FD[h] = (I)y;
        }
    }
}

// A batch of inserts alone (insert(), from_graph()): each thread takes V
// consecutive edges per step of its grid-stride loop -- one vector load of
// their sources, one of their destinations, then the 2V parent reads all
// issued before any is used, so a thread keeps 2V random reads in flight
// instead of two.  The host passes V > 1 only when src and dst are aligned
// to the loads (V elements, at most 16 bytes); the last m mod V edges are
// taken one per thread.  Blocks of 256 threads: eight fit a multiprocessor
// at up to four edges a thread (32 registers), five at eight (no spills).
template <typename I, typename J, int R, int C, int V, bool S, bool K, bool L>
__global__ void __launch_bounds__(256, V > 4 ? 5 : 8)
    meshccl_incr_insert(const J* __restrict__ src, const J* __restrict__ dst, long long m, I* P,
                        I* H, I n, I* __restrict__ FS, I* __restrict__ FD) {
    using namespace meshccl::incremental;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long groups = m / V;
    for (long long g = t0; g < groups; g += stride) {
        J x[V], y[V];
        load_lanes<J, V, S>(src + g * V, x);
        load_lanes<J, V, S>(dst + g * V, y);
        I px[V], py[V];
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const bool ok = vertex(x[k], n) && vertex(y[k], n) && x[k] != y[k];
            px[k] = ok ? first_parent<L>(P, (I)x[k]) : (I)0;  // (an edge to skip: equal parents)
            py[k] = ok ? first_parent<L>(P, (I)y[k]) : (I)0;
        }
#pragma unroll
        for (int k = 0; k < V; ++k)
            insert_from<I, J, R, C, K>(P, H, FS, FD, x[k], y[k], px[k], py[k]);
    }
    const long long e = groups * V + t0;
    if (e < m) {
        const J x = src[e], y = dst[e];
        if (vertex(x, n) && vertex(y, n) && x != y)
            insert_from<I, J, R, C, K>(P, H, FS, FD, x, y, first_parent<L>(P, (I)x),
                                       first_parent<L>(P, (I)y));
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Every instantiation meshccl/_gpu/incremental.py can ask for: (I, J) in
// {(int, int), (int, long long), (long long, long long)}, and the (rule,
// compression) pairs of meshccl/graph/_methods.py.
#define MESHCCL_INCR(I, J, R, C)                                                                  \
    template __global__ void meshccl_incr_batch<I, J, R, C, true>(                                \
        const unsigned char*, const J*, const J*, long long, int, I*, I*, I, I*, I*, bool*);
#define MESHCCL_INCR4(I, J, R)                                                                    \
    MESHCCL_INCR(I, J, R, 0) MESHCCL_INCR(I, J, R, 1) MESHCCL_INCR(I, J, R, 2) MESHCCL_INCR(I, J, R, 3)
#define MESHCCL_INCR_IJ(I, J)                                                                     \
    MESHCCL_INCR4(I, J, 0)                                                                        \
    MESHCCL_INCR(I, J, 1, 0) MESHCCL_INCR(I, J, 1, 1) MESHCCL_INCR(I, J, 1, 2)                    \
    MESHCCL_INCR(I, J, 1, 4)                                                                      \
    MESHCCL_INCR4(I, J, 2)                                                                        \
    MESHCCL_INCR4(I, J, 3)                                                                        \
    MESHCCL_INCR(I, J, 4, 0) MESHCCL_INCR(I, J, 4, 2)
MESHCCL_INCR_IJ(int, int)
MESHCCL_INCR_IJ(int, long long)
MESHCCL_INCR_IJ(long long, long long)
#define MESHCCL_INCR_INSERT(I, J, V, R, C)                                                        \
    template __global__ void meshccl_incr_insert<I, J, R, C, V, true, true, false>(               \
        const J*, const J*, long long, I*, I*, I, I*, I*);
#define MESHCCL_INCR_INSERT_V(I, J, V)                                                            \
    MESHCCL_INCR_INSERT(I, J, V, 0, 1) MESHCCL_INCR_INSERT(I, J, V, 0, 2)                         \
    MESHCCL_INCR_INSERT(I, J, V, 1, 4) MESHCCL_INCR_INSERT(I, J, V, 1, 2)                         \
    MESHCCL_INCR_INSERT(I, J, V, 2, 1) MESHCCL_INCR_INSERT(I, J, V, 3, 2)                         \
    MESHCCL_INCR_INSERT(I, J, V, 4, 2)
MESHCCL_INCR_INSERT_V(int, int, 1)
MESHCCL_INCR_INSERT_V(int, int, 4)
MESHCCL_INCR_INSERT_V(int, int, 8)
MESHCCL_INCR_INSERT_V(int, long long, 2)
MESHCCL_INCR_INSERT_V(int, long long, 4)
MESHCCL_INCR_INSERT_V(long long, long long, 1)
MESHCCL_INCR_INSERT_V(long long, long long, 2)
#endif
