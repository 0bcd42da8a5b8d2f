// bindings.hpp -- what the nanobind files of the compiled CPU core
// (module.cpp, iterative.cpp, graph.cpp, strong.cpp, list_rank.cpp,
// philox_words.cpp) share: the two array types they take (C-contiguous
// NumPy arrays on the CPU, written or read only), the dtype test, and the
// checks of a labelling grid (flat keys and labels, the shape and the
// neighbourhood table), so that every entry point refuses bad arguments in
// the same words.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace meshccl {
namespace bindings {

namespace nb = nanobind;
using i64 = std::int64_t;

using Array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;          // written
using Input = nb::ndarray<nb::numpy, nb::ro, nb::c_contig, nb::device::cpu>;  // read only

// Is a's element type T?
template <class T, class A>
bool is(const A& a) {
    return a.dtype() == nb::dtype<T>();
}

// The checks the labellers' bindings make of their grid arguments: flat
// keys and labels of one length, int32 / int64 labels, an int64 shape whose
// cells are the keys and an int64 offset table of four columns.  Returns the
// number of axes; throws std::invalid_argument naming the entry point.
inline int check_grid(const std::string& who, const Input& keys, const Array& P,
                      const Input& shape, const Input& table) {
    if (keys.ndim() != 1 || P.ndim() != 1 || keys.shape(0) != P.shape(0))
        throw std::invalid_argument(who + ": keys and P must be flat and of one length");
    if (!is<std::int32_t>(P) && !is<std::int64_t>(P))
        throw std::invalid_argument(who + ": P must be int32 or int64");
    if (!is<i64>(shape) || !is<i64>(table) || table.ndim() != 2 || table.shape(1) != 4)
        throw std::invalid_argument(who + ": shape and table must be int64 ((noff, 4))");
    const int ndim = int(shape.size());
    const i64* sh = static_cast<const i64*>(shape.data());
    i64 cells = 1;
    for (int k = 0; k < ndim; ++k) cells *= sh[k];
    if (ndim < 1 || ndim > 62 || cells != i64(keys.size()))
        throw std::invalid_argument(who + ": shape does not match the keys");
    return ndim;
}

}  // namespace bindings
}  // namespace meshccl
