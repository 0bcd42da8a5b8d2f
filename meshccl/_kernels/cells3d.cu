// cells3d.cu -- 3-D volumes with a mask, bonds or a tolerance: every cell a node.
//
// Plain volumes of every cell type take runs3d.cu, whose nodes are runs.
// This file's lattice form takes volumes of any cell type with a mask,
// bonds or a tolerance; its plain form (PlainJoin, the kernels
// meshccl_cells3d_tile and meshccl_cells3d_border) no longer serves a call
// (docs/decisions.md: "runs in 3-D for every cell type").  The
// geometry is fixed at compile time: the connectivity C is a template
// argument, so the half neighbourhood is a few constant steps that the
// compiler unrolls, and a tile's position comes straight from the block's
// grid coordinates, without a division.
//
// The lattice form (a mask, bonds, a tolerance: end of this file) runs the
// same two kernels' code.  Each kernel is one skeleton, templated on a join
// policy (lattice.cuh: PlainJoin, LatticeJoin) that says which neighbouring
// pairs join and whether joining is transitive, which the skipping rules
// below need (PlainJoin only; LatticeJoin's tests fold away in the plain
// kernels).  The kernels themselves only build the policy and call the
// skeleton (meshccl::cells3d::tile, border), so a fix to a loop lands in
// both forms.
//
// The algorithm is the union-find of unionfind.cuh, in two kernels, then
// the pieces numbering of number_pieces.cu (meshccl_label_cells):
//
// 1. meshccl_cells3d_tile: tiles of 32 columns (one warp per tile row) by
//    TY rows by TZ planes (32 x 8 x 4; meshccl/_gpu/image_plain.py picks
//    them), one thread per cell.  A block does TB tiles stacked along y,
//    loading all their values before it starts on the first.
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
// 2. meshccl_cells3d_border: the same grid.  Only the cells on a tile face
//    with pairs that cross into another tile get threads.  They unite those
//    pairs in the global forest, with the same skipping rules (values read
//    from global memory) and one more, the square rule: a pair across the
//    first column (or up across the first row) is skipped when the two
//    cells' neighbours one row up (or one plane down) inside their own
//    tiles are equal to them, since the tiles and that row's pair join
//    them.  They record each root they hook in the bit array H.
//
// After that, every cell points at its piece root, or (a border cell that
// a find halved) at a piece root further up.  Every piece root is either a
// root of the whole forest or marked in H: exactly what number_pieces.cu
// takes.

#include "launch.cuh"
#include "lattice.cuh"
#include "runs.cuh"

// The step predicates, meshccl::box, are in lattice.cuh (runs3d.cu's seam
// kernel takes the same ones).  D is 3: the predicates and this file's
// index arithmetic are written for a (z, y, x) box.
constexpr int D = 3;

#define MESHCCL_STEPS                                                                     \
    _Pragma("unroll") for (int dz = -1; dz <= 0; ++dz)                                  \
    _Pragma("unroll") for (int dy = -1; dy <= 1; ++dy)                                  \
    _Pragma("unroll") for (int dx = -1; dx <= 1; ++dx)                                  \
    if (meshccl::box::half_step<D, C>(dz, dy, dx))

namespace meshccl {
namespace cells3d {

// The last step of the tile skeleton, for one tile row of a warp: each
// cell's piece root (its tile forest's root, halving on the way) as a
// global index in P (-1: background), and the row's piece roots as one
// ballot into the bit array A (H cleared with it when the rows are
// aligned; otherwise OR-ed in, A and H zeroed by the host).
template <int TY, typename I>
__device__ __forceinline__ void piece_root(int* L, I* P, unsigned* A, unsigned* H, bool fg,
                                           I idx, int row, int lane, I x, I y0, I z0, I ny,
                                           I nx, I nz, int aligned) {
    const I y = y0 + row % TY, z = z0 + row / TY;
    const bool rowin = y < ny && z < nz;
    const int l = row * 32 + lane;
    bool root = false;
    if (fg) {
        const int r = meshccl::find<true>(L, l);  // halving: shared walks shorten
        root = r == l;
        const int rr = r >> 5;
        P[idx] = ((z0 + rr / TY) * ny + (y0 + rr % TY)) * nx + (x - lane + (r & 31));
    } else if (rowin && x < nx) {
        P[idx] = (I)-1;
    }
    const unsigned m = __ballot_sync(0xffffffffu, root);
    if (lane == 0 && rowin) {
        const I w = idx >> 5;  // lane 0's cell is always inside the row
        if (aligned) {
            A[w] = m;
            H[w] = 0u;
        } else if (m) {
            const int s = (int)(idx & 31);
            atomicOr(A + w, m << s);
            if (s) atomicOr(A + w + 1, m >> (32 - s));
        }
    }
}

// The closed bonds of cell i: bit step_index(dz, dy, dx) for each step of
// the half neighbourhood (left included) whose bond is closed (0 without
// bonds: always with PlainJoin).  The loads do not wait on the cell's
// value, so they go out with it.
template <int C, typename J>
__device__ __forceinline__ unsigned closed_bonds(const J& join, long long i) {
    unsigned shut = 0u;
    if (!join.bonds()) return shut;
#pragma unroll
    for (int dz = -1; dz <= 0; ++dz)
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx)
                if ((meshccl::box::half_step<D, C>(dz, dy, dx) || (dz == 0 && dy == 0 && dx == -1)) &&
                    !join.open(join.bond(dz, dy, dx), i))
                    shut |= meshccl::box::step_bit(dz, dy, dx);
    return shut;
}

// The tile kernels' skeleton, for both forms (the join policy J: lattice.cuh
// PlainJoin or LatticeJoin).  The array is nz x ny x nx.  aligned: nx % 32
// == 0, so every tile row is one word of A and H, written with plain
// stores; otherwise the host zeroes A and H first and rows OR their bits
// in.  Tiles are 32 cells along the last axis (one warp per tile row), TY
// rows and TZ planes, handled by NW warps; meshccl/_gpu/image_plain.py picks
// them (_tuning.CELLS3D_TILES, CELLS3D_TILES_PER_BLOCK).
//
// A block labels TB tiles stacked along y, one after the other, but loads
// the values of all TB first.  The tile kernel of an image with few unions
// is bound by the latency of its loads (one small load per thread, then
// nothing to do until it arrives); TB loads per thread put TB times the
// bytes in flight without making the tiles, and their shared trees, larger.
// (The lattice form takes TB = 1.)
template <int C, int TY, int TZ, int NW, int TB, typename J, typename T, typename I>
__device__ __forceinline__ void tile(const J& join, const T* __restrict__ v, I* __restrict__ P,
                                     unsigned* __restrict__ A, unsigned* __restrict__ H, I nz,
                                     I ny, I nx, int aligned) {
    typedef typename J::K K;
    constexpr int ROWS = TY * TZ, CPT = ROWS / NW, CELLS = 32 * ROWS;
    __shared__ K keys[CELLS];
    __shared__ int L[CELLS];  // the tile's forest; -1: not foreground or outside the array
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
        unsigned shut[CPT];  // closed bonds (not transitive only)
        // Keys, foreground, closed bonds, and runs along the row: a cell
        // joined to its left neighbour points at the first cell of its run
        // (the highest lane at or below it that is not joined to its left).
#pragma unroll
        for (int k = 0; k < CPT; ++k) {
            const int row = warp + k * NW;
            const I y = y0 + row % TY, z = z0 + row / TY;
            const bool in = x < nx && y < ny && z < nz;
            const I i = (z * ny + y) * nx + x;
            const K kk = in ? J::key(raw[b][k]) : K();
            // (foreground: not the background and, with features, in the mask)
            const bool f = in && (J::features ? join.on(i) && !join.bg(kk)
                                              : !(join.has_bg && kk == join.bgkey));
            const K left = meshccl::box::shfl_up(kk);
            bool e;
            if constexpr (J::transitive) {
                // (join is equality: a foreground cell's equal left
                // neighbour is foreground, and there are no bonds)
                e = f && lane > 0 && left == kk;
            } else {
                shut[k] = in ? closed_bonds<C>(join, i) : 0u;
                const bool lf = __shfl_up_sync(0xffffffffu, (int)f, 1) != 0;
                e = f && lane > 0 && lf && !(shut[k] & meshccl::box::step_bit(0, 0, -1)) &&
                    join.join(left, kk);
            }
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
        // The other joined pairs inside the tile, minus the ones the rules
        // skip (transitive only).  Unions write only roots of foreground
        // cells, so L[j] < 0 stays a fixed test while they run.
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
                if (L[j] < 0) continue;
                if constexpr (!J::transitive) {
                    if (shut[k] & meshccl::box::step_bit(dz, dy, dx)) continue;  // closed bond
                }
                if (!join.join(keys[j], key[k])) continue;
                if constexpr (J::transitive) {  // (join is equality)
                    if (meshccl::box::half_step<D, C>(dz, dy, dx + 1) && lane + dx < 31 &&
                        L[j + 1] >= 0 && keys[j + 1] == key[k])
                        continue;  // same run
                    if (eql[k]) {
                        if (meshccl::box::neighbour_step<D, C>(dz, dy, dx + 1)) continue;  // covered
                        if (lane + dx > 0 && L[j - 1] >= 0 && keys[j - 1] == key[k]) continue;  // twin
                    }
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
            piece_root<TY>(L, P, A, H, fg[k], idx[k], warp + k * NW, lane, x, y0, z0, ny, nx,
                           nz, aligned);
        }
    }  // the block's next tile
}

// How many cells of a tile the border kernel visits (see there); the host
// (meshccl/_gpu/image_plain.py, border_items) computes the same number for
// the block size.
template <int C, int TY_, int TZ_>
struct Border {
    enum {
        TY = TY_,
        TZ = TZ_,
        // diagonal steps: (-1, +1, .) crosses the tile's high-y face
        EXTRA = C >= 2 ? 1 : 0,
        ROWS = TY + (TZ - 1) * (1 + EXTRA),        // whole rows on a face
        PER = TY - 1 - EXTRA,                      // other rows per plane
        COLS = (TZ - 1) * PER,                     // their first (and last) cells
        ITEMS = ROWS * 32 + COLS * (C >= 2 ? 2 : 1)  // (C >= 2: dx = +1 crosses too)
    };
    // The tile cell (lx, ly, lz) of item t < ITEMS (see the border kernel).
    static __device__ __forceinline__ void cell(int t, int& lx, int& ly, int& lz) {
        if (t < ROWS * 32) {
            const int r = t >> 5;
            lx = t & 31;
            if (r < TY) {
                lz = 0;
                ly = r;
            } else {
                const int q = r - TY;
                lz = 1 + q / (1 + EXTRA);
                ly = (q % (1 + EXTRA)) ? TY - 1 : 0;
            }
        } else {
            const int t2 = t - ROWS * 32, q = t2 % COLS;
            lx = t2 >= COLS ? 31 : 0;
            lz = 1 + q / PER;
            ly = 1 + q % PER;
        }
    }
};

// The border kernels' skeleton, for both forms (J as in tile).  Cells with
// a pair that crosses the tile's faces: the whole first plane, and in the
// other planes the first row (and the last row when steps go to y + 1);
// then the first cell of each other row (its left pairs cross), and with C
// >= 2 its last cell too (steps to x + 1 cross).  Item t of a tile maps to
// one such cell; rows first, so that warps read whole rows.  Each unites
// the joined pairs that cross the tile's faces: the left pair of a cell in
// the first column, and each half step that leaves the tile, minus (when
// J is transitive) the ones the skipping rules skip.
template <int C, int TY, int TZ, typename J, typename T, typename I>
__device__ __forceinline__ void border(const J& join, const T* __restrict__ v, I* P,
                                       unsigned* __restrict__ H, I nz, I ny, I nx) {
    typedef typename J::K K;
    typedef Border<C, TY, TZ> B;
    for (int t = threadIdx.x; t < (int)B::ITEMS; t += blockDim.x) {
        int lx, ly, lz;
        B::cell(t, lx, ly, lz);
        const I x = (I)blockIdx.x * 32 + lx, y = (I)blockIdx.y * TY + ly;
        const I z = (I)blockIdx.z * B::TZ + lz;
        if (x >= nx || y >= ny || z >= nz) continue;
        const I i = (z * ny + y) * nx + x;
        const K key = J::key(v[i]);
        if (join.bg(key) || !join.on(i)) continue;
        // Joined to the left neighbour: the transitive form reads it for
        // every cell (the covered and twin rules), the other one only for
        // the first column's pair.
        const bool eql = (J::transitive || lx == 0) && x > 0 &&
                         join.joined(J::key(v[i - 1]), i - 1, key, join.bond(0, 0, -1), i);
        const I plane = ny * nx;
        // The pair to the left across the tile's first column, unless the
        // square rule skips it (transitive only): the cells above (or
        // below) this one and its partner are equal to them and in their
        // tiles (ly > 0, lz > 0), so each tile joined its two cells and the
        // earlier row's (plane's) pair to the left joins the tiles.  In a
        // region that crosses the column this leaves one union, not one per
        // row.
        unsigned todo = 0u;
        if (lx == 0 && eql &&
            !(J::transitive && ly > 0 && join.join(J::key(v[i - nx]), key) &&
              join.join(J::key(v[i - nx - 1]), key)) &&
            !(J::transitive && lz > 0 && join.join(J::key(v[i - plane]), key) &&
              join.join(J::key(v[i - plane - 1]), key)))
            todo = meshccl::box::step_bit(0, 0, -1);
        MESHCCL_STEPS {
            if (!(lz + dz < 0 || ly + dy < 0 || ly + dy >= TY || lx + dx < 0 || lx + dx > 31))
                continue;  // inside the tile: the tile kernel's pair
            if (z + dz < 0 || y + dy < 0 || y + dy >= ny || x + dx < 0 || x + dx >= nx) continue;
            const I j = i + ((I)dz * ny + dy) * nx + dx;
            if (!join.joined(J::key(v[j]), j, key, join.bond(dz, dy, dx), i))
                continue;
            if constexpr (J::transitive) {
                if (dz == 0 && dy < 0 && dx == 0 && lz > 0 &&
                    join.join(J::key(v[i - plane]), key) && join.join(J::key(v[j - plane]), key))
                    continue;  // the square rule (above) on a tile's first row, along z
                if (meshccl::box::half_step<D, C>(dz, dy, dx + 1) && x + dx + 1 < nx &&
                    join.join(J::key(v[j + 1]), key))
                    continue;  // same run
                if (eql) {
                    if (meshccl::box::neighbour_step<D, C>(dz, dy, dx + 1)) continue;  // covered
                    if (x + dx > 0 && join.join(J::key(v[j - 1]), key)) continue;     // twin
                }
            }
            todo |= meshccl::box::step_bit(dz, dy, dx);
        }
        for (; todo; todo &= todo - 1u) {  // one call site, as in the tile kernel
            const int s = __ffs(todo) - 1;
            const int dz = s / 9 - 1, dy = (s / 3) % 3 - 1, dx = s % 3 - 1;
            meshccl::unite_recording(P, H, i, i + ((I)dz * ny + dy) * nx + dx);
        }
    }
}

}  // namespace cells3d
}  // namespace meshccl

// The kernels: each form's policy on the skeletons above.

template <typename T, typename I, int C, int TY, int TZ, int NW, int TB>
__global__ void __launch_bounds__(32 * NW) meshccl_cells3d_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, I nz, I ny, I nx, int has_bg,
        typename meshccl::Key<T>::type bgkey, int aligned) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlainJoin<T> join = {has_bg, bgkey};
    meshccl::cells3d::tile<C, TY, TZ, NW, TB>(join, v, P, A, H, nz, ny, nx, aligned);
}

template <typename T, typename I, int C, int TY, int TZ>
__global__ void __launch_bounds__(256) meshccl_cells3d_border(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, I nz, I ny, I nx, int has_bg,
        typename meshccl::Key<T>::type bgkey) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlainJoin<T> join = {has_bg, bgkey};
    meshccl::cells3d::border<C, TY, TZ>(join, v, P, H, nz, ny, nx);
}

// ---------------------------------------------------------------------------
// The lattice form: a mask, bonds and/or a tolerance on a 3-D volume of any
// cell type, one-byte cells included (meshccl_cells3d_lattice_tile and
// meshccl_cells3d_lattice_border; periodic axes then add wrap3d.cu).
//
// A feature changes which neighbouring pairs join, not how a joined pair is
// labelled.  Two cells are joined when both are foreground (not the
// background, and set in the mask), their bond is open (the later cell's,
// in the plane of the step, lattice.cuh BoxFeatures) and the joining rule
// holds (equal keys, or |a - b| <= tolerance: lattice.cuh, Rule): the
// policy LatticeJoin.  The skeletons are the plain form's: the tiles, the
// forest, the piece roots and the bit arrays A and H (TB = 1: a block does
// one tile); the runs along a row are stretches of joined left pairs, from
// one ballot.  No pair is skipped: every rule above takes a pair as joined
// because others are (equality is transitive), and a closed bond, a masked
// cell or a tolerance breaks that (LatticeJoin is not transitive).  So the
// tile kernel unites every joined pair inside the tile, and the border
// kernel, over the same face cells as the plain one, every joined pair
// that crosses a tile face.
template <typename T, typename I, int C, bool Tol, int TY, int TZ, int NW>
__global__ void __launch_bounds__(32 * NW) meshccl_cells3d_lattice_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, I nz, I ny, I nx, int has_bg,
        typename meshccl::Rule<T, Tol>::K bgkey, int aligned, MESHCCL_BOX_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::LatticeJoin<T, Tol, meshccl::BoxFeatures> join = {
        has_bg, bgkey, MESHCCL_BOX_FEATURES_VALUE};
    meshccl::cells3d::tile<C, TY, TZ, NW, 1>(join, v, P, A, H, nz, ny, nx, aligned);
}

template <typename T, typename I, int C, bool Tol, int TY, int TZ>
__global__ void __launch_bounds__(256) meshccl_cells3d_lattice_border(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, I nz, I ny, I nx, int has_bg,
        typename meshccl::Rule<T, Tol>::K bgkey, MESHCCL_BOX_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::LatticeJoin<T, Tol, meshccl::BoxFeatures> join = {
        has_bg, bgkey, MESHCCL_BOX_FEATURES_VALUE};
    meshccl::cells3d::border<C, TY, TZ>(join, v, P, H, nz, ny, nx);
}

#undef MESHCCL_STEPS

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may
// ask for (image_plain.py: CELLS3D_TILES; values are unsigned or floats
// after _validate.py).
#define MESHCCL_CELLS3D(T, I, C, TY, TZ, NW, TB)                                                 \
    template __global__ void meshccl_cells3d_tile<T, I, C, TY, TZ, NW, TB>(                      \
        const T*, I*, unsigned*, unsigned*, I, I, I, int, meshccl::Key<T>::type, int);            \
    template __global__ void meshccl_cells3d_border<T, I, C, TY, TZ>(                            \
        const T*, I*, unsigned*, I, I, I, int, meshccl::Key<T>::type);
#define MESHCCL_CELLS3D_I(T, I) \
    MESHCCL_CELLS3D(T, I, 1, 8, 4, 32, 2) MESHCCL_CELLS3D(T, I, 2, 8, 4, 32, 1) \
    MESHCCL_CELLS3D(T, I, 3, 8, 4, 32, 1)
#define MESHCCL_CELLS3D_T(T) MESHCCL_CELLS3D_I(T, int) MESHCCL_CELLS3D_I(T, long long)
MESHCCL_CELLS3D_T(unsigned short)
MESHCCL_CELLS3D_T(unsigned int)
MESHCCL_CELLS3D_T(unsigned long long)
MESHCCL_CELLS3D_T(float)
MESHCCL_CELLS3D_T(double)
// The lattice form (image_plain.py: _program_cells3d with features): every
// cell type, signed ones too (a tolerance keeps them signed).
#define MESHCCL_CELLS3D_LAT(T, I, C, Tol, TY, TZ, NW)                                           \
    template __global__ void meshccl_cells3d_lattice_tile<T, I, C, Tol, TY, TZ, NW>(             \
        const T*, I*, unsigned*, unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K, int,         \
        MESHCCL_BOX_FEATURE_TYPES);                                                              \
    template __global__ void meshccl_cells3d_lattice_border<T, I, C, Tol, TY, TZ>(               \
        const T*, I*, unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K,                         \
        MESHCCL_BOX_FEATURE_TYPES);
#define MESHCCL_CELLS3D_LAT_I(T, I)                                                              \
    MESHCCL_CELLS3D_LAT(T, I, 1, false, 8, 4, 32) MESHCCL_CELLS3D_LAT(T, I, 2, false, 8, 4, 32)  \
    MESHCCL_CELLS3D_LAT(T, I, 3, false, 8, 4, 32) MESHCCL_CELLS3D_LAT(T, I, 1, true, 8, 4, 32)   \
    MESHCCL_CELLS3D_LAT(T, I, 2, true, 8, 4, 32) MESHCCL_CELLS3D_LAT(T, I, 3, true, 8, 4, 32)
#define MESHCCL_CELLS3D_LAT_T(T) MESHCCL_CELLS3D_LAT_I(T, int) MESHCCL_CELLS3D_LAT_I(T, long long)
MESHCCL_CELLS3D_LAT_T(unsigned char)
MESHCCL_CELLS3D_LAT_T(unsigned short)
MESHCCL_CELLS3D_LAT_T(unsigned int)
MESHCCL_CELLS3D_LAT_T(unsigned long long)
MESHCCL_CELLS3D_LAT_T(signed char)
MESHCCL_CELLS3D_LAT_T(short)
MESHCCL_CELLS3D_LAT_T(int)
MESHCCL_CELLS3D_LAT_T(long long)
MESHCCL_CELLS3D_LAT_T(float)
MESHCCL_CELLS3D_LAT_T(double)
#endif
