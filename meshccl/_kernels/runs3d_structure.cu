// runs3d_structure.cu -- 3-D binary volumes under any centrosymmetric
// 3 x 3 x 3 structure (scipy.ndimage.label's), runs as nodes, in bricks.
//
// runs3d.cu labels a volume under one of the three connectivities, whose
// pairs and skipping rules it knows at compile time; runsnd.cu takes any
// structure but unites every pair in the global forest, which costs three
// times as much on a volume.  This file keeps runs3d.cu's layout -- a block
// per brick of 32 x 32 cells by NZ planes, warp p on plane p, lane r holding
// row r as 32-bit masks, one forest per brick in shared memory -- and takes
// the neighbourhood as data: the structure's 13 half offsets, one bit each
// of `st` (the same for every thread, so every test of it is uniform):
//
//   bits 0..8:   (dz, dy, dx) = (-1, dy, dx), bit 3 (dy + 1) + dx + 1;
//   bits 9..11:  (0, -1, dx), bit 10 + dx;
//   bit 12:      (0, 0, -1), the left neighbour ("xjoin").
//
// Runs: with xjoin, a stretch of foreground cells of one tile row, its node
// its first cell; without it every foreground cell is its own node (a run
// of one).  For each offset whose partner row lies in the brick, the pairs
// of a row are masks (the row's foreground against the partner row's,
// shifted by dx), and of those only a few are united (the rules of
// runsnd_pairs.cuh on one word, here on a tile row):
// - the stretch rule: a pair whose left neighbour, in the same run, has
//   the pair of the same offset (the partners are x-neighbours, in one run);
// - with xjoin, the centre rule: a dx = -1 / +1 pair of a cell that has
//   the dx = 0 pair of the same row, or whose left / right neighbour in the
//   same run has it (the partners are x-neighbours, or the same cell);
// - the plane below's rows are taken in the order dy = 0, -1, +1, and a
//   pair is dropped where the partner of the same cell's pair with an
//   earlier of those rows is an in-plane neighbour (under the structure)
//   of its partner: the plane below's own pairs join them;
// - the column rule: the straight-down pair of a cell whose cell above, in
//   the plane, is joined to it, has its own straight-down pair, and whose
//   partner is joined to the cell above it (all three under the structure).
// - without xjoin, the connector rule: a pair with the plane below is
//   dropped where the same cell has an earlier such pair (in the order
//   above, dx = -1, 0, +1 within a row) whose partner and its own both
//   neighbour, under the structure, one foreground connector: the cell two
//   planes down, or two planes down and two rows or columns aside, or, in
//   the cell's own plane, the (earlier) cell two rows up or two columns
//   left.  The connector's pairs, or the partners' with it, join the two
//   partners.  A connector outside the tile's rows and columns or below
//   the brick's first plane counts as background (the pair is kept).  The
//   partners of the corners' four pairs all touch the cell two planes
//   down: at p = 0.6 they unite 1.1 pairs with the plane below per
//   foreground cell instead of 2.2 (a NumPy count on 48^3, one brick).
// Each dropped pair points at pairs of earlier cells, of earlier rows, or
// an earlier pair of the same cell, so none is dropped in a circle.
// The in-plane pairs straight up are united with the top of their stretch
// of such pairs (runs.cuh, tile_unions), as in runs3d.cu.
//
// 1. meshccl_runs3d_structure_tile: the brick's pairs in shared memory, the
//    piece roots stored in P, F and S of every tile row, A and H (as
//    runs3d.cu's tile kernel does).
// 2. meshccl_runs3d_structure_faces: a thread per tile row (32 cells),
//    numbered as F and S are (bx * rows + z * ny + y): every pair whose
//    partner lies outside the cell's brick -- with a row of another brick
//    (the brick's first plane against the plane below, a tile's first row
//    against the row above, its last row against the plane below's next
//    row), all of them by runsnd_pairs.cuh's step_pairs; with a row of the
//    same brick, those that leave through the tile's left or right side
//    (bits 0 and 31), and the left neighbour across the tile's left side
//    -- united in the global forest, each hooked root marked in H.
// 3. number_pieces.cu, as after runs3d.cu.

#include "launch.cuh"
#include "runs.cuh"
#include "runsnd_pairs.cuh"
#include "unionfind.cuh"

namespace meshccl {
namespace runs3d_structure {

constexpr int XJOIN = 12;

__device__ __forceinline__ unsigned has(unsigned st, int bit) { return (st >> bit) & 1u; }

// Whether cells (0, ddy, ddx) apart in one plane are neighbours under st.
__device__ __forceinline__ bool in_plane(unsigned st, int ddy, int ddx) {
    if (ddy == 0) return (ddx == 1 || ddx == -1) && has(st, XJOIN);
    if (ddy == 1) {
        ddy = -1;
        ddx = -ddx;
    }
    if (ddy != -1 || ddx < -1 || ddx > 1) return false;
    return has(st, 10 + ddx);
}

// The pairs of one row against one partner row (the masks J[0..2]: dx =
// -1, 0, +1, each the cells whose partner is foreground) that the stretch
// and centre rules keep (E: bit b where cell b - 1 is in the same run).
__device__ __forceinline__ void row_rules(const unsigned (&J)[3], unsigned E, bool xjoin,
                                          unsigned (&U)[3]) {
    U[0] = J[0] & ~((J[0] << 1) & E);
    U[1] = J[1] & ~((J[1] << 1) & E);
    U[2] = J[2] & ~((J[2] << 1) & E);
    if (xjoin) {
        U[0] &= ~J[1] & ~((J[1] << 1) & E);
        U[2] &= ~J[1] & ~((J[1] & E) >> 1);
    }
}

// The connectors of the connector rule, cells (dz, dy, dx) from the cell:
// two planes down at (0, 0), (0, +-2), (+-2, 0), and in its own plane the
// cells two rows up and two cells left (earlier cells).  Without xjoin.
constexpr int CONNECTORS = 7;
__host__ __device__ constexpr int connector_z(int c) { return c < 5 ? -2 : 0; }
__host__ __device__ constexpr int connector_y(int c) {
    return c == 3 ? 2 : (c == 4 || c == 5 ? -2 : 0);
}
__host__ __device__ constexpr int connector_x(int c) {
    return c == 1 ? 2 : (c == 2 || c == 6 ? -2 : 0);
}

// The connector rule on the pairs with the plane below (U[i], raw pairs
// Jraw[i]; i = 3 k + e: rows dy = 0, -1, +1 for k = 0, 1, 2, dx = e - 1),
// without xjoin: for each connector c, via, bit i where the partner of pair
// i neighbours the connector under st (the same for every thread), and
// Cc, bit b where the connector of the row's cell b is foreground and
// known here (not outside the tile's rows or columns, nor below the
// brick's first plane; a plane's run starts, starts[p], are its
// foreground).  A pair of cell b is dropped where an earlier one of its
// pairs and it both have partners that neighbour its foreground connector.
__device__ __forceinline__ void connector_rule(unsigned st, const unsigned (*starts)[32], int p,
                                               int lane, unsigned mF, const unsigned (&Jraw)[9],
                                               unsigned (&U)[9]) {
#pragma unroll
    for (int c = 0; c < CONNECTORS; ++c) {
        unsigned via = 0u;
#pragma unroll
        for (int i = 0; i < 9; ++i) {
            const int dy = i < 3 ? 0 : (i < 6 ? -1 : 1), dx = i % 3 - 1;
            // the partner from the connector: (-1, oy, ox) from one in this
            // plane; from one two planes down (+1, ...), the mirror of it
            int oy = dy - connector_y(c), ox = dx - connector_x(c);
            if (connector_z(c) == -2) {
                oy = -oy;
                ox = -ox;
            }
            if (oy >= -1 && oy <= 1 && ox >= -1 && ox <= 1 && has(st, 3 * (oy + 1) + ox + 1))
                via |= 1u << i;
        }
        if (__popc(via) < 2) continue;  // (uniform)
        unsigned Cc = 0u;
        if (connector_z(c) == 0) {
            Cc = connector_y(c) == -2 ? (lane >= 2 ? starts[p][max(lane - 2, 0)] : 0u) : mF << 2;
        } else if (p > 1) {
            const int row = lane + connector_y(c);
            Cc = row >= 0 && row <= 31 ? starts[p - 2][min(max(row, 0), 31)] : 0u;
            Cc = connector_x(c) > 0 ? Cc >> 2 : (connector_x(c) < 0 ? Cc << 2 : Cc);
        }
        unsigned through = 0u;  // the earlier pairs' partners that neighbour it
#pragma unroll
        for (int i = 0; i < 9; ++i) {
            if (!((via >> i) & 1u)) continue;
            U[i] &= ~(Cc & through);
            through |= Jraw[i];
        }
    }
}

}  // namespace runs3d_structure
}  // namespace meshccl

// A block per brick (bx, by, bz) = blockIdx, 32 * NZ threads; F and S: word
// bx * (nz * ny) + z * ny + y; A and H as in runs3d.cu (aligned: nx % 32 ==
// 0, a tile row is one word of each, stored here; otherwise the host zeroes
// them and the piece roots are ORed in).  Dynamic shared memory: NZ * (32 *
// 33 + 32) words (16 planes: 68 KB, the host raises the limit); 48 warps a
// multiprocessor.  v: bool bytes (background byte bg where has_bg), as
// runsnd.cu's rows kernel reads them (T: unsigned char or meshccl::flag8).
template <typename T, typename I, int NZ>
__global__ void __launch_bounds__(32 * NZ, 48 / NZ) meshccl_runs3d_structure_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I nz,
        I ny, I nx, int has_bg, unsigned char bg, unsigned st, int aligned) {
    meshccl::grid_entry();  // (launch.cuh)
    using meshccl::runs3d_structure::has;
    using meshccl::runs3d_structure::in_plane;
    constexpr int RS = meshccl::runs::ROW_NODES, PL = 32 * RS;
    extern __shared__ int shared_words[];
    int* forest = shared_words;
    unsigned(*starts)[32] = reinterpret_cast<unsigned(*)[32]>(shared_words + NZ * PL);
    const int lane = threadIdx.x & 31, p = threadIdx.x >> 5;
    const I bx = (I)blockIdx.x, x0 = bx * 32, y0 = (I)blockIdx.y * 32;
    const I z0 = (I)blockIdx.z * NZ, z = z0 + p, y = y0 + lane;
    const int width = (int)min((I)32, nx - x0);
    const bool in = z < nz && y < ny;
    const bool xjoin = has(st, meshccl::runs3d_structure::XJOIN);
    unsigned w[8];
    meshccl::runs::load_row(in ? v + (z * ny + y) * nx + x0 : nullptr, width, w);
    const unsigned mF = meshccl::runs::fg_mask(w, in ? width : 0, has_bg, bg);
    const unsigned mE = xjoin ? mF & (mF << 1) : 0u;
    const unsigned S_ = mF & ~mE;
    unsigned pF = __shfl_up_sync(0xffffffffu, mF, 1);
    if (lane == 0) pF = 0u;
    meshccl::runs::tile_nodes(forest, p * PL, starts[p], lane, S_);
    // row r of plane p - 1 (the warp before loaded it just now: mostly L1)
    unsigned bF = 0u;
    {
        unsigned b0[8];
        const bool bin = p > 0 && in;
        meshccl::runs::load_row(bin ? v + ((z - 1) * ny + y) * nx + x0 : nullptr, width, b0);
        bF = meshccl::runs::fg_mask(b0, bin ? width : 0, has_bg, bg);
    }
    __syncthreads();
    // in-plane pairs with row r - 1 (dx = -1, 0, +1), then the tile's unions
    {
        const unsigned J[3] = {has(st, 9) ? mF & (pF << 1) : 0u, has(st, 10) ? mF & pF : 0u,
                               has(st, 11) ? mF & (pF >> 1) : 0u};
        unsigned U[3];
        meshccl::runs3d_structure::row_rules(J, mE, xjoin, U);
        meshccl::runs::tile_unions<true, RS, 0>(forest, p * PL, starts[p], lane, S_, mE, U[0],
                                                U[1], U[2]);
    }
    if (p > 0) {
        // pairs with rows r, r - 1 and r + 1 of plane p - 1, in that order
        unsigned U[9], Jraw[9];
        int dyv[9], shift[9];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
            const int dy = k == 0 ? 0 : (k == 1 ? -1 : 1);
            unsigned f = dy == 0 ? bF : meshccl::runs::shfl(bF, 1, dy < 0);
            if (lane + dy < 0 || lane + dy > 31) f = 0u;
            const int base = 3 * (dy + 1);
            const unsigned J[3] = {has(st, base) ? mF & (f << 1) : 0u,
                                   has(st, base + 1) ? mF & f : 0u,
                                   has(st, base + 2) ? mF & (f >> 1) : 0u};
            unsigned Uk[3];
            meshccl::runs3d_structure::row_rules(J, mE, xjoin, Uk);
            if (k == 0 && has(st, 10)) {
                // the column rule (V: the in-plane pair straight up)
                unsigned pZ = __shfl_up_sync(0xffffffffu, J[1], 1);
                unsigned pbF = __shfl_up_sync(0xffffffffu, bF, 1);
                if (lane == 0) pZ = pbF = 0u;
                Uk[1] &= ~((mF & pF) & pZ & (bF & pbF));
            }
#pragma unroll
            for (int e = 0; e < 3; ++e) {
                // partners that neighbour, in the plane below, the partner of
                // this cell's pair with an earlier row
                unsigned cover = 0u;
#pragma unroll
                for (int k2 = 0; k2 < k; ++k2) {
                    const int dy2 = k2 == 0 ? 0 : -1;  // (k2 < k <= 2)
#pragma unroll
                    for (int e2 = 0; e2 < 3; ++e2)
                        if (in_plane(st, dy - dy2, e - e2)) cover |= Jraw[3 * k2 + e2];
                }
                U[3 * k + e] = Uk[e] & ~cover;
                Jraw[3 * k + e] = J[e];
                dyv[3 * k + e] = dy;
                shift[3 * k + e] = e - 1;
            }
        }
        if (!xjoin) meshccl::runs3d_structure::connector_rule(st, starts, p, lane, mF, Jraw, U);
        unsigned sts[9];
        int tgt[9];
#pragma unroll
        for (int i = 0; i < 9; ++i) {
            const int r = lane + dyv[i];
            tgt[i] = (p - 1) * PL + r * RS;
            sts[i] = r >= 0 && r <= 31 ? starts[p - 1][r] : 0u;
        }
        meshccl::runs::unite_all(forest, p * PL + lane * RS, S_, U, tgt, sts, shift);
    }
    __syncthreads();
    meshccl::runs::brick_store<1024, NZ>(forest, starts[p], P, A, H, F, S, mF, S_, nz, ny, nx,
                                         aligned);
}

// A thread per tile row g = bx * rows + z * ny + y (rows = nz * ny).  steps:
// the structure's row table (runsnd_pairs.cuh's Step, made by
// meshccl/_gpu/runs_nd.py's step_table: at most 4 rows, the leading axes z
// then y), nsteps of them; bricks of NZ planes as the tile kernel's.
// Covers: a pair that leaves the brick is dropped where its partner
// neighbours, under the structure, the partner of the same cell's pair with
// an earlier entry of the table that leaves the brick too (the table's
// cover masks, as runsnd.cu drops them; the pairs of entries inside the
// brick cover nothing here).
template <typename I, int NZ, bool Covers>
__global__ void __launch_bounds__(256) meshccl_runs3d_structure_faces(
        I* P, unsigned* __restrict__ H, const unsigned* __restrict__ F,
        const unsigned* __restrict__ S, I nz, I ny, I nx, unsigned st,
        const meshccl::runsnd::Step* __restrict__ steps, int nsteps) {
    meshccl::grid_entry();  // (launch.cuh)
    using meshccl::runsnd::start_at;
    const I ntx = (nx + 31) >> 5, rows = nz * ny;
    const I g = (I)blockIdx.x * blockDim.x + (I)threadIdx.x;
    if (g >= rows * ntx) return;
    const unsigned m = F[g];
    if (!m) return;
    const I bx = g / rows, r = g - bx * rows, z = r / ny, y = r - z * ny;
    const bool xjoin = meshccl::runs3d_structure::has(st, meshccl::runs3d_structure::XJOIN);
    const unsigned s = S[g];
    const I mine = r * nx + bx * 32;
    auto unite = [&](I a, I b) { meshccl::unite_recording(P, H, a, b); };
    auto Fr = [&](I w) { return __ldg(F + w); };
    auto Sr = [&](I w) { return __ldg(S + w); };
    if (xjoin && bx > 0 && (m & 1u) && (Fr(g - rows) >> 31))
        unite(mine, mine - 32 + start_at(Sr(g - rows), 31));
    // bit 0: first plane of the volume / first row of a plane; bit 1: ...
    // (lead axes z, y as the table's bits)
    const unsigned lo = (z == 0 ? 1u : 0u) | (y == 0 ? 2u : 0u);
    const unsigned hi = (z == nz - 1 ? 1u : 0u) | (y == ny - 1 ? 2u : 0u);
    const int zb = (int)(z % NZ), yb = (int)(y & 31);
    // a row inside its brick with no cell at a tile side has no such pair
    if (zb != 0 && yb != 0 && yb != 31 && !(m & 0x80000001u)) return;
    // Covers: the pairs of the row's earlier entries that leave the brick
    // (Js[3 e + k], bit 3 e + k of held), for the table's cover masks
    unsigned Js[12];
    unsigned held = 0u;
    auto covered = [&](unsigned long long mask) {
        unsigned c = 0u;
        if (Covers) {
            const unsigned t = (unsigned)mask & held;
#pragma unroll
            for (int i = 0; i < 12; ++i)
                if ((t >> i) & 1u) c |= Js[i];
        }
        return c;
    };
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        if (e >= nsteps) break;
        const meshccl::runsnd::Step stp = steps[e];
        if ((stp.down & lo) || (stp.up & hi)) continue;  // no such row
        const bool cross = ((stp.down & 1u) && zb == 0) || ((stp.down & 2u) && yb == 0) ||
                           ((stp.up & 2u) && yb == 31);
        if (cross) {
            unsigned J[3] = {0u, 0u, 0u};
            meshccl::runsnd::step_pairs<I>(m, s, xjoin, r, bx, rows, ntx, nx, stp, covered, J,
                                           Fr, Sr, unite);
            if (Covers) {
#pragma unroll
                for (int k = 0; k < 3; ++k) Js[3 * e + k] = J[k];
                held |= 7u << (3 * e);
            }
            continue;
        }
        // the partner row is in the brick: only the pairs through the
        // tile's sides
        const I rn = r - (I)stp.back, w = bx * rows + rn, theirs = rn * nx + bx * 32;
        if ((stp.dx & 1u) && bx > 0 && (m & 1u) && (Fr(w - rows) >> 31) &&
            !(xjoin && (stp.dx & 2u) && (Fr(w) & 1u)))
            unite(mine, theirs - 32 + start_at(Sr(w - rows), 31));
        if ((stp.dx & 4u) && bx + 1 < ntx && (m >> 31) && (Fr(w + rows) & 1u) &&
            !(xjoin && (stp.dx & 2u) && (Fr(w) >> 31)))
            unite(mine + start_at(s, 31), theirs + 32);
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile the instantiations the defaults ask for.
#define MESHCCL_RUNS3D_STRUCTURE(I, NZ)                                                       \
    template __global__ void meshccl_runs3d_structure_tile<unsigned char, I, NZ>(             \
        const unsigned char*, I*, unsigned*, unsigned*, unsigned*, unsigned*, I, I, I, int,   \
        unsigned char, unsigned, int);                                                        \
    template __global__ void meshccl_runs3d_structure_tile<meshccl::flag8, I, NZ>(            \
        const meshccl::flag8*, I*, unsigned*, unsigned*, unsigned*, unsigned*, I, I, I, int,  \
        unsigned char, unsigned, int);                                                        \
    template __global__ void meshccl_runs3d_structure_faces<I, NZ, true>(                     \
        I*, unsigned*, const unsigned*, const unsigned*, I, I, I, unsigned,                   \
        const meshccl::runsnd::Step*, int);                                                   \
    template __global__ void meshccl_runs3d_structure_faces<I, NZ, false>(                    \
        I*, unsigned*, const unsigned*, const unsigned*, I, I, I, unsigned,                   \
        const meshccl::runsnd::Step*, int);
MESHCCL_RUNS3D_STRUCTURE(int, 8)
MESHCCL_RUNS3D_STRUCTURE(long long, 8)
MESHCCL_RUNS3D_STRUCTURE(int, 16)
MESHCCL_RUNS3D_STRUCTURE(long long, 16)
#endif
