// strong.cu -- strongly connected components of a directed graph on the GPU
// (meshccl.graph.connected_components(..., connection='strong')).
//
// The sequential answer is a depth-first search (Tarjan, Pearce: the CPU
// backend), which no GPU can run fast.  The parallel methods rest on one
// fact: the strong component of a vertex p is the set of vertices both
// reachable from p (forward) and reaching p (backward), and every cycle
// through two vertices of a component stays inside that component -- so
// once some components are found, the rest of the graph can be searched
// without them and its components are unchanged.  Every kernel here reads
// rep[v] (the component found for v: a representative vertex, or -1 while
// v has none) and looks only at vertices still without one.  The steps
// are those of the "Multistep" method of Slota, Rajamanickam and Madduri
// (IPDPS 2014) and of Hong, Rodia and Olukotun (SC 2013), both written for
// multicore CPUs; forward-backward with trimming on CUDA goes back to
// Barnat, Bauch, Brim and Ceska (IPDPS 2011):
//
// 0. Paths (meshccl_scc_path_links).  A vertex with one out-neighbour and
//    one in-neighbour (itself and repeats aside) lies on a path of such
//    vertices or on a cycle of them.  The kernel finds each vertex's only
//    neighbours; _gpu/strong_paths.py finds each path's ends by pointer
//    jumping (meshccl_scc_path_jump: rounds over the pointers not yet at
//    their path's end), replaces each path u -> ... -> w by the edge u -> w
//    (meshccl_scc_path_degree, _fill write the kept rows), runs
//    the steps below on that smaller graph and gives each path vertex u's
//    component when u and w share one, else its own.  A chain or a cycle,
//    which the steps below would peel or search one vertex per pass, costs
//    a few dozen launches.
//
// 1. Trim (meshccl_scc_trim).  A vertex with no in-neighbour or no
//    out-neighbour left (self-loops do not count) is a component of its
//    own.  Repeated until nothing changes; each pass removes whole layers
//    of sources and sinks, which are most vertices of sparse real-world
//    and R-MAT graphs.  Updates are in place: a stale read only delays a
//    removal, because a vertex is only ever removed (a removed vertex
//    belongs to a complete component, so reading it removed is the truth).
//    A trim still going after a few passes (a DAG or a one-way grid: one
//    pass per layer, thousands of layers) is finished by the peel
//    (meshccl_scc_peel_init, meshccl_scc_peel): one word of remaining in-
//    and out-neighbour counts per vertex and one launch in which each
//    thread peels a chain of vertices, continuing with a vertex whose
//    count it took to 0 and queueing the others (Kahn's topological order,
//    from both ends).
//
// 2. Forward-backward from a pivot (meshccl_scc_score, _seed, _expand,
//    _fwbw).  The pivot is the remaining vertex of largest
//    in-degree x out-degree, almost surely in the giant component when
//    there is one.  Two breadth-first searches over the remaining
//    vertices -- forward on the graph, backward on its transpose (a CSR of
//    the reversed edges, built once by a counting scatter) -- mark bit 1 and
//    bit 2 of mark[]; the vertices with both bits are the pivot's
//    component (vertices trimmed before start with both bits, so a search
//    tests one word per edge and never enters them).  Both searches
//    advance one level per launch (blockIdx.y picks the direction) on
//    queues whose lengths stay on the device: the host launches levels in
//    growing batches and reads the lengths once per batch, never once per
//    level (a batch that comes again is replayed from a recorded CUDA
//    graph: a level whose frontier is small costs the GPU a few
//    microseconds, less than a launch from Python).  A reached vertex enters the queue as the chunks of its row, at
//    most CHUNK = 32 entries each, and each chunk is expanded by one lane,
//    so that a hub -- the pivot itself has the largest degrees of the
//    graph, a hundred thousand and more on R-MAT -- is spread over as many
//    lanes as it has chunks instead of holding one warp for the whole
//    level.  The lanes of a warp go in step, one entry each per step, and
//    each step the warp appends what its lanes reached with one atomicAdd
//    on the queue's length (a prefix sum over the lanes places them), not
//    one per vertex on a word that every warp of the level shares.  Then
//    the trim runs again on what is left.
//    A search that is still running after many levels (a road network's
//    giant component, thousands of levels) stops where the edges stored
//    both ways join most vertices into few pieces (meshccl_scc_mutual*):
//    each piece lies inside one component, and the graph with each piece
//    contracted to one vertex (meshccl_scc_quotient_*) has the same
//    components between pieces and a diameter of a few levels.
//
// 3. Colouring (meshccl_scc_colour_*), for the many small components left.
//    Every remaining vertex starts with its own priority as colour; the
//    largest colour is pushed forward along edges (atomicMax) until nothing
//    changes, so colour[v] is the largest priority of a vertex that reaches
//    v.  A vertex r whose colour is its own priority is a root: its
//    component is the set of vertices of r's colour that reach r, found by
//    a backward search from every root at once over the transpose,
//    restricted to the root's colour (a path from v to r passes only
//    through vertices of that colour).  Every member of r's component has
//    r's colour (whatever reaches one member reaches r and r reaches it),
//    so each round completes at least the component of the remaining
//    vertex of largest priority, in practice very many.  The priority is
//    a fixed permutation of the vertex numbers, (a v + b) mod n with a
//    coprime to n (about 0.618 n), not v itself: with v, a path of
//    components numbered against its direction (edges from larger to
//    smaller numbers, as in time-ordered data) gives the whole path one
//    colour and completes one component per round; the permutation
//    scatters such orders (a = 1, b = 0 from 2^32 vertices, where the
//    product would overflow).  Rounds repeat
//    until no vertex is left; the host reads the count of the remaining
//    vertices once per round.  The push only visits vertices whose colour
//    rose since they last pushed (a flag per vertex), and both searches
//    update in place, so a change can travel far within one pass.
//
// 4. Numbering (meshccl_scc_min, _point): each vertex points at the
//    smallest vertex of its component, so the shared relabel
//    (number_roots.cu) numbers components 0..N-1 in order of their smallest
//    vertex.  The smallest vertex of each component is an atomicMin per
//    warp and component, not per vertex (a giant component would make
//    millions of them on one word).  (SciPy numbers them in the order its
//    depth-first search completes them, which only a sequential search
//    reproduces; the CPU backend does, the GPU documents this order
//    instead.)
//
// Long rows.  A row of more than STRONG_LONG_ROW entries (the host's
// _tuning value) would hold one lane for as many dependent loads in every
// colouring pass: the push and backward passes leave such rows to
// meshccl_scc_push_rows / _back_rows, which take them as chunks of CHUNK
// entries, a lane each, after a snapshot kernel has fixed what each long
// row's vertex pushes or searches from in this pass; the trim scans rows
// of more than 32 entries with the whole warp, 32 entries a step.
//
// Narrow frontiers.  The trim passes, the search levels and the colouring
// passes all count (the trim's removed vertices and the searches' reached
// vertices are counted on the device, read at the host's batch reads):
// _gpu/strong.py stops the GPU where it moves too few vertices a pass and
// finishes the remaining subgraph with the CPU's linear-time search.  Every
// kernel leaves rep[] consistent after each launch (found components are
// complete), so the GPU may stop between any two launches.
//
// Costs: trimming and colouring take as many passes as the longest chain
// of vertices they peel or colour one after another, and forward-backward
// as many levels as the giant component's radius from the pivot: a few
// tens on small-world graphs, thousands on road networks and long paths,
// and in the worst case -- a long path of components numbered against
// its direction -- many colouring rounds.  The answer is always exact.
//
// Index types: I (int below 2^31 vertices, long long beyond) for vertices
// and colours; J (int or long long) for the stored neighbours; row offsets
// long long; a chunk's number within its row unsigned (rows of fewer than
// 2^37 entries, which no GPU holds).

#include "launch.cuh"

namespace meshccl {
namespace strong {

using meshccl::thread_count;  // (launch.cuh)
using meshccl::thread_id;

constexpr unsigned FULL = 0xffffffffu;

// The colour order: vertex v has priority (a v + b) mod n, a permutation of
// [0, n) (a coprime to n; the host keeps a v below 2^64) ...
__device__ __forceinline__ long long priority(long long v, unsigned long long a,
                                              unsigned long long b, long long n) {
    return (long long)((a * (unsigned long long)v + b) % (unsigned long long)n);
}

// ... and the vertex of priority p (a_inv: the inverse of a modulo n).
__device__ __forceinline__ long long vertex_of(long long p, unsigned long long a_inv,
                                               unsigned long long b, long long n) {
    const unsigned long long u = (unsigned long long)n;
    return (long long)(((unsigned long long)p + u - b) % u * a_inv % u);
}
//: a search queue entry is a chunk of at most this many entries of one row
constexpr long long CHUNK = 32;

// The number of queue entries of a row of deg entries: ceil(deg / CHUNK),
// none for an empty row (reaching its vertex is all there is to it).
__device__ __forceinline__ long long chunks_of(long long deg) { return (deg + CHUNK - 1) / CHUNK; }

// The whole warp appends to a search queue (qv, qk): each lane its vertex v
// as `chunks` entries (v, 0), (v, 1), ... (0: nothing), from the place its
// lane's prefix sum gives after one atomicAdd on *cnt for the warp -- not
// one per lane on the one counter that every warp of the level appends to.
// A lane writes up to 32 entries itself; more (a hub's), the whole warp
// writes.  Called by all 32 lanes together.
template <typename I>
__device__ __forceinline__ void warp_append(I v, long long chunks, I* __restrict__ qv,
                                            unsigned* __restrict__ qk, unsigned long long* cnt) {
    if (!__any_sync(FULL, chunks > 0)) return;
    const int lane = threadIdx.x & 31;
    long long upto = chunks;  // inclusive prefix sum over the lanes
    for (int o = 1; o < 32; o <<= 1) {
        const long long t = __shfl_up_sync(FULL, upto, o);
        if (lane >= o) upto += t;
    }
    unsigned long long at = 0;
    if (lane == 31) at = atomicAdd(cnt, (unsigned long long)upto);
    at = __shfl_sync(FULL, at, 31) + (unsigned long long)(upto - chunks);
    const bool many = chunks > 32;
    if (!many) {
        for (long long k = 0; k < chunks; ++k) {
            qv[at + k] = v;
            qk[at + k] = (unsigned)k;
        }
    }
    unsigned todo = __ballot_sync(FULL, many);
    while (todo) {
        const int src = __ffs(todo) - 1;
        todo &= todo - 1;
        const long long c = __shfl_sync(FULL, chunks, src);
        const unsigned long long from = __shfl_sync(FULL, at, src);
        const I u = __shfl_sync(FULL, v, src);
        for (long long k = lane; k < c; k += 32) {
            qv[from + k] = u;
            qk[from + k] = (unsigned)k;
        }
    }
}

}  // namespace strong
}  // namespace meshccl

// Whether vertex v (the same for every lane) has a remaining neighbour
// other than itself in its row of (ptr, idx): the whole warp reads the row
// 32 entries a step, so that a hub's row costs deg / 32 steps of coalesced
// loads, not deg dependent loads of one lane.  Called by all 32 lanes.
template <typename I, typename J>
__device__ __forceinline__ bool warp_any_live(const long long* __restrict__ ptr,
                                              const J* __restrict__ idx, long long v,
                                              const I* rep) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    const long long end = ptr[v + 1];
    for (long long e0 = ptr[v]; e0 < end; e0 += 32) {
        bool live = false;
        if (e0 + lane < end) {
            const J w = idx[e0 + lane];
            live = (long long)w != v && rep[w] < 0;
        }
        if (__any_sync(FULL, live)) return true;
    }
    return false;
}

// One trim pass: a remaining vertex without a remaining in-neighbour or
// without a remaining out-neighbour (itself excepted) is a component.  A
// lane scans rows of at most 32 entries itself (stopping at the first
// remaining neighbour); longer rows the whole warp scans (warp_any_live).
// *removed counts the vertices this pass removed (the host's measure of
// progress, _gpu/strong.py).
template <typename I, typename J>
__global__ void meshccl_scc_trim(const long long* __restrict__ fptr, const J* __restrict__ fidx,
                                 const long long* __restrict__ rptr, const J* __restrict__ ridx,
                                 I* rep, I n, int* changed, unsigned long long* removed) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    // warp-uniform loop: every lane of a warp runs the same iterations
    for (long long base = thread_id() - lane; base < (long long)n; base += thread_count()) {
        const long long v = base + lane;
        const bool mine = v < (long long)n && rep[v] < 0;
        bool wide = false, out = false, in = false;
        if (mine) {
            wide = fptr[v + 1] - fptr[v] > 32 || rptr[v + 1] - rptr[v] > 32;
            if (!wide) {
                for (long long e = fptr[v]; e < fptr[v + 1] && !out; ++e) {
                    const J w = fidx[e];
                    out = (long long)w != v && rep[w] < 0;
                }
                for (long long e = rptr[v]; out && e < rptr[v + 1] && !in; ++e) {
                    const J w = ridx[e];
                    in = (long long)w != v && rep[w] < 0;
                }
            }
        }
        unsigned todo = __ballot_sync(FULL, mine && wide);
        while (todo) {
            const int src = __ffs(todo) - 1;
            todo &= todo - 1;
            const long long u = __shfl_sync(FULL, v, src);
            const bool o = warp_any_live(fptr, fidx, u, rep);
            const bool i = o && warp_any_live(rptr, ridx, u, rep);
            if (lane == src) {
                out = o;
                in = i;
            }
        }
        const bool gone = mine && (!out || !in);
        if (gone) rep[v] = (I)v;
        const unsigned done = __ballot_sync(FULL, gone);
        if (lane == 0 && done) {
            *changed = 1;
            atomicAdd(removed, (unsigned long long)__popc(done));
        }
    }
}

// The peel's counters, a 128-byte line apart: ctl[PEEL_LENGTH] the
// queue's length, ctl[PEEL_TAKEN] the slots taken, ctl[PEEL_PENDING] the
// vertices claimed and not yet finished (the end of the peel is this
// count at 0), ctl[PEEL_DONE] the vertices finished (added at exit).
constexpr int PEEL_LENGTH = 0, PEEL_TAKEN = 16, PEEL_PENDING = 32, PEEL_DONE = 48;  // (64 words)

// A vertex's peel word: its remaining in-neighbours (entries, itself
// excepted) in the high 32 bits, its remaining out-neighbours in the low 32
// bits.  A vertex is free once either half is 0, and the one atomic that
// takes a half from 1 to 0 while the other half is not 0 claims it -- one
// atomic per released entry, no claim flag.  A half only counts down as
// many times as it counted entries, so it never wraps; a vertex that had a
// component before the peel gets PEEL_NEVER, which no row can count down
// to 0 (rows of fewer than 2^31 entries).
constexpr unsigned long long PEEL_IN = 1ull << 32, PEEL_OUT = 1ull;
constexpr unsigned long long PEEL_NEVER = (1ull << 63) | (1ull << 31);

// The live neighbours other than v itself in v's row of (ptr, idx), counted
// by the whole warp 32 entries a step (v the same for every lane; every
// lane gets the count).  Called by all 32 lanes.
template <typename I, typename J>
__device__ __forceinline__ unsigned long long warp_count_live(const long long* __restrict__ ptr,
                                                              const J* __restrict__ idx,
                                                              long long v, const I* rep) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    const long long end = ptr[v + 1];
    unsigned long long count = 0;
    for (long long e0 = ptr[v]; e0 < end; e0 += 32) {
        bool live = false;
        if (e0 + lane < end) {
            const J w = idx[e0 + lane];
            live = (long long)w != v && rep[w] < 0;
        }
        count += (unsigned long long)__popc(__ballot_sync(FULL, live));
    }
    return count;
}

// The warp queues the entries of its lanes whose `push` is set: the count
// of pending vertices first grows by as many (so that no waiting warp sees
// it at 0 while they are in flight), then one atomicAdd on the queue's
// length places them.  The entry is written after the length moved, so a
// reader of slot i waits until it is no longer -1 (the queue is filled
// with -1 before the peel).  Called by all 32 lanes.
__device__ __forceinline__ void peel_queue(bool push, long long entry, long long* queue,
                                           unsigned long long* ctl) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    const unsigned who = __ballot_sync(FULL, push);
    if (!who) return;
    unsigned long long at = 0;
    if (lane == 0) {
        atomicAdd(&ctl[PEEL_PENDING], (unsigned long long)__popc(who));
        at = atomicAdd(&ctl[PEEL_LENGTH], (unsigned long long)__popc(who));
    }
    at = __shfl_sync(FULL, at, 0);
    __threadfence();
    if (push) *(volatile long long*)&queue[at + __popc(who & ((1u << lane) - 1u))] = entry;
}

// The peel, part 1 (the trim's start): each remaining vertex's peel word
// (its remaining in- and out-neighbours, each stored entry counted,
// repeats too); the vertices with a half at 0 enter the queue as the entry
// 2 v + side: side 0 (no in-neighbour left) releases v's out-row, side 1
// its in-row.  A lane counts rows of at most 32 entries itself, the warp
// longer ones.
template <typename I, typename J>
__global__ void meshccl_scc_peel_init(const long long* __restrict__ fptr,
                                      const J* __restrict__ fidx,
                                      const long long* __restrict__ rptr,
                                      const J* __restrict__ ridx, const I* __restrict__ rep, I n,
                                      unsigned long long* __restrict__ word, long long* queue,
                                      unsigned long long* ctl) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    for (long long base = thread_id() - lane; base < (long long)n; base += thread_count()) {
        const long long v = base + lane;
        const bool mine = v < (long long)n && rep[v] < 0;
        bool wide = false;
        unsigned long long out = 0, in = 0;
        if (mine) {
            wide = fptr[v + 1] - fptr[v] > 32 || rptr[v + 1] - rptr[v] > 32;
            if (!wide) {
                for (long long e = fptr[v]; e < fptr[v + 1]; ++e) {
                    const J w = fidx[e];
                    out += (long long)w != v && rep[w] < 0;
                }
                for (long long e = rptr[v]; e < rptr[v + 1]; ++e) {
                    const J w = ridx[e];
                    in += (long long)w != v && rep[w] < 0;
                }
            }
        }
        unsigned todo = __ballot_sync(FULL, mine && wide);
        while (todo) {
            const int src = __ffs(todo) - 1;
            todo &= todo - 1;
            const long long u = __shfl_sync(FULL, v, src);
            const unsigned long long o = warp_count_live(fptr, fidx, u, rep);
            const unsigned long long i = warp_count_live(rptr, ridx, u, rep);
            if (lane == src) {
                out = o;
                in = i;
            }
        }
        const bool gone = mine && (out == 0 || in == 0);
        if (v < (long long)n) word[v] = mine ? in * PEEL_IN + out * PEEL_OUT : PEEL_NEVER;
        peel_queue(gone, 2 * v + (in == 0 ? 0 : 1), queue, ctl);
    }
}

// Vertex w loses one entry of the half `side` names (0: its in-neighbours,
// as an in-neighbour left through its out-row; 1: its out-neighbours).
// Returns w's queue entry 2 w + side when this atomic claimed w (the half
// went to 0 while the other was not 0), else -1.
__device__ __forceinline__ long long peel_release(unsigned long long* word, long long w,
                                                  int side) {
    const unsigned long long d = side ? PEEL_OUT : PEEL_IN;
    const unsigned long long old = atomicAdd(&word[w], 0ull - d);
    const unsigned long long now = old - d;
    const bool was_free = (old >> 32) == 0ull || (old & 0xffffffffull) == 0ull;
    const bool is_free = side ? (now & 0xffffffffull) == 0ull : (now >> 32) == 0ull;
    return !was_free && is_free ? 2 * w + side : -1;
}

// The peel, part 2: the whole trim -- every vertex that repeated passes of
// "no remaining in- or out-neighbour, itself excepted" would remove -- in
// one launch (Kahn's topological peeling, both ways at once).  Sources and
// sinks peel apart: only a vertex that left because its in-neighbours all
// left lowers its out-neighbours' in-counts (it releases its out-row), and
// only one whose out-neighbours all left lowers its in-neighbours'
// out-counts -- the other row's neighbours have all left already, so one
// row per vertex is released, not both.
//
// Each thread follows chains: a thread that finishes v and claims some of
// its neighbours continues with the first itself (no queue round trip:
// the chain of dependent operations per peeled layer is the row's two
// loads and one atomic) and queues the others; a thread without a vertex
// takes the queue's next slot (ctl[PEEL_TAKEN]) and waits for its entry.
// Rows of more than 32 entries the warp releases together, queueing every
// vertex they claim; shorter rows its lanes release in step, an entry each
// a step, so that the slots taken, the vertices queued and the vertices
// finished cost one atomic on their counter per warp and step, not one per
// lane (the counters are the peel's only shared words).  ctl[PEEL_PENDING] counts the vertices claimed and
// not finished: it grows before a vertex is queued and falls after a
// thread's vertex is finished without a successor to follow, so it reads
// 0 only when no vertex is held or queued and none can be claimed again;
// a warp whose lanes all wait leaves then.  A slot at or past `capacity`
// (n: at most n vertices are queued) is never filled.  Work O(n + m) with
// one atomic per released entry.
template <typename I, typename J>
__global__ void meshccl_scc_peel(const long long* __restrict__ fptr, const J* __restrict__ fidx,
                                 const long long* __restrict__ rptr, const J* __restrict__ ridx,
                                 I* rep, unsigned long long* word, long long* queue,
                                 long long capacity, unsigned long long* ctl) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    const unsigned below = (1u << lane) - 1u;
    volatile unsigned long long* vctl = ctl;
    long long v = -1;                 // the vertex in hand
    int side = 0;                     // the row it releases: 0 its out-row, 1 its in-row
    unsigned long long slot = ~0ull;  // the queue slot this lane waits on (none)
    unsigned long long finished = 0;
    unsigned nap = 32;
    while (true) {
        // a slot for every lane without a vertex or a slot: one atomic a warp
        const bool ask = v < 0 && slot == ~0ull;
        const unsigned asking = __ballot_sync(FULL, ask);
        if (asking) {
            unsigned long long first = 0;
            if (lane == 0) first = atomicAdd(&ctl[PEEL_TAKEN], (unsigned long long)__popc(asking));
            first = __shfl_sync(FULL, first, 0);
            if (ask) slot = first + (unsigned long long)__popc(asking & below);
        }
        if (v < 0 && slot < (unsigned long long)capacity) {
            const long long x = *(volatile long long*)&queue[slot];
            if (x >= 0) {
                v = x >> 1;
                side = (int)(x & 1);
                slot = ~0ull;
            }
        }
        if (!__ballot_sync(FULL, v >= 0)) {  // the whole warp waits
            unsigned long long pending = 0;
            if (lane == 0) pending = vctl[PEEL_PENDING];
            if (__shfl_sync(FULL, pending, 0) == 0ull) break;
#if __CUDA_ARCH__ >= 700
            __nanosleep(nap);
#endif
            nap = nap < 1024u ? 2u * nap : nap;
            continue;
        }
        nap = 32;
        const long long* __restrict__ ptr = side ? rptr : fptr;
        const J* __restrict__ idx = side ? ridx : fidx;
        long long b = 0, e = 0;
        if (v >= 0) {
            b = ptr[v];
            e = ptr[v + 1];
            rep[v] = (I)v;
            ++finished;
        }
        const bool wide = e - b > 32;
        unsigned todo = __ballot_sync(FULL, wide);
        while (todo) {  // long rows: the warp, 32 entries a step, every claim queued
            const int src = __ffs(todo) - 1;
            todo &= todo - 1;
            const long long u = __shfl_sync(FULL, v, src);
            const long long ub = __shfl_sync(FULL, b, src), ue = __shfl_sync(FULL, e, src);
            const int us = __shfl_sync(FULL, side, src);
            const J* __restrict__ uidx = us ? ridx : fidx;
            for (long long e0 = ub; e0 < ue; e0 += 32) {
                long long got = -1;
                if (e0 + lane < ue) {
                    const long long w = (long long)uidx[e0 + lane];
                    if (w != u) got = peel_release(word, w, us);
                }
                peel_queue(got >= 0, got, queue, ctl);
            }
        }
        // short rows: the lanes in step, an entry each a step; a lane keeps
        // the first vertex it claims and the warp queues the others
        const bool own = v >= 0 && !wide;
        long long next = -1;
        for (long long o = 0; __any_sync(FULL, own && b + o < e); ++o) {
            long long got = -1;
            if (own && b + o < e) {
                const long long w = (long long)idx[b + o];
                if (w != v) got = peel_release(word, w, side);
            }
            const bool keep = got >= 0 && next < 0;
            if (keep) next = got;
            peel_queue(got >= 0 && !keep, got, queue, ctl);
        }
        // the lanes whose vertex is finished with nothing to follow
        const unsigned ends = __ballot_sync(FULL, v >= 0 && next < 0);
        if (ends) {
            __threadfence();
            if (lane == 0) atomicAdd(&ctl[PEEL_PENDING], 0ull - (unsigned long long)__popc(ends));
        }
        if (v >= 0) {
            v = next < 0 ? -1 : next >> 1;
            side = (int)(next & 1);
        }
    }
    if (finished) atomicAdd(&ctl[PEEL_DONE], finished);
}

// The pivot's score: out-degree x in-degree of a remaining vertex, -1 for
// the others (the host takes the argmax on the device).  Also readies
// mark[] for the searches: 0 for a remaining vertex, 3 (reached both ways)
// for one with a component, so that the searches test one word per edge.
template <typename I>
__global__ void meshccl_scc_score(const long long* __restrict__ fptr,
                                  const long long* __restrict__ rptr, const I* __restrict__ rep,
                                  I n, long long* __restrict__ score,
                                  unsigned* __restrict__ mark) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        const bool live = rep[v] < 0;
        score[v] = live ? (fptr[v + 1] - fptr[v] + 1) * (rptr[v + 1] - rptr[v] + 1) : -1;
        mark[v] = live ? 0u : 3u;
    }
}

// One warp: both searches start at the pivot, its row of each CSR cut into
// chunks (queues empty when the pivot already has a component: nothing
// remains).  mark[] as the score kernel leaves it.
template <typename I>
__global__ void meshccl_scc_seed(const long long* __restrict__ fptr,
                                 const long long* __restrict__ rptr,
                                 const long long* __restrict__ pivot, const I* __restrict__ rep,
                                 unsigned* __restrict__ mark, I* __restrict__ qf_v,
                                 unsigned* __restrict__ qf_k, I* __restrict__ qb_v,
                                 unsigned* __restrict__ qb_k,
                                 unsigned long long* __restrict__ counts) {
    using namespace meshccl::strong;
    const I p = (I)*pivot;
    const bool live = rep[p] < 0;
    const long long nf = live ? chunks_of(fptr[p + 1] - fptr[p]) : 0;
    const long long nb = live ? chunks_of(rptr[p + 1] - rptr[p]) : 0;
    for (long long k = threadIdx.x; k < nf; k += blockDim.x) {
        qf_v[k] = p;
        qf_k[k] = (unsigned)k;
    }
    for (long long k = threadIdx.x; k < nb; k += blockDim.x) {
        qb_v[k] = p;
        qb_k[k] = (unsigned)k;
    }
    if (threadIdx.x == 0) {
        if (live) mark[p] = 3u;
        counts[0] = (unsigned long long)nf;  // forward queue
        counts[1] = (unsigned long long)nb;  // backward queue
    }
}

// One level of both searches: blockIdx.y == 0 expands the forward queue
// over the graph (bit 1), 1 the backward queue over the transpose (bit 2).
// An entry (qin_v[i], qin_k[i]) is chunk k of vertex v's row, at most CHUNK
// entries, expanded by its own lane; the lanes of a warp go in step, one
// entry each per step, and append what they reached together
// (warp_append).  Queue d reads its length from nin[d] and appends to
// qout_d, counting in nout[d], which must be zero.  The lengths rotate
// through three slots: this level also zeroes nzero[d], the slot the level
// before read and the level after counts into, so that no launch of a fill
// sits between two levels (no thread of this level reads that slot).
// reached[d] counts the vertices search d reached (the host's measure of
// progress, _gpu/strong.py), one atomic per warp and step.
template <typename I, typename J>
__global__ void meshccl_scc_expand(const long long* __restrict__ fptr, const J* __restrict__ fidx,
                                   const long long* __restrict__ rptr, const J* __restrict__ ridx,
                                   unsigned* mark, const I* __restrict__ qin_fv,
                                   const unsigned* __restrict__ qin_fk,
                                   const I* __restrict__ qin_bv,
                                   const unsigned* __restrict__ qin_bk,
                                   const unsigned long long* __restrict__ nin,
                                   I* __restrict__ qout_fv, unsigned* __restrict__ qout_fk,
                                   I* __restrict__ qout_bv, unsigned* __restrict__ qout_bk,
                                   unsigned long long* nout, unsigned long long* nzero,
                                   unsigned long long* reached) {
    using namespace meshccl::strong;
    const int d = blockIdx.y;
    const long long* ptr = d ? rptr : fptr;
    const J* idx = d ? ridx : fidx;
    const I* qin_v = d ? qin_bv : qin_fv;
    const unsigned* qin_k = d ? qin_bk : qin_fk;
    I* qout_v = d ? qout_bv : qout_fv;
    unsigned* qout_k = d ? qout_bk : qout_fk;
    unsigned long long* cnt = nout + d;
    const unsigned bit = d ? 2u : 1u;
    const long long total = (long long)nin[d];
    const int lane = threadIdx.x & 31;
    if (blockIdx.x == 0 && threadIdx.x == 0) nzero[d] = 0ull;
    // claim w for this search: the number of its row's chunks to append
    // when this thread reached it first, else -1 (mark[w] carries both bits
    // for a vertex with a component: score kernel)
    auto claim = [&](long long w) -> long long {
        if (mark[w] & bit) return -1;
        if (atomicOr(mark + w, bit) & bit) return -1;
        return chunks_of(ptr[w + 1] - ptr[w]);
    };
    // warp-uniform loops: every lane of a warp runs the same iterations
    for (long long base = thread_id() - lane; base < total; base += thread_count()) {
        const long long i = base + lane;
        long long b = 0;
        int len = 0;
        if (i < total) {
            const I v = qin_v[i];
            b = ptr[v] + (long long)qin_k[i] * CHUNK;
            len = (int)min(CHUNK, ptr[v + 1] - b);
        }
        int most = len;
        for (int o = 16; o; o >>= 1) most = max(most, __shfl_xor_sync(FULL, most, o));
        for (int j = 0; j < most; ++j) {
            const long long w = j < len ? (long long)idx[b + j] : 0;
            const long long c = j < len ? claim(w) : -1;
            const unsigned got = __ballot_sync(FULL, c >= 0);
            if (lane == 0 && got) atomicAdd(reached + d, (unsigned long long)__popc(got));
            warp_append((I)w, c > 0 ? c : 0, qout_v, qout_k, cnt);
        }
    }
}

// The pivot's component: the remaining vertices both searches reached.
template <typename I>
__global__ void meshccl_scc_fwbw(const unsigned* __restrict__ mark,
                                 const long long* __restrict__ pivot, I* rep, I n) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        if (rep[v] < 0 && mark[v] == 3u) rep[v] = (I)*pivot;
    }
}

// A colouring round starts: every remaining vertex has its own priority as
// colour and is active (has a colour to push); mark[] cleared.
template <typename I>
__global__ void meshccl_scc_colour_init(const I* __restrict__ rep, I* __restrict__ colour,
                                        unsigned char* __restrict__ active,
                                        unsigned* __restrict__ mark, I n, unsigned long long a,
                                        unsigned long long b) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        const bool live = rep[v] < 0;
        colour[v] = (I)priority(v, a, b, n);
        active[v] = live ? 1 : 0;
        mark[v] = 0u;
    }
}

// One push pass: each active remaining vertex raises the colour of its
// remaining out-neighbours to its own (atomicMax); a raised neighbour
// becomes active.  In place: the flag is cleared before the colour is read,
// and set only after a rise, each with a fence between, so a rise the
// reader misses always leaves the flag set and the vertex pushes again.
// Rows of more than `heavy` entries are left to meshccl_scc_push_rows.
template <typename I, typename J>
__global__ void meshccl_scc_colour_push(const long long* __restrict__ fptr,
                                        const J* __restrict__ fidx, const I* __restrict__ rep,
                                        I* colour, volatile unsigned char* active, I n,
                                        long long heavy, int* changed) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        if (!active[v] || fptr[v + 1] - fptr[v] > heavy) continue;
        active[v] = 0;
        __threadfence();
        const I c = ((volatile I*)colour)[v];
        bool rose = false;
        for (long long e = fptr[v]; e < fptr[v + 1]; ++e) {
            const J w = fidx[e];
            if (rep[w] >= 0 || ((volatile I*)colour)[w] >= c) continue;
            if (atomicMax(colour + w, c) < c) {
                __threadfence();  // the rise is seen before the flag (see above)
                active[w] = 1;
                rose = true;
            }
        }
        if (rose) *changed = 1;
    }
}

// Roots: the remaining vertices whose colour is their own priority; mark 1
// = reached and not yet searched from, 2 = searched from, 0 = not reached.
template <typename I>
__global__ void meshccl_scc_colour_roots(const I* __restrict__ rep, const I* __restrict__ colour,
                                         unsigned* __restrict__ mark, I n, unsigned long long a,
                                         unsigned long long b) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        mark[v] = (rep[v] < 0 && (long long)colour[v] == priority(v, a, b, n)) ? 1u : 0u;
    }
}

// One backward pass: a reached vertex not yet searched from reaches its
// remaining in-neighbours of its own colour.  Rows of more than `heavy`
// entries are left to meshccl_scc_back_rows.
template <typename I, typename J>
__global__ void meshccl_scc_colour_back(const long long* __restrict__ rptr,
                                        const J* __restrict__ ridx, const I* __restrict__ rep,
                                        const I* __restrict__ colour, volatile unsigned* mark, I n,
                                        long long heavy, int* changed) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        if (mark[v] != 1u || rptr[v + 1] - rptr[v] > heavy) continue;
        mark[v] = 2u;
        const I c = colour[v];
        bool reached = false;
        for (long long e = rptr[v]; e < rptr[v + 1]; ++e) {
            const J w = ridx[e];
            if (mark[w] == 0u && rep[w] < 0 && colour[w] == c) {
                mark[w] = 1u;
                reached = true;
            }
        }
        if (reached) *changed = 1;
    }
}

// Long rows of the colouring (more than `heavy` entries: _gpu/strong.py
// lists them once per graph, hv[h] the h-th such vertex, and cuts them into
// chunks (ch[i], ck[i]): entries ck[i] * CHUNK .. + CHUNK of vertex
// hv[ch[i]]'s row).  One lane per chunk, so that a hub's row is spread over
// deg / CHUNK lanes instead of holding one lane for deg dependent loads.
// A pass first takes a snapshot of each long row's vertex (what its chunks
// push or search from: all chunks of a row must see the same), then runs
// the chunks, then the short rows (the kernels above).

// Push snapshot: go[h] when hv[h] remains and its colour changed since the
// last snapshot (last[h], -1 at the start of a round); snap[h] its colour.
template <typename I>
__global__ void meshccl_scc_push_snap(const I* __restrict__ hv, long long nh,
                                      const I* __restrict__ rep, const I* __restrict__ colour,
                                      I* __restrict__ snap, I* __restrict__ last,
                                      unsigned char* __restrict__ go) {
    using namespace meshccl::strong;
    for (long long h = thread_id(); h < nh; h += thread_count()) {
        const I v = hv[h];
        const I c = colour[v];
        const bool push = rep[v] < 0 && c != last[h];
        go[h] = push ? 1 : 0;
        if (push) last[h] = c;
        snap[h] = c;
    }
}

// The chunks of the long rows to push: as meshccl_scc_colour_push, from
// the snapshot's colour.
template <typename I, typename J>
__global__ void meshccl_scc_push_rows(const long long* __restrict__ fptr,
                                      const J* __restrict__ fidx, const I* __restrict__ rep,
                                      I* colour, volatile unsigned char* active,
                                      const I* __restrict__ hv, const I* __restrict__ ch,
                                      const unsigned* __restrict__ ck, long long chunks,
                                      const I* __restrict__ snap,
                                      const unsigned char* __restrict__ go, int* changed) {
    using namespace meshccl::strong;
    for (long long i = thread_id(); i < chunks; i += thread_count()) {
        const I h = ch[i];
        if (!go[h]) continue;
        const I v = hv[h];
        const I c = snap[h];
        const long long b = fptr[v] + (long long)ck[i] * CHUNK;
        const long long e1 = min(b + CHUNK, fptr[v + 1]);
        bool rose = false;
        for (long long e = b; e < e1; ++e) {
            const J w = fidx[e];
            if (rep[w] >= 0 || ((volatile I*)colour)[w] >= c) continue;
            if (atomicMax(colour + w, c) < c) {
                __threadfence();
                active[w] = 1;
                rose = true;
            }
        }
        if (rose) *changed = 1;
    }
}

// Backward snapshot: go[h] when hv[h] was reached and not yet searched
// from (mark 1), which it then is (mark 2).
template <typename I>
__global__ void meshccl_scc_back_snap(const I* __restrict__ hv, long long nh,
                                      unsigned* __restrict__ mark,
                                      unsigned char* __restrict__ go) {
    using namespace meshccl::strong;
    for (long long h = thread_id(); h < nh; h += thread_count()) {
        const I v = hv[h];
        const bool from = mark[v] == 1u;
        go[h] = from ? 1 : 0;
        if (from) mark[v] = 2u;
    }
}

// The chunks of the long rows to search from: as meshccl_scc_colour_back.
template <typename I, typename J>
__global__ void meshccl_scc_back_rows(const long long* __restrict__ rptr,
                                      const J* __restrict__ ridx, const I* __restrict__ rep,
                                      const I* __restrict__ colour, volatile unsigned* mark,
                                      const I* __restrict__ hv, const I* __restrict__ ch,
                                      const unsigned* __restrict__ ck, long long chunks,
                                      const unsigned char* __restrict__ go, int* changed) {
    using namespace meshccl::strong;
    for (long long i = thread_id(); i < chunks; i += thread_count()) {
        const I h = ch[i];
        if (!go[h]) continue;
        const I v = hv[h];
        const I c = colour[v];
        const long long b = rptr[v] + (long long)ck[i] * CHUNK;
        const long long e1 = min(b + CHUNK, rptr[v + 1]);
        bool reached = false;
        for (long long e = b; e < e1; ++e) {
            const J w = ridx[e];
            if (mark[w] == 0u && rep[w] < 0 && colour[w] == c) {
                mark[w] = 1u;
                reached = true;
            }
        }
        if (reached) *changed = 1;
    }
}

// The round's components: each reached vertex joins its root's (the vertex
// of its colour's priority); the vertices left are counted (remaining,
// zeroed by the host).
template <typename I>
__global__ void meshccl_scc_colour_done(const unsigned* __restrict__ mark,
                                        const I* __restrict__ colour, I* rep, I n,
                                        unsigned long long a_inv, unsigned long long b,
                                        unsigned long long* remaining) {
    using namespace meshccl::strong;
    unsigned long long left = 0;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        if (rep[v] >= 0) continue;
        if (mark[v]) {
            rep[v] = (I)vertex_of(colour[v], a_inv, b, n);
        } else {
            ++left;
        }
    }
    for (int off = 16; off; off >>= 1) left += __shfl_down_sync(meshccl::strong::FULL, left, off);
    if ((threadIdx.x & 31) == 0 && left) atomicAdd(remaining, left);
}

// Numbering: low[r] = the smallest vertex of representative r's component
// (low filled with n before) ...  The lanes of a warp hold consecutive
// vertices, and most vertices of a giant component share one
// representative: __match_any_sync groups the lanes by representative and
// only the lowest lane of a group (its smallest vertex) tries the atomic,
// and only when it would lower low[r] (low only falls, so a stale read
// costs at most a needless atomic) -- not millions of atomics on one word.
template <typename I>
__global__ void meshccl_scc_min(const I* __restrict__ rep, I* low, I n) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    // warp-uniform loop: every lane of a warp runs the same iterations
    for (long long base = thread_id() - lane; base < (long long)n; base += thread_count()) {
        const long long v = base + lane;
        const I r = v < (long long)n ? rep[v] : (I)-1;
        const unsigned same = __match_any_sync(FULL, r);
        if (r >= 0 && lane == __ffs(same) - 1 && (I)v < ((volatile I*)low)[r])
            atomicMin(low + r, (I)v);
    }
}

// ... then every vertex points at it (a star whose root is that vertex).
template <typename I>
__global__ void meshccl_scc_point(I* rep, const I* __restrict__ low, I n) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        rep[v] = low[rep[v]];
    }
}

// Symmetric input (before any step; meshccl/_gpu/strong.py): every stored
// (w, u) also stored as (u, w) makes the strong components the weak ones,
// which the weak path finds in a few passes whatever the diameter (a mesh
// stored both ways took 3,200 forward-backward levels).  Row u of the
// transpose lists u's in-neighbours; the graph is symmetric exactly when
// each of them is also in row u of the graph.  Thread per vertex: a vertex
// whose in- and out-degree differ, or whose row is longer than max_row
// (the scan is in x out entries), or one in-neighbour missing from its row
// clears sym[0]; threads stop early once it is clear.  The test is exact
// where it says yes; a symmetric graph with repeated entries or long rows
// may be told no, and then runs the steps below as any other graph.
template <typename J>
__global__ void meshccl_scc_symmetric(const long long* __restrict__ fptr,
                                      const J* __restrict__ fidx,
                                      const long long* __restrict__ rptr,
                                      const J* __restrict__ ridx, long long n, long long max_row,
                                      unsigned* sym) {
    using namespace meshccl::strong;
    for (long long u = thread_id(); u < n; u += thread_count()) {
        if (*(volatile unsigned*)sym == 0u) return;
        const long long fb = fptr[u], fe = fptr[u + 1], rb = rptr[u], re = rptr[u + 1];
        bool ok = fe - fb == re - rb && fe - fb <= max_row;
        for (long long k = rb; ok && k < re; ++k) {
            const J w = ridx[k];
            ok = false;
            for (long long j = fb; j < fe; ++j)
                if (fidx[j] == w) {
                    ok = true;
                    break;
                }
        }
        if (!ok) {
            *sym = 0u;
            return;
        }
    }
}

// Paths of (1,1) vertices (before any step; meshccl/_gpu/strong_paths.py).
// A vertex whose out-neighbours other than itself are one vertex s (however
// often stored) and whose in-neighbours other than itself are one vertex p
// lies on a path u -> a1 -> ... -> ak -> w of such vertices or on a cycle
// of them; the host contracts each path to the edge u -> w.  This kernel
// gives each vertex its one out-neighbour (succ) and its one in-neighbour
// (pred): the vertex, -1 when there is none, -2 when there are several.
// Thread per vertex; a row is read only until a second distinct neighbour
// shows, so a hub costs two or three loads, not its degree.
template <typename J>
__device__ __forceinline__ long long only_neighbour(const long long* __restrict__ ptr,
                                                    const J* __restrict__ idx, long long v) {
    long long one = -1;
    for (long long e = ptr[v], end = ptr[v + 1]; e < end; ++e) {
        const long long w = (long long)idx[e];
        if (w == v || w == one) continue;
        if (one >= 0) return -2;
        one = w;
    }
    return one;
}

template <typename I, typename J>
__global__ void meshccl_scc_path_links(const long long* __restrict__ fptr,
                                       const J* __restrict__ fidx,
                                       const long long* __restrict__ rptr,
                                       const J* __restrict__ ridx, I n, I* __restrict__ succ,
                                       I* __restrict__ pred) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < (long long)n; v += thread_count()) {
        succ[v] = (I)only_neighbour(fptr, fidx, v);
        pred[v] = (I)only_neighbour(rptr, ridx, v);
    }
}

// One round of the paths' pointer jumping (meshccl/_gpu/strong_paths.py:
// jump) over the active places act[0..na): each place i moves its pointer
// last[i] to last[last[i]] and takes low[i] = min(low[i], low[last[i]]),
// reading the round's values from (last_a, low_a) and writing them to
// (last_b, low_b), so that every place reads what the others held before
// the round (on a cycle of path vertices low must be the smallest place of
// the stretch its pointer passed).  A place whose new pointer rests on its
// path's last vertex (after[] < 0 there) has arrived: it writes both
// buffers, which keep its final values from then on, and more[j] = 0;
// else more[j] = 1; *n_arrived counts the places at 0.  An arrived place
// may stay in act (the host compacts act only once half of it has
// arrived): a round leaves its values as they are.  (A place that arrives lies on a path, never on a
// cycle, and only its last[] is read by others: an old or a new value
// both point further along the same path.)  Thread per active place.
template <typename T>
__global__ void meshccl_scc_path_jump(const long long* __restrict__ act, long long na,
                                      const T* __restrict__ after, T* last_a, T* low_a,
                                      T* __restrict__ last_b, T* __restrict__ low_b,
                                      unsigned char* __restrict__ more,
                                      unsigned long long* n_arrived) {
    using namespace meshccl::strong;
    const int lane = threadIdx.x & 31;
    // warp-uniform loop: the warp counts its arrived places with one atomic
    for (long long base = thread_id() - lane; base < na; base += thread_count()) {
        const long long j = base + lane;
        bool arrived = false;
        if (j < na) {
            const long long i = act[j];
            const T t = last_a[i];
            const T to = last_a[t];
            const T lo = low_a[t] < low_a[i] ? low_a[t] : low_a[i];
            last_b[i] = to;
            low_b[i] = lo;
            arrived = after[to] < 0;
            if (arrived) {
                last_a[i] = to;
                low_a[i] = lo;
            }
            more[j] = arrived ? 0 : 1;
        }
        const unsigned done = __ballot_sync(FULL, arrived);
        if (lane == 0 && done) atomicAdd(n_arrived, (unsigned long long)__popc(done));
    }
}

// The contracted graph's rows (meshccl/_gpu/strong_paths.py: contract): row
// i is row kept[i] of the graph with each entry w replaced by end[w] -- w
// itself for a kept vertex, its path's end for a path vertex, -1 for a
// vertex on a cycle of path vertices -- entries at -1 or at the row's own
// vertex dropped, each written as at[end[w]], the end's number among the
// kept vertices.  meshccl_scc_path_degree counts each row's entries
// (deg[i + 1]), meshccl_scc_path_fill writes them from the row offsets of
// those counts, in the row's order: thread per kept vertex, reading only
// the kept rows, where array operations over every stored entry read and
// compacted all m of them several times.
template <typename J>
__global__ void meshccl_scc_path_degree(const long long* __restrict__ fptr,
                                        const J* __restrict__ fidx,
                                        const long long* __restrict__ kept, long long q,
                                        const long long* __restrict__ end,
                                        long long* __restrict__ deg) {
    using namespace meshccl::strong;
    for (long long i = thread_id(); i < q; i += thread_count()) {
        const long long v = kept[i];
        long long c = 0;
        for (long long e = fptr[v], stop = fptr[v + 1]; e < stop; ++e) {
            const long long t = end[fidx[e]];
            c += t >= 0 && t != v;
        }
        deg[i + 1] = c;
    }
}

template <typename J>
__global__ void meshccl_scc_path_fill(const long long* __restrict__ fptr,
                                      const J* __restrict__ fidx,
                                      const long long* __restrict__ kept, long long q,
                                      const long long* __restrict__ end,
                                      const long long* __restrict__ at,
                                      const long long* __restrict__ indptr, J* __restrict__ out) {
    using namespace meshccl::strong;
    for (long long i = thread_id(); i < q; i += thread_count()) {
        const long long v = kept[i];
        long long o = indptr[i];
        for (long long e = fptr[v], stop = fptr[v + 1]; e < stop; ++e) {
            const long long t = end[fidx[e]];
            if (t >= 0 && t != v) out[o++] = (J)at[t];
        }
    }
}

// Pieces made of cycles (meshccl/_gpu/strong.py: cycle_pieces): each vertex
// follows the first entry of its row (a vertex without one stays put), and
// every cycle of that one-successor graph is a cycle of the graph.  Pointer
// jumping finds the cycles: pair[2 v] is the vertex 2^r steps on from v,
// pair[2 v + 1] the smallest vertex of those steps; a round reads one pair
// array and writes the other (each vertex reads the values of the round
// before), the two values of a vertex side by side so that the jump's
// random read is one memory sector, not two.  meshccl_scc_cycle_init writes
// the first step; meshccl_scc_cycle_jump is one round.  Thread per vertex.
template <typename I, typename J>
__global__ void meshccl_scc_cycle_init(const long long* __restrict__ fptr,
                                       const J* __restrict__ fidx, long long n,
                                       I* __restrict__ pair) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < n; v += thread_count()) {
        const long long b = fptr[v];
        const long long s = fptr[v + 1] > b ? (long long)fidx[b] : v;
        pair[2 * v] = (I)s;
        pair[2 * v + 1] = (I)(s < v ? s : v);
    }
}

template <typename I>
__global__ void meshccl_scc_cycle_jump(const I* __restrict__ a, I* __restrict__ b, long long n) {
    using namespace meshccl::strong;
    for (long long v = thread_id(); v < n; v += thread_count()) {
        const long long t = (long long)a[2 * v];
        const I far = a[2 * t], low = a[2 * t + 1], mine = a[2 * v + 1];
        b[2 * v] = far;
        b[2 * v + 1] = low < mine ? low : mine;
    }
}

// Pieces joined by mutual edges (meshccl/_gpu/strong.py: mutual_pieces).
// An edge u -> w whose reverse w -> u is also stored puts u and w in one
// component, and so does every chain of such edges: the weak components of
// the mutual edges (the pieces) lie inside strong components.  Contracting
// each piece to one vertex keeps every path between pieces, so the strong
// components of the quotient graph, each piece expanded, are the graph's.
// A road network whose streets are mostly two-way becomes a few percent of
// its vertices, and the long searches of its giant component a few levels.
// meshccl_scc_mutual counts each vertex's mutual entries (a self-loop is
// none), meshccl_scc_mutual_fill writes them at the row offsets of those
// counts: thread per vertex, both rows scanned only when neither holds more
// than max_row entries (a longer row counts as no mutual edge, which keeps
// the result exact -- a piece may then split -- and symmetric).
template <typename J>
__device__ __forceinline__ bool mutual_entry(const long long* __restrict__ fptr,
                                             const J* __restrict__ fidx, long long u, long long w,
                                             long long max_row) {
    if (w == u) return false;
    const long long wb = fptr[w], we = fptr[w + 1];
    if (we - wb > max_row) return false;
    for (long long j = wb; j < we; ++j)
        if ((long long)fidx[j] == u) return true;
    return false;
}

template <typename J>
__global__ void meshccl_scc_mutual(const long long* __restrict__ fptr, const J* __restrict__ fidx,
                                   long long n, long long max_row,
                                   long long* __restrict__ count) {
    using namespace meshccl::strong;
    for (long long u = thread_id(); u < n; u += thread_count()) {
        const long long b = fptr[u], e = fptr[u + 1];
        long long c = 0;
        if (e - b <= max_row)
            for (long long k = b; k < e; ++k) c += mutual_entry(fptr, fidx, u, (long long)fidx[k], max_row);
        count[u] = c;
    }
}

template <typename J>
__global__ void meshccl_scc_mutual_fill(const long long* __restrict__ fptr,
                                        const J* __restrict__ fidx, long long n, long long max_row,
                                        const long long* __restrict__ mptr, J* __restrict__ midx) {
    using namespace meshccl::strong;
    for (long long u = thread_id(); u < n; u += thread_count()) {
        const long long b = fptr[u], e = fptr[u + 1];
        if (e - b > max_row) continue;
        long long at = mptr[u];
        for (long long k = b; k < e; ++k) {
            const J w = fidx[k];
            if (mutual_entry(fptr, fidx, u, (long long)w, max_row)) midx[at++] = w;
        }
    }
}

// The quotient graph's rows: meshccl_scc_quotient_degree counts, for each
// piece, the entries of its vertices' rows that lead to another piece
// (deg[piece + 1], atomics), and meshccl_scc_quotient_scatter writes each
// such entry's piece at its row's cursor (the rows' starts, advanced by
// atomics).  Thread per vertex.
template <typename I, typename J>
__global__ void meshccl_scc_quotient_degree(const long long* __restrict__ fptr,
                                            const J* __restrict__ fidx,
                                            const I* __restrict__ piece, long long n,
                                            unsigned long long* __restrict__ deg) {
    using namespace meshccl::strong;
    for (long long u = thread_id(); u < n; u += thread_count()) {
        const I p = piece[u];
        unsigned long long c = 0;
        for (long long k = fptr[u], e = fptr[u + 1]; k < e; ++k) c += piece[fidx[k]] != p;
        if (c) atomicAdd(deg + (long long)p + 1, c);
    }
}

template <typename I, typename J>
__global__ void meshccl_scc_quotient_scatter(const long long* __restrict__ fptr,
                                             const J* __restrict__ fidx,
                                             const I* __restrict__ piece, long long n,
                                             unsigned long long* __restrict__ cursor,
                                             J* __restrict__ out) {
    using namespace meshccl::strong;
    for (long long u = thread_id(); u < n; u += thread_count()) {
        const I p = piece[u];
        for (long long k = fptr[u], e = fptr[u + 1]; k < e; ++k) {
            const I q = piece[fidx[k]];
            if (q != p) out[atomicAdd(cursor + (long long)p, 1ull)] = (J)q;
        }
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
template __global__ void meshccl_scc_mutual<int>(const long long*, const int*, long long,
                                                 long long, long long*);
template __global__ void meshccl_scc_mutual<long long>(const long long*, const long long*,
                                                       long long, long long, long long*);
template __global__ void meshccl_scc_mutual_fill<int>(const long long*, const int*, long long,
                                                      long long, const long long*, int*);
template __global__ void meshccl_scc_mutual_fill<long long>(const long long*, const long long*,
                                                            long long, long long,
                                                            const long long*, long long*);
template __global__ void meshccl_scc_cycle_init<int, int>(const long long*, const int*, long long,
                                                         int*);
template __global__ void meshccl_scc_cycle_init<int, long long>(const long long*, const long long*,
                                                               long long, int*);
template __global__ void meshccl_scc_cycle_init<long long, long long>(const long long*,
                                                                     const long long*, long long,
                                                                     long long*);
template __global__ void meshccl_scc_cycle_jump<int>(const int*, int*, long long);
template __global__ void meshccl_scc_cycle_jump<long long>(const long long*, long long*, long long);
template __global__ void meshccl_scc_path_jump<int>(const long long*, long long, const int*, int*,
                                                    int*, int*, int*, unsigned char*,
                                                    unsigned long long*);
template __global__ void meshccl_scc_path_jump<long long>(const long long*, long long,
                                                          const long long*, long long*, long long*,
                                                          long long*, long long*, unsigned char*,
                                                          unsigned long long*);
template __global__ void meshccl_scc_path_degree<int>(const long long*, const int*,
                                                      const long long*, long long,
                                                      const long long*, long long*);
template __global__ void meshccl_scc_path_degree<long long>(const long long*, const long long*,
                                                            const long long*, long long,
                                                            const long long*, long long*);
template __global__ void meshccl_scc_path_fill<int>(const long long*, const int*, const long long*,
                                                    long long, const long long*, const long long*,
                                                    const long long*, int*);
template __global__ void meshccl_scc_path_fill<long long>(const long long*, const long long*,
                                                          const long long*, long long,
                                                          const long long*, const long long*,
                                                          const long long*, long long*);
template __global__ void meshccl_scc_symmetric<int>(const long long*, const int*, const long long*,
                                                    const int*, long long, long long, unsigned*);
template __global__ void meshccl_scc_symmetric<long long>(const long long*, const long long*,
                                                          const long long*, const long long*,
                                                          long long, long long, unsigned*);
// Every instantiation meshccl/_gpu/strong.py can ask for: I in {int, long
// long}, J in {int, long long} with J at least as wide as I.
#define MESHCCL_SCC_IJ(I, J)                                                                       \
    template __global__ void meshccl_scc_trim<I, J>(const long long*, const J*, const long long*,  \
                                                    const J*, I*, I, int*, unsigned long long*);   \
    template __global__ void meshccl_scc_peel_init<I, J>(                                          \
        const long long*, const J*, const long long*, const J*, const I*, I, unsigned long long*,  \
        long long*, unsigned long long*);                                                          \
    template __global__ void meshccl_scc_peel<I, J>(                                               \
        const long long*, const J*, const long long*, const J*, I*, unsigned long long*,           \
        long long*, long long, unsigned long long*);                                               \
    template __global__ void meshccl_scc_expand<I, J>(                                             \
        const long long*, const J*, const long long*, const J*, unsigned*, const I*,               \
        const unsigned*, const I*, const unsigned*, const unsigned long long*, I*, unsigned*, I*,  \
        unsigned*, unsigned long long*, unsigned long long*, unsigned long long*);                 \
    template __global__ void meshccl_scc_colour_push<I, J>(                                        \
        const long long*, const J*, const I*, I*, volatile unsigned char*, I, long long, int*);    \
    template __global__ void meshccl_scc_colour_back<I, J>(                                        \
        const long long*, const J*, const I*, const I*, volatile unsigned*, I, long long, int*);   \
    template __global__ void meshccl_scc_push_rows<I, J>(                                          \
        const long long*, const J*, const I*, I*, volatile unsigned char*, const I*, const I*,     \
        const unsigned*, long long, const I*, const unsigned char*, int*);                         \
    template __global__ void meshccl_scc_back_rows<I, J>(                                          \
        const long long*, const J*, const I*, const I*, volatile unsigned*, const I*, const I*,    \
        const unsigned*, long long, const unsigned char*, int*);                         \
    template __global__ void meshccl_scc_path_links<I, J>(const long long*, const J*,             \
                                                          const long long*, const J*, I, I*, I*); \
    template __global__ void meshccl_scc_quotient_degree<I, J>(const long long*, const J*,        \
                                                               const I*, long long,              \
                                                               unsigned long long*);             \
    template __global__ void meshccl_scc_quotient_scatter<I, J>(                                   \
        const long long*, const J*, const I*, long long, unsigned long long*, J*);
#define MESHCCL_SCC_I(I)                                                                           \
    template __global__ void meshccl_scc_score<I>(const long long*, const long long*, const I*, I, \
                                                  long long*, unsigned*);                          \
    template __global__ void meshccl_scc_seed<I>(const long long*, const long long*,               \
                                                 const long long*, const I*, unsigned*, I*,        \
                                                 unsigned*, I*, unsigned*, unsigned long long*);   \
    template __global__ void meshccl_scc_fwbw<I>(const unsigned*, const long long*, I*, I);        \
    template __global__ void meshccl_scc_colour_init<I>(const I*, I*, unsigned char*, unsigned*,   \
                                                        I, unsigned long long,                     \
                                                        unsigned long long);                       \
    template __global__ void meshccl_scc_colour_roots<I>(const I*, const I*, unsigned*, I,         \
                                                         unsigned long long, unsigned long long);  \
    template __global__ void meshccl_scc_colour_done<I>(const unsigned*, const I*, I*, I,          \
                                                        unsigned long long, unsigned long long,    \
                                                        unsigned long long*);                      \
    template __global__ void meshccl_scc_min<I>(const I*, I*, I);                                  \
    template __global__ void meshccl_scc_push_snap<I>(const I*, long long, const I*, const I*, I*, \
                                                      I*, unsigned char*);                         \
    template __global__ void meshccl_scc_back_snap<I>(const I*, long long, unsigned*,              \
                                                      unsigned char*);                             \
    template __global__ void meshccl_scc_point<I>(I*, const I*, I);
MESHCCL_SCC_IJ(int, int)
MESHCCL_SCC_IJ(int, long long)
MESHCCL_SCC_IJ(long long, long long)
MESHCCL_SCC_I(int)
MESHCCL_SCC_I(long long)
#endif
