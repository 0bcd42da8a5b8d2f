// meshccl._cpu._core: the compiled CPU kernels, bound with nanobind.
//
// Python (meshccl/_cpu/image.py) hands over flat, C-contiguous arrays: the
// keys (uint8/16/32/64, meshccl/_cpu/keys.py), the output P (int32 or
// int64), the shape and the half-neighbourhood table.  This file checks them,
// releases the GIL and calls the kernels (kernels.hpp) of the instruction set
// picked when the module loads.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels.hpp"

namespace nb = nanobind;
namespace api = meshccl::cpu_api;
using i64 = std::int64_t;

using Array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;          // written
using Input = nb::ndarray<nb::numpy, nb::ro, nb::c_contig, nb::device::cpu>;  // read only

template <class T, class A>
static bool is(const A& a) {
    return a.dtype() == nb::dtype<T>();
}

template <class A>
static bool is_unsigned(const A& a) {
    return a.dtype().code == std::uint8_t(nb::dlpack::dtype_code::UInt) && a.dtype().lanes == 1;
}

static nb::object as_numpy(std::vector<i64>&& v) {
    auto* heap = new std::vector<i64>(std::move(v));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<i64>*>(p); });
    return nb::cast(nb::ndarray<nb::numpy, i64, nb::ndim<1>>(heap->data(), {heap->size()}, owner));
}

// ---- the instruction set

struct Isa {
    const char* name;
    i64 (*label_plain)(const api::PlainArgs&);
    void (*first_cell_labels)(void*, int, i64, i64);
    bool (*pack_rows)(const void*, int, i64, std::uint64_t*, i64, std::uint64_t);
    i64 (*label_bits)(const std::uint64_t*, std::int32_t*, i64, const i64*, int, const i64*, int);
    void (*neighbour_lines)(const i64*, int, const i64*, int, std::vector<i64>&,
                            std::vector<int>&, std::vector<int>&);
};

#define MESHCCL_ISA(ns, label)                                                                  \
    Isa {                                                                                       \
        label, &api::ns::label_plain, &api::ns::first_cell_labels, &api::ns::pack_rows,         \
            &api::ns::label_bits, &api::ns::neighbour_lines                                     \
    }

static const Isa baseline_isa = MESHCCL_ISA(baseline, "baseline");
#if defined(MESHCCL_HAVE_X86_64_V3)
static const Isa v3_isa = MESHCCL_ISA(x86_64_v3, "x86-64-v3");
#endif
static const Isa* isa = &baseline_isa;

static bool cpu_has_v3() {
#if defined(MESHCCL_HAVE_X86_64_V3)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
#else
    return false;
#endif
}

// Which kernels run: "x86-64-v3" where the CPU has it, else "baseline";
// MESHCCL_CPU_ISA=baseline (or use_isa("baseline")) forces the baseline.
static std::string use_isa(const std::string& name) {
    if (name == "baseline") {
        isa = &baseline_isa;
#if defined(MESHCCL_HAVE_X86_64_V3)
    } else if ((name == "x86-64-v3" || name == "best") && cpu_has_v3()) {
        isa = &v3_isa;
#endif
    } else if (name == "best") {
        isa = &baseline_isa;
    } else {
        throw std::invalid_argument("use_isa: '" + name + "' is not built or not on this CPU");
    }
    return isa->name;
}

// ---- entry points

static nb::object label_plain(const Input& keys, Array P, std::optional<Array> work,
                              const Input& shape, const Input& table, bool has_bg,
                              std::uint64_t bg, bool want_counts, i64 slabs,
                              i64 prov_table_min, i64 prov_cells_per_label, i64 counts_spread) {
    if (keys.ndim() != 1 || P.ndim() != 1 || keys.shape(0) != P.shape(0))
        throw std::invalid_argument("label_plain: keys and P must be flat and of one length");
    if (!is_unsigned(keys))
        throw std::invalid_argument("label_plain: keys must be uint8, uint16, uint32 or uint64");
    if (!is<std::int32_t>(P) && !is<std::int64_t>(P))
        throw std::invalid_argument("label_plain: P must be int32 or int64");
    if (!is<i64>(shape) || !is<i64>(table) || table.ndim() != 2 || table.shape(1) != 4)
        throw std::invalid_argument("label_plain: shape and table must be int64 ((noff, 4))");
    const int ndim = int(shape.size());
    const i64* sh = static_cast<const i64*>(shape.data());
    i64 cells = 1;
    for (int k = 0; k < ndim; ++k) cells *= sh[k];
    if (ndim < 1 || ndim > 62 || cells != i64(keys.size()))
        throw std::invalid_argument("label_plain: shape does not match the keys");
    std::int32_t* w = nullptr;
    if (work) {
        if (!is<std::int32_t>(*work) || work->ndim() != 1 || work->shape(0) != P.shape(0) ||
            !is<std::int64_t>(P) || P.shape(0) >= (std::size_t(1) << 31) - 2)
            throw std::invalid_argument("label_plain: work must be int32 like P (int64, < 2**31 cells)");
        w = static_cast<std::int32_t*>(work->data());
    }
    std::vector<i64> counts;
    api::PlainArgs a{keys.data(), int(keys.itemsize()), P.data(), int(P.itemsize()), w,
                     i64(keys.size()), sh, ndim, static_cast<const i64*>(table.data()),
                     int(table.shape(0)), has_bg, bg, slabs, prov_table_min,
                     prov_cells_per_label, counts_spread, want_counts ? &counts : nullptr};
    i64 N;
    {
        nb::gil_scoped_release release;
        N = isa->label_plain(a);
    }
    if (want_counts) return nb::make_tuple(N, as_numpy(std::move(counts)));
    return nb::cast(N);
}

static void first_cell(Array L, i64 count) {
    if (!is<std::int32_t>(L) && !is<std::int64_t>(L))
        throw std::invalid_argument("first_cell_labels: L must be int32 or int64");
    nb::gil_scoped_release release;
    isa->first_cell_labels(L.data(), int(L.itemsize()), i64(L.size()), count);
}

// ---- the scans' parts, for the tests (tests/test_cpu_serial.py, test_cpu_potts.py)

static bool pack_rows_py(const Input& values, Array M, i64 W, std::uint64_t bg) {
    const i64 n = i64(values.size());
    if (!is<std::uint64_t>(M) || W < 1 || n % W || i64(M.size()) < (n / W) * ((W + 63) >> 6))
        throw std::invalid_argument("pack_rows: M must be uint64 with (n / W) * ceil(W / 64) words");
    if (!is_unsigned(values))
        throw std::invalid_argument("pack_rows: values must be uint8, uint16, uint32 or uint64");
    return isa->pack_rows(values.data(), int(values.itemsize()), n,
                          static_cast<std::uint64_t*>(M.data()), W, bg);
}

// The bit-packed scan alone on rows packed by pack_rows, then the numbering
// and the gather: the final labels into P (int32); returns N.
static i64 label_bits_py(const Input& M, Array P, const Input& shape, const Input& table) {
    if (!is<std::int32_t>(P) || !is<std::uint64_t>(M) || !is<i64>(shape) || !is<i64>(table))
        throw std::invalid_argument("label_bits: M uint64, P int32, shape and table int64");
    return isa->label_bits(static_cast<const std::uint64_t*>(M.data()),
                           static_cast<std::int32_t*>(P.data()), i64(P.size()),
                           static_cast<const i64*>(shape.data()), int(shape.size()),
                           static_cast<const i64*>(table.data()), int(table.shape(0)));
}

// The neighbour lines of a table: (their column-0 offsets, cover matrix, the
// order they are read in).
static nb::tuple lines_py(const Input& shape, const Input& table) {
    std::vector<i64> off;
    std::vector<int> cover, order;
    isa->neighbour_lines(static_cast<const i64*>(shape.data()), int(shape.size()),
                         static_cast<const i64*>(table.data()), int(table.shape(0)), off, cover,
                         order);
    const std::size_t n = off.size();
    nb::list o, c, r;
    for (std::size_t k = 0; k < n; ++k) {
        o.append(off[k]);
        r.append(order[k]);
        nb::list row;
        for (std::size_t j = 0; j < n; ++j) row.append(cover[k * n + j]);
        c.append(row);
    }
    return nb::make_tuple(o, c, r);
}

NB_MODULE(_core, m) {
    m.doc() = "meshccl's compiled CPU kernels (C++17): see meshccl/_cpu/core/image.hpp.";
    const char* forced = std::getenv("MESHCCL_CPU_ISA");
    use_isa(forced && *forced ? forced : "best");
    m.def("label_plain", &label_plain, nb::arg("keys"), nb::arg("P"), nb::arg("work").none(),
          nb::arg("shape"), nb::arg("table"), nb::arg("has_bg"), nb::arg("bg"), nb::arg("counts"),
          nb::arg("slabs"), nb::arg("prov_table_min"), nb::arg("prov_cells_per_label"),
          nb::arg("counts_spread"),
          "Label the plain case (equal values) of flat keys into P; N or (N, counts).");
    m.def("first_cell_labels", &first_cell, nb::arg("L"), nb::arg("count"),
          "Raster labels 1..count turned in place into first-cell labels (flat index + 1).");
    m.def("isa", [] { return std::string(isa->name); },
          "The instruction set whose kernels run: 'x86-64-v3' or 'baseline'.");
    m.def("use_isa", &use_isa, nb::arg("name"),
          "Run the kernels of 'baseline', 'x86-64-v3' or the 'best' this CPU has; returns it.");
    m.def("pack_rows", &pack_rows_py, nb::arg("values"), nb::arg("M"), nb::arg("W"), nb::arg("bg"),
          "Pack a binary image's rows into bits; True when it is not binary (for the tests).");
    m.def("label_bits", &label_bits_py, nb::arg("M"), nb::arg("P"), nb::arg("shape"),
          nb::arg("table"), "The bit-packed scan alone, numbered into P (for the tests).");
    m.def("neighbour_lines", &lines_py, nb::arg("shape"), nb::arg("table"),
          "(offsets, cover, order) of a table's neighbour lines (for the tests).");
}
