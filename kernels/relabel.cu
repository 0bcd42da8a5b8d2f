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
//    memory), CuPy's cumsum for long ones.
// 3. meshccl_relabel: the label of an element is the rank of its root r,
//        incl[r / 32] - popcount(bits[r / 32] >> (r % 32)) + 1,
//    i.e. the number of roots before r, plus one.  It reads only P[i] and
//    the two short arrays, so it may write its result over P in place.
//
// Meshes, graphs and batches all finish through these two kernels.

#include "unionfind.cuh"

template <typename I>
__global__ void meshccl_flatten(I* P, I n, unsigned* __restrict__ bits, I* __restrict__ counts) {
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

template <typename I>
__global__ void meshccl_relabel(I* P, I n, const unsigned* __restrict__ bits,
                                const I* __restrict__ incl) {
    const long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (gi >= (long long)n) return;
    const I i = (I)gi;
    const I r = P[i];
    if (r < 0) { P[i] = 0; return; }
    const I w = r >> 5;
    P[i] = incl[w] - (I)__popc(bits[w] >> (r & 31)) + 1;
}

// Inclusive prefix sum of `words` counts by one block of 1024 threads: each
// thread sums a contiguous chunk, the block scans the chunk sums (warp
// shuffles, then one warp over the warp totals), and each thread writes its
// chunk's running sums.  For short arrays only (the host picks it).
template <typename I>
__global__ void __launch_bounds__(1024) meshccl_scan_block(const I* __restrict__ counts,
                                                           I* __restrict__ incl, I words) {
    __shared__ I warp_sum[32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const I per = (words + (I)blockDim.x - 1) / (I)blockDim.x;
    const I lo = min((I)t * per, words), hi = min(lo + per, words);
    I sum = 0;
    for (I w = lo; w < hi; ++w) sum += counts[w];
    I x = sum;  // inclusive scan of the chunk sums within the warp
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
    I run = (warp ? warp_sum[warp - 1] : (I)0) + x - sum;  // everything before this chunk
    for (I w = lo; w < hi; ++w) {
        run += counts[w];
        incl[w] = run;
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
template __global__ void meshccl_scan_block<int>(const int*, int*, int);
template __global__ void meshccl_scan_block<long long>(const long long*, long long*, long long);
template __global__ void meshccl_flatten<int>(int*, int, unsigned*, int*);
template __global__ void meshccl_flatten<long long>(long long*, long long, unsigned*, long long*);
template __global__ void meshccl_relabel<int>(int*, int, const unsigned*, const int*);
template __global__ void meshccl_relabel<long long>(long long*, long long, const unsigned*, const long long*);
#endif
