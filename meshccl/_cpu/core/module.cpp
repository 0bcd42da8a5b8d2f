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
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "kernels.hpp"

namespace nb = nanobind;
namespace api = meshccl::cpu_api;
using i64 = std::int64_t;

using meshccl::bindings::Array;
using meshccl::bindings::Input;
using meshccl::bindings::check_grid;
using meshccl::bindings::is;

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
    int (*measure_table)(const api::MeasureArgs&);
};

#define MESHCCL_ISA(ns, label)                                                                  \
    Isa {                                                                                       \
        label, &api::ns::label_plain, &api::ns::first_cell_labels, &api::ns::pack_rows,         \
            &api::ns::label_bits, &api::ns::neighbour_lines, &api::ns::measure_table            \
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
    const int ndim = check_grid("label_plain", keys, P, shape, table);
    if (!is_unsigned(keys))
        throw std::invalid_argument("label_plain: keys must be uint8, uint16, uint32 or uint64");
    const i64* sh = static_cast<const i64*>(shape.data());
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

static nb::object label_lattice(const Input& keys, Array P, std::optional<Array> work,
                                const Input& shape, const Input& table, bool has_bg,
                                nb::object bg, nb::object tol, std::optional<Input> mask,
                                std::optional<Input> bonds, std::optional<Input> bond_rows,
                                i64 periodic, bool no_left, bool want_counts,
                                std::optional<Input> chunks, i64 back, int threads) {
    const i64 n = i64(keys.size());
    const int ndim = check_grid("label_lattice", keys, P, shape, table);
    const i64* sh = static_cast<const i64*>(shape.data());
    const int noff = int(table.shape(0));
    api::LatticeArgs a{};
    a.keys = keys.data();
    a.key_kind = is<double>(keys) ? -8 : is<std::uint64_t>(keys) ? 8 : is<std::uint8_t>(keys) ? 1 : 0;
    if (!a.key_kind)
        throw std::invalid_argument("label_lattice: keys must be uint8, uint64 or float64");
    a.P = P.data();
    a.P_bytes = int(P.itemsize());
    if (work) {
        if ((!is<std::int32_t>(*work) && !is<std::int64_t>(*work)) || i64(work->size()) != n)
            throw std::invalid_argument("label_lattice: work must be int32 or int64 of n cells");
        a.work = work->data();
        a.work_bytes = int(work->itemsize());
    }
    a.n = n;
    a.shape = sh;
    a.ndim = ndim;
    a.table = static_cast<const i64*>(table.data());
    a.noff = noff;
    a.has_bg = has_bg;
    if (a.key_kind == -8) {
        const double b = nb::cast<double>(bg);
        std::memcpy(&a.bg_bits, &b, 8);
    } else {
        a.bg_bits = nb::cast<std::uint64_t>(bg);
    }
    a.has_tol = !tol.is_none();
    if (a.has_tol) {
        if (a.key_kind == -8) a.tol_float = nb::cast<double>(tol);
        else a.tol_int = nb::cast<std::uint64_t>(tol);
    }
    if (mask) {
        if (!is<std::uint8_t>(*mask) || i64(mask->size()) != n)
            throw std::invalid_argument("label_lattice: mask must be uint8 of n cells");
        a.mask = static_cast<const std::uint8_t*>(mask->data());
    }
    if (bonds) {
        if (!is<std::uint8_t>(*bonds) || bonds->ndim() != 2 || i64(bonds->shape(1)) != n ||
            !bond_rows || !is<i64>(*bond_rows) || i64(bond_rows->size()) < noff + 1)
            throw std::invalid_argument("label_lattice: bonds (rows, n) uint8 with int64 bond_rows");
        const i64* br = static_cast<const i64*>(bond_rows->data());
        for (int o = 0; o <= noff; ++o)
            if (br[o] < 0 || br[o] >= i64(bonds->shape(0)))
                throw std::invalid_argument("label_lattice: bond_rows out of range");
        a.bonds = static_cast<const std::uint8_t*>(bonds->data());
        a.bond_rows = br;
    }
    a.periodic = periodic;
    a.no_left = no_left;
    if (chunks) {
        if (!is<i64>(*chunks) || chunks->size() < 2 || !work || periodic)
            throw std::invalid_argument("label_lattice: chunks (int64 row bounds) need a work array "
                                        "and no periodic axis");
        const i64* ch = static_cast<const i64*>(chunks->data());
        const i64 K = i64(chunks->size()) - 1, rows = n / sh[ndim - 1];
        if (ch[0] != 0 || ch[K] != rows)
            throw std::invalid_argument("label_lattice: chunks must run from row 0 to the last");
        for (i64 k = 0; k < K; ++k)
            if (ch[k + 1] < ch[k]) throw std::invalid_argument("label_lattice: chunks must not decrease");
        a.chunks = ch;
        a.K = K;
        a.back = back;
    }
    a.threads = std::max(threads, 1);
    std::vector<i64> counts;
    a.counts = want_counts ? &counts : nullptr;
    i64 N;
    {
        nb::gil_scoped_release release;
        N = api::label_lattice(a);
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

// The per-label table of meshccl.measure (meshccl/_cpu/measure.py): flat
// unsigned labels and intensities (or None), the shape, the periodic axes,
// and the zeroed columns to fill, each None where not wanted (count: always).
// Returns the threads that ran and the labels without cells.
template <class T>
static T* column(const std::optional<Array>& a, i64 size, const char* name, bool want = true) {
    if (!a) {
        if (want)
            throw std::invalid_argument(std::string("measure_table: ") + name + " is missing");
        return nullptr;
    }
    if (!is<T>(*a) || i64(a->size()) != size)
        throw std::invalid_argument(std::string("measure_table: ") + name +
                                    " has the wrong dtype or size");
    return static_cast<T*>(a->data());
}

static std::pair<int, i64> measure_table(const Input& labels, const Input& shape, i64 rows,
                         const Input& periodic, std::optional<Input> values, int threads,
                         i64 min_cells, i64 cells_per_entry, Array count,
                         std::optional<Array> first,
                         std::optional<Array> box,
                         std::optional<Array> csum, std::optional<Array> cos,
                         std::optional<Array> sin, std::optional<Array> isum,
                         std::optional<Array> iabs, std::optional<Array> imin,
                         std::optional<Array> imax, std::optional<Array> wsum,
                         std::optional<Array> wcos, std::optional<Array> wsin) {
    if (labels.ndim() != 1 || !is_unsigned(labels))
        throw std::invalid_argument(
            "measure_table: labels must be flat uint8, uint16, uint32 or uint64");
    if (!is<i64>(shape) || !is<i64>(periodic) || shape.ndim() != 1 || periodic.ndim() != 1)
        throw std::invalid_argument("measure_table: shape and periodic must be flat int64");
    api::MeasureArgs a{};
    a.labels = labels.data();
    a.label_bytes = int(labels.itemsize());
    a.n = i64(labels.size());
    a.shape = static_cast<const i64*>(shape.data());
    a.ndim = int(shape.size());
    i64 cells = 1;
    for (int d = 0; d < a.ndim; ++d) {
        if (a.shape[d] < 0) throw std::invalid_argument("measure_table: negative shape");
        cells *= a.shape[d];
    }
    if (cells != a.n) throw std::invalid_argument("measure_table: shape does not match the labels");
    if (rows < 1) throw std::invalid_argument("measure_table: rows must be >= 1");
    a.rows = rows;
    a.periodic = static_cast<const i64*>(periodic.data());
    a.nper = int(periodic.size());
    for (int j = 0; j < a.nper; ++j)
        if (a.periodic[j] < 0 || a.periodic[j] >= a.ndim ||
            (j && a.periodic[j] <= a.periodic[j - 1]))
            throw std::invalid_argument("measure_table: periodic must be increasing axes");
    if (values) {
        const auto dt = values->dtype();
        const bool u = dt.code == std::uint8_t(nb::dlpack::dtype_code::UInt);
        const bool s = dt.code == std::uint8_t(nb::dlpack::dtype_code::Int);
        const bool f = dt.code == std::uint8_t(nb::dlpack::dtype_code::Float);
        if (values->ndim() != 1 || i64(values->size()) != a.n || dt.lanes != 1 ||
            !(u || s || (f && (dt.bits == 32 || dt.bits == 64))))
            throw std::invalid_argument("measure_table: values must be flat integers, float32 or "
                                        "float64, as many as the labels");
        a.values = values->data();
        a.value_kind = u ? 'u' : s ? 'i' : 'f';
        a.value_bytes = int(dt.bits / 8);
    }
    const i64 nd = a.ndim, np = a.nper;
    a.count = column<i64>(count, rows, "count");
    a.first_out = column<i64>(first, rows, "first", false);
    a.box = column<i64>(box, 2 * rows * nd, "box", false);
    a.csum = column<double>(csum, rows * nd, "csum", false);
    if (np) {
        a.cos = column<double>(cos, rows * np, "cos");
        a.sin = column<double>(sin, rows * np, "sin");
    }
    if (values) {
        a.isum = column<double>(isum, rows, "isum");
        a.iabs = column<double>(iabs, rows, "iabs");
        for (auto* m : {&imin, &imax}) {
            if (!*m || (*m)->dtype() != values->dtype() || i64((*m)->size()) != rows)
                throw std::invalid_argument("measure_table: imin and imax must be of the values' "
                                            "dtype, one per row");
        }
        a.imin = imin->data();
        a.imax = imax->data();
        a.wsum = column<double>(wsum, rows * nd, "wsum");
        if (np) {
            a.wcos = column<double>(wcos, rows * np, "wcos");
            a.wsin = column<double>(wsin, rows * np, "wsin");
        }
    }
    a.threads = std::max(threads, 1);
    a.min_cells = min_cells;
    a.cells_per_entry = cells_per_entry;
    i64 empty = 0;
    a.empty = &empty;
    nb::gil_scoped_release release;
    const int used = isa->measure_table(a);
    return {used, empty};
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

// strong components and their CSR builders (strong.cpp)
void register_strong(nb::module_& m);

// weak or strong components of a graph checked in the same call (checked_components.cpp)
void register_checked_components(nb::module_& m);

// list ranking (list_rank.cpp)
void register_list_rank(nb::module_& m);

// weak components of graphs and incremental connectivity (graph.cpp)
void register_graph(nb::module_& m);

// Hawick et al.'s iterative mesh labellers (iterative.cpp)
void register_iterative(nb::module_& m);

// the simulators' Philox words (philox_words.cpp)
void register_philox_words(nb::module_& m);

NB_MODULE(_core, m) {
    m.doc() = "meshccl's compiled CPU kernels (C++17): see meshccl/_cpu/core/image.hpp.";
    const char* forced = std::getenv("MESHCCL_CPU_ISA");
    use_isa(forced && *forced ? forced : "best");
    m.def("label_plain", &label_plain, nb::arg("keys"), nb::arg("P"), nb::arg("work").none(),
          nb::arg("shape"), nb::arg("table"), nb::arg("has_bg"), nb::arg("bg"), nb::arg("counts"),
          nb::arg("slabs"), nb::arg("prov_table_min"), nb::arg("prov_cells_per_label"),
          nb::arg("counts_spread"),
          "Label the plain case (equal values) of flat keys into P; N or (N, counts).");
    m.def("label_lattice", &label_lattice, nb::arg("keys"), nb::arg("P"), nb::arg("work").none(),
          nb::arg("shape"), nb::arg("table"), nb::arg("has_bg"), nb::arg("bg"),
          nb::arg("tol").none(), nb::arg("mask").none(), nb::arg("bonds").none(),
          nb::arg("bond_rows").none(), nb::arg("periodic"), nb::arg("no_left"),
          nb::arg("counts"), nb::arg("chunks").none(), nb::arg("back"), nb::arg("threads"),
          "Label a lattice (mask, bonds, tolerance, periodic, axes) cell by cell; N or (N, counts).");
    m.def("first_cell_labels", &first_cell, nb::arg("L"), nb::arg("count"),
          "Raster labels 1..count turned in place into first-cell labels (flat index + 1).");
    m.def("measure_table", &measure_table, nb::arg("labels"), nb::arg("shape"), nb::arg("rows"),
          nb::arg("periodic"), nb::arg("values").none(), nb::arg("threads"), nb::arg("min_cells"),
          nb::arg("cells_per_entry"), nb::arg("count"), nb::arg("first").none(),
          nb::arg("box").none(), nb::arg("csum").none(), nb::arg("cos").none(),
          nb::arg("sin").none(), nb::arg("isum").none(), nb::arg("iabs").none(),
          nb::arg("imin").none(), nb::arg("imax").none(), nb::arg("wsum").none(),
          nb::arg("wcos").none(), nb::arg("wsin").none(),
          "Fill and finish the zeroed per-label table of flat labels (meshccl.measure) in one "
          "pass; (threads used, labels without cells).");
    m.def("measure_threads", &api::measure_threads, nb::arg("threads"), nb::arg("n"),
          nb::arg("rows_of_cells"), nb::arg("rows"), nb::arg("min_cells"),
          nb::arg("cells_per_entry"),
          "The threads measure_table runs on (measure.hpp).");
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
    register_strong(m);
    register_checked_components(m);
    register_list_rank(m);
    register_graph(m);
    register_iterative(m);
    register_philox_words(m);
}
