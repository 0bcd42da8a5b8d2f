// meshccl._cpu._core's strong components (strong.hpp), the CSR builders
// they need and the int32 arrays of large graphs' labels, bound with
// nanobind: meshccl/_cpu/strong.py checks the arguments' meaning
// (validated graph arrays from meshccl/graph/_input.py); these functions
// check types and sizes, and release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.hpp"
#include "strong.hpp"

namespace nb = nanobind;
using i64 = std::int64_t;

namespace {

using meshccl::bindings::Array;
using meshccl::bindings::Input;
using meshccl::bindings::is;

// The components of the CSR (indptr, indices) into labels (int32 or int64, n
// entries), each row read in the order `rows` names: "forward" (SciPy >=
// 1.18) or "backward" (SciPy <= 1.17).  Returns their number.
i64 strong_components(const Input& indptr, const Input& indices, Array labels,
                      const std::string& rows) {
    const i64 n = i64(labels.size());
    if (labels.ndim() != 1 || indptr.ndim() != 1 || indices.ndim() != 1 ||
        i64(indptr.size()) != n + 1)
        throw std::invalid_argument("strong_components: labels must be 1-D with len(indptr) - 1 "
                                    "entries");
    if (rows != "forward" && rows != "backward")
        throw std::invalid_argument("strong_components: rows must be 'forward' or 'backward', "
                                    "got '" + rows + "'");
    const bool backward = rows == "backward";
    auto search = [&](const auto* ip, const auto* ix, auto* out) -> i64 {
        using I = std::remove_pointer_t<decltype(out)>;
        nb::gil_scoped_release release;
        return backward ? meshccl::strong::tarjan<I, true>(ip, ix, n, out)
                        : meshccl::strong::tarjan<I, false>(ip, ix, n, out);
    };
    auto with_labels = [&](const auto* ip, const auto* ix) -> i64 {
        if (is<std::int32_t>(labels)) {
            if (n >= (i64(1) << 31) - 2)
                throw std::invalid_argument("strong_components: int32 labels need n < 2**31 - 2");
            return search(ip, ix, static_cast<std::int32_t*>(labels.data()));
        }
        if (is<i64>(labels)) return search(ip, ix, static_cast<i64*>(labels.data()));
        throw std::invalid_argument("strong_components: labels must be int32 or int64");
    };
    auto with_indices = [&](const auto* ip) -> i64 {
        if (is<std::int32_t>(indices))
            return with_labels(ip, static_cast<const std::int32_t*>(indices.data()));
        if (is<i64>(indices)) return with_labels(ip, static_cast<const i64*>(indices.data()));
        throw std::invalid_argument("strong_components: indices must be int32 or int64");
    };
    if (is<std::int32_t>(indptr)) return with_indices(static_cast<const std::int32_t*>(indptr.data()));
    if (is<i64>(indptr)) return with_indices(static_cast<const i64*>(indptr.data()));
    throw std::invalid_argument("strong_components: indptr must be int32 or int64");
}

// a's data as T (const T for a read-only array).
template <class T, class A>
auto typed(const A& a) {
    if constexpr (std::is_const_v<std::remove_pointer_t<decltype(a.data())>>)
        return static_cast<const T*>(a.data());
    else
        return static_cast<T*>(a.data());
}

// f(pointer to a's data) for a 1-D int32 or int64 array a.
template <class A, class F>
decltype(auto) with_ints(const A& a, const char* who, const char* name, F&& f) {
    if (a.ndim() == 1) {
        if (is<std::int32_t>(a)) return f(typed<std::int32_t>(a));
        if (is<i64>(a)) return f(typed<i64>(a));
    }
    throw std::invalid_argument(std::string(who) + ": " + name +
                                " must be a 1-D int32 or int64 array");
}

// Fills (indptr, indices) (n + 1 and m entries, int32 or int64, of one
// type) with the CSR of the edges src[k] -> dst[k] (m of them, int32 or
// int64, of one type, all in [0, n)), each row's targets ascending.
void rows_of_edges(const Input& src, const Input& dst, Array indptr, Array indices) {
    const char* who = "rows_of_edges";
    const i64 m = i64(src.size());
    const i64 n = i64(indptr.size()) - 1;
    if (i64(dst.size()) != m || i64(indices.size()) != m || n < 0 || src.dtype() != dst.dtype() ||
        indptr.dtype() != indices.dtype())
        throw std::invalid_argument("rows_of_edges: src, dst and indices must hold the same number "
                                    "of entries, indptr at least one; src, dst of one type and "
                                    "indptr, indices of one type");
    with_ints(src, who, "src", [&](auto* s) {
        const auto* d = static_cast<decltype(s)>(dst.data());
        with_ints(indptr, who, "indptr", [&](auto* p) {
            auto* x = static_cast<decltype(p)>(indices.data());
            nb::gil_scoped_release release;
            meshccl::strong::rows_of_edges(s, d, m, n, p, x);
        });
    });
}

// Fills (tptr, tidx) with the transpose of the CSR (indptr, indices), each
// row ascending; the result's type may differ from the input's.
void transpose(const Input& indptr, const Input& indices, Array tptr, Array tidx) {
    const char* who = "transpose";
    const i64 n = i64(indptr.size()) - 1;
    if (n < 0 || i64(tptr.size()) != n + 1 || tidx.size() != indices.size() ||
        indptr.dtype() != indices.dtype() || tptr.dtype() != tidx.dtype())
        throw std::invalid_argument("transpose: tptr must have len(indptr) entries and tidx "
                                    "len(indices); indptr, indices of one type and tptr, tidx "
                                    "of one type");
    with_ints(indptr, who, "indptr", [&](auto* ip) {
        const auto* ix = static_cast<decltype(ip)>(indices.data());
        if (i64(ip[n]) != i64(indices.size()))
            throw std::invalid_argument("transpose: indptr[-1] must equal len(indices)");
        with_ints(tptr, who, "tptr", [&](auto* tp) {
            auto* tx = static_cast<decltype(tp)>(tidx.data());
            nb::gil_scoped_release release;
            meshccl::strong::transpose_rows(ip, ix, n, tp, tx);
        });
    });
}

// Whether every row of the CSR (indptr, indices) is sorted ascending.
bool rows_sorted(const Input& indptr, const Input& indices) {
    const char* who = "rows_sorted";
    const i64 n = i64(indptr.size()) - 1;
    if (n < 0) throw std::invalid_argument("rows_sorted: indptr must not be empty");
    return with_ints(indptr, who, "indptr", [&](auto* ip) {
        return with_ints(indices, who, "indices", [&](auto* ix) {
            if (i64(ip[n]) != i64(indices.size()))
                throw std::invalid_argument("rows_sorted: indptr[-1] must equal len(indices)");
            nb::gil_scoped_release release;
            for (i64 v = 0; v < n; ++v)
                if (!std::is_sorted(ix + ip[v], ix + ip[v + 1])) return false;
            return true;
        });
    });
}

// Sorts every row of the CSR (indptr, indices) ascending, in place.
void sort_rows(const Input& indptr, Array indices) {
    const char* who = "sort_rows";
    const i64 n = i64(indptr.size()) - 1;
    if (n < 0) throw std::invalid_argument("sort_rows: indptr must not be empty");
    with_ints(indptr, who, "indptr", [&](auto* ip) {
        with_ints(indices, who, "indices", [&](auto* ix) {
            if (i64(ip[n]) != i64(indices.size()))
                throw std::invalid_argument("sort_rows: indptr[-1] must equal len(indices)");
            nb::gil_scoped_release release;
            for (i64 v = 0; v < n; ++v) meshccl::strong::sort_row(ix + ip[v], ix + ip[v + 1]);
        });
    });
}

// An uninitialised int32 array of n entries, from 512 KiB on aligned to 2
// MiB and asking for huge pages (strong.hpp's Arena): the labels of a large
// graph, which a fresh NumPy array below 4 MiB faults in page by page.
nb::ndarray<nb::numpy, std::int32_t, nb::ndim<1>> int32_array(std::size_t n) {
    auto* block = new meshccl::strong::Arena(sizeof(std::int32_t) * n);
    nb::capsule owner(block, [](void* p) noexcept { delete static_cast<meshccl::strong::Arena*>(p); });
    std::size_t shape[1] = {n};
    return nb::ndarray<nb::numpy, std::int32_t, nb::ndim<1>>(block->begin<std::int32_t>(), 1, shape,
                                                              owner);
}

}  // namespace

void register_strong(nb::module_& m) {
    m.def("strong_components", &strong_components, nb::arg("indptr"), nb::arg("indices"),
          nb::arg("labels"), nb::arg("rows"),
          "Strong components of a CSR into labels, numbered in the order a depth-first "
          "search reading each row 'forward' or 'backward' completes them; returns their "
          "number.");
    m.def("int32_array", &int32_array, nb::arg("n"),
          "An uninitialised int32 array of n entries, in huge pages from 512 KiB.");
    m.def("rows_of_edges", &rows_of_edges, nb::arg("src"), nb::arg("dst"), nb::arg("indptr"),
          nb::arg("indices"),
          "Fills (indptr, indices) with the CSR of an edge list, each row's targets ascending.");
    m.def("transpose", &transpose, nb::arg("indptr"), nb::arg("indices"), nb::arg("tptr"),
          nb::arg("tidx"), "Fills (tptr, tidx) with a CSR's transpose, each row ascending.");
    m.def("rows_sorted", &rows_sorted, nb::arg("indptr"), nb::arg("indices"),
          "Whether every row of a CSR is sorted ascending.");
    m.def("sort_rows", &sort_rows, nb::arg("indptr"), nb::arg("indices"),
          "Sorts every row of a CSR ascending, in place.");
}
