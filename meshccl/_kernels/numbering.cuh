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
// number_pieces.cu's meshccl_label_runs_counted.  The latter gathers hot
// labels and the background, row 0, per block in shared memory first
// (BlockCounts below: one atomic a block where one a warp would queue on
// one word); after meshccl_relabel_counted, whose blocks are many and
// small, the host sets row 0 to the cells left over.

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

// A block's table of hot labels for the counted label passes of
// number_pieces.cu, in shared memory: MESHCCL_COUNT_SLOTS slots (label,
// cells), a label's slot its value modulo the slots, taken by the first
// label that comes to it (0: free).  A warp's sum for one label of at
// least MESHCCL_COUNT_HOT cells goes there when its slot is free or holds
// it (a shared atomic), anything else straight to the table in global
// memory.  A large component -- one label in every warp of the block --
// then costs one global atomic a block, not one a warp and row, which all
// queue on its one word; small labels, many and each in few warps, keep
// the slots free by going straight out.  The block's background cells
// (row 0, every block's) are summed there too.  end_counts adds the slots
// to the table once every warp is done.
#define MESHCCL_COUNT_SLOTS 128
#define MESHCCL_COUNT_HOT 8u
template <typename I>
struct BlockCounts {
    I label[MESHCCL_COUNT_SLOTS];
    unsigned cells[MESHCCL_COUNT_SLOTS];
    unsigned background;
};

__device__ __forceinline__ int take_slot(int* slot, int label) {
    return atomicCAS(slot, 0, label);
}
__device__ __forceinline__ long long take_slot(long long* slot, long long label) {
    return (long long)atomicCAS(reinterpret_cast<unsigned long long*>(slot), 0ull,
                                (unsigned long long)label);
}

// Every thread of the block, together, before its first add_counts.
template <typename I>
__device__ __forceinline__ void begin_counts(BlockCounts<I>* block) {
    for (int k = threadIdx.x; k < MESHCCL_COUNT_SLOTS; k += blockDim.x) {
        block->label[k] = (I)0;
        block->cells[k] = 0u;
    }
    if (threadIdx.x == 0) block->background = 0u;
    __syncthreads();
}

// Every thread of the block, together, at the end of the kernel: its
// background cells ``n`` summed over the block into row 0, the slots into
// their rows (one global atomic each).
template <typename I>
__device__ __forceinline__ void end_counts(unsigned long long* counts, BlockCounts<I>* block,
                                           unsigned n) {
#if __CUDA_ARCH__ >= 800
    n = __reduce_add_sync(0xffffffffu, n);
#else
    for (int d = 16; d > 0; d >>= 1) n += __shfl_xor_sync(0xffffffffu, n, d);
#endif
    if ((threadIdx.x & 31) == 0 && n) atomicAdd(&block->background, n);
    __syncthreads();
    for (int k = threadIdx.x; k < MESHCCL_COUNT_SLOTS; k += blockDim.x)
        if (block->label[k] > (I)0 && block->cells[k])
            atomicAdd(counts + block->label[k], (unsigned long long)block->cells[k]);
    if (threadIdx.x == 0 && block->background)
        atomicAdd(counts, (unsigned long long)block->background);
}

// counts[label] += n for each lane's (label, n) (n = 0 or label = 0: nothing
// to add).  Lanes of the warp holding the same label add once, their sum,
// from the first of them (__match_any_sync groups them, __reduce_add_sync
// sums each group), so a label spread over the warp -- a large component,
// a run across lanes -- costs one atomic a warp, not one a lane; with a
// block table (``block``, not null), a sum of a hot label goes to its
// slot instead.  Every lane of the warp must call it, together.
template <typename I>
__device__ __forceinline__ void add_counts(unsigned long long* counts, I label, unsigned n,
                                           BlockCounts<I>* block = nullptr) {
#if __CUDA_ARCH__ >= 800
    const I key = n ? label : (I)0;
    const unsigned same = __match_any_sync(0xffffffffu, key);
    const unsigned sum = __reduce_add_sync(same, n);
    if (key > 0 && (int)(threadIdx.x & 31) == __ffs(same) - 1) {
        if (block != nullptr && sum >= MESHCCL_COUNT_HOT) {
            const int k = (int)((unsigned long long)key % MESHCCL_COUNT_SLOTS);
            const I held = take_slot(&block->label[k], key);
            if (held == (I)0 || held == key) {
                atomicAdd(&block->cells[k], sum);
                return;
            }
        }
        atomicAdd(counts + key, (unsigned long long)sum);
    }
#else
    if (n && label > 0) atomicAdd(counts + label, (unsigned long long)n);
#endif
}
