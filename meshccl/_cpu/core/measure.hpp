// Per-label tables of a label image on the CPU, for meshccl.measure: each
// label's cell count, first cell, bounding box, coordinate sums, circular
// sums of periodic axes and, with an intensity image, the intensity's sum,
// sum of magnitudes, extremes and intensity-weighted coordinate and circular
// sums -- every requested column in one pass over the labels (and the
// intensity).
//
// The image is a C-ordered raster seen as rows of W cells (the last axis).
// The pass walks it row by row and cuts each row into *runs*: maximal
// stretches of one label.  A run [b, e] of label l updates l's entries of
// the table once:
//
//         row  r:  0 0 0 7 7 7 7 0 0 ...
//                        b     e          count += e - b + 1
//                                         box of the last axis: b .. e
//                                         sum of the last coordinate:
//                                           (b + e) (e - b + 1) / 2
//
// The coordinates of the other axes are the row's, the same for every run
// of the row: they are stepped once per row (an odometer), never divided
// out of a cell index.  Counts, first cells and boxes are integers; the
// coordinate sums are integers added in float64, exact below 2**53.  The
// intensity differs from cell to cell, so a run reduces its values first
// (sum, sum of magnitudes, sum weighted by the last coordinate, extremes)
// and then adds those to the label; the weighted sums of the other axes are
// the row's coordinate times the run's sum.  Circular sums (cos, sin of
// 2 pi c / n) come from a table per periodic axis: len * cos of the row's
// coordinate, or a loop over the run on the last axis.  Extremes propagate
// NaN as NumPy's minimum / maximum do.
//
// Finding the runs: a row is compared with itself shifted by one cell, 16
// labels a vector compare, into a 64-bit mask of the cells that start a run;
// the runs are walked with count-trailing-zeros.  A loop that stepped along
// each run would mispredict its exit once a run, and runs are 2 cells long
// on average in a percolation image.
//
// A table is a set of columns indexed by label, those the call asks for:
// counts, first cells and boxes as 64-bit integers (each label's box as
// (lo, hi) per axis side by side: one cache line in 2-D and 3-D, and
// cc3d's layout), sums as doubles, extremes in the intensity's type.  The
// count doubles as a "seen" flag: a label's first run sets its first cell,
// box and extremes, later runs widen them.  The first thread's table is the
// output itself -- the caller's NumPy arrays, zeroed (np.zeros: fresh pages
// that the system zeroes as they are first written; `first` filled with
// n) -- so a serial call allocates nothing and makes no pass over the table
// after the image; entries of labels with no cells stay as they came.
//
// Threads.  The rows are cut into T slabs of consecutive rows, one per
// thread; the first scans into the output, the others into private tables
// (zeroed fresh pages); a last pass merges the T entries of each label in
// slab order (threads own ranges of labels there).  Integer columns do not
// depend on how the rows are cut.  Floating-point sums are added in a fixed
// order -- along the rows within a slab, then slab after slab -- so a call
// is deterministic; sums of integers (coordinates, integer intensities)
// are exact below 2**53 and so identical for any T, while sums of float
// intensities and circular sums may differ between thread counts in the
// last bits.
//
// When the labels are many, private tables cost more than they save: each
// is as large as the output, fresh pages to fault in, and the merge reads
// all of them -- an entry costs about what the scan of a dozen cells does.
// So T is cut to c * T * rows <= n (c = cells_per_entry, 16: the private
// tables together hold at most one entry per 16 cells of the image), and
// to at least min_cells cells and one row per slab; an image of one-cell
// labels (rows = n + 1), or of labels of under 32 cells on average, is
// scanned by one thread.  A shared table updated with atomics would keep
// all threads busy there, but every run would pay an atomic (and labels
// next to each other across a seam would contend), and extremes of floats
// need compare-and-swap loops; cutting T keeps one exact, atomic-free code
// path.  The merge reads a slab's table only between the smallest and the
// largest label the slab saw: with labels numbered in raster order (as
// meshccl.label's), mostly the slab's own share of them.
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

// The output columns (zeroed NumPy arrays from the caller; null where not
// wanted).
struct MeasureColumns {
    i64* count;
    i64* first;
    i64* box;  // rows x ndim x (lo, hi)
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

// A zeroed array of words for a private table: fresh pages from the system
// for large ones, huge pages where Linux gives them.
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
            eq = unsigned(
                _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(p), _mm_loadu_si128(q))));
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

// One table's columns (null where not asked for).
template <class V>
struct Table {
    u64 *count = nullptr, *first = nullptr;
    i64* box = nullptr;
    double *csum = nullptr, *cos = nullptr, *sin = nullptr, *isum = nullptr, *iabs = nullptr,
           *wsum = nullptr, *wcos = nullptr, *wsin = nullptr;
    V *vmin = nullptr, *vmax = nullptr;
};

// The output as the first table (its integer columns reused as words).
template <class V>
Table<V> output_table(const MeasureColumns& o) {
    Table<V> t;
    t.count = reinterpret_cast<u64*>(o.count);
    t.first = reinterpret_cast<u64*>(o.first);
    t.box = o.box;
    t.csum = o.csum;
    t.cos = o.cos;
    t.sin = o.sin;
    t.isum = o.isum;
    t.iabs = o.iabs;
    t.wsum = o.wsum;
    t.wcos = o.wcos;
    t.wsin = o.wsin;
    t.vmin = static_cast<V*>(o.imin);
    t.vmax = static_cast<V*>(o.imax);
    return t;
}

// A private table with the columns of `like`, carved out of zeroed words.
template <class V>
Table<V> private_table(const Table<V>& like, i64 rows, int nd, int np,
                       std::vector<std::unique_ptr<ZeroWords>>& keep) {
    i64 words = 0;
    auto need = [&](const void* p, i64 w) { if (p) words += w; };
    need(like.count, rows); need(like.first, rows); need(like.box, 2 * rows * nd);
    need(like.csum, rows * nd); need(like.cos, 2 * rows * np); need(like.isum, 2 * rows);
    need(like.wsum, rows * nd); need(like.wcos, 2 * rows * np); need(like.vmin, 2 * rows);
    keep.emplace_back(new ZeroWords(words));
    u64* at = keep.back()->p;
    auto take = [&](const void* p, i64 w) {
        u64* q = p ? at : nullptr;
        if (p) at += w;
        return q;
    };
    Table<V> t;
    t.count = take(like.count, rows);
    t.first = take(like.first, rows);
    t.box = reinterpret_cast<i64*>(take(like.box, 2 * rows * nd));
    t.csum = reinterpret_cast<double*>(take(like.csum, rows * nd));
    t.cos = reinterpret_cast<double*>(take(like.cos, rows * np));
    t.sin = reinterpret_cast<double*>(take(like.sin, rows * np));
    t.isum = reinterpret_cast<double*>(take(like.isum, rows));
    t.iabs = reinterpret_cast<double*>(take(like.iabs, rows));
    t.wsum = reinterpret_cast<double*>(take(like.wsum, rows * nd));
    t.wcos = reinterpret_cast<double*>(take(like.wcos, rows * np));
    t.wsin = reinterpret_cast<double*>(take(like.wsin, rows * np));
    t.vmin = reinterpret_cast<V*>(take(like.vmin, rows));
    t.vmax = reinterpret_cast<V*>(take(like.vmax, rows));
    return t;
}

// What a slab's scan saw: the smallest and largest label (the entries of
// its table that the merge reads), and whether every label was below rows.
struct SlabLabels {
    u64 lmin = ~u64(0), lmax = 0;
    bool fits = true;
};

// Scan rows [r0, r1) into table t (runs of labels not below g.rows are
// skipped).  ND: the number of axes when it is known at compile time (1 to
// 4, without an intensity), else 0.
template <int ND, class L, class V>
SlabLabels measure_rows(const L* lab, const V* val, const MeasureGeometry& g, const Table<V> t,
                        i64 r0, i64 r1) {
    constexpr bool has_values = !std::is_same_v<V, NoValue>;
    SlabLabels seen_labels;
    if (r0 >= r1) return seen_labels;
    bool fits = true;
    u64 lmin = ~u64(0), lmax = 0;
    const int nd = ND ? ND : g.ndim;
    const int last = nd - 1;  // -1 in 0-d: a single cell, no coordinates
    const i64 W = g.W, rows = g.rows;
    const int nper = g.nper;
    u64* const count = t.count;
    u64* const first = t.first;
    i64* const box = nd ? t.box : nullptr;
    double* const csum = nd ? t.csum : nullptr;
    // the row's coordinates (axes 0 .. nd - 2)
    std::vector<i64> rc_(std::max(nd, 1), 0);
    i64* rc = rc_.data();
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
        for (int j = 0; j < nper; ++j) {
            if (j == last_j) continue;
            const i64 c = rc[g.axes[j]];
            row_cos[j] = g.cos_of[g.offsets[j] + c];
            row_sin[j] = g.sin_of[g.offsets[j] + c];
        }
        // run [b, e] of label l: one update of l's entries
        auto run = [&](i64 b, i64 e, L l) MESHCCL_INLINE {
            const i64 len = e - b + 1;
            if (u64(l) >= u64(rows)) {
                fits = false;
                return;
            }
            lmin = std::min(lmin, u64(l));
            lmax = std::max(lmax, u64(l));
            const std::size_t i = std::size_t(l);
            const u64 seen = count[i];
            count[i] = seen + u64(len);
            if (first) first[i] = seen ? first[i] : u64(base + b);
            if (box) {
                i64* x_ = box + 2 * i * nd;
                if (!seen) {
                    for (int d = 0; d < last; ++d) x_[2 * d] = x_[2 * d + 1] = rc[d];
                    x_[2 * last] = b;
                    x_[2 * last + 1] = e;
                } else {
                    for (int d = 0; d < last; ++d) {
                        x_[2 * d] = std::min(x_[2 * d], rc[d]);
                        x_[2 * d + 1] = std::max(x_[2 * d + 1], rc[d]);
                    }
                    x_[2 * last] = std::min(x_[2 * last], b);
                    x_[2 * last + 1] = std::max(x_[2 * last + 1], e);
                }
            }
            if (csum) {  // (integers: exact below 2**53)
                double* c_ = csum + i * nd;
                for (int d = 0; d < last; ++d) c_[d] += double(rc[d]) * double(len);
                // (in doubles: exact below 2**53, and no int64 product of
                // two cell indices to overflow)
                c_[last] += double(b + e) * double(len) * 0.5;
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
                    t.cos[i * nper + j] += c;
                    t.sin[i * nper + j] += s;
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
                t.vmin[i] = seen ? least(t.vmin[i], mn) : mn;
                t.vmax[i] = seen ? most(t.vmax[i], mx) : mx;
                t.isum[i] += s;
                t.iabs[i] += sa;
                if (nd) {
                    double* w_ = t.wsum + i * nd;
                    for (int d = 0; d < last; ++d) w_[d] += double(rc[d]) * s;
                    w_[last] += sx;
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
                    t.wcos[i * nper + j] += c;
                    t.wsin[i * nper + j] += sn;
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
    seen_labels.lmin = lmin;
    seen_labels.lmax = lmax;
    seen_labels.fits = fits;
    return seen_labels;
}

// Fold label i of table s into table a: s's cells come after a's in
// raster order.
template <class V>
inline void merge_label(const Table<V>& a, const Table<V>& s, std::size_t i, int nd, int np) {
    const u64 sc = s.count[i];
    if (!sc) return;
    const bool seen = a.count[i] != 0;
    a.count[i] += sc;
    if (a.first && !seen) a.first[i] = s.first[i];
    if (a.box)
        for (int d = 0; d < nd; ++d) {
            i64* x = a.box + 2 * (i * nd + d);
            const i64* y = s.box + 2 * (i * nd + d);
            x[0] = seen ? std::min(x[0], y[0]) : y[0];
            x[1] = seen ? std::max(x[1], y[1]) : y[1];
        }
    if (a.csum)
        for (int d = 0; d < nd; ++d) a.csum[i * nd + d] += s.csum[i * nd + d];
    if (a.cos)
        for (int j = 0; j < np; ++j) {
            a.cos[i * np + j] += s.cos[i * np + j];
            a.sin[i * np + j] += s.sin[i * np + j];
        }
    if constexpr (!std::is_same_v<V, NoValue>) {
        a.vmin[i] = seen ? least(a.vmin[i], s.vmin[i]) : s.vmin[i];
        a.vmax[i] = seen ? most(a.vmax[i], s.vmax[i]) : s.vmax[i];
        a.isum[i] += s.isum[i];
        a.iabs[i] += s.iabs[i];
        for (int d = 0; d < nd; ++d) a.wsum[i * nd + d] += s.wsum[i * nd + d];
        for (int j = 0; j < np; ++j) {
            a.wcos[i * np + j] += s.wcos[i * np + j];
            a.wsin[i * np + j] += s.wsin[i * np + j];
        }
    }
}

// The whole table; returns the threads used.
template <class L, class V>
int measure_table(const L* lab, const V* val, const MeasureGeometry& g, i64 rows, int threads,
                  i64 min_cells, i64 cells_per_entry, const MeasureColumns& out) {
    const int nd = g.ndim, np = g.nper;
    const int T = cpu_api::measure_threads(threads, g.n, g.R, rows, min_cells,
                                           cells_per_entry);
    std::vector<Table<V>> tables{output_table<V>(out)};
    std::vector<std::unique_ptr<ZeroWords>> keep;
    for (int t = 1; t < T; ++t) tables.push_back(private_table(tables[0], rows, nd, np, keep));
    std::vector<SlabLabels> fits(T);
    on_threads(T, [&](int t) {
        const i64 r0 = g.R * t / T, r1 = g.R * (t + 1) / T;
        const Table<V>& tab = tables[t];
        if constexpr (!std::is_same_v<V, NoValue>) {
            fits[t] = measure_rows<0, L, V>(lab, val, g, tab, r0, r1);
        } else {
            switch (g.ndim) {
                case 1: fits[t] = measure_rows<1, L, V>(lab, val, g, tab, r0, r1); break;
                case 2: fits[t] = measure_rows<2, L, V>(lab, val, g, tab, r0, r1); break;
                case 3: fits[t] = measure_rows<3, L, V>(lab, val, g, tab, r0, r1); break;
                case 4: fits[t] = measure_rows<4, L, V>(lab, val, g, tab, r0, r1); break;
                default: fits[t] = measure_rows<0, L, V>(lab, val, g, tab, r0, r1);
            }
        }
    });
    for (const SlabLabels& f : fits)
        if (!f.fits) throw std::invalid_argument("measure_table: a label is not below rows");
    // merge, in slab order, threads on ranges of labels; a slab's table
    // only over the labels it saw
    if (T < 2) return T;
    const int M = int(std::max<i64>(1, std::min<i64>(T, rows / 4096)));
    on_threads(M, [&](int m) {
        const u64 a = u64(rows * m / M), b = u64(rows * (m + 1) / M);
        for (int t = 1; t < T; ++t) {
            const u64 end = std::min(b, fits[t].lmax + 1);
            for (u64 i = std::max(a, fits[t].lmin); i < end; ++i)
                merge_label(tables[0], tables[t], std::size_t(i), nd, np);
        }
    });
    return T;
}

}  // namespace MESHCCL_CPU_NS
}  // namespace meshccl
