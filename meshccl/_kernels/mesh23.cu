// mesh23.cu -- the fast path for plain 2-D and 3-D images.
//
// (Plain 2-D images and one-byte volumes now take the run kernels,
// runs2d.cu and runs3d.cu; the latter uses this file's border kernel on
// its bricks.  This tile kernel labels the rest: 3-D volumes of wider
// cells, and any call that names its tiles.)
//
// Most calls label an ordinary 2-D image or 3-D volume: no mask, bonds,
// tolerance, periodic axes or batch axes.  mesh.cu handles every case in n
// dimensions, but it pays for that generality on every cell.  It loops over
// axes and table rows, works out coordinates and tests bit masks, and most
// of its time goes on issuing instructions, not on moving bytes.  This file
// fixes the geometry at compile time instead: the dimension D (2 or 3;
// 1-D arrays come as one row) and the connectivity C are template
// arguments.  The half neighbourhood is then a few constant steps that the
// compiler unrolls, and a tile's position comes straight from the block's
// grid coordinates, without a single division.
//
// The algorithm is still the union-find of unionfind.cuh.  It takes two
// kernels and then the "pieces" path of relabel.cu:
//
// 1. meshccl_mesh23_tile: tiles of 32 columns (one warp per tile row) by
//    Y rows by Z planes: 32 x 16 in 2-D, 32 x 8 x 4 in 3-D
//    (meshccl/_gpu/mesh23.py picks them).  One thread per cell of a tile; a
//    block does TB tiles stacked along y (2 in 2-D and at 3-D connectivity
//    1), loading all their values before it starts on the first.
//    - Runs along a row come from one warp ballot, with no atomics.
//    - The remaining pairs inside the tile are united in a shared-memory
//      forest.
//    - Each cell stores its piece's root as a global index.  A "piece" is a
//      component of the tile, and its root is the piece's first cell in
//      raster order.
//    - Each row's ballot of piece roots becomes one word of the bit array
//      A, in raster order.
//    Three rules skip pairs that other pairs already join; all three need
//    equality to be transitive:
//    - Covered: the left cell is equal, and the target is also the left
//      cell's neighbour.
//    - Twin: the left cell is equal, and so is the cell just left of the
//      target.  The left cell's own pair then joins them.
//    - Same run: the cell just right of the target is an equal neighbour,
//      so that pair joins them.
//    Each rule points at a pair of an earlier cell, or of the same cell
//    further right, so the skipping never goes round in a circle.
// 2. meshccl_mesh23_border: the same grid.  Only the cells on a tile face
//    with pairs that cross into another tile get threads.  They unite those
//    pairs in the global forest, with the same skipping rules (values read
//    from global memory) and one more, the square rule: a pair across the
//    first column (or, in 3-D, up across the first row) is skipped when the
//    two cells' neighbours one row up (or one plane down) inside their own
//    tiles are equal to them, since the tiles and that row's pair join
//    them.  They record each root they hook in the bit array H.
//
// After that, every cell points at its piece root, or (a border cell that
// a find halved) at a piece root further up.  Every piece root is either a
// root of the whole forest or marked in H.  relabel.cu's pieces path turns
// that into labels in raster order, in place, reading each cell twice at
// most.

#include "launch.cuh"
#include "lattice.cuh"
#include "runs.cuh"

// (The step predicates, meshccl::box, are in lattice.cuh: runs3d.cu's seam kernel
// takes the same ones.)

#define MESHCCL_STEPS                                                                     \
    _Pragma("unroll") for (int dz = -1; dz <= 0; ++dz)                                  \
    _Pragma("unroll") for (int dy = -1; dy <= 1; ++dy)                                  \
    _Pragma("unroll") for (int dx = -1; dx <= 1; ++dx)                                  \
    if (meshccl::box::half_step<D, C>(dz, dy, dx))

// The array is nz x ny x nx (nz = 1 in 2-D).  aligned: nx % 32 == 0, so
// every tile row is one word of A and H, written with plain stores;
// otherwise the host zeroes A and H first and rows OR their bits in.
// Tiles are 32 cells along the last axis (one warp per tile row), TY rows
// and TZ planes (TZ = 1 in 2-D), handled by NW warps; meshccl/_gpu/mesh23.py
// picks them (benchmarks/NOTES.md says how).
//
// A block labels TB tiles stacked along y, one after the other, but loads
// the values of all TB first.  The tile kernel of an image with few unions
// is bound by the latency of its loads (one small load per thread, then
// nothing to do until it arrives); TB loads per thread put TB times the
// bytes in flight without making the tiles, and their shared trees, larger.
template <typename T, typename I, int D, int C, int TY, int TZ, int NW, int TB>
__global__ void __launch_bounds__(32 * NW) meshccl_mesh23_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, I nz, I ny, I nx, int has_bg,
        typename meshccl::Key<T>::type bgkey, int aligned) {
    meshccl::grid_entry();  // (launch.cuh)
    typedef typename meshccl::Key<T>::type K;
    constexpr int ROWS = TY * TZ, CPT = ROWS / NW, CELLS = 32 * ROWS;
    __shared__ K keys[CELLS];
    __shared__ int L[CELLS];  // the tile's forest; -1: background or outside the array
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I x = (I)blockIdx.x * 32 + lane;
    const I z0 = (I)blockIdx.z * TZ;
    T raw[TB][CPT];
#pragma unroll
    for (int b = 0; b < TB; ++b) {
#pragma unroll
        for (int k = 0; k < CPT; ++k) {
            const int row = warp + k * NW;
            const I y = ((I)blockIdx.y * TB + b) * TY + row % TY, z = z0 + row / TY;
            raw[b][k] = (x < nx && y < ny && z < nz) ? v[(z * ny + y) * nx + x] : T();
        }
    }
#pragma unroll
    for (int b = 0; b < TB; ++b) {
        const I y0 = ((I)blockIdx.y * TB + b) * TY;
        if (y0 >= ny) break;  // the same for the whole block
        if (b) __syncthreads();  // the previous tile's finds are done with L
        K key[CPT];
        bool fg[CPT], eql[CPT];
        I idx[CPT];
        // Keys, and runs along the row: a cell equal to its left neighbour points
        // at the first cell of its run (the highest lane at or below it that is
        // not equal to its left).
#pragma unroll
        for (int k = 0; k < CPT; ++k) {
            const int row = warp + k * NW;
            const I y = y0 + row % TY, z = z0 + row / TY;
            const bool in = x < nx && y < ny && z < nz;
            const I i = (z * ny + y) * nx + x;
            const K kk = in ? meshccl::Key<T>::of(raw[b][k]) : K();
            const bool f = in && !(has_bg && kk == bgkey);
            const K left = meshccl::box::shfl_up(kk);
            const bool e = f && lane > 0 && left == kk;
            const unsigned m = __ballot_sync(0xffffffffu, e);
            const unsigned upto = lane == 31 ? 0xffffffffu : ((2u << lane) - 1u);
            const int l = row * 32 + lane;
            keys[l] = kk;
            L[l] = f ? row * 32 + (31 - __clz(~m & upto)) : -1;
            idx[k] = i;
            key[k] = kk;
            fg[k] = f;
            eql[k] = e;
        }
        __syncthreads();
        // The other pairs inside the tile, minus the ones the rules skip.
#pragma unroll
        for (int k = 0; k < CPT; ++k) {
            if (!fg[k]) continue;
            const int row = warp + k * NW, ly = row % TY, lz = row / TY;
            const int l = row * 32 + lane;
            // The unrolled tests only collect the steps to unite (bit s of
            // todo, see step_bit); one call site of unite() keeps the code small.
            unsigned todo = 0u;
            MESHCCL_STEPS {
                if (lz + dz < 0 || ly + dy < 0 || ly + dy >= TY || lane + dx < 0 || lane + dx > 31)
                    continue;  // not in this tile: the border kernel's pair
                const int j = l + (dz * TY + dy) * 32 + dx;
                if (L[j] < 0 || keys[j] != key[k]) continue;
                if (meshccl::box::half_step<D, C>(dz, dy, dx + 1) && lane + dx < 31 &&
                    L[j + 1] >= 0 && keys[j + 1] == key[k])
                    continue;  // same run
                if (eql[k]) {
                    if (meshccl::box::neighbour_step<D, C>(dz, dy, dx + 1)) continue;  // covered
                    if (lane + dx > 0 && L[j - 1] >= 0 && keys[j - 1] == key[k]) continue;  // twin
                }
                todo |= meshccl::box::step_bit(dz, dy, dx);
            }
            for (; todo; todo &= todo - 1u) {
                const int s = __ffs(todo) - 1;
                const int dz = s / 9 - 1, dy = (s / 3) % 3 - 1, dx = s % 3 - 1;
                meshccl::unite<true>(L, l, l + (dz * TY + dy) * 32 + dx);
            }
        }
        __syncthreads();
        // Each cell's piece root, as a global index; piece roots into A.
#pragma unroll
        for (int k = 0; k < CPT; ++k) {
            const int row = warp + k * NW;
            const I y = y0 + row % TY, z = z0 + row / TY;
            const bool rowin = y < ny && z < nz;
            const int l = row * 32 + lane;
            bool root = false;
            if (fg[k]) {
                const int r = meshccl::find<true>(L, l);  // halving: shared walks shorten
                root = r == l;
                const int rr = r >> 5;
                P[idx[k]] = ((z0 + rr / TY) * ny + (y0 + rr % TY)) * nx + (x - lane + (r & 31));
            } else if (rowin && x < nx) {
                P[idx[k]] = (I)-1;
            }
            const unsigned m = __ballot_sync(0xffffffffu, root);
            if (lane == 0 && rowin) {
                const I w = idx[k] >> 5;  // lane 0's cell is always inside the row
                if (aligned) {
                    A[w] = m;
                    H[w] = 0u;
                } else if (m) {
                    const int s = (int)(idx[k] & 31);
                    atomicOr(A + w, m << s);
                    if (s) atomicOr(A + w + 1, m >> (32 - s));
                }
            }
        }
    }  // the block's next tile
}

// How many cells of a tile the border kernel visits (see there); the host
// (meshccl/_gpu/mesh23.py) computes the same number for the block size.
// Runs: runs3d.cu's bricks, whose first plane's pairs with the plane below
// (partners in the same column of tiles) are runs3d.cu's z-face kernel's,
// so the first plane is visited like the others.  (runs3d.cu's seam kernel
// takes the same pairs faster and is the default; this form stays behind
// meshccl/_gpu/mesh23.py RUNS_3D_SEAMS = False.)
template <int D, int C, int TY_, int TZ_, bool Runs = false>
struct Border {
    enum {
        TY = TY_,
        TZ = TZ_,
        // 3-D with diagonal steps: (-1, +1, .) crosses the tile's high-y face
        EXTRA = (D == 3 && C >= 2) ? 1 : 0,
        FIRST = Runs ? 0 : TY,                             // whole rows of the first plane
        P0 = Runs ? 0 : 1,                                 // the first plane of the others
        ROWS = D == 2 ? 1 : FIRST + (TZ - P0) * (1 + EXTRA),  // whole rows on a face
        PER = TY - 1 - EXTRA,                              // other rows per plane
        COLS = D == 2 ? TY - 1 : (TZ - P0) * PER,          // their first (and last) cells
        ITEMS = ROWS * 32 + COLS * (C >= 2 ? 2 : 1)         // (C >= 2: dx = +1 crosses too)
    };
};

// Cells with a pair that crosses the tile's faces.  Whole rows: 2-D: the
// first row; 3-D: the first plane, and in the others the first row (and the
// last row when steps go to y + 1).  Then the first cell of each other row
// (its left pairs cross), and with C >= 2 its last cell too (steps to x + 1
// cross).  Item t of a tile maps to one such cell; rows first, so that
// warps read whole rows.
//
// Runs (runs3d.cu's bricks, TY = 32): the forest's nodes are run starts, not
// cells; a cell's node is looked up in the bit array S (runs.cuh, node).
// The pairs of the brick's first plane with the plane below whose partner
// is in the brick's column of tiles are runs3d.cu's z-face kernel's, so the
// first plane is only visited on its first and last rows and columns.
template <typename T, typename I, int D, int C, int TY, int TZ, bool Runs>
__global__ void __launch_bounds__(256) meshccl_mesh23_border(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I nz, I ny, I nx, int has_bg, typename meshccl::Key<T>::type bgkey) {
    meshccl::grid_entry();  // (launch.cuh)
    typedef typename meshccl::Key<T>::type K;
    typedef Border<D, C, TY, TZ, Runs> B;
    for (int t = threadIdx.x; t < (int)B::ITEMS; t += blockDim.x) {
        int lx, ly, lz;
        if (t < B::ROWS * 32) {
            const int r = t >> 5;
            lx = t & 31;
            if (D == 2) { ly = 0; lz = 0; }
            else if (r < B::FIRST) { lz = 0; ly = r; }
            else {
                const int q = r - B::FIRST;
                lz = B::P0 + q / (1 + B::EXTRA);
                ly = (q % (1 + B::EXTRA)) ? TY - 1 : 0;
            }
        } else {
            const int t2 = t - B::ROWS * 32, q = t2 % B::COLS;
            lx = t2 >= B::COLS ? 31 : 0;
            if (D == 2) { lz = 0; ly = 1 + q; }
            else { lz = B::P0 + q / B::PER; ly = 1 + q % B::PER; }
        }
        const I x = (I)blockIdx.x * 32 + lx, y = (I)blockIdx.y * TY + ly;
        const I z = (I)blockIdx.z * B::TZ + lz;
        if (x >= nx || y >= ny || z >= nz) continue;
        const I i = (z * ny + y) * nx + x;
        const K key = meshccl::Key<T>::of(v[i]);
        if (has_bg && key == bgkey) continue;
        const bool eql = x > 0 && meshccl::Key<T>::of(v[i - 1]) == key;
        const I plane = ny * nx;
        // The pair to the left across the tile's first column, unless the
        // square rule skips it: the cells above (or, in 3-D, below) this one
        // and its partner are equal to them and in their tiles (ly > 0, lz >
        // 0), so each tile joined its two cells and the earlier row's (plane's)
        // pair to the left joins the tiles.  In a region that crosses the
        // column this leaves one union, not one per row.
        unsigned todo = 0u;
        if (lx == 0 && eql &&
            !(ly > 0 && meshccl::Key<T>::of(v[i - nx]) == key &&
              meshccl::Key<T>::of(v[i - nx - 1]) == key) &&
            !(D == 3 && lz > 0 && meshccl::Key<T>::of(v[i - plane]) == key &&
              meshccl::Key<T>::of(v[i - plane - 1]) == key))
            todo = meshccl::box::step_bit(0, 0, -1);
        // runs3d.cu's z rules (Runs): is the partner straight down equal?
        const bool zeq = D == 3 && Runs && z > 0 && meshccl::Key<T>::of(v[i - plane]) == key;
        MESHCCL_STEPS {
            if (!((!Runs && lz + dz < 0) || ly + dy < 0 || ly + dy >= TY || lx + dx < 0 ||
                  lx + dx > 31))
                continue;  // inside the tile: the tile kernel's pair (or the z-face kernel's)
            if (z + dz < 0 || y + dy < 0 || y + dy >= ny || x + dx < 0 || x + dx >= nx) continue;
            const I j = i + ((I)dz * ny + dy) * nx + dx;
            if (D == 3 && Runs && dz < 0) {
                // As in runs3d.cu: straight down by the twin, covered and column
                // rules only (never "same run": the other z pairs defer to this
                // one); any other z pair not at all when this one is equal (its
                // partner is an in-plane neighbour of this one's).
                if (dy == 0 && dx == 0) {
                    if (!zeq) continue;
                    if (y > 0 && meshccl::Key<T>::of(v[i - nx]) == key &&
                        meshccl::Key<T>::of(v[i - plane - nx]) == key)
                        continue;  // column
                    if (eql && (C >= 2 || meshccl::Key<T>::of(v[j - 1]) == key))
                        continue;  // covered (C >= 2) or twin
                    todo |= meshccl::box::step_bit(dz, dy, dx);
                    continue;
                }
                if (zeq) continue;
            }
            if (meshccl::Key<T>::of(v[j]) != key) continue;
            if (D == 3 && dz == 0 && dy < 0 && dx == 0 && lz > 0 &&
                meshccl::Key<T>::of(v[i - plane]) == key &&
                meshccl::Key<T>::of(v[j - plane]) == key)
                continue;  // the square rule (above) on a tile's first row, along z
            if (meshccl::box::half_step<D, C>(dz, dy, dx + 1) && x + dx + 1 < nx &&
                meshccl::Key<T>::of(v[j + 1]) == key)
                continue;  // same run
            if (eql) {
                if (meshccl::box::neighbour_step<D, C>(dz, dy, dx + 1)) continue;  // covered
                if (x + dx > 0 && meshccl::Key<T>::of(v[j - 1]) == key) continue;   // twin
            }
            todo |= meshccl::box::step_bit(dz, dy, dx);
        }
        for (; todo; todo &= todo - 1u) {  // one call site, as in the tile kernel
            const int s = __ffs(todo) - 1;
            const int dz = s / 9 - 1, dy = (s / 3) % 3 - 1, dx = s % 3 - 1;
            if (Runs)
                meshccl::unite_recording(
                    P, H, meshccl::runs::node(S, z * ny + y, x, nz * ny, nx),
                    meshccl::runs::node(S, (z + dz) * ny + y + dy, x + dx, nz * ny, nx));
            else
                meshccl::unite_recording(P, H, i, i + ((I)dz * ny + dy) * nx + dx);
        }
    }
}

#undef MESHCCL_STEPS

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
// (The tile shapes are meshccl/_gpu/mesh23.py's TILES and TILES_PER_BLOCK.)
#define MESHCCL_M23(T, I, D, C, TY, TZ, NW, TB)                                                  \
    template __global__ void meshccl_mesh23_tile<T, I, D, C, TY, TZ, NW, TB>(                    \
        const T*, I*, unsigned*, unsigned*, I, I, I, int, meshccl::Key<T>::type, int);            \
    template __global__ void meshccl_mesh23_border<T, I, D, C, TY, TZ, false>(                   \
        const T*, I*, unsigned*, const unsigned*, I, I, I, int, meshccl::Key<T>::type);
#define MESHCCL_M23_I(T, I) \
    MESHCCL_M23(T, I, 2, 1, 16, 1, 16, 2) MESHCCL_M23(T, I, 2, 2, 16, 1, 16, 2) \
    MESHCCL_M23(T, I, 3, 1, 8, 4, 32, 2) MESHCCL_M23(T, I, 3, 2, 8, 4, 32, 1) \
    MESHCCL_M23(T, I, 3, 3, 8, 4, 32, 1)
#define MESHCCL_M23_T(T) MESHCCL_M23_I(T, int) MESHCCL_M23_I(T, long long)
// runs3d.cu's bricks (one-byte cells, 32 x 32 x 8)
#define MESHCCL_M23_RUNS(T, I, C)                                                                \
    template __global__ void meshccl_mesh23_border<T, I, 3, C, 32, 8, true>(                     \
        const T*, I*, unsigned*, const unsigned*, I, I, I, int, meshccl::Key<T>::type);
// (16 planes at connectivity 1: meshccl/_gpu/mesh23.py RUNS_3D_PLANES)
#define MESHCCL_M23_RUNS16(T, I)                                                                 \
    template __global__ void meshccl_mesh23_border<T, I, 3, 1, 32, 16, true>(                    \
        const T*, I*, unsigned*, const unsigned*, I, I, I, int, meshccl::Key<T>::type);
#define MESHCCL_M23_RUNS_T(T) MESHCCL_M23_RUNS(T, int, 1) MESHCCL_M23_RUNS(T, int, 2) \
    MESHCCL_M23_RUNS(T, int, 3) MESHCCL_M23_RUNS(T, long long, 1) \
    MESHCCL_M23_RUNS(T, long long, 2) MESHCCL_M23_RUNS(T, long long, 3) \
    MESHCCL_M23_RUNS16(T, int) MESHCCL_M23_RUNS16(T, long long)
MESHCCL_M23_RUNS_T(unsigned char)
MESHCCL_M23_RUNS_T(signed char)
MESHCCL_M23_T(unsigned char)
MESHCCL_M23_T(unsigned short)
MESHCCL_M23_T(unsigned int)
MESHCCL_M23_T(unsigned long long)
MESHCCL_M23_T(signed char)
MESHCCL_M23_T(short)
MESHCCL_M23_T(int)
MESHCCL_M23_T(long long)
MESHCCL_M23_T(float)
MESHCCL_M23_T(double)
#endif
