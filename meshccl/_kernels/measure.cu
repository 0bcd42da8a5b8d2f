// measure.cu -- per-label tables (counts, first cells, boxes, centroids,
// intensity sums, means, extremes and weighted centroids) of a label image,
// for meshccl.measure.
//
// The label image is a flat raster (C order) of n cells, seen as rows of
// `width` cells (the last axis).  A table row is indexed by the label
// itself, so every statistic is a scatter: cell i adds itself to row
// labels[i].  Two things make a naive scatter slow.  Cells are many, so one
// atomic per cell and statistic is too much traffic; and the labels that
// matter are few and large -- the background, the spanning cluster of a
// percolating lattice, the blobs of a segmentation -- so thousands of warps
// queue on the same few table rows, one atomic after another, and the cost
// grows with how skewed the sizes are rather than with the image.
//
// Runs.  Neighbouring cells of a row mostly carry the same label, so each
// warp cuts its 32 consecutive cells into runs: maximal stretches of one
// label inside one row (a run starts at lane 0, at the start of a row, or
// where the label changes -- one __ballot_sync of those "head" flags).  The
// last lane of a run (its tail) finds the head as the highest head bit at or
// below itself and speaks for the whole run:
//
//     lanes   0 1 2 3 4 5 6 7 ...
//     labels  0 0 0 7 7 7 7 0 ...
//     heads   1 0 0 1 0 0 0 1 ...   run 7 = lanes 3..6: lane 6 adds 4 cells
//
// A run lies in one row, so every coordinate but the last is the row's
// (held by a few lanes and passed round by shuffles) and the last runs
// x_head..x: its count, first cell, box and
// coordinate sums (len * c, or the arithmetic series on the last axis;
// integers, so centroids are exact and equal the CPU's) follow from its
// ends.  Intensities differ from cell to cell, so they are first reduced
// over each run by a segmented scan (__shfl_up_sync, five steps; a lane
// takes values only from lanes at or after its run's head).
//
// Warps.  Each warp owns one contiguous stretch of the image, which it
// reads 32 cells at a time (CHUNKS chunks loaded ahead), and a small hash
// table of its own in shared memory, keyed by label (open addressing, the
// label's low bits as the hash, linear probing, a slot claimed by atomicCAS
// of its key).  A run's tail adds itself to its label's slot with
// shared-memory atomics; when the table is half full, and at the end, the
// warp adds every occupied slot to the global table with one set of global
// atomics and sets the slot back.  A label that covers the whole stretch
// thus costs one global update per warp, not one per run, and no warp waits
// for another: a table shared by a block's warps made its hot slots (the
// background, the spanning cluster) the queue, and cost several times
// more.  A run whose label finds no slot within a few probes goes straight
// to the global table, and so do the runs of a warp whose table filled up
// again within a few chunks, label 0 excepted (stretches of one-cell
// labels: those labels are all different, so nothing queues there, and
// handing over slots that hold one run each would only add work; the
// background would queue, so it keeps its slot).  Slots hold coordinates and counts in
// 32 bits (so stretches below 2^31 cells and axes below 2^32; the host
// launches without slots otherwise).  Circular sums of periodic axes, rare,
// always go straight to the global table.  The chunk's row and its
// coordinates are followed from chunk to chunk, so a division happens only
// where a chunk starts a new row.
//
// Minima and maxima of intensities go through order-preserving unsigned
// keys (a float's bits with the sign flipped, or all bits for negatives; a
// signed integer with its sign bit flipped), so one atomicMin / atomicMax
// works for every type; a NaN is keyed below everything for the minimum and
// above everything for the maximum, so it propagates as in NumPy.
//
// meshccl_measure_init sets the table's starting values (one launch),
// meshccl_measure_runs fills it, and meshccl_measure_finish turns it into
// what the user gets, in place where the types allow: empty boxes (0, -1),
// centroids = sums / count, intensity means, extremes as float64, weighted
// centroids; NaN where a label has no cells (or its intensity sums to 0).
//
// meshccl_measure_arcs finishes the boxes of periodic axes.  The host sorts
// the distinct (label, coordinate) pairs of the axis; the gap before an
// entry is the number of empty coordinates back to the label's previous
// coordinate, or, for its first one, around the ring from its last
// (lo + n - hi - 1).  Pass 0 takes each label's largest gap (atomicMax),
// pass 1 the smallest coordinate that follows a largest gap (atomicMin):
// the smallest covering arc starts there and is n - gap long.

#include "launch.cuh"
#include "measure.cuh"

// The global table's starting values.  Its rows are labels; box is (rows,
// 2 * ndim) with [lo_0, hi_0, lo_1, hi_1, ...] (cc3d's layout), csum and
// wsum (rows, ndim), cs / sn / wcos / wsin (rows, nper), kmin / kmax
// Keys<V>::K.  Counts and sums start at 0, first cells at n, boxes at (all
// ones, 0) for (min, max), key extremes at (all ones, 0).
template <typename K>
__global__ void meshccl_measure_init(long long rows, int ndim, int flags, long long n,
                                     unsigned long long* count, long long* first,
                                     unsigned long long* box, unsigned long long* csum,
                                     double* isum, double* iabs, K* kmin, K* kmax, double* wsum) {
    using namespace meshccl_measure;
    meshccl::grid_entry();  // (launch.cuh)
    for (long long r = meshccl::thread_id(); r < rows; r += meshccl::thread_count()) {
        count[r] = 0ull;
        if (flags & FIRST) first[r] = n;
        for (int d = 0; d < ndim; ++d) {
            if (flags & BOXES) {
                box[r * 2 * ndim + 2 * d] = ~0ull;
                box[r * 2 * ndim + 2 * d + 1] = 0ull;
            }
            if (flags & SUMS) csum[r * ndim + d] = 0ull;
        }
        if (flags & VALUES) {
            isum[r] = 0.0;
            iabs[r] = 0.0;
            kmin[r] = (K)~(K)0;
            kmax[r] = (K)0;
            for (int d = 0; d < ndim; ++d) wsum[r * ndim + d] = 0.0;
        }
    }
}

// Fill the table (meshccl_measure_init's starting values) from the labels
// and, V other than None, the intensities.  Warp w of the grid (w = block
// * warps per block + warp) takes cells [w * per_warp, (w + 1) * per_warp),
// per_warp a multiple of 32 * CHUNKS, with a shared-memory table of its own
// of `slots` slots (a power of two; 0: every run goes to the global table)
// at smem + warp * slot_words.  axes: the periodic axes, ascending (nper of
// them; their circular sums need flags & CIRCULAR).
template <typename L, typename I, typename V>
__global__ void __launch_bounds__(256)
meshccl_measure_runs(const L* __restrict__ labels, const V* __restrict__ values, I n, I width,
                     I per_warp, const long long* __restrict__ shape,
                     const long long* __restrict__ rstride, int ndim,
                     const int* __restrict__ axes, int nper, int flags, int slots,
                     int slot_words, unsigned long long* count, long long* first,
                     unsigned long long* box, unsigned long long* csum, double* cs, double* sn,
                     double* isum, double* iabs, typename meshccl_measure::Keys<V>::K* kmin,
                     typename meshccl_measure::Keys<V>::K* kmax, double* wsum, double* wcos,
                     double* wsin) {
    using namespace meshccl_measure;
    using K = typename Keys<V>::K;
    constexpr bool HAS_VALUES = !Same<V, None>::value;
    meshccl::grid_entry();  // (launch.cuh)
    extern __shared__ unsigned long long smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    Slots<K> tab;
    if (slots) {
        tab.carve(smem + (size_t)warp * slot_words, slots, ndim, HAS_VALUES);
        tab.clear(ndim, HAS_VALUES, lane);
        __syncwarp();
    }
    const I seg0 = ((I)blockIdx.x * (I)(blockDim.x >> 5) + (I)warp) * per_warp;
    const I seg1 = min(n, seg0 + per_warp);
    const int last = ndim - 1;
    const int cached = min(last, CACHED_AXES);
    const I my_stride = lane < cached ? (I)rstride[lane] : (I)1;
    const I my_shape = lane < cached ? (I)shape[lane] : (I)1;
    const bool last_periodic = nper > 0 && axes[nper - 1] == last;

    // the global table's share of a run, or of a slot handed over
    auto global_cells = [&](unsigned long long l, unsigned long long len, long long head_i) {
        atomicAdd(&count[l], len);
        if (flags & FIRST) atomicMin(&first[l], head_i);
    };
    auto global_axis = [&](unsigned long long l, int d, unsigned long long a, unsigned long long b,
                           unsigned long long sum) {
        if (flags & BOXES) {
            atomicMin(&box[l * 2 * ndim + 2 * d], a);
            atomicMax(&box[l * 2 * ndim + 2 * d + 1], b);
        }
        if (flags & SUMS) atomicAdd(&csum[l * ndim + d], sum);
    };
    // the warp's slots handed to the global table, each set back to its
    // starting values (the free ones are at them already)
    auto hand_over = [&]() {
        for (int s = lane; s < slots; s += 32) {
            const unsigned long long l = tab.key[s];
            if (l == NO_LABEL) continue;
            const unsigned c = tab.cnt[s];
            if (c) {
                global_cells(l, c, (long long)seg0 + (long long)tab.first[s]);
                if (flags & (BOXES | SUMS))
                    for (int d = 0; d < ndim; ++d)
                        global_axis(l, d, tab.lo[d * slots + s], tab.hi[d * slots + s],
                                    tab.csum[d * slots + s]);
            }
            if constexpr (HAS_VALUES) {
                atomicAdd(&isum[l], tab.isum[s]);
                atomicAdd(&iabs[l], tab.iabs[s]);
                atomicMin(&kmin[l], tab.kmin[s]);
                atomicMax(&kmax[l], tab.kmax[s]);
                for (int d = 0; d < ndim; ++d)
                    atomicAdd(&wsum[l * ndim + d], tab.wsum[d * slots + s]);
            }
            tab.reset(s, ndim, HAS_VALUES);
        }
        __syncwarp();
        if (lane == 0) *tab.used = 0u;
        __syncwarp();
    };

    // the row and last-axis coordinate of the chunk's first cell, followed
    // from chunk to chunk (a division only where a chunk starts a new row
    // of a narrow image), and the coordinates of that row on the first
    // CACHED_AXES axes (lane d holds axis d's; recomputed when the row moves)
    I row0 = seg0 / width, x0 = seg0 - row0 * width;
    I mine = lane < cached ? (row0 / my_stride) % my_shape : (I)0;
    // chunks left in which runs skip the slots: a table that fills again
    // within CHURN chunks holds labels that do not repeat (one-cell
    // components, say), so the next BYPASS chunks go straight to the
    // global table, where such labels meet no queue
    int since = 0, bypass = 0;
    constexpr int SWEEP = 32 * CHUNKS;
    for (I sbase = seg0; sbase < seg1; sbase += SWEEP) {
        L lab[CHUNKS];
        V val[CHUNKS];
#pragma unroll
        for (int k = 0; k < CHUNKS; ++k) {
            const I i = sbase + (I)(k * 32 + lane);
            lab[k] = i < seg1 ? labels[i] : (L)0;
            if constexpr (HAS_VALUES) val[k] = i < seg1 ? values[i] : (V)0;
        }
#pragma unroll
        for (int k = 0; k < CHUNKS; ++k) {
            const I base = sbase + (I)(k * 32);
            if (base >= seg1) break;  // (the whole warp: base is the warp's)
            const L label = lab[k];
            const I i = base + (I)lane;
            const bool in = i < seg1;
            if (k || sbase != seg0) {  // (the chunk after the last one)
                x0 += 32;
                if (x0 >= width) {
                    const I q = width >= 32 ? (I)1 : x0 / width;
                    row0 += q;
                    x0 -= q * width;
                    mine = lane < cached ? (row0 / my_stride) % my_shape : (I)0;
                }
            }
            I row = row0, x = x0 + (I)lane;
            if (x >= width) {
                const I q = width >= 32 ? (I)1 : x / width;
                row += q;
                x -= q * width;
            }
            const L prev = __shfl_up_sync(FULL, label, 1);
            const bool head = !in || lane == 0 || x == 0 || prev != label;
            const unsigned heads = __ballot_sync(FULL, head);
            const unsigned upto = lane == 31 ? heads : heads & ((2u << lane) - 1u);
            const int hd = 31 - __clz(upto);
            const bool tail = in && (lane == 31 || ((heads >> (lane + 1)) & 1u));
            I rc[CACHED_AXES];
#pragma unroll
            for (int d = 0; d < CACHED_AXES; ++d) rc[d] = __shfl_sync(FULL, mine, d);
            // the run's intensities, reduced over it
            double s = 0.0, a = 0.0, wx = 0.0, wc = 0.0, ws = 0.0;
            K klo = 0, khi = 0;
            if constexpr (HAS_VALUES) {
                const V v = val[k];
                const double w = (double)v;
                s = run_scan(w, lane, hd, Sum());
                a = run_scan(fabs(w), lane, hd, Sum());
                klo = run_scan(Keys<V>::lo(v), lane, hd, Min());
                khi = run_scan(Keys<V>::hi(v), lane, hd, Max());
                wx = run_scan(w * (double)x, lane, hd, Sum());
                if (last_periodic) {
                    double sv, cv;
                    sincospi(2.0 * (double)x / (double)width, &sv, &cv);
                    wc = run_scan(w * cv, lane, hd, Sum());
                    ws = run_scan(w * sv, lane, hd, Sum());
                }
            }
            if (tail) {
                const unsigned long long l = (unsigned long long)label;
                const I back = (I)(lane - hd);
                const unsigned long long len = (unsigned long long)back + 1ull;
                const unsigned long long xh = (unsigned long long)(x - back);
                const long long head_i = (long long)(i - back);
                const int slot = slots && (!bypass || l == 0ull) ? tab.find(l) : -1;
                // a row axis's coordinate of this run
                auto coord = [&](int d) -> unsigned long long {
                    if (row == row0) {
#pragma unroll
                        for (int j = 0; j < CACHED_AXES; ++j)
                            if (j == d) return (unsigned long long)rc[j];
                    }
                    return (unsigned long long)((row / (I)rstride[d]) % (I)shape[d]);
                };
                if (slot >= 0) {
                    atomicAdd(&tab.cnt[slot], (unsigned)len);
                    if (flags & FIRST)
                        atomicMin(&tab.first[slot], (unsigned)(head_i - (long long)seg0));
                    auto shared_axis = [&](int d, unsigned long long lo_, unsigned long long hi_,
                                           unsigned long long sum) {
                        if (flags & BOXES) {
                            atomicMin(&tab.lo[d * slots + slot], (unsigned)lo_);
                            atomicMax(&tab.hi[d * slots + slot], (unsigned)hi_);
                        }
                        if (flags & SUMS) atomicAdd(&tab.csum[d * slots + slot], sum);
                    };
                    if (flags & (BOXES | SUMS)) {
                        for (int d = 0; d < last; ++d) {
                            const unsigned long long c = coord(d);
                            shared_axis(d, c, c, c * len);
                        }
                        shared_axis(last, xh, (unsigned long long)x,
                                    (xh + (unsigned long long)x) * len / 2ull);
                    }
                } else {
                    global_cells(l, len, head_i);
                    if (flags & (BOXES | SUMS)) {
                        for (int d = 0; d < last; ++d) {
                            const unsigned long long c = coord(d);
                            global_axis(l, d, c, c, c * len);
                        }
                        global_axis(l, last, xh, (unsigned long long)x,
                                    (xh + (unsigned long long)x) * len / 2ull);
                    }
                }
                if (flags & CIRCULAR) {
                    for (int j = 0; j < nper; ++j) {
                        const int d = axes[j];
                        const double size = (double)shape[d];
                        double co = 0.0, si = 0.0, sv, cv;
                        if (d == last) {
                            for (I xx = (I)xh; xx <= x; ++xx) {
                                sincospi(2.0 * (double)xx / size, &sv, &cv);
                                co += cv;
                                si += sv;
                            }
                        } else {
                            sincospi(2.0 * (double)coord(d) / size, &sv, &cv);
                            co = (double)len * cv;
                            si = (double)len * sv;
                        }
                        atomicAdd(&cs[l * nper + j], co);
                        atomicAdd(&sn[l * nper + j], si);
                    }
                }
                if constexpr (HAS_VALUES) {
                    if (slot >= 0) {
                        atomicAdd(&tab.isum[slot], s);
                        atomicAdd(&tab.iabs[slot], a);
                        atomicMin(&tab.kmin[slot], klo);
                        atomicMax(&tab.kmax[slot], khi);
                        for (int d = 0; d < last; ++d)
                            atomicAdd(&tab.wsum[d * slots + slot], (double)coord(d) * s);
                        atomicAdd(&tab.wsum[last * slots + slot], wx);
                    } else {
                        atomicAdd(&isum[l], s);
                        atomicAdd(&iabs[l], a);
                        atomicMin(&kmin[l], klo);
                        atomicMax(&kmax[l], khi);
                        for (int d = 0; d < last; ++d)
                            atomicAdd(&wsum[l * ndim + d], (double)coord(d) * s);
                        atomicAdd(&wsum[l * ndim + last], wx);
                    }
                    for (int j = 0; j < nper; ++j) {
                        const int d = axes[j];
                        double co, si;
                        if (d == last) {
                            co = wc;
                            si = ws;
                        } else {
                            double sv, cv;
                            sincospi(2.0 * (double)coord(d) / (double)shape[d], &sv, &cv);
                            co = s * cv;
                            si = s * sv;
                        }
                        atomicAdd(&wcos[l * nper + j], co);
                        atomicAdd(&wsin[l * nper + j], si);
                    }
                }
            }
            // half full: hand the slots to the global table and start again
            if (slots) {
                __syncwarp();
                if (bypass) {
                    --bypass;
                } else if (*tab.used * 2u > (unsigned)slots) {
                    hand_over();
                    if (since < CHURN) bypass = BYPASS;
                    since = 0;
                } else {
                    ++since;
                }
            }
        }
    }
    if (slots) {  // what is left in the slots
        __syncwarp();
        hand_over();
    }
}

// What the user gets, in place: boxes of labels without cells (0, -1);
// centroids (csum / count, written over csum as doubles; NaN without
// cells); intensity means, minima and maxima (NaN without cells) and
// weighted centroids (over wsum; NaN where the intensity sums to 0).
template <typename V>
__global__ void meshccl_measure_finish(long long rows, int ndim, int flags,
                                       const unsigned long long* __restrict__ count,
                                       unsigned long long* box, unsigned long long* csum,
                                       const double* __restrict__ isum, double* imean,
                                       const typename meshccl_measure::Keys<V>::K* __restrict__ kmin,
                                       const typename meshccl_measure::Keys<V>::K* __restrict__ kmax,
                                       double* imin, double* imax, double* wsum) {
    using namespace meshccl_measure;
    meshccl::grid_entry();  // (launch.cuh)
    const double nan = __longlong_as_double(0x7ff8000000000000ll);
    for (long long r = meshccl::thread_id(); r < rows; r += meshccl::thread_count()) {
        const unsigned long long c = count[r];
        for (int d = 0; d < ndim; ++d) {
            if ((flags & BOXES) && c == 0ull) {
                box[r * 2 * ndim + 2 * d] = 0ull;
                box[r * 2 * ndim + 2 * d + 1] = ~0ull;
            }
            if (flags & SUMS) {
                const unsigned long long sum = csum[r * ndim + d];
                reinterpret_cast<double*>(csum)[r * ndim + d] =
                    c ? (double)sum / (double)c : nan;
            }
        }
        if constexpr (!Same<V, None>::value) {
            if (flags & VALUES) {
                const double total = isum[r];
                imean[r] = c ? total / (double)c : nan;
                imin[r] = c ? Keys<V>::value(kmin[r]) : nan;
                imax[r] = c ? Keys<V>::value(kmax[r]) : nan;
                for (int d = 0; d < ndim; ++d)
                    wsum[r * ndim + d] = total != 0.0 ? wsum[r * ndim + d] / total : nan;
            }
        }
    }
}

// The smallest arcs covering each label's coordinates on a periodic axis of
// length `size`, from the m sorted distinct keys label * size + coordinate.
// lo, hi: each label's plain minimum and maximum on the axis.  Pass 0:
// biggest[label] = the largest gap (biggest starts at -1); pass 1:
// start[label] = the smallest coordinate after a largest gap (start starts
// at size).  I: the coordinates' type (long long; a template like every
// kernel the loader names).
template <typename I>
__global__ void meshccl_measure_arcs(const unsigned long long* __restrict__ keys, long long m,
                                     I size, const I* __restrict__ lo, const I* __restrict__ hi,
                                     I* biggest, I* start, int pass) {
    meshccl::grid_entry();  // (launch.cuh)
    const unsigned long long n = (unsigned long long)size;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < m;
         j += (long long)gridDim.x * blockDim.x) {
        const unsigned long long lab = keys[j] / n;
        const I c = (I)(keys[j] % n);
        I gap;
        if (j > 0 && keys[j - 1] / n == lab)
            gap = c - (I)(keys[j - 1] % n) - 1;
        else
            gap = lo[lab] + size - hi[lab] - 1;
        if (pass == 0)
            atomicMax(&biggest[lab], gap);
        else if (gap == biggest[lab])
            atomicMin(&start[lab], c);
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
#define MESHCCL_MEASURE_RUNS(L, I, V)                                                            \
    template __global__ void meshccl_measure_runs<L, I, V>(                                      \
        const L*, const V*, I, I, I, const long long*, const long long*, int, const int*, int,   \
        int, int, int, unsigned long long*, long long*, unsigned long long*, unsigned long long*,     \
        double*, double*, double*, double*, typename meshccl_measure::Keys<V>::K*,              \
        typename meshccl_measure::Keys<V>::K*, double*, double*, double*);
#define MESHCCL_MEASURE_FINISH(V)                                                                \
    template __global__ void meshccl_measure_finish<V>(                                          \
        long long, int, int, const unsigned long long*, unsigned long long*,                     \
        unsigned long long*, const double*, double*, const typename meshccl_measure::Keys<V>::K*, \
        const typename meshccl_measure::Keys<V>::K*, double*, double*, double*);
#define MESHCCL_MEASURE_EACH_VALUE(M, ...)                                                       \
    M(__VA_ARGS__ meshccl_measure::None)                                                          \
    M(__VA_ARGS__ unsigned char)                                                                  \
    M(__VA_ARGS__ signed char)                                                                    \
    M(__VA_ARGS__ unsigned short)                                                                 \
    M(__VA_ARGS__ short)                                                                          \
    M(__VA_ARGS__ unsigned)                                                                       \
    M(__VA_ARGS__ int)                                                                            \
    M(__VA_ARGS__ unsigned long long)                                                             \
    M(__VA_ARGS__ long long)                                                                      \
    M(__VA_ARGS__ float)                                                                          \
    M(__VA_ARGS__ double)
MESHCCL_MEASURE_EACH_VALUE(MESHCCL_MEASURE_RUNS, unsigned, int,)
MESHCCL_MEASURE_EACH_VALUE(MESHCCL_MEASURE_RUNS, unsigned, long long,)
MESHCCL_MEASURE_EACH_VALUE(MESHCCL_MEASURE_RUNS, unsigned long long, int,)
MESHCCL_MEASURE_EACH_VALUE(MESHCCL_MEASURE_RUNS, unsigned long long, long long,)
MESHCCL_MEASURE_EACH_VALUE(MESHCCL_MEASURE_FINISH)
template __global__ void meshccl_measure_init<unsigned>(long long, int, int, long long,
                                                        unsigned long long*, long long*,
                                                        unsigned long long*, unsigned long long*,
                                                        double*, double*, unsigned*, unsigned*,
                                                        double*);
template __global__ void meshccl_measure_init<unsigned long long>(
    long long, int, int, long long, unsigned long long*, long long*, unsigned long long*,
    unsigned long long*, double*, double*, unsigned long long*, unsigned long long*, double*);
template __global__ void meshccl_measure_arcs<long long>(const unsigned long long*, long long,
                                                         long long, const long long*,
                                                         const long long*, long long*, long long*,
                                                         int);
#endif
