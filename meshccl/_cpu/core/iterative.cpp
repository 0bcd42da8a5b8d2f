// meshccl._cpu._core's iterative mesh labellers (iterative.hpp), bound with
// nanobind: meshccl/_cpu/iterative.py passes flat keys (uint8 or uint64, or
// float64 with a tolerance), the output labels (int32 or int64), the shape,
// the half-neighbourhood table and the features as the lattice labeller
// takes them (lattice.hpp, whose join rule and initial labels these methods
// share).  This file checks types and sizes, picks the template instance,
// releases the GIL, and returns the labels' number, the passes (-1: out of
// passes) and the seconds of each phase.
//
// Labels are worked on in int32 whenever the cell indices fit (in P itself
// when it is int32), so each method has two instances per join rule.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "iterative.hpp"

namespace nb = nanobind;
using i64 = std::int64_t;

namespace {

namespace k = ::meshccl::cpu;
using meshccl::bindings::Array;
using meshccl::bindings::Input;
using meshccl::bindings::is;
using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

enum Method { CPU1, A, B, C, D };

// Everything a call needs apart from the template choices.
struct Call {
    Method method;
    const void* keys;
    void* P;
    int P_bytes;
    i64 n;
    k::Geometry g;
    k::LatticeInput in;
    std::uint64_t bg_bits;
    const i64* tlog;  // B's tile extents (log2 per axis)
    i64 max_it;
    bool want_counts;
    // results
    i64 N = 0, passes = 0;
    std::vector<i64> counts;
    double init = 0, pass = 0, phases[3] = {0, 0, 0}, relabel = 0;
};

template <class Cmp, bool Mask, bool Bonds, class I, class L>
void run(Call& c, Cmp cmp, I* work, L* out) {
    using K = typename Cmp::Key;
    K bg;
    if (sizeof(K) == 8) std::memcpy(&bg, &c.bg_bits, 8);
    else bg = K(c.bg_bits);
    k::Lattice<Cmp, Mask, Bonds, I> lt{static_cast<const K*>(c.keys), work, c.n, c.g, cmp, c.in, bg};
    auto t0 = clock_type::now();
    lt.init(0, c.n);
    c.init = since(t0);
    k::Iterative<decltype(lt), I> it(lt, c.in.no_left, c.max_it);
    t0 = clock_type::now();
    std::vector<I> spare;
    if (c.method != CPU1 && c.method != C) spare.resize(c.n);
    switch (c.method) {
        case CPU1: c.passes = it.cpu1(work); break;
        case A: c.passes = it.kernel_a(work, spare.data()); break;
        case B: c.passes = it.kernel_b(work, spare.data(), c.tlog); break;
        case C: c.passes = it.kernel_c(work); break;
        case D: c.passes = it.kernel_d(work, spare.data(), c.phases); break;
    }
    c.pass = since(t0);
    if (c.passes < 0) return;
    t0 = clock_type::now();
    if (c.want_counts) c.N = k::relabel_into_counted(work, out, c.n, c.counts);
    else c.N = k::relabel_into(work, out, c.n);
    c.relabel = since(t0);
}

template <class Cmp, bool Mask, bool Bonds>
void with_labels(Call& c, Cmp cmp) {
    if (c.P_bytes == 4) {
        auto* p = static_cast<std::int32_t*>(c.P);
        run<Cmp, Mask, Bonds>(c, cmp, p, p);
    } else if (c.n < (i64(1) << 31) - 2) {
        std::vector<std::int32_t> work(c.n);
        run<Cmp, Mask, Bonds>(c, cmp, work.data(), static_cast<std::int64_t*>(c.P));
    } else {
        auto* p = static_cast<std::int64_t*>(c.P);
        run<Cmp, Mask, Bonds>(c, cmp, p, p);
    }
}

template <class Cmp>
void with_features(Call& c, Cmp cmp) {
    if (c.in.mask && c.in.bonds) with_labels<Cmp, true, true>(c, cmp);
    else if (c.in.mask) with_labels<Cmp, true, false>(c, cmp);
    else if (c.in.bonds) with_labels<Cmp, false, true>(c, cmp);
    else with_labels<Cmp, false, false>(c, cmp);
}

nb::object as_numpy(std::vector<i64>&& v) {
    auto* heap = new std::vector<i64>(std::move(v));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<i64>*>(p); });
    return nb::cast(nb::ndarray<nb::numpy, i64, nb::ndim<1>>(heap->data(), {heap->size()}, owner));
}

nb::tuple label_iterative(const std::string& method, const Input& keys, Array P,
                          const Input& shape, const Input& table, bool has_bg, nb::object bg,
                          nb::object tol, std::optional<Input> mask, std::optional<Input> bonds,
                          std::optional<Input> bond_rows, i64 periodic, bool no_left,
                          i64 max_iterations, bool want_counts, std::optional<Input> tile_logs) {
    const std::string who = "label_iterative";
    Call c{};
    if (method == "cpu1") c.method = CPU1;
    else if (method == "A") c.method = A;
    else if (method == "B") c.method = B;
    else if (method == "C") c.method = C;
    else if (method == "D" || method == "cpu2") c.method = D;
    else throw std::invalid_argument(who + ": unknown method '" + method + "'");
    const i64 n = i64(keys.size());
    const int ndim = meshccl::bindings::check_grid(who, keys, P, shape, table);
    const i64* sh = static_cast<const i64*>(shape.data());
    const int noff = int(table.shape(0));
    const int kind = is<double>(keys) ? -8 : is<std::uint64_t>(keys) ? 8 : is<std::uint8_t>(keys) ? 1 : 0;
    if (!kind) throw std::invalid_argument(who + ": keys must be uint8, uint64 or float64");
    c.keys = keys.data();
    c.P = P.data();
    c.P_bytes = int(P.itemsize());
    c.n = n;
    c.g = k::Geometry{sh, ndim, static_cast<const i64*>(table.data()), noff};
    if (kind == -8) {
        const double b = nb::cast<double>(bg);
        std::memcpy(&c.bg_bits, &b, 8);
    } else {
        c.bg_bits = nb::cast<std::uint64_t>(bg);
    }
    c.in = k::LatticeInput{nullptr, nullptr, nullptr, periodic, no_left, has_bg};
    if (mask) {
        if (!is<std::uint8_t>(*mask) || i64(mask->size()) != n)
            throw std::invalid_argument(who + ": mask must be uint8 of n cells");
        c.in.mask = static_cast<const std::uint8_t*>(mask->data());
    }
    if (bonds) {
        const int halves = noff + (no_left ? 0 : 1);
        if (!is<std::uint8_t>(*bonds) || bonds->ndim() != 2 || i64(bonds->shape(1)) != n ||
            !bond_rows || !is<i64>(*bond_rows) || int(bond_rows->size()) < halves)
            throw std::invalid_argument(who + ": bonds (rows, n) uint8 with int64 bond_rows");
        const i64* br = static_cast<const i64*>(bond_rows->data());
        for (int o = 0; o < halves; ++o)
            if (br[o] < 0 || br[o] >= i64(bonds->shape(0)))
                throw std::invalid_argument(who + ": bond_rows out of range");
        c.in.bonds = static_cast<const std::uint8_t*>(bonds->data());
        c.in.brow = br;
    }
    if (c.method == B) {
        if (!tile_logs || !is<i64>(*tile_logs) || int(tile_logs->size()) != ndim)
            throw std::invalid_argument(who + ": method B needs int64 tile_logs, one per axis");
        c.tlog = static_cast<const i64*>(tile_logs->data());
        for (int d = 0; d < ndim; ++d)
            if (c.tlog[d] < 0 || c.tlog[d] > 20)
                throw std::invalid_argument(who + ": tile_logs must be 0..20");
    }
    c.max_it = max_iterations;
    c.want_counts = want_counts;
    const bool has_tol = !tol.is_none();
    if (has_tol && kind == 1)
        throw std::invalid_argument(who + ": a tolerance needs uint64 or float64 keys");
    if (!has_tol && kind == -8) throw std::invalid_argument(who + ": float64 keys need a tolerance");
    const double tol_float = has_tol && kind == -8 ? nb::cast<double>(tol) : 0.0;
    const std::uint64_t tol_int = has_tol && kind == 8 ? nb::cast<std::uint64_t>(tol) : 0;
    {
        nb::gil_scoped_release release;
        if (has_tol && kind == -8) with_features(c, k::CloseFloat{tol_float});
        else if (has_tol) with_features(c, k::CloseInt{tol_int});
        else if (kind == 1) with_features(c, k::Equal<std::uint8_t>{});
        else with_features(c, k::Equal<std::uint64_t>{});
    }
    nb::dict seconds;
    seconds["init"] = c.init;
    if (c.method == D) {
        seconds["scanning"] = c.phases[0];
        seconds["analysis"] = c.phases[1];
        seconds["labelling"] = c.phases[2];
    } else {
        seconds["pass"] = c.pass;
    }
    if (c.passes >= 0) seconds["relabel"] = c.relabel;
    nb::object num = want_counts ? nb::object(nb::make_tuple(c.N, as_numpy(std::move(c.counts))))
                                 : nb::object(nb::cast(c.N));
    return nb::make_tuple(num, c.passes, seconds);
}

}  // namespace

void register_iterative(nb::module_& m) {
    m.def("label_iterative", &label_iterative, nb::arg("method"), nb::arg("keys"), nb::arg("P"),
          nb::arg("shape"), nb::arg("table"), nb::arg("has_bg"), nb::arg("bg"),
          nb::arg("tol").none(), nb::arg("mask").none(), nb::arg("bonds").none(),
          nb::arg("bond_rows").none(), nb::arg("periodic"), nb::arg("no_left"),
          nb::arg("max_iterations"), nb::arg("counts"), nb::arg("tile_logs").none(),
          "Label a lattice with one of Hawick et al.'s iterative methods ('cpu1', 'A', 'B', "
          "'C', 'D' / 'cpu2'); (N or (N, counts), passes or -1, seconds per phase).");
}
