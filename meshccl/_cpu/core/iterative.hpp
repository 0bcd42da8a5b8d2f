// Hawick, Leist and Playne's iterative mesh labellers on the CPU (Hawick et
// al. 2010, section 5), kept for comparison with the one-pass labellers and
// to reproduce the paper's experiments; serial, slow by design.
//
// Every foreground cell starts with its own index as label (background: -1,
// by value or mask: Lattice::init of lattice.hpp); a label only ever
// decreases to the smallest label among the cells its cell joins; when a
// pass changes nothing, every cell holds the smallest index of its
// component, which is the forest relabel_into (lattice.hpp) numbers 1..N in
// raster order.  So every method gives exactly the default method's labels.
//
//   cpu1  alternating raster scans, forward then backward, in place;
//   A     neighbour propagation (Jacobi): every cell takes the minimum of its
//         neighbours' labels of the previous pass, one cell a pass;
//   B     A's step, then each tile (the GPU's thread-block boxes, log2
//         extents from meshccl.neighbourhood.tile_logs) iterated in place to
//         a fixed point with the cells around it frozen;
//   C     directional sweeps: for each axis and direction, every line of
//         cells along that axis in turn, each cell taking the labels of the
//         neighbours behind it;
//   D     label equivalence (serially: CPU II): scanning (for every label,
//         the smallest label next to a cell holding it), analysis (each
//         label follows its chain to the end), labelling (every cell takes
//         its label's chain end).
//
// "Neighbours" is the full neighbourhood: both directions of every row of
// the half-neighbourhood table and of the left neighbour (unless the last
// axis is not labelled along), with lattice.hpp's joining rule, mask, bonds
// and tolerance (Lattice::joins; a pair's bond is stored at the cell its
// half-table offset starts from), and periodic wrap on the axes that have
// it.  Each method returns its passes, counting the last one (which changes
// nothing), or -1 when max_it (> 0) passes all changed labels.  A, B and D
// take exactly the passes of their GPU versions (meshccl/_kernels/iterative.cu),
// so the pass structure, the order cells are visited in and the in-place or
// double-buffered updates are part of the result.
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "lattice.hpp"

namespace meshccl {
namespace MESHCCL_CPU_NS {

// One row of the full neighbourhood: the neighbour at linear offset lin,
// moved -1 along the axes of lo and +1 along those of hi; its half-table
// row (noff: the left neighbour) and whether the pair's bond is stored at
// the neighbour (the row runs towards the later cell) rather than here.
struct FullRow {
    i64 lin, lo, hi;
    int half;
    bool bond_there;
};

// The full neighbourhood of a C-ordered array, with its periodic axes.
struct FullNeighbourhood {
    std::vector<FullRow> rows;
    std::vector<i64> span;  // cells a step of one along axis k wraps by
    const i64* shape;
    int ndim;
    i64 periodic;

    FullNeighbourhood(const Geometry& g, bool no_left, i64 periodic_)
        : span(g.ndim), shape(g.shape), ndim(g.ndim), periodic(periodic_) {
        const int last = ndim - 1;
        const int halves = g.noff + (no_left ? 0 : 1);
        for (int b = 0; b < halves; ++b) {
            i64 lin = -1, lo = i64(1) << last, hi = 0;  // (the left neighbour)
            if (b < g.noff) {
                const i64* t = g.table + 4 * b;
                lin = t[0];
                lo = t[1];
                hi = t[2];
            }
            rows.push_back({lin, lo, hi, b, false});
            rows.push_back({-lin, hi, lo, b, true});
        }
        i64 stride = 1;
        for (int k = ndim - 1; k >= 0; --k) {
            span[k] = stride * shape[k];
            stride = span[k];
        }
    }

    // Cell i's coordinates into coords; its boundary masks (bit k: at the
    // low / high end of axis k).
    void masks(i64 i, i64* coords, i64& lo, i64& hi) const {
        lo = 0;
        hi = 0;
        for (int k = ndim - 1; k >= 0; --k) {
            const i64 c = i % shape[k];
            i /= shape[k];
            coords[k] = c;
            if (c == 0) lo |= i64(1) << k;
            if (c == shape[k] - 1) hi |= i64(1) << k;
        }
    }

    // Cell i's neighbour through row r, or -1 (off a non-periodic end).
    i64 neighbour(i64 i, i64 lo, i64 hi, const FullRow& r) const {
        const i64 out_lo = lo & r.lo, out_hi = hi & r.hi;
        if ((out_lo | out_hi) & ~periodic) return -1;
        i64 j = i + r.lin;
        for (i64 m = out_lo; m; m &= m - 1) j += span[__builtin_ctzll(std::uint64_t(m))];
        for (i64 m = out_hi; m; m &= m - 1) j -= span[__builtin_ctzll(std::uint64_t(m))];
        return j;
    }
};

// The methods on one lattice problem: lt's values, join rule and initial
// labels, with lt.P the labels (every buffer of labels holds -1 on the same
// cells, so lt.joins reads the foreground from whichever is current).
template <class LT, class I>
struct Iterative {
    LT& lt;
    FullNeighbourhood nb;
    i64 n;
    i64 max_it;
    std::vector<i64> coords;

    Iterative(LT& lt_, bool no_left, i64 max_it_)
        : lt(lt_), nb(lt_.g, no_left, lt_.in.periodic), n(lt_.n), max_it(max_it_),
          coords(lt_.g.ndim) {}

    bool joins(i64 i, i64 j, const FullRow& r) const {
        return lt.joins(i, j, r.half, r.bond_there ? j : i);
    }

    // The smallest label among cell i's joined neighbours and its own in L;
    // with sel_axis >= 0 only the neighbours moved -sel_sign along that axis
    // (those behind i in a sweep).
    I min_label(const I* L, i64 i, int sel_axis, int sel_sign) {
        i64 lo, hi;
        nb.masks(i, coords.data(), lo, hi);
        I best = L[i];
        for (const FullRow& r : nb.rows) {
            if (sel_axis >= 0 && !(((sel_sign < 0 ? r.hi : r.lo) >> sel_axis) & 1)) continue;
            const i64 j = nb.neighbour(i, lo, hi, r);
            if (j < 0 || L[j] < 0 || !joins(i, j, r)) continue;
            if (L[j] < best) best = L[j];
        }
        return best;
    }

    // As min_label over the neighbours inside the box origin .. origin + ext
    // only (never through a periodic wrap).
    I tile_min_label(const I* L, i64 i, const i64* origin, const i64* ext) {
        i64 lo, hi;
        nb.masks(i, coords.data(), lo, hi);
        I best = L[i];
        for (const FullRow& r : nb.rows) {
            bool inside = true;
            for (int k = 0; k < nb.ndim; ++k) {
                i64 c = coords[k];
                if ((r.lo >> k) & 1) c -= 1;
                else if ((r.hi >> k) & 1) c += 1;
                if (c < origin[k] || c >= origin[k] + ext[k] || c >= nb.shape[k]) {
                    inside = false;
                    break;
                }
            }
            if (!inside) continue;
            const i64 j = nb.neighbour(i, lo, hi, r);
            if (j < 0 || L[j] < 0 || !joins(i, j, r)) continue;
            if (L[j] < best) best = L[j];
        }
        return best;
    }

    // Lower L[i] to the smallest label it joins, in place; true if it changed.
    bool relax(I* L, i64 i, int sel_axis, int sel_sign) {
        if (L[i] < 0) return false;
        const I m = min_label(L, i, sel_axis, sel_sign);
        if (m < L[i]) {
            L[i] = m;
            return true;
        }
        return false;
    }

    // After pass `it`: the passes when nothing changed, -1 when out of
    // passes, 0 to go on.
    i64 verdict(i64 it, bool changed) const {
        if (!changed) return it;
        if (max_it > 0 && it >= max_it) return -1;
        return 0;
    }

    i64 cpu1(I* L) {
        for (i64 it = 1;; ++it) {
            bool changed = false;
            for (i64 s = 0; s < n; ++s) changed |= relax(L, it % 2 ? s : n - 1 - s, -1, 0);
            if (const i64 v = verdict(it, changed)) return v;
        }
    }

    // Double-buffered: L and spare swap each pass (both hold -1 on the
    // background); the final labels end in L.
    i64 kernel_a(I* L, I* spare) {
        std::copy(L, L + n, spare);
        I *cur = L, *nxt = spare;
        for (i64 it = 1;; ++it) {
            bool changed = false;
            for (i64 i = 0; i < n; ++i) {
                if (cur[i] < 0) continue;
                const I m = min_label(cur, i, -1, 0);
                nxt[i] = m;
                changed |= m < cur[i];
            }
            std::swap(cur, nxt);
            if (const i64 v = verdict(it, changed)) {
                if (cur != L) std::copy(cur, cur + n, L);
                return v;
            }
        }
    }

    i64 kernel_b(I* L, I* spare, const i64* tlog) {
        const int ndim = nb.ndim;
        const i64* shape = nb.shape;
        std::vector<i64> ext(ndim), tcount(ndim), stride(ndim), origin(ndim, 0);
        i64 ntiles = 1, cells = 1, st = 1;
        for (int k = ndim - 1; k >= 0; --k) {
            ext[k] = i64(1) << tlog[k];
            tcount[k] = (shape[k] + ext[k] - 1) / ext[k];
            ntiles *= tcount[k];
            cells *= ext[k];
            stride[k] = st;
            st *= shape[k];
        }
        std::vector<i64> idx(cells);
        std::copy(L, L + n, spare);
        I *cur = L, *nxt = spare;
        for (i64 it = 1;; ++it) {
            for (i64 t = 0; t < ntiles; ++t) {
                i64 rem = t;
                for (int k = ndim - 1; k >= 0; --k) {
                    origin[k] = (rem % tcount[k]) * ext[k];
                    rem /= tcount[k];
                }
                i64 m = 0;
                for (i64 local = 0; local < cells; ++local) {  // the tile's cells, in raster order
                    i64 r = local, i = 0;
                    bool ok = true;
                    for (int k = ndim - 1; k >= 0; --k) {
                        const i64 x = origin[k] + (r & (ext[k] - 1));
                        r >>= tlog[k];
                        if (x >= shape[k]) ok = false;
                        i += x * stride[k];
                    }
                    if (ok) idx[m++] = i;
                }
                for (i64 q = 0; q < m; ++q) {  // A's step from the previous pass
                    const i64 i = idx[q];
                    nxt[i] = cur[i] >= 0 ? min_label(cur, i, -1, 0) : cur[i];
                }
                for (bool local_change = true; local_change;) {  // then the tile until stable
                    local_change = false;
                    for (i64 q = 0; q < m; ++q) {
                        const i64 i = idx[q];
                        if (nxt[i] < 0) continue;
                        const I b = tile_min_label(nxt, i, origin.data(), ext.data());
                        if (b < nxt[i]) {
                            nxt[i] = b;
                            local_change = true;
                        }
                    }
                }
            }
            bool changed = false;  // (every cell is in a tile: nxt is the whole next pass)
            for (i64 i = 0; i < n; ++i) changed |= nxt[i] != cur[i];
            std::swap(cur, nxt);
            if (const i64 v = verdict(it, changed)) {
                if (cur != L) std::copy(cur, cur + n, L);
                return v;
            }
        }
    }

    i64 kernel_c(I* L) {
        const int ndim = nb.ndim;
        for (i64 it = 1;; ++it) {
            bool changed = false;
            for (int axis = 0; axis < ndim; ++axis) {
                i64 stride = 1;
                for (int k = axis + 1; k < ndim; ++k) stride *= nb.shape[k];
                const i64 size = nb.shape[axis];
                for (int sign : {1, -1}) {
                    // every line along `axis`, by its first cell in index order
                    for (i64 outer = 0; outer < n; outer += size * stride) {
                        for (i64 base = outer; base < outer + stride; ++base) {
                            for (i64 t = 0; t < size; ++t) {
                                const i64 step = sign > 0 ? t : size - 1 - t;
                                changed |= relax(L, base + step * stride, axis, sign);
                            }
                        }
                    }
                }
            }
            if (const i64 v = verdict(it, changed)) return v;
        }
    }

    // Kernel D, its phases' seconds added to seconds[0..2] (scanning,
    // analysis, labelling).
    i64 kernel_d(I* L, I* R, double* seconds) {
        using clock = std::chrono::steady_clock;
        for (i64 i = 0; i < n; ++i) R[i] = I(i);
        for (i64 it = 1;; ++it) {
            const auto t0 = clock::now();
            bool changed = false;
            for (i64 i = 0; i < n; ++i) {  // scanning
                if (L[i] < 0) continue;
                const I l1 = L[i], l2 = min_label(L, i, -1, 0);
                if (l2 < l1) {
                    if (l2 < R[l1]) R[l1] = l2;
                    changed = true;
                }
            }
            const auto t1 = clock::now();
            for (i64 i = 0; i < n; ++i) {  // analysis
                if (L[i] != I(i)) continue;
                I ref = R[i];
                while (R[ref] != ref) ref = R[ref];
                R[i] = ref;
            }
            const auto t2 = clock::now();
            for (i64 i = 0; i < n; ++i)  // labelling
                if (L[i] >= 0) L[i] = R[L[i]];
            const auto t3 = clock::now();
            seconds[0] += std::chrono::duration<double>(t1 - t0).count();
            seconds[1] += std::chrono::duration<double>(t2 - t1).count();
            seconds[2] += std::chrono::duration<double>(t3 - t2).count();
            if (const i64 v = verdict(it, changed)) return v;
        }
    }
};

}  // namespace MESHCCL_CPU_NS
}  // namespace meshccl
