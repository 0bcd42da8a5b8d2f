// measure.cu -- per-label tables (counts, first cells, boxes, coordinate
// sums, intensity sums and extremes) of a label image, for meshccl.measure.
//
// The label image is a flat raster (C order) of n cells, seen as rows of
// `width` cells (the last axis).  A table row is indexed by the label
// itself, so every statistic is a scatter: cell i adds itself to row
// labels[i].  Done naively that is one atomic per cell and statistic, and
// every cell of the background -- often half the image -- would hit the same
// address, one after the other.  Labels are spatially coherent instead:
// neighbouring cells of a row mostly carry the same label.  So each warp
// takes 32 consecutive cells and cuts them into *runs*: maximal stretches of
// one label inside one row (a run starts at lane 0, at the start of a row,
// or where the label changes -- one __ballot_sync of those "head" flags).
// The last lane of each run (its tail) finds the run's head as the highest
// head bit at or below itself, and issues one atomic per statistic for the
// whole run:
//
//     lanes   0 1 2 3 4 5 6 7 ...
//     labels  0 0 0 7 7 7 7 0 ...
//     heads   1 0 0 1 0 0 0 1 ...   run 7 = lanes 3..6: lane 6 adds 4 cells
//
// A run lies in one row, so the coordinates of every axis but the last are
// the row's (two divisions per axis: row / rstride[d] % shape[d]) and those
// of the last axis are x_head..x: the run's count, first cell, box
// (min/max per axis) and coordinate sums (len * c, or the arithmetic
// series on the last axis; integers, so the sums are exact and the centroids
// equal the CPU's) follow from the head and the tail alone.  Circular sums
// of a periodic axis (cos and sin of 2 pi c / n, for circular means) are
// len * (cos, sin) for the row's axes and a short loop over the run on the
// last axis.
//
// Intensities differ from cell to cell, so meshccl_measure_values reduces
// them over each run first: a segmented inclusive scan with __shfl_up_sync
// (five steps; a lane only takes values from lanes at or after its run's
// head), then the tail's atomics.  Minima and maxima go through order-
// preserving unsigned keys (a float's bits with the sign flipped, or all
// bits for negatives; a signed integer with its sign bit flipped), so one
// atomicMin / atomicMax works for every type; a NaN is keyed below
// everything for the minimum and above everything for the maximum, so it
// propagates as in NumPy's min and max.
//
// The background (label 0) is usually the largest label by far, and every
// warp meets it: its runs would all hit row 0's few addresses, one atomic
// after another.  So meshccl_measure_cells keeps label 0's runs in
// registers instead (each lane its count, first cell, box and sums; up to
// BG_AXES axes, without circular sums), reduces them over the warp at the
// end and adds them with one set of atomics per warp.
//
// meshccl_measure_arcs finishes the boxes of periodic axes.  The host sorts
// the distinct (label, coordinate) pairs of the axis; the gap before an
// entry is the number of empty coordinates back to the label's previous
// coordinate, or, for its first one, around the ring from its last
// (lo + n - hi - 1).  Pass 0 takes each label's largest gap (atomicMax),
// pass 1 the smallest coordinate that follows a largest gap (atomicMin):
// the smallest covering arc starts there and is n - gap long.

#include "launch.cuh"

namespace meshccl_measure {

constexpr unsigned FULL = 0xffffffffu;
constexpr int FIRST = 1, BOXES = 2, SUMS = 4, CIRCULAR = 8;
// label 0 is gathered in registers for images of up to this many axes
constexpr int BG_AXES = 4;

struct Sum {
    template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Min {
    template <typename T> __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
    template <typename T> __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};

// Inclusive scan of x over the lanes of each run (head: the run's first lane).
template <typename T, typename Op>
__device__ __forceinline__ T run_scan(T x, int lane, int head, Op op) {
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const T y = __shfl_up_sync(FULL, x, off);
        if (lane - off >= head) x = op(x, y);
    }
    return x;
}

// One lane's cell of the warp's 32 consecutive cells from `base`, and its run.
template <typename L, typename I>
struct Cell {
    I i, row, x;        // flat index, row, coordinate on the last axis
    L label;
    int lane, head;     // this lane, its run's first lane
    bool in, tail;      // a cell of the image; the last lane of its run
    __device__ I len() const { return (I)(lane - head + 1); }
    __device__ I x_head() const { return x - (I)(lane - head); }
};

template <typename L, typename I>
__device__ __forceinline__ Cell<L, I> cell(const L* __restrict__ labels, I n, I width, I base) {
    Cell<L, I> c;
    c.lane = threadIdx.x & 31;
    c.i = base + c.lane;
    c.in = c.i < n;
    c.label = c.in ? labels[c.i] : (L)0;
    const I row0 = base / width;
    const I t = base - row0 * width + (I)c.lane;
    c.row = row0;
    c.x = t;
    if (t >= width) {
        const I q = t / width;
        c.row += q;
        c.x = t - q * width;
    }
    const L prev = __shfl_up_sync(FULL, c.label, 1);
    const bool head = !c.in || c.lane == 0 || c.x == 0 || prev != c.label;
    const unsigned heads = __ballot_sync(FULL, head);
    const unsigned upto = c.lane == 31 ? heads : heads & ((2u << c.lane) - 1u);
    c.head = 31 - __clz(upto);
    c.tail = c.in && (c.lane == 31 || ((heads >> (c.lane + 1)) & 1u));
    return c;
}

// Coordinate on axis d (< ndim - 1) of the cells of a row.
template <typename I>
__device__ __forceinline__ long long row_coordinate(I row, const long long* __restrict__ shape,
                                                    const long long* __restrict__ rstride, int d) {
    return ((long long)row / rstride[d]) % shape[d];
}

// Order-preserving unsigned keys of a value, for the minimum (lo) and the
// maximum (hi): they differ only for NaN, which wins both.
template <typename V> struct Keys;
#define MESHCCL_UNSIGNED_KEYS(V, KT)                                        \
    template <> struct Keys<V> {                                            \
        using K = KT;                                                       \
        static __device__ K lo(V v) { return (K)v; }                        \
        static __device__ K hi(V v) { return (K)v; }                        \
    };
#define MESHCCL_SIGNED_KEYS(V, KT, WIDE, SIGN)                              \
    template <> struct Keys<V> {                                            \
        using K = KT;                                                       \
        static __device__ K lo(V v) { return (K)(WIDE)v ^ (SIGN); }         \
        static __device__ K hi(V v) { return (K)(WIDE)v ^ (SIGN); }         \
    };
MESHCCL_UNSIGNED_KEYS(unsigned char, unsigned)
MESHCCL_UNSIGNED_KEYS(unsigned short, unsigned)
MESHCCL_UNSIGNED_KEYS(unsigned, unsigned)
MESHCCL_UNSIGNED_KEYS(unsigned long long, unsigned long long)
MESHCCL_SIGNED_KEYS(signed char, unsigned, int, 0x80000000u)
MESHCCL_SIGNED_KEYS(short, unsigned, int, 0x80000000u)
MESHCCL_SIGNED_KEYS(int, unsigned, int, 0x80000000u)
MESHCCL_SIGNED_KEYS(long long, unsigned long long, long long, 0x8000000000000000ull)
#undef MESHCCL_UNSIGNED_KEYS
#undef MESHCCL_SIGNED_KEYS

template <> struct Keys<float> {
    using K = unsigned;
    static __device__ K bits(float v) {
        const unsigned b = __float_as_uint(v);
        return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    }
    static __device__ K lo(float v) { return v != v ? 0u : bits(v); }
    static __device__ K hi(float v) { return v != v ? ~0u : bits(v); }
};
template <> struct Keys<double> {
    using K = unsigned long long;
    static __device__ K bits(double v) {
        const unsigned long long b = (unsigned long long)__double_as_longlong(v);
        return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
    }
    static __device__ K lo(double v) { return v != v ? 0ull : bits(v); }
    static __device__ K hi(double v) { return v != v ? ~0ull : bits(v); }
};

}  // namespace meshccl_measure

// Counts, first cells, boxes, coordinate sums and circular sums of every
// label (flags: FIRST, BOXES, SUMS, CIRCULAR).  Rows are labels; the 2-D
// tables are row-major, ndim (lo, hi, csum) or nper (cs, sn) columns.
// lo starts at all ones, hi and the sums at 0, first at n.  axes: the
// periodic axes, ascending.
template <typename L, typename I>
__global__ void meshccl_measure_cells(const L* __restrict__ labels, I n, I width,
                                      const long long* __restrict__ shape,
                                      const long long* __restrict__ rstride, int ndim,
                                      const int* __restrict__ axes, int nper, int flags,
                                      unsigned long long* count, long long* first,
                                      unsigned long long* lo, unsigned long long* hi,
                                      unsigned long long* csum, double* cs, double* sn) {
    using namespace meshccl_measure;
    meshccl::grid_entry();  // (launch.cuh)
    // label 0 gathered in registers (see the top of the file)
    const bool gather = !(flags & CIRCULAR) && ndim <= BG_AXES;
    unsigned long long b_count = 0ull, b_lo[BG_AXES], b_hi[BG_AXES], b_sum[BG_AXES];
    long long b_first = (long long)n;
#pragma unroll
    for (int d = 0; d < BG_AXES; ++d) {
        b_lo[d] = ~0ull;
        b_hi[d] = 0ull;
        b_sum[d] = 0ull;
    }
    const I warps = (I)gridDim.x * (I)(blockDim.x >> 5);
    for (I base = ((I)blockIdx.x * (I)(blockDim.x >> 5) + (I)(threadIdx.x >> 5)) * 32; base < n;
         base += warps * 32) {
        const Cell<L, I> c = cell(labels, n, width, base);
        if (!c.tail) continue;
        const unsigned long long l = (unsigned long long)c.label;
        const unsigned long long len = (unsigned long long)c.len();
        if (gather && l == 0ull) {
            b_count += len;
            b_first = min(b_first, (long long)(c.i - (I)(c.lane - c.head)));
#pragma unroll
            for (int d = 0; d < BG_AXES; ++d) {
                if (d >= ndim) break;
                const bool last = d == ndim - 1;
                const unsigned long long a =
                    last ? (unsigned long long)c.x_head()
                         : (unsigned long long)row_coordinate(c.row, shape, rstride, d);
                const unsigned long long b = last ? (unsigned long long)c.x : a;
                b_lo[d] = min(b_lo[d], a);
                b_hi[d] = max(b_hi[d], b);
                b_sum[d] += last ? (a + b) * len / 2 : a * len;
            }
            continue;
        }
        atomicAdd(&count[l], len);
        if (flags & FIRST) atomicMin(&first[l], (long long)(c.i - (I)(c.lane - c.head)));
        if (flags & (BOXES | SUMS)) {
            for (int d = 0; d < ndim; ++d) {
                const bool last = d == ndim - 1;
                const unsigned long long a =
                    last ? (unsigned long long)c.x_head()
                         : (unsigned long long)row_coordinate(c.row, shape, rstride, d);
                const unsigned long long b = last ? (unsigned long long)c.x : a;
                if (flags & BOXES) {
                    atomicMin(&lo[l * ndim + d], a);
                    atomicMax(&hi[l * ndim + d], b);
                }
                if (flags & SUMS)
                    atomicAdd(&csum[l * ndim + d], last ? (a + b) * len / 2 : a * len);
            }
        }
        if (flags & CIRCULAR) {
            for (int j = 0; j < nper; ++j) {
                const int d = axes[j];
                const double size = (double)shape[d];
                double co = 0.0, si = 0.0, s, k;
                if (d == ndim - 1) {
                    for (I x = c.x_head(); x <= c.x; ++x) {
                        sincospi(2.0 * (double)x / size, &s, &k);
                        co += k;
                        si += s;
                    }
                } else {
                    sincospi(2.0 * (double)row_coordinate(c.row, shape, rstride, d) / size, &s, &k);
                    co = (double)len * k;
                    si = (double)len * s;
                }
                atomicAdd(&cs[l * nper + j], co);
                atomicAdd(&sn[l * nper + j], si);
            }
        }
    }
    if (!gather) return;
    // label 0: the warp's lanes reduced, then one set of atomics
    for (int off = 16; off; off >>= 1) {
        b_count += __shfl_xor_sync(FULL, b_count, off);
        b_first = min(b_first, __shfl_xor_sync(FULL, b_first, off));
#pragma unroll
        for (int d = 0; d < BG_AXES; ++d) {
            b_lo[d] = min(b_lo[d], __shfl_xor_sync(FULL, b_lo[d], off));
            b_hi[d] = max(b_hi[d], __shfl_xor_sync(FULL, b_hi[d], off));
            b_sum[d] += __shfl_xor_sync(FULL, b_sum[d], off);
        }
    }
    if ((threadIdx.x & 31) != 0 || b_count == 0ull) return;
    atomicAdd(&count[0], b_count);
    if (flags & FIRST) atomicMin(&first[0], b_first);
#pragma unroll
    for (int d = 0; d < BG_AXES; ++d) {
        if (d >= ndim) break;
        if (flags & BOXES) {
            atomicMin(&lo[d], b_lo[d]);
            atomicMax(&hi[d], b_hi[d]);
        }
        if (flags & SUMS) atomicAdd(&csum[d], b_sum[d]);
    }
}

// Intensity statistics of every label: sums of the values and of their
// magnitudes, minimum and maximum keys (Keys<V>; kmin starts at all ones,
// kmax at 0), value-weighted coordinate sums (ndim columns) and circular
// sums of the periodic axes (nper columns).
template <typename L, typename I, typename V>
__global__ void meshccl_measure_values(const L* __restrict__ labels, const V* __restrict__ values,
                                       I n, I width, const long long* __restrict__ shape,
                                       const long long* __restrict__ rstride, int ndim,
                                       const int* __restrict__ axes, int nper, double* isum,
                                       double* iabs, typename meshccl_measure::Keys<V>::K* kmin,
                                       typename meshccl_measure::Keys<V>::K* kmax, double* wsum,
                                       double* wcos, double* wsin) {
    using namespace meshccl_measure;
    using KT = Keys<V>;
    meshccl::grid_entry();  // (launch.cuh)
    const bool last_periodic = nper > 0 && axes[nper - 1] == ndim - 1;
    const I warps = (I)gridDim.x * (I)(blockDim.x >> 5);
    for (I base = ((I)blockIdx.x * (I)(blockDim.x >> 5) + (I)(threadIdx.x >> 5)) * 32; base < n;
         base += warps * 32) {
        const Cell<L, I> c = cell(labels, n, width, base);
        const V v = c.in ? values[c.i] : (V)0;
        const double w = (double)v;
        const double s = run_scan(w, c.lane, c.head, Sum());
        const double a = run_scan(fabs(w), c.lane, c.head, Sum());
        const typename KT::K klo = run_scan(KT::lo(v), c.lane, c.head, Min());
        const typename KT::K khi = run_scan(KT::hi(v), c.lane, c.head, Max());
        const double wx = run_scan(w * (double)c.x, c.lane, c.head, Sum());
        double wc = 0.0, ws = 0.0;
        if (last_periodic) {
            double sv, cv;
            sincospi(2.0 * (double)c.x / (double)width, &sv, &cv);
            wc = run_scan(w * cv, c.lane, c.head, Sum());
            ws = run_scan(w * sv, c.lane, c.head, Sum());
        }
        if (!c.tail) continue;
        const unsigned long long l = (unsigned long long)c.label;
        atomicAdd(&isum[l], s);
        atomicAdd(&iabs[l], a);
        atomicMin(&kmin[l], klo);
        atomicMax(&kmax[l], khi);
        for (int d = 0; d < ndim; ++d)
            atomicAdd(&wsum[l * ndim + d],
                      d == ndim - 1 ? wx : (double)row_coordinate(c.row, shape, rstride, d) * s);
        for (int j = 0; j < nper; ++j) {
            const int d = axes[j];
            double co, si;
            if (d == ndim - 1) {
                co = wc;
                si = ws;
            } else {
                double sv, cv;
                sincospi(2.0 * (double)row_coordinate(c.row, shape, rstride, d) / (double)shape[d],
                         &sv, &cv);
                co = s * cv;
                si = s * sv;
            }
            atomicAdd(&wcos[l * nper + j], co);
            atomicAdd(&wsin[l * nper + j], si);
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
#define MESHCCL_MEASURE_CELLS(L, I)                                                              \
    template __global__ void meshccl_measure_cells<L, I>(                                        \
        const L*, I, I, const long long*, const long long*, int, const int*, int, int,           \
        unsigned long long*, long long*, unsigned long long*, unsigned long long*,               \
        unsigned long long*, double*, double*);
#define MESHCCL_MEASURE_VALUES(L, I, V)                                                          \
    template __global__ void meshccl_measure_values<L, I, V>(                                    \
        const L*, const V*, I, I, const long long*, const long long*, int, const int*, int,      \
        double*, double*, typename meshccl_measure::Keys<V>::K*,                                 \
        typename meshccl_measure::Keys<V>::K*, double*, double*, double*);
#define MESHCCL_MEASURE_ALL_VALUES(L, I)                                                         \
    MESHCCL_MEASURE_CELLS(L, I)                                                                  \
    MESHCCL_MEASURE_VALUES(L, I, unsigned char)                                                  \
    MESHCCL_MEASURE_VALUES(L, I, signed char)                                                    \
    MESHCCL_MEASURE_VALUES(L, I, unsigned short)                                                 \
    MESHCCL_MEASURE_VALUES(L, I, short)                                                          \
    MESHCCL_MEASURE_VALUES(L, I, unsigned)                                                       \
    MESHCCL_MEASURE_VALUES(L, I, int)                                                            \
    MESHCCL_MEASURE_VALUES(L, I, unsigned long long)                                             \
    MESHCCL_MEASURE_VALUES(L, I, long long)                                                      \
    MESHCCL_MEASURE_VALUES(L, I, float)                                                          \
    MESHCCL_MEASURE_VALUES(L, I, double)
template __global__ void meshccl_measure_arcs<long long>(const unsigned long long*, long long,
                                                         long long, const long long*,
                                                         const long long*, long long*, long long*,
                                                         int);
MESHCCL_MEASURE_ALL_VALUES(unsigned, int)
MESHCCL_MEASURE_ALL_VALUES(unsigned, long long)
MESHCCL_MEASURE_ALL_VALUES(unsigned long long, int)
MESHCCL_MEASURE_ALL_VALUES(unsigned long long, long long)
#endif
