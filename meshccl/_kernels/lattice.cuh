// lattice.cuh -- what the mesh kernels share: keys, the joining rule, the
// lattice features, the offset rows and the tile geometry.
//
// Every mesh kernel (the one-pass union-find of general.cu and Hawick et al.'s
// iterative methods of iterative.cu) sees the array as a flat raster in C
// order and walks the same neighbourhood-offset table (built on the host by
// meshccl/neighbourhood.py; general.cu's essay describes its rows).  Blocks
// cover power-of-two tiles of the array; a thread finds its cell's
// coordinates from the tile's origin plus the bits of its thread index, and
// keeps the cell's place on the array's (and the tile's) boundary as bit
// masks, so "is this neighbour inside" is two ANDs.
//
// A neighbour is reached through a row of the half table either backwards
// (towards the earlier cell, i + lin: the direction the table stores) or
// forwards (i - lin, the mirror image: the masks swap roles).  The left
// neighbour, which the table leaves out, is row noff.
#pragma once

#include "unionfind.cuh"

namespace meshccl {

// The key a value is compared by without a tolerance: integers as they are,
// floats truncated towards zero, as skimage's cast to integers does.  NaN,
// +-inf and values outside [-2^63, 2^63) have no integer; the x86-64 cast
// (cvttsd2si) gives the int64 minimum for all of them, and so do these keys
// (a CUDA conversion would saturate instead): one key, read on the device,
// so float input needs no check on the host.
template <typename T> struct Key { typedef T type; static __device__ __forceinline__ T of(T v) { return v; } };
template <> struct Key<float> {
    typedef long long type;
    static __device__ __forceinline__ long long of(float v) {
        return (v >= -0x1p63f && v < 0x1p63f) ? (long long)v : (-0x7fffffffffffffffLL - 1);
    }
};
template <> struct Key<double> {
    typedef long long type;
    static __device__ __forceinline__ long long of(double v) {
        return (v >= -0x1p63 && v < 0x1p63) ? (long long)v : (-0x7fffffffffffffffLL - 1);
    }
};

// A bool input's byte, as given: NumPy reads every non-zero byte of a bool
// array as True, and an array viewed as bool may hold bytes other than 0
// and 1, so its key is the byte tested against 0 (runs.cuh's load_row
// makes one-byte rows of it 0 / 1 the same way).  The run chains (plain
// and lattice forms, the wrap kernels) label bool input so, with no 0 / 1
// copy of it first.
struct flag8 {
    unsigned char b;
    flag8() = default;
    __host__ __device__ constexpr explicit flag8(int v) : b((unsigned char)v) {}
    // (for the kernels' signedness test, T(-1) < T(0): bytes are unsigned)
    __host__ __device__ constexpr bool operator<(flag8 o) const { return b < o.b; }
};
template <> struct Key<flag8> {
    typedef unsigned char type;
    static __device__ __forceinline__ unsigned char of(flag8 v) { return v.b != 0; }
};

// One row of the offset table as the kernels use it, staged in shared memory.
template <typename I>
struct Offset {
    I lin;              // linear offset in the array
    unsigned lo, hi;    // axes moved -1 / +1
    int flags;          // COVERED | MOVES_LEFT
    int loff;           // linear offset inside a tile
};

// Rows beyond this many are read from global memory instead.
#define MESHCCL_SHARED_OFFSETS 128
#define MESHCCL_MAX_NDIM 32

// The joining rule.  Without a tolerance, neighbours join when their keys
// are equal (the key of a float is its truncation, as in skimage).  With a
// tolerance, neighbours join when |a - b| <= tol on the values themselves:
// floats as doubles; integers exactly, as integers (a double holds every
// integer only up to 2^53): their difference, taken in 64 bits, against
// the tolerance's integer part (the same test for an integer difference).
// That relation is not transitive, so the kernels then turn off the
// skipping rules that rely on transitivity.
//
// Every kernel takes the tolerance in one `double tol` parameter.  For float
// values it is the tolerance itself.  For integer values it is not a
// number: the host (launch.py, tolerance_arg) stores the 64 bits of the
// exact unsigned tolerance there -- floored, saturated at 2^64 - 1 --, and
// int_tolerance() reads them back.  Tolerances above 2^53 then stay exact;
// the slot may hold any bit pattern (a NaN, -0.0), so it is only ever
// reinterpreted, never compared or converted as a double.
__device__ __forceinline__ unsigned long long int_tolerance(double tol) {
    return (unsigned long long)__double_as_longlong(tol);
}

// Integer values (their tolerance is exact); bool bytes count as integers.
template <typename T> struct IsInteger { static constexpr bool value = T(1) / T(2) == T(0); };
template <> struct IsInteger<flag8> { static constexpr bool value = true; };

template <typename T, bool Tol, bool Int = IsInteger<T>::value>
struct Rule {
    typedef typename Key<T>::type K;
    static __device__ __forceinline__ K key(T v) { return Key<T>::of(v); }
    static __device__ __forceinline__ bool join(K a, K b, double) { return a == b; }
};
template <typename T>
struct Rule<T, true, false> {
    typedef double K;
    static __device__ __forceinline__ double key(T v) { return (double)v; }
    static __device__ __forceinline__ bool join(double a, double b, double tol) {
        return fabs(a - b) <= tol;
    }
};
template <typename T>
struct Rule<T, true, true> {
    typedef T K;
    static __device__ __forceinline__ T key(T v) { return v; }
    static __device__ __forceinline__ bool join(T a, T b, double tol) {
        // (the difference of two 64-bit integers fits 64 unsigned bits)
        const unsigned long long d = a > b ? (unsigned long long)a - (unsigned long long)b
                                           : (unsigned long long)b - (unsigned long long)a;
        return d <= int_tolerance(tol);
    }
};
// bool bytes under a tolerance: their 0 / 1 keys (flag8), compared as the
// integers they are.
template <>
struct Rule<flag8, true, true> : Rule<unsigned char, true, true> {
    static __device__ __forceinline__ unsigned char key(flag8 v) { return Key<flag8>::of(v); }
};
// float -> double without losing subnormals: CuPy compiles with -ftz=true,
// which flushes float32 subnormals even in the conversion, and then a value
// like 1e-45 would equal a background of 0 and join it at tolerance 0.  The
// subnormal case is rebuilt from the bits with integer and double
// arithmetic (neither flushes); normal values convert exactly as they are.
template <>
__device__ __forceinline__ double Rule<float, true, false>::key(float v) {
    const unsigned u = __float_as_uint(v);
    if ((u & 0x7f800000u) != 0u) return (double)v;
    const double d = (double)(u & 0x007fffffu) * 0x1p-149;  // mantissa * 2^-149
    return (u >> 31) ? -d : d;
}

// Optional lattice features, passed to both kernels:
//   mask     cells where mask[i] == 0 are background (Hawick's predicate)
//   bonds    bonds[bidx[o] * bstride + i] == 0 closes the bond between cell i
//            and its neighbour through table row o (row noff: the left one)
//   periodic bit k: axis k wraps around
#define MESHCCL_HAS_MASK 1
#define MESHCCL_HAS_BONDS 2
// The last axis is not labelled along (label(..., axes=...)): no left /
// right neighbours; the table then holds only offsets along labelled axes.
#define MESHCCL_NO_LEFT 4

struct Lattice {
    const unsigned char* mask;
    const unsigned char* bonds;
    long long bstride;
    const int* bidx;
    unsigned periodic;
    double tol;
    int flags;
    __device__ __forceinline__ bool on(long long i) const {  // (flags fold to 0 when Lat is false)
        return !(flags & MESHCCL_HAS_MASK) || mask[i];
    }
    __device__ __forceinline__ bool left() const { return !(flags & MESHCCL_NO_LEFT); }
    __device__ __forceinline__ bool open(int row, long long i) const {
        return !(flags & MESHCCL_HAS_BONDS) || bonds[(long long)bidx[row] * bstride + i];
    }
};

// The lattice features as the fixed-geometry 2-D chain takes them
// (runs2d.cu): the mask, and the bond plane of each of a cell's four
// earlier neighbours (the bonds= layout: plane k of `bonds` holds the bonds
// of half offset k, meshccl/neighbourhood.py half_offsets).  A null mask or
// bonds pointer: every cell may be foreground, every bond is open.
struct PlaneFeatures {
    const unsigned char* mask;
    const unsigned char* bonds;
    long long bstride;         // cells per bond plane
    int up, left, ul, ur;      // bond plane of (-1, 0), (0, -1), (-1, -1), (-1, +1); -1: none
    double tol;
    __device__ __forceinline__ bool on(long long i) const { return mask == nullptr || mask[i]; }
    __device__ __forceinline__ bool open(int plane, long long i) const {
        return bonds == nullptr || plane < 0 || bonds[(long long)plane * bstride + i];
    }
    // the bond plane of step (dy, dx) of the half neighbourhood, left included
    __device__ __forceinline__ int bond(int dy, int dx) const {
        return dy == 0 ? left : dx < 0 ? ul : dx > 0 ? ur : up;
    }
};
#define MESHCCL_PLANE_FEATURES                                                             \
    const unsigned char* __restrict__ mask, const unsigned char* __restrict__ bonds,       \
    long long bstride, int b_up, int b_left, int b_ul, int b_ur, double tol
#define MESHCCL_PLANE_FEATURE_TYPES \
    const unsigned char*, const unsigned char*, long long, int, int, int, int, double
#define MESHCCL_PLANE_FEATURES_VALUE {mask, bonds, bstride, b_up, b_left, b_ul, b_ur, tol}

// The lattice features as the 3-D chains take them (runs3d.cu's lattice
// kernels, wrap3d.cu): the mask, and the bond plane
// of each step (dz, dy, dx) of the half neighbourhood, left included, at
// planes[box::step_index(dz, dy, dx)] (27 ints on the device, from
// bond_rows; the bond of a pair is the later cell's).  A null mask or bonds
// pointer: every cell may be foreground, every bond is open.
struct BoxFeatures {
    const unsigned char* mask;
    const unsigned char* bonds;
    long long bstride;      // cells per bond plane
    const int* planes;      // the bond plane of each step; -1: none
    double tol;
    __device__ __forceinline__ bool on(long long i) const { return mask == nullptr || mask[i]; }
    __device__ __forceinline__ bool open(int step, long long i) const {
        if (bonds == nullptr) return true;
        const int plane = planes[step];
        return plane < 0 || bonds[(long long)plane * bstride + i];
    }
    // the step of (dz, dy, dx), box::step_index (below)
    __device__ __forceinline__ int bond(int dz, int dy, int dx) const {
        return (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1);
    }
};
#define MESHCCL_BOX_FEATURES                                                               \
    const unsigned char* __restrict__ mask, const unsigned char* __restrict__ bonds,       \
    long long bstride, const int* __restrict__ planes, double tol
#define MESHCCL_BOX_FEATURE_TYPES \
    const unsigned char*, const unsigned char*, long long, const int*, double
#define MESHCCL_BOX_FEATURES_VALUE {mask, bonds, bstride, planes, tol}

// The joining rule as a policy of the fixed-geometry chains (runs2d.cu's
// plain and lattice kernels, runs3d.cu's lattice ones): one skeleton per kernel, its
// pair tests asked of the policy.  A policy has the key type K and key()
// (Rule's), and for cells i, j (j the earlier) of keys k, kj:
//   bg(k)        the background value;
//   on(i)        the mask lets cell i be foreground;
//   bond(d...)   the bond of a step of the half neighbourhood, (dy, dx) or
//                (dz, dy, dx), as the features number them (PlaneFeatures:
//                its plane; BoxFeatures: the step's index);
//   open(b, i)   cell i's bond b is open;
//   bonds()      are there bonds at all (else every open() is true);
//   join(kj, k)  the rule joins the two keys;
//   joined(kj, j, k, b, i)  an earlier neighbour j joins foreground cell i
//                through i's bond b: all of the above for j;
//   transitive   joining is transitive, so the kernels' skipping rules
//                (a pair is joined because two others are) hold;
//   features     there may be a mask or bonds (else on() and open() are
//                always true).
// The two constants let a skeleton drop a test at compile time where a
// call that folds only after inlining would still change the plain
// kernel's code (its branches and the order of its tests): the skeletons
// write "transitive ? the plain test : the lattice one" with them.
// PlainJoin: equal keys, no mask, no bonds, transitive: every feature test
// folds away at compile time, and joined() is just kj == k (a neighbour
// equal to a foreground cell is foreground), so a plain kernel compiles to
// the code it had before it shared its skeleton.  LatticeJoin: the
// features and the Rule (equality or a tolerance), not transitive (a
// closed bond, a masked cell or a tolerance breaks that), so the skeletons
// unite every joined pair.
template <typename T>
struct PlainJoin {
    typedef Rule<T, false> R;
    typedef typename R::K K;
    static constexpr bool transitive = true, features = false;
    int has_bg;
    K bgkey;
    static __device__ __forceinline__ K key(T v) { return R::key(v); }
    __device__ __forceinline__ bool bg(K k) const { return has_bg && k == bgkey; }
    __device__ __forceinline__ bool on(long long) const { return true; }
    __device__ __forceinline__ bool bonds() const { return false; }
    template <typename... D>
    __device__ __forceinline__ int bond(D...) const { return -1; }
    __device__ __forceinline__ bool open(int, long long) const { return true; }
    __device__ __forceinline__ bool join(K kj, K k) const { return kj == k; }
    __device__ __forceinline__ bool joined(K kj, long long, K k, int, long long) const {
        return kj == k;
    }
};
template <typename T, bool Tol, typename Features>
struct LatticeJoin {
    typedef Rule<T, Tol> R;
    typedef typename R::K K;
    static constexpr bool transitive = false, features = true, tolerance = Tol;
    int has_bg;
    K bgkey;
    Features ft;
    static __device__ __forceinline__ K key(T v) { return R::key(v); }
    __device__ __forceinline__ bool bg(K k) const { return has_bg && k == bgkey; }
    __device__ __forceinline__ bool on(long long i) const { return ft.on(i); }
    __device__ __forceinline__ bool bonds() const { return ft.bonds != nullptr; }
    template <typename... D>
    __device__ __forceinline__ int bond(D... d) const { return ft.bond(d...); }
    __device__ __forceinline__ bool open(int b, long long i) const { return ft.open(b, i); }
    __device__ __forceinline__ bool join(K kj, K k) const { return R::join(kj, k, ft.tol); }
    __device__ __forceinline__ bool joined(K kj, long long j, K k, int b, long long i) const {
        return !bg(kj) && ft.on(j) && R::join(kj, k, ft.tol) && ft.open(b, i);
    }
};

template <typename I>
__device__ __forceinline__ bool inside(unsigned lo, unsigned hi, const Offset<I>& e) {
    return ((lo & e.lo) | (hi & e.hi)) == 0u;
}

template <typename I>
__device__ __forceinline__ Offset<I> offset_row(const long long* table, const int* loff, int o) {
    Offset<I> e;
    e.lin = (I)table[4 * o];
    e.lo = (unsigned)table[4 * o + 1];
    e.hi = (unsigned)table[4 * o + 2];
    e.flags = (int)table[4 * o + 3];
    e.loff = loff[o];
    return e;
}

// Per-block geometry in shared memory: for each axis its size, the log2 of
// the tile extent, the tile's origin and the array stride.
template <typename I>
struct Geometry {
    I size[MESHCCL_MAX_NDIM], origin[MESHCCL_MAX_NDIM], stride[MESHCCL_MAX_NDIM];
    int tlog[MESHCCL_MAX_NDIM];
    Offset<I> rows[MESHCCL_SHARED_OFFSETS];
};

// Where a thread's cell lies.  Tiles are power-of-two boxes; block b holds
// tile b in raster order of tiles, and thread l the tile's cell l in raster
// order.  glo/ghi: at the low/high end of the array along axis k (bit k);
// llo/lhi: at the low/high end of the tile (or the array); lmid: the local
// coordinate is at least 2.
template <typename I>
struct Cell {
    I i;
    bool in;
    unsigned glo, ghi, llo, lhi, lmid;
    I clast;
};

// Fill the block's Geometry.  Thread k handles axis k (the tile's origin
// needs one division by the host-computed tile stride), so no thread runs a
// chain of divisions while the block waits.  Returns the rows
// to use (shared, or null when there are too many: read them from global).
template <typename I>
__device__ __forceinline__ const Offset<I>* tile_setup(Geometry<I>& g, const I* shape,
                                                        const int* tlog, const unsigned* tcount,
                                                        const unsigned* tstride, int ndim,
                                                        const long long* table, const int* loff,
                                                        int noff) {
    // Blocks of tiny tiles can have fewer threads than the array has axes.
    for (int k = threadIdx.x; k < ndim; k += blockDim.x) {
        g.size[k] = shape[k];
        g.tlog[k] = tlog[k];
        g.origin[k] = (I)((blockIdx.x / tstride[k]) % tcount[k]) << tlog[k];
    }
    if (threadIdx.x == 0) {
        I st = 1;
        for (int k = ndim - 1; k >= 0; --k) { g.stride[k] = st; st *= shape[k]; }
    }
    if (noff <= MESHCCL_SHARED_OFFSETS)
        for (int o = threadIdx.x; o < noff; o += blockDim.x) g.rows[o] = offset_row<I>(table, loff, o);
    __syncthreads();
    return noff <= MESHCCL_SHARED_OFFSETS ? g.rows : (const Offset<I>*)0;
}

template <typename I>
__device__ __forceinline__ Cell<I> tile_cell(const Geometry<I>& g, int ndim) {
    Cell<I> c = {0, true, 0u, 0u, 0u, 0u, 0u, 0};
    int l = threadIdx.x;
    for (int k = ndim - 1; k >= 0; --k) {
        const int tl = g.tlog[k];
        const int lc = l & ((1 << tl) - 1);
        l >>= tl;
        const I s = g.size[k];
        const I x = g.origin[k] + lc;
        if (x >= s) c.in = false;
        c.i += x * g.stride[k];
        const unsigned bit = 1u << k;
        if (x == 0) c.glo |= bit;
        if (x == s - 1) c.ghi |= bit;
        if (lc == 0) c.llo |= bit;
        if (lc >= 2) c.lmid |= bit;
        if (lc == (1 << tl) - 1 || x == s - 1) c.lhi |= bit;
    }
    c.clast = g.origin[ndim - 1] + (threadIdx.x & ((1 << g.tlog[ndim - 1]) - 1));
    return c;
}

// Row o of the half table, or the left neighbour for o == noff.
template <typename I>
__device__ __forceinline__ Offset<I> row_or_left(const Offset<I>* rows, const long long* table,
                                                 const int* loff, int o, int noff, int ndim) {
    if (o == noff) {
        Offset<I> e;
        e.lin = (I)-1;
        e.lo = 1u << (ndim - 1);
        e.hi = 0u;
        e.flags = 2;
        e.loff = -1;
        return e;
    }
    return rows ? rows[o] : offset_row<I>(table, loff, o);
}

// The neighbour of a cell through row e, backwards (i + lin) or forwards
// (i - lin).  Returns -1 off a non-periodic edge; sets wrapped when the step
// wraps around a periodic axis; sets in_tile when the neighbour lies in the
// cell's own tile (never for a wrapped one).
template <typename I>
__device__ __forceinline__ I neighbour(const Geometry<I>& g, int ndim, const Cell<I>& c,
                                       const Offset<I>& e, bool forwards, unsigned periodic,
                                       bool& wrapped, bool& in_tile) {
    const unsigned mlo = forwards ? e.hi : e.lo, mhi = forwards ? e.lo : e.hi;
    I j = forwards ? c.i - e.lin : c.i + e.lin;
    const unsigned out_lo = c.glo & mlo, out_hi = c.ghi & mhi;
    wrapped = (out_lo | out_hi) != 0u;
    if (!wrapped) {
        in_tile = ((c.llo & mlo) | (c.lhi & mhi)) == 0u;
        return j;
    }
    in_tile = false;
    if ((out_lo | out_hi) & ~periodic) return (I)-1;
    for (int k = 0; k < ndim; ++k) {
        const I span = g.size[k] * g.stride[k];
        if (out_lo & (1u << k)) j += span;
        if (out_hi & (1u << k)) j -= span;
    }
    return j;
}

}  // namespace meshccl

namespace meshccl {
namespace box {

// Is the step (dz, dy, dx) a connectivity-C neighbour in D dimensions?
// (At most C of its coordinates are non-zero, as in scipy / skimage.)
template <int D, int C>
__device__ __forceinline__ constexpr bool neighbour_step(int dz, int dy, int dx) {
    return (D == 3 || dz == 0) && dz >= -1 && dz <= 1 && dy >= -1 && dy <= 1 && dx >= -1 &&
           dx <= 1 && (dz != 0 || dy != 0 || dx != 0) &&
           (dz != 0) + (dy != 0) + (dx != 0) <= C;
}

// ... and does it lead to an earlier row, i.e. is it one of the pairs a cell
// unites itself?  (The left neighbour, the only earlier cell on the same
// row, is handled on its own.)
template <int D, int C>
__device__ __forceinline__ constexpr bool half_step(int dz, int dy, int dx) {
    return neighbour_step<D, C>(dz, dy, dx) && (dz < 0 || (dz == 0 && dy < 0));
}

// ... or to any earlier cell in raster order: the half neighbourhood and the
// left neighbour, the pairs a cell takes where it unites every pair itself.
template <int C>
__device__ __forceinline__ constexpr bool earlier_step(int dz, int dy, int dx) {
    return half_step<3, C>(dz, dy, dx) || (dz == 0 && dy == 0 && dx == -1);
}

// Shuffle a key one lane up (__shfl_up_sync has no overloads for 1- and
// 2-byte types; 4- and 8-byte keys, doubles included, take their own).
template <typename K>
__device__ __forceinline__ K shfl_up(K k) {
    if constexpr (sizeof(K) < 4) return (K)__shfl_up_sync(0xffffffffu, (int)k, 1);
    else return __shfl_up_sync(0xffffffffu, k, 1);
}

// Steps as numbers 0..26, (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1), and as
// bits of a 27-bit mask.
__device__ __forceinline__ constexpr int step_index(int dz, int dy, int dx) {
    return (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1);
}
__device__ __forceinline__ constexpr unsigned step_bit(int dz, int dy, int dx) {
    return 1u << step_index(dz, dy, dx);
}

}  // namespace box
}  // namespace meshccl

// A loop over a 3-D cell's earlier connectivity-C steps (box::earlier_step),
// in raster order, (dz, dy, dx) the body's names for the step: three loops,
// unrolled, so the steps are constants in the body (a loop over the step
// numbers 0..12 instead left the seam kernel's loop rolled: 24-48 bytes of
// spills).  A `continue` in the body goes on to the next step.
#define MESHCCL_EACH_EARLIER_STEP(C, dz, dy, dx)                                  \
    _Pragma("unroll") for (int dz = -1; dz <= 0; ++dz)                           \
    _Pragma("unroll") for (int dy = -1; dy <= 1; ++dy)                           \
    _Pragma("unroll") for (int dx = -1; dx <= 1; ++dx)                           \
        if (meshccl::box::earlier_step<C>(dz, dy, dx))


#define MESHCCL_ROW(o) (rows ? rows[o] : meshccl::offset_row<I>(table, loff, o))

#define MESHCCL_LATTICE_PARAMS                                                             \
    const unsigned char* __restrict__ mask, const unsigned char* __restrict__ bonds,       \
    long long bstride, const int* __restrict__ bidx, unsigned periodic, double tol, int lflags
// Lat = false compiles the plain labeller: every feature test folds away.
#define MESHCCL_LATTICE                                                                    \
    const meshccl::Lattice lat = {mask, bonds, bstride, bidx, Lat ? periodic : 0u, tol,     \
                                  Lat ? lflags : 0}

// The parameters every tile-grid kernel shares after its label arrays: the
// array's size and shape, the offset table and tile layout, the background
// and the lattice features.
#define MESHCCL_GRID_PARAMS(T, Tol)                                                        \
    I n, const I* __restrict__ shape, int ndim, const long long* __restrict__ table,       \
    int noff, const int* __restrict__ loff, const int* __restrict__ tlog,                  \
    const unsigned* __restrict__ tcount, const unsigned* __restrict__ tstride, int has_bg, \
    typename meshccl::Rule<T, Tol>::K bgkey, MESHCCL_LATTICE_PARAMS
#define MESHCCL_GRID_TYPES(T, I, Tol)                                                        \
    I, const I*, int, const long long*, int, const int*, const int*, const unsigned*,      \
    const unsigned*, int, typename meshccl::Rule<T, Tol>::K, const unsigned char*,         \
    const unsigned char*, long long, const int*, unsigned, double, int
