// general.cu -- one-pass union-find labelling of n-dimensional meshes.
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
// Both kernels stage the rows in shared memory (up to 128 of them; more are
// read from global memory) and find a cell's coordinates from its tile's
// origin (one division per axis per block) plus the bits of its thread index.
// A cell's position on the boundary is two bit masks (at the low / high end
// of each axis), so "is this neighbour inside" is two ANDs.  The same test
// with masks taken relative to a tile says "is this neighbour in my tile".
//
// Two kernels, no iteration to convergence (block-based union-find, in the
// spirit of Allegretti, Bolelli and Grana's BUF and of Playne and Hawick's
// 2018 kernels):
//
// 1. meshccl_general_tile -- one thread block per tile of up to 1024 cells: a
//    power-of-two box over the last (up to three) axes, e.g. 32 x 32 in 2-D
//    and 4 x 8 x 32 in 3-D.  The block stages the keys in shared memory,
//    finds runs along the last axis with one warp ballot (cells inside a run
//    point at its first cell without any atomic), unites the remaining pairs
//    of equal neighbours inside the tile in a shared-memory forest (the same
//    find / unite as unionfind.cuh, and the same skipping rules as kernel 2),
//    and
//    writes each cell's global parent: the first cell, in raster order, of
//    its piece of the tile.  Long runs, columns and spirals collapse here at
//    shared-memory speed, so no long pointer chains reach global memory.
//
// 2. meshccl_general_union -- the same grid of tiles; each cell unites the
//    pairs that cross a tile border, with the global unite() of unionfind.cuh.  Cells in a
//    tile's interior find no such pair and leave after a few bit tests.  Two
//    rules skip pairs that are already implied when the left cell is equal
//    (the "critical cell" idea of Playne and Hawick): an offset whose target
//    is also a neighbour of the left cell ("covered"), and an offset o whose
//    shifted twin (left, left+o) is an equal pair -- that pair is united by
//    the tile kernel or by the left cell itself, so i and i+o already meet.
//
// Then number_roots.cu flattens the forest and numbers the roots in raster order.

#include "lattice.cuh"

template <typename T, typename I, bool Tol, bool Lat>
__global__ void __launch_bounds__(1024, 2) meshccl_general_tile(
        const T* __restrict__ v, I* __restrict__ P, MESHCCL_GRID_PARAMS(T, Tol)) {
    typedef meshccl::Rule<T, Tol> R;
    typedef typename R::K K;
    MESHCCL_LATTICE;
    __shared__ meshccl::Geometry<I> geo;
    extern __shared__ long long smem[];
    K* keys = (K*)smem;                                                    // key of each tile cell
    I* G = (I*)((char*)smem + ((blockDim.x * sizeof(K) + 7) & ~7u));      // its global index
    int* L = (int*)(G + blockDim.x);                   // the tile's forest (tile-local indices)
    const int l = threadIdx.x;
    const meshccl::Offset<I>* rows =
        meshccl::tile_setup<I>(geo, shape, tlog, tcount, tstride, ndim, table, loff, noff);
    const meshccl::Cell<I> c = meshccl::tile_cell<I>(geo, ndim);
    const I i = c.in ? c.i : (I)0;
    // The skipping rules need a transitive join and no closed bonds.
    const bool rules = !Tol && !(lat.flags & MESHCCL_HAS_BONDS);
    K key = K();
    bool fg = false;
    if (c.in) {
        key = R::key(v[i]);
        fg = !(has_bg && key == bgkey) && lat.on(i);
    }
    keys[l] = key;
    G[l] = i;
    L[l] = fg ? l : -1;  // the sign of L[l] says "foreground" from here on
    __syncthreads();
    // Runs along the last axis: one ballot per warp.  A cell joined to its
    // left neighbour (inside the tile) points at the first cell of its run in
    // the warp; runs entering from the previous warp (1-D tiles longer than
    // 32) are united below.  No atomics for the cells inside a run.
    const unsigned lastbit = 1u << (ndim - 1);
    const bool eqlx = fg && lat.left() && !(c.llo & lastbit) && L[l - 1] >= 0 &&
                      R::join(keys[l - 1], key, tol) && lat.open(noff, i);
    // Tiles of fewer than 32 cells (tiny arrays) leave the warp partly empty:
    // the ballot must name only the lanes that exist.
    const int wlanes = min(32, (int)blockDim.x - (l & ~31));
    const unsigned m = __ballot_sync(wlanes == 32 ? 0xffffffffu : ((1u << wlanes) - 1u), eqlx);
    const int lane = l & 31;
    const unsigned starts = ~m & (lane == 31 ? 0xffffffffu : ((2u << lane) - 1u));
    __syncthreads();
    if (eqlx && starts) L[l] = (l & ~31) + (31 - __clz(starts));
    __syncthreads();
    if (fg) {
        if (eqlx && !starts) meshccl::unite<true>(L, l, l - 1);
        for (int o = 0; o < noff; ++o) {
            const meshccl::Offset<I> e = MESHCCL_ROW(o);
            if (!meshccl::inside(c.llo, c.lhi, e)) continue;
            const int j = l + e.loff;
            if (L[j] < 0 || !R::join(keys[j], key, tol) || !lat.open(o, i)) continue;
            if (rules && eqlx) {
                // The same two rules as the union kernel (see the essay), for
                // pairs whose twin lies in this tile too.
                if (e.flags & 1) continue;
                const bool twin_in_tile = !((e.flags & 2) && !(c.lmid & lastbit));
                if (twin_in_tile && L[j - 1] >= 0 && R::join(keys[j - 1], key, tol)) continue;
            }
            meshccl::unite<true>(L, l, j);
        }
    }
    __syncthreads();
    if (c.in) {
        if (!fg) {
            P[i] = (I)-1;
        } else {
            int r = l;
            while (L[r] != r) r = L[r];
            P[i] = G[r];  // tile order is raster order: G[r] is the piece's first cell
        }
    }
}

// Same grid as meshccl_general_tile: block = tile, thread = cell.
template <typename T, typename I, bool Tol, bool Lat>
__global__ void __launch_bounds__(1024, 2) meshccl_general_union(
        const T* __restrict__ v, I* P, MESHCCL_GRID_PARAMS(T, Tol)) {
    typedef meshccl::Rule<T, Tol> R;
    typedef typename R::K K;
    MESHCCL_LATTICE;
    __shared__ meshccl::Geometry<I> geo;
    const meshccl::Offset<I>* rows =
        meshccl::tile_setup<I>(geo, shape, tlog, tcount, tstride, ndim, table, loff, noff);
    const meshccl::Cell<I> c = meshccl::tile_cell<I>(geo, ndim);
    if (!c.in) return;
    const I i = c.i;
    const bool rules = !Tol && !(lat.flags & MESHCCL_HAS_BONDS);
    const unsigned lastbit = 1u << (ndim - 1);
    K key = K();
    bool loaded = false, eql = false;
    // Read this cell only once a pair that crosses a tile border shows up.
#define MESHCCL_LOAD_SELF                                                          \
    if (!loaded) {                                                                 \
        key = R::key(v[i]);                                                        \
        if ((has_bg && key == bgkey) || !lat.on(i)) return;                        \
        loaded = true;                                                             \
        eql = rules && lat.left() && c.clast > 0 && lat.on(i - 1) &&               \
              R::join(R::key(v[i - 1]), key, tol) && lat.open(noff, i);            \
    }
#define MESHCCL_JOINS(j, row)                                                      \
    (!(has_bg && R::key(v[j]) == bgkey) && lat.on(j) &&                            \
     R::join(R::key(v[j]), key, tol) && lat.open(row, i))
    // The left neighbour, when it lies in the previous tile (or wraps around).
    if ((c.llo & lastbit) && lat.left()) {
        I j = -1;
        if (c.clast > 0) j = i - 1;
        else if (lat.periodic & lastbit) j = i + geo.size[ndim - 1] - 1;
        if (j >= 0) {
            MESHCCL_LOAD_SELF;
            if (MESHCCL_JOINS(j, noff)) meshccl::unite(P, i, j);
        }
    }
    for (int o = 0; o < noff; ++o) {
        const meshccl::Offset<I> e = MESHCCL_ROW(o);
        I j = i + e.lin;
        const unsigned out_lo = c.glo & e.lo, out_hi = c.ghi & e.hi;
        const bool wrapped = (out_lo | out_hi) != 0u;
        if (!wrapped) {
            if (meshccl::inside(c.llo, c.lhi, e)) continue;  // done by the tile kernel
        } else {
            if ((out_lo | out_hi) & ~lat.periodic) continue;  // off a non-periodic edge
            for (int k = 0; k < ndim; ++k) {                  // wrap around each axis left
                const I span = geo.size[k] * geo.stride[k];
                if (out_lo & (1u << k)) j += span;
                if (out_hi & (1u << k)) j -= span;
            }
        }
        MESHCCL_LOAD_SELF;
        if (!MESHCCL_JOINS(j, o)) continue;
        if (eql && !wrapped) {
            if (e.flags & 1) continue;                          // covered by the left cell
            const bool twin_inside = !((e.flags & 2) && c.clast == 1);
            if (twin_inside && MESHCCL_JOINS(j - 1, o)) continue;  // twin pair
        }
        meshccl::unite(P, i, j);
    }
#undef MESHCCL_LOAD_SELF
#undef MESHCCL_JOINS
}

#undef MESHCCL_ROW

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_MESH_ARGS(T, I, Tol) (const T*, I*, MESHCCL_GRID_TYPES(T, I, Tol))
#define MESHCCL_MESH(T, I, Tol, Lat)                                                          \
    template __global__ void meshccl_general_tile<T, I, Tol, Lat> MESHCCL_MESH_ARGS(T, I, Tol); \
    template __global__ void meshccl_general_union<T, I, Tol, Lat> MESHCCL_MESH_ARGS(T, I, Tol);
#define MESHCCL_MESH_I(T, I)                                                                  \
    MESHCCL_MESH(T, I, false, false) MESHCCL_MESH(T, I, false, true) MESHCCL_MESH(T, I, true, true)
#define MESHCCL_MESH_T(T) MESHCCL_MESH_I(T, int) MESHCCL_MESH_I(T, long long)
MESHCCL_MESH_T(unsigned char)
MESHCCL_MESH_T(unsigned short)
MESHCCL_MESH_T(unsigned int)
MESHCCL_MESH_T(unsigned long long)
MESHCCL_MESH_T(signed char)
MESHCCL_MESH_T(short)
MESHCCL_MESH_T(int)
MESHCCL_MESH_T(long long)
MESHCCL_MESH_T(float)
MESHCCL_MESH_T(double)
#endif
