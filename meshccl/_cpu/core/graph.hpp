// Weak connected components of a general graph on the CPU, and the
// union-find of incremental connectivity: every method of
// meshccl/graph/_methods.py's table, the serial twins of the GPU kernels
// (meshccl/_kernels/graph.cu) and the threaded union-find of cpu_threads.
//
// A graph arrives as int64 arrays: a CSR (indptr, indices) or an edge list
// (src, dst).  Every edge (v, u) is a union of v and u in either direction,
// so a directed graph gives its weakly connected components without being
// symmetrised.  The forest P (int32 below 2**31 vertices, else int64) is
// unionfind.h's: parents are smaller vertices, so each component's root is
// its smallest vertex, and number() then gives SciPy's labels (components
// counted from 0 in order of their smallest vertex) in one forward pass.
//
// The methods:
//
// - union_csr / union_edges: the serial union-find (find with path halving,
//   the larger root hooked under the smaller).  On a CSR a vertex first
//   takes its smallest neighbour as parent when that neighbour is smaller
//   and the vertex is still a root (ECL-CC's start: a union without a find).
//   Both can record the edges that merged two sets: a spanning forest.
// - unite_rule: GConn's union rules (Rem's walk with splicing, 'early',
//   'hooks', Union-Async, JTB's random-priority link) with their compression
//   rules, serially: there is no race, so 'hooks' is the plain union and
//   Rem's compare-and-swap a store.  JTB's roots are random members, so
//   jtb_smallest points every vertex at its set's smallest member before
//   the numbering.  The incremental structure runs batches with the same
//   rules (batch()).
// - kout, hb, bfs_sample: the samplers (Afforest's k-out, hook-based, a
//   breadth-first search from the picked vertex of largest degree), the
//   most frequent root L of 1024 picked vertices, then finish_pass: the
//   vertices outside L unite their remaining entries.
// - shiloach_vishkin, edge_propagation, vertex_propagation, bfs_components:
//   the iterative methods, in rounds, returning the rounds run (-1: the cap
//   of max_iterations reached).
// - parallel(): the threaded union-find (the scheme is described there).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "unionfind.h"
#include "threads.hpp"

namespace meshccl {
namespace graph {

using i64 = std::int64_t;
using u64 = std::uint64_t;
namespace uf = meshccl::MESHCCL_UF_NS;

// A graph as the methods read it: CSR rows, or an edge list in its order.
// each(f) calls f(v, u) on every stored edge, in storage order.
struct Graph {
    const i64* indptr = nullptr;  // CSR; null for an edge list
    const i64* a = nullptr;       // indices, or src
    const i64* b = nullptr;       // dst of an edge list
    i64 n = 0;                    // vertices
    i64 m = 0;                    // stored edges

    template <class F>
    void each(F&& f) const {
        if (indptr) {
            for (i64 v = 0; v < n; ++v)
                for (i64 e = indptr[v]; e < indptr[v + 1]; ++e) f(v, a[e]);
        } else {
            for (i64 k = 0; k < m; ++k) f(a[k], b[k]);
        }
    }
};

template <class I>
inline void iota(I* P, i64 v0, i64 v1) {
    for (i64 v = v0; v < v1; ++v) P[v] = I(v);
}

// Every parent is a smaller vertex, already turned into its component's
// label when it is read: a root takes the next label (from 0), a non-root
// its parent's.  Returns the number of components.
template <class I>
inline i64 number(I* P, i64 n) {
    I count = 0;
    for (i64 i = 0; i < n; ++i) {
        const I p = P[i];
        if (p == I(i)) P[i] = count++;
        else P[i] = P[p];
    }
    return i64(count);
}

// ---- the serial union-find

// Unite along every edge (self-loops skipped); when fsrc is not null,
// record each edge that merged two sets (fsrc / fdst) and return how many.
// X: the CSR's index type (int64, or a SciPy CSR's int32 read as it is).
template <class I, class X>
i64 union_csr(const X* indptr, const X* indices, I* P, i64 n, i64* fsrc, i64* fdst) {
    iota(P, 0, n);
    i64 nf = 0;
    for (i64 v = 0; v < n; ++v) {
        bool first = true;
        for (i64 e = i64(indptr[v]); e < i64(indptr[v + 1]); ++e) {
            const i64 u = i64(indices[e]);
            if (u == v) continue;
            bool merged;
            // v is still a root with no child smaller than itself, so
            // pointing it at a smaller vertex is a union
            if (first && u < v && P[v] == I(v)) {
                P[v] = I(u);
                first = false;
                merged = true;
            } else {
                merged = uf::unite(P, I(v), I(u));
            }
            if (merged && fsrc) {
                fsrc[nf] = v;
                fdst[nf] = u;
                ++nf;
            }
        }
    }
    return nf;
}

template <class I, class X>
i64 union_edges(const X* src, const X* dst, i64 m, I* P, i64 n, i64* fsrc, i64* fdst) {
    iota(P, 0, n);
    i64 nf = 0;
    for (i64 k = 0; k < m; ++k) {
        if (src[k] != dst[k] && uf::unite(P, I(src[k]), I(dst[k])) && fsrc) {
            fsrc[nf] = src[k];
            fdst[nf] = dst[k];
            ++nf;
        }
    }
    return nf;
}

// ---- GConn's union rules, serially (codes: enum UnionRule and enum
// Compression of kernels/unionfind.cuh)

enum Rule : int { ASYNC = 0, REM = 1, EARLY = 2, HOOKS = 3, JTB = 4 };
enum Compress : int { NONE = 0, HALVING = 1, SPLITTING = 2, FULL = 3, SPLICING = 4 };

// Find with compression comp (halving, splitting, full; none otherwise).
template <class I>
inline I find_c(I* P, I x, int comp) {
    if (comp == HALVING) return uf::find(P, x);
    if (comp == SPLITTING) {
        I p = P[x];
        while (p != x) {
            const I g = P[p];
            if (g == p) return p;
            P[x] = g;
            x = p;
            p = g;
        }
        return x;
    }
    I r = x;
    while (P[r] != r) r = P[r];
    if (comp == FULL) {
        while (x != r) {
            const I p = P[x];
            P[x] = r;
            x = p;
        }
    }
    return r;
}

// JTB's random priority of a vertex (a 64-bit finaliser, its low 32 bits),
// ties broken by the smaller vertex; the GPU's jtb_priority.
inline u64 jtb_priority(u64 x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x & 0xFFFFFFFFull;
}

template <class I>
inline bool jtb_before(I a, I b) {
    const u64 pa = jtb_priority(u64(a)), pb = jtb_priority(u64(b));
    return pa < pb || (pa == pb && a < b);
}

// One union of a and b (a != b) with rule and comp: the root it hooked
// (each element is hooked at most once), or -1 when a and b were in one
// set already.
template <class I>
I unite_rule(I* P, I a, I b, int rule, int comp) {
    if (rule == REM) {  // walks step by parent value; splice / split / halve on the way
        I rx = a, ry = b;
        for (;;) {
            I px = P[rx], py = P[ry];
            if (px == py) return I(-1);
            if (px < py) {
                std::swap(rx, ry);
                std::swap(px, py);
            }
            if (rx == px) {
                P[rx] = py;
                return rx;
            }
            if (comp == SPLICING) {
                P[rx] = py;
                rx = px;
            } else if (comp == SPLITTING) {
                P[rx] = P[px];
                rx = px;
            } else if (comp == HALVING) {
                const I g = P[px];
                P[rx] = g;
                rx = g;
            } else {
                rx = px;
            }
        }
    }
    if (rule == EARLY) {  // walk up together, stop where they meet
        I u = a, w = b, hooked = I(-1);
        while (u != w) {
            if (u < w) std::swap(u, w);
            if (P[u] == u) {
                P[u] = w;
                hooked = u;
                break;
            }
            u = P[u];
        }
        if (comp != NONE) {
            find_c(P, a, comp);
            find_c(P, b, comp);
        }
        return hooked;
    }
    I ra = find_c(P, a, comp), rb = find_c(P, b, comp);
    if (ra == rb) return I(-1);
    if (rule == JTB) {  // link by random priority
        if (jtb_before(rb, ra)) std::swap(ra, rb);
    } else if (ra < rb) {  // async / hooks: the larger root under the smaller
        std::swap(ra, rb);
    }
    P[ra] = rb;
    return ra;
}

// JTB's roots are random members: point every vertex at the smallest member
// of its set (the form number() reads).
template <class I>
void jtb_smallest(I* P, i64 n) {
    std::vector<I> R(static_cast<std::size_t>(n));
    for (i64 v = 0; v < n; ++v) R[v] = find_c(P, I(v), NONE);
    for (i64 v = 0; v < n; ++v)
        if (R[v] != I(v) && I(v) < P[R[v]]) P[R[v]] = I(v);
    for (i64 v = 0; v < n; ++v)
        if (R[v] != I(v)) P[v] = P[R[v]];
}

// Unite along every stored edge with rule and comp (components_rule).
template <class I>
void union_rule(const Graph& g, I* P, int rule, int comp) {
    iota(P, 0, g.n);
    g.each([&](i64 v, i64 u) {
        if (v != u) unite_rule(P, I(v), I(u), rule, comp);
    });
    if (rule == JTB) jtb_smallest(P, g.n);
}

// One batch of incremental connectivity, in order: every query sees the
// inserts before it.  kinds (0 insert, 1 query) or, when null, every
// operation of kind `only`; FS / FD null: no spanning forest kept (else the
// edge that hooked root h goes to slot h); out null: no answers.  Vertices
// outside [0, n) are skipped (an insert does nothing, a query answers
// false).  Returns the inserts that joined two sets.
inline i64 batch(i64* P, i64 n, const std::uint8_t* kinds, int only, const i64* src,
                 const i64* dst, i64 m, int rule, int comp, int qcomp, i64* FS, i64* FD,
                 bool* out) {
    i64 joined = 0;
    for (i64 e = 0; e < m; ++e) {
        const int kind = kinds ? kinds[e] : only;
        const i64 x = src[e], y = dst[e];
        const bool valid = 0 <= x && x < n && 0 <= y && y < n;
        if (kind != 0) {
            out[e] = valid && (x == y || find_c(P, x, qcomp) == find_c(P, y, qcomp));
            continue;
        }
        if (out) out[e] = false;
        if (!valid || x == y) continue;
        const i64 h = unite_rule(P, x, y, rule, comp);
        if (h >= 0) {
            ++joined;
            if (FS) {
                FS[h] = x;
                FD[h] = y;
            }
        }
    }
    return joined;
}

// ---- the samplers

// Entries HB sampling's start scans for a smaller neighbour (the GPU's
// MESHCCL_GRAPH_THREAD_MAX, kernels/graph.cu).
constexpr i64 INIT_SCAN = 16;

// Every vertex to its root; then the most frequent root among the picks'
// (the smallest on a tie).
template <class I>
I most_frequent_root(I* P, i64 n, const i64* picks, i64 npicks) {
    for (i64 v = 0; v < n; ++v) P[v] = uf::find(P, I(v));
    std::vector<I> roots(static_cast<std::size_t>(npicks));
    for (i64 i = 0; i < npicks; ++i) roots[i] = P[picks[i]];
    std::sort(roots.begin(), roots.end());
    I big = roots[0];
    i64 best = 0, run = 0;
    for (i64 i = 0; i < npicks; ++i) {
        run = (i && roots[i] == roots[i - 1]) ? run + 1 : 1;
        if (run > best) {
            best = run;
            big = roots[i];
        }
    }
    return big;
}

// The samplers' finish: vertices outside big's set unite their entries
// after the first `skip`; one in it skips them when the graph is stored
// symmetrically, else unites only neighbours whose parent is not big.
template <class I>
void finish_pass(const i64* indptr, const i64* indices, I* P, i64 n, I big, i64 skip,
                 bool symmetric) {
    for (i64 v = 0; v < n; ++v) {
        const i64 begin = indptr[v] + skip, end = indptr[v + 1];
        if (begin >= end) continue;
        const bool vin = P[v] == big || uf::find(P, I(v)) == big;
        if (symmetric && vin) continue;
        for (i64 e = begin; e < end; ++e) {
            const i64 u = indices[e];
            if (u == v || (vin && P[u] == big)) continue;
            uf::unite(P, I(v), I(u));
        }
    }
}

// k-out sampling (Afforest / GConn): unite each vertex's first k entries,
// find the most frequent root L of the picks, then the finish pass.
template <class I>
void kout(const i64* indptr, const i64* indices, I* P, i64 n, i64 k, const i64* picks,
          i64 npicks, bool symmetric) {
    iota(P, 0, n);
    for (i64 v = 0; v < n; ++v) {
        const i64 end = std::min(indptr[v] + k, indptr[v + 1]);
        for (i64 e = indptr[v]; e < end; ++e)
            if (indices[e] != v) uf::unite(P, I(v), I(indices[e]));
    }
    const I big = most_frequent_root(P, n, picks, npicks);
    finish_pass(indptr, indices, P, n, big, k, symmetric);
}

// The first neighbour smaller than v among v's first INIT_SCAN entries,
// else v (the GPU's first_smaller).
inline i64 first_smaller(const i64* indptr, const i64* indices, i64 v) {
    const i64 end = std::min(indptr[v] + INIT_SCAN, indptr[v + 1]);
    for (i64 e = indptr[v]; e < end; ++e)
        if (indices[e] < v) return indices[e];
    return v;
}

// Hook-based sampling: every vertex points at first_smaller (the GPU's
// meshccl_graph_hb_init); the vertices that start as roots unite their
// first k entries (even when an earlier union has hooked them meanwhile);
// then the most frequent root and the finish pass over every entry.
template <class I>
void hb(const i64* indptr, const i64* indices, I* P, i64 n, i64 k, const i64* picks,
        i64 npicks, bool symmetric) {
    for (i64 v = 0; v < n; ++v) P[v] = I(first_smaller(indptr, indices, v));
    for (i64 v = 0; v < n; ++v) {
        if (first_smaller(indptr, indices, v) != v) continue;  // did not start as a root
        const i64 end = std::min(indptr[v] + k, indptr[v + 1]);
        for (i64 e = indptr[v]; e < end; ++e)
            if (indices[e] != v) uf::unite(P, I(v), I(indices[e]));
    }
    const I big = most_frequent_root(P, n, picks, npicks);
    finish_pass(indptr, indices, P, n, big, 0, symmetric);
}

// One step of a breadth-first search over the stored directions: the
// neighbours of v not reached yet (P < 0) get `label`, are queued at
// queue[tail++] and are passed to `reached`.
template <class I, class F>
inline void bfs_visit(const i64* indptr, const i64* indices, I* P, i64* queue, i64 v,
                      i64& tail, I label, F&& reached) {
    for (i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
        const i64 u = indices[e];
        if (P[u] < 0) {
            P[u] = label;
            queue[tail++] = u;
            reached(u);
        }
    }
}

// BFS sampling: a search over the stored directions from the picked vertex
// of largest degree (the smallest such on a tie), at most max_levels
// levels; the vertices it reached -- a connected set -- point at their
// smallest member L; then the finish pass.  Returns the levels run.
template <class I>
i64 bfs_sample(const i64* indptr, const i64* indices, I* P, i64 n, const i64* picks,
               i64 npicks, i64 max_levels, bool symmetric) {
    i64 s = picks[0];
    for (i64 i = 0; i < npicks; ++i) {
        const i64 x = picks[i];
        const i64 dx = indptr[x + 1] - indptr[x], ds = indptr[s + 1] - indptr[s];
        if (dx > ds || (dx == ds && x < s)) s = x;
    }
    for (i64 v = 0; v < n; ++v) P[v] = I(-1);
    P[s] = I(s);
    std::vector<i64> queue(static_cast<std::size_t>(n));
    queue[0] = s;
    i64 head = 0, tail = 1, low = s, levels = 0;
    while (head < tail && levels < max_levels) {
        ++levels;
        const i64 stop = tail;
        while (head < stop)
            bfs_visit(indptr, indices, P, queue.data(), queue[head++], tail, I(s),
                      [&](i64 u) { low = std::min(low, u); });
    }
    for (i64 v = 0; v < n; ++v) P[v] = P[v] < 0 ? I(v) : I(low);
    finish_pass(indptr, indices, P, n, I(low), 0, symmetric);
    return levels;
}

// CSR of an edge list, each row's entries in the list's order (a stable
// counting sort by source).
inline void edges_to_csr(const i64* src, const i64* dst, i64 m, i64 n, i64* indptr,
                         i64* indices) {
    std::fill(indptr, indptr + n + 1, i64(0));
    for (i64 k = 0; k < m; ++k) ++indptr[src[k] + 1];
    for (i64 v = 0; v < n; ++v) indptr[v + 1] += indptr[v];
    std::vector<i64> at(indptr, indptr + n);
    for (i64 k = 0; k < m; ++k) indices[at[src[k]]++] = dst[k];
}

// ---- the iterative methods: rounds run, or -1 when `cap` rounds did not
// reach the fixed point (cap -1: no cap)

// Both directions of every edge of g as a CSR: each row holds the edges
// stored from that vertex, in order, then those stored to it, in order.
inline void undirected_csr(const Graph& g, std::vector<i64>& indptr, std::vector<i64>& indices) {
    const i64 n = g.n;
    indptr.assign(static_cast<std::size_t>(n + 1), 0);
    indices.resize(static_cast<std::size_t>(2 * g.m));
    g.each([&](i64 v, i64 u) {
        ++indptr[v + 1];
        ++indptr[u + 1];
    });
    for (i64 v = 0; v < n; ++v) indptr[v + 1] += indptr[v];
    std::vector<i64> at(indptr.begin(), indptr.end() - 1);
    g.each([&](i64 v, i64 u) { indices[at[v]++] = u; });
    g.each([&](i64 v, i64 u) { indices[at[u]++] = v; });
}

// Shiloach-Vishkin (Dehne's striding formulation, serially in rounds): hook
// every root onto a smaller root across an edge, then jump pointers until
// every tree is a star; repeat until no hook happens.
template <class I>
i64 shiloach_vishkin(const Graph& g, I* P, i64 cap) {
    iota(P, 0, g.n);
    i64 rounds = 0;
    for (;;) {
        ++rounds;
        bool hooked = false;
        g.each([&](i64 v, i64 u) {
            const I a = P[v], b = P[u];
            if (a == b) return;
            const I hi = a > b ? a : b, lo = a > b ? b : a;
            if (P[hi] == hi && lo < P[hi]) {  // hi is a root: hook it under the smaller one
                P[hi] = lo;
                hooked = true;
            }
        });
        for (bool jumping = true; jumping;) {
            jumping = false;
            for (i64 v = 0; v < g.n; ++v) {
                const I p = P[v], gp = P[p];
                if (gp != p) {
                    P[v] = gp;
                    jumping = true;
                }
            }
        }
        if (!hooked) return rounds;
        if (rounds == cap) return -1;
    }
}

// Hawick et al.'s kernel 1: every edge lowers both ends to the smaller
// label, sweep after sweep, until nothing changes.
template <class I>
i64 edge_propagation(const Graph& g, I* P, i64 cap) {
    iota(P, 0, g.n);
    i64 sweeps = 0;
    for (bool changed = true; changed;) {
        if (sweeps == cap) return -1;
        ++sweeps;
        changed = false;
        g.each([&](i64 a, i64 b) {
            const I m = std::min(P[a], P[b]);
            if (P[a] != m) {
                P[a] = m;
                changed = true;
            }
            if (P[b] != m) {
                P[b] = m;
                changed = true;
            }
        });
    }
    return sweeps;
}

// Hawick et al.'s kernel 2: vertices on the frontier push their label to
// neighbours with a larger one; those form the next frontier (each once,
// in the order they were reached).
template <class I>
i64 vertex_propagation(const i64* indptr, const i64* indices, I* P, i64 n, i64 cap) {
    std::vector<i64> frontier(static_cast<std::size_t>(n)), next(static_cast<std::size_t>(n));
    std::vector<std::uint8_t> on_next(static_cast<std::size_t>(n), 0);
    for (i64 v = 0; v < n; ++v) frontier[v] = v;
    iota(P, 0, n);
    i64 steps = 0, size = n;
    while (size) {
        if (steps == cap) return -1;
        ++steps;
        i64 m = 0;
        for (i64 f = 0; f < size; ++f) {
            const i64 v = frontier[f];
            for (i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
                const i64 u = indices[e];
                if (P[v] < P[u]) {
                    P[u] = P[v];
                    if (!on_next[u]) {
                        on_next[u] = 1;
                        next[m++] = u;
                    }
                }
            }
        }
        for (i64 f = 0; f < m; ++f) on_next[next[f]] = 0;
        frontier.swap(next);
        size = m;
    }
    return steps;
}

// Hawick et al.'s kernel 3, serially: a breadth-first search from each
// unlabelled vertex in increasing order labels its component with that
// vertex, the component's smallest.  Returns the number of searches.
template <class I>
i64 bfs_components(const i64* indptr, const i64* indices, I* P, i64 n) {
    for (i64 v = 0; v < n; ++v) P[v] = I(-1);
    std::vector<i64> queue(static_cast<std::size_t>(n));
    i64 searches = 0;
    for (i64 s = 0; s < n; ++s) {
        if (P[s] >= 0) continue;
        ++searches;
        P[s] = I(s);
        i64 head = 0, tail = 1;
        queue[0] = s;
        while (head < tail)
            bfs_visit(indptr, indices, P, queue.data(), queue[head++], tail, I(s), [](i64) {});
    }
    return searches;
}

// ---- the threaded union-find (cpu_threads != 1: 'unionfind' / 'async'
// with halving, 'ecl' and the CPU's 'auto')
//
// The hooks are the serial union-find's made atomic, as in ECL-CC and
// GConn's Union-Async (uf::unite_cas): find with path halving by relaxed
// stores, and a root hi hooked under the smaller root lo by
// CAS(P[hi]: hi -> lo); when another thread hooked hi first, the CAS fails
// and the union starts over from hi's new parent.
//
// The vertices are cut into K contiguous ranges of about equal work
// (stored edges + vertices), K = threads * chunks_per_thread; the threads
// take the ranges from a shared counter.
//   'local' (a CSR whose stored edges mostly join two vertices of one
//   range, as on grids, paths, meshes, road networks numbered with
//   locality):
//   1. each range, on one thread, starts P[v] = v and runs the serial
//      union-find (ECL-CC's start included) with plain stores on its edges
//      whose two ends lie in the range; the other edges (cross edges) go to
//      the range's buffer.  No thread reads or writes outside its range.
//      A range whose buffer fills up stops at that vertex.
//   2. the cross edges, and every edge of the vertices a full buffer
//      stopped at, are united with CAS hooks by all threads (fewer than
//      serial_cross cross edges: by the calling thread with the serial
//      union, no other thread running).
//   'local' on an edge list: the same with K even chunks of edges (by
//   position) and K even vertex ranges, chunk k's edges with both ends in
//   range k united in phase 1 (a path, a list sorted by source whose ends
//   are close); a full buffer stops at that edge.
//   'cas' (little locality: R-MAT, permuted numberings): P[v] = v, then
//   every edge is united with CAS hooks by all threads, in one pass.  On
//   an edge list thread t takes a contiguous block of chunks, every other
//   thread last to first: a list of sorted sweeps over the same vertices
//   (a grid's columns, then its rows) would otherwise have two threads
//   hooking the same vertices at the same moment.
//   Both end with number() on the calling thread.
// Which one: the stored edges of the picked vertices (an edge list: the
// picked edges) estimate the share of cross edges; 'local' when it is at
// most local_cross.
//
// Why it is exact.  Every store writes P[x] = y with y < x and y in x's
// component: a hook joins the roots found from the two ends of an edge, a
// halving store points x at a vertex that was its grandparent.  So parents
// only decrease, there is never a cycle, and every find ends.  A stale
// halving store (P[x] = g over a newer, smaller g') moves x's subtree to g,
// which is outside that subtree (g < x) and was in x's tree, so trees never
// split.  A CAS hook succeeds only on a root (nothing stores P[x] = x after
// the start, so a non-root never becomes a root again), so no hook is lost:
// when an edge's union returns, its ends are in one tree for good.  Each
// tree's root is its smallest vertex, so number() gives the serial labels.
// In 'local' phase 1 the trees of a range stay inside it, so the plain
// stores of the threads touch disjoint entries; every phase starts after
// the threads of the one before have been joined.

struct Settings {
    int threads = 1;
    i64 chunks_per_thread = 8;
    double local_cross = 0.25;
    i64 serial_cross = 1 << 16;
    i64 buffer_div = 4;
    i64 buffer_min = 1024;
};

struct Stats {
    int scheme = 0;  // 1 'local', 2 'cas'
    i64 cross = 0;   // edges united in phase 2 of 'local' (a stopped range's rest included)
    i64 stopped = 0; // ranges whose buffer filled up
};

using ::meshccl::threads::on_threads;

// f(k) for every k in [0, K), the threads taking the next k from a counter.
template <class F>
void each_chunk(int T, i64 K, F&& f) {
    std::atomic<i64> next{0};
    on_threads(std::max(1, int(std::min<i64>(T, K))), [&](int) {
        for (i64 k; (k = next.fetch_add(1, std::memory_order_relaxed)) < K;) f(k);
    });
}

// Bounds 0 = c[0] <= ... <= c[K] = size, c[k] = size * k / K.
inline std::vector<i64> even_bounds(i64 size, i64 K) {
    std::vector<i64> c(static_cast<std::size_t>(K + 1));
    for (i64 k = 0; k <= K; ++k) c[k] = i64((unsigned __int128)size * u64(k) / u64(K));
    return c;
}

// The first vertex v with indptr[v] + v >= k * (m + n) / K for k = 0..K,
// repeats dropped: ranges of about equal stored edges + vertices.
inline std::vector<i64> work_bounds(const i64* indptr, i64 n, i64 K) {
    const i64 total = indptr[n] + n;
    std::vector<i64> b;
    for (i64 k = 0; k <= K; ++k) {
        const i64 goal = i64((unsigned __int128)total * u64(k) / u64(K));
        i64 lo = 0, hi = n;
        while (lo < hi) {
            const i64 mid = (lo + hi) / 2;
            if (indptr[mid] + mid < goal) lo = mid + 1;
            else hi = mid;
        }
        if (k == 0) lo = 0;
        if (k == K) lo = n;
        if (b.empty() || b.back() != lo) b.push_back(lo);
    }
    return b;
}

// Unite pairs [e0, e1) of (a, b) with CAS hooks.
template <class I, class T>
inline void cas_pairs(const T* a, const T* b, I* P, i64 e0, i64 e1) {
    for (i64 e = e0; e < e1; ++e)
        if (a[e] != b[e]) uf::unite_cas(P, I(a[e]), I(b[e]));
}

// Unite the pairs of the chunks [c[k], c[k + 1]) with CAS hooks: thread t
// of T a contiguous block of chunks, odd threads theirs last to first.
template <class I, class T>
void par_cas_pairs(const T* a, const T* b, I* P, const std::vector<i64>& c, int threads) {
    const i64 K = i64(c.size()) - 1;
    const int Tn = std::max(1, int(std::min<i64>(threads, K)));
    on_threads(Tn, [&](int t) {
        const i64 k0 = K * t / Tn, k1 = K * (t + 1) / Tn;
        for (i64 j = k0; j < k1; ++j) {
            const i64 k = (t & 1) ? k1 - 1 - (j - k0) : j;
            cas_pairs(a, b, P, c[k], c[k + 1]);
        }
    });
}

// Phase 1 of 'local' on the vertices [v0, v1) of a CSR: the serial
// union-find on the edges inside the range, the others written to
// ca / cb[c0, c1).  Returns (cross edges written, the vertex it stopped at:
// v1 unless the buffer filled up).
template <class I>
std::pair<i64, i64> local_csr_range(const i64* indptr, const i64* indices, I* P, i64 v0,
                                    i64 v1, I* ca, I* cb, i64 c0, i64 c1) {
    iota(P, v0, v1);
    i64 c = c0;
    const u64 span = u64(v1 - v0);
    for (i64 v = v0; v < v1; ++v) {
        if (c + (indptr[v + 1] - indptr[v]) > c1) return {c - c0, v};  // v might not fit
        bool first = true;
        for (i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
            const i64 u = indices[e];
            if (u64(u - v0) >= span) {  // outside [v0, v1): one compare
                ca[c] = I(v);
                cb[c] = I(u);
                ++c;
            } else if (u != v) {
                if (first && u < v && P[v] == I(v)) {
                    P[v] = I(u);
                    first = false;
                } else {
                    uf::unite(P, I(v), I(u));
                }
            }
        }
    }
    return {c - c0, v1};
}

// Phase 1 of 'local' on an edge list: P[v] = v on [v0, v1), then the
// serial union-find on the edges [e0, e1) with both ends in [v0, v1), the
// others written to ca / cb[c0, c1).  Returns (cross edges written, the
// edge it stopped at: e1 unless the buffer filled up).
template <class I>
std::pair<i64, i64> local_edges_range(const i64* src, const i64* dst, I* P, i64 e0, i64 e1,
                                      i64 v0, i64 v1, I* ca, I* cb, i64 c0, i64 c1) {
    iota(P, v0, v1);
    i64 c = c0;
    const u64 span = u64(v1 - v0);
    for (i64 e = e0; e < e1; ++e) {
        const i64 a = src[e], b = dst[e];
        if (u64(a - v0) >= span || u64(b - v0) >= span) {
            if (c == c1) return {c - c0, e};
            ca[c] = I(a);
            cb[c] = I(b);
            ++c;
        } else if (a != b) {
            uf::unite(P, I(a), I(b));
        }
    }
    return {c - c0, e1};
}

// Phase 2 of 'local': unite the cross edges gathered in the buffers (each
// buffer k's first counts[k] of [offs[k], offs[k + 1]), moved to the front).
template <class I>
void local_phase2(I* ca, I* cb, const std::vector<i64>& offs,
                  const std::vector<i64>& counts, I* P, i64 K, const Settings& s) {
    i64 c = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
        for (i64 i = offs[k]; i < offs[k] + counts[k]; ++i) {
            ca[c] = ca[i];
            cb[c] = cb[i];
            ++c;
        }
    }
    if (c >= s.serial_cross) {
        std::vector<i64> ch = even_bounds(c, K);
        ch.erase(std::unique(ch.begin(), ch.end()), ch.end());
        par_cas_pairs(ca, cb, P, ch, s.threads);
    } else {
        for (i64 k = 0; k < c; ++k)
            if (ca[k] != cb[k]) uf::unite(P, ca[k], cb[k]);
    }
}

// The buffer offsets of ranges with `sizes` stored edges each.
inline std::vector<i64> buffer_offsets(const std::vector<i64>& sizes, const Settings& s) {
    std::vector<i64> offs(sizes.size() + 1, 0);
    for (std::size_t k = 0; k < sizes.size(); ++k)
        offs[k + 1] = offs[k] + std::min(sizes[k], sizes[k] / s.buffer_div + s.buffer_min);
    return offs;
}

// The weak components of g (n >= 2) with s.threads >= 2 threads into P,
// numbered; `picks` (sorted): the vertices (an edge list: the edges) whose
// edges estimate the share of cross edges.  Returns the count.
template <class I>
i64 parallel(const Graph& g, I* P, const i64* picks, i64 npicks, const Settings& s, Stats& st) {
    const i64 n = g.n, K = i64(s.threads) * s.chunks_per_thread;
    if (g.indptr) {
        const i64* indptr = g.indptr;
        const i64* indices = g.a;
        const std::vector<i64> chunks = work_bounds(indptr, n, K);
        const i64 Kc = i64(chunks.size()) - 1;
        i64 cross = 0, total = 0;
        for (i64 i = 0; i < npicks; ++i) {
            const i64 v = picks[i];
            const i64 k = i64(std::upper_bound(chunks.begin(), chunks.end(), v) - chunks.begin());
            const i64 lo = chunks[k - 1], hi = chunks[k];
            for (i64 e = indptr[v]; e < indptr[v + 1]; ++e)
                if (indices[e] < lo || indices[e] >= hi) ++cross;
            total += indptr[v + 1] - indptr[v];
        }
        const double share = total ? double(cross) / double(total) : 0.0;
        if (share > s.local_cross) {
            st.scheme = 2;
            each_chunk(s.threads, Kc, [&](i64 k) {
                iota(P, chunks[k], chunks[k + 1]);
            });
            each_chunk(s.threads, Kc, [&](i64 k) {
                for (i64 v = chunks[k]; v < chunks[k + 1]; ++v)
                    for (i64 e = indptr[v]; e < indptr[v + 1]; ++e)
                        if (indices[e] != v) uf::unite_cas(P, I(v), I(indices[e]));
            });
        } else {
            st.scheme = 1;
            std::vector<i64> sizes(static_cast<std::size_t>(Kc));
            for (i64 k = 0; k < Kc; ++k) sizes[k] = indptr[chunks[k + 1]] - indptr[chunks[k]];
            const std::vector<i64> offs = buffer_offsets(sizes, s);
            // (uninitialised: phase 1 writes every entry phase 2 reads)
            std::unique_ptr<I[]> ca(new I[std::size_t(offs[Kc])]), cb(new I[std::size_t(offs[Kc])]);
            std::vector<i64> counts(static_cast<std::size_t>(Kc)), stops(counts.size());
            each_chunk(s.threads, Kc, [&](i64 k) {
                std::tie(counts[k], stops[k]) =
                    local_csr_range(indptr, indices, P, chunks[k], chunks[k + 1], ca.get(),
                                    cb.get(), offs[k], offs[k + 1]);
            });
            i64 c = 0;
            for (i64 k = 0; k < Kc; ++k) {
                c += counts[k];
                if (stops[k] < chunks[k + 1]) {
                    ++st.stopped;
                    st.cross += indptr[chunks[k + 1]] - indptr[stops[k]];
                }
            }
            st.cross += c;
            local_phase2(ca.get(), cb.get(), offs, counts, P, K, s);
            if (st.stopped) {
                each_chunk(s.threads, Kc, [&](i64 k) {
                    for (i64 v = stops[k]; v < chunks[k + 1]; ++v)
                        for (i64 e = indptr[v]; e < indptr[v + 1]; ++e)
                            if (indices[e] != v) uf::unite_cas(P, I(v), I(indices[e]));
                });
            }
        }
    } else {
        const i64 *src = g.a, *dst = g.b, m = g.m;
        const std::vector<i64> echunks = even_bounds(m, K), vchunks = even_bounds(n, K);
        double share = 1.0;
        if (m) {
            i64 cross = 0;
            for (i64 i = 0; i < npicks; ++i) {
                const i64 e = picks[i];
                const i64 k =
                    i64(std::upper_bound(echunks.begin(), echunks.end(), e) - echunks.begin()) - 1;
                const i64 lo = vchunks[k], hi = vchunks[k + 1];
                if (src[e] < lo || src[e] >= hi || dst[e] < lo || dst[e] >= hi) ++cross;
            }
            share = double(cross) / double(npicks);
        }
        if (share > s.local_cross) {
            st.scheme = 2;
            each_chunk(s.threads, K, [&](i64 k) { iota(P, vchunks[k], vchunks[k + 1]); });
            par_cas_pairs(src, dst, P, echunks, s.threads);
        } else {
            st.scheme = 1;
            std::vector<i64> sizes(static_cast<std::size_t>(K));
            for (i64 k = 0; k < K; ++k) sizes[k] = echunks[k + 1] - echunks[k];
            const std::vector<i64> offs = buffer_offsets(sizes, s);
            std::unique_ptr<I[]> ca(new I[std::size_t(offs[K])]), cb(new I[std::size_t(offs[K])]);
            std::vector<i64> counts(static_cast<std::size_t>(K)), stops(counts.size());
            each_chunk(s.threads, K, [&](i64 k) {
                std::tie(counts[k], stops[k]) = local_edges_range(
                    src, dst, P, echunks[k], echunks[k + 1], vchunks[k], vchunks[k + 1],
                    ca.get(), cb.get(), offs[k], offs[k + 1]);
            });
            i64 c = 0;
            for (i64 k = 0; k < K; ++k) {
                c += counts[k];
                if (stops[k] < echunks[k + 1]) {
                    ++st.stopped;
                    st.cross += echunks[k + 1] - stops[k];
                }
            }
            st.cross += c;
            local_phase2(ca.get(), cb.get(), offs, counts, P, K, s);
            if (st.stopped) {
                each_chunk(s.threads, K, [&](i64 k) {
                    cas_pairs(src, dst, P, stops[k], echunks[k + 1]);
                });
            }
        }
    }
    return number(P, n);
}

}  // namespace graph
}  // namespace meshccl
