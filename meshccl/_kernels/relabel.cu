// relabel.cu -- the one relabel path: union-find forest -> labels 1..N.
//
// Input: a parent array P in which background elements hold -1 and every
// other element points, directly or through a chain, at the smallest index
// of its component (see unionfind.cuh).  Output: label 0 for background and
// 1..N for components, numbered in the order of their smallest index -- for
// a raster image, the order of each component's first cell, as skimage does.
//
// 1. meshccl_flatten: every element replaces its parent by its root (find
//    with path halving, so threads walking one long chain shorten it for
//    each other).  Each
//    warp covers 32 consecutive elements and stores one 32-bit word of
//    "is a root" flags (a ballot) and the word's population count.
// 2. An inclusive prefix sum of the per-word counts (a short array: n/32
//    entries) says how many roots lie in words 0..w: meshccl_scan_block, one
//    block, for short arrays (small images: one launch, no temporary
//    memory); for long ones three launches, meshccl_word_sums (a block's
//    sum per 1024 words), meshccl_scan_block over those sums and
//    meshccl_rank_words.  (CuPy's cumsum did the long ones until
//    2026-11-23; it was the largest item of a graph call's host time.)
// 3. meshccl_relabel: the label of an element is the rank of its root r,
//        incl[r / 32] - popcount(bits[r / 32] >> (r % 32)) + 1,
//    i.e. the number of roots before r, plus one.  It reads only P[i] and
//    the two short arrays, so it may write its result over P in place.
//
// Graphs, batches, lattices with features and Hawick's methods finish
// through these kernels.  Plain 2-D / 3-D images (mesh23.cu) know more
// about their forest and take a shorter road, "pieces", with the same rank
// formula and the same numbering:
//
// 4. meshccl_piece_roots: one thread per word, or two, of the piece-root
//    bits A.
//    Each root hooked by the border kernel (bit array H) is pointed
//    straight at its final root, so every piece root is now at most one
//    step from its root.  The walks publish their progress as they go (a
//    hooked root's parent follows its own walk up), so that walks up a long
//    chain of hooked roots -- a spiral arm crossing every tile row -- jump
//    along each other's (pointer doubling) instead of each taking every
//    step; each hooked root has its own walk, which leaves it at the root.
//    H is overwritten with A & ~H, the roots of the whole forest.
// 5. In the same kernel, before the walks (the roots do not depend on
//    them): each block's prefix sums of its words' root counts, and the
//    block that takes the last ticket scans the blocks' totals, so that
//    the rank formula adds the blocks before to the word's sum in its
//    block (rank_of with block_incl).  No block waits for another.
// 6. meshccl_label_cells: every cell that is not a piece root reads its
//    parent p (a piece root) and p's parent (the root) and writes the rank
//    of the root over itself.  Piece roots are left alone, because other
//    cells are still reading them.
// 7. meshccl_label_pieces: one thread per word of A, or two, labels those
//    words' piece roots, which nobody reads any more.
// So the forest is never flattened in a separate pass: a cell's labels are
// read once and written once.
//
// Plain 2-D images, and 3-D volumes of one-byte cells, take runs2d.cu /
// runs3d.cu, whose forest has run starts as nodes: steps 4 and 5 as above,
// then step 7 (every piece root gets its label), then
// meshccl_runs2d_label in place of step 6: four or eight lanes per row of
// a tile resolve each run once, from its start's P (or slot) in one or two
// loads, into a table in shared memory, and write the row's labels from it.

#include "launch.cuh"
#include "unionfind.cuh"

template <typename I>
__global__ void meshccl_flatten(I* P, I n, unsigned* __restrict__ bits, I* __restrict__ counts) {
    meshccl::grid_entry();  // (launch.cuh)
    const long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool in = gi < (long long)n;
    bool is_root = false;
    if (in) {
        const I i = (I)gi;
        const I p = P[i];
        if (p >= 0) {
            const I r = meshccl::find_final(P, i);
            if (r != p) P[i] = r;
            is_root = r == i;
        }
    }
    const unsigned b = __ballot_sync(0xffffffffu, is_root);
    if ((threadIdx.x & 31) == 0 && in) {
        bits[gi >> 5] = b;
        counts[gi >> 5] = (I)__popc(b);
    }
}

// The label of root r: the number of roots up to and including r (the
// rank formula above).  block_incl (the pieces path): incl counts only
// within each block of MESHCCL_PIECE_BLOCK words, and block_incl[b] is
// the roots in blocks 0..b; null: incl counts from word 0.
#define MESHCCL_PIECE_BLOCK 1024
template <typename I>
__device__ __forceinline__ I rank_of(I r, const unsigned* __restrict__ bits,
                                     const I* __restrict__ incl,
                                     const I* __restrict__ block_incl = nullptr) {
    const I w = r >> 5, b = w / MESHCCL_PIECE_BLOCK;
    const I before = block_incl != nullptr && b > 0 ? block_incl[b - 1] : (I)0;
    return before + incl[w] - (I)__popc(bits[w] >> (r & 31)) + 1;
}

// base: 0 for images (background 0, components 1..N), -1 for graphs
// (SciPy's 0..N-1; graphs have no background).  count (null: not wanted):
// N, stored once, for a caller that reads it with other values in one
// transfer.
template <typename I>
__global__ void meshccl_relabel(I* P, I n, const unsigned* __restrict__ bits,
                                const I* __restrict__ incl, I base, long long* count, I words) {
    meshccl::grid_entry();  // (launch.cuh)
    const long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (gi == 0 && count != nullptr) *count = (long long)(words ? incl[words - 1] : (I)0);
    if (gi >= (long long)n) return;
    const I i = (I)gi;
    const I r = P[i];
    if (r < 0) { P[i] = 0; return; }
    P[i] = rank_of(r, bits, incl) + base;
}

// Inclusive prefix sum of x over a block of up to 1024 threads (warp
// shuffles, then one warp over the warp totals).  Every thread must call it.
template <typename I>
__device__ __forceinline__ I block_inclusive_scan(I x) {
    __shared__ I warp_sum[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int d = 1; d < 32; d <<= 1) {
        const I y = __shfl_up_sync(0xffffffffu, x, d);
        if (lane >= d) x += y;
    }
    if (lane == 31) warp_sum[warp] = x;
    __syncthreads();
    if (warp == 0) {
        I y = lane < (int)(blockDim.x >> 5) ? warp_sum[lane] : (I)0;
        for (int d = 1; d < 32; d <<= 1) {
            const I z = __shfl_up_sync(0xffffffffu, y, d);
            if (lane >= d) y += z;
        }
        warp_sum[lane] = y;
    }
    __syncthreads();
    return (warp ? warp_sum[warp - 1] : (I)0) + x;
}

// Inclusive prefix sum of `words` counts by one block: each thread sums a
// contiguous chunk, the block scans the chunk sums, and each thread writes
// its chunk's running sums.  Every thread of the block must call it.  The
// counts are read through L2 (other blocks of the same grid may have just
// written them: meshccl_piece_roots).
template <typename I>
__device__ __forceinline__ void scan_in_block(const I* counts, I* __restrict__ incl, I words) {
    const int t = threadIdx.x;
    const I per = (words + (I)blockDim.x - 1) / (I)blockDim.x;
    const I lo = min((I)t * per, words), hi = min(lo + per, words);
    I sum = 0;
    for (I w = lo; w < hi; ++w) sum += __ldcg(counts + w);
    I run = block_inclusive_scan(sum) - sum;  // everything before this chunk
    for (I w = lo; w < hi; ++w) {
        run += __ldcg(counts + w);
        incl[w] = run;
    }
}

// scan_in_block as a kernel of one block of 1024 threads, for short arrays
// (the host picks it) and for the block sums of long ones.
template <typename I>
__global__ void __launch_bounds__(1024) meshccl_scan_block(const I* __restrict__ counts,
                                                           I* __restrict__ incl, I words) {
    meshccl::grid_entry();  // (launch.cuh)
    scan_in_block(counts, incl, words);
}

// ---- the pieces path (mesh23.cu) -------------------------------------------
// (Blocks of MESHCCL_PIECE_BLOCK threads, one word each, in step 4: see
// rank_of.)
// Piece roots of one word handled together in steps 4 and 7 (their loads
// overlap); 2 for 64-bit labels, where 4 made step 4 spill registers.
// (benchmarks/experiments/piece_groups.py times other sizes.)
#ifndef MESHCCL_ROOTS_GROUP_32
#define MESHCCL_ROOTS_GROUP_32 4
#endif
#ifndef MESHCCL_LABEL_GROUP_32
#define MESHCCL_LABEL_GROUP_32 4
#endif
// Step 4's walks publish their progress (each hooked root's parent moves up
// as its walk does), so that walks up a long chain of hooked roots jump
// along each other's (pointer doubling) instead of each taking every step.
#ifndef MESHCCL_PIECE_JUMP
#define MESHCCL_PIECE_JUMP 1
#endif
#define MESHCCL_PIECE_GROUP (sizeof(I) == 8 ? 2 : MESHCCL_ROOTS_GROUP_32)
#define MESHCCL_LABEL_GROUP (sizeof(I) == 8 ? 2 : MESHCCL_LABEL_GROUP_32)

// Steps 4 and 5, a thread per W consecutive words (a block per
// MESHCCL_PIECE_BLOCK words, 1024 / W threads).  With W = 1 a 4096^2 image's
// 524 288 threads took two waves of 1024-thread blocks; with W = 2 they fit
// in one (benchmarks/NOTES.md, 2026-11-26).  (Four threads per word, a byte
// each, cut the spiral's 0.072 ms to 0.053 but made every other case
// slower, up to 2.5x.)  The words' roots are A & ~H whatever the walks
// find, so the counting does not wait for them: each block scans its
// words' counts (incl: within the block) and stores its total in sums; the
// block that finishes last (a ticket from `counter`, which it then puts
// back to 0 for the next call) scans the totals into block_incl.  No block
// waits for another.  (Until 2026-11-24 the block totals were scanned and
// every word's prefix completed by two more launches.)
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
#pragma unroll
        for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g) {
            x[g] = (I)-1;
            if (h) {
                x[g] = (w0 << 5) + (I)(__ffsll(h) - 1);
                h &= h - 1ull;
            }
            r[g] = x[g];
        }
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
#if MESHCCL_PIECE_JUMP
                // publish the progress: a walk that reaches x[g] later
                // jumps straight to p (from the second step on)
                if (r[g] != x[g]) P[x[g]] = p[g];
#endif
                r[g] = p[g];
                moved = true;
            }
        }
#if !MESHCCL_PIECE_JUMP
#pragma unroll
        for (int g = 0; g < MESHCCL_PIECE_GROUP; ++g) {  // the path now points at r
            for (I c = x[g]; c > r[g];) {
                const I p = __ldcg(P + c);
                if (p <= r[g]) break;
                P[c] = r[g];
                c = p;
            }
        }
#endif
    }
}

// sums[b]: roots in words b * PIECE_BLOCK .. (b + 1) * PIECE_BLOCK - 1 of
// the bit array `roots` (the first of the three launches of a long scan:
// then meshccl_scan_block over the sums and meshccl_rank_words).
template <typename I>
__global__ void __launch_bounds__(MESHCCL_PIECE_BLOCK) meshccl_word_sums(
        const unsigned* __restrict__ roots, I words, I* __restrict__ sums) {
    meshccl::grid_entry();  // (launch.cuh)
    const I w = (I)blockIdx.x * MESHCCL_PIECE_BLOCK + threadIdx.x;
    const I total = block_inclusive_scan(w < words ? (I)__popc(roots[w]) : (I)0);
    if (threadIdx.x == blockDim.x - 1) sums[blockIdx.x] = total;
}

// incl[w]: roots in words 0..w, from the scanned block sums (a block of
// blockDim.x words per sum).
template <typename I>
__global__ void __launch_bounds__(MESHCCL_PIECE_BLOCK) meshccl_rank_words(
        const unsigned* __restrict__ roots, const I* __restrict__ sums_incl, I words,
        I* __restrict__ incl) {
    meshccl::grid_entry();  // (launch.cuh)
    const I w = (I)blockIdx.x * blockDim.x + threadIdx.x;
    const I x = block_inclusive_scan(w < words ? (I)__popc(roots[w]) : (I)0);
    if (w < words) incl[w] = (blockIdx.x ? sums_incl[blockIdx.x - 1] : (I)0) + x;
}

// 16-byte vectors of labels: 4 int32 or 2 int64 cells per load and store.
template <typename I> struct Vec16;
template <> struct Vec16<int> { typedef int4 type; };
template <> struct Vec16<long long> { typedef longlong2 type; };

// Each thread takes MESHCCL_CELLS_PER_THREAD cells: 16-byte vectors of
// consecutive cells, a block width of vectors apart, so that its chains of
// dependent loads (P[i], P[p], the rank words) overlap and every load and
// store of P moves 16 bytes.  A vector's cells share one word of A (a
// vector never straddles 32 cells).  Piece roots keep their value: the
// vector store writes back what it read there, which nobody changes until
// meshccl_label_pieces.  A tail shorter than a vector, and a P that is not
// 16-byte aligned, go cell by cell.
#define MESHCCL_CELLS_PER_THREAD 8
template <typename I>
__global__ void __launch_bounds__(256) meshccl_label_cells(I* P, I n,
                                                           const unsigned* __restrict__ A,
                                                           const unsigned* __restrict__ roots,
                                                           const I* __restrict__ incl,
                                                           const I* __restrict__ block_incl) {
    meshccl::grid_entry();  // (launch.cuh)
    constexpr int V = 16 / sizeof(I), G = MESHCCL_CELLS_PER_THREAD / V;
    typedef typename Vec16<I>::type VT;
    const bool aligned = ((unsigned long long)P & 15ull) == 0ull;
    const long long vbase = (long long)blockIdx.x * blockDim.x * G + threadIdx.x;
    I p[G][V];
    bool todo[G][V], whole[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
        const long long first = (vbase + (long long)g * blockDim.x) * V;
        whole[g] = aligned && first + V <= (long long)n;
        if (whole[g]) {
            const VT x = *reinterpret_cast<const VT*>(P + first);
            memcpy(p[g], &x, sizeof(VT));
        } else {
#pragma unroll
            for (int j = 0; j < V; ++j) p[g][j] = first + j < (long long)n ? P[(I)(first + j)] : (I)0;
        }
        const unsigned a = first < (long long)n ? A[(I)(first >> 5)] : 0u;
#pragma unroll
        for (int j = 0; j < V; ++j)
            // piece roots are left to meshccl_label_pieces
            todo[g][j] = first + j < (long long)n &&
                         (p[g][j] < 0 || !((a >> ((first + j) & 31)) & 1u));
    }
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int j = 0; j < V; ++j)
            if (todo[g][j] && p[g][j] >= 0) p[g][j] = P[p[g][j]];  // the root (p itself if p is one)
#pragma unroll
    for (int g = 0; g < G; ++g) {
        const long long first = (vbase + (long long)g * blockDim.x) * V;
#pragma unroll
        for (int j = 0; j < V; ++j)
            if (todo[g][j])
                p[g][j] = p[g][j] < 0 ? (I)0 : rank_of(p[g][j], roots, incl, block_incl);
        if (whole[g]) {
            VT x;
            memcpy(&x, p[g], sizeof(VT));
            *reinterpret_cast<VT*>(P + first) = x;
        } else {
#pragma unroll
            for (int j = 0; j < V; ++j)
                if (todo[g][j]) P[(I)(first + j)] = p[g][j];
        }
    }
}

// Step 7, a thread per W consecutive words (W = 2: one wave of threads
// where a thread per word took two, as in meshccl_piece_roots).
template <typename I, int W>
__global__ void meshccl_label_pieces(I* P, const unsigned* __restrict__ A,
                                     const unsigned* __restrict__ roots,
                                     const I* __restrict__ incl,
                                     const I* __restrict__ block_incl, I words) {
    meshccl::grid_entry();  // (launch.cuh)
    static_assert(W == 1 || W == 2, "one or two words a thread");
    const I w0 = ((I)blockIdx.x * blockDim.x + (I)threadIdx.x) * W;
    if (w0 >= words) return;
    unsigned long long h = A[w0];
    if (W == 2 && w0 + 1 < words) h |= (unsigned long long)A[w0 + 1] << 32;
    // MESHCCL_LABEL_GROUP piece roots at a time: all their loads, then all
    // their stores (one at a time, each store waited for the next load).
    // (Ranking the roots of the whole forest straight from this word's
    // prefix, without loading their P, measured slower: benchmarks/NOTES.md.)
    while (h) {
        I x[MESHCCL_LABEL_GROUP], r[MESHCCL_LABEL_GROUP];
#pragma unroll
        for (int g = 0; g < MESHCCL_LABEL_GROUP; ++g) {
            x[g] = (I)-1;
            if (h) {
                x[g] = (w0 << 5) + (I)(__ffsll(h) - 1);
                h &= h - 1ull;
            }
        }
#pragma unroll
        for (int g = 0; g < MESHCCL_LABEL_GROUP; ++g)
            if (x[g] >= 0) r[g] = P[x[g]];
#pragma unroll
        for (int g = 0; g < MESHCCL_LABEL_GROUP; ++g)
            if (x[g] >= 0) P[x[g]] = rank_of(r[g], roots, incl, block_incl);
    }
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

// Step 6 for the run kernels (runs2d.cu, runs3d.cu), after step 7: every
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
// stores them.  (Until 2026-11-26 each lane took its cells one by one with
// a predicated load per cell and step and handed the last run's label on
// by a shuffle: about 310 warp instructions a warp on blobs 4096^2, 40
// registers; this form has 30-32 and was 2.7 us faster there, 12 us on
// percolation 8192^2, 46 us on blobs 512^3: benchmarks/NOTES.md.  Handing
// a row's run starts out over its lanes by rank, nth_bit, measured in
// between.)  (Loading the roots' bits and prefix sums here instead, to
// rank the roots that step 7 would have labelled, made this pass 1.4x
// slower: NOTES.md.)  Piece roots are written with the label they hold,
// so a lane that reads one while its owner writes it reads the same value
// either way; a run start that is not a piece root is read only by its own
// lane, before the warp's barrier, and written after it.
// R: tile rows per lane group, whose chains of loads step together; W:
// cells per lane (4: eight lanes per row, a vector store each; 8: four
// lanes per row, two vector stores each).  meshccl/_gpu/mesh23.py picks
// both.  SL: after runs2d.cu's tile kernel with slots (without, and in
// 3-D, none of the slot code is compiled: it cost images without slots
// 1-2 us as a runtime branch).
template <typename I, int R, int W, bool SL>
__global__ void __launch_bounds__(256) meshccl_runs2d_label(
        I* P, const unsigned* __restrict__ F, const unsigned* __restrict__ S,
        const unsigned* __restrict__ A, I ny, I nx, I words, const I* __restrict__ Q,
        const unsigned short* __restrict__ O, int slots) {
    meshccl::grid_entry();  // (launch.cuh)
    constexpr int V = 16 / sizeof(I), LPR = 32 / W;  // lanes per tile row
    constexpr int ROWS = 32 / LPR, STRIDE = 32 + LPR;  // (the pad spreads the rows over the banks)
    static_assert(W == 4 || W == 8, "four or eight cells a lane");
    typedef typename Vec16<I>::type VT;
    __shared__ I table[256 / 32][ROWS * STRIDE];
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31, q = lane % LPR, c0 = W * q;
    I* tab = table[threadIdx.x >> 5] + (lane / LPR) * STRIDE;  // this lane's row's
    const I ntx = (nx + 31) >> 5;
    const long long groups = (long long)ntx * ny, per = (groups + R - 1) / R;
    // The group takes tile rows g0, g0 + per, ... (a warp: four consecutive
    // tile rows each time, y = g / ntx, bx = g % ntx), R chains at once.
    I rowbase[R], slot[R];
    int width[R];
    unsigned f[R], s[R], a[R], o[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
        const long long g = t / LPR + k * per;
        f[k] = s[k] = a[k] = 0u;
        o[k] = 0xffffu;
        width[k] = 0;
        rowbase[k] = 0;
        slot[k] = 0;
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
}

#ifdef MESHCCL_INSTANTIATE_ALL
template __global__ void meshccl_scan_block<int>(const int*, int*, int);
template __global__ void meshccl_scan_block<long long>(const long long*, long long*, long long);
template __global__ void meshccl_flatten<int>(int*, int, unsigned*, int*);
template __global__ void meshccl_flatten<long long>(long long*, long long, unsigned*, long long*);
template __global__ void meshccl_relabel<int>(int*, int, const unsigned*, const int*, int,
                                              long long*, int);
template __global__ void meshccl_relabel<long long>(long long*, long long, const unsigned*,
                                                    const long long*, long long, long long*,
                                                    long long);
#define MESHCCL_PIECES_W(I, W)                                                                   \
    template __global__ void meshccl_piece_roots<I, W>(I*, const unsigned*, unsigned*, I, I*, I*, \
                                                       I*, unsigned*);                           \
    template __global__ void meshccl_label_pieces<I, W>(I*, const unsigned*, const unsigned*,    \
                                                        const I*, const I*, I);
#define MESHCCL_PIECES(I)                                                                        \
    MESHCCL_PIECES_W(I, 1)                                                                       \
    MESHCCL_PIECES_W(I, 2)                                                                       \
    template __global__ void meshccl_rank_words<I>(const unsigned*, const I*, I, I*);            \
    template __global__ void meshccl_word_sums<I>(const unsigned*, I, I*);                       \
    template __global__ void meshccl_label_cells<I>(I*, I, const unsigned*, const unsigned*,     \
                                                    const I*, const I*);
MESHCCL_PIECES(int)
MESHCCL_PIECES(long long)
#define MESHCCL_RUNS_LABEL_SL(I, R, W, SL)                                                    \
    template __global__ void meshccl_runs2d_label<I, R, W, SL>(I*, const unsigned*,            \
        const unsigned*, const unsigned*, I, I, I, const I*, const unsigned short*, int);
#define MESHCCL_RUNS_LABEL(I, R, W) MESHCCL_RUNS_LABEL_SL(I, R, W, true)                       \
    MESHCCL_RUNS_LABEL_SL(I, R, W, false)
MESHCCL_RUNS_LABEL(int, 1, 4)
MESHCCL_RUNS_LABEL(int, 1, 8)
MESHCCL_RUNS_LABEL(int, 2, 8)
MESHCCL_RUNS_LABEL(int, 4, 8)
MESHCCL_RUNS_LABEL(long long, 1, 4)
MESHCCL_RUNS_LABEL(long long, 2, 4)
MESHCCL_RUNS_LABEL(long long, 4, 4)
#endif
