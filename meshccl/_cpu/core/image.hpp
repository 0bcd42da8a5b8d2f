// Serial and threaded labelling of plain images on the CPU: equal values, no
// mask, bonds, tolerance, wrap-around or axes -- what skimage.measure.label
// does, for any number of axes.
//
// The classical two-pass design, on runs instead of cells.  A *run* is a
// stretch of equal cells along the last axis.  Its *neighbour lines* are the
// rows before it that hold neighbours of its cells: in 2-D the row above, in
// 3-D the row above and the three rows of the plane before (at full
// connectivity); each line is touched over the run's columns widened by one
// on the sides its offsets step to.
//
//         line  . . o o o o o o . .      (8-connectivity: columns c-1 .. e)
//         run       [ x x x x ]          (columns c .. e-1)
//
// Scanning the rows in raster order, every run
//
// 1. looks for cells of its value in its neighbour lines; each run of such
//    cells there already has a provisional label;
// 2. takes the smallest root among those labels and hooks the other roots
//    under it in a small equivalence table E (the union-find of
//    meshccl/_kernels/core/unionfind.h over provisional labels), or,
//    touching none, takes a new label;
// 3. writes its label into its cells.
//
// New labels are handed out in raster order of the first cell of their run,
// and only a run touching nothing starts a component, so numbering the roots
// of E in increasing order (uf::number_table) gives each component the rank
// of its first cell: skimage's numbering.  A last pass (gather) replaces
// every cell's provisional label by its number, counting cells per label
// when asked.
//
// Two scans:
//
// - bits_into, for binary images (the background and one other value):
//   rows are first packed into 64-bit words, one bit a cell (pack_rows), so
//   runs and the touched runs of a line are found with count-trailing-zeros,
//   and a word equal to the word of the line before copies that line's
//   labels (the walls of Hawick's spiral repeat row after row);
// - prov_into, for any values, cell by cell.
//
// Both give the same provisional sets and so the same labels.  label_plain
// picks the bit-packed scan when there is a background and the image turns
// out binary.
//
// The threaded form (label_slabs) cuts the array along axis 0 into slabs of
// whole planes, labels each slab with the serial scans on its own thread,
// turns each slab's labels into global ids (the slab's offset plus its
// number), unites the ids across the seams with compare-and-swap hooks (the
// smaller id becomes the root, so a component's root is its first piece in
// raster order), numbers the roots in order and has each slab gather its
// final labels.  The labels are those of the serial scan.
//
// Positions are int64 throughout; the label type L (int32 or int64) is a
// template parameter: int64 when the array has 2**31 - 2 cells or more.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>

#include "threads.hpp"
#include "unionfind.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The kernels' namespace: one per instruction set they are compiled for
// (kernels.cpp, CMakeLists.txt), meshccl::cpu when included plainly.
#ifndef MESHCCL_CPU_NS
#define MESHCCL_CPU_NS cpu
#endif

namespace meshccl {
namespace MESHCCL_CPU_NS {

namespace uf = ::meshccl::MESHCCL_UF_NS;
using i64 = std::int64_t;
using u64 = std::uint64_t;

// An array left uninitialised (as numpy.empty: pages never written are never
// touched), growable with its contents kept.
template <class T>
struct Buffer {
    struct Free {
        void operator()(T* p) const { std::free(p); }
    };
    std::unique_ptr<T, Free> p;
    i64 n = 0;
    Buffer() = default;
    explicit Buffer(i64 size) : p(allocate(size)), n(size) {}
    T* data() { return p.get(); }
    const T* data() const { return p.get(); }
    i64 size() const { return n; }
    T& operator[](i64 i) { return p.get()[i]; }
    const T& operator[](i64 i) const { return p.get()[i]; }
    void grow(i64 size, i64 keep) {  // to `size` entries, the first `keep` kept
        std::unique_ptr<T, Free> q(allocate(size));
        std::memcpy(q.get(), p.get(), sizeof(T) * keep);
        p = std::move(q);
        n = size;
    }
    static T* allocate(i64 size) {
        const std::size_t bytes = sizeof(T) * std::size_t(std::max<i64>(size, 1));
        void* m = nullptr;
#if defined(__linux__)
        // (as NumPy does for its arrays of 4 MiB or more: huge pages, so a
        // table touched here and there faults once per 2 MiB, not per 4 KiB)
        if (bytes >= (std::size_t(4) << 20)) {
            if (posix_memalign(&m, std::size_t(1) << 21, bytes) != 0) throw std::bad_alloc();
            madvise(m, bytes, MADV_HUGEPAGE);
            return static_cast<T*>(m);
        }
#endif
        m = std::malloc(bytes);
        if (!m) throw std::bad_alloc();
        return static_cast<T*>(m);
    }
};

inline int ctz64(u64 x) { return __builtin_ctzll(x); }
inline int clz64(u64 x) { return __builtin_clzll(x); }

// The geometry of a C-ordered array: its shape and the half-neighbourhood
// table of meshccl/neighbourhood.py (rows [offset, lo mask, hi mask, flags];
// the left neighbour is not in it: runs take care of it).
struct Geometry {
    const i64* shape;
    int ndim;
    const i64* table;  // noff rows of 4
    int noff;
};

// The table's offsets grouped by neighbour line: the same step along the
// leading axes (named by its boundary masks, since linear offsets coincide on
// tiny shapes).  off: the offset of the line's column 0; mlo / mhi: where the
// line does not exist (the row sits at that end of a leading axis); dmin /
// dmax: the smallest and largest column step.
struct Lines {
    int n = 0;
    std::vector<i64> off, mlo, mhi, dmin, dmax;

    explicit Lines(const Geometry& g) {
        int last = g.ndim - 1;
        i64 lastbit = i64(1) << last;
        for (int o = 0; o < g.noff; ++o) {
            const i64* t = g.table + 4 * o;
            i64 d = ((t[1] >> last) & 1) ? -1 : ((t[2] >> last) & 1);
            i64 lo = t[1] & ~lastbit, hi = t[2] & ~lastbit;
            int k = 0;
            while (k < n && (mlo[k] != lo || mhi[k] != hi)) ++k;
            if (k == n) {
                off.push_back(t[0] - d);
                mlo.push_back(lo);
                mhi.push_back(hi);
                dmin.push_back(d);
                dmax.push_back(d);
                ++n;
            } else {
                dmin[k] = std::min(dmin[k], d);
                dmax[k] = std::max(dmax[k], d);
            }
        }
        cover_lines(g);
    }

    // Which lines cover which: cover[k * n + j] is 1 when a cell of line k
    // and the cells of line j in the same column and the two beside it are
    // neighbours, 0 when only the one in the same column is, -1 when none
    // is.  `order`: the lines that cover the most first (a stable sort).
    std::vector<int> cover, order;

    void cover_lines(const Geometry& g) {
        const int last = g.ndim - 1;
        int conn = 0;
        for (int o = 0; o < g.noff; ++o)
            conn = std::max(conn, __builtin_popcountll(u64(g.table[4 * o + 1] | g.table[4 * o + 2])));
        cover.assign(std::size_t(n) * n, -1);
        std::vector<int> score(n, 0);
        for (int k = 0; k < n; ++k) {
            for (int j = 0; j < n; ++j) {
                if (j == k) continue;
                int h = 0;
                bool ok = true;
                for (int a = 0; a < last; ++a) {
                    i64 sk = ((mhi[k] >> a) & 1) - ((mlo[k] >> a) & 1);
                    i64 sj = ((mhi[j] >> a) & 1) - ((mlo[j] >> a) & 1);
                    i64 d = sj > sk ? sj - sk : sk - sj;
                    if (d > 1) ok = false;
                    h += int(d);
                }
                if (ok && h + 1 <= conn) cover[k * n + j] = 1;
                else if (ok && h <= conn) cover[k * n + j] = 0;
                score[k] += cover[k * n + j] >= 0;
            }
        }
        order.resize(n);
        for (int k = 0; k < n; ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(),
                         [&](int x, int y) { return score[x] > score[y]; });
    }
};

// A row's place: the coordinates of its leading axes (an odometer) and the
// masks of the leading axes at whose low / high end it sits.
struct RowWalk {
    std::vector<i64> coords;
    const i64* shape;
    int last;

    RowWalk(const i64* shape_, int ndim) : coords(ndim, 0), shape(shape_), last(ndim - 1) {}

    void masks(i64& lo, i64& hi) const {
        lo = 0;
        hi = 0;
        for (int k = 0; k < last; ++k) {
            if (coords[k] == 0) lo |= i64(1) << k;
            if (coords[k] == shape[k] - 1) hi |= i64(1) << k;
        }
    }

    void next() {
        for (int k = last - 1; k >= 0; --k) {
            if (++coords[k] < shape[k]) return;
            coords[k] = 0;
        }
    }
};

// The lines present for the current row, in the order of ln.order: their
// offsets from the array's start (at column 0), their column steps, and
// (with `with_cover`, up to 64 lines) which earlier present lines cover each
// one with the cells beside (cov1) or in the same column only (cov0), as
// bit sets of their places here.
struct RowLines {
    int cnt = 0;
    std::vector<i64> off, dmin, dmax, line;
    std::vector<u64> cov1, cov0;

    explicit RowLines(int n) : off(n), dmin(n), dmax(n), line(n), cov1(n), cov0(n) {}

    void select(const Lines& ln, i64 lo, i64 hi, i64 base, bool with_cover = false) {
        cnt = 0;
        for (int k : ln.order) {
            if ((lo & ln.mlo[k]) | (hi & ln.mhi[k])) continue;
            off[cnt] = base + ln.off[k];
            dmin[cnt] = ln.dmin[k];
            dmax[cnt] = ln.dmax[k];
            line[cnt] = k;
            cov1[cnt] = 0;
            cov0[cnt] = 0;
            if (with_cover) {
                for (int j = 0; j < cnt; ++j) {
                    const int f = ln.cover[line[j] * ln.n + k];
                    if (f == 1) cov1[cnt] |= u64(1) << j;
                    else if (f == 0) cov0[cnt] |= u64(1) << j;
                }
            }
            ++cnt;
        }
    }
};

// Entries the table of bits_into needs for n cells in rows of W: a
// provisional label per run at most, (W + 1) / 2 runs a row, plus the unused
// label 0 and a spare.
inline i64 bits_room(i64 n, i64 W) { return (n / W) * ((W + 1) / 2) + 2; }

// ---------------------------------------------------------------- packing

// Pack a binary image into M (nw = (W + 63) / 64 words a row of W cells):
// bit c of M[row * nw + w] is values[row * W + 64 w + c] != bg.  Returns true
// (and stops after that row) when the image is not binary: some cell is
// neither bg nor the first other value.
template <class K>
bool pack_rows(const K* values, i64 n, u64* M, i64 W, K bg) {
    K fv = bg;
    for (i64 i = 0; i < n; ++i)
        if (values[i] != bg) { fv = values[i]; break; }
    i64 nrows = n / W, nw = (W + 63) >> 6;
    if (sizeof(K) == 1 && W % 8 == 0) {
        // 8 cells a load: y = x ^ (bg in every byte) is 0 in a background
        // byte and d = fv ^ bg in a foreground one, so bit b (d's lowest set
        // bit) of each byte, moved to bit 0, is the cell's flag; y must equal
        // flags * d (else a third value), and one multiply gathers the 8
        // flags into a byte.
        const u64 ones = 0x0101010101010101ULL, magic = 0x0102040810204080ULL;
        u64 bgw = u64(std::uint8_t(bg)) * ones;
        u64 d = u64(std::uint8_t(std::uint8_t(fv) ^ std::uint8_t(bg)));
        int sh = d == 0 ? 0 : ctz64(d);
        const unsigned char* bytes = reinterpret_cast<const unsigned char*>(values);
        for (i64 row = 0; row < nrows; ++row) {
            u64 bad = 0;
            i64 q = row * W;
            for (i64 w = 0; w < nw; ++w) {
                i64 chunks = (std::min((w << 6) + 64, W) - (w << 6)) >> 3;
                u64 word = 0;
                for (i64 k = 0; k < chunks; ++k) {
                    u64 x;
                    std::memcpy(&x, bytes + q + 8 * k, 8);
                    u64 y = x ^ bgw;
                    u64 f = (y >> sh) & ones;
                    bad |= y ^ (f * d);
                    word |= ((f * magic) >> 56) << (8 * k);
                }
                M[row * nw + w] = word;
                q += 8 * chunks;
            }
            if (bad) return true;
        }
        return false;
    }
    for (i64 row = 0; row < nrows; ++row) {
        const K* r = values + row * W;
        bool bad = false;
        for (i64 w = 0; w < nw; ++w) {
            i64 c0 = w << 6, c1 = std::min(c0 + 64, W);
            u64 word = 0;
            for (i64 c = c0; c < c1; ++c) {
                K v = r[c];
                bool f = v != bg;
                bad |= f & (v != fv);
                word |= u64(f) << (c - c0);
            }
            M[row * nw + w] = word;
        }
        if (bad) return true;
    }
    return false;
}

// First column >= pos of the packed line at M + mb with its bit set, or W.
inline i64 next_one(const u64* M, i64 mb, i64 pos, i64 W) {
    if (pos >= W) return W;
    i64 w = pos >> 6, nw = (W + 63) >> 6;
    u64 x = M[mb + w] & (~u64(0) << (pos & 63));
    while (x == 0) {
        if (++w >= nw) return W;
        x = M[mb + w];
    }
    return std::min((w << 6) + ctz64(x), W);
}

// First column >= pos whose bit is clear (W past the end).
inline i64 next_zero(const u64* M, i64 mb, i64 pos, i64 W) {
    i64 w = pos >> 6, nw = (W + 63) >> 6;
    u64 x = ~M[mb + w] & (~u64(0) << (pos & 63));
    while (x == 0) {
        if (++w >= nw) return W;
        x = ~M[mb + w];
    }
    return std::min((w << 6) + ctz64(x), W);
}

// ---------------------------------------------------------------- searches

// Keys of 1, 2 or 4 bytes are compared a 64-bit word at a time (SWAR): the
// word x ^ (v in every lane) has a zero lane where a key equals v; its
// lowest nonzero lane is the first key that differs, and the lowest set bit
// of (y - ones) & ~y & high the first zero lane (borrows only spoil lanes
// above it).
template <class K> struct Lanes;
template <> struct Lanes<std::uint8_t> {
    static constexpr u64 ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    static constexpr int per_word = 8, shift = 3;
};
template <> struct Lanes<std::uint16_t> {
    static constexpr u64 ones = 0x0001000100010001ULL, high = 0x8000800080008000ULL;
    static constexpr int per_word = 4, shift = 4;
};
template <> struct Lanes<std::uint32_t> {
    static constexpr u64 ones = 0x0000000100000001ULL, high = 0x8000000080000000ULL;
    static constexpr int per_word = 2, shift = 5;
};

#if defined(__SSE2__)
// v in every lane of a vector of keys of type K (1, 2 or 4 bytes).
template <class K>
inline __m128i splat16(K v) {
    if constexpr (sizeof(K) == 1) return _mm_set1_epi8(char(v));
    else if constexpr (sizeof(K) == 2) return _mm_set1_epi16(short(v));
    else return _mm_set1_epi32(int(v));
}

// The k-th 16 bytes of the right-hand side of equal16: the keys from a
// pointer, or the splat16 vector itself (overloads: __m128i as a template
// argument would lose its alignment attribute, and GCC says so).
template <class K>
inline __m128i right16(const K* r, int k) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(r) + k);
}
inline __m128i right16(__m128i r, int) { return r; }

// Bit t (t < 16) set where q[t] equals the key r[t] (r: the next 16 keys
// from a pointer) or the key in every lane of r (r: a splat16 vector): one,
// two or four 16-byte loads, the compares packed down to one byte a key.
template <class K, class R>
inline unsigned equal16(const K* q, R r) {
    const __m128i* w = reinterpret_cast<const __m128i*>(q);
    if constexpr (sizeof(K) == 1) {
        return unsigned(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(w), right16(r, 0))));
    } else if constexpr (sizeof(K) == 2) {
        const __m128i c0 = _mm_cmpeq_epi16(_mm_loadu_si128(w), right16(r, 0));
        const __m128i c1 = _mm_cmpeq_epi16(_mm_loadu_si128(w + 1), right16(r, 1));
        return unsigned(_mm_movemask_epi8(_mm_packs_epi16(c0, c1)));
    } else {
        static_assert(sizeof(K) == 4, "equal16 reads 1-, 2- or 4-byte keys");
        const __m128i c0 = _mm_cmpeq_epi32(_mm_loadu_si128(w), right16(r, 0));
        const __m128i c1 = _mm_cmpeq_epi32(_mm_loadu_si128(w + 1), right16(r, 1));
        const __m128i c2 = _mm_cmpeq_epi32(_mm_loadu_si128(w + 2), right16(r, 2));
        const __m128i c3 = _mm_cmpeq_epi32(_mm_loadu_si128(w + 3), right16(r, 3));
        return unsigned(_mm_movemask_epi8(
            _mm_packs_epi16(_mm_packs_epi32(c0, c1), _mm_packs_epi32(c2, c3))));
    }
}
#endif

// The first i in [x, b] with (p[i] == v) == eq, or b + 1.  Whole words are
// read while i + per_word <= safe (the keys that exist from p on).
template <bool eq, class K>
inline i64 search(const K* p, i64 x, i64 b, K v, i64 safe) {
#if defined(__SSE2__)
    if constexpr (sizeof(K) == 1) {  // 16 one-byte keys a compare
        const __m128i vv = splat16(v);
        const i64 stop = std::min(b, safe - 16);
        while (x <= stop) {
            unsigned m = equal16(p + x, vv);
            if (!eq) m ^= 0xFFFFu;
            if (m) return std::min(x + __builtin_ctz(m), b + 1);
            x += 16;
        }
    }
#endif
    if constexpr (sizeof(K) < 8) {
        using S = Lanes<K>;
        const u64 vv = u64(v) * S::ones;
        const i64 stop = std::min(b, safe - S::per_word);
        while (x <= stop) {
            u64 w;
            std::memcpy(&w, p + x, 8);
            w ^= vv;
            const u64 hit = eq ? (w - S::ones) & ~w & S::high : w;
            if (hit) return std::min(x + (ctz64(hit) >> S::shift), b + 1);
            x += S::per_word;
        }
    }
    while (x <= b && (p[x] == v) != eq) ++x;
    return std::min(x, b + 1);
}

// Bit t set where p[a + t] == v, for t < len (1..64).  Vector compares read
// 16 keys at once while they stay below `safe` (the keys that exist from p
// on); the rest one by one.
template <class K>
inline u64 match_mask(const K* p, i64 a, int len, K v, i64 safe) {
    u64 m = 0;
    int t = 0;
#if defined(__SSE2__)
    if constexpr (sizeof(K) <= 4) {
        const __m128i vv = splat16(v);
        for (; t < len && a + t + 16 <= safe; t += 16) m |= u64(equal16(p + a + t, vv)) << t;
    }
#endif
    for (; t < len; ++t) m |= u64(p[a + t] == v) << t;
    return len >= 64 ? m : m & ((u64(1) << len) - 1);
}

// Bits a..b (0 <= a, b <= 63) set.
inline u64 bit_range(i64 a, i64 b) {
    return a > b ? 0 : (~u64(0) << a) & (~u64(0) >> (63 - b));
}

// ---------------------------------------------------------------- scans

// The run being scanned touches a run of provisional label p: its label
// lab becomes the first touched run's label, taken as it is (the gather
// resolves it); finds start only with a second, other label, hooked with it
// in E.  lab and first start at cap (nothing touched yet).
template <class L>
inline void touch_run(L* E, L cap, L p, L& lab, L& first) {
    if (first == cap) {
        first = lab = p;
    } else if (p != first) {
        if (lab == first) lab = uf::find(E, lab);
        lab = uf::hook(E, uf::find(E, p), lab);
    }
}

// The scan on packed rows M (pack_rows): provisional labels into P, the
// table E (at least bits_room entries: it never fills).  With one neighbour
// line (2-D, or the first row of a plane), a word equal to the line's word
// copies the line's 64 labels: each run inside it touches just the run with
// the same cells, so only a run that goes on into the next word is merged
// as usual.  Returns the number of provisional labels.
template <class L>
i64 bits_into(const u64* M, L* P, i64 n, const Geometry& g, const Lines& ln, L* E,
              i64 E_size) {
    const int last = g.ndim - 1;
    const i64 W = g.shape[last], nrows = n / W, nw = (W + 63) >> 6;
    const L cap = L(E_size - 1);  // "no label yet": larger than every label
    const u64 full = ~u64(0);
    E[0] = 0;
    L nl = 0;
    RowWalk walk(g.shape, g.ndim);
    RowLines q(ln.n);
    // the present lines of a row side by side: offset, column steps, packed words
    struct Line {
        i64 off, dmin, dmax, mb;
    };
    std::vector<Line> lines(ln.n);
    std::vector<i64> qmb(ln.n);
    std::vector<u64> starts(nw);
    for (i64 row = 0; row < nrows; ++row) {
        i64 lo, hi;
        walk.masks(lo, hi);
        const i64 base = row * W, mb = row * nw;
        q.select(ln, lo, hi, base);
        for (int k = 0; k < q.cnt; ++k) {
            qmb[k] = (row + ln.off[q.line[k]] / W) * nw;
            lines[k] = Line{q.off[k], q.dmin[k], q.dmax[k], qmb[k]};
        }
        const Line* const ls = lines.data();
        const int cnt = q.cnt;
        std::fill(P + base, P + base + W, L(0));
        u64 carry = 0;
        const bool one_line = q.cnt == 1;
        const i64 jb0 = one_line ? q.off[0] : 0, mb0 = one_line ? qmb[0] : 0;
        for (i64 w = 0; w < nw; ++w) {
            u64 word = M[mb + w];
            u64 S = word & ~((word << 1) | carry);  // run starts in this word
            carry = word >> 63;
            if (one_line && word != 0 && word == M[mb0 + w]) {
                i64 c0 = w << 6;
                std::memcpy(P + base + c0, P + jb0 + c0, sizeof(L) * std::min<i64>(64, W - c0));
                // a run inside the word touches one run of the line (the same
                // cells): only a run that goes on into the next word merges
                if (carry && S != 0) S &= full << (63 - clz64(S));
                else S = 0;
            }
            starts[w] = S;
        }
        for (i64 w = 0; w < nw; ++w) {
            u64 S = starts[w];
            while (S != 0) {
                i64 s = (w << 6) + ctz64(S);
                S &= S - 1;
                i64 e = next_zero(M, mb, s, W);  // the run is [s, e)
                L lab = cap, first = cap;
                auto touch = [&](L p) { touch_run(E, cap, p, lab, first); };
                for (int k = 0; k < cnt; ++k) {
                    const Line& li = ls[k];
                    const i64 a = std::max<i64>(s + li.dmin, 0);
                    const i64 b = std::min<i64>(e - 1 + li.dmax, W - 1);
                    const i64 wa = a >> 6;
                    if (wa == (b >> 6)) {
                        u64 T = M[li.mb + wa] & (full << (a & 63)) & (full >> (63 - (b & 63)));
                        T &= ~(T << 1);  // the first cell of each touched run
                        while (T != 0) {
                            const i64 x = (wa << 6) + ctz64(T);
                            T &= T - 1;
                            touch(P[li.off + x]);
                        }
                    } else {
                        i64 x = next_one(M, li.mb, a, W);
                        while (x <= b) {
                            touch(P[li.off + x]);
                            x = next_one(M, li.mb, next_zero(M, li.mb, x, W), W);
                        }
                    }
                }
                if (lab == cap) {
                    ++nl;
                    E[nl] = nl;
                    lab = nl;
                }
                for (i64 x = base + s; x < base + e; ++x) P[x] = lab;
            }
        }
        walk.next();
    }
    return nl;
}

// The scan for any values: each run of equal cells takes the smallest root
// among the provisional labels of the cells of its value it touches in its
// neighbour lines (or a new label); the others are hooked under it in E.  E
// (a vector with a spare last entry) doubles when it fills (never, when it
// has room for a label per cell).  Returns the number of labels.
template <class K, class L>
i64 prov_into(const K* values, L* P, i64 n, const Geometry& g, const Lines& ln, bool has_bg,
              K bg, Buffer<L>& Ev) {
    const int last = g.ndim - 1;
    const i64 W = g.shape[last], nrows = n / W;
    L* E = Ev.data();
    L cap = L(Ev.size() - 1);
    E[0] = 0;
    L nl = 0;
    RowWalk walk(g.shape, g.ndim);
    RowLines q(ln.n);
    std::vector<u64> masks(ln.n), spread(ln.n);
    // (windows as masks, with covered runs skipped, up to 16 lines: beyond,
    // the pairs of lines cost more than the finds they save)
    bool cover = ln.n <= 16;
    for (int k = 0; k < ln.n; ++k) cover &= -1 <= ln.dmin[k] && ln.dmax[k] <= 1;
    const u64 lane16 = 0xFFFF, rep = 0x0001000100010001ULL, full = ~u64(0);
    const u64 in_lane = 0x7FFF7FFF7FFF7FFFULL;  // every bit but the top one of each lane
    for (i64 row = 0; row < nrows; ++row) {
        i64 lo, hi;
        walk.masks(lo, hi);
        const i64 base = row * W;
        const K* r = values + base;
        q.select(ln, lo, hi, base, cover);
        // up to four lines: their windows of a short run as the 16-bit lanes
        // of one word.  plan: the lanes present; lsel / hsel: lanes whose
        // window starts at column c - 1 / ends at column e; r1d / r0d: lane
        // q covered by lane q - d with the cells beside / in the same column
        const bool lanes = cover && q.cnt <= 4;
        u64 plan = 0, lsel = 0, hsel = 0, r1[4] = {0, 0, 0, 0}, r0[4] = {0, 0, 0, 0};
        i64 lq[4] = {0, 0, 0, 0};
        if (lanes) {
            for (int k = 0; k < q.cnt; ++k) {
                const u64 m = lane16 << (16 * k);
                lq[k] = q.off[k];
                plan |= m;
                if (q.dmin[k] < 0) lsel |= m;
                if (q.dmax[k] > 0) hsel |= m;
                for (int j = 0; j < k; ++j) {
                    if ((q.cov1[k] >> j) & 1) r1[k - j] |= m;
                    else if ((q.cov0[k] >> j) & 1) r0[k - j] |= m;
                }
            }
        }
        i64 c = 0;
        while (c < W) {
            const K v = r[c];
            const i64 e = search<false>(r, c + 1, W - 1, v, n - base);
            if (has_bg && v == bg) {
                std::fill(P + base + c, P + base + e, L(0));
                c = e;
                continue;
            }
            L lab = cap, first = cap;
            auto touch = [&](L p) { touch_run(E, cap, p, lab, first); };
            const i64 x0 = std::max<i64>(c - 1, 0);
            const int len = int(std::min(e, W - 1) - x0 + 1);
            if (lanes && e - c <= 13 && base + x0 + 16 <= n) {
                // a short run: the windows of every line at once (bit t of
                // lane k: column x0 + t of line k), covered runs skipped as below
                const u64 lo0 = (full << (c - x0)) & lane16;
                const u64 hi0 = full >> (63 - (e - 1 - x0));
                const u64 hi1 = full >> (63 - (std::min(e, W - 1) - x0));
                const u64 WM = ((lo0 * rep) | lsel) & ((hi0 * rep) | (((hi1 & lane16) * rep) & hsel)) & plan;
                u64 MK = 0;
                for (int k = 0; k < q.cnt; ++k)
                    MK |= match_mask(values + lq[k], x0, 16, v, n - lq[k]) << (16 * k);
                MK &= WM;
                const u64 SP = (MK | (MK << 1) | (MK >> 1)) & in_lane;
                const u64 COV = ((SP << 16) & r1[1]) | ((MK << 16) & r0[1]) | ((SP << 32) & r1[2]) |
                                ((MK << 32) & r0[2]) | ((SP << 48) & r1[3]) | ((MK << 48) & r0[3]);
                u64 ST = MK & ~(MK << 1) & ~COV;  // first cells of the runs to look up
                while (ST != 0) {
                    const int t = ctz64(ST);
                    ST &= ST - 1;
                    touch(P[lq[t >> 4] + x0 + (t & 15)]);
                }
            } else if (len <= 64 && cover) {
                // every line's window (columns c - 1 or c to e - 1 or e) as
                // a bit mask from column x0; a run of matching cells there is
                // looked up once, at its first cell, and not at all when
                // that cell lies beside a matching cell of a line read
                // before it that covers it (the two are earlier neighbours,
                // so in one set already, and that set is merged anyway)
                for (int k = 0; k < q.cnt; ++k) {
                    const i64 a = std::max<i64>(c + q.dmin[k], 0) - x0;
                    const i64 b = std::min<i64>(e - 1 + q.dmax[k], W - 1) - x0;
                    u64 M = match_mask(values + q.off[k], x0, len, v, n - q.off[k]) & bit_range(a, b);
                    masks[k] = M;
                    spread[k] = M | (M << 1) | (M >> 1);
                    u64 cov = 0;
                    for (u64 j1 = q.cov1[k]; j1; j1 &= j1 - 1) cov |= spread[ctz64(j1)];
                    for (u64 j0 = q.cov0[k]; j0; j0 &= j0 - 1) cov |= masks[ctz64(j0)];
                    u64 S = M & ~(M << 1) & ~cov;
                    const L* pl = P + q.off[k] + x0;
                    while (S != 0) {
                        touch(pl[ctz64(S)]);
                        S &= S - 1;
                    }
                }
            } else for (int k = 0; k < q.cnt; ++k) {
                const K* line = values + q.off[k];
                const L* pl = P + q.off[k];
                const i64 safe = n - q.off[k];
                const i64 b = std::min<i64>(e - 1 + q.dmax[k], W - 1);
                i64 x = search<true>(line, std::max<i64>(c + q.dmin[k], 0), b, v, safe);
                while (x <= b) {
                    touch(pl[x]);
                    x = search<false>(line, x + 1, b, v, safe);  // past that run: one label
                    x = search<true>(line, x, b, v, safe);
                }
            }
            if (lab == cap) {
                if (nl + 1 >= cap) {  // full: double the table (room for n labels at most)
                    Ev.grow(std::min<i64>(2 * Ev.size() - 1, n + 2), i64(nl) + 1);
                    E = Ev.data();
                    cap = L(Ev.size() - 1);
                }
                ++nl;
                E[nl] = nl;
                lab = nl;
            }
            if (e - c <= 8 && base + c + 8 <= n) {
                for (int k = 0; k < 8; ++k) P[base + c + k] = lab;  // past the run: labelled later
            } else {
                std::fill(P + base + c, P + base + e, lab);
            }
            c = e;
        }
        walk.next();
    }
    return nl;
}

// ---------------------------------------------------------------- gather

// Every cell's final label E[work[i]] into P (which may be work).
// Does work (int32 provisional labels) sit in P's own memory, the first
// half of an int64 P (label_serial's int32 scan of a serial call)?  Then the
// gathers go from the last cell to the first: P[i] (bytes 8i..8i+7) only
// overwrites work[2i] and work[2i + 1], already read for i >= 1 (and work[0]
// is read before P[0] is written).
template <class W, class L>
bool aliased(const W* work, const L* P) {
    return sizeof(W) < sizeof(L) && static_cast<const void*>(work) == static_cast<const void*>(P);
}

template <class W, class L>
void gather(const W* work, L* P, i64 n, const W* E) {
    if (aliased(work, P)) {  // (see aliased: last cell first)
        for (i64 i = n - 1; i >= 0; --i) P[i] = L(E[work[i]]);
        return;
    }
    for (i64 i = 0; i < n; ++i) P[i] = L(E[work[i]]);
}

// gather that also counts each label's cells into counts (N + 1 zeros).
// With at most `spread` labels four counters a label, side by side, cell i
// adding to counter i % 4: a run of one label is then four chains of
// increments through memory instead of one.
template <class W, class L>
void gather_counted(const W* work, L* P, i64 n, const W* E, i64 N, i64* counts, i64 spread) {
    const bool back = aliased(work, P);  // (see aliased: last cell first)
    if (N > spread) {
        for (i64 j = 0; j < n; ++j) {
            const i64 i = back ? n - 1 - j : j;
            W lab = E[work[i]];
            P[i] = L(lab);
            counts[lab] += 1;
        }
        return;
    }
    Buffer<i64> four(4 * (N + 1));
    std::fill(four.data(), four.data() + four.size(), i64(0));
    for (i64 j = 0; j < n; ++j) {
        const i64 i = back ? n - 1 - j : j;
        W lab = E[work[i]];
        P[i] = L(lab);
        four[4 * lab + (i & 3)] += 1;
    }
    for (i64 l = 0; l <= N; ++l) counts[l] = four[4 * l] + four[4 * l + 1] + four[4 * l + 2] + four[4 * l + 3];
}

// ---------------------------------------------------------------- drivers

struct Tuning {
    i64 prov_table_min;         // _tuning.CPU_PROV_TABLE_MIN
    i64 prov_cells_per_label;   // _tuning.CPU_PROV_TABLE_CELLS_PER_LABEL
    i64 counts_spread;          // _tuning.CPU_COUNTS_SPREAD_LABELS
};

// Provisional labels of one block of whole rows into work, its table in Ev
// (resized as needed); returns their number.
template <class K, class W>
i64 scan_block(const K* values, W* work, i64 n, const Geometry& g, const Lines& ln, bool has_bg,
               K bg, Buffer<W>& Ev) {
    const i64 Wd = g.shape[g.ndim - 1];
    if (has_bg) {
        Buffer<u64> M((n / Wd) * ((Wd + 63) >> 6));
        if (!pack_rows(values, n, M.data(), Wd, bg)) {
            i64 room = bits_room(n, Wd);
            if (Ev.size() < room) Ev = Buffer<W>(room);
            return bits_into(M.data(), work, n, g, ln, Ev.data(), Ev.size());
        }
    }
    return prov_into(values, work, n, g, ln, has_bg, bg, Ev);
}

// The final labels into P from work (provisional labels) and the numbered
// table E; returns N, counts (if asked) into *counts.
template <class W, class L>
void finish(const W* work, L* P, i64 n, const W* E, i64 N, std::vector<i64>* counts,
            const Tuning& t) {
    if (counts) {
        counts->assign(N + 1, 0);
        gather_counted(work, P, n, E, N, counts->data(), t.counts_spread);
    } else {
        gather(work, P, n, E);
    }
}

// Serial: provisional labels in work (int32 or P itself), then the gather.
template <class K, class W, class L>
i64 label_serial(const K* values, W* work, L* P, i64 n, const Geometry& g, bool has_bg, K bg,
                 std::vector<i64>* counts, const Tuning& t) {
    Lines ln(g);
    i64 room = std::max<i64>(t.prov_table_min, n / t.prov_cells_per_label + 2);
    Buffer<W> Ev(std::min<i64>(n + 1, room) + 1);
    i64 nl = scan_block(values, work, n, g, ln, has_bg, bg, Ev);
    W N = uf::number_table(Ev.data(), W(nl));
    finish(work, P, n, Ev.data(), N, counts, t);
    return N;
}

using ::meshccl::threads::on_threads;

// Unite (in G, over global ids: a slab's offset + its number) the cells of
// plane `start` (the first of slab b) with their neighbours in the plane
// before it (the last of slab a): the table's rows that step back along
// axis 0, equal values only, background never.
template <class K, class W>
void seam(const K* values, const W* work, const Geometry& g, i64 start, const W* Ea, i64 Oa,
          const W* Eb, i64 Ob, i64* G) {
    const int last = g.ndim - 1;
    const i64 lastbit = i64(1) << last;
    const i64 Wd = g.shape[last];
    i64 plane = 1;
    for (int k = 1; k < g.ndim; ++k) plane *= g.shape[k];
    RowWalk walk(g.shape, g.ndim);
    walk.coords[0] = start;
    i64 prev_a = -1, prev_b = -1;
    for (i64 r = 0; r < plane / Wd; ++r) {
        i64 lo, hi;
        walk.masks(lo, hi);
        const i64 base = start * plane + r * Wd;
        for (int o = 0; o < g.noff; ++o) {
            const i64* t = g.table + 4 * o;
            if (!(t[1] & 1)) continue;
            if ((lo & t[1] & ~lastbit) | (hi & t[2] & ~lastbit)) continue;
            const i64 d = ((t[1] >> last) & 1) ? -1 : ((t[2] >> last) & 1);
            const i64 off = t[0];
            for (i64 c = std::max<i64>(0, -d); c < std::min(Wd, Wd - d); ++c) {
                const i64 i = base + c;
                const W p = work[i];
                if (p == 0) continue;
                const i64 j = i + off;
                if (values[i] != values[j]) continue;
                const i64 gb = Ob + Eb[p], ga = Oa + Ea[work[j]];
                if (ga == prev_a && gb == prev_b) continue;
                prev_a = ga;
                prev_b = gb;
                uf::unite_cas(G, ga, gb);
            }
        }
        walk.next();
    }
}

// Threaded: `slabs` slabs along axis 0 (meshccl/_cpu/image.py plan_slabs
// says how many); serially when fewer than two or the array is 1-D.
template <class K, class W, class L>
i64 label_slabs(const K* values, W* work, L* P, i64 n, const Geometry& g, bool has_bg, K bg,
                i64 slabs, std::vector<i64>* counts, const Tuning& t) {
    const i64 rows = g.shape[0];
    const i64 T = std::min(slabs, rows);
    if (g.ndim < 2 || T < 2) return label_serial(values, work, P, n, g, has_bg, bg, counts, t);
    const i64 plane = n / rows;
    std::vector<i64> cuts(T + 1);
    for (i64 s = 0; s <= T; ++s) cuts[s] = rows * s / T;
    Lines ln(g);
    std::vector<Buffer<W>> E(T);
    std::vector<i64> nls(T), offsets(T + 1, 0);
    // 1. each slab on its own: provisional labels and a numbered table
    on_threads(int(T), [&](int s) {
        const i64 lo = cuts[s] * plane, m = (cuts[s + 1] - cuts[s]) * plane;
        std::vector<i64> sh(g.shape, g.shape + g.ndim);
        sh[0] = cuts[s + 1] - cuts[s];
        Geometry gs{sh.data(), g.ndim, g.table, g.noff};
        E[s] = Buffer<W>(m + 3);  // a label per cell: never grows
        nls[s] = scan_block(values + lo, work + lo, m, gs, ln, has_bg, bg, E[s]);
        offsets[s + 1] = uf::number_table(E[s].data(), W(nls[s]));
    });
    for (i64 s = 0; s < T; ++s) offsets[s + 1] += offsets[s];
    const i64 N0 = offsets[T];
    // 2. the seams, at once, in one forest of global ids
    Buffer<i64> G(N0 + 1);
    for (i64 i = 0; i <= N0; ++i) G[i] = i;
    on_threads(int(T - 1), [&](int s1) {
        const int s = s1 + 1;
        seam(values, work, g, cuts[s], E[s - 1].data(), offsets[s - 1], E[s].data(), offsets[s],
             G.data());
    });
    // 3. number the roots in order; each slab gathers its final labels
    const i64 N = uf::number_table(G.data(), N0);
    std::vector<std::vector<i64>> C(counts ? T : 0);
    on_threads(int(T), [&](int s) {
        W* Es = E[s].data();
        for (i64 l = 1; l <= nls[s]; ++l) Es[l] = W(G[offsets[s] + Es[l]]);
        Es[0] = 0;
        const i64 lo = cuts[s] * plane, hi = cuts[s + 1] * plane;
        if (counts) {
            // cells per provisional label, added to their final labels below
            std::vector<i64>& Cs = C[s];
            Cs.assign(nls[s] + 1, 0);
            const W* ws = work + lo;
            L* ps = P + lo;
            for (i64 i = 0; i < hi - lo; ++i) {
                W l = ws[i];
                ps[i] = L(Es[l]);
                Cs[l] += 1;
            }
        } else {
            gather(work + lo, P + lo, hi - lo, Es);
        }
    });
    if (counts) {
        counts->assign(N + 1, 0);
        for (i64 s = 0; s < T; ++s)
            for (i64 l = 0; l <= nls[s]; ++l) (*counts)[E[s][l]] += C[s][l];
    }
    return N;
}

// Raster labels L (1..count, background 0) turned in place into first-cell
// labels: 1 + the flat index of each label's first cell.  Labels first
// appear in increasing order, so the cell where label `next` appears first
// is its first cell.
template <class L>
void first_cell_labels(L* lab, i64 n, i64 count) {
    std::vector<L> first(count + 1);
    L upcoming = 1;
    for (i64 i = 0; i < n; ++i) {
        L l = lab[i];
        if (l > 0) {
            if (l == upcoming) {
                first[l] = L(i + 1);
                ++upcoming;
            }
            lab[i] = first[l];
        }
    }
}

}  // namespace MESHCCL_CPU_NS
}  // namespace meshccl
