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
// rindex follows Pearce ("A space-efficient algorithm for finding strongly
// connected components", IPL 116, 2016): a vertex's visiting index while it
// is on the path or waits for its root, and once its component is complete
// the component's number counted down from n - 1, larger than every
// visiting index still in use, so one comparison rindex[w] < low serves
// both "w is still open" and "w's low link".  The visiting indices of a
// completed component are given back.  Members of an open component wait
// on a second stack above the vertices of older ones.  At the end label =
// n - 1 - rindex: 0 for the first component completed.
#pragma once

#include <cstdint>
#include <vector>

namespace meshccl {
namespace strong {

using i64 = std::int64_t;

// The search.  Backward: read every row from its end.  rindex (n entries)
// ends holding n - 1 - label.  Returns the number of components.
template <class I, bool Backward>
i64 tarjan(const i64* indptr, const i64* indices, i64 n, I* rindex) {
    const I VOID = -1;
    struct Frame {
        i64 next;   // the next entry of v's row to read (Backward: one past it)
        I v;
        bool root;  // no successor found so far with a smaller rindex
    };
    for (i64 v = 0; v < n; ++v) rindex[v] = VOID;
    std::vector<Frame> path;
    std::vector<I> waiting;
    I index = 0;
    I c = I(n - 1);
    auto first = [&](I v) { return Backward ? indptr[v + 1] : indptr[v]; };
    for (i64 s = 0; s < n; ++s) {
        if (rindex[s] != VOID) continue;
        rindex[s] = index++;
        path.push_back(Frame{first(I(s)), I(s), true});
        while (!path.empty()) {
            Frame& f = path.back();
            const I v = f.v;
            const i64 stop = Backward ? indptr[v] : indptr[v + 1];
            i64 e = f.next;
            I low = rindex[v];
            bool root = f.root;
            // read the row up to the next unvisited successor
            I w = VOID;
            while (e != stop) {
                const I x = I(indices[Backward ? e - 1 : e]);
                e += Backward ? -1 : 1;
                const I r = rindex[x];
                if (r == VOID) {
                    w = x;
                    break;
                }
                if (r < low) {
                    low = r;
                    root = false;
                }
            }
            rindex[v] = low;
            if (w != VOID) {  // descend to w
                f.next = e;
                f.root = root;
                rindex[w] = index++;
                path.push_back(Frame{first(w), w, true});
                continue;
            }
            path.pop_back();  // v is finished
            if (root) {       // v's component: v and the waiting vertices of low >= v's
                --index;
                while (!waiting.empty() && low <= rindex[waiting.back()]) {
                    rindex[waiting.back()] = c;
                    waiting.pop_back();
                    --index;
                }
                rindex[v] = c--;
            } else {
                waiting.push_back(v);
            }
            if (!path.empty()) {  // the parent's low link takes v's
                Frame& p = path.back();
                if (rindex[v] < rindex[p.v]) {
                    rindex[p.v] = rindex[v];
                    p.root = false;
                }
            }
        }
    }
    return n - 1 - i64(c);
}

// CSR rows (n + 1 offsets into out) of the pairs (key[k], val[k]) in the
// order of k within each row: a stable counting sort by key.
inline void counting_rows(const i64* key, const i64* val, i64 m, i64 n, i64* indptr, i64* out) {
    for (i64 i = 0; i <= n; ++i) indptr[i] = 0;
    for (i64 k = 0; k < m; ++k) ++indptr[key[k] + 1];
    for (i64 i = 0; i < n; ++i) indptr[i + 1] += indptr[i];
    std::vector<i64> cursor(indptr, indptr + n);
    for (i64 k = 0; k < m; ++k) out[cursor[key[k]]++] = val[k];
}

// The transpose of a CSR (n vertices): row w of the result lists the v with
// w in row v, ascending (rows are read in order).
inline void transpose_rows(const i64* indptr, const i64* indices, i64 n, i64* tptr, i64* tidx) {
    const i64 m = indptr[n];
    for (i64 i = 0; i <= n; ++i) tptr[i] = 0;
    for (i64 e = 0; e < m; ++e) ++tptr[indices[e] + 1];
    for (i64 i = 0; i < n; ++i) tptr[i + 1] += tptr[i];
    std::vector<i64> cursor(tptr, tptr + n);
    for (i64 v = 0; v < n; ++v)
        for (i64 e = indptr[v]; e < indptr[v + 1]; ++e) tidx[cursor[indices[e]]++] = v;
}

}  // namespace strong
}  // namespace meshccl
