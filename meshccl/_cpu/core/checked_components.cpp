// meshccl._cpu._core.checked_components: the weak or strong components of a
// graph in one call, its check included.
//
// This is the path of the commonest inputs of
// meshccl.graph.connected_components: a SciPy CSR, CSC or COO matrix (or
// NumPy (indptr, indices), or Edges with a vertex count) whose index
// arrays are int32 or int64, every option at its default.  On a graph of a
// few hundred edges the work itself takes a microsecond or two, so what
// the Python layers around it cost decides the speed: SciPy's own call on
// its CSR takes about 5 us.  Here the arrays go straight from the API to
// this function, which checks (in branch-free loops, or for a CSR's strong
// components as the search reads it: strong.hpp's Check) what
// meshccl/graph/_input.py checks with NumPy reductions -- a CSR's (or a
// CSC's, the CSR of the transpose) indptr starts at 0, never decreases and
// ends at len(indices), every index lies in [0, n); an edge list's two
// arrays are of one length with every vertex in [0, n) -- and then runs
//
// - weak components: graph.hpp's serial union-find over the rows or the
//   edges, read in their own index type (no widened copy), numbered by
//   number(): SciPy's order of smallest vertices (a CSC's rows are the
//   transpose's, with the same weak components);
// - strong components: strong.hpp's Tarjan search, each row read forward
//   (SciPy 1.18 on) or backward (up to 1.17), on the rows SciPy reads:
//   a CSR's as stored (sorted first when asked: SciPy up to 1.17 reads a
//   matrix that is not float64 with sorted rows, meshccl/graph/_scipy.py;
//   a sorted copy only where some row is out of order), a CSC transposed
//   and an edge list gathered into rows (strong.hpp's transpose_rows and
//   rows_of_edges: each row ascending) -- always in int32 below 2**31
//   edges, as meshccl/_cpu/strong.py builds them (the search's random
//   reads of rows then fetch half the bytes; an int64 CSR is narrowed and
//   checked in one pass, narrowed_csr).  With `smallest` the strong
//   components are numbered instead in order of each one's smallest vertex
//   (the GPU backend's numbering, for small CuPy graphs solved here): then
//   the order of a row's entries does not matter, and a CSC is searched as
//   it is (the transpose graph has the same strong components).
//
// Invalid input is no error here: the function returns -1 and the caller
// takes the general path (meshccl/graph/_input.py), which raises the error
// that names the array, the value and its position.  Index arrays of other
// types, or of two different types, return -1 as well.  The GIL is
// released only for graphs large enough to pay for it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "bindings.hpp"
#include "graph.hpp"
#include "strong.hpp"

namespace nb = nanobind;
using i64 = std::int64_t;

namespace {

using meshccl::bindings::Array;
using meshccl::bindings::Input;
using meshccl::bindings::is;

// The input's form: the kind argument.
enum Kind : int { CSR = 0, CSC = 1, EDGES = 2 };

// Below this many vertices + stored edges the GIL stays held: releasing and
// taking it back costs more than the work.
constexpr i64 kReleaseGilFrom = i64(1) << 14;

using meshccl::strong::in_range;

// Whether (indptr, indices) is a valid CSR of n vertices and m entries.
template <class X>
bool valid_csr(const X* indptr, const X* indices, i64 n, i64 m) {
    if (i64(indptr[0]) != 0 || i64(indptr[n]) != m) return false;
    bool ok = true;
    for (i64 v = 0; v < n; ++v) ok &= indptr[v] <= indptr[v + 1];
    return ok && in_range(indices, m, n);
}

// Renumbers labels (count of them, each below count) 0.. in order of each
// label's first vertex.
void number_by_smallest(std::int32_t* labels, i64 n, i64 count) {
    std::vector<std::int32_t> to(static_cast<std::size_t>(count), -1);
    std::int32_t next = 0;
    for (i64 v = 0; v < n; ++v) {
        std::int32_t& t = to[labels[v]];
        if (t < 0) t = next++;
        labels[v] = t;
    }
}

// The strong components into labels: Tarjan's search on the rows as given,
// or sorted first with sort_rows.  own: indices is a writable array of ours
// (sorted in place); otherwise rows out of order are sorted in a copy.
// check: the rows and entries are checked as the search reads them
// (strong.hpp; not with sort_rows), -1 if one is invalid.
template <class P, class X>
i64 strong_of(const P* indptr, const X* indices, bool own, i64 n, i64 m, std::int32_t* labels,
              bool backward, bool sort_rows, bool check = false) {
    std::vector<X> copy;
    if (sort_rows) {
        i64 v = 0;
        while (v < n && std::is_sorted(indices + indptr[v], indices + indptr[v + 1])) ++v;
        if (v < n) {
            X* rows = const_cast<X*>(indices);
            if (!own) {
                copy.assign(indices, indices + m);
                rows = copy.data();
                indices = rows;
            }
            for (; v < n; ++v) meshccl::strong::sort_row(rows + indptr[v], rows + indptr[v + 1]);
        }
    }
    using meshccl::strong::tarjan;
    return check ? (backward ? tarjan<std::int32_t, true, true>(indptr, indices, n, labels)
                             : tarjan<std::int32_t, false, true>(indptr, indices, n, labels))
                 : (backward ? tarjan<std::int32_t, true>(indptr, indices, n, labels)
                             : tarjan<std::int32_t, false>(indptr, indices, n, labels));
}

// The CSR (indptr, indices) of n vertices and m entries copied into ip, ix
// of type O, and checked in the same pass (indptr[0] == 0 and indptr[n]
// == m are checked already): whether indptr never decreases and every
// index lies in [0, n).  One read of the input: copying after a check of
// its own read every index twice.
template <class X, class O>
bool narrowed_csr(const X* indptr, const X* indices, i64 n, i64 m, O* ip, O* ix) {
    bool ok = true;
    for (i64 v = 0; v < n; ++v) {
        ok &= indptr[v] <= indptr[v + 1];
        ip[v] = O(indptr[v]);
    }
    ip[n] = O(indptr[n]);
    using U = std::make_unsigned_t<X>;
    const U top = U(n - 1);  // (n >= 1 where m >= 1)
    U acc = 0;
    for (i64 k = 0; k < m; ++k) {
        acc |= U(indices[k]) | U(top - U(indices[k]));  // (in_range's test)
        ix[k] = O(indices[k]);
    }
    return ok && (acc >> (8 * sizeof(X) - 1)) == 0;
}

// The strong components of the rows that kind's (a, b) give, built in O
// (int32 below 2**31 edges, else int64) where they are not the input's (a
// CSR's checked as it is copied: narrowed_csr); -1 for an invalid CSR.
template <class O, class X>
i64 strong_built(int kind, const X* a, const X* b, i64 n, i64 m, std::int32_t* labels,
                 bool backward, bool sort_rows) {
    // (not zeroed: every entry is written before it is read)
    std::unique_ptr<O[]> ip(new O[std::size_t(n + 1)]), ix(new O[std::size_t(std::max<i64>(m, 1))]);
    if (kind == CSR) {
        if (!narrowed_csr(a, b, n, m, ip.get(), ix.get())) return -1;
    } else if (kind == CSC) {
        meshccl::strong::transpose_rows(a, b, n, ip.get(), ix.get());
        sort_rows = false;  // (its rows come ascending)
    } else {
        meshccl::strong::rows_of_edges(a, b, m, n, ip.get(), ix.get());
        sort_rows = false;
    }
    return strong_of(ip.get(), ix.get(), true, n, m, labels, backward, sort_rows);
}

// The components into labels (int32, n entries); -1 where the input is
// invalid.  a, b: (indptr, indices) of a CSR or CSC, (src, dst) of an edge
// list; la, lb their lengths.  smallest: strong components numbered in
// order of their smallest vertex (backward and sort_rows then do not apply).
template <class X>
i64 run(int kind, const X* a, const X* b, i64 la, i64 lb, i64 n, std::int32_t* labels,
        bool strong, bool backward, bool sort_rows, bool smallest) {
    const i64 m = lb;
    std::optional<nb::gil_scoped_release> release;
    if (n + m >= kReleaseGilFrom) release.emplace();
    if (strong && smallest) {
        backward = sort_rows = false;
        if (kind == CSC) kind = CSR;
    }
    const bool narrow = m < (i64(1) << 31);
    // the search reads the caller's CSR itself, and checks it as it goes
    const bool direct = strong && kind == CSR && (sizeof(X) == 4 || !narrow);
    const bool fused = direct && !sort_rows;
    // an int64 CSR's strong components: checked as it is narrowed to int32
    const bool narrowed = strong && kind == CSR && !direct;
    if (kind == EDGES ? !(la == lb && in_range(a, m, n) && in_range(b, m, n))
                      : !(la == n + 1 && (fused || narrowed ? i64(a[0]) == 0 && i64(a[n]) == m
                                                            : valid_csr(a, b, n, m))))
        return -1;
    if (!strong) {
        if (kind == EDGES)
            meshccl::graph::union_edges(a, b, m, labels, n, (i64*)nullptr, (i64*)nullptr);
        else
            meshccl::graph::union_csr(a, b, labels, n, (i64*)nullptr, (i64*)nullptr);
        return meshccl::graph::number(labels, n);
    }
    const i64 count =
        direct ? strong_of(a, b, false, n, m, labels, backward, sort_rows, fused)
        : narrow ? strong_built<std::int32_t>(kind, a, b, n, m, labels, backward, sort_rows)
                 : strong_built<i64>(kind, a, b, n, m, labels, backward, sort_rows);
    if (smallest && count > 0) number_by_smallest(labels, n, count);
    return count;
}

i64 checked_components(int kind, const Input& a, const Input& b, Array labels, bool strong,
                       bool backward, bool sort_rows, bool smallest) {
    if (labels.ndim() != 1 || !is<std::int32_t>(labels))
        throw std::invalid_argument("checked_components: labels must be a 1-D int32 array");
    if (kind != CSR && kind != CSC && kind != EDGES)
        throw std::invalid_argument("checked_components: kind must be 0 (CSR), 1 (CSC) or "
                                    "2 (edges)");
    const i64 n = i64(labels.size());
    if (n >= (i64(1) << 31) - 2)
        throw std::invalid_argument("checked_components: int32 labels need n < 2**31 - 2");
    if (a.ndim() != 1 || b.ndim() != 1 || a.dtype() != b.dtype()) return -1;
    auto* out = static_cast<std::int32_t*>(labels.data());
    const i64 la = i64(a.size()), lb = i64(b.size());
    if (is<std::int32_t>(a))
        return run(kind, static_cast<const std::int32_t*>(a.data()),
                   static_cast<const std::int32_t*>(b.data()), la, lb, n, out, strong, backward,
                   sort_rows, smallest);
    if (is<i64>(a))
        return run(kind, static_cast<const i64*>(a.data()), static_cast<const i64*>(b.data()),
                   la, lb, n, out, strong, backward, sort_rows, smallest);
    return -1;
}

}  // namespace

void register_checked_components(nb::module_& m) {
    m.def("checked_components", &checked_components, nb::arg("kind"), nb::arg("a"), nb::arg("b"),
          nb::arg("labels"), nb::arg("strong"), nb::arg("backward"), nb::arg("sort_rows"),
          nb::arg("smallest") = false,
          "Weak or strong components of a CSR (kind 0), CSC (1) or edge list (2) of int32 or "
          "int64 arrays of one type into int32 labels, the check included; the count, or -1 "
          "where the input is invalid.  smallest: strong components numbered in order of "
          "their smallest vertex.");
}
