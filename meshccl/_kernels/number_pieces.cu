// number_pieces.cu -- labels for the run chains (runs2d.cu, runs3d.cu,
// plain and lattice forms), which know more about their forest than a bare
// parent array and number it without flattening it first.
//
// After their tile and border kernels every run start points at
// its piece root -- the first cell of its component within a tile -- or,
// where a border find halved it, at a piece root further up.  Every piece
// root is marked in the bit array A; those the border kernels hooked under
// another root are also marked in H.  Labels are ranks of roots, as in
// number_roots.cu (numbering.cuh, rank_of), so both paths give the same
// numbering: raster order of each component's first cell.
//
// 1. meshccl_piece_roots: one thread per W words of A.  Each hooked root
//    (bit of H) is pointed straight at its final root, so every piece root
//    is then at most one step from its root.  The walks publish their
//    progress as they go (a hooked root's parent follows its own walk up),
//    so walks up a long chain of hooked roots -- a spiral arm crossing
//    every tile row -- jump along each other's (pointer doubling) instead
//    of each taking every step.  H is overwritten with A & ~H, the roots of
//    the whole forest.
// 2. In the same kernel, before the walks (the roots do not depend on
//    them): each block's prefix sums of its words' root counts; the block
//    that takes the last ticket scans the blocks' totals, so the rank adds
//    the blocks before to the word's sum within its block.  No block waits
//    for another.
// 3. meshccl_label_pieces: every piece root gets its label.
// 4. The label pass, meshccl_label_runs (run starts are the nodes): lanes
//    resolve each run of a tile row once, from its start's P (or the
//    tile's slot) in one or two loads, into a table in shared memory, and
//    write the row's labels from it.
// So the forest is never flattened in a separate pass: each cell's label
// is read once and written once.
//
// label(..., return_statistics=True) takes the _stats form of
// meshccl_label_runs: the lane that resolves a run also adds its cells to
// the per-label table of meshccl.measure (counts, boxes, coordinate sums;
// measure.cuh): the run's cells are the foreground bits from its start to
// the next start, so its count, ends and coordinate sum on the last axis
// come from popcounts of that mask, and its row gives the other
// coordinates.  Each tile row's background cells go to label 0.  A block
// gathers its runs in one shared-memory table (Slots) and hands it to the
// global table when half full and at the end; the grid is a fixed number
// of blocks that step over the rows, so a label that covers the image
// costs one global update a block.  The labels are never read again.
//
// label(..., numbering='first-cell') takes the _first forms of steps 3 and
// 4 (meshccl_label_pieces_first; meshccl_label_runs copies): a root's
// label is its own index + 1 instead of its rank (roots are first cells),
// so the rank words are not read.  meshccl_label_runs is the same in both
// numberings: it copies what the piece roots hold.
//
// The Swendsen-Wang step of meshccl.sim.Ising (h = 0) takes the _spins
// forms of steps 3 and 4 after the roots kernel: a cluster's new spin is
// +1 when word 0 of the Philox call (philox.cuh) whose counter is its
// first-cell label (root index + 1; tag, step and key as the simulator
// gives them) is below 2**31, else -1.  Roots are first cells, so the
// draw depends on the cluster alone, not on how the forest was built.
// meshccl_label_pieces_spins writes each piece root's sign (+-1) where the
// first-cell form writes the label, one Philox call per piece root (far
// fewer than runs or cells); meshccl_label_runs_spins resolves the runs as
// the label pass does, and writes one byte of spin per cell where the
// label pass writes four of label and a flip kernel would read those four
// and write the byte: the labels are never written.

#include "launch.cuh"
#include "measure.cuh"
#include "numbering.cuh"
#include "philox.cuh"
#include "unionfind.cuh"

// Piece roots of one word handled together in steps 1 and 3 (their loads
// overlap); 2 for 64-bit labels, where 4 spills registers
// (docs/decisions.md: "piece roots and hooked roots").
#define MESHCCL_ROOTS_GROUP_32 4
#define MESHCCL_LABEL_GROUP_32 4
#define MESHCCL_PIECE_GROUP (sizeof(I) == 8 ? 2 : MESHCCL_ROOTS_GROUP_32)
#define MESHCCL_LABEL_GROUP (sizeof(I) == 8 ? 2 : MESHCCL_LABEL_GROUP_32)

// The next G set bits of h (bit b: cell w0 * 32 + b) into x, taken off h;
// -1 where h has none left.
template <int G, typename I>
__device__ __forceinline__ void take_bits(unsigned long long& h, I w0, I (&x)[G]) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
        x[g] = (I)-1;
        if (h) {
            x[g] = (w0 << 5) + (I)(__ffsll(h) - 1);
            h &= h - 1ull;
        }
    }
}

// Steps 1 and 2, a thread per W consecutive words (a block per
// MESHCCL_PIECE_BLOCK words, 1024 / W threads; W = 2 fits a 4096^2 image's
// words in one wave of threads).  The words' roots are A & ~H whatever the
// walks find, so the counting does not wait for them: each block scans its
// words' counts (incl: within the block) and stores its total in sums; the
// block that finishes last (a ticket from `counter`, which it then puts
// back to 0 for the next call) scans the totals into block_incl.
template <typename I, int W>
__global__ void __launch_bounds__(MESHCCL_PIECE_BLOCK / W) meshccl_piece_roots(
        I* P, const unsigned* __restrict__ A, unsigned* __restrict__ H, I words,
        I* __restrict__ incl, I* sums, I* __restrict__ block_incl, unsigned* counter) {
    meshccl::grid_entry();  // (launch.cuh)
    static_assert(W == 1 || W == 2, "one or two words a thread");
    const I w0 = (I)blockIdx.x * MESHCCL_PIECE_BLOCK + (I)threadIdx.x * W;
    unsigned hooked[W], roots[W];
    int count = 0;
#pragma unroll
    for (int k = 0; k < W; ++k) {
        const I w = w0 + k;
        hooked[k] = w < words ? H[w] : 0u;
        roots[k] = w < words ? A[w] & ~hooked[k] : 0u;
        count += __popc(roots[k]);
    }
    // the counts first (they do not depend on the walks)
    I upto = block_inclusive_scan((I)count) - (I)count;
#pragma unroll
    for (int k = 0; k < W; ++k) {
        const I w = w0 + k;
        upto += (I)__popc(roots[k]);
        if (w < words) {
            H[w] = roots[k];
            incl[w] = upto;
        }
    }
    if (threadIdx.x == blockDim.x - 1) sums[blockIdx.x] = upto;
    __shared__ bool last;
    __threadfence();  // this block's stores, visible before its ticket
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == gridDim.x - 1;
    __syncthreads();
    if (last) {  // every other block's total is stored: scan them
        __threadfence();
        scan_in_block(sums, block_incl, (I)gridDim.x);
        if (threadIdx.x == 0) *counter = 0u;
    }
    // then the walk of each hooked root, MESHCCL_PIECE_GROUP at a time (over
    // the thread's words): their walks step together, so that a thread has
    // that many loads in flight
    unsigned long long h = hooked[0];
    if (W == 2) h |= (unsigned long long)hooked[W - 1] << 32;
    while (h) {
        I x[MESHCCL_PIECE_GROUP], r[MESHCCL_PIECE_GROUP];
        take_bits(h, w0, x);
#pragma unroll
        for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g) r[g] = x[g];
        for (bool moved = true; moved;) {
            moved = false;
            I p[MESHCCL_PIECE_GROUP];
            // the loads first, in flight together (a store between them
            // would keep them apart: P may alias)
#pragma unroll
            for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g)
                p[g] = r[g] < 0 ? r[g] : __ldcg(P + r[g]);
#pragma unroll
            for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g) {
                if (p[g] == r[g]) continue;
                // publish the progress: a walk that reaches x[g] later
                // jumps straight to p (from the second step on)
                if (r[g] != x[g]) P[x[g]] = p[g];
                r[g] = p[g];
                moved = true;
            }
        }
    }
}

// 16-byte vectors of labels: 4 int32 or 2 int64 cells per load and store.
template <typename I> struct Vec16;
template <> struct Vec16<int> { typedef int4 type; };
template <> struct Vec16<long long> { typedef longlong2 type; };

// The Swendsen-Wang draw of the _spins forms: the Philox words of the step
// (counter (label, tag, t0, t1), key (k0, k1)) and where the spins go;
// sign(label) is +1 when the call's word 0 is below 2**31, else -1.
struct SpinDraw {
    signed char* out;
    unsigned tag, t0, t1, k0, k1;

    __device__ __forceinline__ int sign(unsigned label) const {
        unsigned r[4];
        meshccl_philox(label, tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, r);
        return r[0] < 0x80000000u ? 1 : -1;
    }
};

// Step 3, a thread per W consecutive words (W = 2: one wave of threads
// where a thread per word took two, as in meshccl_piece_roots).
// RANK false (meshccl_label_pieces_first): the label is the root's index + 1.
// SP (meshccl_label_pieces_spins): the sign of the root's first-cell label.
template <typename I, int W, bool RANK, bool SP = false>
__device__ __forceinline__ void label_pieces(I* P, const unsigned* __restrict__ A,
                                             const unsigned* __restrict__ roots,
                                             const I* __restrict__ incl,
                                             const I* __restrict__ block_incl, I words,
                                             const SpinDraw* spin = nullptr) {
    static_assert(W == 1 || W == 2, "one or two words a thread");
    const I w0 = ((I)blockIdx.x * blockDim.x + (I)threadIdx.x) * W;
    if (w0 >= words) return;
    unsigned long long h = A[w0];
    if (W == 2 && w0 + 1 < words) h |= (unsigned long long)A[w0 + 1] << 32;
    // MESHCCL_LABEL_GROUP piece roots at a time: all their loads, then all
    // their stores (one at a time, each store waited for the next load).
    while (h) {
        I x[MESHCCL_LABEL_GROUP], r[MESHCCL_LABEL_GROUP];
        take_bits(h, w0, x);
#pragma unroll
        for (int g = 0; g < MESHCCL_LABEL_GROUP; ++g)
            if (x[g] >= 0) r[g] = P[x[g]];
#pragma unroll
        for (int g = 0; g < MESHCCL_LABEL_GROUP; ++g)
            if (x[g] >= 0)
                P[x[g]] = SP ? (I)spin->sign((unsigned)(r[g] + (I)1))
                             : RANK ? rank_of(r[g], roots, incl, block_incl) : r[g] + (I)1;
    }
}

template <typename I, int W>
__global__ void meshccl_label_pieces(I* P, const unsigned* __restrict__ A,
                                     const unsigned* __restrict__ roots,
                                     const I* __restrict__ incl,
                                     const I* __restrict__ block_incl, I words) {
    meshccl::grid_entry();  // (launch.cuh)
    label_pieces<I, W, true>(P, A, roots, incl, block_incl, words);
}

// Step 3 of the Swendsen-Wang step: each piece root's new spin (SpinDraw).
template <typename I, int W>
__global__ void meshccl_label_pieces_spins(I* P, const unsigned* __restrict__ A, I words,
                                           unsigned tag, unsigned t0, unsigned t1, unsigned k0,
                                           unsigned k1) {
    static_assert(sizeof(I) == 4, "first-cell labels are Philox counters: 32 bits");
    meshccl::grid_entry();  // (launch.cuh)
    const SpinDraw draw = {nullptr, tag, t0, t1, k0, k1};
    label_pieces<I, W, false, true>(P, A, nullptr, nullptr, nullptr, words, &draw);
}

template <typename I, int W>
__global__ void meshccl_label_pieces_first(I* P, const unsigned* __restrict__ A,
                                           const unsigned* __restrict__ roots,
                                           const I* __restrict__ incl,
                                           const I* __restrict__ block_incl, I words) {
    meshccl::grid_entry();  // (launch.cuh)
    label_pieces<I, W, false>(P, A, roots, incl, block_incl, words);
}

// The largest x over the warp's lanes (all of them must call it).
__device__ __forceinline__ unsigned warp_max(unsigned x) {
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(0xffffffffu, x);
#else
    for (int d = 16; d; d >>= 1) x = max(x, __shfl_xor_sync(0xffffffffu, x, d));
    return x;
#endif
}

// The table a statistics label pass fills (meshccl_label_runs_stats), as
// the host lays it out in device memory (meshccl/_gpu/fused_stats.py):
// eight-byte words [count, box, csum, ndim, slots, rstride[LEAD],
// shape[LEAD]].  count: (rows) cells; box: (rows, 2 * ndim) [lo_0, hi_0,
// ...]; csum: (rows, ndim) coordinate sums (measure.cu's global table,
// meshccl_measure_init's starting values).  A row of the label image (all
// axes but the last) has coordinate (row / rstride[d]) % shape[d] on axis
// d < ndim - 1; the last axis is the image's x.
struct RunStats {
    static constexpr int LEAD = 3;  // axes before the last (ndim <= 4)
    unsigned long long* count;
    unsigned long long* box;
    unsigned long long* csum;
    int ndim, slots;
    unsigned long long rstride[LEAD], shape[LEAD];

    static __device__ RunStats load(const unsigned long long* __restrict__ d) {
        RunStats s;
        s.count = (unsigned long long*)d[0];
        s.box = (unsigned long long*)d[1];
        s.csum = (unsigned long long*)d[2];
        s.ndim = (int)d[3];
        s.slots = (int)d[4];
#pragma unroll
        for (int k = 0; k < LEAD; ++k) {
            s.rstride[k] = d[5 + k];
            s.shape[k] = d[5 + LEAD + k];
        }
        return s;
    }

    // The coordinates of image row `row` on the axes before the last.
    __device__ void row_coordinates(unsigned long long row, unsigned long long* c) const {
#pragma unroll
        for (int d = 0; d < LEAD; ++d)
            c[d] = d < ndim - 1 ? (row / rstride[d]) % shape[d] : 0ull;
    }

    // A run (or a tile row's background) a lane holds back: the cells of one
    // label it met in a row of the image, merged with the next ones of the
    // same label (a lane's rows are far apart, but a large component covers
    // many of them), added to the block's table only when a run of another
    // label comes or the pass ends.
    struct Open {
        unsigned long long label, sum[LEAD + 1];
        unsigned cnt, lo[LEAD + 1], hi[LEAD + 1];
    };

    // The cells of mask m (bits of a tile row whose first cell has x = x0,
    // on a row with coordinates c) of `label`, into the lane's open record
    // (the record first added to the table if it holds another label).
    __device__ void record(meshccl_measure::Slots<unsigned>& tab, Open& o,
                           unsigned long long label, const unsigned long long* c,
                           unsigned long long x0, unsigned m) const {
        if (!m) return;
        if (o.cnt && o.label != label) flush(tab, o);
        const unsigned len = (unsigned)__popc(m);
        const unsigned lo = (unsigned)x0 + (unsigned)(__ffs(m) - 1);
        const unsigned hi = (unsigned)x0 + (unsigned)(31 - __clz(m));
        // the bit positions' sum, one popcount per bit of the position
        const unsigned long long bits = (unsigned long long)(
            __popc(m & 0xaaaaaaaau) + 2 * __popc(m & 0xccccccccu) + 4 * __popc(m & 0xf0f0f0f0u)
            + 8 * __popc(m & 0xff00ff00u) + 16 * __popc(m & 0xffff0000u));
        if (!o.cnt) {
            o.label = label;
#pragma unroll
            for (int d = 0; d <= LEAD; ++d) {
                o.lo[d] = ~0u;
                o.hi[d] = 0u;
                o.sum[d] = 0ull;
            }
        }
        o.cnt += len;
        const int last = ndim - 1;
#pragma unroll
        for (int d = 0; d <= LEAD; ++d) {
            if (d < last) {
                o.lo[d] = min(o.lo[d], (unsigned)c[d]);
                o.hi[d] = max(o.hi[d], (unsigned)c[d]);
                o.sum[d] += c[d] * len;
            } else if (d == last) {
                o.lo[d] = min(o.lo[d], lo);
                o.hi[d] = max(o.hi[d], hi);
                o.sum[d] += (unsigned long long)len * x0 + bits;
            }
        }
    }

    // The open record added to the block's slot of its label, or where the
    // label finds none within PROBES probes, to the global table; then empty.
    __device__ void flush(meshccl_measure::Slots<unsigned>& tab, Open& o) const {
        if (!o.cnt) return;
        const unsigned long long label = o.label;
        const int s = slots ? tab.find(label) : -1;
        if (s >= 0) {
            atomicAdd(&tab.cnt[s], o.cnt);
#pragma unroll
            for (int d = 0; d <= LEAD; ++d)
                if (d < ndim) {
                    atomicMin(&tab.lo[d * slots + s], o.lo[d]);
                    atomicMax(&tab.hi[d * slots + s], o.hi[d]);
                    atomicAdd(&tab.csum[d * slots + s], o.sum[d]);
                }
        } else {
            atomicAdd(&count[label], (unsigned long long)o.cnt);
#pragma unroll
            for (int d = 0; d <= LEAD; ++d)
                if (d < ndim) {
                    atomicMin(&box[label * 2 * ndim + 2 * d], (unsigned long long)o.lo[d]);
                    atomicMax(&box[label * 2 * ndim + 2 * d + 1], (unsigned long long)o.hi[d]);
                    atomicAdd(&csum[label * ndim + d], o.sum[d]);
                }
        }
        o.cnt = 0u;
    }

    // Every claimed slot added to the global table and set back, by all the
    // block's threads together.
    __device__ void hand_over(meshccl_measure::Slots<unsigned>& tab) const {
        for (int s = threadIdx.x; s < slots; s += blockDim.x) {
            const unsigned long long l = tab.key[s];
            if (l == meshccl_measure::NO_LABEL) continue;
            atomicAdd(&count[l], (unsigned long long)tab.cnt[s]);
            for (int d = 0; d < ndim; ++d) {
                atomicMin(&box[l * 2 * ndim + 2 * d], (unsigned long long)tab.lo[d * slots + s]);
                atomicMax(&box[l * 2 * ndim + 2 * d + 1],
                          (unsigned long long)tab.hi[d * slots + s]);
                atomicAdd(&csum[l * ndim + d], tab.csum[d * slots + s]);
            }
            tab.reset(s, ndim, false);
        }
        __syncthreads();
        if (threadIdx.x == 0) *tab.used = 0u;
        __syncthreads();
    }
};

// Step 4 for the run kernels (runs2d.cu, runs3d.cu), after step 3: every
// piece root already holds its label.  32 / W lanes per tile row (word bx *
// rows + y of the bit arrays F and S; a volume's rows count over all its
// planes), W cells each, so that a warp writes W tile rows side by side:
// 512 (W = 4) or 1024 (W = 8) consecutive bytes of int32 labels.
//
// First each lane resolves the runs that start among its own W cells, two
// at a time (their loads overlap), as many turns as the warp's busiest
// lane has run starts: a run start that is a piece root (bit of A) holds
// its label; any other holds a piece root (its own piece's, or one further
// up after a border find halved it), and that one's value is the label.
// (A 2-D tile with slots, runs2d.cu, has the piece roots of its run starts
// in Q instead: the start's rank in its row after the row's first slot, O;
// 0xffff there, or slots = 0: in P.)  At most two dependent loads.  The
// label goes to the warp's table in shared memory, at the run's rank in
// its row.  Then each lane reads its cells' labels from the table (a cell's
// run is the last run start at or before it; background gets 0) and
// stores them (docs/decisions.md: "label pass lanes").  Piece roots are
// written with the label they hold,
// so a lane that reads one while its owner writes it reads the same value
// either way; a run start that is not a piece root is read only by its own
// lane, before the warp's barrier, and written after it.
// R: tile rows per lane group, whose chains of loads step together; W:
// cells per lane (4: eight lanes per row, a vector store each; 8: four
// lanes per row, two vector stores each); meshccl/_gpu/image_plain.py
// picks both.  SL: after runs2d.cu's tile kernel with slots (without, and
// in 3-D, none of the slot code is compiled).  C (meshccl_label_runs_counted):
// also count the cells of each run, by the lane that resolves its label:
// the foreground cells from its start up to the next run start (a band's
// bottom row may have holes in its runs), one add per run, numbering.cuh's
// add_counts, through the block's table of hot labels ``block``
// (BlockCounts); and the background cells of each tile row, by the row's
// first lane, summed there too.
template <typename I, int R, int W, bool SL, bool C, bool ST = false, bool SP = false>
__device__ __forceinline__ void label_runs(
        I* P, const unsigned* __restrict__ F, const unsigned* __restrict__ S,
        const unsigned* __restrict__ A, I ny, I nx, I words, const I* __restrict__ Q,
        const unsigned short* __restrict__ O, int slots, unsigned long long* counts,
        BlockCounts<I>* block, const long long t, const RunStats* st = nullptr,
        meshccl_measure::Slots<unsigned>* tab_st = nullptr, RunStats::Open* open = nullptr,
        const SpinDraw* spin = nullptr) {
    constexpr int V = 16 / sizeof(I), LPR = 32 / W;  // lanes per tile row
    constexpr int ROWS = 32 / LPR, STRIDE = 32 + LPR;  // (the pad spreads the rows over the banks)
    static_assert(W == 4 || W == 8, "four or eight cells a lane");
    typedef typename Vec16<I>::type VT;
    __shared__ I table[256 / 32][ROWS * STRIDE];
    const int lane = threadIdx.x & 31, q = lane % LPR, c0 = W * q;
    I* tab = table[threadIdx.x >> 5] + (lane / LPR) * STRIDE;  // this lane's row's
    const I ntx = (nx + 31) >> 5;
    I yrow[R];  // (ST: each chain's image row)
    const long long groups = (long long)ntx * ny, per = (groups + R - 1) / R;
    // The group takes tile rows g0, g0 + per, ... (a warp: four consecutive
    // tile rows each time, y = g / ntx, bx = g % ntx), R chains at once.
    I rowbase[R], slot[R];
    int width[R];
    unsigned background = 0u;  // (C: the background cells of this lane's rows)
    unsigned f[R], s[R], a[R], o[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
        const long long g = t / LPR + k * per;
        f[k] = s[k] = a[k] = 0u;
        o[k] = 0xffffu;
        width[k] = 0;
        rowbase[k] = 0;
        slot[k] = 0;
        yrow[k] = 0;
        // (groups past `per`, in the grid's last block, would take rows that
        // chain k + 1 of another group takes: a row must have one owner)
        if (g < groups && t / LPR < per) {
            const I y = (I)(g / ntx), bx = (I)g - y * ntx;
            f[k] = F[bx * ny + y];
            s[k] = S[bx * ny + y];
            if (SL && slots > 0) {  // (2-D only: y is the image's row)
                o[k] = O[bx * ny + y];
                slot[k] = ((y >> 5) * ntx + bx) * (I)slots + (I)o[k];
            }
            rowbase[k] = y * nx + bx * 32;
            yrow[k] = y;
            width[k] = (int)min((I)32, nx - bx * 32);
            const I w = rowbase[k] >> 5;
            const int sh = (int)(rowbase[k] & 31);
            a[k] = A[w] >> sh;
            if (sh && width[k] > 32 - sh && w + 1 < words) a[k] |= A[w + 1] << (32 - sh);
        }
    }
#pragma unroll
    for (int k = 0; k < R; ++k) {
        const bool useq = SL && o[k] != 0xffffu;  // this row's piece roots in its slots
        if (C && q == 0) {  // (a row no group owns has width 0)
            const unsigned in = width[k] >= 32 ? 0xffffffffu : (1u << width[k]) - 1u;
            background += (unsigned)width[k] - (unsigned)__popc(f[k] & in);
        }
        unsigned long long coord[RunStats::LEAD];  // (ST: the row's other coordinates)
        if (ST && width[k] > 0) {
            const unsigned in = width[k] >= 32 ? 0xffffffffu : (1u << width[k]) - 1u;
            st->row_coordinates((unsigned long long)yrow[k], coord);
            if (q == 0 && (~f[k] & in))
                st->record(*tab_st, open[1], 0ull, coord,
                           (unsigned long long)(rowbase[k] - yrow[k] * nx), ~f[k] & in);
        }
        unsigned mine = s[k] & (((1u << W) - 1u) << c0);  // the run starts among this lane's cells
        const int rank0 = __popc(s[k] & ((1u << c0) - 1u));  // ... the first one's rank in the row
        const int turns = (int)warp_max((unsigned)__popc(mine));
        for (int n = 0; n < turns; n += 2) {
            int b[2];
            I v[2];
            bool root[2];
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                b[u] = mine ? __ffs(mine) - 1 : -1;
                mine &= mine - 1u;
                root[u] = b[u] >= 0 && ((a[k] >> b[u]) & 1u);
                if (b[u] >= 0) v[u] = (useq && !root[u]) ? Q[slot[k] + rank0 + n + u] : P[rowbase[k] + b[u]];
            }
#pragma unroll
            for (int u = 0; u < 2; ++u)
                if (b[u] >= 0 && !root[u]) v[u] = P[v[u]];
#pragma unroll
            for (int u = 0; u < 2; ++u)
                if (b[u] >= 0) tab[rank0 + n + u] = v[u];
            if (ST) {
                const unsigned in = width[k] >= 32 ? 0xffffffffu : (1u << width[k]) - 1u;
#pragma unroll
                for (int u = 0; u < 2; ++u)
                    if (b[u] >= 0) {
                        // the run's cells: from its start to before the next start
                        const unsigned later = s[k] & ~((2u << b[u]) - 1u);
                        const unsigned before = later ? (later & (0u - later)) - 1u : 0xffffffffu;
                        st->record(*tab_st, open[0], (unsigned long long)v[u], coord,
                                   (unsigned long long)(rowbase[k] - yrow[k] * nx),
                                   f[k] & in & before & ~((1u << b[u]) - 1u));
                    }
            }
            if (C) {  // (every lane: turns is the warp's)
                const unsigned in = width[k] >= 32 ? 0xffffffffu : (1u << width[k]) - 1u;
#pragma unroll
                for (int u = 0; u < 2; ++u) {
                    unsigned cells = 0u;
                    if (b[u] >= 0) {
                        // the run's cells: from its start to before the next start
                        const unsigned later = s[k] & ~((2u << b[u]) - 1u);
                        const unsigned before = later ? (later & (0u - later)) - 1u : 0xffffffffu;
                        cells = __popc(f[k] & in & before & ~((1u << b[u]) - 1u));
                    }
                    add_counts(counts, b[u] >= 0 ? v[u] : (I)0, cells, block);
                }
            }
        }
        __syncwarp();
        // cells c0 .. c0 + W - 1: the run through each is the one of rank
        // (run starts up to it) - 1
        int rank = rank0 - 1;
        I cur = rank >= 0 ? tab[rank] : (I)0;
        I out[W];
#pragma unroll
        for (int j = 0; j < W; ++j) {
            const int c = c0 + j;
            if ((s[k] >> c) & 1u) cur = tab[++rank];
            out[j] = ((f[k] >> c) & 1u) ? cur : (I)0;
        }
        __syncwarp();  // (the table is the next k's)
        if (c0 >= width[k]) continue;
        if (SP) {  // W spins, one byte each (every cell of the lattice is foreground)
            signed char* to = spin->out + rowbase[k] + c0;
            unsigned long long bytes = 0ull;
#pragma unroll
            for (int j = 0; j < W; ++j)
                bytes |= (unsigned long long)(unsigned char)(signed char)out[j] << (8 * j);
            if (c0 + W <= width[k] && ((unsigned long long)to & (W - 1)) == 0ull) {
                if (W == 8)
                    *reinterpret_cast<unsigned long long*>(to) = bytes;
                else
                    *reinterpret_cast<unsigned*>(to) = (unsigned)bytes;
            } else {
#pragma unroll
                for (int j = 0; j < W; ++j)
                    if (c0 + j < width[k]) to[j] = (signed char)(unsigned char)(bytes >> (8 * j));
            }
            continue;
        }
        I* dst = P + rowbase[k] + c0;
        if (c0 + W <= width[k] && ((unsigned long long)dst & 15ull) == 0ull) {
#pragma unroll
            for (int v = 0; v < W / V; ++v) {
                VT x;
                memcpy(&x, out + v * V, sizeof(VT));
                reinterpret_cast<VT*>(dst)[v] = x;
            }
        } else {
#pragma unroll
            for (int j = 0; j < W; ++j)
                if (c0 + j < width[k]) dst[j] = out[j];
        }
    }
    if (C) end_counts(counts, block, background);
}

template <typename I, int R, int W, bool SL>
__global__ void __launch_bounds__(256) meshccl_label_runs(
        I* P, const unsigned* __restrict__ F, const unsigned* __restrict__ S,
        const unsigned* __restrict__ A, I ny, I nx, I words, const I* __restrict__ Q,
        const unsigned short* __restrict__ O, int slots) {
    meshccl::grid_entry();  // (launch.cuh)
    label_runs<I, R, W, SL, false>(P, F, S, A, ny, nx, words, Q, O, slots, nullptr, nullptr,
                                   (long long)blockIdx.x * blockDim.x + threadIdx.x);
}

// meshccl_label_runs after meshccl_label_pieces_spins: every piece root
// holds its cluster's new spin, which the pass writes, a byte a cell, to
// `spins` (every cell is foreground: spins are never background; no slots).
template <typename I, int R, int W>
__global__ void __launch_bounds__(256) meshccl_label_runs_spins(
        I* P, const unsigned* __restrict__ F, const unsigned* __restrict__ S,
        const unsigned* __restrict__ A, I ny, I nx, I words, signed char* __restrict__ spins) {
    meshccl::grid_entry();  // (launch.cuh)
    const SpinDraw draw = {spins, 0u, 0u, 0u, 0u, 0u};
    label_runs<I, R, W, false, false, false, true>(
        P, F, S, A, ny, nx, words, nullptr, nullptr, 0, nullptr, nullptr,
        (long long)blockIdx.x * blockDim.x + threadIdx.x, nullptr, nullptr, nullptr, &draw);
}

// meshccl_label_runs, also counting each label's cells into counts (rows
// 0..N zeroed by meshccl_clear_counts; row 0: the background).
template <typename I, int R, int W, bool SL>
__global__ void __launch_bounds__(256) meshccl_label_runs_counted(
        I* P, const unsigned* __restrict__ F, const unsigned* __restrict__ S,
        const unsigned* __restrict__ A, I ny, I nx, I words, const I* __restrict__ Q,
        const unsigned short* __restrict__ O, int slots, unsigned long long* __restrict__ counts) {
    meshccl::grid_entry();  // (launch.cuh)
    __shared__ BlockCounts<I> block;
    begin_counts(&block);
    label_runs<I, R, W, SL, true>(P, F, S, A, ny, nx, words, Q, O, slots, counts, &block,
                                  (long long)blockIdx.x * blockDim.x + threadIdx.x);
}

// meshccl_label_runs, also filling meshccl.measure's table (counts, boxes,
// coordinate sums) whose description `desc` holds (RunStats): a fixed grid
// of blocks stepping over the lane groups, each block's runs gathered in
// its shared-memory slots (dynamic shared memory: RunStats::slots slots,
// measure.cuh's Slots without intensities).
template <typename I, int R, int W, bool SL>
__global__ void __launch_bounds__(256, 3) meshccl_label_runs_stats(
        I* P, const unsigned* __restrict__ F, const unsigned* __restrict__ S,
        const unsigned* __restrict__ A, I ny, I nx, I words, const I* __restrict__ Q,
        const unsigned short* __restrict__ O, int slots,
        const unsigned long long* __restrict__ desc) {
    using namespace meshccl_measure;
    meshccl::grid_entry();  // (launch.cuh)
    extern __shared__ unsigned long long smem[];
    const RunStats st = RunStats::load(desc);
    Slots<unsigned> tab;
    const int ns = (int)st.slots, nd = (int)st.ndim;
    if (ns) {
        tab.carve(smem, ns, nd, false);
        for (int k = threadIdx.x; k < ns; k += blockDim.x) tab.reset(k, nd, false);
        if (threadIdx.x == 0) *tab.used = 0u;
    }
    __syncthreads();
    // the lane's open records: its runs' and (its rows' first lanes) the background's
    RunStats::Open open[2];
    open[0].cnt = open[1].cnt = 0u;
    // the threads the one-launch form would have: 32 / W a group of R tile rows
    const long long groups = (long long)((nx + 31) >> 5) * ny;
    const long long threads = (groups + R - 1) / R * (32 / W);
    for (long long base = (long long)blockIdx.x * blockDim.x; base < threads;
         base += (long long)gridDim.x * blockDim.x) {
        label_runs<I, R, W, SL, false, true>(P, F, S, A, ny, nx, words, Q, O, slots, nullptr,
                                             nullptr, base + threadIdx.x, &st, &tab, open);
        if (ns) {
            __syncthreads();
            const bool full = *tab.used * 2u > (unsigned)ns;
            __syncthreads();
            if (full) st.hand_over(tab);
        }
    }
    st.flush(tab, open[0]);
    st.flush(tab, open[1]);
    if (ns) {
        __syncthreads();
        st.hand_over(tab);
    }
}

// Before a counted label pass (label(..., return_counts=True)): rows 0..N
// of the count table to zero, N read from `total` (block_incl's last
// entry, which meshccl_piece_roots has written).  The table has a row per
// cell and one more (N is not known on the host when the chain is
// launched); only the rows the labels can reach are written, a grid-stride
// loop over a fixed grid.
template <typename I>
__global__ void __launch_bounds__(256) meshccl_clear_counts(unsigned long long* __restrict__ counts,
                                                            const I* __restrict__ total) {
    meshccl::grid_entry();  // (launch.cuh)
    const long long rows = (long long)*total + 1;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += step)
        counts[r] = 0ull;
}

#ifdef MESHCCL_INSTANTIATE_ALL
#define MESHCCL_PIECES_W(I, W)                                                                   \
    template __global__ void meshccl_piece_roots<I, W>(I*, const unsigned*, unsigned*, I, I*, I*, \
                                                       I*, unsigned*);                           \
    template __global__ void meshccl_label_pieces<I, W>(I*, const unsigned*, const unsigned*,    \
                                                        const I*, const I*, I);                  \
    template __global__ void meshccl_label_pieces_first<I, W>(I*, const unsigned*,               \
                                                              const unsigned*, const I*,         \
                                                              const I*, I);
#define MESHCCL_PIECES(I)                                                                        \
    MESHCCL_PIECES_W(I, 1)                                                                       \
    MESHCCL_PIECES_W(I, 2)                                                                       \
    template __global__ void meshccl_clear_counts<I>(unsigned long long*, const I*);
MESHCCL_PIECES(int)
MESHCCL_PIECES(long long)
#define MESHCCL_LABEL_RUNS_SL(I, R, W, SL)                                                       \
    template __global__ void meshccl_label_runs<I, R, W, SL>(I*, const unsigned*,               \
        const unsigned*, const unsigned*, I, I, I, const I*, const unsigned short*, int);        \
    template __global__ void meshccl_label_runs_counted<I, R, W, SL>(I*, const unsigned*,       \
        const unsigned*, const unsigned*, I, I, I, const I*, const unsigned short*, int,         \
        unsigned long long*);                                                                    \
    template __global__ void meshccl_label_runs_stats<I, R, W, SL>(I*, const unsigned*,         \
        const unsigned*, const unsigned*, I, I, I, const I*, const unsigned short*, int,         \
        const unsigned long long*);
#define MESHCCL_LABEL_RUNS(I, R, W) MESHCCL_LABEL_RUNS_SL(I, R, W, true)                         \
    MESHCCL_LABEL_RUNS_SL(I, R, W, false)
#define MESHCCL_LABEL_RUNS_SPINS(R, W)                                                           \
    template __global__ void meshccl_label_runs_spins<int, R, W>(int*, const unsigned*,         \
        const unsigned*, const unsigned*, int, int, int, signed char*);
template __global__ void meshccl_label_pieces_spins<int, 1>(int*, const unsigned*, int, unsigned,
                                                            unsigned, unsigned, unsigned,
                                                            unsigned);
template __global__ void meshccl_label_pieces_spins<int, 2>(int*, const unsigned*, int, unsigned,
                                                            unsigned, unsigned, unsigned,
                                                            unsigned);
MESHCCL_LABEL_RUNS_SPINS(1, 4)
MESHCCL_LABEL_RUNS_SPINS(1, 8)
MESHCCL_LABEL_RUNS_SPINS(2, 8)
MESHCCL_LABEL_RUNS_SPINS(4, 8)
MESHCCL_LABEL_RUNS(int, 1, 4)
MESHCCL_LABEL_RUNS(int, 1, 8)
MESHCCL_LABEL_RUNS(int, 2, 8)
MESHCCL_LABEL_RUNS(int, 4, 8)
MESHCCL_LABEL_RUNS(long long, 1, 4)
MESHCCL_LABEL_RUNS(long long, 2, 4)
MESHCCL_LABEL_RUNS(long long, 4, 4)
#endif
