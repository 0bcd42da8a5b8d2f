// list_rank.cu -- ranking the elements of linked lists (meshccl.graph.list_rank).
//
// A set of lists arrives as one successor array: succ[i] is the element
// after i, and a tail (the last element of its list) has succ[i] == i or
// -1.  The rank of i is the number of elements after it in its list, so a
// tail has rank 0 and a head length - 1 (the definition of JaJa's text and
// of Dehne and Yogaratnam, who study both methods below on a GPU).  Every
// kernel also finds each element's tail, which names its list.
//
// meshccl_list_rank_prepare turns succ (any integer type S) into nxt of the
// index type I, tails written as -1, and records each element's
// predecessor.  Values outside [0, n) other than -1 set a flag and are read
// as tails, and two elements with the same successor race for the
// predecessor slot; meshccl_list_rank_verify finds the loser and sets the
// second flag.  Later kernels therefore never read out of bounds, whatever
// the input, and the host reads the flags once, at the end, with the cycle
// flag (a walk or a jump on invalid input still ends: see below).
//
// * Wylie's pointer jumping.  Each element holds a pair (P, val): P its
//   pointer (a tail points at itself) and val the number of elements
//   between i and P[i] (0 at a tail).  A round replaces (P[i], val[i]) by
//   (P[P[i]], val[i] + val[P[i]]), reading the pair of P[i] in one load:
//   the two values sit side by side (Dehne and Yogaratnam pack them into
//   64 bits for the same reason -- the load at a random place is what
//   costs).  Rounds are double-buffered: round k reads one array of pairs
//   and writes the other, one launch per round, ceil(log2 n) rounds; the
//   last writes rank and tail instead of pairs and checks that every
//   pointer rests on a real tail (nxt == -1).  On a cycle of length 2^j a
//   pointer can come back to its own element, so "P[i] == P[P[i]]" does not
//   prove a tail; the check reads nxt.  O(n log n) work.
//
// * Reid-Miller's random splitters.  meshccl_list_rank_mark makes every
//   head (no predecessor) a splitter, and every element whose hash of
//   (seed, i) -- SplitMix64's finaliser, the same as the CPU's -- falls in
//   a 1/spacing share; the host numbers the splitters
//   (cupy.flatnonzero, the one extra read: their count).  Each element
//   holds a pair (owner, local): its splitter's number and its distance
//   from it, (-1, 0) before any walk.  meshccl_list_rank_walk gives each
//   splitter a thread, which follows its sublist until the next element is
//   a splitter (owner >= 0) or it stands on a tail, writing (t, d) into each
//   element it enters: one random load of nxt and one of the next pair,
//   whose store follows on the same sector.  No two walks meet (each
//   element has one predecessor), and a walk on a cycle stops at its own
//   splitter, so every walk ends within n steps even on invalid input.  A
//   walk records the next splitter (or -1 at a real tail, with the tail
//   itself) and its sublist's length.  The reduced list of splitters,
//   weighted by the sublist lengths, is ranked by the same pointer jumping
//   (meshccl_list_rank_jump_init with weights, then the jump rounds): E[t]
//   is the number of elements after sublist t.  meshccl_list_rank_expand,
//   one coalesced pass, writes rank[i] = E[owner] + length[owner] - 1 -
//   local and the tail; an element no walk reached lies on a cycle without
//   a splitter and sets the cycle flag.  O(n) expected work; the longest
//   sublist (about spacing * ln(number of splitters)) bounds the walk
//   kernel.
//
// Dehne and Yogaratnam found the splitter method well ahead of pointer
// jumping on their GPU at every size they ran (time per element flat for
// the splitters, growing like log n for Wylie), and the walk kernel the
// dominant cost.  Index type I: int below 2^31 elements, long long beyond.

#include "launch.cuh"

namespace meshccl {
namespace list_rank {

using meshccl::thread_count;  // (launch.cuh)
using meshccl::thread_id;

// SplitMix64's finaliser (meshccl/_cpu/list_rank.py's _mix).
__device__ __forceinline__ unsigned long long mix(unsigned long long x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Two values of type I side by side, loaded and stored as one.
template <typename I>
struct alignas(2 * sizeof(I)) Pair {
    I a, b;
};

}  // namespace list_rank
}  // namespace meshccl

// flags[0]: a value out of range; flags[1]: a repeated successor;
// flags[2]: a cycle.

template <typename I, typename S>
__global__ void meshccl_list_rank_prepare(const S* __restrict__ succ, I n, I* __restrict__ nxt,
                                          I* __restrict__ pred, int* flags) {
    using namespace meshccl::list_rank;
    const bool is_signed = (S)(-1) < (S)0;
    for (long long i = thread_id(); i < (long long)n; i += thread_count()) {
        const S s = succ[i];
        const bool tail = (is_signed && s == (S)(-1)) || (long long)s == i;
        const bool bad = !tail && ((is_signed && s < (S)0) || (unsigned long long)s >= (unsigned long long)n);
        if (tail || bad) {
            nxt[i] = -1;
            if (bad) flags[0] = 1;
        } else {
            nxt[i] = (I)s;
            pred[(I)s] = (I)i;  // two writers: verify finds the loser
        }
    }
}

template <typename I>
__global__ void meshccl_list_rank_verify(const I* __restrict__ nxt, const I* __restrict__ pred,
                                         I n, int* flags) {
    using namespace meshccl::list_rank;
    for (long long i = thread_id(); i < (long long)n; i += thread_count()) {
        const I s = nxt[i];
        if (s >= 0 && pred[s] != (I)i) flags[1] = 1;
    }
}

// (P, val) of every element: P = nxt with ends pointing at themselves;
// val = 1 for each element (weight == nullptr) or the weight of the
// element P points to; 0 at an end.
template <typename I>
__global__ void meshccl_list_rank_jump_init(const I* __restrict__ nxt, const I* __restrict__ weight,
                                            I n, meshccl::list_rank::Pair<I>* __restrict__ out) {
    using namespace meshccl::list_rank;
    for (long long i = thread_id(); i < (long long)n; i += thread_count()) {
        const I s = nxt[i];
        Pair<I> p;
        p.a = s < 0 ? (I)i : s;
        p.b = s < 0 ? (I)0 : (weight ? weight[s] : (I)1);
        out[i] = p;
    }
}

// One round of pointer jumping.  The last round (rank != nullptr) writes
// rank and tail (tail may be nullptr) instead of pairs, and sets flags[2]
// when a pointer rests on an element that is not a real end (nxt != -1).
template <typename I>
__global__ void meshccl_list_rank_jump(const meshccl::list_rank::Pair<I>* __restrict__ in,
                                       meshccl::list_rank::Pair<I>* __restrict__ out, I n,
                                       const I* __restrict__ nxt, I* __restrict__ rank,
                                       I* __restrict__ tail, int* flags) {
    using namespace meshccl::list_rank;
    for (long long i = thread_id(); i < (long long)n; i += thread_count()) {
        const Pair<I> me = in[i];
        const Pair<I> up = in[me.a];
        if (rank) {
            rank[i] = me.b + up.b;
            if (tail) tail[i] = up.a;
            if (nxt[up.a] >= 0) flags[2] = 1;
        } else {
            Pair<I> p;
            p.a = up.a;
            p.b = me.b + up.b;
            out[i] = p;
        }
    }
}

// Splitters: flag[i] = 1 for heads and a 1/spacing share by hash; every
// (owner, local) pair reset to (-1, 0).
template <typename I>
__global__ void meshccl_list_rank_mark(const I* __restrict__ pred, I n, unsigned long long seed,
                                       unsigned long long spacing, unsigned char* __restrict__ flag,
                                       meshccl::list_rank::Pair<I>* __restrict__ owner) {
    using namespace meshccl::list_rank;
    for (long long i = thread_id(); i < (long long)n; i += thread_count()) {
        const unsigned long long h = mix(seed + (unsigned long long)(i + 1) * 0x9E3779B97F4A7C15ull);
        flag[i] = (pred[i] < 0 || h % spacing == 0) ? 1 : 0;
        Pair<I> p;
        p.a = -1;
        p.b = 0;
        owner[i] = p;
    }
}

// Splitter t owns itself at distance 0.
template <typename I>
__global__ void meshccl_list_rank_own(const long long* __restrict__ splitters, I r,
                                      meshccl::list_rank::Pair<I>* __restrict__ owner) {
    using namespace meshccl::list_rank;
    for (long long t = thread_id(); t < (long long)r; t += thread_count()) {
        Pair<I> p;
        p.a = (I)t;
        p.b = 0;
        owner[splitters[t]] = p;
    }
}

// One thread per splitter walks its sublist: rnxt[t] the next splitter's
// number, or -1 at a real tail (rtail[t] that tail, else -1); length[t]
// the sublist's length.
template <typename I>
__global__ void meshccl_list_rank_walk(const I* __restrict__ nxt, const long long* __restrict__ splitters,
                                       I r, meshccl::list_rank::Pair<I>* owner, I* __restrict__ rnxt,
                                       I* __restrict__ length, I* __restrict__ rtail) {
    using namespace meshccl::list_rank;
    for (long long t = thread_id(); t < (long long)r; t += thread_count()) {
        I j = (I)splitters[t];
        I d = 0;
        I next = -1, end = -1;
        for (;;) {
            const I s = __ldg(nxt + j);
            if (s < 0) {
                end = j;
                break;
            }
            const I o = owner[s].a;
            if (o >= 0) {
                next = o;
                break;
            }
            ++d;
            Pair<I> p;
            p.a = (I)t;
            p.b = d;
            owner[s] = p;
            j = s;
        }
        rnxt[t] = next;
        rtail[t] = end;
        length[t] = d + 1;
    }
}

// rank[i] = E[owner] + length[owner] - 1 - local; tail[i] (may be
// nullptr) = the tail ending the reduced list; flags[2] for an element no
// walk reached.
template <typename I>
__global__ void meshccl_list_rank_expand(const meshccl::list_rank::Pair<I>* __restrict__ owner,
                                         const I* __restrict__ E, const I* __restrict__ last,
                                         const I* __restrict__ length, const I* __restrict__ rtail,
                                         I n, I* __restrict__ rank, I* __restrict__ tail, int* flags) {
    using namespace meshccl::list_rank;
    for (long long i = thread_id(); i < (long long)n; i += thread_count()) {
        const Pair<I> p = owner[i];
        if (p.a < 0) {
            flags[2] = 1;
            continue;
        }
        rank[i] = E[p.a] + length[p.a] - 1 - p.b;
        if (tail) tail[i] = rtail[last[p.a]];
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Every instantiation meshccl/_gpu/list_rank.py can ask for: I in {int,
// long long}, S any integer type.
#define MESHCCL_LIST_RANK_IS(I, S) \
    template __global__ void meshccl_list_rank_prepare<I, S>(const S*, I, I*, I*, int*);
#define MESHCCL_LIST_RANK_I(I)                                                                    \
    MESHCCL_LIST_RANK_IS(I, signed char)                                                          \
    MESHCCL_LIST_RANK_IS(I, unsigned char)                                                        \
    MESHCCL_LIST_RANK_IS(I, short)                                                                \
    MESHCCL_LIST_RANK_IS(I, unsigned short)                                                       \
    MESHCCL_LIST_RANK_IS(I, int)                                                                  \
    MESHCCL_LIST_RANK_IS(I, unsigned int)                                                         \
    MESHCCL_LIST_RANK_IS(I, long long)                                                            \
    MESHCCL_LIST_RANK_IS(I, unsigned long long)                                                   \
    template __global__ void meshccl_list_rank_verify<I>(const I*, const I*, I, int*);           \
    template __global__ void meshccl_list_rank_jump_init<I>(const I*, const I*, I,               \
                                                            meshccl::list_rank::Pair<I>*);       \
    template __global__ void meshccl_list_rank_jump<I>(const meshccl::list_rank::Pair<I>*,       \
                                                       meshccl::list_rank::Pair<I>*, I, const I*, \
                                                       I*, I*, int*);                             \
    template __global__ void meshccl_list_rank_mark<I>(const I*, I, unsigned long long,          \
                                                       unsigned long long, unsigned char*,       \
                                                       meshccl::list_rank::Pair<I>*);            \
    template __global__ void meshccl_list_rank_own<I>(const long long*, I,                       \
                                                      meshccl::list_rank::Pair<I>*);             \
    template __global__ void meshccl_list_rank_walk<I>(const I*, const long long*, I,            \
                                                       meshccl::list_rank::Pair<I>*, I*, I*, I*); \
    template __global__ void meshccl_list_rank_expand<I>(const meshccl::list_rank::Pair<I>*,     \
                                                         const I*, const I*, const I*, const I*, \
                                                         I, I*, I*, int*);
MESHCCL_LIST_RANK_I(int)
MESHCCL_LIST_RANK_I(long long)
#endif
