// numbering.cuh -- what both numbering paths share: the rank of a root
// among the roots before it, and prefix sums within one block.
//
// A component's label is the rank of its root (its smallest index) among
// all roots: with one "is a root" bit per element packed into 32-bit words
// (bits) and the inclusive prefix sum of the words' population counts
// (incl), the roots up to and including r number
//     incl[r / 32] - popcount(bits[r / 32] >> (r % 32)) + 1
// (the popcount counts r itself and the roots after it in its word): that
// is rank_of below, and the label of r's component.  number_roots.cu and number_pieces.cu both end there.
//
// With label(..., return_counts=True) the kernels that write the final
// labels also count the cells of each label (add_counts below) into an
// int64 table: number_roots.cu's meshccl_relabel_counted,
// number_pieces.cu's meshccl_label_runs_counted and
// meshccl_label_cells_counted.  The two of number_pieces.cu also count
// the background, row 0, a sum per block (add_background below: one
// atomic a block, where one a lane or a warp would queue on one word);
// after meshccl_relabel_counted, whose blocks are many and small, the host
// sets row 0 to the cells left over.

#pragma once
#include "launch.cuh"

// The label of root r: the number of roots up to and including r .  block_incl (the pieces path): incl counts only
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

// counts[0] += n summed over the block: each warp's sum, then one atomic
// from the block's first thread.  Every thread of the block must call it,
// together, at the end of the kernel (it has a barrier).
__device__ __forceinline__ void add_background(unsigned long long* counts, unsigned n) {
    __shared__ unsigned warp_sums[32];
#if __CUDA_ARCH__ >= 800
    n = __reduce_add_sync(0xffffffffu, n);
#else
    for (int d = 16; d > 0; d >>= 1) n += __shfl_xor_sync(0xffffffffu, n, d);
#endif
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = n;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long sum = 0ull;
        for (unsigned w = 0; w < (blockDim.x + 31) / 32; ++w) sum += warp_sums[w];
        if (sum) atomicAdd(counts, sum);
    }
}

// counts[label] += n for each lane's (label, n) (n = 0 or label = 0: nothing
// to add).  Lanes of the warp holding the same label add once, their sum,
// from the first of them (__match_any_sync groups them, __reduce_add_sync
// sums each group), so a label spread over the warp -- a large component,
// a run across lanes -- costs one atomic a warp, not one a lane.  Every
// lane of the warp must call it, together.
template <typename I>
__device__ __forceinline__ void add_counts(unsigned long long* counts, I label, unsigned n) {
#if __CUDA_ARCH__ >= 800
    const I key = n ? label : (I)0;
    const unsigned same = __match_any_sync(0xffffffffu, key);
    const unsigned sum = __reduce_add_sync(same, n);
    if (key > 0 && (int)(threadIdx.x & 31) == __ffs(same) - 1)
        atomicAdd(counts + key, (unsigned long long)sum);
#else
    if (n && label > 0) atomicAdd(counts + label, (unsigned long long)n);
#endif
}
