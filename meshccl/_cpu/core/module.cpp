// meshccl._cpu._core: the compiled CPU kernels, bound with nanobind.
//
// Python (meshccl/_cpu/image.py) hands over flat, C-contiguous arrays: the
// keys (uint8/16/32/64, meshccl/_cpu/keys.py), the output P (int32 or
// int64), the shape and the half-neighbourhood table.  Each entry point
// picks the template instance for the dtypes, releases the GIL and runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "image.hpp"

namespace nb = nanobind;
using namespace meshccl::cpu;

using Array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;              // written
using Input = nb::ndarray<nb::numpy, nb::ro, nb::c_contig, nb::device::cpu>;  // read only

template <class T, class A>
static bool is(const A& a) {
    return a.dtype() == nb::dtype<T>();
}

static nb::object as_numpy(std::vector<i64>&& v) {
    auto* heap = new std::vector<i64>(std::move(v));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<i64>*>(p); });
    return nb::cast(nb::ndarray<nb::numpy, i64, nb::ndim<1>>(heap->data(), {heap->size()}, owner));
}

// Provisional labels go to `work` (int32, from the caller) when it is given,
// else into the output itself.
template <class K, class L>
static i64 run_plain(const K* keys, L* P, std::int32_t* work, i64 n, const Geometry& g,
                     bool has_bg, K bg, i64 slabs, std::vector<i64>* counts, const Tuning& t) {
    if (work)
        return label_slabs<K, std::int32_t, L>(keys, work, P, n, g, has_bg, bg, slabs, counts,
                                               t);
    return label_slabs<K, L, L>(keys, P, P, n, g, has_bg, bg, slabs, counts, t);
}

template <class K>
static i64 dispatch_out(const Input& keys, Array& P, std::int32_t* work, const Geometry& g,
                        bool has_bg,
                        std::uint64_t bg, i64 slabs, std::vector<i64>* counts,
                        const Tuning& t) {
    const K* k = static_cast<const K*>(keys.data());
    const i64 n = i64(keys.size());
    if (is<std::int32_t>(P))
        return run_plain(k, static_cast<std::int32_t*>(P.data()), work, n, g, has_bg, K(bg), slabs,
                         counts, t);
    if (is<std::int64_t>(P))
        return run_plain(k, static_cast<std::int64_t*>(P.data()), work, n, g, has_bg, K(bg), slabs,
                         counts, t);
    throw std::invalid_argument("label_plain: P must be int32 or int64");
}

static nb::object label_plain(const Input& keys, Array P, std::optional<Array> work,
                              const Input& shape, const Input& table,
                              bool has_bg, std::uint64_t bg, bool want_counts, i64 slabs,
                              i64 prov_table_min, i64 prov_cells_per_label, i64 counts_spread) {
    if (keys.ndim() != 1 || P.ndim() != 1 || keys.shape(0) != P.shape(0))
        throw std::invalid_argument("label_plain: keys and P must be flat and of one length");
    if (!is<i64>(shape) || !is<i64>(table) || table.ndim() != 2 || table.shape(1) != 4)
        throw std::invalid_argument("label_plain: shape and table must be int64 ((noff, 4))");
    Geometry g{static_cast<const i64*>(shape.data()), int(shape.size()),
               static_cast<const i64*>(table.data()), int(table.shape(0))};
    i64 cells = 1;
    for (int k = 0; k < g.ndim; ++k) cells *= g.shape[k];
    if (g.ndim < 1 || g.ndim > 62 || cells != i64(keys.size()))
        throw std::invalid_argument("label_plain: shape does not match the keys");
    Tuning t{prov_table_min, prov_cells_per_label, counts_spread};
    std::vector<i64> counts;
    std::vector<i64>* cp = want_counts ? &counts : nullptr;
    std::int32_t* w = nullptr;
    if (work) {
        if (!is<std::int32_t>(*work) || work->ndim() != 1 || work->shape(0) != P.shape(0) ||
            !is<std::int64_t>(P) || P.shape(0) >= (std::size_t(1) << 31) - 2)
            throw std::invalid_argument("label_plain: work must be int32 like P (int64, < 2**31 cells)");
        w = static_cast<std::int32_t*>(work->data());
    }
    i64 N;
    {
        nb::gil_scoped_release release;
        if (is<std::uint8_t>(keys)) N = dispatch_out<std::uint8_t>(keys, P, w, g, has_bg, bg, slabs, cp, t);
        else if (is<std::uint16_t>(keys)) N = dispatch_out<std::uint16_t>(keys, P, w, g, has_bg, bg, slabs, cp, t);
        else if (is<std::uint32_t>(keys)) N = dispatch_out<std::uint32_t>(keys, P, w, g, has_bg, bg, slabs, cp, t);
        else if (is<std::uint64_t>(keys)) N = dispatch_out<std::uint64_t>(keys, P, w, g, has_bg, bg, slabs, cp, t);
        else throw std::invalid_argument("label_plain: keys must be uint8, uint16, uint32 or uint64");
    }
    if (want_counts) return nb::make_tuple(N, as_numpy(std::move(counts)));
    return nb::cast(N);
}

static void first_cell(Array L, i64 count) {
    nb::gil_scoped_release release;
    if (is<std::int32_t>(L))
        first_cell_labels(static_cast<std::int32_t*>(L.data()), i64(L.size()), count);
    else if (is<std::int64_t>(L))
        first_cell_labels(static_cast<std::int64_t*>(L.data()), i64(L.size()), count);
    else
        throw std::invalid_argument("first_cell_labels: L must be int32 or int64");
}

// ---- the scans' parts, for the tests (tests/test_cpu_serial.py, test_cpu_potts.py)

static bool pack_rows_py(const Input& values, Array M, i64 W, std::uint64_t bg) {
    const i64 n = i64(values.size());
    if (!is<std::uint64_t>(M) || W < 1 || n % W || i64(M.size()) < (n / W) * ((W + 63) >> 6))
        throw std::invalid_argument("pack_rows: M must be uint64 with (n / W) * ceil(W / 64) words");
    u64* m = static_cast<u64*>(M.data());
    if (is<std::uint8_t>(values)) return pack_rows(static_cast<const std::uint8_t*>(values.data()), n, m, W, std::uint8_t(bg));
    if (is<std::uint16_t>(values)) return pack_rows(static_cast<const std::uint16_t*>(values.data()), n, m, W, std::uint16_t(bg));
    if (is<std::uint32_t>(values)) return pack_rows(static_cast<const std::uint32_t*>(values.data()), n, m, W, std::uint32_t(bg));
    if (is<std::uint64_t>(values)) return pack_rows(static_cast<const std::uint64_t*>(values.data()), n, m, W, std::uint64_t(bg));
    throw std::invalid_argument("pack_rows: values must be uint8, uint16, uint32 or uint64");
}

// The bit-packed scan alone on rows packed by pack_rows, then the numbering
// and the gather: the final labels into P (int32); returns N.
static i64 label_bits_py(const Input& M, Array P, const Input& shape, const Input& table) {
    if (!is<std::int32_t>(P) || !is<std::uint64_t>(M) || !is<i64>(shape) || !is<i64>(table))
        throw std::invalid_argument("label_bits: M uint64, P int32, shape and table int64");
    Geometry g{static_cast<const i64*>(shape.data()), int(shape.size()),
               static_cast<const i64*>(table.data()), int(table.shape(0))};
    const i64 n = i64(P.size()), W = g.shape[g.ndim - 1];
    Lines ln(g);
    Buffer<std::int32_t> E(bits_room(n, W));
    std::int32_t* p = static_cast<std::int32_t*>(P.data());
    i64 nl = bits_into(static_cast<const u64*>(M.data()), p, n, g, ln, E.data(), E.size());
    std::int32_t N = meshccl::uf::number_table(E.data(), std::int32_t(nl));
    gather(p, p, n, E.data());
    return N;
}

// The neighbour lines of a table: (their column-0 offsets, cover matrix, the
// order they are read in).
static nb::tuple lines_py(const Input& shape, const Input& table) {
    Geometry g{static_cast<const i64*>(shape.data()), int(shape.size()),
               static_cast<const i64*>(table.data()), int(table.shape(0))};
    Lines ln(g);
    nb::list off, cover, order;
    for (int k = 0; k < ln.n; ++k) {
        off.append(ln.off[k]);
        order.append(ln.order[k]);
        nb::list row;
        for (int j = 0; j < ln.n; ++j) row.append(ln.cover[k * ln.n + j]);
        cover.append(row);
    }
    return nb::make_tuple(off, cover, order);
}

NB_MODULE(_core, m) {
    m.doc() = "meshccl's compiled CPU kernels (C++17): see meshccl/_cpu/core/image.hpp.";
    m.def("label_plain", &label_plain, nb::arg("keys"), nb::arg("P"), nb::arg("work").none(),
          nb::arg("shape"),
          nb::arg("table"), nb::arg("has_bg"), nb::arg("bg"), nb::arg("counts"),
          nb::arg("slabs"), nb::arg("prov_table_min"), nb::arg("prov_cells_per_label"),
          nb::arg("counts_spread"),
          "Label the plain case (equal values) of flat keys into P; N or (N, counts).");
    m.def("pack_rows", &pack_rows_py, nb::arg("values"), nb::arg("M"), nb::arg("W"), nb::arg("bg"),
          "Pack a binary image's rows into bits; True when it is not binary (for the tests).");
    m.def("label_bits", &label_bits_py, nb::arg("M"), nb::arg("P"), nb::arg("shape"),
          nb::arg("table"), "The bit-packed scan alone, numbered into P (for the tests).");
    m.def("neighbour_lines", &lines_py, nb::arg("shape"), nb::arg("table"),
          "(offsets, cover, order) of a table's neighbour lines (for the tests).");
    m.def("first_cell_labels", &first_cell, nb::arg("L"), nb::arg("count"),
          "Raster labels 1..count turned in place into first-cell labels (flat index + 1).");
}
