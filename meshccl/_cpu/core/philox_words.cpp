// meshccl._cpu._core's Philox words for the simulators on the CPU
// (meshccl.sim.random.words on NumPy input), bound with nanobind.
//
// Each cell (or cluster label) `index` gets the words of Philox4x32-10 at
//
//     counter = (index mod 2**32, (index >> 32) << 8 | tag, step mod 2**32, step >> 32)
//     key     = (seed mod 2**32, seed >> 32)
//
// computed by meshccl_philox of meshccl/_kernels/philox.cuh, the header the
// GPU kernels draw through, so the CPU and the GPU give the same words bit
// for bit (indices below 2**56, as documented; the counter's words are
// taken mod 2**32 as on the GPU).  Indices come as any integer type, read
// as unsigned 64-bit (a negative index as its two's complement, as NumPy's
// cast to uint64 reads it); the first `count` words of each go to row
// 0..count-1 of `out` (uint32, count x n).  Serial, GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <stdexcept>

#include "philox.cuh"

namespace nb = nanobind;
using i64 = std::int64_t;

namespace {

using Array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;
using Input = nb::ndarray<nb::numpy, nb::ro, nb::c_contig, nb::device::cpu>;

template <class T, int Count>
void words_typed(const T* idx, i64 n, std::uint32_t tag, std::uint32_t s0, std::uint32_t s1,
                 std::uint32_t k0, std::uint32_t k1, std::uint32_t* out) {
    for (i64 i = 0; i < n; ++i) {
        const std::uint64_t v = std::uint64_t(idx[i]);
        unsigned int r[4];
        meshccl_philox(std::uint32_t(v), std::uint32_t(((v >> 32) << 8) | tag), s0, s1, k0, k1,
                       MESHCCL_PHILOX_ROUNDS, r);
        for (int w = 0; w < Count; ++w) out[w * n + i] = r[w];
    }
}

template <class T>
void words_count(const T* idx, i64 n, int count, std::uint32_t tag, std::uint32_t s0,
                 std::uint32_t s1, std::uint32_t k0, std::uint32_t k1, std::uint32_t* out) {
    switch (count) {
        case 1: return words_typed<T, 1>(idx, n, tag, s0, s1, k0, k1, out);
        case 2: return words_typed<T, 2>(idx, n, tag, s0, s1, k0, k1, out);
        case 3: return words_typed<T, 3>(idx, n, tag, s0, s1, k0, k1, out);
        default: return words_typed<T, 4>(idx, n, tag, s0, s1, k0, k1, out);
    }
}

// Fill out (uint32, count x n, count 1..4) with the words of the n indices
// of idx (flat, any integer type) for tag (0..255), step and seed.
void philox_words(const Input& idx, std::uint32_t tag, std::uint64_t step, std::uint64_t seed,
                  Array out) {
    const i64 n = i64(idx.size());
    const auto dt = idx.dtype();
    const bool u = dt.code == std::uint8_t(nb::dlpack::dtype_code::UInt);
    const bool s = dt.code == std::uint8_t(nb::dlpack::dtype_code::Int);
    if (idx.ndim() != 1 || dt.lanes != 1 || !(u || s))
        throw std::invalid_argument("philox_words: idx must be a flat integer array");
    if (out.dtype() != nb::dtype<std::uint32_t>() || out.ndim() != 2 || out.shape(0) < 1 ||
        out.shape(0) > 4 || i64(out.shape(1)) != n)
        throw std::invalid_argument("philox_words: out must be uint32 of (1..4, len(idx))");
    if (tag > 255) throw std::invalid_argument("philox_words: tag must be 0..255");
    const int count = int(out.shape(0));
    auto* o = static_cast<std::uint32_t*>(out.data());
    const std::uint32_t s0 = std::uint32_t(step), s1 = std::uint32_t(step >> 32);
    const std::uint32_t k0 = std::uint32_t(seed), k1 = std::uint32_t(seed >> 32);
    const void* p = idx.data();
    const int bits = dt.bits;
    nb::gil_scoped_release release;
#define MESHCCL_WORDS(T) words_count(static_cast<const T*>(p), n, count, tag, s0, s1, k0, k1, o)
    if (u && bits == 8) MESHCCL_WORDS(std::uint8_t);
    else if (u && bits == 16) MESHCCL_WORDS(std::uint16_t);
    else if (u && bits == 32) MESHCCL_WORDS(std::uint32_t);
    else if (u && bits == 64) MESHCCL_WORDS(std::uint64_t);
    else if (s && bits == 8) MESHCCL_WORDS(std::int8_t);
    else if (s && bits == 16) MESHCCL_WORDS(std::int16_t);
    else if (s && bits == 32) MESHCCL_WORDS(std::int32_t);
    else if (s && bits == 64) MESHCCL_WORDS(std::int64_t);
    else throw std::invalid_argument("philox_words: idx must be of 8, 16, 32 or 64 bits");
#undef MESHCCL_WORDS
}

}  // namespace

void register_philox_words(nb::module_& m) {
    m.def("philox_words", &philox_words, nb::arg("idx"), nb::arg("tag"), nb::arg("step"),
          nb::arg("seed"), nb::arg("out"),
          "Philox4x32-10 words of flat integer indices idx for (seed, tag, step) into out "
          "(uint32, count x len(idx)): meshccl.sim.random.words on the CPU.");
}
