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
// 0..count-1 of `out` (uint32, count x n).  Serial, GIL released; an
// AVX-512 copy of the loops runs where the CPU has it (and the core's
// instruction set is not forced to the baseline: meshccl/sim/random.py).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <stdexcept>

#include "bindings.hpp"

#include "philox.cuh"

namespace nb = nanobind;
using i64 = std::int64_t;

namespace {

using meshccl::bindings::Array;
using meshccl::bindings::Input;

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define MESHCCL_PHILOX_AVX512 1
#define MESHCCL_INLINE __attribute__((always_inline)) inline
#else
#define MESHCCL_PHILOX_AVX512 0
#define MESHCCL_INLINE inline
#endif

struct Words {
    const void* idx;  // n indices
    char kind;        // 'u' or 'i'
    int bits;         // 8, 16, 32 or 64
    i64 n;
    int count;        // 1..4 words a index
    std::uint32_t tag, s0, s1, k0, k1;
    std::uint32_t* out;  // count x n
};

// The words of v[0..m) into out[w * n + i] (out already offset to the block).
template <int Count>
MESHCCL_INLINE void words_block(const std::uint64_t* v, i64 m, const Words& a, std::uint32_t* out) {
    for (i64 i = 0; i < m; ++i) {
        unsigned int r[4];
        meshccl_philox(std::uint32_t(v[i]), std::uint32_t(((v[i] >> 32) << 8) | a.tag), a.s0,
                       a.s1, a.k0, a.k1, MESHCCL_PHILOX_ROUNDS, r);
        for (int w = 0; w < Count; ++w) out[w * a.n + i] = r[w];
    }
}

// Indices of type T in blocks widened to 64 bits first (so every index type
// runs the one vectorised loop over 64-bit lanes, where the products are).
template <class T, int Count>
MESHCCL_INLINE void words_loop(const Words& a) {
    constexpr i64 B = 512;
    const T* idx = static_cast<const T*>(a.idx);
    std::uint64_t v[B];
    for (i64 lo = 0; lo < a.n; lo += B) {
        const i64 m = a.n - lo < B ? a.n - lo : B;
        for (i64 i = 0; i < m; ++i) v[i] = std::uint64_t(idx[lo + i]);
        words_block<Count>(v, m, a, a.out + lo);
    }
}

template <class T>
MESHCCL_INLINE void words_count(const Words& a) {
    switch (a.count) {
        case 1: return words_loop<T, 1>(a);
        case 2: return words_loop<T, 2>(a);
        case 3: return words_loop<T, 3>(a);
        default: return words_loop<T, 4>(a);
    }
}

// Every index type; false for one it lacks.
MESHCCL_INLINE bool words_any(const Words& a) {
    const bool u = a.kind == 'u';
    switch (a.bits) {
        case 8: u ? words_count<std::uint8_t>(a) : words_count<std::int8_t>(a); return true;
        case 16: u ? words_count<std::uint16_t>(a) : words_count<std::int16_t>(a); return true;
        case 32: u ? words_count<std::uint32_t>(a) : words_count<std::int32_t>(a); return true;
        case 64: u ? words_count<std::uint64_t>(a) : words_count<std::int64_t>(a); return true;
    }
    return false;
}

bool words_plain(const Words& a) { return words_any(a); }

// The same loops for AVX-512 (16 lanes of the 32 x 32-bit products): about
// twice as fast as the baseline's SSE2 copy, where the CPU has it (AVX2
// gains little: its products are 4 lanes wide).
#if MESHCCL_PHILOX_AVX512
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) bool words_avx512(const Words& a) {
    return words_any(a);
}

bool has_avx512() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}
#else
bool has_avx512() { return false; }
#endif

// Fill out (uint32, count x n, count 1..4) with the words of the n indices
// of idx (flat, any integer type) for tag (0..255), step and seed; with
// `wide`, by the AVX-512 loops where the CPU has them.
void philox_words(const Input& idx, std::uint32_t tag, std::uint64_t step, std::uint64_t seed,
                  Array out, bool wide) {
    const auto dt = idx.dtype();
    const bool u = dt.code == std::uint8_t(nb::dlpack::dtype_code::UInt);
    const bool s = dt.code == std::uint8_t(nb::dlpack::dtype_code::Int);
    if (idx.ndim() != 1 || dt.lanes != 1 || !(u || s))
        throw std::invalid_argument("philox_words: idx must be a flat integer array");
    const i64 n = i64(idx.size());
    if (out.dtype() != nb::dtype<std::uint32_t>() || out.ndim() != 2 || out.shape(0) < 1 ||
        out.shape(0) > 4 || i64(out.shape(1)) != n)
        throw std::invalid_argument("philox_words: out must be uint32 of (1..4, len(idx))");
    if (tag > 255) throw std::invalid_argument("philox_words: tag must be 0..255");
    const Words a{idx.data(), u ? 'u' : 'i', int(dt.bits), n, int(out.shape(0)), tag,
                  std::uint32_t(step), std::uint32_t(step >> 32), std::uint32_t(seed),
                  std::uint32_t(seed >> 32), static_cast<std::uint32_t*>(out.data())};
    static const bool avx512 = has_avx512();
    bool ok;
    {
        nb::gil_scoped_release release;
#if MESHCCL_PHILOX_AVX512
        if (wide && avx512) ok = words_avx512(a);
        else
#endif
            ok = words_plain(a);
    }
    if (!ok) throw std::invalid_argument("philox_words: idx must be of 8, 16, 32 or 64 bits");
}

}  // namespace

void register_philox_words(nb::module_& m) {
    m.def("philox_words", &philox_words, nb::arg("idx"), nb::arg("tag"), nb::arg("step"),
          nb::arg("seed"), nb::arg("out"), nb::arg("wide"),
          "Philox4x32-10 words of flat integer indices idx for (seed, tag, step) into out "
          "(uint32, count x len(idx)): meshccl.sim.random.words on the CPU; wide: by the "
          "AVX-512 loops where the CPU has them.");
    m.def("philox_avx512", &has_avx512, "Whether philox_words has AVX-512 loops on this CPU.");
}
