// measure.cuh -- what a per-label table pass needs on the device, shared by
// measure.cu (meshccl.measure's pass over a label image) and number_pieces.cu
// (the label pass that fills the same table while it writes the labels,
// label(..., return_statistics=True)): the table's flags, order-preserving
// keys for intensity extremes, and Slots, a warp's or block's small hash
// table of labels in shared memory (measure.cu's essay explains the design).

#pragma once
namespace meshccl_measure {

constexpr unsigned FULL = 0xffffffffu;
constexpr int FIRST = 1, BOXES = 2, SUMS = 4, CIRCULAR = 8, VALUES = 16;
// row coordinates held by lanes 0..CACHED_AXES-1 and passed round by shuffles
constexpr int CACHED_AXES = 4;
// 32-cell chunks a warp loads before it works on them (loads in flight)
constexpr int CHUNKS = 4;
// probes for a free slot before a run goes to the global table
constexpr int PROBES = 16;
// a warp's table filled again within CHURN chunks: in the next BYPASS
// chunks only label 0 uses it, the other runs go to the global table
constexpr int CHURN = 8, BYPASS = 64;
constexpr unsigned long long NO_LABEL = ~0ull;

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

// Order-preserving unsigned keys of a value, for the minimum (lo) and the
// maximum (hi): they differ only for NaN, which wins both.  value() maps a
// key back (as a double, what the user gets).
template <typename V> struct Keys;
#define MESHCCL_UNSIGNED_KEYS(V, KT)                                        \
    template <> struct Keys<V> {                                            \
        using K = KT;                                                       \
        static __device__ K lo(V v) { return (K)v; }                        \
        static __device__ K hi(V v) { return (K)v; }                        \
        static __device__ double value(K k) { return (double)(V)k; }        \
    };
#define MESHCCL_SIGNED_KEYS(V, KT, WIDE, SIGN)                              \
    template <> struct Keys<V> {                                            \
        using K = KT;                                                       \
        static __device__ K lo(V v) { return (K)(WIDE)v ^ (SIGN); }         \
        static __device__ K hi(V v) { return (K)(WIDE)v ^ (SIGN); }         \
        static __device__ double value(K k) { return (double)(WIDE)(k ^ (SIGN)); } \
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
    static __device__ double value(K k) {
        return (double)__uint_as_float((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k);
    }
};
template <> struct Keys<double> {
    using K = unsigned long long;
    static __device__ K bits(double v) {
        const unsigned long long b = (unsigned long long)__double_as_longlong(v);
        return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
    }
    static __device__ K lo(double v) { return v != v ? 0ull : bits(v); }
    static __device__ K hi(double v) { return v != v ? ~0ull : bits(v); }
    static __device__ double value(K k) {
        return __longlong_as_double(
            (long long)((k & 0x8000000000000000ull) ? (k ^ 0x8000000000000000ull) : ~k));
    }
};

// A warp's table in shared memory, arrays of `size` slots (per-axis
// columns: axis d at d * size); `used` counts the claimed slots.
template <typename K>
struct Slots {
    unsigned long long* key;
    unsigned long long* csum;
    double *isum, *iabs, *wsum;
    K *kmin, *kmax;
    unsigned *cnt, *first, *lo, *hi, *used;
    int size;

    // Carve the arrays out of `base`: the 8-byte columns first, then the
    // 4-byte ones (meshccl/_gpu/measure.py's slot_bytes counts the same).
    __device__ void carve(unsigned long long* base, int slots, int ndim, bool values) {
        size = slots;
        unsigned long long* p = base;
        key = p;
        p += slots;
        csum = p;
        p += (size_t)slots * ndim;
        if (values) {
            isum = (double*)p;
            p += slots;
            iabs = (double*)p;
            p += slots;
            wsum = (double*)p;
            p += (size_t)slots * ndim;
            kmin = (K*)p;
            p += slots;
            kmax = (K*)p;
            p += slots;
        }
        unsigned* q = (unsigned*)p;
        cnt = q;
        q += slots;
        first = q;
        q += slots;
        lo = q;
        q += (size_t)slots * ndim;
        hi = q;
        q += (size_t)slots * ndim;
        used = q;
    }

    // Slot s back to its starting values.
    __device__ void reset(int s, int ndim, bool values) {
        key[s] = NO_LABEL;
        cnt[s] = 0u;
        first[s] = ~0u;
        for (int d = 0; d < ndim; ++d) {
            csum[d * size + s] = 0ull;
            lo[d * size + s] = ~0u;
            hi[d * size + s] = 0u;
        }
        if (values) {
            isum[s] = 0.0;
            iabs[s] = 0.0;
            kmin[s] = (K)~(K)0;
            kmax[s] = (K)0;
            for (int d = 0; d < ndim; ++d) wsum[d * size + s] = 0.0;
        }
    }

    // Every slot at its starting values, by the 32 lanes of the table's warp.
    __device__ void clear(int ndim, bool values, int lane) {
        for (int s = lane; s < size; s += 32) reset(s, ndim, values);
        if (lane == 0) *used = 0u;
    }

    // The slot of `label`, claimed if new; -1 when PROBES slots are taken.
    __device__ int find(unsigned long long label) {
        unsigned h = (unsigned)label & (unsigned)(size - 1);
        for (int p = 0; p < PROBES; ++p) {
            unsigned long long k = key[h];
            if (k == label) return (int)h;
            if (k == NO_LABEL) {
                k = atomicCAS(&key[h], NO_LABEL, label);
                if (k == NO_LABEL) {
                    atomicAdd(used, 1u);
                    return (int)h;
                }
                if (k == label) return (int)h;
            }
            h = (h + 1u) & (unsigned)(size - 1);
        }
        return -1;
    }
};

// The value type of a table without intensities.
struct None {};
template <> struct Keys<None> {
    using K = unsigned;
};

template <typename A, typename B> struct Same {
    static constexpr bool value = false;
};
template <typename A> struct Same<A, A> {
    static constexpr bool value = true;
};

}  // namespace meshccl_measure
