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
//   be united (row_pairs: the covered / twin / same-run rules on 32
//   cells at once; z_pairs: runs3d.cu's pairs with the plane before) and
//   the loop that unites them (unite_each, unite_all in shared memory);
// - start_of and node, which find a cell's run start in a mask or in the
//   global bit array S;
// - bands of two rows (runs2d.cu's binary tiles at connectivity 2): the
//   nodes of a band's column runs and how to find them (band_top,
//   band_bottom, band_firsts, band_node);
// - a warp's work on its tile once the masks are made: the run nodes
//   (tile_nodes), the unions inside the tile (tile_unions) and the piece
//   roots stored in P (store_piece_roots).

#pragma once

#include "lattice.cuh"
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

// (floats and doubles move as such: the template's integer path would truncate them)
__device__ __forceinline__ double shfl(double k, int delta, bool up) {
    return up ? __shfl_up_sync(0xffffffffu, k, delta) : __shfl_down_sync(0xffffffffu, k, delta);
}
__device__ __forceinline__ float shfl(float k, int delta, bool up) {
    return up ? __shfl_up_sync(0xffffffffu, k, delta) : __shfl_down_sync(0xffffffffu, k, delta);
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

// Which cells of two words of 4 one-byte cells join (bit 7 of each byte):
// equal bytes (Equal), or bytes within a tolerance (Within: |a - b| <= t
// byte by byte, t the tolerance's integer part up to 255, signed or
// unsigned bytes).
struct Equal {
    __device__ __forceinline__ unsigned operator()(unsigned a, unsigned b) const {
        return zero_bytes(a ^ b);
    }
};
struct Within {
    unsigned t4;  // t in every byte
    bool sign;
    __device__ __forceinline__ unsigned operator()(unsigned a, unsigned b) const {
        const unsigned d = sign ? __vabsdiffs4(a, b) : __vabsdiffu4(a, b);
        return __vcmpleu4(d, t4) & 0x80808080u;
    }
};

// Rows of 32 one-byte cells as 8 words (cell c: byte c & 3 of word c >> 2).
// Bit c of eq_mask: a's cell c equals (joins) b's cell c; of eq_left: a's
// cell c equals b's cell c - 1 (0 at c = 0); of eq_right: ... b's cell c + 1
// (0 at c = 31, which has no cell to its right here).
template <typename Cmp = Equal>
__device__ __forceinline__ unsigned eq_mask(const unsigned (&a)[8], const unsigned (&b)[8],
                                            Cmp eq = Cmp()) {
    unsigned h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = eq(a[j], b[j]);
    return pack32(h);
}
template <typename Cmp = Equal>
__device__ __forceinline__ unsigned eq_left(const unsigned (&a)[8], const unsigned (&b)[8],
                                            Cmp eq = Cmp()) {
    unsigned h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = eq(a[j], (b[j] << 8) | (j ? b[j - 1] >> 24 : 0u));
    return pack32(h) & ~1u;
}
template <typename Cmp = Equal>
__device__ __forceinline__ unsigned eq_right(const unsigned (&a)[8], const unsigned (&b)[8],
                                             Cmp eq = Cmp()) {
    unsigned h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = eq(a[j], (b[j] >> 8) | (j < 7 ? b[j + 1] << 24 : 0u));
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

// ... and a row of bool input's bytes (lattice.cuh, flag8) as 0 / 1 bytes:
// bit 7 of each non-zero byte moved to bit 0.
__device__ __forceinline__ void load_row(const flag8* row, int width, unsigned (&w)[8]) {
    load_row(reinterpret_cast<const unsigned char*>(row), width, w);
#pragma unroll
    for (int j = 0; j < 8; ++j) w[j] = nonzero_bytes(w[j]) >> 7;
}

// Is every cell of such a row 0 or 1?  With background 0 and every row a
// warp's masks come from so, all foreground cells are equal to each other,
// and the equality masks are the foreground masks (shifted): runs3d.cu's
// z masks at C >= 2 and its z-face kernel then skip the byte-wise compares
// ("binary" in z_pairs; a binary image's warps are all so, a Potts
// field's none).  (The in-plane masks do without the shortcut:
// docs/decisions.md, "runs as nodes".)
__device__ __forceinline__ bool binary_row(const unsigned (&w)[8]) {
    unsigned o = 0u;
#pragma unroll
    for (int j = 0; j < 8; ++j) o |= w[j];
    return (o & 0xfefefefeu) == 0u;
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

// Lane r's row of one-byte cells (words w, foreground mF) against row r - 1,
// which lane r - 1 holds (nothing in lane 0): the cells equal to the one
// straight up (V) and, with Diag, up-left (Vl) and up-right (Vr), all
// foreground at both ends.  runs2d.cu's tile kernel and runs3d.cu's z-face
// kernel make their masks so (runs3d.cu's tile kernel writes the same out:
// it measured faster so).
template <bool Diag, typename Cmp = Equal>
__device__ __forceinline__ void above_masks(const unsigned (&w)[8], unsigned mF, int lane,
                                            unsigned& V, unsigned& Vl, unsigned& Vr,
                                            Cmp eq = Cmp()) {
    unsigned u[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) u[j] = __shfl_up_sync(0xffffffffu, w[j], 1);
    unsigned pF = __shfl_up_sync(0xffffffffu, mF, 1);
    if (lane == 0) pF = 0u;
    V = mF & pF & eq_mask(w, u, eq);
    Vl = Vr = 0u;
    if (Diag) {
        Vl = mF & (pF << 1) & eq_left(w, u, eq);
        Vr = mF & (pF >> 1) & eq_right(w, u, eq);
    }
}

// Prefetch into L2 the 32-byte sectors of a row of P (its first cell `row`)
// that the row's run starts (mask s) will have their piece roots stored in,
// long before those 4-byte stores: a store into a sector L2 does not hold
// measured slower than a load and a store (docs/decisions.md:
// "prefetch of piece-root sectors").  Mode 1: a prefetch per sector that holds
// a run start; mode 2: one for the row's first cell (its 128-byte line)
// when the row has any, fewer instructions, and faster wherever measured.
template <typename I>
__device__ __forceinline__ void prefetch_run_starts(const I* row, unsigned s, int mode) {
    if (mode == 2) {
        if (s) asm volatile("prefetch.global.L2 [%0];" ::"l"(row));
        return;
    }
    constexpr int CPS = 32 / (int)sizeof(I);  // cells per sector
#pragma unroll
    for (int q = 0; q < 32; q += CPS)
        if ((s >> q) & ((1u << CPS) - 1u)) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + q));
}

// Store a piece root's own P with an L2 evict-last policy, so that its line
// stays in L2 while the kernels after the tile kernel read it: the border
// kernel's unions, the roots phase, label_pieces (which writes its label
// there) and the label pass (which reads it for every run of the piece).
// Only the slotted 2-D tiles use it (few run starts, so few piece roots):
// for every tile, images of many small pieces would have more piece roots'
// lines than L2 holds (docs/decisions.md: "slots for few-run tiles").  Before sm_80, a plain
// store.
template <typename I>
__device__ __forceinline__ void store_kept(I* p, I v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (sizeof(I) == 4)
        asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                     "st.global.L2::cache_hint.b32 [%0], %1, pol;\n\t}" ::"l"(p), "r"((int)v) : "memory");
    else
        asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                     "st.global.L2::cache_hint.b64 [%0], %1, pol;\n\t}" ::"l"(p), "l"((long long)v)
                     : "memory");
#else
    *p = v;
#endif
}

// The run start at or left of bit b in the run-start mask s (s has one).
__device__ __forceinline__ int start_of(unsigned s, int b) {
    return 31 - __clz(s & (b == 31 ? 0xffffffffu : ((2u << b) - 1u)));
}

// Bands (runs2d.cu, binary images at connectivity 2).  Two rows of a tile
// taken together, rows 2k and 2k + 1, are a band; at connectivity 2 any
// foreground cell of a band touches every foreground cell of the band in
// its own column and the columns beside it, so a band's components are the
// runs of its columns that hold any foreground cell (B = top | bottom).
// Each such band run is one node, placed at the run's first cell in raster
// order: its first top-row cell if it has one, else its first cell, which
// is then a bottom-row cell at the run's start.  The node cells of the top
// row are band_top(top, bottom); those of the bottom row band_bottom(...).
__device__ __forceinline__ unsigned band_starts(unsigned top, unsigned bottom) {
    const unsigned B = top | bottom;
    return B & ~(B << 1);
}
// Adding a run's start bit to its cells without a top cell carries up to
// the run's first top cell and stops there (its bit of B & ~top is 0).
__device__ __forceinline__ unsigned band_top(unsigned top, unsigned bottom) {
    const unsigned B = top | bottom;
    return ((B & ~top) + band_starts(top, bottom)) & top;
}
// The same carry, run from each run's last cell downwards (bits reversed),
// clears the run's start only where no top cell stops it: those runs'
// nodes are their starts, in the bottom row.
__device__ __forceinline__ unsigned band_bottom(unsigned top, unsigned bottom) {
    const unsigned B = top | bottom, ends = B & ~(B >> 1);
    return band_starts(top, bottom) & ~top & ~__brev(__brev(B & ~top) + __brev(ends));
}
// The node of the band run through column x (0..31, a foreground column of
// the band): its column, and in dy 0 (top row) or 1 (bottom row).  ntop:
// the band's top-row nodes (band_top), bs: its run starts (band_starts).
// A band of one row (an image's last row when it has an odd number) has
// bs == ntop, and its nodes are its run starts.  (For a foreground cell of
// the top row the answer is simpler: the last node of ntop at or before it,
// as for row runs, since a band run's first top cell is its node.)
__device__ __forceinline__ int band_node(unsigned ntop, unsigned bs, int x, int& dy) {
    const int s = 31 - __clz(bs & (x == 31 ? 0xffffffffu : ((2u << x) - 1u)));
    const unsigned later = bs & ~(s == 31 ? 0xffffffffu : ((2u << s) - 1u));
    unsigned t = ntop & ~((1u << s) - 1u);
    if (later) t &= (later & (0u - later)) - 1u;  // before the next run's start
    dy = t ? 0 : 1;
    return t ? __ffs(t) - 1 : s;
}
// The first bottom-row cell of each band run that has one: a bottom-row
// cell's band run is the one of the last of these at or before it.
__device__ __forceinline__ unsigned band_firsts(unsigned top, unsigned bottom) {
    const unsigned B = top | bottom;
    return ((B & ~bottom) + band_starts(top, bottom)) & bottom;
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
// row, and which equal their left neighbour (E): the skipping rules of a
// cell-per-thread labeller (a pair is skipped where two others of an
// earlier cell, or an earlier pair of the same cell, join it), on whole rows.  Without diagonals (Diag false, Vl = Vr = 0): straight up,
// unless the left cell is equal and its own pair up exists (twin).  With
// them: up-left unless up is a pair (same run) or the left cell is equal
// (covered); up unless up-right is a pair or covered; up-right unless the
// left cell is equal and up is a pair (twin).
//
// Rules 1 (those) rely on equality being transitive (a cell equal to two
// others makes them equal).  Where it is not (a tolerance) or where a pair
// of equal cells may still be cut (closed bonds, masked cells) the masks
// say which pairs join, and: Rules 2 (no diagonals), straight up unless the
// left cell joins it, its own pair up exists and the two cells above join
// (Eup: the row above's E) -- the skipped pair then goes round through
// three joined pairs, the left one's own by induction along the row;
// Rules 0, every pair.
template <bool Diag, int Rules = 1>
__device__ __forceinline__ void row_pairs(unsigned E, unsigned Vl, unsigned V, unsigned Vr,
                                          unsigned& Ul, unsigned& U0, unsigned& Ur,
                                          unsigned Eup = 0u) {
    if (Rules == 0) {
        Ul = Diag ? Vl : 0u;
        U0 = V;
        Ur = Diag ? Vr : 0u;
    } else if (Rules == 2) {
        Ul = Ur = 0u;
        U0 = V & ~(E & (V << 1) & Eup);
    } else if (!Diag) {
        Ul = Ur = 0u;
        U0 = V & ~(E & (V << 1));
    } else {
        Ul = Vl & ~V & ~E;
        U0 = V & ~Vr & ~E;
        Ur = Vr & ~(E & V);
    }
}

// Unite the run through bit b of a row (run starts s, nodes me + start)
// with the run through bit b + shift[i] of an earlier row (run starts
// st[i], nodes tgt[i] + start), for every bit b of U[i] and every i, one
// union per turn of a single loop: a warp then takes as many turns as its
// busiest lane has unions in all, where a loop per mask took the sum over
// the masks of each one's busiest lane.  unite(a, b) does one union (in a
// block's shared forest, or in the global one).
template <int N, typename Node, typename Unite>
__device__ __forceinline__ void unite_each(Node me, unsigned s, unsigned (&U)[N],
                                           const Node (&tgt)[N], const unsigned (&st)[N],
                                           const int (&shift)[N], Unite unite) {
    for (;;) {
        int b = -1;
        Node partner = 0;
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (b < 0 && U[i]) {
                b = __ffs(U[i]) - 1;
                U[i] &= U[i] - 1u;
                partner = tgt[i] + start_of(st[i], b + shift[i]);
            }
        if (b < 0) break;
        unite(me + start_of(s, b), partner);
    }
}

// unite_each in the shared forest L.
template <int N>
__device__ __forceinline__ void unite_all(int* L, int me, unsigned s, unsigned (&U)[N],
                                          const int (&tgt)[N], const unsigned (&st)[N],
                                          const int (&shift)[N]) {
    unite_each(me, s, U, tgt, st, shift, [L](int a, int b) { meshccl::unite<true>(L, a, b); });
}

// The z pairs of runs3d.cu (its essay gives the rules): lane r holds row r
// of a 32 x 32 tile of plane z (words w, foreground mF, equal-to-left mE,
// equal-to-the-row-above mV, all inside the tile) and row r of the same
// tile of plane z - 1 (words b0, foreground bF, equal-to-the-row-above bV).
// Out: for each of the N masks, the bits of row r that unite with the row
// r + dy[i] of plane z - 1, at the partner's bit b + shift[i].  The tile
// kernel (planes of one brick) and the z-face kernel (a brick's first plane
// against the last plane of the brick below) share this, so both take the
// same pairs.
template <int C>
struct ZPairs {
    static constexpr int N = C >= 2 ? 10 : 1;
};

// The rules on masks.  eqs.straight(): which cells of row r equal the cell
// straight down (row r of plane z - 1).  For the other pairs: eqs.row(dy)
// readies row r + dy of plane z - 1 (dy = 0, -1, +1 in that order), then
// eqs.left(), eqs.centre(), eqs.right() say which cells of row r equal
// that row's cell at x - 1, x and x + 1.  None of these need the partner
// to be foreground or inside: the rules AND them with the foreground
// masks.  binary: every foreground cell of both planes is equal to every
// other (the same for the whole warp): eqs is not asked.  z_pairs below
// reads one-byte words (Bytes); runs3d.cu's wider cells give masks made by
// ballots (runs3d::WideZ).
template <int C, typename Eqs>
__device__ __forceinline__ void z_pairs_by(unsigned mF, unsigned mE, unsigned mV, unsigned bF,
                                           unsigned bV, int lane, bool binary, Eqs& eqs, unsigned (&U)[ZPairs<C>::N],
                                           int (&dyv)[ZPairs<C>::N],
                                           int (&shift)[ZPairs<C>::N]) {
    constexpr int N = ZPairs<C>::N;
    // Straight down (Z0) first: the twin rule, and the column rule: the cell
    // above equal (mV), its own z pair (Z0 of row r - 1) and this pair's
    // partner equal to the cell above that partner (bV).
    const unsigned Z0 = mF & bF & (binary ? ~0u : eqs.straight());
    unsigned pZ = __shfl_up_sync(0xffffffffu, Z0, 1);
    if (lane == 0) pZ = 0u;
    unsigned Ul, U0, Ur;
    row_pairs<false>(mE, 0u, Z0, 0u, Ul, U0, Ur);
    U[0] = U0 & ~(mV & pZ & bV);
    dyv[0] = 0;
    shift[0] = 0;
    if (C >= 2) {
        // The other z pairs of a cell (rows r - 1, r, r + 1 of plane z - 1,
        // diagonals at C = 3): all their partners are in-plane neighbours of
        // the partner straight down, so a cell with Z0 needs none of them.
        // The others: the row rules, one row of partners at a time, and then
        // the same idea once more: the partners beside the cell's position
        // (row r, x - 1 and x + 1: L0 and R0) are in-plane neighbours of the
        // partners in rows r - 1 and r + 1 at x, and of the corner next to
        // each, so pairs with those wait for L0 / R0.  (Every rule still
        // points at a pair of an earlier cell, or at a pair of the same cell
        // earlier in the order Z0, L0 / R0, row r +- 1 at x, corners: no pair
        // is skipped in a circle.)
        unsigned L0 = 0u, R0 = 0u;
#pragma unroll
        for (int k = 0; k < 3; ++k) {
            const int dy = k == 0 ? 0 : (k == 1 ? -1 : 1);
            unsigned f;
            if (!binary) eqs.row(dy);
            f = dy == 0 ? bF : shfl(bF, 1, dy < 0);
            const int r = lane + dy;
            if (r < 0 || r > 31) f = 0u;  // (the shuffle returned the lane's own row)
            unsigned Zl = 0u, Zc = 0u, Zr = 0u;
            if (binary) {
                if (dy != 0) Zc = mF & f & ~Z0;
                if (C == 3 || dy == 0) {
                    Zl = mF & (f << 1) & ~Z0;
                    Zr = mF & (f >> 1) & ~Z0;
                }
            } else {
                if (dy != 0) Zc = mF & f & eqs.centre() & ~Z0;
                if (C == 3 || dy == 0) {
                    Zl = mF & (f << 1) & eqs.left() & ~Z0;
                    Zr = mF & (f >> 1) & eqs.right() & ~Z0;
                }
            }
            if (C == 3 || dy == 0)
                row_pairs<true>(mE, Zl, Zc, Zr, Ul, U0, Ur);
            else
                row_pairs<false>(mE, 0u, Zc, 0u, Ul, U0, Ur);
            if (dy == 0) {
                L0 = Zl;
                R0 = Zr;
            } else {
                U0 &= ~(L0 | R0);
                Ul &= ~L0;
                Ur &= ~R0;
            }
#pragma unroll
            for (int e = 0; e < 3; ++e) {
                const int i = 1 + 3 * k + e;
                if (i >= N) continue;
                U[i] = e == 0 ? Ul : (e == 1 ? U0 : Ur);
                dyv[i] = dy;
                shift[i] = e - 1;
            }
        }
    }
}

// z_pairs_by's equality masks from rows of one-byte cells: w, row r of
// plane z, and b0, row r of plane z - 1 (rows r - 1 and r + 1 from the
// lanes beside).
struct Bytes {
    const unsigned (&w)[8];
    const unsigned (&b0)[8];
    unsigned b[8];  // (row r + dy: left unset until row() is asked)
    __device__ __forceinline__ Bytes(const unsigned (&w_)[8], const unsigned (&b0_)[8])
        : w(w_), b0(b0_) {}
    __device__ __forceinline__ void row(int dy) {
#pragma unroll
        for (int j = 0; j < 8; ++j) b[j] = dy == 0 ? b0[j] : shfl(b0[j], 1, dy < 0);
    }
    __device__ __forceinline__ unsigned straight() const { return eq_mask(w, b0); }
    __device__ __forceinline__ unsigned left() const { return eq_left(w, b); }
    __device__ __forceinline__ unsigned centre() const { return eq_mask(w, b); }
    __device__ __forceinline__ unsigned right() const { return eq_right(w, b); }
};

// z_pairs_by on rows of one-byte cells (words w, b0 as in Bytes).
template <int C>
__device__ __forceinline__ void z_pairs(const unsigned (&w)[8], unsigned mF, unsigned mE,
                                        unsigned mV, const unsigned (&b0)[8], unsigned bF,
                                        unsigned bV, int lane, bool binary,
                                        unsigned (&U)[ZPairs<C>::N], int (&dyv)[ZPairs<C>::N],
                                        int (&shift)[ZPairs<C>::N]) {
    Bytes eqs(w, b0);
    z_pairs_by<C>(mF, mE, mV, bF, bV, lane, binary, eqs, U, dyv, shift);
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

template <int RS = ROW_NODES>
__device__ __forceinline__ void tile_nodes(int* L, int base, unsigned* starts, int lane,
                                           unsigned S_) {
    const int me = base + lane * RS;
    for (unsigned m = S_; m; m &= m - 1u) {
        const int b = __ffs(m) - 1;
        L[me + b] = me + b;
    }
    starts[lane] = S_;
}

// The first row t of the stretch of equal cells straight up (V bits)
// through each bit of lane r's row, as five bit planes (bit b of tops[k]:
// bit k of t), by a segmented scan over the lanes: D marks the columns
// whose stretch starts in the lanes seen so far.  stretch_top reads t of
// bit b back.
__device__ __forceinline__ void stretch_tops(unsigned mV, int lane, unsigned (&tops)[5]) {
    unsigned D = ~mV;
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
}
__device__ __forceinline__ int stretch_top(const unsigned (&tops)[5], int b) {
    int t = 0;
#pragma unroll
    for (int k = 0; k < 5; ++k) t |= ((tops[k] >> b) & 1) << k;
    return t;
}

// The unions inside the tile (after tile_nodes, and after a __syncwarp or
// __syncthreads that makes every row's nodes and starts visible).  The
// straight-up pairs are united with the top of their vertical stretch, not
// with the row above: t(r, b) is the first row of the column of equal cells
// (V bits) through (r, b).  A column of 32 one-cell runs then makes a star,
// not a chain of 32 that every find walks.  (Any cell is joined to its
// stretch's top: by induction in raster order, a pair the rules skip goes
// round through an earlier cell's pair and a run, as before.)  t from
// stretch_tops.
template <bool Diag, int RS = ROW_NODES, int Rules = 1>
__device__ __forceinline__ void tile_unions(int* L, int base, const unsigned* starts, int lane,
                                            unsigned S_, unsigned mE, unsigned mVl, unsigned mV,
                                            unsigned mVr) {
    unsigned tops[5];
    stretch_tops(mV, lane, tops);
    const unsigned Sup = __shfl_up_sync(0xffffffffu, S_, 1);
    const int me = base + lane * RS, up = me - RS;
    unsigned Ul, U0, Ur;
    row_pairs<Diag, Rules>(mE, mVl, mV, mVr, Ul, U0, Ur,
                           Rules == 2 ? __shfl_up_sync(0xffffffffu, mE, 1) : 0u);
    // One loop for all three masks (see unite_all)
    for (;;) {
        int b, partner;
        if (U0) {
            b = __ffs(U0) - 1;
            U0 &= U0 - 1u;
            const int t = stretch_top(tops, b);
            partner = base + t * RS + start_of(starts[t], b);
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

// The position of the n-th set bit (n from 0) of m, which has more than n,
// by halving with popc (a little faster than __fns here).
__device__ __forceinline__ int nth_bit(unsigned m, int n) {
    int pos = 0;
#pragma unroll
    for (int w = 16; w; w >>= 1) {
        const int c = __popc(m & ((1u << w) - 1u));
        if (n >= c) {
            n -= c;
            m >>= w;
            pos += w;
        }
    }
    return pos;
}

// After all unions: each run start of the tile (rows of run starts
// `starts`, nodes from `base`) stores its piece root, as a global index, in
// P, in one of two ways:
// - few run starts (at most Compact): the warp takes them 32
//   at a time in raster order (lane k: the k-th; its row by a binary search
//   over the rows' counts, its bit by nth_bit), so a blob's tile of about
//   50 run starts takes 2 turns;
// - many: a turn per row, lane b on column b, cheaper per turn.
// Either way a store instruction writes few rows (lane r walking its own
// row's run starts put 32 rows, 32 partly written sectors, in every store
// instruction, and took twice as long), and the finds go in raster order,
// whose halving shortens the chains of the tile's forest for the finds
// after them (every lane walking its own row at once was twice as slow on
// the spiral's banded tiles).  The forest's nodes count from 0 at the block's first tile: node p *
// plane + r * 33 + b is cell origin + p * pstride + r * nx + b.  Returns, in
// lane r, row r's piece roots (the run starts that are roots of the forest).
// `starts` is overwritten (no other warp may read it any more).  Compact
// is the callers' (docs/decisions.md: "runs as nodes"): rows won on
// the many-run tiles of percolation and Potts at connectivity 1 and on 2-D
// Potts at 2, run starts 32 at a time on everything else.
//
// The general form takes the node of row r's bit b as base + r * RS + b
// and a root's global index from global_of(root node).  Where the piece
// root goes is the caller's: put(r, b, index, is_root, ctx) stores it,
// with ctx = prep(r), which every lane of the warp calls together for the
// row it is about to store in (so that prep may use shuffles): runs2d.cu
// puts it in P at the run start (and, in a band, at a second cell) or in
// the tile's slots.  The short form below is the one-tile-per-warp forest
// of the comment above, storing in P.
template <int Compact, int RS, typename GlobalOf, typename Prep, typename Put>
__device__ __forceinline__ unsigned store_piece_roots(int* L, int base, unsigned* starts,
                                                      int lane, int nrows, GlobalOf global_of,
                                                      Prep prep, Put put) {
    typedef decltype(prep(0)) Ctx;
    const unsigned mine = lane < nrows ? starts[lane] : 0u;
    const int count = __popc(mine);
    int off = count;  // run starts of rows 0..lane (a scan over lanes)
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const int t = __shfl_up_sync(0xffffffffu, off, d);
        if (lane >= d) off += t;
    }
    const int total = __shfl_sync(0xffffffffu, off, 31);
    auto store = [&](int r, int b, const Ctx& ctx) {
        const int node = base + r * RS + b;
        const int rt = meshccl::find<true>(L, node);  // halving: shared walks shorten
        put(r, b, global_of(rt), rt == node, ctx);
        return rt == node;
    };
    if (total > Compact) {  // the same for the whole warp
        unsigned roots = 0u;
        for (int r = 0; r < nrows; ++r) {
            const Ctx ctx = prep(r);
            const bool root = ((starts[r] >> lane) & 1u) && store(r, lane, ctx);
            const unsigned m = __ballot_sync(0xffffffffu, root);
            if (lane == r) roots = m;  // row r's piece roots, for lane r
        }
        return roots;
    }
    off -= count;  // ... of rows before lane's: the first run start of row lane is number off
    __syncwarp();
    starts[lane] = 0u;  // now row lane's piece roots
    __syncwarp();
    for (int k0 = 0; k0 < total; k0 += 32) {
        const int k = k0 + lane;
        int r = 0;  // the last row whose first run start is number k or earlier
#pragma unroll
        for (int s = 16; s; s >>= 1)
            if (__shfl_sync(0xffffffffu, off, r + s) <= k) r += s;
        const unsigned srow = __shfl_sync(0xffffffffu, mine, r);
        const int first = __shfl_sync(0xffffffffu, off, r);
        const Ctx ctx = prep(r);
        if (k < total) {
            const int b = nth_bit(srow, k - first);
            if (store(r, b, ctx)) atomicOr(starts + r, 1u << b);
        }
    }
    __syncwarp();
    return starts[lane];
}

template <int Compact, typename I>
__device__ __forceinline__ unsigned store_piece_roots(int* L, int base, unsigned* starts,
                                                      int lane, int nrows, I* P, I tile0, I nx,
                                                      I origin, int plane, I pstride) {
    return store_piece_roots<Compact, ROW_NODES>(L, base, starts, lane, nrows, [=](int rt) {
        const int p = rt / plane, q = rt - p * plane, ry = q / ROW_NODES;
        return origin + (I)p * pstride + (I)ry * nx + (q - ry * ROW_NODES);
    }, [](int) { return 0; }, [=](int r, int b, I g, bool, int) { P[tile0 + (I)r * nx + b] = g; });
}

// A 3-D brick kernel's last step (runs3d.cu's tile kernels and
// runs3d_structure.cu's), after its unions: the piece roots of warp p's
// plane z = blockIdx.z * NZ + p stored in P (store_piece_roots, with
// Compact), the rows' F and S (word bx * (nz * ny) + z * ny + y), and
// their piece roots in A (H zeroed where aligned: nx % 32 == 0).
template <int Compact, int NZ, typename I>
__device__ __forceinline__ void brick_store(int* forest, unsigned* starts, I* __restrict__ P,
                                            unsigned* __restrict__ A, unsigned* __restrict__ H,
                                            unsigned* __restrict__ F, unsigned* __restrict__ S,
                                            unsigned mF, unsigned S_, I nz, I ny, I nx,
                                            int aligned) {
    constexpr int PL = 32 * ROW_NODES;
    const int lane = threadIdx.x & 31, p = threadIdx.x >> 5;
    const I bx = (I)blockIdx.x, x0 = bx * 32, y0 = (I)blockIdx.y * 32;
    const I z0 = (I)blockIdx.z * NZ, z = z0 + p, y = y0 + lane;
    if (z >= nz) return;  // the whole warp
    const I plane = ny * nx, tile0 = z * plane + y0 * nx + x0;
    const unsigned roots = store_piece_roots<Compact>(
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

}  // namespace runs
}  // namespace meshccl
