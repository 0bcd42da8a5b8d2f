// runs.cuh -- what the run-based tile kernels (runs2d.cu, runs3d.cu) share.
//
// Those kernels give a warp a tile of 32 x 32 cells of one plane, and lane r
// of the warp row r of the tile as 32-bit masks: bit b of a mask says
// something about cell b of the row (it is foreground, it equals its left
// neighbour, it equals the cell above...).  A run is a maximal stretch of
// equal cells along a row inside the tile; its first cell is its node in
// the union-find forest.  This header holds the mask arithmetic:
//
// - one-byte cells four to a 32-bit word, compared with byte-wise word
//   arithmetic (zero_bytes, nonzero_bytes) and packed into masks (pack32);
// - the equality masks of a row against another row (eq_mask and its two
//   diagonal forms);
// - the rules that pick which pairs between a row and an earlier row must
//   be united (row_pairs: mesh23.cu's covered / twin / same-run rules on 32
//   cells at once) and the loop that unites them (unite_all);
// - start_of and node, which find a cell's run start in a mask or in the
//   global bit array S;
// - a warp's work on its tile once the masks are made: the run nodes
//   (tile_nodes), the unions inside the tile (tile_unions) and the piece
//   roots stored in P (store_piece_roots).

#pragma once

#include "unionfind.cuh"

namespace meshccl {
namespace runs {

template <typename K>
__device__ __forceinline__ K shfl(K k, int delta, bool up) {
    if (sizeof(K) == 8) {
        const long long x = (long long)k;
        return (K)(up ? __shfl_up_sync(0xffffffffu, x, delta)
                      : __shfl_down_sync(0xffffffffu, x, delta));
    }
    const int x = (int)k;
    return (K)(up ? __shfl_up_sync(0xffffffffu, x, delta) : __shfl_down_sync(0xffffffffu, x, delta));
}

// Byte-wise tests on 4 one-byte cells in a word: bit 7 of each byte set
// where the byte is zero / not zero (exact: the sums never carry into the
// next byte).
__device__ __forceinline__ unsigned zero_bytes(unsigned v) {
    return ~(((v & 0x7f7f7f7fu) + 0x7f7f7f7fu) | v) & 0x80808080u;
}
__device__ __forceinline__ unsigned nonzero_bytes(unsigned v) {
    return (((v & 0x7f7f7f7fu) + 0x7f7f7f7fu) | v) & 0x80808080u;
}
// ... and those four bits (bit 7 of bytes 0..3) packed into bits 0..3: the
// product places byte k's bit at 24 + k, and no two partial products meet.
__device__ __forceinline__ unsigned pack4(unsigned hi) {
    return ((hi >> 7) * 0x01020408u) >> 24;
}
// 8 words of byte tests -> one 32-bit mask, cell c at bit c.
__device__ __forceinline__ unsigned pack32(const unsigned (&h)[8]) {
    unsigned m = 0u;
#pragma unroll
    for (int j = 0; j < 8; ++j) m |= pack4(h[j]) << (4 * j);
    return m;
}

// Rows of 32 one-byte cells as 8 words (cell c: byte c & 3 of word c >> 2).
// Bit c of eq_mask: a's cell c equals b's cell c; of eq_left: a's cell c
// equals b's cell c - 1 (0 at c = 0); of eq_right: ... b's cell c + 1 (0 at
// c = 31, which has no cell to its right here).
__device__ __forceinline__ unsigned eq_mask(const unsigned (&a)[8], const unsigned (&b)[8]) {
    unsigned h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = zero_bytes(a[j] ^ b[j]);
    return pack32(h);
}
__device__ __forceinline__ unsigned eq_left(const unsigned (&a)[8], const unsigned (&b)[8]) {
    unsigned h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = zero_bytes(a[j] ^ ((b[j] << 8) | (j ? b[j - 1] >> 24 : 0u)));
    return pack32(h) & ~1u;
}
__device__ __forceinline__ unsigned eq_right(const unsigned (&a)[8], const unsigned (&b)[8]) {
    unsigned h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
        h[j] = zero_bytes(a[j] ^ ((b[j] >> 8) | (j < 7 ? b[j + 1] << 24 : 0u)));
    return pack32(h) & 0x7fffffffu;
}

// Row of up to 32 one-byte cells at `row` (null: outside the array, all 0)
// into 8 words: two 16-byte loads where the row is whole and 16-byte
// aligned, else byte by byte.
template <typename T>
__device__ __forceinline__ void load_row(const T* row, int width, unsigned (&w)[8]) {
#pragma unroll
    for (int j = 0; j < 8; ++j) w[j] = 0u;
    if (row == nullptr) return;
    if (width == 32 && ((unsigned long long)row & 15ull) == 0ull) {
        const uint4 a = reinterpret_cast<const uint4*>(row)[0];
        const uint4 b = reinterpret_cast<const uint4*>(row)[1];
        w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
        w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
    } else {
        for (int c = 0; c < width; ++c)
            w[c >> 2] |= (unsigned)(unsigned char)row[c] << (8 * (c & 3));
    }
}

// The foreground mask of such a row: its first `width` cells (0 to 32)
// that are not the background byte bg (all of them without a background).
__device__ __forceinline__ unsigned fg_mask(const unsigned (&w)[8], int width, int has_bg,
                                            unsigned char bg) {
    const unsigned in = width >= 32 ? 0xffffffffu : (1u << width) - 1u;
    if (!has_bg) return in;
    const unsigned bg4 = 0x01010101u * (unsigned)bg;
    unsigned h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = nonzero_bytes(w[j] ^ bg4);
    return in & pack32(h);
}

// The run start at or left of bit b in the run-start mask s (s has one).
__device__ __forceinline__ int start_of(unsigned s, int b) {
    return 31 - __clz(s & (b == 31 ? 0xffffffffu : ((2u << b) - 1u)));
}

// The node (run start, a global index) of the foreground cell in row y
// (counting rows over all planes: z * ny + y in 3-D) and column x of an
// array with `rows` rows of nx cells; S is word bx * rows + y.
template <typename I>
__device__ __forceinline__ I node(const unsigned* __restrict__ S, I y, I x, I rows, I nx) {
    const I bx = x >> 5;
    return y * nx + (x & ~(I)31) + start_of(__ldg(S + bx * rows + y), (int)(x & 31));
}

// The pairs between a row and an earlier row (the row above, or a row of the
// plane before) that must be united, given which cells of the row equal
// their neighbour up-left (Vl), straight up (V) and up-right (Vr) in that
// row, and which equal their left neighbour (E).  mesh23.cu's rules on
// whole rows.  Without diagonals (Diag false, Vl = Vr = 0): straight up,
// unless the left cell is equal and its own pair up exists (twin).  With
// them: up-left unless up is a pair (same run) or the left cell is equal
// (covered); up unless up-right is a pair or covered; up-right unless the
// left cell is equal and up is a pair (twin).
template <bool Diag>
__device__ __forceinline__ void row_pairs(unsigned E, unsigned Vl, unsigned V, unsigned Vr,
                                          unsigned& Ul, unsigned& U0, unsigned& Ur) {
    if (!Diag) {
        Ul = Ur = 0u;
        U0 = V & ~(E & (V << 1));
    } else {
        Ul = Vl & ~V & ~E;
        U0 = V & ~Vr & ~E;
        Ur = Vr & ~(E & V);
    }
}

// Unite, in the shared forest L, the run through bit b of a row (run starts
// s, nodes me + start) with the run through bit b + shift[i] of an earlier
// row (run starts st[i], nodes tgt[i] + start), for every bit b of U[i] and
// every i, one union per turn of a single loop: a warp then takes as many
// turns as its busiest lane has unions in all, where a loop per mask took
// the sum over the masks of each one's busiest lane.
template <int N>
__device__ __forceinline__ void unite_all(int* L, int me, unsigned s, unsigned (&U)[N],
                                          const int (&tgt)[N], const unsigned (&st)[N],
                                          const int (&shift)[N]) {
    for (;;) {
        int b = -1, partner = 0;
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (b < 0 && U[i]) {
                b = __ffs(U[i]) - 1;
                U[i] &= U[i] - 1u;
                partner = tgt[i] + start_of(st[i], b + shift[i]);
            }
        if (b < 0) break;
        meshccl::unite<true>(L, me + start_of(s, b), partner);
    }
}

// The work of a warp on its tile once its rows' masks are made (lane r: row
// r; mE, mVl, mV, mVr against the row above, all 0 in row 0): the runs'
// nodes in the shared forest L (node base + r * 33 + b: the run starting
// at bit b of row r, so the smallest node of a tile is still its first
// cell), and the unions inside the tile.  starts[32]: the tile's rows' run
// starts, written here.  33, not 32 nodes per row: lane r's nodes then
// start in bank r, and lanes touching the same bit of their rows do not
// all queue on one bank.
constexpr int ROW_NODES = 33;

__device__ __forceinline__ void tile_nodes(int* L, int base, unsigned* starts, int lane,
                                           unsigned S_) {
    const int me = base + lane * ROW_NODES;
    for (unsigned m = S_; m; m &= m - 1u) {
        const int b = __ffs(m) - 1;
        L[me + b] = me + b;
    }
    starts[lane] = S_;
}

// The unions inside the tile (after tile_nodes, and after a __syncwarp or
// __syncthreads that makes every row's nodes and starts visible).  The
// straight-up pairs are united with the top of their vertical stretch, not
// with the row above: t(r, b) is the first row of the column of equal cells
// (V bits) through (r, b).  A column of 32 one-cell runs then makes a star,
// not a chain of 32 that every find walks.  (Any cell is joined to its
// stretch's top: by induction in raster order, a pair the rules skip goes
// round through an earlier cell's pair and a run, as before.)  t as five
// bit planes, by a segmented scan over lanes: D marks the columns whose
// stretch starts in the lanes seen so far.
template <bool Diag>
__device__ __forceinline__ void tile_unions(int* L, int base, const unsigned* starts, int lane,
                                            unsigned S_, unsigned mE, unsigned mVl, unsigned mV,
                                            unsigned mVr) {
    unsigned D = ~mV, tops[5];
#pragma unroll
    for (int k = 0; k < 5; ++k) tops[k] = ((lane >> k) & 1) ? D : 0u;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned Du = __shfl_up_sync(0xffffffffu, D, d);
#pragma unroll
        for (int k = 0; k < 5; ++k) {
            const unsigned Tu = __shfl_up_sync(0xffffffffu, tops[k], d);
            if (lane >= d) tops[k] |= Tu & ~D;
        }
        if (lane >= d) D |= Du;
    }
    const unsigned Sup = __shfl_up_sync(0xffffffffu, S_, 1);
    const int me = base + lane * ROW_NODES, up = me - ROW_NODES;
    unsigned Ul, U0, Ur;
    row_pairs<Diag>(mE, mVl, mV, mVr, Ul, U0, Ur);
    // One loop for all three masks (see unite_all)
    for (;;) {
        int b, partner;
        if (U0) {
            b = __ffs(U0) - 1;
            U0 &= U0 - 1u;
            int t = 0;
#pragma unroll
            for (int k = 0; k < 5; ++k) t |= ((tops[k] >> b) & 1) << k;
            partner = base + t * ROW_NODES + start_of(starts[t], b);
        } else if (Ul) {
            b = __ffs(Ul) - 1;
            Ul &= Ul - 1u;
            partner = up + start_of(Sup, b - 1);
        } else if (Ur) {
            b = __ffs(Ur) - 1;
            Ur &= Ur - 1u;
            partner = up + start_of(Sup, b + 1);
        } else {
            break;
        }
        meshccl::unite<true>(L, me + start_of(S_, b), partner);
    }
}

// After all unions: each run start of the tile (rows of run starts
// `starts`, nodes from `base`) stores its piece root, as a global index, in
// P, a row at a time: lane b takes column b, so that a store instruction
// stays in one row.  (Lane r walking its own row's run starts put 32 rows,
// 32 partly written sectors, in every store instruction: the 2-D tile
// kernel took twice as long on images with many runs, benchmarks/NOTES.md.)
// The forest's nodes count from 0 at the block's first tile: node p *
// plane + r * 33 + b is cell origin + p * pstride + r * nx + b.  Returns, in lane r, row r's piece roots (the run starts that are
// roots of the forest).
template <typename I>
__device__ __forceinline__ unsigned store_piece_roots(int* L, int base, const unsigned* starts,
                                                      int lane, int nrows, I* P, I tile0, I nx,
                                                      I origin, int plane, I pstride) {
    unsigned roots = 0u;
    for (int r = 0; r < 32 && r < nrows; ++r) {
        const int node = base + r * ROW_NODES + lane;
        bool root = false;
        if ((starts[r] >> lane) & 1u) {
            const int rt = meshccl::find<true>(L, node);  // halving: shared walks shorten
            root = rt == node;
            const int p = rt / plane, q = rt - p * plane, ry = q / ROW_NODES;
            P[tile0 + (I)r * nx + lane] = origin + (I)p * pstride + (I)ry * nx + (q - ry * ROW_NODES);
        }
        const unsigned m = __ballot_sync(0xffffffffu, root);
        if (lane == r) roots = m;  // row r's piece roots, for lane r
    }
    return roots;
}

}  // namespace runs
}  // namespace meshccl
