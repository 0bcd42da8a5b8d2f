// meshccl._cpu._core's strong components (strong.hpp) and the CSR builders
// they need, bound with nanobind: meshccl/_cpu/strong.py checks the
// arguments' meaning (validated graph arrays from meshccl/graph/_input.py);
// these functions check types and sizes, and release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "strong.hpp"

namespace nb = nanobind;
using i64 = std::int64_t;

namespace {

using Array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;
using Input = nb::ndarray<nb::numpy, nb::ro, nb::c_contig, nb::device::cpu>;

template <class T, class A>
bool is(const A& a) {
    return a.dtype() == nb::dtype<T>();
}

const i64* int64_data(const Input& a, const char* who, const char* name) {
    if (!is<i64>(a) || a.ndim() != 1)
        throw std::invalid_argument(std::string(who) + ": " + name + " must be a 1-D int64 array");
    return static_cast<const i64*>(a.data());
}

// A new 1-D int64 NumPy array of n entries (owned by the returned object).
std::pair<nb::object, i64*> new_int64(i64 n) {
    auto* heap = new std::vector<i64>(std::size_t(std::max<i64>(n, 0)));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<i64>*>(p); });
    i64* data = heap->data();
    return {nb::cast(nb::ndarray<nb::numpy, i64, nb::ndim<1>>(data, {heap->size()}, owner)), data};
}

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
    auto search = [&](const auto* ip, const auto* ix, auto* rindex) -> i64 {
        using I = std::remove_pointer_t<decltype(rindex)>;
        nb::gil_scoped_release release;
        const i64 count = backward ? meshccl::strong::tarjan<I, true>(ip, ix, n, rindex)
                                   : meshccl::strong::tarjan<I, false>(ip, ix, n, rindex);
        for (i64 v = 0; v < n; ++v) rindex[v] = I(n - 1 - i64(rindex[v]));
        return count;
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

// (indptr, indices) of the edges src[k] -> dst[k] on n vertices, each row's
// targets ascending (a counting sort by target, then the transpose).
nb::tuple rows_ascending(const Input& src, const Input& dst, i64 n) {
    const char* who = "rows_ascending";
    const i64* s = int64_data(src, who, "src");
    const i64* d = int64_data(dst, who, "dst");
    const i64 m = i64(src.size());
    if (i64(dst.size()) != m) throw std::invalid_argument("rows_ascending: src and dst differ in length");
    auto [ptr, p] = new_int64(n + 1);
    auto [idx, x] = new_int64(m);
    {
        nb::gil_scoped_release release;
        std::vector<i64> tptr(n + 1), tidx(m);
        meshccl::strong::counting_rows(d, s, m, n, tptr.data(), tidx.data());  // rows by target
        meshccl::strong::transpose_rows(tptr.data(), tidx.data(), n, p, x);
    }
    return nb::make_tuple(ptr, idx);
}

// The transpose of the CSR (indptr, indices): each row ascending.
nb::tuple transpose(const Input& indptr, const Input& indices) {
    const char* who = "transpose";
    const i64* ip = int64_data(indptr, who, "indptr");
    const i64* ix = int64_data(indices, who, "indices");
    const i64 n = i64(indptr.size()) - 1;
    if (n < 0 || ip[n] != i64(indices.size()))
        throw std::invalid_argument("transpose: indptr[-1] must equal len(indices)");
    auto [ptr, p] = new_int64(n + 1);
    auto [idx, x] = new_int64(i64(indices.size()));
    {
        nb::gil_scoped_release release;
        meshccl::strong::transpose_rows(ip, ix, n, p, x);
    }
    return nb::make_tuple(ptr, idx);
}

// A copy of indices with every row of the CSR sorted ascending.
nb::object sorted_rows(const Input& indptr, const Input& indices) {
    const char* who = "sorted_rows";
    const i64* ip = int64_data(indptr, who, "indptr");
    const i64* ix = int64_data(indices, who, "indices");
    const i64 n = i64(indptr.size()) - 1;
    if (n < 0 || ip[n] != i64(indices.size()))
        throw std::invalid_argument("sorted_rows: indptr[-1] must equal len(indices)");
    auto [idx, x] = new_int64(i64(indices.size()));
    {
        nb::gil_scoped_release release;
        std::copy(ix, ix + indices.size(), x);
        for (i64 v = 0; v < n; ++v) std::sort(x + ip[v], x + ip[v + 1]);
    }
    return idx;
}

}  // namespace

void register_strong(nb::module_& m) {
    m.def("strong_components", &strong_components, nb::arg("indptr"), nb::arg("indices"),
          nb::arg("labels"), nb::arg("rows"),
          "Strong components of a CSR into labels, numbered in the order a depth-first "
          "search reading each row 'forward' or 'backward' completes them; returns their "
          "number.");
    m.def("rows_ascending", &rows_ascending, nb::arg("src"), nb::arg("dst"), nb::arg("n"),
          "(indptr, indices) of an edge list, each row's targets ascending.");
    m.def("transpose", &transpose, nb::arg("indptr"), nb::arg("indices"),
          "(indptr, indices) of a CSR's transpose, each row ascending.");
    m.def("sorted_rows", &sorted_rows, nb::arg("indptr"), nb::arg("indices"),
          "A copy of a CSR's indices with each row sorted ascending.");
}
