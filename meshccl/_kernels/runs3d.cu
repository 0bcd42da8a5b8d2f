// runs3d.cu -- plain 3-D volumes of any cell type, runs as nodes.
//
// The 2-D kernel of runs2d.cu, a warp per 32 x 32 tile with lane r holding
// row r as 32-bit masks, extended by one axis.  A block owns a brick of
// 32 x 32 cells by NZ planes; warp p works on plane p of it exactly as in
// 2-D (its rows' masks, its runs, the unions inside the plane), and the
// block's NZ planes share one forest in shared memory, numbered in raster
// order of the brick, so that the smallest node of a piece is still its
// first cell.  After a __syncthreads, warp p (p > 0) also unites its plane
// with plane p - 1: lane r loads row r of plane p - 1 once more (warp p - 1
// loaded it just before, so it mostly comes from L1; staging it in shared
// memory cost a block's worth of occupancy), rows r - 1 and r + 1 of it
// come by shuffles, and the pairs between row r of plane p and a row of
// plane p - 1 are the same row-against-earlier-row problem as between two
// rows of a plane, solved by the same mask rules (runs.cuh, row_pairs):
//
// - connectivity 1: row r of the plane before, straight down the z axis;
//   besides the twin rule, a pair is skipped when the cell above it in its
//   own plane is equal, as are that cell's partner and its own partner's
//   upper neighbour: the earlier row's z pair and two in-plane runs join
//   them already (on a blob that leaves one z union per overlap, at its top
//   edge);
// - connectivity 2: row r with its diagonals, rows r - 1 and r + 1 straight
//   (18 neighbours);
// - connectivity 3: rows r - 1, r and r + 1 with their diagonals (26).
// - At 2 and 3, a cell whose partner straight down is equal skips all its
//   other z pairs (their partners are in-plane neighbours of that one),
//   and the pairs with rows r - 1 and r + 1 wait for those with row r at x
//   - 1 and x + 1 (in-plane neighbours again).  Every skipped pair points
//   at a pair of an earlier cell or an earlier pair of the same cell, so
//   none is skipped in a circle (tests/test_runs_emulated.py checks the
//   rules against skimage on the CPU).
// - A lane's unions, up to ten masks of them, run in one loop (runs.cuh,
//   unite_all).
//
// Wider cells (2-, 4- and 8-byte integers, floats) make the same masks
// the way runs2d.cu's wider tiles do: lane c loads column c of the tile's
// 32 rows, one warp ballot per row and mask, and lane r keeps row r's
// (runs3d::wide_rows for a plane's own masks, wide_z for the z masks
// against the plane below, which z_pairs_by takes instead of words).
// Floats are compared by their truncation as a float (WideKey): one
// instruction and one shuffle where lattice.cuh's int64 keys need two, and
// equal exactly where those are.  Every rule, union and store after the
// masks is the one-byte code.  Pairs that leave the brick go two ways:
// - its first plane against the last plane of the brick below, where the
//   partner lies in the same 32 x 32 column of tiles: meshccl_runs3d_zface,
//   the same z_pairs rules on a warp per brick, uniting run starts in the
//   global forest (two thirds of a brick's face cells are on this face; a
//   thread per cell there took 0.9 of the 2.8 ms of percolation 512^3 c3);
// - everything else, the pairs that cross the x or y faces of a column of
//   tiles, in every plane: meshccl_runs3d_seams, a warp walking down one
//   seam between two tiles through a few planes (see there), nodes looked
//   up in the bit array S.
// Then number_pieces.cu: the pieces path and meshccl_label_runs, which sees
// the volume as
// nz * ny rows, as in 2-D.  The host picks NZ = 16 at connectivity 1 and 8
// otherwise (the forest then needs 68 KB of shared memory, dynamic).

#include "launch.cuh"
#include "lattice.cuh"
#include "runs.cuh"

// The volume is nz x ny x nx; bricks bx = blockIdx.x, by = blockIdx.y, bz =
// blockIdx.z of 32 x 32 x NZ cells, warp p on plane bz * NZ + p.  F and S:
// word bx * (nz * ny) + z * ny + y.  A and H: aligned (nx % 32 == 0) makes
// a tile row one word of each, stored here (H as zeros); otherwise the host
// zeroes them and rows OR their piece roots in.  At connectivity 2 and 3
// the block asks for 6 blocks per multiprocessor (40 registers, a few
// spilled), which suits the union-bound tiles of percolation; at
// connectivity 1, 5 keeps its 48 (docs/decisions.md: "brick depth").
// Blocks per multiprocessor the tile kernel asks for (its register budget):
// 48 warps at 8 planes and C >= 2, 40 at C = 1 (see above); deeper bricks
// keep 48 warps.
// Wider cells keep up to twelve more masks of their z pairs and keys of
// three rows of the plane below in registers: at 8 planes 4 blocks (64
// registers), at 16 planes 8-byte cells 2 (the others spilled at 40).
template <typename T, int C, int NZ>
struct TileBlocks {
    enum {
        value = sizeof(T) > 1 ? (NZ == 8 ? 4 : (sizeof(T) == 8 ? 2 : 48 / NZ))
                              : NZ == 8 ? (C >= 2 ? 6 : 5) : (48 / NZ > 0 ? 48 / NZ : 1)
    };
};

// The tile kernel's shared memory is dynamic: NZ planes of forest (32 rows
// of 33 nodes) and of run-start words, NZ * (32 * 33 + 32) * 4 bytes, which
// the host passes at launch (meshccl/_gpu/image_plain.py); 16 planes need 68 KB,
// past the 48 KB a static array may have, and the host raises the limit.

namespace meshccl {
namespace runs3d {

// Wider cells (2, 4 and 8 bytes): the keys the run masks compare.  Integers
// as they are; floats by their truncation as a float (a double), which
// equals another's exactly when the int64 keys of lattice.cuh (Key) are
// equal: NaN, +-inf and values outside [-2^63, 2^63) all become -2^63, as
// Key gives them the int64 minimum.  A 4-byte key then moves in one
// shuffle and compares in one instruction.  bg(): the background's key
// (Key's, an int64 for floats) as such a key; one no float truncates to
// becomes NaN, which equals no key.
template <typename T>
struct WideKey {
    typedef T K;
    static __device__ __forceinline__ T of(T v) { return v; }
    static __device__ __forceinline__ T bg(typename Key<T>::type b) { return (T)b; }
};
template <>
struct WideKey<float> {
    typedef float K;
    static __device__ __forceinline__ float of(float v) {
        return (v >= -0x1p63f && v < 0x1p63f) ? truncf(v) : -0x1p63f;
    }
    static __device__ __forceinline__ float bg(long long b) {
        const float f = (float)b;
        return (long long)f == b ? f : __int_as_float(0x7fffffff);
    }
};
template <>
struct WideKey<double> {
    typedef double K;
    static __device__ __forceinline__ double of(double v) {
        return (v >= -0x1p63 && v < 0x1p63) ? trunc(v) : -0x1p63;
    }
    static __device__ __forceinline__ double bg(long long b) {
        const double d = (double)b;
        return (long long)d == b ? d : __longlong_as_double(0x7fffffffffffffffLL);
    }
};

template <typename K>
__device__ __forceinline__ K lane_shfl(K k, int delta, bool up) {
    if constexpr (sizeof(K) < 4)
        return (K)(up ? __shfl_up_sync(0xffffffffu, (unsigned)k, delta)
                      : __shfl_down_sync(0xffffffffu, (unsigned)k, delta));
    else
        return up ? __shfl_up_sync(0xffffffffu, k, delta) : __shfl_down_sync(0xffffffffu, k, delta);
}

// A tile's rows of wider cells as masks, as runs2d.cu makes them: lane c
// loads column c of the 32 rows (row r at rows + r * nx; `width` columns
// and `height` rows inside the array, height 0: none), a warp ballot makes
// each row's mask, and lane r keeps row r's: F (foreground), E (equal to
// the left neighbour) and V (equal to the cell above), at C >= 2 Vl / Vr
// (up-left / up-right).  All foreground at both ends: a cell equal to a
// foreground cell is foreground.
template <int C, typename T, typename I>
__device__ __forceinline__ void wide_rows(const T* __restrict__ rows, I nx, int width,
                                          int height, int has_bg, typename WideKey<T>::K bg,
                                          int lane, unsigned& F, unsigned& E, unsigned& V,
                                          unsigned& Vl, unsigned& Vr) {
    typedef typename WideKey<T>::K K;
    const bool col = lane < width, right_in = lane + 1 < width;
    K pl = K(), pr = K(), pk = K();  // the row above: its keys at x - 1, x + 1, x
    F = E = V = Vl = Vr = 0u;
#pragma unroll
    for (int r = 0; r < 32; ++r) {
        const bool in = col && r < height;
        const K k = in ? WideKey<T>::of(rows[(I)r * nx + lane]) : K();
        const bool f = in && !(has_bg && k == bg);
        const K kl = lane_shfl(k, 1, true);
        const unsigned Fm = __ballot_sync(0xffffffffu, f);
        const unsigned Em = __ballot_sync(0xffffffffu, f && lane > 0 && kl == k);
        unsigned Vm = 0u, Vlm = 0u, Vrm = 0u;
        if (r > 0) {
            Vm = __ballot_sync(0xffffffffu, f && pk == k);
            if (C >= 2) {
                Vlm = __ballot_sync(0xffffffffu, f && lane > 0 && pl == k);
                Vrm = __ballot_sync(0xffffffffu, f && right_in && pr == k);
            }
        }
        if (lane == r) {
            F = Fm;
            E = Em;
            V = Vm;
            Vl = Vlm;
            Vr = Vrm;
        }
        pk = k;
        if (C >= 2) {
            pl = kl;
            pr = lane_shfl(k, 1, false);
        }
    }
}

// The equality masks of z_pairs_by (runs.cuh) for wider cells: lane r's
// row of plane z against rows r - 1, r and r + 1 of plane z - 1, made by
// wide_z; k: the row row() asked for (0: dy 0, 1: dy -1, 2: dy +1).
template <int C>
struct WideZ {
    unsigned z0, l[3], c[3], r[3];
    int k;
    __device__ __forceinline__ void row(int dy) { k = dy == 0 ? 0 : (dy < 0 ? 1 : 2); }
    __device__ __forceinline__ unsigned straight() const { return z0; }
    __device__ __forceinline__ unsigned left() const { return l[k]; }
    __device__ __forceinline__ unsigned centre() const { return c[k]; }
    __device__ __forceinline__ unsigned right() const { return r[k]; }
};

// A tile's rows of plane z (`rows`) against those of plane z - 1
// (`below`), both as in wide_rows: lane c loads column c of both, and lane
// r gets WideZ's masks of row r (raw equality: no test that the partner is
// inside or foreground, which z_pairs_by does with bF) and plane z - 1's
// row r masks bF, bV and, with BelowE, bE (equal to the left).
template <int C, bool BelowE, typename T, typename I>
__device__ __forceinline__ void wide_z(const T* __restrict__ rows, const T* __restrict__ below,
                                       I nx, int width, int height, int has_bg,
                                       typename WideKey<T>::K bg, int lane, WideZ<C>& m,
                                       unsigned& bF, unsigned& bV, unsigned& bE) {
    typedef typename WideKey<T>::K K;
    const bool col = lane < width;
    auto key = [&](const T* base, int r) {
        return col && r < height ? WideKey<T>::of(base[(I)r * nx + lane]) : K();
    };
    // plane z - 1's rows r - 1, r, r + 1 (p, c, n) and their keys at x - 1 / x + 1
    K bp = K(), bc = K(), bn = key(below, 0);
    K lp = K(), lc = K(), ln = lane_shfl(bn, 1, true);
    K rp = K(), rc = K(), rn = C >= 2 ? lane_shfl(bn, 1, false) : K();
    m.z0 = bF = bV = bE = 0u;
#pragma unroll
    for (int i = 0; i < 3; ++i) m.l[i] = m.c[i] = m.r[i] = 0u;
    m.k = 0;
#pragma unroll
    for (int r = 0; r < 32; ++r) {
        bp = bc; lp = lc; rp = rc;
        bc = bn; lc = ln; rc = rn;
        if (r < 31) {
            bn = key(below, r + 1);
            if (C >= 2 || BelowE) ln = lane_shfl(bn, 1, true);
            if (C >= 2) rn = lane_shfl(bn, 1, false);
        }
        const K k = key(rows, r);
        const bool fb = col && r < height && !(has_bg && bc == bg);
        const unsigned Fm = __ballot_sync(0xffffffffu, fb);
        const unsigned Vm = r > 0 ? __ballot_sync(0xffffffffu, fb && bp == bc) : 0u;
        const unsigned Em = BelowE ? __ballot_sync(0xffffffffu, fb && lane > 0 && lc == bc) : 0u;
        const unsigned Z = __ballot_sync(0xffffffffu, k == bc);
        unsigned L0 = 0u, R0 = 0u, Cu = 0u, Cd = 0u, Lu = 0u, Ru = 0u, Ld = 0u, Rd = 0u;
        if (C >= 2) {
            L0 = __ballot_sync(0xffffffffu, k == lc);
            R0 = __ballot_sync(0xffffffffu, k == rc);
            if (r > 0) Cu = __ballot_sync(0xffffffffu, k == bp);
            if (r < 31) Cd = __ballot_sync(0xffffffffu, k == bn);
            if (C == 3) {
                if (r > 0) {
                    Lu = __ballot_sync(0xffffffffu, k == lp);
                    Ru = __ballot_sync(0xffffffffu, k == rp);
                }
                if (r < 31) {
                    Ld = __ballot_sync(0xffffffffu, k == ln);
                    Rd = __ballot_sync(0xffffffffu, k == rn);
                }
            }
        }
        if (lane == r) {
            bF = Fm;
            bV = Vm;
            bE = Em;
            m.z0 = Z;
            m.l[0] = L0; m.r[0] = R0;
            m.c[1] = Cu; m.l[1] = Lu; m.r[1] = Ru;
            m.c[2] = Cd; m.l[2] = Ld; m.r[2] = Rd;
        }
    }
}

// The unions of warp p's z pairs (U, dy, shift from z_pairs) in the
// block's forest: lane r's row against rows r + dy of plane p - 1.
template <int C>
__device__ __forceinline__ void plane_unions(int* forest, const unsigned (*starts)[32], int p,
                                             int lane, unsigned S_,
                                             unsigned (&U)[meshccl::runs::ZPairs<C>::N],
                                             const int (&dy)[meshccl::runs::ZPairs<C>::N],
                                             const int (&shift)[meshccl::runs::ZPairs<C>::N]) {
    constexpr int N = meshccl::runs::ZPairs<C>::N, RS = meshccl::runs::ROW_NODES, PL = 32 * RS;
    unsigned st[N];
    int tgt[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int r = lane + dy[i];
        tgt[i] = (p - 1) * PL + r * RS;
        st[i] = r >= 0 && r <= 31 ? starts[p - 1][r] : 0u;
    }
    meshccl::runs::unite_all(forest, p * PL + lane * RS, S_, U, tgt, st, shift);
}

// The tile kernel's last step, after its unions (both cell widths): the
// piece roots of warp p's plane stored in P (runs.cuh, store_piece_roots),
// the rows' F and S, and their piece roots in A (H zeroed where aligned).
template <int C, int NZ, typename I>
__device__ __forceinline__ void tile_store(int* forest, unsigned* starts, I* __restrict__ P,
                                           unsigned* __restrict__ A, unsigned* __restrict__ H,
                                           unsigned* __restrict__ F, unsigned* __restrict__ S,
                                           unsigned mF, unsigned S_, I nz, I ny, I nx,
                                           int aligned) {
    constexpr int PL = 32 * meshccl::runs::ROW_NODES;
    const int lane = threadIdx.x & 31, p = threadIdx.x >> 5;
    const I bx = (I)blockIdx.x, x0 = bx * 32, y0 = (I)blockIdx.y * 32;
    const I z0 = (I)blockIdx.z * NZ, z = z0 + p, y = y0 + lane;
    if (z >= nz) return;  // the whole warp
    const I plane = ny * nx, tile0 = z * plane + y0 * nx + x0;
    const unsigned roots = meshccl::runs::store_piece_roots<C == 1 ? 128 : 1024>(
        forest, p * PL, starts, lane, (int)min((I)32, ny - y0), P, tile0, nx,
        z0 * plane + y0 * nx + x0, PL, plane);
    if (y >= ny) return;
    const I rows = nz * ny;
    F[bx * rows + z * ny + y] = mF;
    S[bx * rows + z * ny + y] = S_;
    const I rowbase = (z * ny + y) * nx + x0, wi = rowbase >> 5;
    if (aligned) {
        A[wi] = roots;
        H[wi] = 0u;
    } else if (roots) {
        const int s = (int)(rowbase & 31);
        atomicOr(A + wi, roots << s);
        if (s) atomicOr(A + wi + 1, roots >> (32 - s));
    }
}

}  // namespace runs3d
}  // namespace meshccl

// Prefetch: the run starts' sectors of P are asked into L2 first (runs.cuh,
// prefetch_run_starts; 0 off, or its mode), a template argument: as a
// runtime argument it changed the code of the connectivity-3 kernel enough
// to cost it 7 % (docs/decisions.md: "prefetch of piece-root sectors").
template <typename T, typename I, int C, int NZ, int Prefetch>
__global__ void __launch_bounds__(32 * NZ, (TileBlocks<T, C, NZ>::value)) meshccl_runs3d_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I nz, I ny,
        I nx, int has_bg, typename meshccl::Key<T>::type bgkey, int aligned) {
    meshccl::grid_entry();  // (launch.cuh)
    using meshccl::runs::eq_left;
    using meshccl::runs::eq_mask;
    using meshccl::runs::eq_right;
    constexpr int RS = meshccl::runs::ROW_NODES, PL = 32 * RS;
    extern __shared__ int shared_words[];  // NZ * (32 * 33 + 32) words
    int* forest = shared_words;
    unsigned(*starts)[32] = reinterpret_cast<unsigned(*)[32]>(shared_words + NZ * PL);
    if constexpr (sizeof(T) > 1) {
        // Wider cells: the same masks, by ballots over columns (runs3d::
        // wide_rows, wide_z), then the same unions.  No binary shortcut.
        const int lane = threadIdx.x & 31, p = threadIdx.x >> 5;
        const I x0 = (I)blockIdx.x * 32, y0 = (I)blockIdx.y * 32, z = (I)blockIdx.z * NZ + p;
        const int width = (int)min((I)32, nx - x0);
        const int height = z < nz ? (int)min((I)32, ny - y0) : 0;  // (0: past the volume)
        const auto bg = meshccl::runs3d::WideKey<T>::bg(bgkey);
        const T* rows = v + (min(z, nz - 1) * ny + y0) * nx + x0;
        unsigned mF, mE, mV, mVl, mVr;
        meshccl::runs3d::wide_rows<C>(rows, nx, width, height, has_bg, bg, lane, mF, mE, mV,
                                      mVl, mVr);
        const unsigned S_ = mF & ~mE;
        if (Prefetch && lane < height)
            meshccl::runs::prefetch_run_starts(P + (z * ny + y0 + lane) * nx + x0, S_, Prefetch);
        meshccl::runs::tile_nodes(forest, p * PL, starts[p], lane, S_);
        // plane p - 1 after this plane's nodes: the warp before loaded it
        // just now, so it mostly comes from L1 (as the one-byte rows do)
        meshccl::runs3d::WideZ<C> eqs;
        unsigned bF = 0u, bV = 0u, bE = 0u;
        if (p > 0)
            meshccl::runs3d::wide_z<C, false>(rows, rows - ny * nx, nx, width, height, has_bg,
                                              bg, lane, eqs, bF, bV, bE);
        __syncthreads();
        meshccl::runs::tile_unions<C >= 2>(forest, p * PL, starts[p], lane, S_, mE, mVl, mV,
                                           mVr);
        if (p > 0) {
            constexpr int N = meshccl::runs::ZPairs<C>::N;
            unsigned U[N];
            int dy[N], shift[N];
            meshccl::runs::z_pairs_by<C>(mF, mE, mV, bF, bV, lane, false, eqs, U, dy, shift);
            meshccl::runs3d::plane_unions<C>(forest, starts, p, lane, S_, U, dy, shift);
        }
        __syncthreads();
        meshccl::runs3d::tile_store<C, NZ>(forest, starts[p], P, A, H, F, S, mF, S_, nz, ny, nx,
                                           aligned);
        return;
    } else {
    const int lane = threadIdx.x & 31, p = threadIdx.x >> 5;
    const I bx = (I)blockIdx.x, x0 = bx * 32, y0 = (I)blockIdx.y * 32;
    const I z0 = (I)blockIdx.z * NZ, z = z0 + p, y = y0 + lane;
    const int width = (int)min((I)32, nx - x0);
    const bool in = z < nz && y < ny;
    // The plane's masks, as in runs2d.cu
    unsigned w[8];
    meshccl::runs::load_row(in ? v + (z * ny + y) * nx + x0 : nullptr, width, w);
    const unsigned mF = meshccl::runs::fg_mask(w, in ? width : 0, has_bg, (unsigned char)bgkey);
    const unsigned mE = mF & eq_left(w, w);
    // (The same masks as runs.cuh's above_masks, written out: the helper here
    // compiled to other code, and the c3 tile measured 7 % slower with it.)
    unsigned u[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) u[j] = __shfl_up_sync(0xffffffffu, w[j], 1);
    unsigned pF = __shfl_up_sync(0xffffffffu, mF, 1);
    if (lane == 0) pF = 0u;
    const unsigned mV = mF & pF & eq_mask(w, u);
    unsigned mVl = 0u, mVr = 0u;
    if (C >= 2) {
        mVl = mF & (pF << 1) & eq_left(w, u);
        mVr = mF & (pF >> 1) & eq_right(w, u);
    }
    const unsigned S_ = mF & ~mE;
    if (Prefetch && in)
        meshccl::runs::prefetch_run_starts(P + (z * ny + y) * nx + x0, S_, Prefetch);
    meshccl::runs::tile_nodes(forest, p * PL, starts[p], lane, S_);
    // Row r of plane p - 1 (its words, foreground and V masks), loaded again:
    // the warp before loaded it just now, so it mostly comes from L1.  Rows r
    // - 1 and r + 1 of it come from the lanes beside by shuffles.  (Loading
    // it at the start, beside row r of this plane, made the c1 tiles up to
    // 24 % slower: the two warps then miss on it together.)
    unsigned b0[8], bF = 0u, bV = 0u;
    {
        const bool bin = p > 0 && z < nz && y < ny;
        meshccl::runs::load_row(bin ? v + ((z - 1) * ny + y) * nx + x0 : nullptr, width, b0);
        bF = meshccl::runs::fg_mask(b0, bin ? width : 0, has_bg, (unsigned char)bgkey);
        unsigned bu[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) bu[j] = __shfl_up_sync(0xffffffffu, b0[j], 1);
        unsigned pbF = __shfl_up_sync(0xffffffffu, bF, 1);
        if (lane == 0) pbF = 0u;
        bV = bF & pbF & eq_mask(b0, bu);
    }
    // At C >= 2 a binary warp (runs.cuh, binary_row) skips the byte-wise
    // compares of its up to nine z masks (percolation 512^3 c3 tile 1.74 ->
    // 1.60 ms); at C = 1 there is one, and the vote cost as much.
    const bool binary = C >= 2 && has_bg && (unsigned char)bgkey == 0 &&
                        __all_sync(0xffffffffu, meshccl::runs::binary_row(w) &&
                                                    meshccl::runs::binary_row(b0));
    __syncthreads();
    meshccl::runs::tile_unions<C >= 2>(forest, p * PL, starts[p], lane, S_, mE, mVl, mV, mVr);
    if (p > 0) {
        // z pairs with plane p - 1 (runs.cuh, z_pairs), all of the lane's
        // unions in one loop (unite_all): the straight ones first, then rows
        // r, r - 1, r + 1, left / centre / right.
        constexpr int N = meshccl::runs::ZPairs<C>::N;
        unsigned U[N];
        int dy[N], shift[N];
        meshccl::runs::z_pairs<C>(w, mF, mE, mV, b0, bF, bV, lane, binary, U, dy, shift);
        meshccl::runs3d::plane_unions<C>(forest, starts, p, lane, S_, U, dy, shift);
    }
    __syncthreads();
    meshccl::runs3d::tile_store<C, NZ>(forest, starts[p], P, A, H, F, S, mF, S_, nz, ny, nx,
                                       aligned);
    }
}

// The z-face kernel: the pairs between a brick's first plane and the last
// plane of the brick below it whose partner lies in the same 32 x 32 column
// of tiles -- the pairs the tile kernel would take if the two planes were
// in one brick, taken by the same rules (runs.cuh, z_pairs), now on the
// global forest.  Warp k of a block: the brick bx = blockIdx.x * NW + k, by
// = blockIdx.y, bz = blockIdx.z + 1 (the first planes have no plane below);
// lane r loads row r of both planes (32 bytes each), makes the masks as the
// tile kernel does, and unites run starts (the nodes, global indices) with
// unite_recording, which marks each hooked root in H.  This face is two
// thirds of a brick's cells on its faces; the seam kernel below takes the
// pairs that leave through a tile's rows and columns.
template <typename T, typename I, int C, int NZ, int NW>
__global__ void __launch_bounds__(32 * NW) meshccl_runs3d_zface(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, I nz, I ny, I nx, int has_bg,
        typename meshccl::Key<T>::type bgkey) {
    meshccl::grid_entry();  // (launch.cuh)
    using meshccl::runs::eq_left;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I ntx = (nx + 31) >> 5, bx = (I)blockIdx.x * NW + warp;
    if (bx >= ntx) return;  // the whole warp
    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, z = ((I)blockIdx.z + 1) * NZ;
    const I y = y0 + lane;
    const int width = (int)min((I)32, nx - x0);
    const bool in = y < ny;  // (z < nz: the grid has no brick past the last)
    constexpr int N = meshccl::runs::ZPairs<C>::N;
    // the unions of the masks U (z_pairs), run starts of plane z - 1's
    // rows bS, in the global forest
    auto unite_pairs = [&](unsigned mF, unsigned mE, unsigned bS, unsigned (&U)[N],
                           const int (&dy)[N], const int (&shift)[N]) {
        unsigned st[N];
        I tgt[N];
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const int r = lane + dy[i];
            const unsigned sr = dy[i] == 0 ? bS : meshccl::runs::shfl(bS, 1, dy[i] < 0);
            st[i] = r >= 0 && r <= 31 ? sr : 0u;
            tgt[i] = ((z - 1) * ny + y0 + r) * nx + x0;
        }
        meshccl::runs::unite_each((z * ny + y) * nx + x0, mF & ~mE, U, tgt, st, shift,
                                  [P, H](I a, I b) { meshccl::unite_recording(P, H, a, b); });
    };
    unsigned U[N];
    int dy[N], shift[N];
    if constexpr (sizeof(T) > 1) {
        // Wider cells: the masks by ballots, as in the tile kernel.
        const int height = (int)min((I)32, ny - y0);
        const auto bg = meshccl::runs3d::WideKey<T>::bg(bgkey);
        const T* rows = v + (z * ny + y0) * nx + x0;
        unsigned mF, mE, mV, mVl, mVr, bF, bV, bE;
        meshccl::runs3d::wide_rows<1>(rows, nx, width, height, has_bg, bg, lane, mF, mE, mV, mVl,
                                      mVr);
        meshccl::runs3d::WideZ<C> eqs;
        meshccl::runs3d::wide_z<C, true>(rows, rows - ny * nx, nx, width, height, has_bg, bg,
                                         lane, eqs, bF, bV, bE);
        meshccl::runs::z_pairs_by<C>(mF, mE, mV, bF, bV, lane, false, eqs, U, dy, shift);
        unite_pairs(mF, mE, bF & ~bE, U, dy, shift);
        return;
    } else {
    const unsigned char bg = (unsigned char)bgkey;
    // Row r of plane z: its masks against row r - 1 of the tile, as in the
    // tile kernel
    unsigned w[8], b0[8];
    meshccl::runs::load_row(in ? v + (z * ny + y) * nx + x0 : nullptr, width, w);
    meshccl::runs::load_row(in ? v + ((z - 1) * ny + y) * nx + x0 : nullptr, width, b0);
    const unsigned mF = meshccl::runs::fg_mask(w, in ? width : 0, has_bg, bg);
    const unsigned bF = meshccl::runs::fg_mask(b0, in ? width : 0, has_bg, bg);
    const bool binary = has_bg && bg == 0 &&
                        __all_sync(0xffffffffu, meshccl::runs::binary_row(w) &&
                                                    meshccl::runs::binary_row(b0));
    unsigned mE, bS, mV, bV;  // bS: run starts of plane z - 1's row
    if (binary) {
        unsigned pF = __shfl_up_sync(0xffffffffu, mF, 1);
        unsigned pbF = __shfl_up_sync(0xffffffffu, bF, 1);
        if (lane == 0) pF = pbF = 0u;
        mE = mF & (mF << 1);
        bS = bF & ~(bF << 1);
        mV = mF & pF;
        bV = bF & pbF;
    } else {
        mE = mF & eq_left(w, w);
        bS = bF & ~(bF & eq_left(b0, b0));
        unsigned l_, r_;
        meshccl::runs::above_masks<false>(w, mF, lane, mV, l_, r_);
        meshccl::runs::above_masks<false>(b0, bF, lane, bV, l_, r_);
    }
    meshccl::runs::z_pairs<C>(w, mF, mE, mV, b0, bF, bV, lane, binary, U, dy, shift);
    unite_pairs(mF, mE, bS, U, dy, shift);
    }
}

// The seam kernel: every pair that crosses a 32-cell boundary along x or y
// (a seam between two columns of tiles), in every plane -- the pairs that
// neither the tile kernel nor the z-face kernel takes.  A thread per face
// cell would spend most of its instructions on global loads of the same
// few bytes and on tests of steps that stay inside the tile; here a warp
// walks down a seam through `walk` planes (4; docs/decisions.md: "seam
// kernel") and keeps what it loaded in registers:
//
// - even warps, the x seam before tile column bx (bx > 0): lane r holds row
//   r of the band, the cells at x0 - 2, x0 - 1 and x0; rows r - 1 and r + 1
//   come by shuffles (lanes 0 and 31 load the rows beyond the band), and
//   the plane below is the one of the turn before.  The lane takes the
//   pairs of its cell at x0 that go left (dx = -1) and of its cell at x0 - 1
//   that go right (dx = +1);
// - odd warps, the y seam above tile row by (by > 0): lane c holds column c
//   of the rows y0 - 1 and y0 (columns c - 2 .. c + 1 by shuffles; lanes 0
//   and 31 load past the tile) and takes the pairs of its cell in row y0
//   that go up (dy = -1) and of its cell in row y0 - 1 that go down to the
//   plane below (dy = +1), as long as the partner stays in the tile column
//   (the x seam has the others).
//
// Which pairs are united is decided exactly as cells3d.cu's border kernel
// decides (tests/test_runs_emulated.py, border_pairs_3d, emulates the set):
// the pair to the left unless the square rule skips it; any other step
// unless its partner is not equal, or it goes down a plane while the cell
// straight down is equal, or (straight up) the square rule along z holds,
// or the partner's right neighbour is equal and also a neighbour of the
// cell (same run), or the cell's left neighbour is equal and a neighbour of
// the partner (covered, twin).  seam_keep is that test.

namespace meshccl {
namespace runs3d {

// Does the border unite the cell with its partner one step (dz, dy, dx)
// away (a half step that leaves the tile column)?  ej: the partner is
// equal; eql: the cell's left neighbour is; zeq: the cell straight down
// is; sqz: the square rule along z holds (straight-up steps only); er / el:
// the partner's right / left neighbour is equal.
template <int C>
__device__ __forceinline__ bool seam_keep(int dz, int dy, int dx, bool ej, bool eql, bool zeq,
                                          bool sqz, bool er, bool el) {
    if (!ej || (dz < 0 && zeq)) return false;
    if (dz == 0 && dy < 0 && dx == 0 && sqz) return false;
    if (meshccl::box::half_step<3, C>(dz, dy, dx + 1) && er) return false;  // same run
    if (eql && (meshccl::box::neighbour_step<3, C>(dz, dy, dx + 1) || el))
        return false;  // covered, twin
    return true;
}

// A lane's view of one plane around a seam: keys k[r][c] and whether each
// cell is inside the volume (and foreground or not: the test is equality
// with a foreground cell's key).
template <typename K, int R, int W>
struct Window {
    K k[R][W];
    bool in[R][W];
    __device__ __forceinline__ bool eq(int r, int c, K key) const { return in[r][c] && k[r][c] == key; }
};

template <typename K>
__device__ __forceinline__ K shfl_idx(K k, int src) {
    if (sizeof(K) == 8) return (K)__shfl_sync(0xffffffffu, (long long)k, src);
    return (K)__shfl_sync(0xffffffffu, (int)k, src);
}

}  // namespace runs3d
}  // namespace meshccl

// Block: NW tiles side by side along x (bx = blockIdx.x * NW + warp / 2), by
// = blockIdx.y, planes blockIdx.z * walk ... + walk - 1 (the host picks
// walk: fewer planes per warp, more warps in flight); warp 2k the x seam of
// tile k, warp 2k + 1 its y seam.  NZ: the tile kernel's brick depth (the
// square rule along z holds inside a brick only).  S: the tile kernel's
// run starts (a cell's node, runs.cuh node()); H: hooked roots.
template <typename T, typename I, int C, int NZ, int NW>
__global__ void __launch_bounds__(64 * NW) meshccl_runs3d_seams(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I nz, I ny, I nx, int has_bg, typename meshccl::Key<T>::type bgkey, I walk) {
    meshccl::grid_entry();  // (launch.cuh)
    typedef typename meshccl::Key<T>::type K;
    using meshccl::Key;
    using meshccl::runs::node;
    using meshccl::runs::shfl;
    using meshccl::runs3d::seam_keep;
    using meshccl::runs3d::shfl_idx;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I ntx = (nx + 31) >> 5, bx = (I)blockIdx.x * NW + (warp >> 1);
    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, zb = (I)blockIdx.z * walk;
    const I ze = min(zb + walk, nz), rows = nz * ny;
    if (bx >= ntx) return;  // the whole warp
    auto fg = [&](K k) { return !(has_bg && k == bgkey); };
    if ((warp & 1) == 0) {
        // ---- the x seam before column x0: lane r, row y = y0 + r ----
        if (bx == 0) return;
        const I y = y0 + lane;
        const I hy = lane == 0 ? y0 - 1 : y0 + 32;  // the row past the band (lanes 0, 31)
        const bool halo = (lane == 0 || lane == 31) && hy >= 0 && hy < ny;
        typedef meshccl::runs3d::Window<K, 3, 3> W;  // rows y - 1, y, y + 1; x0 - 2 .. x0
        auto load = [&](I z, W& w) {
            const bool zin = z >= 0;  // (z < nz: the loop's)
            const bool own = zin && y < ny, hin = zin && halo;
            K mine[3], past[3];
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                mine[c] = own ? Key<T>::of(v[(z * ny + y) * nx + x0 - 2 + c]) : K();
                past[c] = hin ? Key<T>::of(v[(z * ny + hy) * nx + x0 - 2 + c]) : K();
            }
            bool iu = __shfl_up_sync(0xffffffffu, (int)own, 1) != 0;
            bool id = __shfl_down_sync(0xffffffffu, (int)own, 1) != 0;
            if (lane == 0) iu = hin;
            if (lane == 31) id = hin;
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                K u = shfl(mine[c], 1, true), d = shfl(mine[c], 1, false);
                if (lane == 0) u = past[c];
                if (lane == 31) d = past[c];
                w.k[0][c] = u;
                w.k[1][c] = mine[c];
                w.k[2][c] = d;
                w.in[0][c] = iu;
                w.in[1][c] = own;
                w.in[2][c] = id;
            }
        };
        W below, here;
        load(zb - 1, below);
        for (I z = zb; z < ze; ++z) {
            load(z, here);
            // bits: 0..8 the cell at x0, step (dz, dy, -1) at (dz + 1) * 3 + dy + 1
            // (bit 4 = (0, 0, -1): the pair to the left); 9..17 the cell at x0 - 1,
            // step (dz, dy, +1) at 9 + (dz + 1) * 3 + dy + 1
            unsigned todo = 0u;
            if (y < ny) {
                const K a = here.k[1][2], b = here.k[1][1];
                if (fg(a)) {
                    const bool eql = here.eq(1, 1, a), zeq = below.eq(1, 2, a);
                    const bool square = (lane > 0 && here.eq(0, 2, a) && here.eq(0, 1, a)) ||
                                        (z % NZ != 0 && below.eq(1, 2, a) && below.eq(1, 1, a));
                    if (eql && !square) todo |= 1u << 4;
#pragma unroll
                    for (int dz = -1; dz <= 0; ++dz)
#pragma unroll
                        for (int dy = -1; dy <= 1; ++dy) {
                            if (!meshccl::box::half_step<3, C>(dz, dy, -1)) continue;
                            const W& w = dz < 0 ? below : here;
                            const int r = dy + 1;
                            if (seam_keep<C>(dz, dy, -1, w.eq(r, 1, a), eql, zeq, false,
                                             w.eq(r, 2, a), w.eq(r, 0, a)))
                                todo |= 1u << ((dz + 1) * 3 + r);
                        }
                }
                if (fg(b)) {
                    const bool eql = here.eq(1, 0, b), zeq = below.eq(1, 1, b);
#pragma unroll
                    for (int dz = -1; dz <= 0; ++dz)
#pragma unroll
                        for (int dy = -1; dy <= 1; ++dy) {
                            if (!meshccl::box::half_step<3, C>(dz, dy, 1)) continue;
                            const W& w = dz < 0 ? below : here;
                            const int r = dy + 1;
                            if (seam_keep<C>(dz, dy, 1, w.eq(r, 2, b), eql, zeq, false, false,
                                             w.eq(r, 1, b)))
                                todo |= 1u << (9 + (dz + 1) * 3 + r);
                        }
                }
            }
            for (; todo; todo &= todo - 1u) {  // one call site
                const int s = __ffs(todo) - 1, right = s >= 9, q = s - 9 * right;
                const I dz = q / 3 - 1, dy = q % 3 - 1;
                const I cell = right ? x0 - 1 : x0, partner = right ? x0 : x0 - 1;
                // (a cell at x0 is its run's start; so is a partner there)
                const I na = right ? node(S, z * ny + y, cell, rows, nx) : (z * ny + y) * nx + cell;
                const I pr = (z + dz) * ny + y + dy;
                const I nb = right ? pr * nx + partner : node(S, pr, partner, rows, nx);
                meshccl::unite_recording(P, H, na, nb);
            }
            below = here;
        }
    } else {
        // ---- the y seam above row y0: lane c, column x = x0 + c ----
        if (blockIdx.y == 0) return;
        const I x = x0 + lane;
        typedef meshccl::runs3d::Window<K, 2, 4> W;  // rows y0 - 1, y0; x - 2 .. x + 1
        auto load = [&](I z, W& w) {
            const bool zin = z >= 0;
            const bool own = zin && x < nx;
            const bool in1 = zin && x0 >= 1, in2 = zin && x0 >= 2, in3 = zin && x0 + 32 < nx;
            const bool i1 = __shfl_up_sync(0xffffffffu, (int)own, 1) != 0;
            const bool i2 = __shfl_up_sync(0xffffffffu, (int)own, 2) != 0;
            const bool i3 = __shfl_down_sync(0xffffffffu, (int)own, 1) != 0;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const I row = (z * ny + y0 - 1 + r) * nx;
                const K mine = own ? Key<T>::of(v[row + x]) : K();
                K h1 = K(), h2 = K(), h3 = K();
                if (lane == 0) {
                    if (in1) h1 = Key<T>::of(v[row + x0 - 1]);
                    if (in2) h2 = Key<T>::of(v[row + x0 - 2]);
                } else if (lane == 31 && in3) {
                    h3 = Key<T>::of(v[row + x0 + 32]);
                }
                const K l1 = shfl_idx(h1, 0);
                K a1 = shfl(mine, 1, true), a2 = shfl(mine, 2, true), a3 = shfl(mine, 1, false);
                bool j1 = i1, j2 = i2, j3 = i3;
                if (lane == 0) { a1 = h1; a2 = h2; j1 = in1; j2 = in2; }
                if (lane == 1) { a2 = l1; j2 = in1; }
                if (lane == 31) { a3 = h3; j3 = in3; }
                w.k[r][0] = a2;
                w.k[r][1] = a1;
                w.k[r][2] = mine;
                w.k[r][3] = a3;
                w.in[r][0] = j2;
                w.in[r][1] = j1;
                w.in[r][2] = own;
                w.in[r][3] = j3;
            }
        };
        W below, here;
        load(zb - 1, below);
        for (I z = zb; z < ze; ++z) {
            load(z, here);
            // bits: (dz + 1) * 3 + dx + 1 the cell in row y0, step (dz, -1, dx);
            // 6 + dx + 1 the cell in row y0 - 1, step (-1, +1, dx)
            unsigned todo = 0u;
            if (x < nx) {
                const K a = here.k[1][2], b = here.k[0][2];
                if (fg(a)) {
                    const bool eql = here.eq(1, 1, a), zeq = below.eq(1, 2, a);
                    const bool sqz = z % NZ != 0 && below.eq(1, 2, a) && below.eq(0, 2, a);
#pragma unroll
                    for (int dz = -1; dz <= 0; ++dz)
#pragma unroll
                        for (int dx = -1; dx <= 1; ++dx) {
                            if (!meshccl::box::half_step<3, C>(dz, -1, dx)) continue;
                            if (lane + dx < 0 || lane + dx > 31) continue;  // the x seam's
                            const W& w = dz < 0 ? below : here;
                            const int c = 2 + dx;
                            if (seam_keep<C>(dz, -1, dx, w.eq(0, c, a), eql, zeq, sqz,
                                             c < 3 && w.eq(0, c + 1, a), w.eq(0, c - 1, a)))
                                todo |= 1u << ((dz + 1) * 3 + dx + 1);
                        }
                }
                if (fg(b)) {
                    const bool eql = here.eq(0, 1, b), zeq = below.eq(0, 2, b);
#pragma unroll
                    for (int dx = -1; dx <= 1; ++dx) {
                        if (!meshccl::box::half_step<3, C>(-1, 1, dx)) continue;
                        if (lane + dx < 0 || lane + dx > 31) continue;
                        const int c = 2 + dx;
                        if (seam_keep<C>(-1, 1, dx, below.eq(1, c, b), eql, zeq, false,
                                         c < 3 && below.eq(1, c + 1, b), below.eq(1, c - 1, b)))
                            todo |= 1u << (6 + dx + 1);
                    }
                }
            }
            for (; todo; todo &= todo - 1u) {  // one call site
                const int s = __ffs(todo) - 1, down = s >= 6;
                const I dx = (s % 3) - 1, dz = down ? -1 : (s / 3) - 1;
                const I ya = down ? y0 - 1 : y0, yb = down ? y0 : y0 - 1;
                meshccl::unite_recording(P, H, node(S, z * ny + ya, x, rows, nx),
                                         node(S, (z + dz) * ny + yb, x + dx, rows, nx));
            }
            below = here;
        }
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_R3_TILE(T, I, C, NZ)                                                          \
    template __global__ void meshccl_runs3d_tile<T, I, C, NZ, 0>(const T*, I*, unsigned*,     \
        unsigned*, unsigned*, unsigned*, I, I, I, int, meshccl::Key<T>::type, int);            \
    template __global__ void meshccl_runs3d_tile<T, I, C, NZ, 1>(const T*, I*, unsigned*,     \
        unsigned*, unsigned*, unsigned*, I, I, I, int, meshccl::Key<T>::type, int);            \
    template __global__ void meshccl_runs3d_tile<T, I, C, NZ, 2>(const T*, I*, unsigned*,     \
        unsigned*, unsigned*, unsigned*, I, I, I, int, meshccl::Key<T>::type, int);
#define MESHCCL_R3(T, I)                                                                      \
    MESHCCL_R3_TILE(T, I, 1, 8)                                                               \
    MESHCCL_R3_TILE(T, I, 2, 8)                                                               \
    MESHCCL_R3_TILE(T, I, 3, 8)                                                               \
    template __global__ void meshccl_runs3d_zface<T, I, 1, 8, 1>(const T*, I*, unsigned*, I,  \
        I, I, int, meshccl::Key<T>::type);                                                     \
    template __global__ void meshccl_runs3d_zface<T, I, 2, 8, 1>(const T*, I*, unsigned*, I,  \
        I, I, int, meshccl::Key<T>::type);                                                     \
    template __global__ void meshccl_runs3d_zface<T, I, 3, 8, 1>(const T*, I*, unsigned*, I,  \
        I, I, int, meshccl::Key<T>::type);                                                     \
    template __global__ void meshccl_runs3d_seams<T, I, 1, 8, 4>(const T*, I*, unsigned*,     \
        const unsigned*, I, I, I, int, meshccl::Key<T>::type, I);                                 \
    template __global__ void meshccl_runs3d_seams<T, I, 2, 8, 4>(const T*, I*, unsigned*,     \
        const unsigned*, I, I, I, int, meshccl::Key<T>::type, I);                                 \
    template __global__ void meshccl_runs3d_seams<T, I, 3, 8, 4>(const T*, I*, unsigned*,     \
        const unsigned*, I, I, I, int, meshccl::Key<T>::type, I);
#define MESHCCL_R3_16(T, I)                                                                   \
    MESHCCL_R3_TILE(T, I, 1, 16)                                                              \
    MESHCCL_R3_TILE(T, I, 3, 16)                                                              \
    template __global__ void meshccl_runs3d_zface<T, I, 1, 16, 1>(const T*, I*, unsigned*, I, \
        I, I, int, meshccl::Key<T>::type);                                                     \
    template __global__ void meshccl_runs3d_zface<T, I, 3, 16, 1>(const T*, I*, unsigned*, I, \
        I, I, int, meshccl::Key<T>::type);                                                     \
    template __global__ void meshccl_runs3d_seams<T, I, 1, 16, 4>(const T*, I*, unsigned*,    \
        const unsigned*, I, I, I, int, meshccl::Key<T>::type, I);                                 \
    template __global__ void meshccl_runs3d_seams<T, I, 3, 16, 4>(const T*, I*, unsigned*,    \
        const unsigned*, I, I, I, int, meshccl::Key<T>::type, I);
MESHCCL_R3(unsigned char, int)
MESHCCL_R3(unsigned char, long long)
MESHCCL_R3(meshccl::flag8, int)
MESHCCL_R3(meshccl::flag8, long long)
MESHCCL_R3(signed char, int)
MESHCCL_R3(signed char, long long)
MESHCCL_R3_16(unsigned char, int)
MESHCCL_R3_16(unsigned char, long long)
MESHCCL_R3_16(signed char, int)
MESHCCL_R3_16(signed char, long long)
#define MESHCCL_R3_WIDE(T) MESHCCL_R3(T, int) MESHCCL_R3(T, long long) MESHCCL_R3_16(T, int) \
    MESHCCL_R3_16(T, long long)
MESHCCL_R3_WIDE(unsigned short)
MESHCCL_R3_WIDE(unsigned int)
MESHCCL_R3_WIDE(unsigned long long)
MESHCCL_R3_WIDE(float)
MESHCCL_R3_WIDE(double)
#endif
