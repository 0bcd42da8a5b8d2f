// Strongly connected components of a directed graph in CSR form, numbered
// as scipy.sparse.csgraph.connected_components numbers them.
//
// One depth-first search over an explicit stack (never recursion, so no
// graph is too deep), O(n + m) time, one pass over every edge: roots are
// taken vertex by vertex from 0 upwards, the search path advances to the
// next unvisited successor of its newest vertex, and the components are
// numbered in the order the search completes them.  Which successor is
// "next" is what SciPy changed in 1.18:
//
// - reading each row forwards (SciPy 1.18 on, Tarjan's search as Tarjan and
//   Zwick's 2024 survey gives it): the first unvisited successor;
// - reading each row backwards (SciPy up to 1.17): SciPy's Pearce search
//   pushes every unvisited successor of a vertex in row order, moving one
//   already waiting to the top, and visits the top next -- the *last*
//   unvisited successor.  A depth-first search over the reversed rows
//   visits the same vertices in the same order and completes the same
//   components in the same order, so it gives the same labels in one pass
//   over the edges instead of two.
//
// One array, the labels, serves the whole search (Pearce, "A
// space-efficient algorithm for finding strongly connected components",
// IPL 116, 2016; the direction as SciPy 1.18 has it): a vertex's entry is
// -1 until it is visited, then its visiting index -- counted down from
// n - 1 -- or the highest index its successors showed (its link) while it
// is open, and once its component is complete the component's number,
// counted up from 0.  The numbers of complete components lie below every
// visiting index still in use, so one comparison labels[w] > high serves
// both "w is still open" and "w's link", and the labels need no
// renumbering at the end.  The visiting indices of a complete component
// are given back.  The vertex being read is held in registers (its next
// entry, its row's end, its link, whether it is a root); the path above it
// lies on two stacks, one of vertices and one of the positions to resume
// their rows at, and members of an open component wait on a third,
// sharing the vertices' memory from its other end (Arena).  Input that
// fails the check leaves through one exit at the end of the search, not a
// return inside its loops (with those, GCC kept the search's counters in
// memory: a chain of 10**6 vertices took half as long again), and the
// loops take one of two shapes by the graph's mean row length (tarjan).
//
// The search stops early where one component is left: every vertex
// visited and the finishing vertex reaching the root.  The entries of the
// rows it did not read are still checked (Check): row by row behind a
// short path, every entry in one vectorised sweep behind a long one; and
// the open vertices take the last number through the stacks where they
// are few, else by one sweep over the labels (open ones hold more than
// any complete component's number: labels[v] = min(labels[v], last)).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace meshccl {
namespace strong {

using i64 = std::int64_t;

// Memory for the stacks of the search, one allocation (tarjan says how
// it is laid out), from malloc, which hands a repeated call the block the
// last one freed, its pages in memory already.  Pages are touched only as
// deep as the stacks go, and one the process has not touched yet costs a
// fault the first time (the kernel maps and zeroes it): a search a
// million vertices deep touches 8 MB of stack, 2000 pages of 4 KiB, which
// cost over half as much again as the search itself (2-vCPU VM), each
// call where malloc's block was fresh -- mapped afresh, or heap memory
// malloc gave back to the system since (glibc does so when a caller frees
// a large block at its heap's top, as SciPy's search does each call).  So
// a block of 512 KiB or more is aligned to 2 MiB and asks for huge pages
// (as NumPy does for its arrays): fresh, it faults once per 2 MiB (a chain
// of 10**5 vertices in turn with SciPy 1.18: 261 faults a call, 0.76x
// SciPy's speed, before; none, 1.03x, after); reused, as it was.
class Arena {
  public:
    explicit Arena(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 16)) {
        constexpr std::size_t huge = std::size_t(1) << 21;
        const bool aligned = kHugePages && bytes_ >= huge / 4;  // (from 512 KiB)
        // (aligned inside a block of 2 MiB more: posix_memalign's larger
        // request is mapped afresh by every call, where malloc's is reused)
        const std::size_t whole = (bytes_ + huge - 1) & ~(huge - 1);
        if (!(block_ = static_cast<char*>(std::malloc(aligned ? whole + huge : bytes_))))
            throw std::bad_alloc();
        p_ = block_;
#if defined(__linux__)
        if (aligned) {
            p_ = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(block_) + huge - 1) &
                                         ~std::uintptr_t(huge - 1));
            madvise(p_, whole, MADV_HUGEPAGE);
        }
#endif
    }
    ~Arena() { std::free(block_); }
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    template <class T>
    T* begin() const { return reinterpret_cast<T*>(p_); }
    template <class T>
    T* end() const { return reinterpret_cast<T*>(p_ + bytes_); }

  private:
#if defined(__linux__)
    static constexpr bool kHugePages = true;
#else
    static constexpr bool kHugePages = false;
#endif
    std::size_t bytes_;
    char* block_;
    char* p_;
};

// Whether the m values x[0..m) lie in [0, n): no branch a value, and
// nothing but ORs and subtractions, which vectorise on every x86-64 (x
// lies in [0, n) when neither x nor n - 1 - x has its sign bit set, both
// taken as unsigned: a negative x sets it in the first, one past n - 1 in
// the second).  Not inlined: inside the search GCC leaves it scalar.
template <class X>
[[gnu::noinline]] bool in_range(const X* x, i64 m, i64 n) {
    using U = std::make_unsigned_t<X>;
    if (n <= 0) return m == 0;
    const U top = U(std::min<i64>(n - 1, i64(std::numeric_limits<X>::max())));
    U acc = 0;
    for (i64 k = 0; k < m; ++k) acc |= U(x[k]) | U(top - U(x[k]));
    return (acc >> (8 * sizeof(X) - 1)) == 0;
}

// The search.  Backward: read every row from its end.  P, X: the types of
// indptr and indices (int32 where they fit: half the bytes to fetch).
// labels (n entries) ends holding each vertex's component, numbered 0, 1,
// ... in the order they complete.  Returns the number of components.
//
// Check: the CSR is checked as the search reads it, not in a pass of its
// own before (which costs a sixth of the search on a mesh: one more sweep
// over every index): the caller has checked indptr[0] == 0 and indptr[n]
// == len(indices); every vertex is visited once, and its row's bounds are
// checked then, before any entry of the row is read (0 <= indptr[v] <=
// indptr[v + 1] <= indptr[n]: together every pair, so indptr never
// decreases), and every entry is checked to lie in [0, n) as it is read.
// Returns -1 at the first value that fails (labels is then garbage).
template <class I, bool Backward, bool Check, bool Paths, class P, class X>
[[gnu::noinline]] i64 search(const P* indptr, const X* indices, i64 n, I* labels) {
    const I VOID = -1;
    std::fill(labels, labels + n, VOID);
    // The search path above the vertex being read: each vertex (as ~v,
    // negative, once a successor showed a higher link: v is then no root)
    // in `path`, the next entry of its row to read (Backward: one past it)
    // at the same height in `resume`.  The waiting vertices grow down from
    // the end of `path`'s n slots (a vertex is on the path or waiting, not
    // both, and the one being read on neither: they never meet).
    const std::size_t resume_bytes = (sizeof(P) * std::size_t(n) + 63) & ~std::size_t(63);
    Arena arena(resume_bytes + sizeof(I) * std::size_t(n));
    P* const resume = arena.begin<P>();
    I* const path = reinterpret_cast<I*>(arena.begin<char>() + resume_bytes);
    i64 depth = 0;                        // the path's length
    I* const wait0 = arena.end<I>();
    I* wait = wait0;                      // the top waiting vertex
    const I top = I(n - 1);               // the visiting index of every search's root
    I index = top;                        // the next visiting index
    I c = 0;                              // the next component number
    i64 done = 0;  // vertices of complete components (visited: top - index + done)
    auto last = [&](I v) { return Backward ? i64(indptr[v]) : i64(indptr[v + 1]); };
    const i64 end = i64(indptr[n]);
    // Enters row v: e, stop = its first entry and its end.  Its bounds are
    // read before v's label is written: a load behind a store to the same
    // offset in another page (labels[v], indptr[v] of arrays that both
    // start 16 bytes into a page, as large allocations do) waits for the
    // store: on the cycle through all vertices in order (2-vCPU VM) reading
    // them after the store took a fifth longer.  Returns whether the row
    // lies inside the CSR (Check).
    auto enter = [&](I v, i64& e, i64& stop) {
        const i64 a = i64(indptr[v]), b = i64(indptr[v + 1]);
        e = Backward ? b : a;
        stop = Backward ? a : b;
        using UP = std::make_unsigned_t<P>;
        return !Check || ((UP(a) <= UP(b)) & (UP(b) <= UP(end)));
    };
    // a path entry's vertex (~v for a negative entry, without a branch)
    auto vertex = [](I x) { return I(x ^ (x >> (8 * sizeof(I) - 1))); };
    using U = std::make_unsigned_t<X>;
    for (i64 s = 0; s < n; ++s) {
        if (labels[s] != VOID) continue;
        // v: the vertex being read, e: its next entry, stop: its row's end,
        // high: its link so far, root: whether no successor raised it
        I v = I(s);
        i64 e, stop;
        if (!enter(v, e, stop)) [[unlikely]]
            goto invalid;
        I high = labels[v] = index--;  // (top: every earlier search is complete)
        bool root = true;
        for (;;) {
            // read the row up to the next unvisited successor
            I w;
            if constexpr (!Paths) w = VOID;
            for (;;) {
                if constexpr (Paths) {
                    if (e == stop) goto finished;
                } else if (e == stop) {
                    break;
                }
                const X y = indices[Backward ? e - 1 : e];
                if (Check && U(y) >= U(n)) [[unlikely]]
                    goto invalid;
                e += Backward ? -1 : 1;
                const I r = labels[I(y)];
                if (r == VOID) {
                    w = I(y);
                    break;
                }
                if (r > high) {
                    high = r;
                    root = false;
                }
            }
            if (Paths || w != VOID) {  // descend to w
                const i64 next = e;
                if (!enter(w, e, stop)) [[unlikely]]
                    goto invalid;
                if (!root) labels[v] = high;  // (a root's is its visiting index already)
                resume[depth] = P(next);
                path[depth++] = root ? v : ~v;
                v = w;
                high = labels[w] = index--;
                root = true;
                if (Backward) {
                    // ask for w's successors' labels and rows at once, so that
                    // their cache misses overlap, not one a descent (reading
                    // rows backward, the search jumps to each row's largest
                    // neighbour first; forward, it walks on to nearby
                    // vertices, and on the H200's host this cost 6-9 % there)
                    for (i64 k = std::max(stop, e - 16); k < e; ++k) {
                        __builtin_prefetch(labels + indices[k]);
                        __builtin_prefetch(indptr + indices[k]);
                    }
                }
                continue;
            }
        finished:
            if (high == top && i64(index) + 1 == done) {
                // Every vertex is visited and v reaches s (visiting index
                // top): the vertices still open are one component, s's --
                // the path runs from s to v, and each waiting vertex belongs
                // to the component of one on the path -- and no other can
                // complete after it, so it is the last, numbered now (SciPy's
                // search stops here too).  A graph of one giant component
                // skips the unwinding of its whole path and the rest of its
                // rows.
                if (Check) {
                    // the rows' entries not read yet: row by row where the
                    // path is short, else every entry in one sweep (a path
                    // of most vertices leaves short pieces of most rows)
                    if (depth * 16 < end) {
                        for (i64 q = 0; q < depth; ++q) {
                            const I u = vertex(path[q]);
                            const i64 a = Backward ? i64(indptr[u]) : i64(resume[q]);
                            const i64 b = Backward ? i64(resume[q]) : i64(indptr[u + 1]);
                            if (!in_range(indices + a, b - a, n)) return -1;
                        }
                    } else if (!in_range(indices, end, n)) {
                        return -1;
                    }
                }
                // the open vertices' labels (visiting indices and links, all
                // above every complete component's number) become c: through
                // the stacks where they hold few, else by one vectorised
                // sweep over every label (a scatter costs several times more
                // a vertex than a sweep)
                if ((depth + (wait0 - wait)) * 4 < n) {
                    for (i64 q = 0; q < depth; ++q) labels[vertex(path[q])] = c;
                    while (wait != wait0) labels[*wait++] = c;
                    labels[v] = c;
                } else {
                    for (i64 u = 0; u < n; ++u) labels[u] = std::min(labels[u], c);
                }
                return i64(c) + 1;
            }
            // v is finished
            if (root) {  // v's component: v and the waiting vertices of high <= v's
                ++index;
                ++done;
                while (wait != wait0 && labels[*wait] <= high) {
                    labels[*wait++] = c;
                    ++index;
                    ++done;
                }
                labels[v] = c++;  // (below every visiting index in use: no link takes it)
            } else {
                labels[v] = high;
                *--wait = v;
            }
            if (depth == 0) break;
            // back to the parent, whose link takes v's
            const I u = path[--depth];
            e = i64(resume[depth]);
            const bool parent_root = u >= 0;
            v = vertex(u);
            stop = last(v);
            const I h = labels[v];
            if (root || high <= h) {  // (a complete component's number is below h)
                high = h;
                root = parent_root;
            } else {
                root = false;
            }
        }
    }
    return i64(c);
invalid:
    return -1;
}

// The search (above) in the shape of its loops that suits the graph:
// Paths where rows hold 1.5 entries or fewer on average (chains, cycles),
// where the search mostly descends and unwinds, else the shape for longer
// rows, where it mostly reads them.  The two differ in whether the end of
// a row jumps straight to its finish, which only moves what GCC keeps in
// registers: on paths the other shape left the search's counters in
// memory (a chain of 10**6 vertices took 1.5 times as long), on rows of 16
// entries this one leaves the row's reading short of registers (R-MAT
// 10**6 edges 10 % slower; 2-vCPU VM).
template <class I, bool Backward, bool Check = false, class P, class X>
i64 tarjan(const P* indptr, const X* indices, i64 n, I* labels) {
    const bool paths = n > 0 && 2 * i64(indptr[n]) <= 3 * n;
    return paths ? search<I, Backward, Check, true>(indptr, indices, n, labels)
                 : search<I, Backward, Check, false>(indptr, indices, n, labels);
}

// Sorts each row first..last of a CSR ascending, in place, where it is not
// already (most rows of most inputs are: one look at each settles them).
template <class O>
void sort_row(O* first, O* last) {
    if (std::is_sorted(first, last)) return;
    if (last - first <= 16) {  // insertion sort: short rows are the common case
        for (O* a = first + 1; a < last; ++a) {
            const O x = *a;
            O* b = a;
            for (; b > first && b[-1] > x; --b) *b = b[-1];
            *b = x;
        }
    } else {
        std::sort(first, last);
    }
}

// CSR rows (n + 1 offsets into out) of the pairs (key[k], val[k]) in the
// order of k within each row: a stable counting sort by key.
template <class S, class O>
void counting_rows(const S* key, const S* val, i64 m, i64 n, O* indptr, O* out) {
    for (i64 i = 0; i <= n; ++i) indptr[i] = 0;
    for (i64 k = 0; k < m; ++k) ++indptr[key[k] + 1];
    for (i64 i = 0; i < n; ++i) indptr[i + 1] += indptr[i];
    std::vector<O> cursor(indptr, indptr + n);
    for (i64 k = 0; k < m; ++k) out[cursor[key[k]]++] = O(val[k]);
}

// The transpose of a CSR (n vertices; X: its type, O: the result's): row w
// of the result lists the v with w in row v, ascending (rows are read in
// order).
template <class X, class O>
void transpose_rows(const X* indptr, const X* indices, i64 n, O* tptr, O* tidx) {
    const i64 m = i64(indptr[n]);
    for (i64 i = 0; i <= n; ++i) tptr[i] = 0;
    for (i64 e = 0; e < m; ++e) ++tptr[indices[e] + 1];
    for (i64 i = 0; i < n; ++i) tptr[i + 1] += tptr[i];
    std::vector<O> cursor(tptr, tptr + n);
    for (i64 v = 0; v < n; ++v)
        for (i64 e = i64(indptr[v]); e < i64(indptr[v + 1]); ++e) tidx[cursor[indices[e]]++] = O(v);
}

// The CSR (indptr: n + 1 offsets, out: m targets) of the edges src[k] ->
// dst[k] on n vertices, each row's targets ascending.  An edge list already
// in (source, target) order -- a dense matrix's nonzeros, a canonical COO --
// is copied as it is; any other takes a radix sort of two stable counting
// sorts, by target and then by source (O(n + m), where sorting each row by
// comparisons costs several times more on rows of hundreds of edges).
// S: the ids' type, O: the result's.
template <class S, class O>
void rows_of_edges(const S* src, const S* dst, i64 m, i64 n, O* indptr, O* out) {
    // in order?  Checked without a branch per edge, a block at a time, so
    // that an edge list out of order is seen within its first block
    bool ordered = true;
    for (i64 b = 1; b < m && ordered; b += 4096) {
        const i64 e = std::min(m, b + 4096);
        for (i64 k = b; k < e; ++k)
            ordered &= (src[k - 1] < src[k]) | ((src[k - 1] == src[k]) & (dst[k - 1] <= dst[k]));
    }
    if (ordered) {  // in order: the rows are runs of src (counted: no branch per row)
        for (i64 i = 0; i <= n; ++i) indptr[i] = 0;
        for (i64 k = 0; k < m; ++k) {
            ++indptr[src[k] + 1];
            out[k] = O(dst[k]);
        }
        for (i64 i = 0; i < n; ++i) indptr[i + 1] += indptr[i];
        return;
    }
    std::vector<O> tptr(n + 1), tidx(m);
    counting_rows(dst, src, m, n, tptr.data(), tidx.data());  // rows by target
    transpose_rows(tptr.data(), tidx.data(), n, indptr, out);
}

}  // namespace strong
}  // namespace meshccl
