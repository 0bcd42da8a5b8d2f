// iterative.cu -- Hawick, Leist and Playne's iterative mesh labellers (2010,
// section 5) as selectable methods: Kernels A, B, C and D.
//
// These are the classic "propagate until nothing changes" methods, kept so
// that users can compare them with the one-pass union-find of general.cu and
// so that the paper's experiments can be repeated on today's GPUs.  They
// share everything but the propagation with general.cu: the same neighbourhood
// table, tile geometry, joining rule and lattice features (lattice.cuh).
//
// Every foreground cell starts with its own index as label (background and
// masked cells: -1, for good).  A label only ever drops to the smallest label
// among the cells joined to it, so at the fixed point each cell holds the
// smallest index -- the first cell in raster order -- of its component.  That
// is a parent array in the sense of unionfind.cuh (P[x] <= x, roots are first
// cells), and the shared numbering path (number_roots.cu) numbers it 1..N exactly as
// the default method does.  All four methods therefore give identical labels.
//
// A cell looks at its full neighbourhood: both directions of every row of
// the half table plus the left neighbour (lattice.cuh's neighbour()), wrapped
// where an axis is periodic; bonds are read at the cell that stores them.
//
//   A  meshccl_iter_a: one pass of neighbour propagation.  Each cell takes
//      the smallest label among its joined neighbours from the previous
//      pass (two buffers, so a pass is a clean Jacobi step and the pass count
//      is the one the serial twin reports).  Labels move one cell per pass.
//   B  meshccl_iter_b: the same step, then each block (one tile of the mesh
//      geometry) keeps propagating inside its tile in shared memory until
//      the tile is stable (__syncthreads_or); cells outside the tile stay as
//      the previous pass left them.  Labels cross a tile per pass.
//   C  meshccl_iter_c: directional sweeps.  One thread per line of cells
//      along an axis walks the line in one direction, each cell taking the
//      smallest label of its joined neighbours behind it, so a label runs
//      the whole line in one sweep; 2 * ndim sweeps make one iteration.
//      Lines run concurrently and read each other's labels as they change,
//      which is harmless (labels only drop) but makes the iteration count
//      depend on timing by one or two.
//   D  label equivalence, three kernels per iteration: scanning
//      (meshccl_iter_d_scan: every cell whose neighbours hold a smaller
//      label lowers the reference R[label] with atomicMin), analysis
//      (meshccl_iter_d_analyse: every label owner follows its chain of
//      references to the end) and labelling (meshccl_iter_d_label: every
//      cell takes the end of its label's chain).
//
// Each pass sets flag[0] when a label changed; the host reads the flags of
// several passes at once (see meshccl/_gpu/iterate.py), so a pass costs one
// launch, not one launch plus a round trip.

#include "lattice.cuh"

namespace meshccl {

// Smallest label among the joined neighbours of cell c whose key is `key`,
// starting from `best`.  read(j, in_tile, local) gives a neighbour's label
// (or -1 to skip it).  With sel_axis >= 0 only the neighbours behind the cell
// count: moved -1 along that axis for sign > 0, +1 for sign < 0 (sweeps).
template <typename T, typename I, bool Tol, typename Read>
__device__ __forceinline__ I min_joined(const T* v, const Geometry<I>& g, const Cell<I>& c,
                                        const Offset<I>* rows, const long long* table,
                                        const int* loff, int noff, int ndim, const Lattice& lat,
                                        typename Rule<T, Tol>::K key, I best, int sel_axis,
                                        int sign, Read read) {
    typedef Rule<T, Tol> R;
    const int nrows = lat.left() ? noff + 1 : noff;  // the table, then the left row
    for (int o = 0; o < nrows; ++o) {
        const Offset<I> e = row_or_left<I>(rows, table, loff, o, noff, ndim);
        for (int fwd = 0; fwd < 2; ++fwd) {
            if (sel_axis >= 0) {
                const unsigned behind = (sign > 0) == (fwd == 0) ? e.lo : e.hi;
                if (!((behind >> sel_axis) & 1u)) continue;
            }
            bool wrapped, in_tile;
            const I j = neighbour<I>(g, ndim, c, e, fwd != 0, lat.periodic, wrapped, in_tile);
            if (j < 0) continue;
            const I lj = read(j, in_tile, fwd ? -e.loff : e.loff);
            if (lj < 0 || lj >= best) continue;  // background, or no improvement
            if (!lat.open(o, fwd ? j : c.i)) continue;
            if (!R::join(R::key(v[j]), key, lat.tol)) continue;
            best = lj;
        }
    }
    return best;
}

}  // namespace meshccl

#define MESHCCL_ITER_SETUP                                                                  \
    typedef meshccl::Rule<T, Tol> R;                                                        \
    MESHCCL_LATTICE;                                                                        \
    __shared__ meshccl::Geometry<I> geo;                                                    \
    const meshccl::Offset<I>* rows =                                                        \
        meshccl::tile_setup<I>(geo, shape, tlog, tcount, tstride, ndim, table, loff, noff); \
    const meshccl::Cell<I> c = meshccl::tile_cell<I>(geo, ndim)

#define MESHCCL_MIN_JOINED(best, axis, sign, read)                                          \
    meshccl::min_joined<T, I, Tol>(v, geo, c, rows, table, loff, noff, ndim, lat,          \
                                   R::key(v[c.i]), best, axis, sign, read)

// Labels to start from: a cell's own index, -1 for background / masked cells.
template <typename T, typename I, bool Tol, bool Lat>
__global__ void __launch_bounds__(1024) meshccl_iter_init(
        const T* __restrict__ v, I* __restrict__ L, MESHCCL_GRID_PARAMS(T, Tol)) {
    MESHCCL_ITER_SETUP;
    if (!c.in) return;
    const bool bg = (has_bg && R::key(v[c.i]) == bgkey) || !lat.on(c.i);
    L[c.i] = bg ? (I)-1 : c.i;
}

// Kernel A: one Jacobi pass, Lin -> Lout.
template <typename T, typename I, bool Tol, bool Lat>
__global__ void __launch_bounds__(1024) meshccl_iter_a(
        const T* __restrict__ v, const I* __restrict__ Lin, I* __restrict__ Lout,
        int* __restrict__ flag, MESHCCL_GRID_PARAMS(T, Tol)) {
    MESHCCL_ITER_SETUP;
    if (!c.in) return;
    const I cur = Lin[c.i];
    I m = cur;
    if (cur >= 0)
        m = MESHCCL_MIN_JOINED(cur, -1, 0, [&](I j, bool, int) { return Lin[j]; });
    Lout[c.i] = m;
    if (m < cur) *flag = 1;
}

// Kernel B: a Jacobi pass, then propagation inside the tile until stable.
template <typename T, typename I, bool Tol, bool Lat>
__global__ void __launch_bounds__(1024) meshccl_iter_b(
        const T* __restrict__ v, const I* __restrict__ Lin, I* __restrict__ Lout,
        int* __restrict__ flag, MESHCCL_GRID_PARAMS(T, Tol)) {
    MESHCCL_ITER_SETUP;
    extern __shared__ long long smem[];
    volatile I* S = (volatile I*)smem;  // the tile's labels
    const int l = threadIdx.x;
    const I cur = c.in ? Lin[c.i] : (I)-1;
    const bool fg = cur >= 0;
    I m = cur;
    if (fg) m = MESHCCL_MIN_JOINED(cur, -1, 0, [&](I j, bool, int) { return Lin[j]; });
    S[l] = m;
    __syncthreads();
    for (;;) {
        bool changed = false;
        if (fg) {
            const I best = S[l];
            const I lower = MESHCCL_MIN_JOINED(best, -1, 0, [&](I, bool in_tile, int d) {
                return in_tile ? (I)S[l + d] : (I)-1;
            });
            if (lower < best) {
                S[l] = lower;
                changed = true;
            }
        }
        if (!__syncthreads_or(changed)) break;
    }
    if (c.in) {
        Lout[c.i] = S[l];
        if (S[l] != cur) *flag = 1;
    }
}

// Kernel C: one directional sweep along `axis` (sign +1: increasing
// coordinate), one thread per line of cells.  Uses the tile grid's
// parameters for the shape and table, not its tiles.
template <typename T, typename I, bool Tol, bool Lat>
__global__ void __launch_bounds__(128) meshccl_iter_c(
        const T* __restrict__ v, I* L, int* __restrict__ flag, int axis, int sign, I lines,
        MESHCCL_GRID_PARAMS(T, Tol)) {
    typedef meshccl::Rule<T, Tol> R;
    MESHCCL_LATTICE;
    __shared__ meshccl::Geometry<I> geo;
    const meshccl::Offset<I>* rows =
        meshccl::tile_setup<I>(geo, shape, tlog, tcount, tstride, ndim, table, loff, noff);
    const I q = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= lines) return;
    // The line's first cell: q's digits over every axis but `axis`.
    meshccl::Cell<I> c = {0, true, 0u, 0u, ~0u, ~0u, 0u, 0};
    I rem = q;
    unsigned glo = 0u, ghi = 0u;
    for (int k = ndim - 1; k >= 0; --k) {
        if (k == axis) continue;
        const I x = rem % geo.size[k];
        rem /= geo.size[k];
        c.i += x * geo.stride[k];
        if (x == 0) glo |= 1u << k;
        if (x == geo.size[k] - 1) ghi |= 1u << k;
    }
    const I base = c.i, size = geo.size[axis], step = geo.stride[axis];
    const unsigned bit = 1u << axis;
    bool changed = false;
    for (I t = 0; t < size; ++t) {
        const I x = sign > 0 ? t : size - 1 - t;
        c.i = base + x * step;
        c.glo = glo | (x == 0 ? bit : 0u);
        c.ghi = ghi | (x == size - 1 ? bit : 0u);
        const I cur = __ldcg(L + c.i);
        if (cur < 0) continue;
        const I m = MESHCCL_MIN_JOINED(cur, axis, sign, [&](I j, bool, int) { return __ldcg(L + j); });
        if (m < cur) {
            L[c.i] = m;
            changed = true;
        }
    }
    if (changed) *flag = 1;
}

// Kernel D, scanning: lower the reference of each label to the smallest
// label next to any of its cells.
template <typename T, typename I, bool Tol, bool Lat>
__global__ void __launch_bounds__(1024) meshccl_iter_d_scan(
        const T* __restrict__ v, const I* __restrict__ L, I* Rf, int* __restrict__ flag,
        MESHCCL_GRID_PARAMS(T, Tol)) {
    MESHCCL_ITER_SETUP;
    if (!c.in) return;
    const I cur = L[c.i];
    if (cur < 0) return;
    const I m = MESHCCL_MIN_JOINED(cur, -1, 0, [&](I j, bool, int) { return L[j]; });
    if (m < cur) {
        atomicMin(Rf + cur, m);
        *flag = 1;
    }
}

// Kernel D, analysis: each label's owner follows its chain of references.
template <typename I>
__global__ void __launch_bounds__(256) meshccl_iter_d_analyse(const I* __restrict__ L, I* Rf, I n) {
    const I i = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || L[i] != i) return;
    volatile I* Rv = Rf;
    I ref = Rv[i];
    for (I next = Rv[ref]; next != ref; next = Rv[ref]) ref = next;
    Rv[i] = ref;
}

// Kernel D, labelling: every cell takes the end of its label's chain.
template <typename I>
__global__ void __launch_bounds__(256) meshccl_iter_d_label(I* __restrict__ L, const I* __restrict__ Rf, I n) {
    const I i = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const I cur = L[i];
    if (cur >= 0) L[i] = Rf[cur];
}

#undef MESHCCL_ITER_SETUP
#undef MESHCCL_MIN_JOINED
#undef MESHCCL_ROW

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_ITER(T, I, Tol, Lat)                                                          \
    template __global__ void meshccl_iter_init<T, I, Tol, Lat>(                               \
        const T*, I*, MESHCCL_GRID_TYPES(T, I, Tol));                                     \
    template __global__ void meshccl_iter_a<T, I, Tol, Lat>(                                  \
        const T*, const I*, I*, int*, MESHCCL_GRID_TYPES(T, I, Tol));                         \
    template __global__ void meshccl_iter_b<T, I, Tol, Lat>(                                  \
        const T*, const I*, I*, int*, MESHCCL_GRID_TYPES(T, I, Tol));                         \
    template __global__ void meshccl_iter_c<T, I, Tol, Lat>(                                  \
        const T*, I*, int*, int, int, I, MESHCCL_GRID_TYPES(T, I, Tol));                      \
    template __global__ void meshccl_iter_d_scan<T, I, Tol, Lat>(                             \
        const T*, const I*, I*, int*, MESHCCL_GRID_TYPES(T, I, Tol));
#define MESHCCL_ITER_I(T, I)                                                                  \
    MESHCCL_ITER(T, I, false, false) MESHCCL_ITER(T, I, false, true) MESHCCL_ITER(T, I, true, true)
#define MESHCCL_ITER_T(T) MESHCCL_ITER_I(T, int) MESHCCL_ITER_I(T, long long)
MESHCCL_ITER_T(unsigned char)
MESHCCL_ITER_T(unsigned short)
MESHCCL_ITER_T(unsigned int)
MESHCCL_ITER_T(unsigned long long)
MESHCCL_ITER_T(signed char)
MESHCCL_ITER_T(short)
MESHCCL_ITER_T(int)
MESHCCL_ITER_T(long long)
MESHCCL_ITER_T(float)
MESHCCL_ITER_T(double)
template __global__ void meshccl_iter_d_analyse<int>(const int*, int*, int);
template __global__ void meshccl_iter_d_analyse<long long>(const long long*, long long*, long long);
template __global__ void meshccl_iter_d_label<int>(int*, const int*, int);
template __global__ void meshccl_iter_d_label<long long>(long long*, const long long*, long long);
#endif
