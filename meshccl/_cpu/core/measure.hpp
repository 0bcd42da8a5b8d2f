// Per-label tables of a label image on the CPU, for meshccl.measure: each
// label's cell count, first cell, bounding box, coordinate sums, circular
// sums of periodic axes and, with an intensity image, the intensity's sum,
// sum of magnitudes, extremes and intensity-weighted coordinate and circular
// sums -- every requested column in one pass over the labels (and the
// intensity).
//
// The image is a C-ordered raster seen as rows of W cells (the last axis).
// The pass walks it row by row and cuts each row into *runs*: maximal
// stretches of one label (the run search of image.hpp finds where a label
// changes, 8 or 16 cells a compare).  A run [b, e] of label l updates l's
// row of the table once:
//
//         row  r:  0 0 0 7 7 7 7 0 0 ...
//                        b     e          count += e - b + 1
//                                         box of the last axis: b .. e
//                                         sum of the last coordinate:
//                                           (b + e) (e - b + 1) / 2
//
// The coordinates of the other axes are the row's, the same for every run
// of the row: they are stepped once per row (an odometer), never divided
// out of a cell index.  Counts, first cells, boxes and coordinate sums are
// integers and exact.  The intensity differs from cell to cell, so a run
// reduces its values first (sum, sum of magnitudes, sum weighted by the
// last coordinate, extremes) and then adds those to the row; the weighted
// sums of the other axes are the row's coordinate times the run's sum.
// Circular sums (cos, sin of 2 pi c / n) come from a table per periodic axis:
// len * cos of the row's coordinate, or a loop over the run on the last
// axis.  Extremes propagate NaN as NumPy's minimum / maximum do.
//
// Finding the runs: a row is compared with itself shifted by one cell, 16
// labels a vector compare, into a 64-bit mask of the cells that start a run;
// the runs are walked with count-trailing-zeros.  A loop that stepped along
// each run would mispredict its exit once a run, and runs are 2 cells long
// on average in a percolation image.
//
// A table is an array of records, one per label, of 8-byte words (integers,
// doubles and the intensity's extremes in the columns the call asks for):
// a run touches one record, mostly one cache line, and label 0 -- often half
// the image -- stays in L1.  Boxes are kept as ~lo and hi + 1, so that zero
// means "no cell yet" and every run widens them with two maxima, no branch;
// the count doubles as the "seen" flag of the first cell and the extremes.
// Tables start zeroed (fresh pages, untouched until a label is seen); a
// last pass turns the records into the output columns (count, first, lo,
// hi, csum, ... as NumPy arrays; labels without cells get first = n,
// lo = n, hi = -1 and zeros).
//
// Threads.  The rows are cut into T slabs of consecutive rows, one per
// thread, each scanned into a private table; the last pass merges the T
// records of each label in slab order (threads own ranges of labels there)
// while writing the columns.  Integer columns do not depend on how the rows
// are cut.  Floating-point sums are added in a fixed order -- along the
// rows within a slab, then slab after slab -- so a call is deterministic;
// sums of integer intensities and coordinates are exact integers in
// float64 (below 2**53) and so identical for any T, while sums of float
// intensities and circular sums may differ between thread counts in the
// last bits.
//
// When the labels are many, private tables cost more than they save: each
// is as large as the output (rows x record), and the merge reads all of
// them.  So T is cut to keep the private tables together at most one record
// per cell of the image (T * rows <= n), and to at least min_cells cells
// and one row per slab; an image of one-cell labels (rows = n + 1) is
// scanned by one thread.  A shared table updated with atomics would keep
// all threads busy there, but every run would pay an atomic (and labels
// next to each other across a seam would contend), and extremes of floats
// need compare-and-swap loops; cutting T keeps one exact, atomic-free code
// path.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "image.hpp"
#include "kernels.hpp"

namespace meshccl {
namespace MESHCCL_CPU_NS {

// Where a call's columns live in a record (offsets in words; -1: not asked).
struct MeasureLayout {
    int ndim = 0, nper = 0;
    int first = -1, lo = -1, hi = -1, csum = -1, cos = -1, sin = -1;
    int vmin = -1, vmax = -1, isum = -1, iabs = -1, wsum = -1, wcos = -1, wsin = -1;
    int stride = 1;  // word 0: the count
    MeasureLayout(int nd, int np, bool want_first, bool boxes, bool sums, bool values)
        : ndim(nd), nper(np) {
        auto take = [&](int words) { int at = stride; stride += words; return at; };
        if (want_first) first = take(1);
        if (boxes) { lo = take(nd); hi = take(nd); }
        if (sums) csum = take(nd);
        if (np) { cos = take(np); sin = take(np); }
        if (values) {
            vmin = take(1); vmax = take(1); isum = take(1); iabs = take(1); wsum = take(nd);
            if (np) { wcos = take(np); wsin = take(np); }
        }
    }
};

// The output columns (NumPy arrays from the caller; null where not wanted).
struct MeasureColumns {
    i64* count;
    i64* first;
    i64* lo;
    i64* hi;
    double* csum;
    double* cos;
    double* sin;
    double* isum;
    double* iabs;
    void* imin;  // the intensity's dtype
    void* imax;
    double* wsum;
    double* wcos;
    double* wsin;
};

// A zeroed array of words: fresh pages from the system for large tables
// (zero until written, so a label never seen costs nothing until the last
// pass reads it), huge pages where Linux gives them.
struct ZeroWords {
    u64* p = nullptr;
    std::size_t bytes = 0;
    bool mapped = false;
    explicit ZeroWords(i64 words) : bytes(sizeof(u64) * std::size_t(std::max<i64>(words, 1))) {
#if defined(__linux__)
        if (bytes >= (std::size_t(4) << 20)) {
            void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (m == MAP_FAILED) throw std::bad_alloc();
            madvise(m, bytes, MADV_HUGEPAGE);
            p = static_cast<u64*>(m);
            mapped = true;
            return;
        }
#endif
        p = static_cast<u64*>(std::calloc(bytes / sizeof(u64), sizeof(u64)));
        if (!p) throw std::bad_alloc();
    }
    ZeroWords(const ZeroWords&) = delete;
    ZeroWords& operator=(const ZeroWords&) = delete;
    ~ZeroWords() {
#if defined(__linux__)
        if (mapped) {
            munmap(p, bytes);
            return;
        }
#endif
        std::free(p);
    }
};

inline double word_double(u64 w) {
    double d;
    std::memcpy(&d, &w, 8);
    return d;
}
inline void add_double(u64& w, double x) {
    double d = word_double(w) + x;
    std::memcpy(&w, &d, 8);
}
template <class V>
inline V word_value(u64 w) {
    V v;
    std::memcpy(&v, &w, sizeof(V));
    return v;
}
template <class V>
inline void put_value(u64& w, V v) {
    std::memcpy(&w, &v, sizeof(V));
}

// NumPy's minimum / maximum: a NaN wins.
template <class V>
inline V least(V a, V b) {
    if constexpr (std::is_floating_point_v<V>) return (b < a || b != b) ? b : a;
    else return b < a ? b : a;
}
template <class V>
inline V most(V a, V b) {
    if constexpr (std::is_floating_point_v<V>) return (a < b || b != b) ? b : a;
    else return a < b ? b : a;
}

// No intensity image.
struct NoValue {};

// Bit t set where a[t] != b[t], for t < len (0..64): 16 labels a compare
// (SSE2), the rest one by one without branches.
template <class L>
inline u64 differ_mask(const L* a, const L* b, int len) {
    u64 m = 0;
    int t = 0;
#if defined(__SSE2__)
    for (; t + 16 <= len; t += 16) {
        const __m128i* p = reinterpret_cast<const __m128i*>(a + t);
        const __m128i* q = reinterpret_cast<const __m128i*>(b + t);
        unsigned eq;
        if constexpr (sizeof(L) == 1) {
            eq = unsigned(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(p), _mm_loadu_si128(q))));
        } else if constexpr (sizeof(L) == 2) {
            const __m128i c0 = _mm_cmpeq_epi16(_mm_loadu_si128(p), _mm_loadu_si128(q));
            const __m128i c1 = _mm_cmpeq_epi16(_mm_loadu_si128(p + 1), _mm_loadu_si128(q + 1));
            eq = unsigned(_mm_movemask_epi8(_mm_packs_epi16(c0, c1)));
        } else if constexpr (sizeof(L) == 4) {
            __m128i c[4];
            for (int k = 0; k < 4; ++k)
                c[k] = _mm_cmpeq_epi32(_mm_loadu_si128(p + k), _mm_loadu_si128(q + k));
            eq = unsigned(_mm_movemask_epi8(
                _mm_packs_epi16(_mm_packs_epi32(c[0], c[1]), _mm_packs_epi32(c[2], c[3]))));
        } else {  // 64-bit lanes: equal where both 32-bit halves are
            eq = 0;
            for (int k = 0; k < 8; ++k) {
                __m128i c = _mm_cmpeq_epi32(_mm_loadu_si128(p + k), _mm_loadu_si128(q + k));
                c = _mm_and_si128(c, _mm_shuffle_epi32(c, _MM_SHUFFLE(2, 3, 0, 1)));
                eq |= unsigned(_mm_movemask_pd(_mm_castsi128_pd(c))) << (2 * k);
            }
        }
        m |= u64(~eq & 0xFFFFu) << t;
    }
#endif
    for (; t < len; ++t) m |= u64(a[t] != b[t]) << t;
    return m;
}

struct MeasureGeometry {
    const i64* shape;  // ndim lengths; ndim 0: one cell
    int ndim;
    i64 n, W, R;       // cells, row length, rows
    const i64* axes;   // the periodic axes
    int nper;
    const double* cos_of;  // per periodic axis j: cos / sin of 2 pi c / shape, at offsets[j]
    const double* sin_of;
    const i64* offsets;
    i64 rows;          // labels must be below it
};

#if defined(__GNUC__)
#define MESHCCL_INLINE __attribute__((always_inline))
#else
#define MESHCCL_INLINE
#endif

// Scan rows [r0, r1) into the zeroed table T; false if a label is not
// below g.rows (its runs are skipped).  ND: the number of axes when it is
// known at compile time (1 to 4, without an intensity), else 0.
template <int ND, class L, class V>
bool measure_rows(const L* lab, const V* val, const MeasureGeometry& g, const MeasureLayout& y,
                  u64* T, i64 r0, i64 r1) {
    constexpr bool has_values = !std::is_same_v<V, NoValue>;
    bool fits = true;
    if (r0 >= r1) return fits;
    const int nd = ND ? ND : g.ndim;
    const int last = nd - 1;  // -1 in 0-d: a single cell, no coordinates
    const i64 W = g.W, rows = g.rows;
    const std::size_t stride = std::size_t(y.stride);
    const int o_first = y.first, o_lo = nd ? y.lo : -1, o_hi = y.hi, o_csum = nd ? y.csum : -1;
    const int nper = g.nper;
    // the row's coordinates (axes 0 .. nd - 2), as themselves, ~c and c + 1
    std::vector<i64> rc_(std::max(nd, 1), 0);
    std::vector<u64> nrc_(std::max(nd, 1)), prc_(std::max(nd, 1));
    i64* rc = rc_.data();
    u64* nrc = nrc_.data();
    u64* prc = prc_.data();
    {
        i64 r = r0;
        for (int d = nd - 2; d >= 0; --d) {
            rc[d] = r % g.shape[d];
            r /= g.shape[d];
        }
    }
    // periodic axes other than the last: their cos / sin for this row
    std::vector<double> row_cos(std::max(nper, 1)), row_sin(std::max(nper, 1));
    int last_j = -1;  // the last axis's index among the periodic ones
    for (int j = 0; j < nper; ++j)
        if (g.axes[j] == last) last_j = j;
    const double* cos_x = last_j >= 0 ? g.cos_of + g.offsets[last_j] : nullptr;
    const double* sin_x = last_j >= 0 ? g.sin_of + g.offsets[last_j] : nullptr;
    for (i64 r = r0; r < r1; ++r) {
        const i64 base = r * W;
        const L* row = lab + base;
        for (int d = 0; d < last; ++d) {
            nrc[d] = ~u64(rc[d]);
            prc[d] = u64(rc[d]) + 1;
        }
        for (int j = 0; j < nper; ++j) {
            if (j == last_j) continue;
            const i64 c = rc[g.axes[j]];
            row_cos[j] = g.cos_of[g.offsets[j] + c];
            row_sin[j] = g.sin_of[g.offsets[j] + c];
        }
        // run [b, e] of label l: one update of l's record
        auto run = [&](i64 b, i64 e, L l) MESHCCL_INLINE {
            const i64 len = e - b + 1;
            if (u64(l) >= u64(rows)) {
                fits = false;
                return;
            }
            u64* rec = T + std::size_t(l) * stride;
            const u64 seen = rec[0];
            rec[0] = seen + u64(len);
            if (o_first >= 0) rec[o_first] = seen ? rec[o_first] : u64(base + b);
            if (o_lo >= 0) {  // (~lo and hi + 1: zero is "no cell yet")
                u64* lo = rec + o_lo;
                u64* hi = rec + o_hi;
                for (int d = 0; d < last; ++d) {
                    lo[d] = std::max(lo[d], nrc[d]);
                    hi[d] = std::max(hi[d], prc[d]);
                }
                lo[last] = std::max(lo[last], ~u64(b));
                hi[last] = std::max(hi[last], u64(e) + 1);
            }
            if (o_csum >= 0) {
                u64* cs = rec + o_csum;
                for (int d = 0; d < last; ++d) cs[d] += u64(rc[d]) * u64(len);
                cs[last] += u64(b + e) * u64(len) / 2;
            }
            if (nper) {
                const double fl = double(len);
                for (int j = 0; j < nper; ++j) {
                    double c = 0, s = 0;
                    if (j == last_j) {
                        for (i64 x = b; x <= e; ++x) {
                            c += cos_x[x];
                            s += sin_x[x];
                        }
                    } else {
                        c = fl * row_cos[j];
                        s = fl * row_sin[j];
                    }
                    add_double(rec[y.cos + j], c);
                    add_double(rec[y.sin + j], s);
                }
            }
            if constexpr (has_values) {
                const V* v = val + base;
                V mn = v[b], mx = v[b];
                double s = 0, sa = 0, sx = 0;
                for (i64 x = b; x <= e; ++x) {
                    const V u = v[x];
                    mn = least(mn, u);
                    mx = most(mx, u);
                    const double w = double(u);
                    s += w;
                    sa += std::fabs(w);
                    sx += w * double(x);
                }
                if (!seen) {
                    put_value(rec[y.vmin], mn);
                    put_value(rec[y.vmax], mx);
                } else {
                    put_value(rec[y.vmin], least(word_value<V>(rec[y.vmin]), mn));
                    put_value(rec[y.vmax], most(word_value<V>(rec[y.vmax]), mx));
                }
                add_double(rec[y.isum], s);
                add_double(rec[y.iabs], sa);
                if (nd) {
                    for (int d = 0; d < last; ++d) add_double(rec[y.wsum + d], double(rc[d]) * s);
                    add_double(rec[y.wsum + last], sx);
                }
                for (int j = 0; j < nper; ++j) {
                    double c = 0, sn = 0;
                    if (j == last_j) {
                        for (i64 x = b; x <= e; ++x) {
                            const double w = double(v[x]);
                            c += w * cos_x[x];
                            sn += w * sin_x[x];
                        }
                    } else {
                        c = s * row_cos[j];
                        sn = s * row_sin[j];
                    }
                    add_double(rec[y.wcos + j], c);
                    add_double(rec[y.wsin + j], sn);
                }
            }
        };
        // the row's runs: a bit for each cell that starts one (but cell 0),
        // 64 cells a word
        i64 b = 0;
        L l = row[0];
        for (i64 x = 0; x < W; x += 64) {
            const int len = int(std::min<i64>(64, W - x));
            u64 m = x ? differ_mask(row + x, row + x - 1, len)
                      : differ_mask(row + 1, row, len - 1) << 1;
            while (m) {
                const i64 h = x + ctz64(m);
                m &= m - 1;
                run(b, h - 1, l);
                b = h;
                l = row[h];
            }
        }
        if (W) run(b, W - 1, l);
        for (int d = nd - 2; d >= 0; --d) {  // the next row's coordinates
            if (++rc[d] < g.shape[d]) break;
            rc[d] = 0;
        }
    }
    return fits;
}

// Fold record s into record a (both of layout y): s's cells come after a's
// in raster order.
template <class V>
inline void merge_record(u64* a, const u64* s, const MeasureLayout& y) {
    constexpr bool has_values = !std::is_same_v<V, NoValue>;
    if (!s[0]) return;
    const bool seen = a[0] != 0;
    a[0] += s[0];
    if (y.first >= 0 && !seen) a[y.first] = s[y.first];
    if (y.lo >= 0)
        for (int d = 0; d < y.ndim; ++d) {
            a[y.lo + d] = std::max(a[y.lo + d], s[y.lo + d]);
            a[y.hi + d] = std::max(a[y.hi + d], s[y.hi + d]);
        }
    if (y.csum >= 0)
        for (int d = 0; d < y.ndim; ++d) a[y.csum + d] += s[y.csum + d];
    for (int j = 0; j < y.nper; ++j) {
        add_double(a[y.cos + j], word_double(s[y.cos + j]));
        add_double(a[y.sin + j], word_double(s[y.sin + j]));
    }
    if constexpr (has_values) {
        if (!seen) {
            a[y.vmin] = s[y.vmin];
            a[y.vmax] = s[y.vmax];
        } else {
            put_value(a[y.vmin], least(word_value<V>(a[y.vmin]), word_value<V>(s[y.vmin])));
            put_value(a[y.vmax], most(word_value<V>(a[y.vmax]), word_value<V>(s[y.vmax])));
        }
        add_double(a[y.isum], word_double(s[y.isum]));
        add_double(a[y.iabs], word_double(s[y.iabs]));
        for (int d = 0; d < y.ndim; ++d) add_double(a[y.wsum + d], word_double(s[y.wsum + d]));
        for (int j = 0; j < y.nper; ++j) {
            add_double(a[y.wcos + j], word_double(s[y.wcos + j]));
            add_double(a[y.wsin + j], word_double(s[y.wsin + j]));
        }
    }
}

// Write label l's record into the columns.
template <class V>
inline void write_record(const u64* a, i64 l, i64 n, const MeasureLayout& y,
                         const MeasureColumns& out) {
    constexpr bool has_values = !std::is_same_v<V, NoValue>;
    const bool seen = a[0] != 0;
    const int nd = y.ndim, np = y.nper;
    out.count[l] = i64(a[0]);
    if (out.first) out.first[l] = seen ? i64(a[y.first]) : n;
    if (out.lo)
        for (int d = 0; d < nd; ++d) {
            out.lo[l * nd + d] = seen ? i64(~a[y.lo + d]) : n;
            out.hi[l * nd + d] = i64(a[y.hi + d]) - 1;
        }
    if (out.csum)
        for (int d = 0; d < nd; ++d) out.csum[l * nd + d] = double(a[y.csum + d]);
    if (out.cos)
        for (int j = 0; j < np; ++j) {
            out.cos[l * np + j] = word_double(a[y.cos + j]);
            out.sin[l * np + j] = word_double(a[y.sin + j]);
        }
    if constexpr (has_values) {
        static_cast<V*>(out.imin)[l] = seen ? word_value<V>(a[y.vmin]) : V(0);
        static_cast<V*>(out.imax)[l] = seen ? word_value<V>(a[y.vmax]) : V(0);
        out.isum[l] = word_double(a[y.isum]);
        out.iabs[l] = word_double(a[y.iabs]);
        for (int d = 0; d < nd; ++d) out.wsum[l * nd + d] = word_double(a[y.wsum + d]);
        for (int j = 0; j < np; ++j) {
            out.wcos[l * np + j] = word_double(a[y.wcos + j]);
            out.wsin[l * np + j] = word_double(a[y.wsin + j]);
        }
    }
}

// The whole table; returns the threads used.
template <class L, class V>
int measure_table(const L* lab, const V* val, const MeasureGeometry& g, i64 rows, bool first,
                  bool boxes, bool sums, int threads, i64 min_cells, const MeasureColumns& out) {
    constexpr bool has_values = !std::is_same_v<V, NoValue>;
    const MeasureLayout y(g.ndim, g.nper, first, boxes, sums, has_values);
    const int T = cpu_api::measure_threads(threads, g.n, g.R, rows, min_cells);
    const std::size_t words = std::size_t(rows) * std::size_t(y.stride);
    std::vector<std::unique_ptr<ZeroWords>> tables;
    for (int t = 0; t < T; ++t) tables.emplace_back(new ZeroWords(i64(words)));
    std::vector<char> fits(T, 1);
    on_threads(T, [&](int t) {
        const i64 r0 = g.R * t / T, r1 = g.R * (t + 1) / T;
        u64* table = tables[t]->p;
        if constexpr (has_values) {
            fits[t] = measure_rows<0, L, V>(lab, val, g, y, table, r0, r1);
        } else {
            switch (g.ndim) {
                case 1: fits[t] = measure_rows<1, L, V>(lab, val, g, y, table, r0, r1); break;
                case 2: fits[t] = measure_rows<2, L, V>(lab, val, g, y, table, r0, r1); break;
                case 3: fits[t] = measure_rows<3, L, V>(lab, val, g, y, table, r0, r1); break;
                case 4: fits[t] = measure_rows<4, L, V>(lab, val, g, y, table, r0, r1); break;
                default: fits[t] = measure_rows<0, L, V>(lab, val, g, y, table, r0, r1);
            }
        }
    });
    if (std::count(fits.begin(), fits.end(), 0))
        throw std::invalid_argument("measure_table: a label is not below rows");
    // merge (in slab order) and write, threads on ranges of labels
    const int M = int(std::max<i64>(1, std::min<i64>(T, rows / 4096)));
    on_threads(M, [&](int m) {
        const i64 a = rows * m / M, b = rows * (m + 1) / M;
        u64* acc = tables[0]->p;
        for (i64 l = a; l < b; ++l) {
            u64* rec = acc + std::size_t(l) * y.stride;
            for (int t = 1; t < T; ++t)
                merge_record<V>(rec, tables[t]->p + std::size_t(l) * y.stride, y);
            write_record<V>(rec, l, g.n, y, out);
        }
    });
    return T;
}

}  // namespace MESHCCL_CPU_NS
}  // namespace meshccl
