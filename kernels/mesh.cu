// mesh.cu -- one-pass union-find labelling of n-dimensional meshes.
//
// The array is seen as a flat raster (C order) of n cells.  Cells whose key
// equals the background key are background; two neighbouring cells belong
// to one component when their keys are equal.  The key of an integer is the
// integer itself; the key of a float is the float truncated towards zero,
// which is what skimage.measure.label does when it casts its input to intp.
//
// Neighbours come from a table built once on the host for the array's shape
// and connectivity: the "half neighbourhood" of offsets that point to cells
// *earlier* in raster order, minus the left neighbour (-1 on the last axis),
// which is treated specially.  Each entry is four 64-bit words:
//   [0] linear offset (negative)
//   [1] bit k set: the offset moves -1 along axis k (needs coordinate > 0)
//   [2] bit k set: the offset moves +1 along axis k (needs coordinate < size-1)
//   [3] flags: bit 0 "covered" -- the target is also a neighbour of the left
//       cell; bit 1 -- the offset moves -1 along the last axis.
// A cell's position on the boundary is two bit masks (at the low / high end
// of each axis), so "is this neighbour inside the array" is two ANDs.
//
// Two kernels, no iteration to convergence:
//
// 1. meshccl_mesh_init -- every cell gets a first parent.  Each warp walks a
//    segment of 256 consecutive cells, 32 at a time.  Runs of equal cells
//    along the last axis are found with one warp ballot per chunk, and the
//    start of the run reaching the chunk's end is carried to the next chunk
//    in a register: a cell whose left neighbour is equal points straight at
//    the first cell of its run, so no chain of pointers grows along a row.
//    A run entering from the previous segment points at the segment's first
//    cell, which stays a root until kernel 2 unites it with its left cell.
//    A run's first cell points at its first equal earlier neighbour in table
//    order, or at itself.  Background cells get -1.  Every parent is an
//    earlier cell of the same component: a valid union-find forest.
//
// 2. meshccl_mesh_union -- every cell unites itself with its equal earlier
//    neighbours, skipping the unions already implied:
//      * the left neighbour (done by the run pointers of kernel 1, except at
//        a segment's first cell, which unites with its left cell here);
//      * for a run's first cell, the neighbour kernel 1 chose as parent;
//      * when the left cell is equal: an offset whose target is also a
//        neighbour of the left cell ("covered"), and an offset o whose
//        shifted twin (left, left+o) is an equal pair -- that pair was (or
//        is justified to be) united by the left cell, so i and i+o already
//        meet through it.  This is the "critical cell" idea of Playne and
//        Hawick: inside a run only the edges of a run do real work.
//    unite() is the shared core of unionfind.cuh.
//
// Then relabel.cu flattens the forest and numbers the roots in raster order.

#include "unionfind.cuh"

namespace meshccl {

template <typename T> struct Key { typedef T type; static __device__ __forceinline__ T of(T v) { return v; } };
template <> struct Key<float> {
    typedef long long type;
    static __device__ __forceinline__ long long of(float v) { return (long long)v; }
};
template <> struct Key<double> {
    typedef long long type;
    static __device__ __forceinline__ long long of(double v) { return (long long)v; }
};

// Boundary masks of cell i and its coordinate along the last axis.
template <typename I>
__device__ __forceinline__ void locate(I i, const I* shape, int ndim, unsigned& lo, unsigned& hi, I& clast) {
    lo = 0u;
    hi = 0u;
    I rem = i;
    clast = 0;
    for (int k = ndim - 1; k >= 0; --k) {
        I s = shape[k];
        I c = rem % s;
        rem /= s;
        if (c == 0) lo |= 1u << k;
        if (c == s - 1) hi |= 1u << k;
        if (k == ndim - 1) clast = c;
    }
}

__device__ __forceinline__ bool inside(unsigned lo, unsigned hi, const long long* e) {
    return ((lo & (unsigned)e[1]) | (hi & (unsigned)e[2])) == 0u;
}

}  // namespace meshccl

// Cells handled by one warp in kernel 1: MESHCCL_CHUNKS chunks of 32.
#define MESHCCL_CHUNKS 8
#define MESHCCL_SEGMENT (32 * MESHCCL_CHUNKS)

template <typename T, typename I>
__global__ void meshccl_mesh_init(const T* __restrict__ v, I* __restrict__ P, I n,
                                  const I* __restrict__ shape, int ndim,
                                  const long long* __restrict__ table, int noff,
                                  int has_bg, typename meshccl::Key<T>::type bgkey) {
    typedef typename meshccl::Key<T>::type K;
    const int lane = threadIdx.x & 31;
    const long long base = (((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * MESHCCL_SEGMENT;
    if (base >= (long long)n) return;  // warp-uniform
    I carry = (I)base;  // first cell of the run that reaches the end of the previous chunk
    for (int c = 0; c < MESHCCL_CHUNKS; ++c) {
        const long long cbase = base + 32 * c;
        if (cbase >= (long long)n) break;  // warp-uniform
        const long long gi = cbase + lane;
        const bool in = gi < (long long)n;
        const I i = in ? (I)gi : (I)0;
        K key = K();
        bool fg = false, eql = false;
        unsigned lo = 0u, hi = 0u;
        I clast = 0;
        if (in) {
            key = meshccl::Key<T>::of(v[i]);
            fg = !(has_bg && key == bgkey);
            if (fg) {
                meshccl::locate(i, shape, ndim, lo, hi, clast);
                eql = clast > 0 && meshccl::Key<T>::of(v[i - 1]) == key;
            }
        }
        const unsigned m = __ballot_sync(0xffffffffu, eql);
        if (in) {
            if (!fg) {
                P[i] = (I)-1;
            } else if (eql) {
                // lanes <= this one whose cell does not continue a run from the left
                const unsigned upto = lane == 31 ? 0xffffffffu : ((1u << (lane + 1)) - 1u);
                const unsigned starts = ~m & upto;
                // No start in this chunk: the run began in an earlier chunk (carry), or
                // before the segment -- then the segment's first cell stays a root here
                // and kernel 2 unites it with its left neighbour.
                P[i] = starts ? (I)(cbase + (31 - __clz(starts))) : carry;
            } else {
                I parent = i;
                for (int o = 0; o < noff; ++o) {
                    const long long* e = table + 4 * o;
                    if (!meshccl::inside(lo, hi, e)) continue;
                    const I j = i + (I)e[0];
                    if (meshccl::Key<T>::of(v[j]) == key) { parent = j; break; }
                }
                P[i] = parent;
            }
        }
        if (~m) carry = (I)(cbase + (31 - __clz(~m)));
    }
}

template <typename T, typename I>
__global__ void meshccl_mesh_union(const T* __restrict__ v, I* P, I n,
                                   const I* __restrict__ shape, int ndim,
                                   const long long* __restrict__ table, int noff,
                                   int has_bg, typename meshccl::Key<T>::type bgkey) {
    typedef typename meshccl::Key<T>::type K;
    const long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (gi >= (long long)n) return;
    const I i = (I)gi;
    const K key = meshccl::Key<T>::of(v[i]);
    if (has_bg && key == bgkey) return;
    unsigned lo, hi;
    I clast;
    meshccl::locate(i, shape, ndim, lo, hi, clast);
    const bool eql = clast > 0 && meshccl::Key<T>::of(v[i - 1]) == key;
    if (eql && gi % MESHCCL_SEGMENT == 0) meshccl::unite(P, i, i - 1);  // run crosses segments
    bool first = !eql;  // a run's first cell skips the parent kernel 1 chose
    for (int o = 0; o < noff; ++o) {
        const long long* e = table + 4 * o;
        if (!meshccl::inside(lo, hi, e)) continue;
        const I j = i + (I)e[0];
        if (meshccl::Key<T>::of(v[j]) != key) continue;
        if (first) { first = false; continue; }
        if (eql) {
            const long long flags = e[3];
            if (flags & 1) continue;                      // covered by the left cell
            const bool twin_inside = !((flags & 2) && clast == 1);
            if (twin_inside && meshccl::Key<T>::of(v[j - 1]) == key) continue;  // twin pair
        }
        meshccl::unite(P, i, j);
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_MESH(T, I)                                                                      \
    template __global__ void meshccl_mesh_init<T, I>(const T*, I*, I, const I*, int,           \
        const long long*, int, int, typename meshccl::Key<T>::type);                             \
    template __global__ void meshccl_mesh_union<T, I>(const T*, I*, I, const I*, int,          \
        const long long*, int, int, typename meshccl::Key<T>::type);
#define MESHCCL_MESH_I(T) MESHCCL_MESH(T, int) MESHCCL_MESH(T, long long)
MESHCCL_MESH_I(unsigned char)
MESHCCL_MESH_I(unsigned short)
MESHCCL_MESH_I(unsigned int)
MESHCCL_MESH_I(unsigned long long)
MESHCCL_MESH_I(float)
MESHCCL_MESH_I(double)
#endif
