// meshccl._cpu._core.csr_components: the weak or strong components of a
// CSR in one call, its check included.
//
// This is the path of the most common input of
// meshccl.graph.connected_components: a SciPy CSR matrix (or an
// (indptr, indices) pair of NumPy arrays) with int32 or int64 indices and
// no options.  On a graph of a few hundred edges the work itself takes a
// microsecond or two, so what the Python layers around it cost decides the
// speed: SciPy's own call takes about 5 us.  Here the arrays go straight
// from the API to this function, which checks in two tight loops what
// meshccl/graph/_input.py checks with NumPy reductions (indptr starts at 0,
// never decreases and ends at len(indices); every index lies in [0, n)),
// then runs
//
// - weak components: graph.hpp's serial union-find over the rows, read in
//   their own index type (no widened copy), numbered by number(): SciPy's
//   order of smallest vertices;
// - strong components: strong.hpp's Tarjan search, each row read forward
//   (SciPy 1.18 on) or backward (up to 1.17), on the rows sorted first
//   when asked (SciPy up to 1.17 reads a matrix that is not float64 with
//   sorted rows: meshccl/graph/_scipy.py) -- a sorted copy only where some
//   row is out of order.
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

// Below this many vertices + stored edges the GIL stays held: releasing and
// taking it back costs more than the work.
constexpr i64 kReleaseGilFrom = i64(1) << 14;

// Whether (indptr, indices) is a valid CSR of n vertices: indptr starts at
// 0, never decreases and ends at m = len(indices); every index in [0, n).
// Branch-free loops (one flag each), so the check runs at memory speed.
template <class X>
bool valid_csr(const X* indptr, const X* indices, i64 n, i64 m) {
    if (i64(indptr[0]) != 0 || i64(indptr[n]) != m) return false;
    bool ok = true;
    for (i64 v = 0; v < n; ++v) ok &= indptr[v] <= indptr[v + 1];
    using U = std::make_unsigned_t<X>;
    const U bound = U(n);  // a negative index reads as a huge unsigned one
    for (i64 e = 0; e < m; ++e) ok &= U(indices[e]) < bound;
    return ok;
}

// The strong components into labels: Tarjan's search on the rows as given,
// or sorted first with sort_rows.  own: indices are a writable copy of the
// caller's (sorted in place); otherwise rows out of order are sorted in a
// copy made here.
template <class X>
i64 strong_of(const X* indptr, const X* indices, bool own, i64 n, i64 m, std::int32_t* labels,
              bool backward, bool sort_rows) {
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
    const i64 count = backward ? meshccl::strong::tarjan<std::int32_t, true>(indptr, indices, n, labels)
                               : meshccl::strong::tarjan<std::int32_t, false>(indptr, indices, n, labels);
    for (i64 v = 0; v < n; ++v) labels[v] = std::int32_t(n - 1 - i64(labels[v]));
    return count;
}

// The components into labels (int32, n entries); -1 where the input is no
// valid CSR.
template <class X>
i64 run(const X* indptr, const X* indices, i64 n, i64 m, std::int32_t* labels, bool strong,
        bool backward, bool sort_rows) {
    std::optional<nb::gil_scoped_release> release;
    if (n + m >= kReleaseGilFrom) release.emplace();
    if (!valid_csr(indptr, indices, n, m)) return -1;
    if (!strong) {
        meshccl::graph::union_csr(indptr, indices, labels, n, (i64*)nullptr, (i64*)nullptr);
        return meshccl::graph::number(labels, n);
    }
    if (sizeof(X) > 4 && m < (i64(1) << 31)) {
        // the search in int32, as meshccl/_cpu/strong.py runs it: its random
        // reads of rows fetch half the bytes
        std::vector<std::int32_t> ip(indptr, indptr + n + 1), ix(indices, indices + m);
        return strong_of(ip.data(), ix.data(), true, n, m, labels, backward, sort_rows);
    }
    return strong_of(indptr, indices, false, n, m, labels, backward, sort_rows);
}

i64 csr_components(const Input& indptr, const Input& indices, Array labels, bool strong,
                   bool backward, bool sort_rows) {
    if (labels.ndim() != 1 || !is<std::int32_t>(labels))
        throw std::invalid_argument("csr_components: labels must be a 1-D int32 array");
    const i64 n = i64(labels.size());
    if (n >= (i64(1) << 31) - 2)
        throw std::invalid_argument("csr_components: int32 labels need n < 2**31 - 2");
    if (indptr.ndim() != 1 || indices.ndim() != 1 || i64(indptr.size()) != n + 1 ||
        indptr.dtype() != indices.dtype())
        return -1;
    const i64 m = i64(indices.size());
    auto* out = static_cast<std::int32_t*>(labels.data());
    if (is<std::int32_t>(indptr))
        return run(static_cast<const std::int32_t*>(indptr.data()),
                   static_cast<const std::int32_t*>(indices.data()), n, m, out, strong, backward,
                   sort_rows);
    if (is<i64>(indptr))
        return run(static_cast<const i64*>(indptr.data()), static_cast<const i64*>(indices.data()),
                   n, m, out, strong, backward, sort_rows);
    return -1;
}

}  // namespace

void register_csr_components(nb::module_& m) {
    m.def("csr_components", &csr_components, nb::arg("indptr"), nb::arg("indices"),
          nb::arg("labels"), nb::arg("strong"), nb::arg("backward"), nb::arg("sort_rows"),
          "Weak or strong components of a CSR (int32 or int64 arrays of one type) into int32 "
          "labels, its check included; the count, or -1 where the CSR is invalid.");
}
