// mesh.cu -- one-pass union-find labelling of n-dimensional meshes.
//
// The array is seen as a flat raster (C order) of n cells.  Cells whose key
// equals the background key are background; two neighbouring cells belong
// to one component when their keys are equal.  The key of an integer is the
// integer itself; the key of a float is the float truncated towards zero,
// which is what skimage.measure.label does when it casts its input to intp.
//
// Neighbours come from a table built once on the host for the array's shape
// and connectivity (meshccl/neighbourhood.py): the "half neighbourhood" of
// offsets that point to cells *earlier* in raster order, minus the left
// neighbour (-1 on the last axis), which is handled on its own.  Each entry
// is four 64-bit words:
//   [0] linear offset (negative)
//   [1] bit k set: the offset moves -1 along axis k (needs coordinate > 0)
//   [2] bit k set: the offset moves +1 along axis k (needs coordinate < size-1)
//   [3] flags: bit 0 "covered" -- the target is also a neighbour of the left
//       cell; bit 1 -- the offset moves -1 along the last axis.
// A cell's position on the boundary is two bit masks (at the low / high end
// of each axis), so "is this neighbour inside" is two ANDs.  The same test
// with masks taken relative to a tile says "is this neighbour in my tile".
//
// Two kernels, no iteration to convergence (block-based union-find, in the
// spirit of Allegretti, Bolelli and Grana's BUF and of Playne and Hawick's
// 2018 kernels):
//
// 1. meshccl_mesh_tile -- one thread block per tile of up to 1024 cells: a
//    power-of-two box over the last (up to three) axes, e.g. 32 x 32 in 2-D
//    and 4 x 8 x 32 in 3-D.  The block stages the keys in shared memory,
//    unites every pair of equal neighbours that lie inside the tile in a
//    shared-memory forest (the same find / unite as unionfind.cuh), and
//    writes each cell's global parent: the first cell, in raster order, of
//    its piece of the tile.  Long runs, columns and spirals collapse here at
//    shared-memory speed, so no long pointer chains reach global memory.
//
// 2. meshccl_mesh_union -- one thread per cell unites the pairs that cross a
//    tile border, with the global unite() of unionfind.cuh.  Cells in a
//    tile's interior find no such pair and leave after a few bit tests.  Two
//    rules skip pairs that are already implied when the left cell is equal
//    (the "critical cell" idea of Playne and Hawick): an offset whose target
//    is also a neighbour of the left cell ("covered"), and an offset o whose
//    shifted twin (left, left+o) is an equal pair -- that pair is united by
//    the tile kernel or by the left cell itself, so i and i+o already meet.
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

__device__ __forceinline__ bool inside(unsigned lo, unsigned hi, const long long* e) {
    return ((lo & (unsigned)e[1]) | (hi & (unsigned)e[2])) == 0u;
}

// Position of a cell inside the array and inside its tile.  Tiles are
// power-of-two boxes: tlog[k] is log2 of the tile extent along axis k.
// glo/ghi: at the low/high end of the array along k; llo/lhi: at the low/high
// end of the tile (or of the array) along k.
template <typename I>
struct Where {
    unsigned glo, ghi, llo, lhi;
    I clast;  // coordinate along the last axis
};

template <typename I>
__device__ __forceinline__ Where<I> where_is(I i, const I* shape, const int* tlog, int ndim) {
    Where<I> w = {0u, 0u, 0u, 0u, 0};
    I rem = i;
    for (int k = ndim - 1; k >= 0; --k) {
        const I s = shape[k];
        const I c = rem % s;
        rem /= s;
        const I tmask = ((I)1 << tlog[k]) - 1;
        if (c == 0) w.glo |= 1u << k;
        if (c == s - 1) w.ghi |= 1u << k;
        if ((c & tmask) == 0) w.llo |= 1u << k;
        if ((c & tmask) == tmask || c == s - 1) w.lhi |= 1u << k;
        if (k == ndim - 1) w.clast = c;
    }
    return w;
}

}  // namespace meshccl

template <typename T, typename I>
__global__ void __launch_bounds__(1024, 2) meshccl_mesh_tile(const T* __restrict__ v, I* __restrict__ P, I n,
                                  const I* __restrict__ shape, int ndim,
                                  const long long* __restrict__ table, int noff,
                                  const int* __restrict__ loff, const int* __restrict__ tlog,
                                  const I* __restrict__ tcount,
                                  int has_bg, typename meshccl::Key<T>::type bgkey) {
    typedef typename meshccl::Key<T>::type K;
    extern __shared__ long long smem[];
    K* keys = (K*)smem;                  // key of each tile cell
    I* G = (I*)((char*)smem + ((blockDim.x * sizeof(K) + 7) & ~7u));  // its global index
    int* L = (int*)(G + blockDim.x);     // the tile's forest (tile-local indices)
    const int l = threadIdx.x;

    // Global coordinates of tile cell l: the tile's coordinates come from the
    // block index, the cell's place in the tile from the bits of l.
    long long b = blockIdx.x, gi = 0, stride = 1;
    unsigned llo = 0u, lhi = 0u;
    bool in = true;
    int shift = 0;
    for (int k = ndim - 1; k >= 0; --k) {
        const long long s = shape[k], tc = tcount[k];
        const int tl = tlog[k];
        const long long lc = (l >> shift) & ((1 << tl) - 1);
        const long long c = ((b % tc) << tl) + lc;
        b /= tc;
        shift += tl;
        if (c >= s) in = false;
        gi += c * stride;
        stride *= s;
        if (lc == 0) llo |= 1u << k;
        if (lc == (1 << tl) - 1 || c == s - 1) lhi |= 1u << k;
    }
    const I i = in ? (I)gi : (I)0;
    K key = K();
    bool fg = false;
    if (in) {
        key = meshccl::Key<T>::of(v[i]);
        fg = !(has_bg && key == bgkey);
    }
    keys[l] = key;
    G[l] = i;
    L[l] = fg ? l : -1;
    __syncthreads();
    if (fg) {
        // A neighbour inside the tile is inside the array too: lhi includes
        // the array's high end, and the tile's low end comes first.
        if (!(llo & (1u << (ndim - 1))) && keys[l - 1] == key) meshccl::unite<true>(L, l, l - 1);
        for (int o = 0; o < noff; ++o) {
            if (!meshccl::inside(llo, lhi, table + 4 * o)) continue;
            const int j = l + loff[o];
            if (keys[j] == key) meshccl::unite<true>(L, l, j);
        }
    }
    __syncthreads();
    if (in) {
        if (!fg) {
            P[i] = (I)-1;
        } else {
            int r = l;
            while (L[r] != r) r = L[r];
            P[i] = G[r];  // tile order is raster order: G[r] is the piece's first cell
        }
    }
}

template <typename T, typename I>
__global__ void meshccl_mesh_union(const T* __restrict__ v, I* P, I n,
                                   const I* __restrict__ shape, int ndim,
                                   const long long* __restrict__ table, int noff,
                                   const int* __restrict__ tlog,
                                   int has_bg, typename meshccl::Key<T>::type bgkey) {
    typedef typename meshccl::Key<T>::type K;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= (long long)n) return;
    const I i = (I)g;
    const meshccl::Where<I> w = meshccl::where_is(i, shape, tlog, ndim);
    K key = K();
    bool loaded = false, eql = false;
    // The left neighbour, when it lies in the previous tile.
    if ((w.llo & (1u << (ndim - 1))) && w.clast > 0) {
        key = meshccl::Key<T>::of(v[i]);
        if (has_bg && key == bgkey) return;
        loaded = true;
        eql = meshccl::Key<T>::of(v[i - 1]) == key;
        if (eql) meshccl::unite(P, i, i - 1);
    }
    for (int o = 0; o < noff; ++o) {
        const long long* e = table + 4 * o;
        if (!meshccl::inside(w.glo, w.ghi, e) || meshccl::inside(w.llo, w.lhi, e)) continue;
        if (!loaded) {  // the first pair that crosses a tile border: read this cell
            key = meshccl::Key<T>::of(v[i]);
            if (has_bg && key == bgkey) return;
            loaded = true;
            eql = w.clast > 0 && meshccl::Key<T>::of(v[i - 1]) == key;
        }
        const I j = i + (I)e[0];
        if (meshccl::Key<T>::of(v[j]) != key) continue;
        if (eql) {
            const long long flags = e[3];
            if (flags & 1) continue;                      // covered by the left cell
            const bool twin_inside = !((flags & 2) && w.clast == 1);
            if (twin_inside && meshccl::Key<T>::of(v[j - 1]) == key) continue;  // twin pair
        }
        meshccl::unite(P, i, j);
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_MESH(T, I)                                                                      \
    template __global__ void meshccl_mesh_tile<T, I>(const T*, I*, I, const I*, int,           \
        const long long*, int, const int*, const int*, const I*, int,                           \
        typename meshccl::Key<T>::type);                                                          \
    template __global__ void meshccl_mesh_union<T, I>(const T*, I*, I, const I*, int,          \
        const long long*, int, const int*, int, typename meshccl::Key<T>::type);
#define MESHCCL_MESH_I(T) MESHCCL_MESH(T, int) MESHCCL_MESH(T, long long)
MESHCCL_MESH_I(unsigned char)
MESHCCL_MESH_I(unsigned short)
MESHCCL_MESH_I(unsigned int)
MESHCCL_MESH_I(unsigned long long)
MESHCCL_MESH_I(float)
MESHCCL_MESH_I(double)
#endif
