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
// box and extremes, later runs widen them.  The table is the output itself
// -- the caller's NumPy arrays, zeroed (np.zeros: fresh pages that the
// system zeroes as they are first written; `first` filled with n) -- so a
// serial call allocates nothing.  One pass over the table follows the
// image and finishes it in place: coordinate sums become means, labels
// without cells get the box (0, -1) and NaN means.  It reads only the
// count of a label of one cell (its sums are its coordinates), 8 bytes a
// label against the 56 the scan writes (2-D); and a serial scan that saw
// every label and listed the few of more than one cell (under one in 64)
// finishes only those.  With millions of one-cell labels the 56 bytes a
// label -- int64 count and box, float64 sums, the types users get -- bound
// the call: writing fresh pages is most of its time.
//
// Threads.  The rows are cut into T slabs of consecutive rows, one per
// thread.  A slab *owns* the labels above every label of the slabs before
// it (a first pass, all threads reading, finds the largest label of the
// slabs before each): no other slab's runs can reach them first, so the
// slab writes their entries in the output directly.  Runs of the other
// labels go to the slab's private table
// (zeroed pages mapped lazily: only the entries written cost memory), each
// such label listed when its private entry is first written; a last pass
// merges the listed entries into the output in slab order, threads owning
// ranges of labels, and finishes those ranges.  With labels numbered in
// raster order of first cells (meshccl.label's, skimage's, cc3d's), a
// slab owns the labels that start in it, and its private entries are the
// few labels that cross its first row -- so even one-cell labels scan on
// every thread.  Where the labels are few (under one per 64 cells a
// private table: no pass to find the slabs' largest labels) or the slabs
// own little (labels in no raster order, or large labels: some slab after
// the first owns under a quarter of an even split of the label values), every
// slab but the first writes privately into tables as large as the output,
// and T is cut to c * T * rows <= n (c = cells_per_entry, 16: the private
// tables together hold at most one entry per 16 cells of the image), as
// those tables cost fresh pages and a merge of every entry.  T is also cut to at least min_cells cells and one
// row per slab.  A shared table updated with atomics would need an atomic
// per run (and compare-and-swap loops for float extremes); owning keeps
// one exact, atomic-free code path.
//
// Integer columns do not depend on how the rows are cut.  Floating-point
// sums are added in a fixed order -- along the rows within a slab, then
// slab after slab (a label's owning slab is the first that holds it) -- so
// a call is deterministic; sums of integers (coordinates, integer
// intensities) are exact below 2**53 and so identical for any T, while
// sums of float intensities and circular sums may differ between thread
// counts in the last bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
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
    // huge: huge pages (for a table written densely); else small pages, so
    // that a table touched at a few scattered entries costs a few pages
    ZeroWords(i64 words, bool huge)
        : bytes(sizeof(u64) * std::size_t(std::max<i64>(words, 1))) {
#if defined(__linux__)
        if (bytes >= (std::size_t(4) << 20)) {
            void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (m == MAP_FAILED) throw std::bad_alloc();
            madvise(m, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
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
        unsigned eq;
        if constexpr (sizeof(L) <= 4) {
            eq = equal16(a + t, b + t);
        } else {  // 64-bit lanes: equal where both 32-bit halves are
            const __m128i* p = reinterpret_cast<const __m128i*>(a + t);
            const __m128i* q = reinterpret_cast<const __m128i*>(b + t);
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
Table<V> private_table(const Table<V>& like, i64 rows, int nd, int np, bool dense,
                       std::vector<std::unique_ptr<ZeroWords>>& keep) {
    i64 words = 0;
    auto need = [&](const void* p, i64 w) { if (p) words += w; };
    need(like.count, rows); need(like.first, rows); need(like.box, 2 * rows * nd);
    need(like.csum, rows * nd); need(like.cos, 2 * rows * np); need(like.isum, 2 * rows);
    need(like.wsum, rows * nd); need(like.wcos, 2 * rows * np); need(like.vmin, 2 * rows);
    keep.emplace_back(new ZeroWords(words, dense));
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

// Where a slab's runs go: labels at or above `own` to the output, the
// others to the slab's private table, each listed in `touched` when its
// entry is first written there; `fits`: every label was below rows.
// The first slab also counts the labels it sees (`fresh`) and lists those
// that reach more than one cell (`multi`), up to `multi_cap` of them: a
// serial scan that saw every label and listed them all needs to finish
// only the listed ones.
template <class V>
struct SlabTables {
    Table<V> out, priv;
    u64 own = 0;
    std::vector<u64> touched;
    bool fits = true;
    u64 fresh = 0;
    std::vector<u64> multi;
    std::size_t multi_cap = 0;
    bool listed = true;
};

// Scan rows [r0, r1) into the slab's tables (runs of labels not below
// g.rows are skipped).  ND: the number of axes when it is known at compile
// time (1 to 4, without an intensity), else 0.  Split: runs may go to the
// private table (a slab after the first); else all go to the output.
template <int ND, bool Split, class L, class V>
void measure_rows(const L* lab, const V* val, const MeasureGeometry& g, SlabTables<V>& slab,
                  i64 r0, i64 r1) {
    constexpr bool has_values = !std::is_same_v<V, NoValue>;
    if (r0 >= r1) return;
    bool fits = true;
    const int nd = ND ? ND : g.ndim;
    const int last = nd - 1;  // -1 in 0-d: a single cell, no coordinates
    const i64 W = g.W, rows = g.rows;
    const int nper = g.nper;
    const u64 own = slab.own;
    const Table<V> out = slab.out;
    u64* const out_count = out.count;
    u64* const out_first = out.first;
    i64* const out_box = nd ? out.box : nullptr;
    double* const out_csum = nd ? out.csum : nullptr;
    std::vector<u64>& touched = slab.touched;
    std::vector<u64>& multi = slab.multi;
    u64 fresh = 0;
    bool listed = slab.listed;
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
            const bool mine = !Split || u64(l) >= own;
            const Table<V>& t = mine ? out : slab.priv;
            u64* const count = mine ? out_count : t.count;
            u64* const first = mine ? out_first : t.first;
            i64* const box = mine ? out_box : nd ? t.box : nullptr;
            double* const csum = mine ? out_csum : nd ? t.csum : nullptr;
            const std::size_t i = std::size_t(l);
            const u64 seen = count[i];
            count[i] = seen + u64(len);
            if (!seen && !mine) touched.push_back(u64(l));
            if constexpr (!Split) {
                fresh += !seen;
                // (`listed` first: once the list is given up, a branch
                // that is never taken)
                if (listed && seen <= 1 && seen + u64(len) > 1) {
                    listed = multi.size() < slab.multi_cap;
                    if (listed) multi.push_back(u64(l));
                }
            }
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
    slab.fits = fits;
    slab.fresh += fresh;
    slab.listed = listed;
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

// Finish labels [a, b) of the output: labels without cells get the box
// (0, -1) on every axis and NaN coordinate means; the others' coordinate
// sums become means.  Labels go 8 at a time (a cache line of counts): 8
// labels of one cell each are left as they are (their sums are their
// coordinates), so only the counts are read there; otherwise each sum is
// divided (x / 1 is x), the one branch per label the rare count 0.
// Returns the labels without cells.
inline i64 finish_labels(const MeasureColumns& o, int nd, i64 a, i64 b) {
    i64 empty = 0;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    constexpr i64 K = 8;
    for (i64 k = a; k < b; k += K) {
        const i64 e = std::min(b, k + K);
        bool ones = true;
        for (i64 i = k; i < e; ++i) ones &= o.count[i] == 1;
        if (ones) continue;
        for (i64 i = k; i < e; ++i) {
            const i64 c = o.count[i];
            if (c == 0) {
                ++empty;
                if (o.box)
                    for (int d = 0; d < nd; ++d) o.box[2 * (i * nd + d) + 1] = -1;
                if (o.csum)
                    for (int d = 0; d < nd; ++d) o.csum[i * nd + d] = nan;
            } else if (o.csum) {
                const double f = double(c);
                for (int d = 0; d < nd; ++d) o.csum[i * nd + d] /= f;
            }
        }
    }
    return empty;
}

// measure_rows with the number of axes known at compile time where it can be.
template <bool Split, class L, class V>
void scan_slab(const L* lab, const V* val, const MeasureGeometry& g, SlabTables<V>& slab,
               i64 r0, i64 r1) {
    if constexpr (!std::is_same_v<V, NoValue>) {
        measure_rows<0, Split, L, V>(lab, val, g, slab, r0, r1);
    } else {
        switch (g.ndim) {
            case 1: measure_rows<1, Split, L, V>(lab, val, g, slab, r0, r1); break;
            case 2: measure_rows<2, Split, L, V>(lab, val, g, slab, r0, r1); break;
            case 3: measure_rows<3, Split, L, V>(lab, val, g, slab, r0, r1); break;
            case 4: measure_rows<4, Split, L, V>(lab, val, g, slab, r0, r1); break;
            default: measure_rows<0, Split, L, V>(lab, val, g, slab, r0, r1);
        }
    }
}

// What measure_table did: the threads it scanned on, and the labels below
// rows without cells.
struct MeasureDone {
    int threads;
    i64 empty;
};

// A slab owns the labels above every label of the slabs before it (with
// labels numbered in raster order of first cells, those that start in it).
// Owning is taken when each slab after the first owns at least 1 / this of
// an even split of the labels' values (from the smallest but 0 to the
// largest); else a slab would send most of its labels to its private
// table.
constexpr i64 measure_own_share = 4;
// Fewer labels than one per this many cells a private table: private
// tables as large as the output are small, and finding the slabs' largest
// labels (a pass over the labels) would cost more than they do.
constexpr i64 measure_own_cells = 64;

// The whole table, finished (finish_labels).
template <class L, class V>
MeasureDone measure_table(const L* lab, const V* val, const MeasureGeometry& g, i64 rows,
                          int threads, i64 min_cells, i64 cells_per_entry,
                          const MeasureColumns& out) {
    const int nd = g.ndim, np = g.nper;
    const int requested = std::max(threads, 1);
    // slabs when they own their labels (no limit from the table's size),
    // tried where private tables as large as the output would hold an
    // entry per measure_own_cells cells or more ...
    int T = cpu_api::measure_threads(requested, g.n, g.R, 1, min_cells, cells_per_entry);
    std::vector<u64> own(std::max(T, 1), 0);
    bool owning = false;
    if (T > 1 && (T - 1) * rows * measure_own_cells >= g.n) {
        // the largest label of each slab but the last (the last's is below
        // rows) and about the smallest label but 0 (the background's) of
        // them, each slab read by all threads, a T-th each
        std::vector<u64> part(std::size_t(T) * T, 0), low(T, ~u64(0));
        on_threads(T, [&](int j) {
            u64 lo_ = ~u64(0);
            for (int t = 0; t + 1 < T; ++t) {
                const i64 a = g.R * t / T * g.W, b = g.R * (t + 1) / T * g.W;
                const i64 lo = a + (b - a) * j / T, hi = a + (b - a) * (j + 1) / T;
                u64 m = 0;
                for (i64 k = lo; k < hi; ++k) m = std::max(m, u64(lab[k]));
                part[std::size_t(t) * T + j] = m;
                // (the smallest from a sample: it only sets the share)
                for (i64 k = lo; k < hi; k += 61)
                    if (lab[k]) lo_ = std::min(lo_, u64(lab[k]));
            }
            low[j] = lo_;
        });
        // the largest label of the slabs up to each (a label past the table
        // fails the scan), and whether each slab after the first owns its
        // share of the labels' values (from the smallest to rows - 1)
        const u64 least = std::min(*std::min_element(low.begin(), low.end()), u64(rows - 1));
        const u64 share = u64(measure_own_share) * u64(T);
        const u64 enough = (u64(rows - 1) - least + share - 1) / share;
        owning = true;
        u64 before = 0;
        for (int t = 0; t < T && owning; ++t) {
            u64 upto = u64(rows - 1);
            if (t + 1 < T) {
                upto = before;
                for (int j = 0; j < T; ++j) upto = std::max(upto, part[std::size_t(t) * T + j]);
                upto = std::min(upto, u64(rows - 1));
            }
            if (t) {
                owning = upto - before >= enough;
                own[t] = before + 1;
            }
            before = upto;
        }
    }
    if (!owning) {
        // ... else private tables as large as the output: fewer slabs
        T = cpu_api::measure_threads(requested, g.n, g.R, rows, min_cells, cells_per_entry);
        for (int t = 1; t < T; ++t) own[t] = u64(rows);
    }
    const Table<V> table0 = output_table<V>(out);
    std::vector<SlabTables<V>> slabs(T);
    std::vector<std::unique_ptr<ZeroWords>> keep;
    for (int t = 0; t < T; ++t) {
        slabs[t].out = table0;
        slabs[t].own = own[t];
        slabs[t].multi_cap = std::size_t(rows / 64);
        if (t) slabs[t].priv = private_table(table0, rows, nd, np, !owning, keep);
    }
    on_threads(T, [&](int t) {
        const i64 r0 = g.R * t / T, r1 = g.R * (t + 1) / T;
        SlabTables<V>& slab = slabs[t];
        if (t) scan_slab<true, L, V>(lab, val, g, slab, r0, r1);
        else scan_slab<false, L, V>(lab, val, g, slab, r0, r1);
    });
    for (const SlabTables<V>& s : slabs)
        if (!s.fits) throw std::invalid_argument("measure_table: a label is not below rows");
    const bool finish = out.box || out.csum || out.imin;
    if (T == 1 && slabs[0].listed && slabs[0].fresh == u64(rows)) {
        // every label seen, those of more than one cell listed: no label
        // without cells, and only the listed sums to divide
        if (finish)
            for (const u64 i : slabs[0].multi) finish_labels(out, nd, i64(i), i64(i) + 1);
        return MeasureDone{T, 0};
    }
    // merge the private entries into the output, slab after slab, threads
    // on ranges of labels; then finish each range
    const int M = int(std::max<i64>(1, std::min<i64>(requested, rows / 65536)));
    std::vector<i64> empty(M, 0);
    on_threads(M, [&](int m) {
        const u64 a = u64(rows * m / M), b = u64(rows * (m + 1) / M);
        for (int t = 1; t < T; ++t)
            for (const u64 i : slabs[t].touched)
                if (i >= a && i < b) merge_label(table0, slabs[t].priv, std::size_t(i), nd, np);
        if (finish) empty[m] = finish_labels(out, nd, i64(a), i64(b));
    });
    i64 none = 0;
    for (const i64 e : empty) none += e;
    return MeasureDone{T, none};
}

}  // namespace MESHCCL_CPU_NS
}  // namespace meshccl
