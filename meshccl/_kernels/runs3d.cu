// runs3d.cu -- 3-D volumes of any cell type, runs as nodes: plain volumes,
// and (the lattice form, at the end of this file) volumes with a mask,
// bonds or a tolerance.
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
// (runs3d::row_masks: in the tile kernels a plane's own masks and its z
// masks against the plane below in one pass, each cell keyed once, the
// plane below's F and V from the warp that made them, through shared
// memory; z_pairs_by takes the z masks instead of words.  The z-face
// kernels, whose plane below no warp of theirs holds, add z_masks.  Both
// shared with the lattice form, the join rule a policy: WideJoin here).
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
        // (|trunc(v)| < 2^63 exactly where -2^63 < v < 2^63, false for NaN;
        // -2^63 itself maps to -2^63 either way)
        const float t = truncf(v);
        return fabsf(t) < 0x1p63f ? t : -0x1p63f;
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
        const double t = trunc(v);
        return fabs(t) < 0x1p63 ? t : -0x1p63;
    }
    static __device__ __forceinline__ double bg(long long b) {
        const double d = (double)b;
        return (long long)d == b ? d : __longlong_as_double(0x7fffffffffffffffLL);
    }
};

// The keys of the plain seam kernel: lattice.cuh's Key, but floats by
// WideKey (a 4-byte key for a float: one shuffle where an int64 takes two).
template <typename T>
struct SeamKey {
    typedef typename Key<T>::type K;
    static __device__ __forceinline__ K of(T v) { return Key<T>::of(v); }
    static __device__ __forceinline__ K bg(K b) { return b; }
};
template <>
struct SeamKey<float> : WideKey<float> {};
template <>
struct SeamKey<double> : WideKey<double> {};

template <typename K>
__device__ __forceinline__ K lane_shfl(K k, int delta, bool up) {
    if constexpr (sizeof(K) < 4)
        return (K)(up ? __shfl_up_sync(0xffffffffu, (unsigned)k, delta)
                      : __shfl_down_sync(0xffffffffu, (unsigned)k, delta));
    else
        return up ? __shfl_up_sync(0xffffffffu, k, delta) : __shfl_down_sync(0xffffffffu, k, delta);
}

// The plain form's join policy for wider cells (lattice.cuh describes the
// interface; PlainJoin there keys floats as int64): keys by WideKey,
// equal keys join, no mask or bonds, transitive.
template <typename T>
struct WideJoin {
    typedef typename WideKey<T>::K K;
    static constexpr bool transitive = true, features = false;
    int has_bg;
    K bgkey;
    static __device__ __forceinline__ K key(T v) { return WideKey<T>::of(v); }
    __device__ __forceinline__ bool bg(K k) const { return has_bg && k == bgkey; }
    __device__ __forceinline__ bool on(long long) const { return true; }
    template <typename... D>
    __device__ __forceinline__ int bond(D...) const { return -1; }
    __device__ __forceinline__ bool open(int, long long) const { return true; }
    __device__ __forceinline__ bool join(K kj, K k) const { return kj == k; }
};

// The keys of plane z - 1 that the z pairs of a row r meet, at a lane's
// column (lane c: column c): rows r - 1, r and r + 1 (p, c, n) and, by
// shuffles, their keys at x - 1 and x + 1 (l*, r*).  Chain: the three rows
// kept as the rows go by, row r + 1 loaded one row ahead; otherwise row r
// alone (connectivity 1 without the plain form's V and E of plane z - 1).
// Left: the keys at x - 1 at connectivity 1 too (the plain z-face kernel's
// E of plane z - 1).  key(r): row r's key at the lane's column.
template <int C, bool Chain, bool Left, typename K>
struct BelowRows {
    K bp = K(), bc = K(), bn = K(), lp = K(), lc = K(), ln = K(), rp = K(), rc = K(), rn = K();
    template <typename Key>
    __device__ __forceinline__ void start(const Key& key) {
        if constexpr (Chain) {
            bn = key(0);
            if (C >= 2 || Left) ln = lane_shfl(bn, 1, true);
            if (C >= 2) rn = lane_shfl(bn, 1, false);
        }
    }
    template <typename Key>
    __device__ __forceinline__ void next(const Key& key, int r) {
        if constexpr (Chain) {
            bp = bc; lp = lc; rp = rc;
            bc = bn; lc = ln; rc = rn;
            if (r < 31) {
                bn = key(r + 1);
                if (C >= 2 || Left) ln = lane_shfl(bn, 1, true);
                if (C >= 2) rn = lane_shfl(bn, 1, false);
            }
        } else {
            bc = key(r);
        }
    }
};

// Row r's z masks (z_masks's Z[k][e] for that row) by one ballot each:
// k the lane's key in row r of plane z, b the keys of plane z - 1 around
// it.  The plain form (a transitive join J): raw equality, no test of
// either cell.  The lattice form: the lane's cell foreground (f), the
// pair's bond open (the bond planes `bond`, cell index i), the rule true
// -- but not the partner's foreground, which the caller ANDs in as masks
// of the rows of plane z - 1 (below_fg): one mask operation a row, where
// a test per cell needs the row's foreground by a shuffle and a shift.
template <int C, typename J, typename K, typename B, typename I>
__device__ __forceinline__ void z_row(const J& join, const int (&bond)[3][3], K k, bool f, I i,
                                      int lane, int r, const B& b, unsigned (&m)[3][3]) {
    constexpr bool plain = J::transitive;
    auto pair = [&](bool fk, int kk, int e, K partner) {
        if constexpr (plain) return k == partner;
        else return fk && join.open(bond[kk][e], i) && join.join(partner, k);
    };
#pragma unroll
    for (int kk = 0; kk < 3; ++kk)
#pragma unroll
        for (int e = 0; e < 3; ++e) m[kk][e] = 0u;
    m[0][1] = __ballot_sync(0xffffffffu, pair(f, 0, 1, b.bc));
    if (C >= 2) {
        const bool fl = f && lane > 0, fr = f && lane < 31;
        m[0][0] = __ballot_sync(0xffffffffu, pair(fl, 0, 0, b.lc));
        m[0][2] = __ballot_sync(0xffffffffu, pair(fr, 0, 2, b.rc));
        if (r > 0) m[1][1] = __ballot_sync(0xffffffffu, pair(f, 1, 1, b.bp));
        if (r < 31) m[2][1] = __ballot_sync(0xffffffffu, pair(f, 2, 1, b.bn));
        if (C == 3) {
            if (r > 0) {
                m[1][0] = __ballot_sync(0xffffffffu, pair(fl, 1, 0, b.lp));
                m[1][2] = __ballot_sync(0xffffffffu, pair(fr, 1, 2, b.rp));
            }
            if (r < 31) {
                m[2][0] = __ballot_sync(0xffffffffu, pair(fl, 2, 0, b.ln));
                m[2][2] = __ballot_sync(0xffffffffu, pair(fr, 2, 2, b.rn));
            }
        }
    }
}

// The lattice form's partner test of z_row's masks: lane r's Z[k][e]
// ANDed with the foreground of row r + dy of plane z - 1 (bFc: row r,
// bFp: row r - 1, bFn: row r + 1; 0 where that row is outside the tile),
// shifted to the partner's column.
__device__ __forceinline__ void below_fg(unsigned (&Z)[3][3], unsigned bFc, unsigned bFp,
                                         unsigned bFn) {
    const unsigned f[3] = {bFc, bFp, bFn};
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        Z[k][0] &= f[k] << 1;
        Z[k][1] &= f[k];
        Z[k][2] &= f[k] >> 1;
    }
}

// The bond plane of each z step, k and e as Z's (the lattice form's).
template <typename J>
__device__ __forceinline__ void z_bonds(const J& join, int (&bond)[3][3]) {
#pragma unroll
    for (int k = 0; k < 3; ++k)
#pragma unroll
        for (int e = 0; e < 3; ++e)
            bond[k][e] = join.bond(-1, k == 0 ? 0 : (k == 1 ? -1 : 1), e - 1);
}

// A tile's rows of wider cells as masks, for both forms: lane c loads
// column c of the 32 rows (row r at rows + r * nx, cell index row0 + r *
// nx + c for the features; `width` columns and `height` rows inside the
// array, height 0: none), a warp ballot per row and mask makes each row's
// mask, and lane r keeps row r's: F (foreground), E (joined to the left
// neighbour), V (joined to the cell above) and, with Diag, Vl / Vr
// (up-left / up-right).  The join policy J decides (lattice.cuh):
// transitive (plain) a cell with a key equal to a foreground cell's is
// foreground, so a pair needs no test of its partner; otherwise both
// cells' foreground bits and the pair's bond are tested.
//
// WithZ: the same pass also makes the row's z masks against plane z - 1
// (`plane` cells before; `below` of its rows inside the array, 0: none, no
// loads), z_row's per row, into Z (lane r: row r): each cell's key is made
// once for both, where row_masks and then z_masks made it twice and the z
// masks also remade plane z - 1's F and V, which the brick's warp on that
// plane has made already (the tile kernels take them from it through
// shared memory).  The lattice form's Z then lacks the partners'
// foreground (below_fg).
//
// Unroll: rows unrolled at a time, 32 for the plain kernels, 4 for the
// lattice ones (whose tests took seconds to compile fully unrolled, see
// lattice_rows): an inner loop of Unroll rows, unrolled in full, in an
// outer loop that is not (a count, #pragma unroll(Unroll), compiled the
// plain kernels to other code: up to 500 bytes more spills in the z masks).
template <bool Diag, int Unroll, bool WithZ, int C, typename J, typename T, typename I>
__device__ __forceinline__ void row_masks(const J& join, const T* __restrict__ rows, I row0,
                                          I nx, int width, int height, int lane, unsigned& F,
                                          unsigned& E, unsigned& V, unsigned& Vl, unsigned& Vr,
                                          I plane, int below, unsigned (&Z)[3][3]) {
    typedef typename J::K K;
    constexpr bool plain = J::transitive;
    const bool col = lane < width, right_in = lane + 1 < width;
    const int bl = join.bond(0, 0, -1), bu = join.bond(0, -1, 0);
    const int bul = join.bond(0, -1, -1), bur = join.bond(0, -1, 1);
    K pl = K(), pr = K(), pk = K();  // the row above: its keys at x - 1, x + 1, x
    unsigned pF = 0u;                // ... and its foreground (lattice)
    F = E = V = Vl = Vr = 0u;
    int bond[3][3];
    BelowRows<C, (C >= 2), false, K> b;
    const T* low = rows - plane;
    auto bkey = [&](int r) { return col && r < below ? J::key(low[(I)r * nx + lane]) : K(); };
    if constexpr (WithZ) {
        z_bonds(join, bond);
        b.start(bkey);
#pragma unroll
        for (int k = 0; k < 3; ++k)
#pragma unroll
            for (int e = 0; e < 3; ++e) Z[k][e] = 0u;
    }
#pragma unroll 1
    for (int r0 = 0; r0 < 32; r0 += Unroll)
#pragma unroll
    for (int r = r0; r < r0 + Unroll; ++r) {
        const bool in = col && r < height;
        const K k = in ? J::key(rows[(I)r * nx + lane]) : K();
        bool f = in && !join.bg(k);
        if constexpr (!plain) f = f && join.on(row0 + (I)r * nx + lane);
        const K kl = lane_shfl(k, 1, true);
        const unsigned Fm = __ballot_sync(0xffffffffu, f);
        // plain: a cell equal to a foreground cell is foreground; lattice:
        // both cells foreground, the bond open, the rule true
        const unsigned Em = __ballot_sync(
            0xffffffffu, plain ? f && lane > 0 && kl == k
                               : f && lane > 0 && ((Fm >> (lane - 1)) & 1u) &&
                                     join.open(bl, row0 + (I)r * nx + lane) && join.join(kl, k));
        unsigned Vm = 0u, Vlm = 0u, Vrm = 0u;
        if (r > 0) {
            if constexpr (plain) {
                Vm = __ballot_sync(0xffffffffu, f && pk == k);
                if (Diag) {
                    Vlm = __ballot_sync(0xffffffffu, f && lane > 0 && pl == k);
                    Vrm = __ballot_sync(0xffffffffu, f && right_in && pr == k);
                }
            } else {
                const I i = row0 + (I)r * nx + lane;  // (the cell's index, for the features)
                Vm = __ballot_sync(0xffffffffu, f && ((pF >> lane) & 1u) && join.open(bu, i) &&
                                                    join.join(pk, k));
                if (Diag) {
                    Vlm = __ballot_sync(0xffffffffu, f && lane > 0 && ((pF >> (lane - 1)) & 1u) &&
                                                         join.open(bul, i) && join.join(pl, k));
                    Vrm = __ballot_sync(0xffffffffu, f && lane < 31 && ((pF >> (lane + 1)) & 1u) &&
                                                         join.open(bur, i) && join.join(pr, k));
                }
            }
        }
        unsigned zm[3][3];
        if constexpr (WithZ) {
            b.next(bkey, r);
            z_row<C>(join, bond, k, f, row0 + (I)r * nx + lane, lane, r, b, zm);
        }
        if (lane == r) {
            F = Fm;
            E = Em;
            V = Vm;
            Vl = Vlm;
            Vr = Vrm;
            if constexpr (WithZ) {
#pragma unroll
                for (int kk = 0; kk < 3; ++kk)
#pragma unroll
                    for (int e = 0; e < 3; ++e) Z[kk][e] = zm[kk][e];
            }
        }
        pk = k;
        if constexpr (!plain) pF = Fm;
        if (Diag) {
            pl = kl;
            pr = lane_shfl(k, 1, false);
        }
    }
}

// row_masks without the z masks.
template <bool Diag, int Unroll, typename J, typename T, typename I>
__device__ __forceinline__ void row_masks(const J& join, const T* __restrict__ rows, I row0,
                                          I nx, int width, int height, int lane, unsigned& F,
                                          unsigned& E, unsigned& V, unsigned& Vl, unsigned& Vr) {
    unsigned Z[3][3];
    row_masks<Diag, Unroll, false, 1>(join, rows, row0, nx, width, height, lane, F, E, V, Vl,
                                      Vr, (I)0, 0, Z);
}

// The equality masks of z_pairs_by (runs.cuh) for wider cells: lane r's
// row of plane z against rows r - 1, r and r + 1 of plane z - 1 (m in
// z_masks's layout), made by z_masks or row_masks with WideJoin; k: the
// row row() asked for (0: dy 0, 1: dy -1, 2: dy +1).
template <int C>
struct WideZ {
    unsigned m[3][3];
    int k;
    __device__ __forceinline__ void row(int dy) { k = dy == 0 ? 0 : (dy < 0 ? 1 : 2); }
    __device__ __forceinline__ unsigned straight() const { return m[0][1]; }
    __device__ __forceinline__ unsigned left() const { return m[k][0]; }
    __device__ __forceinline__ unsigned centre() const { return m[k][1]; }
    __device__ __forceinline__ unsigned right() const { return m[k][2]; }
};

// The z pairs of a tile's rows of wider cells as masks, for both forms,
// where the plane below is not another warp's (the z-face kernels): row r
// of plane z (cells at rows + r * nx + c, index row0 + r * nx + c) against
// rows r - 1, r and r + 1 of plane z - 1 (`plane` cells before).  Lane c
// loads column c of both planes' rows, and lane r gets Z[k][e]: the cells
// of row r paired with the cell at x + e - 1 of row r + dy, dy = 0, -1, +1
// for k = 0, 1, 2 (the connectivity's steps only; partners outside the
// tile are not in these masks).  With a transitive join J (the plain
// form) the bits are raw equality, with no test that either cell is
// inside or foreground (z_pairs_by does that with bF), and the row's own
// masks of plane z - 1 come too: bF, bV and, with BelowE, bE (equal to the
// left).  Otherwise (the lattice form) every bit is a joined pair: both
// cells foreground (mF, and bF given: lane r's row of each plane), the
// bond open, the rule true.  Unroll as row_masks's.
template <int C, bool BelowE, int Unroll, typename J, typename T, typename I>
__device__ __forceinline__ void z_masks(const J& join, const T* __restrict__ rows, I row0,
                                        I plane, I nx, int width, int height, int lane,
                                        unsigned mF, unsigned (&Z)[3][3], unsigned& bF,
                                        unsigned& bV, unsigned& bE) {
    typedef typename J::K K;
    constexpr bool plain = J::transitive;
    const bool col = lane < width;
    const T* below = rows - plane;
    auto key = [&](const T* base, int r) {
        return col && r < height ? J::key(base[(I)r * nx + lane]) : K();
    };
    auto bkey = [&](int r) { return key(below, r); };
    int bond[3][3];
    z_bonds(join, bond);
    // (the lattice form at C = 1 reads row r alone: no chain)
    BelowRows<C, plain || C >= 2, BelowE, K> b;
    b.start(bkey);
    if constexpr (plain) bF = bV = bE = 0u;
#pragma unroll
    for (int k = 0; k < 3; ++k)
#pragma unroll
        for (int e = 0; e < 3; ++e) Z[k][e] = 0u;
#pragma unroll 1
    for (int r0 = 0; r0 < 32; r0 += Unroll)
#pragma unroll
    for (int r = r0; r < r0 + Unroll; ++r) {
        b.next(bkey, r);
        const K k = key(rows, r);
        unsigned Fm = 0u, Vm = 0u, Em = 0u;
        bool f = true;
        if constexpr (plain) {
            const bool fb = col && r < height && !join.bg(b.bc);
            Fm = __ballot_sync(0xffffffffu, fb);
            Vm = r > 0 ? __ballot_sync(0xffffffffu, fb && b.bp == b.bc) : 0u;
            Em = BelowE ? __ballot_sync(0xffffffffu, fb && lane > 0 && b.lc == b.bc) : 0u;
        } else {
            // this row's foreground, as bits (every lane shuffles: a lane
            // outside the volume skipping it would leave the warp's
            // collective without it)
            const unsigned Fr = __shfl_sync(0xffffffffu, mF, r);
            f = col && r < height && ((Fr >> lane) & 1u);
        }
        unsigned zm[3][3];
        z_row<C>(join, bond, k, f, row0 + (I)r * nx + lane, lane, r, b, zm);
        if (lane == r) {
            if constexpr (plain) {
                bF = Fm;
                bV = Vm;
                bE = Em;
            }
#pragma unroll
            for (int kk = 0; kk < 3; ++kk)
#pragma unroll
                for (int e = 0; e < 3; ++e) Z[kk][e] = zm[kk][e];
        }
    }
    if constexpr (!plain) {
        unsigned bFp = runs::shfl(bF, 1, true), bFn = runs::shfl(bF, 1, false);
        if (lane == 0) bFp = 0u;
        if (lane == 31) bFn = 0u;
        below_fg(Z, bF, bFp, bFn);
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

// The z-face kernels' unions (both forms): lane r's run starts of plane z
// (mF & ~mE, row y = y0 + r, first column x0) with those of plane z - 1
// (bS: lane r's row) that the masks U (runs.cuh, ZPairs layout) pair them
// with, in the global forest, each hooked root marked in H.  (The
// coordinates come by reference: by value, the plain kernels of 64-bit
// indices compiled to other code, with up to 136 bytes more spills.)
template <int C, typename I>
__device__ __forceinline__ void zface_unions(I* P, unsigned* __restrict__ H, const I& z,
                                             const I& ny, const I& nx, const I& y0, const I& y,
                                             const I& x0, const int& lane, unsigned mF,
                                             unsigned mE, unsigned bS,
                                             unsigned (&U)[meshccl::runs::ZPairs<C>::N],
                                             const int (&dy)[meshccl::runs::ZPairs<C>::N],
                                             const int (&shift)[meshccl::runs::ZPairs<C>::N]) {
    constexpr int N = meshccl::runs::ZPairs<C>::N;
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
        // Wider cells: the same masks, by ballots over columns, the plane's
        // own and its z masks against plane p - 1 in one pass (runs3d::
        // row_masks), then the same unions.  Plane p - 1's F and V are its
        // warp's, through shared memory.  No binary shortcut.
        unsigned(*rowF)[32] = starts + NZ;
        unsigned(*rowV)[32] = starts + 2 * NZ;
        const int lane = threadIdx.x & 31, p = threadIdx.x >> 5;
        const I x0 = (I)blockIdx.x * 32, y0 = (I)blockIdx.y * 32, z = (I)blockIdx.z * NZ + p;
        const int width = (int)min((I)32, nx - x0);
        const int height = z < nz ? (int)min((I)32, ny - y0) : 0;  // (0: past the volume)
        const auto bg = meshccl::runs3d::WideKey<T>::bg(bgkey);
        const T* rows = v + (min(z, nz - 1) * ny + y0) * nx + x0;
        unsigned mF, mE, mV, mVl, mVr;
        const meshccl::runs3d::WideJoin<T> join = {has_bg, bg};
        meshccl::runs3d::WideZ<C> eqs;
        eqs.k = 0;
        meshccl::runs3d::row_masks<C >= 2, 32, true, C>(join, rows, (I)0, nx, width, height,
                                                         lane, mF, mE, mV, mVl, mVr, ny * nx,
                                                         p > 0 ? height : 0, eqs.m);
        const unsigned S_ = mF & ~mE;
        if (Prefetch && lane < height)
            meshccl::runs::prefetch_run_starts(P + (z * ny + y0 + lane) * nx + x0, S_, Prefetch);
        meshccl::runs::tile_nodes(forest, p * PL, starts[p], lane, S_);
        rowF[p][lane] = mF;
        rowV[p][lane] = mV;
        __syncthreads();
        meshccl::runs::tile_unions<C >= 2>(forest, p * PL, starts[p], lane, S_, mE, mVl, mV,
                                           mVr);
        if (p > 0) {
            constexpr int N = meshccl::runs::ZPairs<C>::N;
            const unsigned bF = rowF[p - 1][lane], bV = rowV[p - 1][lane];
            unsigned U[N];
            int dy[N], shift[N];
            meshccl::runs::z_pairs_by<C>(mF, mE, mV, bF, bV, lane, false, eqs, U, dy, shift);
            meshccl::runs3d::plane_unions<C>(forest, starts, p, lane, S_, U, dy, shift);
        }
        __syncthreads();
        meshccl::runs::brick_store<C == 1 ? 128 : 1024, NZ>(forest, starts[p], P, A, H, F, S, mF,
                                                            S_, nz, ny, nx, aligned);
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
    meshccl::runs::brick_store<C == 1 ? 128 : 1024, NZ>(forest, starts[p], P, A, H, F, S, mF,
                                                        S_, nz, ny, nx, aligned);
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
    unsigned U[N];
    int dy[N], shift[N];
    if constexpr (sizeof(T) > 1) {
        // Wider cells: the masks by ballots, as in the tile kernel.
        const int height = (int)min((I)32, ny - y0);
        const auto bg = meshccl::runs3d::WideKey<T>::bg(bgkey);
        const T* rows = v + (z * ny + y0) * nx + x0;
        unsigned mF, mE, mV, mVl, mVr, bF, bV, bE;
        const meshccl::runs3d::WideJoin<T> join = {has_bg, bg};
        meshccl::runs3d::row_masks<false, 32>(join, rows, (I)0, nx, width, height, lane, mF, mE,
                                              mV, mVl, mVr);
        meshccl::runs3d::WideZ<C> eqs;
        eqs.k = 0;
        meshccl::runs3d::z_masks<C, true, 32>(join, rows, (I)0, ny * nx, nx, width, height, lane,
                                              0u, eqs.m, bF, bV, bE);
        meshccl::runs::z_pairs_by<C>(mF, mE, mV, bF, bV, lane, false, eqs, U, dy, shift);
        meshccl::runs3d::zface_unions<C>(P, H, z, ny, nx, y0, y, x0, lane, mF, mE, bF & ~bE, U, dy,
                                         shift);
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
    meshccl::runs3d::zface_unions<C>(P, H, z, ny, nx, y0, y, x0, lane, mF, mE, bS, U, dy, shift);
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
// Which pairs are united (tests/test_runs_emulated.py, border_pairs_3d,
// emulates the set):
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
    if constexpr (K(1) / K(2) != K(0)) return __shfl_sync(0xffffffffu, k, src);  // (float keys)
    else if constexpr (sizeof(K) == 8) return (K)__shfl_sync(0xffffffffu, (long long)k, src);
    else return (K)__shfl_sync(0xffffffffu, (int)k, src);
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
    // (floats keyed by their truncation as a float: SeamKey)
    typedef meshccl::runs3d::SeamKey<T> Key;
    typedef typename Key::K K;
    const K bg = Key::bg(bgkey);
    using meshccl::runs::node;
    using meshccl::runs::shfl;
    using meshccl::runs3d::seam_keep;
    using meshccl::runs3d::shfl_idx;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I ntx = (nx + 31) >> 5, bx = (I)blockIdx.x * NW + (warp >> 1);
    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, zb = (I)blockIdx.z * walk;
    const I ze = min(zb + walk, nz), rows = nz * ny;
    if (bx >= ntx) return;  // the whole warp
    auto fg = [&](K k) { return !(has_bg && k == bg); };
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
                mine[c] = own ? Key::of(v[(z * ny + y) * nx + x0 - 2 + c]) : K();
                past[c] = hin ? Key::of(v[(z * ny + hy) * nx + x0 - 2 + c]) : K();
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
                const K mine = own ? Key::of(v[row + x]) : K();
                K h1 = K(), h2 = K(), h3 = K();
                if (lane == 0) {
                    if (in1) h1 = Key::of(v[row + x0 - 1]);
                    if (in2) h2 = Key::of(v[row + x0 - 2]);
                } else if (lane == 31 && in3) {
                    h3 = Key::of(v[row + x0 + 32]);
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

// ---------------------------------------------------------------------------
// The lattice form of the chain: a mask, bonds or a tolerance on a volume of
// any cell type, with the plain form's bricks, run nodes, bit arrays and
// numbering (periodic axes then add wrap3d.cu).
//
// A feature changes which neighbouring pairs join, not how joined cells are
// labelled.  Two cells join when both are foreground (not the background,
// set in the mask), the bond of their pair is open (the later cell's, in
// the plane of the step: lattice.cuh, BoxFeatures) and the joining rule
// holds (equal keys, or |a - b| <= tolerance: lattice.cuh, Rule).  The
// join policy LatticeJoin answers each of those; the mask provider here
// (lattice_rows, lattice_z) asks it once per cell and pair and hands the
// answers on as row masks, so that the rest of the chain works on bits:
//
// - lattice_rows: lane c loads column c of a tile's 32 rows (value, mask
//   byte, the bytes of the in-plane bonds), and a warp ballot per row and
//   mask gives lane r row r's F (foreground), E (joined to the left
//   neighbour), V (joined to the cell above) and, at C >= 2, Vl / Vr.  A
//   run is a stretch of E: joined cells, one node.
// - lattice_z: the same for the pairs between row r of plane z and rows r
//   - 1, r, r + 1 of plane z - 1, with the z bonds: a mask per step of the
//   connectivity, every bit a joined pair.
//
// The skipping rules of the plain form take a pair as joined because two
// others are (equality is transitive), which a closed bond, a masked cell
// or a tolerance can break.  Only rules whose detour consists of joined
// pairs remain: in a plane at connectivity 1 the straight-up pair of a
// cell joined to its left neighbour, when that one's pair up exists and
// the two cells above are joined (runs.cuh, row_pairs, Rules 2); along z,
// likewise, the straight-down pair of a cell whose left neighbour is
// joined to it and straight down, when the two cells below are joined
// (lattice_unions).  Every other joined pair is united.
//
// Kernels: meshccl_runs3d_lattice_tile (the brick: each plane's runs and
// in-plane pairs, then the z pairs between its planes, in the block's
// shared forest; the planes' F and E rows in shared memory give the plane
// below's), meshccl_runs3d_lattice_zface (a brick's first plane against
// the plane below, partners in the same tile column: the same masks on a
// warp per brick, in the global forest) and meshccl_runs3d_lattice_seams
// (a thread per cell on a tile column's sides: every joined pair that
// crosses into another tile column, nodes looked up in S).  The pairs are
// split so: both cells in one brick (tile), across a brick's first plane
// inside its tile column (z face), across a tile column's side (seams),
// across a periodic face (wrap3d.cu); each pair is taken once, by its
// later cell.

namespace meshccl {
namespace runs3d {

// One-byte cells take the masks as runs2d.cu's one-byte tiles do: lane r
// loads row r (values, mask and bond bytes: two 16-byte loads each where
// the row is whole and aligned), and byte-wise word arithmetic gives 32
// cells' tests at once (runs.cuh: equal bytes, or bytes within the
// tolerance's integer part, saturated at 255); rows r - 1 and r + 1 come
// from the lanes beside by shuffles.  The masks are the ones the ballots
// below give.

// The comparison of one-byte cells: equal, or within the tolerance.
template <typename T, bool Tol>
struct ByteJoin {
    typedef runs::Equal type;
    static __device__ __forceinline__ type of(double) { return type(); }
};
template <typename T>
struct ByteJoin<T, true> {
    typedef runs::Within type;
    static __device__ __forceinline__ type of(double tol) {
        const unsigned long long t64 = int_tolerance(tol);
        const unsigned t = t64 >= 255ull ? 255u : (unsigned)t64;
        return type{0x01010101u * t, T(-1) < T(0)};
    }
};

// A row of up to 32 bytes into 8 words, as runs.cuh's load_row, with the
// byte-by-byte path unrolled (a loop to `width` put the words in local
// memory here); bool input's bytes (flag8) as 0 / 1 on both paths.
template <typename T>
__device__ __forceinline__ void load_bytes(const T* row, int width, unsigned (&w)[8]) {
    if (row != nullptr && width == 32 && ((unsigned long long)row & 15ull) == 0ull) {
        runs::load_row(row, width, w);
        return;
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) w[j] = 0u;
    if (row == nullptr) return;
#pragma unroll
    for (int c = 0; c < 32; ++c)
        if (c < width) w[c >> 2] |= (unsigned)(unsigned char)Key<T>::of(row[c]) << (8 * (c & 3));
}

// Lane r's row of a byte plane (mask or bonds; cell c at base + at + c) as
// a mask of its non-zero bytes; null: all set (no mask, no such bonds).
template <typename I>
__device__ __forceinline__ unsigned byte_bits(const unsigned char* base, I at, int width,
                                              bool in) {
    if (base == nullptr) return ~0u;
    unsigned b[8], h[8];
    load_bytes(in ? base + at : nullptr, width, b);
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = runs::nonzero_bytes(b[j]);
    return runs::pack32(h);
}

// The open bonds of lane r's row for step `step` (lattice.cuh, BoxFeatures).
template <typename I>
__device__ __forceinline__ unsigned byte_bonds(const BoxFeatures& ft, int step, I at, int width,
                                               bool in) {
    const int plane = ft.bonds == nullptr ? -1 : ft.planes[step];
    return plane < 0 ? ~0u : byte_bits(ft.bonds + (long long)plane * ft.bstride, at, width, in);
}

// lattice_rows for one-byte cells.
template <bool Diag, typename J, typename T, typename I>
__device__ __forceinline__ void byte_rows(const J& join, const T* __restrict__ v, I row0, I nx,
                                          int width, int height, int lane, unsigned& F,
                                          unsigned& E, unsigned& V, unsigned& Vl, unsigned& Vr) {
    const bool in = lane < height;
    const I at = row0 + (I)lane * nx;
    const BoxFeatures& ft = join.ft;
    const auto cmp = ByteJoin<T, J::tolerance>::of(ft.tol);
    unsigned w[8];
    load_bytes(in ? v + at : nullptr, width, w);
    F = runs::fg_mask(w, in ? width : 0, join.has_bg, (unsigned char)join.bgkey) &
        byte_bits(ft.mask, at, width, in);
    E = F & (F << 1) & runs::eq_left(w, w, cmp) & byte_bonds(ft, join.bond(0, 0, -1), at, width, in);
    runs::above_masks<Diag>(w, F, lane, V, Vl, Vr, cmp);
    V &= byte_bonds(ft, join.bond(0, -1, 0), at, width, in);
    if (Diag) {
        Vl &= byte_bonds(ft, join.bond(0, -1, -1), at, width, in);
        Vr &= byte_bonds(ft, join.bond(0, -1, 1), at, width, in);
    }
}

// lattice_z for one-byte cells.
template <int C, typename J, typename T, typename I>
__device__ __forceinline__ void byte_z(const J& join, const T* __restrict__ v, I row0, I plane,
                                       I nx, int width, int height, int lane, unsigned mF,
                                       unsigned bF, unsigned (&Z)[3][3]) {
    const bool in = lane < height;
    const I at = row0 + (I)lane * nx;
    const BoxFeatures& ft = join.ft;
    const auto cmp = ByteJoin<T, J::tolerance>::of(ft.tol);
    unsigned w[8], b0[8];
    load_bytes(in ? v + at : nullptr, width, w);
    load_bytes(in ? v + at - plane : nullptr, width, b0);
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        const int dy = k == 0 ? 0 : (k == 1 ? -1 : 1);
        Z[k][0] = Z[k][1] = Z[k][2] = 0u;
        if (C == 1 && dy != 0) continue;
        unsigned b[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) b[j] = dy == 0 ? b0[j] : runs::shfl(b0[j], 1, dy < 0);
        unsigned f = dy == 0 ? bF : runs::shfl(bF, 1, dy < 0);
        if (lane + dy < 0 || lane + dy > 31) f = 0u;  // (the shuffle gave the lane's own row)
        if (box::neighbour_step<3, C>(-1, dy, 0))
            Z[k][1] = mF & f & runs::eq_mask(w, b, cmp) &
                      byte_bonds(ft, join.bond(-1, dy, 0), at, width, in);
        if (box::neighbour_step<3, C>(-1, dy, -1))
            Z[k][0] = mF & (f << 1) & runs::eq_left(w, b, cmp) &
                      byte_bonds(ft, join.bond(-1, dy, -1), at, width, in);
        if (box::neighbour_step<3, C>(-1, dy, 1))
            Z[k][2] = mF & (f >> 1) & runs::eq_right(w, b, cmp) &
                      byte_bonds(ft, join.bond(-1, dy, 1), at, width, in);
    }
}

// The row loops of the lattice form for cells wider than a byte (row_masks
// and z_masks) are unrolled 4 rows at a time, not 32.  Fully unrolled, their tests of
// every pair (keys, mask and bond loads, up to nine ballots a row) took
// 9.5 s to compile for the float-tolerance kernels of connectivity 1 and
// 17 s for those of 3 (nvcc -arch=sm_90, user time), 1.6 s unrolled by 4;
// a first call at each connectivity and cell type pays that compilation
// (CuPy caches it on disk after).  Four rows still put four rows' loads
// in flight before their ballots, and the kernels now hold 40-72
// registers without spills: a float tolerance at 256^3 took 0.731 ms on an
// H200 against 0.829 fully unrolled and 0.814 by 8 (docs/decisions.md:
// "runs in 3-D for every cell type").

// Rows of a tile of one plane as lattice masks: lane c loads column c of
// the 32 rows (cell (r, c) at index row0 + r * nx + c; `width` columns and
// `height` rows inside the array, height 0: none), and lane r keeps row r's
// F, E, V and, with Diag, Vl / Vr (see above; every bit both cells
// foreground and the pair's bond open).  Wider cells take the plain form's
// skeleton, row_masks, with this join policy.
template <bool Diag, typename J, typename T, typename I>
__device__ __forceinline__ void lattice_rows(const J& join, const T* __restrict__ v, I row0,
                                             I nx, int width, int height, int lane,
                                             unsigned& F, unsigned& E, unsigned& V,
                                             unsigned& Vl, unsigned& Vr) {
    if constexpr (sizeof(T) == 1)
        byte_rows<Diag>(join, v, row0, nx, width, height, lane, F, E, V, Vl, Vr);
    else
        row_masks<Diag, 4>(join, v + row0, row0, nx, width, height, lane, F, E, V, Vl, Vr);
}

// The z pairs of a tile's rows as lattice masks: row r of plane z (cells
// at row0 + r * nx + c, foreground mF: lane r's) against rows r - 1, r and
// r + 1 of plane z - 1 (plane cells before, foreground bF: lane r's row
// r).  Lane r gets Z[k][e]: the cells of row r joined to the cell at x + e
// - 1 of row r + dy, dy = 0, -1, +1 for k = 0, 1, 2 (the connectivity's
// steps only; partners outside the tile are not in these masks).  Wider
// cells take the plain form's skeleton, z_masks, with this join policy.
template <int C, typename J, typename T, typename I>
__device__ __forceinline__ void lattice_z(const J& join, const T* __restrict__ v, I row0,
                                          I plane, I nx, int width, int height, int lane,
                                          unsigned mF, unsigned bF, unsigned (&Z)[3][3]) {
    if constexpr (sizeof(T) == 1) {
        byte_z<C>(join, v, row0, plane, nx, width, height, lane, mF, bF, Z);
    } else {
        unsigned bV = 0u, bE = 0u;  // (the plain form's)
        z_masks<C, false, 4>(join, v + row0, row0, plane, nx, width, height, lane, mF, Z, bF,
                             bV, bE);
    }
}

// The z pairs to unite from lattice_z's masks, in the layout of the plain
// form (runs.cuh, ZPairs: mask i unites bit b with bit b + shift[i] of row
// r + dy[i] of plane z - 1): every joined pair, except a straight-down
// pair whose detour (left, down, right again) is joined: mE the cells
// joined to their left neighbour, bE those of the row below.
template <int C>
__device__ __forceinline__ void lattice_unions(const unsigned (&Z)[3][3], unsigned mE,
                                               unsigned bE, unsigned (&U)[runs::ZPairs<C>::N],
                                               int (&dy)[runs::ZPairs<C>::N],
                                               int (&shift)[runs::ZPairs<C>::N]) {
    constexpr int N = runs::ZPairs<C>::N;
    const unsigned Z0 = Z[0][1];
    U[0] = Z0 & ~(mE & (Z0 << 1) & bE);
    dy[0] = shift[0] = 0;
#pragma unroll
    for (int k = 0; k < 3; ++k)
#pragma unroll
        for (int e = 0; e < 3; ++e) {
            const int i = 1 + 3 * k + e;
            if (i >= N) continue;
            U[i] = (k == 0 && e == 1) ? 0u : Z[k][e];
            dy[i] = k == 0 ? 0 : (k == 1 ? -1 : 1);
            shift[i] = e - 1;
        }
}

// Blocks per multiprocessor the lattice tile kernel asks for: one-byte
// cells 4 at 8 planes a brick (64 registers: at C = 3 a row's nine z masks
// are live together; none spilled) and 3 at 16 (42, as the plain kernel;
// 38 used at C = 1); wider cells 2 (128 registers at 8 planes: at 64, C =
// 3 spilled 0.8-1.5 KB of keys and masks a thread).
template <typename T, int NZ>
struct LatticeBlocks {
    enum { value = sizeof(T) == 1 ? (NZ == 8 ? 4 : 3) : 2 };
};

}  // namespace runs3d
}  // namespace meshccl

// The brick: warp p on plane bz * NZ + p, as the plain tile kernel, with
// the lattice masks.  Shared memory (dynamic): the forest and run starts
// of NZ planes, then each plane's rows' F and E (the plane below's for the
// warp above it): NZ * (32 * 33 + 3 * 32) * 4 bytes, which the host passes.
template <typename T, typename I, int C, bool Tol, int NZ>
__global__ void __launch_bounds__(32 * NZ, meshccl::runs3d::LatticeBlocks<T, NZ>::value)
meshccl_runs3d_lattice_tile(const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
                            unsigned* __restrict__ H, unsigned* __restrict__ F,
                            unsigned* __restrict__ S, I nz, I ny, I nx, int has_bg,
                            typename meshccl::Rule<T, Tol>::K bgkey, int aligned,
                            MESHCCL_BOX_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::LatticeJoin<T, Tol, meshccl::BoxFeatures> join = {
        has_bg, bgkey, MESHCCL_BOX_FEATURES_VALUE};
    constexpr int PL = 32 * meshccl::runs::ROW_NODES, N = meshccl::runs::ZPairs<C>::N;
    extern __shared__ int shared_words[];
    int* forest = shared_words;
    unsigned(*starts)[32] = reinterpret_cast<unsigned(*)[32]>(shared_words + NZ * PL);
    unsigned(*rowF)[32] = starts + NZ;
    unsigned(*rowE)[32] = starts + 2 * NZ;
    const int lane = threadIdx.x & 31, p = threadIdx.x >> 5;
    const I x0 = (I)blockIdx.x * 32, y0 = (I)blockIdx.y * 32, z = (I)blockIdx.z * NZ + p;
    const int width = (int)min((I)32, nx - x0);
    const int height = z < nz ? (int)min((I)32, ny - y0) : 0;  // (0: past the volume)
    const I row0 = (min(z, nz - 1) * ny + y0) * nx + x0;
    unsigned mF, mE, mV, mVl, mVr, Z[3][3];
    // Wider cells: the plane's masks and its z masks against plane p - 1 in
    // one pass (row_masks), the partners' foreground ANDed in after the
    // barrier, from plane p - 1's warp (below_fg).
    if constexpr (sizeof(T) == 1)
        meshccl::runs3d::byte_rows<C >= 2>(join, v, row0, nx, width, height, lane, mF, mE, mV,
                                           mVl, mVr);
    else
        meshccl::runs3d::row_masks<C >= 2, 4, true, C>(join, v + row0, row0, nx, width, height,
                                                        lane, mF, mE, mV, mVl, mVr, ny * nx,
                                                        p > 0 ? height : 0, Z);
    const unsigned S_ = mF & ~mE;
    meshccl::runs::tile_nodes(forest, p * PL, starts[p], lane, S_);
    rowF[p][lane] = mF;
    rowE[p][lane] = mE;
    __syncthreads();
    // (at C = 1 the rule on a plane's own straight pairs, every pair at C >= 2)
    meshccl::runs::tile_unions<C >= 2, meshccl::runs::ROW_NODES, C >= 2 ? 0 : 2>(
        forest, p * PL, starts[p], lane, S_, mE, mVl, mV, mVr);
    if (p > 0) {
        unsigned U[N];
        int dy[N], shift[N];
        if constexpr (sizeof(T) == 1)
            meshccl::runs3d::byte_z<C>(join, v, row0, ny * nx, nx, width, height, lane, mF,
                                       rowF[p - 1][lane], Z);
        else
            meshccl::runs3d::below_fg(Z, rowF[p - 1][lane], lane > 0 ? rowF[p - 1][lane - 1] : 0u,
                                      lane < 31 ? rowF[p - 1][lane + 1] : 0u);
        meshccl::runs3d::lattice_unions<C>(Z, mE, rowE[p - 1][lane], U, dy, shift);
        meshccl::runs3d::plane_unions<C>(forest, starts, p, lane, S_, U, dy, shift);
    }
    __syncthreads();
    meshccl::runs::brick_store<C == 1 ? 128 : 1024, NZ>(forest, starts[p], P, A, H, F, S, mF,
                                                        S_, nz, ny, nx, aligned);
}

// A brick's first plane z against plane z - 1 (the last of the brick
// below), partners in the same tile column: warp k of a block the brick bx
// = blockIdx.x * NW + k, by = blockIdx.y, bz = blockIdx.z + 1.  The masks
// of both planes and of the pairs between them as in the tile kernel, the
// unions on run starts in the global forest (each hooked root marked in H).
template <typename T, typename I, int C, bool Tol, int NZ, int NW>
__global__ void __launch_bounds__(32 * NW) meshccl_runs3d_lattice_zface(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, I nz, I ny, I nx, int has_bg,
        typename meshccl::Rule<T, Tol>::K bgkey, MESHCCL_BOX_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::LatticeJoin<T, Tol, meshccl::BoxFeatures> join = {
        has_bg, bgkey, MESHCCL_BOX_FEATURES_VALUE};
    constexpr int N = meshccl::runs::ZPairs<C>::N;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I ntx = (nx + 31) >> 5, bx = (I)blockIdx.x * NW + warp;
    if (bx >= ntx) return;  // the whole warp
    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32, z = ((I)blockIdx.z + 1) * NZ;
    const int width = (int)min((I)32, nx - x0), height = (int)min((I)32, ny - y0);
    const I plane = ny * nx, row0 = (z * ny + y0) * nx + x0;
    unsigned mF, mE, bF, bE, u0, u1, u2;
    meshccl::runs3d::lattice_rows<false>(join, v, row0, nx, width, height, lane, mF, mE, u0, u1,
                                         u2);
    meshccl::runs3d::lattice_rows<false>(join, v, row0 - plane, nx, width, height, lane, bF, bE,
                                         u0, u1, u2);
    unsigned Z[3][3], U[N];
    int dy[N], shift[N];
    meshccl::runs3d::lattice_z<C>(join, v, row0, plane, nx, width, height, lane, mF, bF, Z);
    meshccl::runs3d::lattice_unions<C>(Z, mE, bE, U, dy, shift);
    meshccl::runs3d::zface_unions<C>(P, H, z, ny, nx, y0, y0 + lane, x0, lane, mF, mE, bF & ~bE,
                                     U, dy, shift);
}

// The pairs that cross a tile column's sides: a thread per cell on them
// (at C = 1 the first row and the first column, whose left and up pairs
// cross; at C >= 2 also the last row and the last column, whose steps to
// y + 1 and x + 1 in the plane below, and up-right, cross), walking `walk`
// planes from blockIdx.z * walk.  Each cell unites every joined pair of
// its half neighbourhood (and the left one) whose partner is in another
// tile column and inside the volume, on the run starts of both (S).
template <typename T, typename I, int C, bool Tol>
__global__ void __launch_bounds__(128) meshccl_runs3d_lattice_seams(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I nz, I ny, I nx, int has_bg, typename meshccl::Rule<T, Tol>::K bgkey, I walk,
        MESHCCL_BOX_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    typedef meshccl::LatticeJoin<T, Tol, meshccl::BoxFeatures> J;
    typedef typename J::K K;
    const J join = {has_bg, bgkey, MESHCCL_BOX_FEATURES_VALUE};
    const int t = threadIdx.x;
    int lx, ly;
    if (C == 1) {  // row 0, then column 0 below it
        if (t >= 63) return;
        lx = t < 32 ? t : 0;
        ly = t < 32 ? 0 : t - 31;
    } else {  // rows 0 and 31, then columns 0 and 31 between them
        if (t >= 124) return;
        if (t < 64) {
            lx = t & 31;
            ly = t < 32 ? 0 : 31;
        } else {
            lx = t < 94 ? 0 : 31;
            ly = 1 + (t - 64) % 30;
        }
    }
    const I x = (I)blockIdx.x * 32 + lx, y = (I)blockIdx.y * 32 + ly;
    if (x >= nx || y >= ny) return;
    const I zb = (I)blockIdx.z * walk, ze = min(zb + walk, nz), rows = nz * ny;
    for (I z = zb; z < ze; ++z) {
        const I i = (z * ny + y) * nx + x;
        const K k = J::key(v[i]);
        if (join.bg(k) || !join.on(i)) continue;
        unsigned todo = 0u;  // bits step_index(dz, dy, dx)
        MESHCCL_EACH_EARLIER_STEP(C, dz, dy, dx) {
            if (lx + dx >= 0 && lx + dx <= 31 && ly + dy >= 0 && ly + dy <= 31)
                continue;  // the same tile column: the tile or z-face kernel's
            if (z + dz < 0 || y + dy < 0 || y + dy >= ny || x + dx < 0 || x + dx >= nx)
                continue;  // (across a periodic face: wrap3d.cu's)
            const I j = i + ((I)dz * ny + dy) * nx + dx;
            if (join.joined(J::key(v[j]), j, k, join.bond(dz, dy, dx), i))
                todo |= meshccl::box::step_bit(dz, dy, dx);
        }
        if (!todo) continue;
        const I a = meshccl::runs::node(S, z * ny + y, x, rows, nx);
        for (; todo; todo &= todo - 1u) {  // one call site
            const int s = __ffs(todo) - 1;
            const int dz = s / 9 - 1, dy = (s / 3) % 3 - 1, dx = s % 3 - 1;
            meshccl::unite_recording(P, H, a,
                                     meshccl::runs::node(S, (z + dz) * ny + y + dy, x + dx, rows,
                                                         nx));
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
MESHCCL_R3_16(meshccl::flag8, int)
MESHCCL_R3_16(meshccl::flag8, long long)
MESHCCL_R3_16(signed char, int)
MESHCCL_R3_16(signed char, long long)
#define MESHCCL_R3_WIDE(T) MESHCCL_R3(T, int) MESHCCL_R3(T, long long) MESHCCL_R3_16(T, int) \
    MESHCCL_R3_16(T, long long)
MESHCCL_R3_WIDE(unsigned short)
MESHCCL_R3_WIDE(unsigned int)
MESHCCL_R3_WIDE(unsigned long long)
MESHCCL_R3_WIDE(float)
MESHCCL_R3_WIDE(double)
#define MESHCCL_R3_LAT(T, I, C, Tol, NZ)                                                     \
    template __global__ void meshccl_runs3d_lattice_tile<T, I, C, Tol, NZ>(const T*, I*,      \
        unsigned*, unsigned*, unsigned*, unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K,    \
        int, MESHCCL_BOX_FEATURE_TYPES);                                                       \
    template __global__ void meshccl_runs3d_lattice_zface<T, I, C, Tol, NZ, 1>(const T*, I*,  \
        unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K, MESHCCL_BOX_FEATURE_TYPES);         \
    template __global__ void meshccl_runs3d_lattice_seams<T, I, C, Tol>(const T*, I*,         \
        unsigned*, const unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K, I,                 \
        MESHCCL_BOX_FEATURE_TYPES);
// (the brick depths of _tuning.RUNS_3D_PLANES: 16 at C = 1, 8 at 2 and 3)
#define MESHCCL_R3_LAT_I(T, I, Tol)                                                           \
    MESHCCL_R3_LAT(T, I, 1, Tol, 16) MESHCCL_R3_LAT(T, I, 2, Tol, 8)                           \
    MESHCCL_R3_LAT(T, I, 3, Tol, 8)
#define MESHCCL_R3_LAT_T(T, Tol) MESHCCL_R3_LAT_I(T, int, Tol) MESHCCL_R3_LAT_I(T, long long, Tol)
// The lattice form: integers unsigned, bool bytes (meshccl::flag8) and
// floats without a tolerance (as _validate.py gives them), every cell type
// with one (signed stays signed).
MESHCCL_R3_LAT_T(unsigned char, false)
MESHCCL_R3_LAT_T(meshccl::flag8, false)
MESHCCL_R3_LAT_T(unsigned short, false)
MESHCCL_R3_LAT_T(unsigned int, false)
MESHCCL_R3_LAT_T(unsigned long long, false)
MESHCCL_R3_LAT_T(float, false)
MESHCCL_R3_LAT_T(double, false)
MESHCCL_R3_LAT_T(unsigned char, true)
MESHCCL_R3_LAT_T(meshccl::flag8, true)
MESHCCL_R3_LAT_T(unsigned short, true)
MESHCCL_R3_LAT_T(unsigned int, true)
MESHCCL_R3_LAT_T(unsigned long long, true)
MESHCCL_R3_LAT_T(signed char, true)
MESHCCL_R3_LAT_T(short, true)
MESHCCL_R3_LAT_T(int, true)
MESHCCL_R3_LAT_T(long long, true)
MESHCCL_R3_LAT_T(float, true)
MESHCCL_R3_LAT_T(double, true)
#endif
