// meshccl._cpu._core's list ranking (list_rank.hpp), bound with nanobind:
// meshccl/_cpu/list_rank.py passes int64 arrays and reads the error codes;
// these functions check types and sizes, and release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "bindings.hpp"
#include "list_rank.hpp"

namespace nb = nanobind;
using i64 = std::int64_t;

namespace {

using meshccl::bindings::Array;
using meshccl::bindings::Input;

template <class A>
bool is_int64_1d(const A& a) {
    return a.dtype() == nb::dtype<i64>() && a.ndim() == 1;
}

// Rank the lists of succ (int64, n entries) into rank and, unless it is
// None, tails (both int64, n entries) by `method` on up to `threads`
// threads; returns an error code (list_rank.hpp's Code).
int rank_lists(const Input& succ, const std::string& method, int threads, std::uint64_t seed,
               std::uint64_t spacing, Array rank, std::optional<Array> tails) {
    namespace lr = meshccl::list_rank;
    if (!is_int64_1d(succ) || !is_int64_1d(rank))
        throw std::invalid_argument("list_rank: succ and rank must be 1-D int64 arrays");
    const i64 n = i64(succ.size());
    if (i64(rank.size()) != n || (tails && (!is_int64_1d(*tails) || i64(tails->size()) != n)))
        throw std::invalid_argument("list_rank: rank and tails must be 1-D int64 arrays of "
                                    "len(succ) entries");
    if (method != "sequential" && method != "wylie" && method != "splitters")
        throw std::invalid_argument("list_rank: method must be 'sequential', 'wylie' or "
                                    "'splitters', got '" + method + "'");
    if (threads < 1) throw std::invalid_argument("list_rank: threads must be >= 1");
    if (spacing < 1) throw std::invalid_argument("list_rank: spacing must be >= 1");
    const i64* s = static_cast<const i64*>(succ.data());
    i64* r = static_cast<i64*>(rank.data());
    i64* t = tails ? static_cast<i64*>(tails->data()) : nullptr;
    nb::gil_scoped_release release;
    auto nxt = lr::scratch<i64>(n);
    auto pred = lr::scratch<i64>(n);
    i64 bad = 0, dup = 0;
    lr::prepare(s, n, threads, nxt.get(), pred.get(), bad, dup);
    if (bad) return lr::OUT_OF_RANGE;
    if (dup) return lr::DUPLICATE;
    bool ok;
    if (method == "sequential")
        ok = lr::sequential(nxt.get(), pred.get(), n, r, t);
    else if (method == "wylie")
        ok = lr::wylie(nxt.get(), n, threads, r, t);
    else
        ok = lr::splitters(nxt.get(), pred.get(), n, threads, seed, spacing, r, t);
    return ok ? lr::OK : lr::CYCLE;
}

nb::tuple first_on_cycle(const Input& succ) {
    if (!is_int64_1d(succ))
        throw std::invalid_argument("first_on_cycle: succ must be a 1-D int64 array");
    const i64* s = static_cast<const i64*>(succ.data());
    const i64 n = i64(succ.size());
    std::pair<i64, i64> found;
    {
        nb::gil_scoped_release release;
        found = meshccl::list_rank::first_on_cycle(s, n);
    }
    return nb::make_tuple(found.first, found.second);
}

}  // namespace

void register_list_rank(nb::module_& m) {
    m.def("list_rank", &rank_lists, nb::arg("succ"), nb::arg("method"), nb::arg("threads"),
          nb::arg("seed"), nb::arg("spacing"), nb::arg("rank"), nb::arg("tails").none(),
          "Rank the lists of an int64 successor array into rank (and tails) by 'sequential', "
          "'wylie' or 'splitters'; returns an error code (0: none, 1: a value out of range, "
          "2: a repeated successor, 3: a cycle).");
    m.def("first_on_cycle", &first_on_cycle, nb::arg("succ"),
          "(element, cycle length) of the smallest element on a cycle of a valid int64 "
          "successor array, or (-1, 0).");
}
