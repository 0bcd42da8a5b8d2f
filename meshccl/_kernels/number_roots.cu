// number_roots.cu -- labels from a union-find forest whose roots are
// smallest indices.
//
// Input: a parent array P in which background elements hold -1 and every
// other element points, directly or through a chain, at the smallest index
// of its component (unionfind.cuh keeps that invariant).  Output: label 0
// for background and 1..N for components, numbered in the order of their
// smallest index -- for a raster image, the order of each component's
// first cell, as skimage does; for a graph (base -1), SciPy's 0..N-1.
// The general lattice path (general.cu), Hawick's iterative methods
// (iterative.cu), graphs (graph.cu) and the launch plans of small images
// end here; plain images take number_pieces.cu instead.
//
// 1. meshccl_flatten: every element replaces its parent by its root (find
//    with path halving, so threads walking one long chain shorten it for
//    each other).  Each warp covers 32 consecutive elements and stores one
//    32-bit word of "is a root" flags (a ballot) and the word's population
//    count.
// 2. An inclusive prefix sum of the per-word counts (n/32 entries) says
//    how many roots lie in words 0..w: meshccl_scan_block, one block, for
//    short arrays (one launch, no temporary memory); for long ones three
//    launches, meshccl_word_sums (a block's sum per 1024 words),
//    meshccl_scan_block over those sums and meshccl_rank_words.
// 3. meshccl_relabel: the label of an element is the rank of its root
//    (numbering.cuh, rank_of).  It reads only P[i] and the two short
//    arrays, so it writes its result over P in place.
//    meshccl_relabel_counted (label(..., return_counts=True)) also counts
//    each label's cells as it writes them.
//    meshccl_relabel_first (label(..., numbering='first-cell')) writes
//    root + 1 instead of the rank: the roots are first cells, so the label
//    is one more than the flat index of the component's first cell.  The
//    rank words are not read; the host still scans them when it wants N.

#include "launch.cuh"
#include "numbering.cuh"
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

// Step 3 without the ranks (same arguments as meshccl_relabel, base
// ignored): every cell gets its root + 1, the background 0.
template <typename I>
__global__ void meshccl_relabel_first(I* P, I n, const unsigned* __restrict__ bits,
                                      const I* __restrict__ incl, I base, long long* count,
                                      I words) {
    meshccl::grid_entry();  // (launch.cuh)
    const long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (gi == 0 && count != nullptr) *count = (long long)(words ? incl[words - 1] : (I)0);
    if (gi >= (long long)n) return;
    const I r = P[(I)gi];
    P[(I)gi] = r < 0 ? (I)0 : r + (I)1;
}

// meshccl_relabel for images (base 0), also counting each label's cells
// into counts (N + 1 rows, zeroed; row 0, the background, is left to the
// host): a warp's 32 consecutive cells, lanes of one label adding once
// (numbering.cuh, add_counts).  No early return: every lane takes part.
template <typename I>
__global__ void meshccl_relabel_counted(I* P, I n, const unsigned* __restrict__ bits,
                                        const I* __restrict__ incl,
                                        unsigned long long* __restrict__ counts) {
    meshccl::grid_entry();  // (launch.cuh)
    const long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    I label = 0;
    if (gi < (long long)n) {
        const I r = P[(I)gi];
        label = r < 0 ? (I)0 : rank_of(r, bits, incl);
        P[(I)gi] = label;
    }
    add_counts(counts, label, label > 0 ? 1u : 0u);
}

// scan_in_block as a kernel of one block of 1024 threads, for short arrays
// (the host picks it) and for the block sums of long ones.
template <typename I>
__global__ void __launch_bounds__(1024) meshccl_scan_block(const I* __restrict__ counts,
                                                           I* __restrict__ incl, I words) {
    meshccl::grid_entry();  // (launch.cuh)
    scan_in_block(counts, incl, words);
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

#ifdef MESHCCL_INSTANTIATE_ALL
#define MESHCCL_NUMBER_ROOTS(I)                                                                  \
    template __global__ void meshccl_scan_block<I>(const I*, I*, I);                             \
    template __global__ void meshccl_flatten<I>(I*, I, unsigned*, I*);                           \
    template __global__ void meshccl_relabel<I>(I*, I, const unsigned*, const I*, I, long long*, \
                                                I);                                              \
    template __global__ void meshccl_relabel_first<I>(I*, I, const unsigned*, const I*, I,      \
                                                      long long*, I);                            \
    template __global__ void meshccl_relabel_counted<I>(I*, I, const unsigned*, const I*,        \
                                                        unsigned long long*);                    \
    template __global__ void meshccl_rank_words<I>(const unsigned*, const I*, I, I*);            \
    template __global__ void meshccl_word_sums<I>(const unsigned*, I, I*);
MESHCCL_NUMBER_ROOTS(int)
MESHCCL_NUMBER_ROOTS(long long)
#endif
