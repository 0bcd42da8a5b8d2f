// runsnd_pairs.cuh -- which pairs runsnd.cu's union kernel unites, for any
// structure and any number of axes, on one word of 32 cells.
//
// A binary array of any shape is a stack of rows along its last axis (the
// x axis); every row is cut into words of 32 cells, and bit b of a word's
// mask F is its cell b's "foreground".  A structure (scipy.ndimage.label's,
// or the full box of a connectivity) says, for each other row at a step d
// over the leading axes, which of the three cells x - 1, x, x + 1 of that
// row a cell at x touches: S(d), a subset of {-1, 0, +1}.  The steps d
// that point to earlier rows (lexicographically negative) are the row
// table the host makes (meshccl/_gpu/runs_nd.py); each table entry holds
// its row distance, the axes it steps down or up along (to see whether the
// row exists: a row on the array's first / last plane of an axis has no
// neighbour past it) and S(d) as three bits.  The structure's own
// (0, ..., 0, -1) entry says whether cells join along x at all ("xjoin").
//
// Nodes are runs: with xjoin, a run is a stretch of foreground cells of one
// word (runs are cut at word edges; the cells either side of an edge are
// united by the first cell of the later word), and its node is its first
// cell.  Without xjoin every foreground cell is its own node.  The run
// starts of a word are its mask S.
//
// For a table entry and dx in S(d) the pairs are J_dx = F & (F' shifted by
// dx), F' the other row's mask with the neighbouring words' edge bits
// shifted in.  Pairs that the union-find would only confirm are dropped
// (with xjoin only: the rules lean on the runs):
// - the stretch rule: a pair whose cell's left neighbour is in the same run
//   and has the pair of the same dx (its partner is the left neighbour of
//   this partner, so in the same run or across a united word edge);
// - the centre rule: a dx = -1 or +1 pair of a cell that also has its
//   dx = 0 pair (the partners are x-neighbours);
// - a dx = -1 pair whose cell's left neighbour, in the same run, has its
//   dx = 0 pair, and a dx = +1 pair whose cell's right neighbour, in the
//   same run, has its dx = 0 pair (the same partner cell).
// And across entries (with or without xjoin): a pair whose partner is a
// neighbour, under the structure, of the partner of one of the same cell's
// pairs with an earlier entry of the table (the host lists those in the
// entry's cover masks; the first 21 entries cover): both partners lie in
// earlier rows, and their own pair joins them.
// Each dropped pair points at a pair whose ends are joined to its own
// ends: of an earlier cell, of an earlier row, the same cell's dx = 0 pair
// or one of an earlier entry, or the next cell's dx = 0 pair of the same
// entry.  Along such pointers the entry never grows, and within one entry
// dx = 0 pairs only point at earlier cells' dx = 0 pairs, so no pair is
// dropped in a circle.
// tests/test_runsnd_emulated.py compiles this header on the CPU and checks
// the partition against scipy.ndimage.label.
//
// The functions here take the bit arrays through a reader (F(word), S(word)
// of a global word index bx * rows + r) and hand the pairs kept to a
// unite(a, b, count) (count pairs a[i], b[i] of nodes' flat cell indices);
// the kernel passes the CUDA union-find, the CPU test a plain one.

#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define MESHCCL_RND_HD __host__ __device__
#else
#define MESHCCL_RND_HD
#endif

namespace meshccl {
namespace runsnd {

// The run start at or left of bit b of s (s has one there).
MESHCCL_RND_HD inline int start_at(unsigned s, int b) {
    const unsigned m = s & (b == 31 ? 0xffffffffu : ((2u << b) - 1u));
#if defined(__CUDA_ARCH__)
    return 31 - __clz(m);
#else
    return 31 - __builtin_clz(m);
#endif
}

MESHCCL_RND_HD inline int lowest(unsigned m) {
#if defined(__CUDA_ARCH__)
    return __ffs(m) - 1;
#else
    return __builtin_ctz(m);
#endif
}

MESHCCL_RND_HD inline int lowest64(unsigned long long m) {
#if defined(__CUDA_ARCH__)
    return __ffsll(m) - 1;
#else
    return __builtin_ctzll(m);
#endif
}

// A word's run starts from its foreground mask.
MESHCCL_RND_HD inline unsigned run_starts(unsigned m, bool xjoin) {
    return xjoin ? m & ~(m << 1) : m;
}

// One entry of the row table: rows back (> 0), the leading axes it steps
// down along (bit k: step -1 on leading axis k) and up along (+1), S(d):
// bit 0 dx = -1, bit 1 dx = 0, bit 2 dx = +1, and for each dx (cover[0]:
// -1, [1]: 0, [2]: +1) the pairs of earlier entries that cover it: bit
// 3 e' + k' (k' as cover's index) where the partner of entry e', dx' is a
// neighbour under the structure of this entry's partner (entries 0..20).
struct Step {
    long long back;
    unsigned down, up, dx, pad;
    unsigned long long cover[3];
};

// The entries whose pairs may cover later ones (3 pairs each in 64 bits).
constexpr int COVERING = 21;

// The pairs of word bx of row r (foreground m, run starts s; the row's
// first cell is flat index row0) with the row `back` rows earlier, whose
// words bx - 1, bx, bx + 1 are read through Fw / Sw (global word indices);
// ntx words a row, `rows` rows, nx cells a row.  covered(mask): the OR of
// the earlier entries' pairs (bit 3 e' + k of mask: entry e', dx k - 1;
// each the cells whose partner there is foreground) that the word keeps
// for covering: those of a cover mask of `st` cover this entry's pairs.
// Leaving some out only keeps more pairs.  J (out): this entry's, J[0]
// dx = -1, J[1] dx = 0, J[2] dx = +1.  unite(a, b) gets node indices.
template <typename I, typename Fw, typename Sw, typename Cover, typename Unite>
MESHCCL_RND_HD inline void step_pairs(unsigned m, unsigned s, bool xjoin, I r, I bx, I rows,
                                      I ntx, I nx, const Step& st, Cover covered,
                                      unsigned (&J)[3], Fw Fr, Sw Sr, Unite unite) {
    const unsigned dxm = st.dx;
    const I rn = r - (I)st.back;
    const I w = bx * rows + rn;
    const unsigned nm = Fr(w);
    const unsigned np = (dxm & 1u) && bx > 0 ? Fr(w - rows) : 0u;
    const unsigned nn = (dxm & 4u) && bx + 1 < ntx ? Fr(w + rows) : 0u;
    const unsigned E = xjoin ? m & (m << 1) : 0u;  // bit b: cell b - 1 in the same run
    const unsigned J0 = (dxm & 2u) ? m & nm : 0u;
    const unsigned Jl = (dxm & 1u) ? m & ((nm << 1) | (np >> 31)) : 0u;
    const unsigned Jr = (dxm & 4u) ? m & ((nm >> 1) | (nn << 31)) : 0u;
    J[0] = Jl;
    J[1] = J0;
    J[2] = Jr;
    unsigned U0 = J0 & ~((J0 << 1) & E);
    unsigned Ul = Jl & ~((Jl << 1) & E);
    unsigned Ur = Jr & ~((Jr << 1) & E);
    if (xjoin) {
        Ul &= ~J0 & ~((J0 << 1) & E);
        Ur &= ~J0 & ~((J0 & E) >> 1);
    }
    if (!(U0 | Ul | Ur)) return;
    // pairs whose partner neighbours the partner of an earlier entry's pair
    Ul &= ~covered(st.cover[0]);
    U0 &= ~covered(st.cover[1]);
    Ur &= ~covered(st.cover[2]);
    if (!(U0 | Ul | Ur)) return;
    const I mine = r * nx + bx * 32, theirs = rn * nx + bx * 32;
    const unsigned ns = Sr(w);
    for (; U0; U0 &= U0 - 1u) {
        const int b = lowest(U0);
        unite(mine + start_at(s, b), theirs + start_at(ns, b));
    }
    for (; Ul; Ul &= Ul - 1u) {
        const int b = lowest(Ul);
        const I partner = b > 0 ? theirs + start_at(ns, b - 1)
                                : theirs - 32 + start_at(Sr(w - rows), 31);
        unite(mine + start_at(s, b), partner);
    }
    for (; Ur; Ur &= Ur - 1u) {
        const int b = lowest(Ur);
        // (bit 0 of the next word is a run start: a foreground cell at a word's edge)
        const I partner = b < 31 ? theirs + start_at(ns, b + 1) : theirs + 32;
        unite(mine + start_at(s, b), partner);
    }
}

// Every pair of word bx of row r: along x across the word's left edge,
// then each table entry whose row exists.  coord_lo / coord_hi: bit k set
// where the row is on the first / last plane of leading axis k.
//
// The pairs are queued and handed to unite_all(a, b, count) Batch at a
// time (and the rest at the end).  On the GPU a unite is a chain of
// dependent loads and a CAS, and the lanes of a warp find their pairs in
// different entries and dx: uniting each at once would run one such chain
// per (entry, dx) that any lane has a pair in, one after another, while the
// other lanes wait; queued, the warp runs as many chains as its busiest
// lane has pairs, and the kernel issues the first loads of a batch's
// chains together.
//
// Slots: the word keeps its first Slots non-zero pairs of the covering
// entries for the cover masks, in registers (the queue too: both are
// written through unrolled selects, never a computed index, so no local
// memory); the pairs past them cover nothing, which only keeps more pairs.
// A sparse word has one or two.  Slots 0: all of them, in a table in local
// memory, read where the word has a non-zero pair.
template <typename I, int Batch = 1, int Slots = 0, typename Fw, typename Sw, typename Unite>
MESHCCL_RND_HD inline void word_pairs(unsigned m, unsigned s, bool xjoin, I r, I bx, I rows,
                                      I ntx, I nx, unsigned coord_lo, unsigned coord_hi,
                                      const Step* steps, int nsteps, Fw Fr, Sw Sr,
                                      Unite unite_all) {
    static_assert(Batch >= 1, "a batch holds one pair or more");
    if (!m) return;
    I qa[Batch], qb[Batch];
    int queued = 0;
    auto flush = [&]() {  // (one call site: the union loops inlined once)
        unite_all(qa, qb, queued);
        queued = 0;
    };
    auto unite = [&](I a, I b) {
#pragma unroll
        for (int i = 0; i < Batch; ++i)
            if (i == queued) {
                qa[i] = a;
                qb[i] = b;
            }
        if (++queued == Batch) flush();
    };
    const I w = bx * rows + r;
    if (xjoin && bx > 0 && (m & 1u) && (Fr(w - rows) >> 31))
        unite(r * nx + bx * 32, r * nx + bx * 32 - 32 + start_at(Sr(w - rows), 31));
    constexpr int kSlots = Slots > 0 ? Slots : 1;
    unsigned kv[kSlots];  // Slots > 0: the pairs kept, kv[i] of entry-and-dx bit ki[i]
    int ki[kSlots];
    int kept = 0;
    unsigned Js[Slots > 0 ? 1 : 3 * COVERING];  // Slots 0: Js[i] where bit i of held is set
    unsigned long long held = 0ull;
    auto covered = [&](unsigned long long mask) {
        unsigned c = 0u;
        if (Slots > 0) {
#pragma unroll
            for (int i = 0; i < kSlots; ++i) {
                if (i >= kept) break;
                if ((mask >> ki[i]) & 1ull) c |= kv[i];
            }
        } else {
            for (unsigned long long t = mask & held; t; t &= t - 1ull) c |= Js[lowest64(t)];
        }
        return c;
    };
    for (int e = 0; e < nsteps; ++e) {
        const Step st = steps[e];
        unsigned J[3] = {0u, 0u, 0u};
        if (!((st.down & coord_lo) || (st.up & coord_hi)))  // (else no such row: no pairs)
            step_pairs<I>(m, s, xjoin, r, bx, rows, ntx, nx, st, covered, J, Fr, Sr, unite);
        if (e < COVERING) {
#pragma unroll
            for (int k = 0; k < 3; ++k) {
                if (!J[k]) continue;
                if (Slots > 0) {
#pragma unroll
                    for (int i = 0; i < kSlots; ++i)
                        if (i == kept) {
                            kv[i] = J[k];
                            ki[i] = 3 * e + k;
                        }
                    kept += kept < kSlots ? 1 : 0;
                } else {
                    Js[3 * e + k] = J[k];
                    held |= 1ull << (3 * e + k);
                }
            }
        }
    }
    if (queued) flush();
}

}  // namespace runsnd
}  // namespace meshccl
