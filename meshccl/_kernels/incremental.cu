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

template <typename I, typename J, int R, int C>
__global__ void meshccl_incr_batch(const unsigned char* __restrict__ kinds,
                                   const J* __restrict__ src, const J* __restrict__ dst,
                                   long long m, int mask, I* P, I* H, I n,
                                   I* __restrict__ FS, I* __restrict__ FD,
                                   bool* __restrict__ out) {
    using meshccl::incremental::vertex;
    const int only = mask == 2 ? 1 : 0;  // the kind of every operation without kinds
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < m; e += stride) {
        const int kind = kinds != nullptr ? (int)kinds[e] : only;
        if (kind > 1 || !((mask >> kind) & 1)) continue;  // (kinds other than 0, 1: skipped)
        const J x = src[e], y = dst[e];
        const bool valid = vertex(x, n) && vertex(y, n);
        if (kind != 0) {
            out[e] = valid && (x == y || meshccl::same_set<R, C>(P, (I)x, (I)y));
            continue;
        }
        if (out != nullptr) out[e] = false;
        if (!valid || x == y) continue;
        const I h = meshccl::unite_by<R, C>(P, H, (I)x, (I)y);
        if (FS != nullptr && h >= 0) {
            FS[h] = (I)x;
            FD[h] = (I)y;
        }
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Every instantiation meshccl/_gpu/incremental.py can ask for: (I, J) in
// {(int, int), (int, long long), (long long, long long)}, and the (rule,
// compression) pairs of meshccl/graph/_methods.py.
#define MESHCCL_INCR(I, J, R, C)                                                                  \
    template __global__ void meshccl_incr_batch<I, J, R, C>(                                      \
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
#endif
