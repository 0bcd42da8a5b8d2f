// Per-cell labelling of general lattices on the CPU: masks, bond flags, a
// tolerance, periodic axes and labelling along some axes only (axes=).
//
// Every foreground cell starts as its own tree in a forest P of cell indices
// (background cells hold -1); the cells are visited in raster order and each
// is united (meshccl/_kernels/core/unionfind.h) with the neighbours it joins
// among those of the half-neighbourhood table (cells before it, plus the
// wrapped ones of periodic axes).  Roots are the smallest index of their
// set, so the forest numbered in index order (relabel_into) gives every
// component the rank of its first cell: skimage's numbering.
//
// Whether two neighbours join: their values are equal (or within the
// tolerance), neither is masked out, and their bond is open.  With equal
// values and no bond flags the relation is transitive, so unions implied by
// the left neighbour are skipped (the "covered" offsets and twin pairs of
// the table, as on the GPU); a run of cells equal to its left neighbour
// extends that cell's tree by a store instead of a union.
//
// Which table rows exist for a row of cells depends only on the row's place
// along the leading axes, computed once a row; along the row only its first
// and last cells need the last axis checked.
//
// On threads (label_lattice_chunks), chunks of rows are labelled at once,
// each uniting only pairs inside it (so threads never share a tree); then the
// first rows of each chunk are united with the cells before it, serially, and
// the roots numbered per chunk after a prefix sum of their counts.  Periodic
// lattices run serially: a wrapped pair can join any two chunks.
//
// With counts the pass that writes the final labels also counts each label's
// cells (serially as it writes them; on threads each chunk adds plainly to
// the labels rooted in it, and by runs, atomically, to those rooted in
// earlier chunks).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "image.hpp"
#include "unionfind.h"

namespace meshccl {
namespace MESHCCL_CPU_NS {

// The join test of a lattice problem.  Cmp: equal keys (Equal) or keys
// within a tolerance (CloseInt: unsigned keys, the difference taken exactly;
// CloseFloat).  Mask and Bonds are compile-time switches, so the per-cell
// loop carries no test of a feature that is off.
template <class K>
struct Equal {
    using Key = K;
    static constexpr bool tol = false;
    bool operator()(K a, K b) const { return a == b; }
};
struct CloseInt {
    using Key = std::uint64_t;
    static constexpr bool tol = true;
    std::uint64_t t;
    bool operator()(std::uint64_t a, std::uint64_t b) const { return (a >= b ? a - b : b - a) <= t; }
};
struct CloseFloat {
    using Key = double;
    static constexpr bool tol = true;
    double t;
    bool operator()(double a, double b) const { return std::fabs(a - b) <= t; }
};

struct LatticeInput {
    const std::uint8_t* mask;   // n cells, 0 = background (null: no mask)
    const std::uint8_t* bonds;  // (rows, n), 0 = closed (null: no bonds)
    const i64* brow;            // the bonds row of each table row, then of the left neighbour
    i64 periodic;               // bit k: axis k wraps
    bool no_left;               // the last axis is not labelled along
    bool has_bg;
};

template <class Cmp, bool Mask, bool Bonds, class I>
struct Lattice {
    using K = typename Cmp::Key;
    const K* values;
    I* P;
    i64 n;
    Geometry g;
    Cmp cmp;
    LatticeInput in;
    K bg;

    // Whether foreground cell i joins its neighbour j through table row `row`
    // (noff: the left neighbour); the pair's bond is stored at cell `at`, the
    // one the row's offset starts from (i itself in the half-table scan).
    bool joins(i64 i, i64 j, int row, i64 at) const {
        if (!cmp(values[i], values[j])) return false;
        if (Bonds && in.bonds[in.brow[row] * n + at] == 0) return false;
        if (Mask || Cmp::tol) return P[j] >= 0;  // background by mask, or by value within the tolerance
        return true;  // (an equal value is foreground like cell i)
    }
    bool joins(i64 i, i64 j, int row) const { return joins(i, j, row, i); }

    // Cells lo..hi-1: their own tree, or -1 for background (value or mask).
    void init(i64 lo, i64 hi) {
        for (i64 i = lo; i < hi; ++i) {
            bool b = in.has_bg && values[i] == bg;
            if (Mask) b = b || in.mask[i] == 0;
            P[i] = b ? I(-1) : I(i);
        }
    }

    // Unite the cells of rows row_lo..row_hi-1 with the neighbours they join
    // whose index lies in [jlo, jhi).
    void rows(i64 periodic, i64 row_lo, i64 row_hi, i64 jlo, i64 jhi) {
        const int ndim = g.ndim, noff = g.noff, last = ndim - 1;
        const i64 lastbit = i64(1) << last;
        const i64 W = g.shape[last];
        const bool rules = !Cmp::tol && !Bonds;
        std::vector<i64> span(ndim), dlast(noff), rws(noff), shift(noff);
        std::vector<char> wraps(noff);
        i64 stride = 1;
        for (int k = ndim - 1; k >= 0; --k) {
            span[k] = stride * g.shape[k];
            stride = span[k];
        }
        for (int o = 0; o < noff; ++o) {
            const i64* t = g.table + 4 * o;
            dlast[o] = ((t[1] >> last) & 1) ? -1 : ((t[2] >> last) & 1);
        }
        RowWalk walk(g.shape, ndim);
        i64 rem = row_lo;
        for (int k = last - 1; k >= 0; --k) {
            walk.coords[k] = rem % g.shape[k];
            rem /= g.shape[k];
        }
        for (i64 row = row_lo; row < row_hi; ++row) {
            i64 lo, hi;
            walk.masks(lo, hi);
            int cnt = 0;
            for (int o = 0; o < noff; ++o) {
                const i64* t = g.table + 4 * o;
                const i64 out_lo = lo & t[1], out_hi = hi & t[2];
                if ((out_lo | out_hi) & ~periodic) continue;  // off a non-periodic edge
                i64 s = 0;
                for (int k = 0; k < last; ++k) {
                    if ((out_lo >> k) & 1) s += span[k];
                    if ((out_hi >> k) & 1) s -= span[k];
                }
                rws[cnt] = o;
                shift[cnt] = s;
                wraps[cnt] = (out_lo | out_hi) != 0;
                ++cnt;
            }
            const i64 base = row * W;
            for (i64 c = 0; c < W; ++c) {
                const i64 i = base + c;
                if (P[i] < 0) continue;
                bool eql = false;
                if (in.no_left) {
                } else if (c > 0 && jlo <= i - 1 && i - 1 < jhi) {
                    if (joins(i, i - 1, noff)) {
                        if (P[i] == I(i)) P[i] = P[i - 1];  // continue the left cell's run
                        else uf::unite<I>(P, I(i), I(i - 1));
                        eql = rules;
                    }
                } else if (c == 0 && (periodic & lastbit)) {
                    const i64 jl = i + W - 1;
                    if (jlo <= jl && jl < jhi && joins(i, jl, noff)) uf::unite<I>(P, I(i), I(jl));
                }
                for (int q = 0; q < cnt; ++q) {
                    const int o = int(rws[q]);
                    i64 j = i + g.table[4 * o] + shift[q];
                    bool wrapped = wraps[q];
                    const i64 d = dlast[o];
                    if (d == -1 && c == 0) {
                        if (!(periodic & lastbit)) continue;
                        j += W;
                        wrapped = true;
                    } else if (d == 1 && c == W - 1) {
                        if (!(periodic & lastbit)) continue;
                        j -= W;
                        wrapped = true;
                    }
                    if (j < jlo || j >= jhi || !joins(i, j, o)) continue;
                    if (!eql && !wrapped && P[i] == I(i)) {
                        P[i] = I(j);  // a run's first cell: its first joining neighbour (earlier)
                        continue;
                    }
                    if (eql && !wrapped) {
                        const i64 flags = g.table[4 * o + 3];
                        if (flags & 1) continue;  // covered by the left cell
                        if (!((flags & 2) && c == 1) && joins(i, j - 1, o)) continue;  // twin pair
                    }
                    uf::unite<I>(P, I(i), I(j));
                }
            }
            walk.next();
        }
    }
};

// Number the roots of the forest P (-1: background) 1..N in index order into
// out (may be P itself); every parent is a smaller index, already numbered.
template <class I, class L>
i64 relabel_into(const I* P, L* out, i64 n) {
    i64 count = 0;
    for (i64 i = 0; i < n; ++i) {
        const I p = P[i];
        if (p < 0) out[i] = 0;
        else if (p == I(i)) out[i] = L(++count);
        else out[i] = out[p];
    }
    return count;
}

template <class I, class L>
i64 relabel_into_counted(const I* P, L* out, i64 n, std::vector<i64>& counts) {
    i64 count = 0;
    counts.assign(std::min<i64>(n, std::max<i64>(1024, n >> 6)) + 1, 0);
    for (i64 i = 0; i < n; ++i) {
        const I p = P[i];
        if (p < 0) {
            out[i] = 0;
            counts[0] += 1;
        } else if (p == I(i)) {
            if (count + 1 >= i64(counts.size())) counts.resize(2 * counts.size(), 0);
            out[i] = L(++count);
            counts[count] += 1;
        } else {
            const L lab = out[p];
            out[i] = lab;
            counts[lab] += 1;
        }
    }
    counts.resize(count + 1);
    return count;
}

// Run f(k) for k in [0, K) on T threads (chunks handed out in turn).
template <class F>
void for_chunks(int T, i64 K, F&& f) {
    std::atomic<i64> next(0);
    on_threads(T, [&](int) {
        for (i64 k = next.fetch_add(1); k < K; k = next.fetch_add(1)) f(k);
    });
}

// The whole lattice, serially: trees in work (I), final labels into out (L).
template <class Cmp, bool Mask, bool Bonds, class I, class L>
i64 lattice_serial(Lattice<Cmp, Mask, Bonds, I>& lt, L* out, std::vector<i64>* counts) {
    const i64 W = lt.g.shape[lt.g.ndim - 1];
    lt.init(0, lt.n);
    lt.rows(lt.in.periodic, 0, lt.n / W, 0, lt.n);
    if (counts) return relabel_into_counted(lt.P, out, lt.n, *counts);
    return relabel_into(lt.P, out, lt.n);
}

// Cell i's label, in a chunk whose first cell is `start`: 0 for the
// background, its own number for a root of the chunk (numbered before), its
// parent's when that parent is in the chunk (an earlier cell, already
// labelled), else its root's (a walk into an earlier chunk).
template <class I, class L>
inline L cell_label(const I* P, const L* out, i64 i, i64 start) {
    I p = P[i];
    if (p < 0) return 0;
    if (p >= start) return out[p];
    while (P[p] != p) p = P[p];
    return out[p];
}

// On threads: chunks of rows (chunks[k]..chunks[k+1]-1), `back` rows of each
// against the cells before it; not periodic.
template <class Cmp, bool Mask, bool Bonds, class I, class L>
i64 lattice_chunks(Lattice<Cmp, Mask, Bonds, I>& lt, L* out, const i64* chunks, i64 K, i64 back,
                   int T, std::vector<i64>* counts) {
    const i64 W = lt.g.shape[lt.g.ndim - 1];
    // 1. each chunk on its own: pairs inside it only
    for_chunks(T, K, [&](i64 k) {
        lt.init(chunks[k] * W, chunks[k + 1] * W);
        lt.rows(0, chunks[k], chunks[k + 1], chunks[k] * W, chunks[k + 1] * W);
    });
    // 2. serially, the first rows of each chunk against the cells before it
    for (i64 k = 1; k < K; ++k)
        lt.rows(0, chunks[k], std::min(chunks[k] + back, chunks[k + 1]), 0, chunks[k] * W);
    // 3. roots per chunk, a prefix sum, the roots numbered, every cell labelled
    std::vector<i64> first(K + 1, 0);
    const I* P = lt.P;
    for_chunks(T, K, [&](i64 k) {
        i64 c = 0;
        for (i64 i = chunks[k] * W; i < chunks[k + 1] * W; ++i) c += P[i] == I(i);
        first[k + 1] = c;
    });
    for (i64 k = 0; k < K; ++k) first[k + 1] += first[k];
    const i64 N = first[K];
    for_chunks(T, K, [&](i64 k) {
        i64 c = first[k];
        for (i64 i = chunks[k] * W; i < chunks[k + 1] * W; ++i)
            if (P[i] == I(i)) out[i] = L(++c);
    });
    if (!counts) {
        for_chunks(T, K, [&](i64 k) {
            const i64 start = chunks[k] * W;
            for (i64 i = start; i < chunks[k + 1] * W; ++i) out[i] = cell_label(P, out, i, start);
        });
        return N;
    }
    // counted: labels rooted in the chunk plainly into own, those rooted in
    // earlier chunks by runs, atomically, into earlier
    std::vector<i64> own(N + 1, 0), earlier(N + 1, 0), background(K, 0);
    for_chunks(T, K, [&](i64 k) {
        const i64 start = chunks[k] * W;
        const i64 mine = first[k];  // labels above this one are rooted in this chunk
        i64 bgc = 0, cur = 0, run = 0;
        for (i64 i = start; i < chunks[k + 1] * W; ++i) {
            const L lab = cell_label(P, out, i, start);
            out[i] = lab;
            if (lab > mine) {
                own[lab] += 1;
            } else if (lab == 0) {
                ++bgc;
            } else if (lab == cur) {
                ++run;
            } else {
                if (run) __atomic_fetch_add(&earlier[cur], run, __ATOMIC_RELAXED);
                cur = lab;
                run = 1;
            }
        }
        if (run) __atomic_fetch_add(&earlier[cur], run, __ATOMIC_RELAXED);
        background[k] = bgc;
    });
    for (i64 l = 1; l <= N; ++l) own[l] += earlier[l];
    own[0] = 0;
    for (i64 k = 0; k < K; ++k) own[0] += background[k];
    *counts = std::move(own);
    return N;
}

}  // namespace MESHCCL_CPU_NS
}  // namespace meshccl
