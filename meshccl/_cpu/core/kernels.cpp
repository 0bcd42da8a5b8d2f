// The compiled core's entry points (kernels.hpp) for one instruction set:
// CMake compiles this file once per set, with MESHCCL_CPU_NS, MESHCCL_UF_NS
// and MESHCCL_API_NS naming its namespaces, so the copies never merge.  Each
// entry point picks the template instance of image.hpp for the dtypes.
//
// MESHCCL_TARGET_V3: everything defined below the standard headers is
// compiled for AVX2 + BMI1/2 + POPCNT (a target pragma, not a command-line
// flag): the standard library's templates, defined above it, stay baseline
// code in every copy, so when the linker keeps one of their identical
// instances, no baseline caller ever gets an AVX2 one.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(MESHCCL_TARGET_V3)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,bmi,bmi2,popcnt"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,bmi,bmi2,popcnt")
#endif
#endif

#include "image.hpp"
#include "kernels.hpp"
#include "measure.hpp"
#if !defined(MESHCCL_TARGET_V3)
#include "lattice.hpp"
#endif

namespace meshccl {
namespace cpu_api {
namespace MESHCCL_API_NS {

namespace k = ::meshccl::MESHCCL_CPU_NS;

template <class K, class L>
static i64 plain_typed(const PlainArgs& a) {
    const k::Geometry g{a.shape, a.ndim, a.table, a.noff};
    const k::Tuning t{a.prov_table_min, a.prov_cells_per_label, a.counts_spread};
    const K* keys = static_cast<const K*>(a.keys);
    L* P = static_cast<L*>(a.P);
    if (a.work)  // (provisional labels in int32, gathered into an int64 P)
        return k::label_slabs<K, std::int32_t, L>(keys, a.work, P, a.n, g, a.has_bg, K(a.bg),
                                                  a.slabs, a.counts, t);
    const bool serial = a.ndim < 2 || std::min(a.slabs, a.shape[0]) < 2;
    if (sizeof(L) == 8 && serial && a.n < (i64(1) << 31) - 2)
        // a serial call into an int64 P: provisional labels in int32 in P's
        // own first half (image.hpp's aliased), no second array to allocate
        return k::label_serial<K, std::int32_t, L>(keys, reinterpret_cast<std::int32_t*>(P), P,
                                                   a.n, g, a.has_bg, K(a.bg), a.counts, t);
    return k::label_slabs<K, L, L>(keys, P, P, a.n, g, a.has_bg, K(a.bg), a.slabs, a.counts, t);
}

template <class K>
static i64 plain_keys(const PlainArgs& a) {
    if (a.P_bytes == 4 && !a.work) return plain_typed<K, std::int32_t>(a);
    if (a.P_bytes == 8) return plain_typed<K, std::int64_t>(a);
    throw std::invalid_argument("label_plain: P must be int32 or int64 (work only with int64)");
}

i64 label_plain(const PlainArgs& a) {
    switch (a.key_bytes) {
        case 1: return plain_keys<std::uint8_t>(a);
        case 2: return plain_keys<std::uint16_t>(a);
        case 4: return plain_keys<std::uint32_t>(a);
        case 8: return plain_keys<std::uint64_t>(a);
    }
    throw std::invalid_argument("label_plain: keys must be uint8, uint16, uint32 or uint64");
}

void first_cell_labels(void* L, int L_bytes, i64 n, i64 count) {
    if (L_bytes == 4) k::first_cell_labels(static_cast<std::int32_t*>(L), n, count);
    else k::first_cell_labels(static_cast<std::int64_t*>(L), n, count);
}

bool pack_rows(const void* values, int bytes, i64 n, std::uint64_t* M, i64 W, std::uint64_t bg) {
    switch (bytes) {
        case 1: return k::pack_rows(static_cast<const std::uint8_t*>(values), n, M, W, std::uint8_t(bg));
        case 2: return k::pack_rows(static_cast<const std::uint16_t*>(values), n, M, W, std::uint16_t(bg));
        case 4: return k::pack_rows(static_cast<const std::uint32_t*>(values), n, M, W, std::uint32_t(bg));
        case 8: return k::pack_rows(static_cast<const std::uint64_t*>(values), n, M, W, std::uint64_t(bg));
    }
    throw std::invalid_argument("pack_rows: values must be uint8, uint16, uint32 or uint64");
}

i64 label_bits(const std::uint64_t* M, std::int32_t* P, i64 n, const i64* shape, int ndim,
               const i64* table, int noff) {
    const k::Geometry g{shape, ndim, table, noff};
    const i64 W = shape[ndim - 1];
    k::Lines ln(g);
    k::Buffer<std::int32_t> E(k::bits_room(n, W));
    const i64 nl = k::bits_into(M, P, n, g, ln, E.data(), E.size());
    const std::int32_t N = k::uf::number_table(E.data(), std::int32_t(nl));
    k::gather(P, P, n, E.data());
    return N;
}

void neighbour_lines(const i64* shape, int ndim, const i64* table, int noff,
                     std::vector<i64>& off, std::vector<int>& cover, std::vector<int>& order) {
    const k::Geometry g{shape, ndim, table, noff};
    k::Lines ln(g);
    off = ln.off;
    cover = ln.cover;
    order = ln.order;
}

// ---- per-label tables: one template instance per label and intensity type

template <class L, class V>
static int measure_typed(const MeasureArgs& a, const k::MeasureGeometry& g) {
    const k::MeasureColumns out{a.count, a.first_out, a.box, a.csum, a.cos, a.sin,
                                a.isum, a.iabs, a.imin, a.imax, a.wsum, a.wcos, a.wsin};
    const k::MeasureDone done = k::measure_table<L, V>(
        static_cast<const L*>(a.labels), static_cast<const V*>(a.values), g, a.rows, a.threads,
        a.min_cells, a.cells_per_entry, out);
    *a.empty = done.empty;
    return done.threads;
}

template <class L>
static int measure_values(const MeasureArgs& a, const k::MeasureGeometry& g) {
    if (!a.values) return measure_typed<L, k::NoValue>(a, g);
    const int b = a.value_bytes;
    switch (a.value_kind) {
        case 'u':
            if (b == 1) return measure_typed<L, std::uint8_t>(a, g);
            if (b == 2) return measure_typed<L, std::uint16_t>(a, g);
            if (b == 4) return measure_typed<L, std::uint32_t>(a, g);
            if (b == 8) return measure_typed<L, std::uint64_t>(a, g);
            break;
        case 'i':
            if (b == 1) return measure_typed<L, std::int8_t>(a, g);
            if (b == 2) return measure_typed<L, std::int16_t>(a, g);
            if (b == 4) return measure_typed<L, std::int32_t>(a, g);
            if (b == 8) return measure_typed<L, std::int64_t>(a, g);
            break;
        case 'f':
            if (b == 4) return measure_typed<L, float>(a, g);
            if (b == 8) return measure_typed<L, double>(a, g);
            break;
    }
    throw std::invalid_argument("measure_table: values must be (u)int8..64, float32 or float64");
}

int measure_table(const MeasureArgs& a) {
    // cos / sin of 2 pi c / n for each periodic axis, as NumPy computes them
    std::vector<i64> offsets(std::max(a.nper, 1), 0);
    std::vector<double> cs, sn;
    for (int j = 0; j < a.nper; ++j) {
        const i64 len = a.shape[a.periodic[j]];
        offsets[j] = i64(cs.size());
        const double step = 6.283185307179586 / double(len);  // (2 pi, NumPy's 2 * np.pi)
        for (i64 c = 0; c < len; ++c) {
            cs.push_back(std::cos(double(c) * step));
            sn.push_back(std::sin(double(c) * step));
        }
    }
    const i64 W = a.ndim ? a.shape[a.ndim - 1] : 1;
    const k::MeasureGeometry g{a.shape, a.ndim, a.n, W, W ? a.n / W : 0, a.periodic, a.nper,
                               cs.data(), sn.data(), offsets.data(), a.rows};
    switch (a.label_bytes) {
        case 1: return measure_values<std::uint8_t>(a, g);
        case 2: return measure_values<std::uint16_t>(a, g);
        case 4: return measure_values<std::uint32_t>(a, g);
        case 8: return measure_values<std::uint64_t>(a, g);
    }
    throw std::invalid_argument("measure_table: labels must be uint8, uint16, uint32 or uint64");
}

}  // namespace MESHCCL_API_NS

#if !defined(MESHCCL_TARGET_V3)
// ---- lattices (the baseline copy only: a per-cell loop of loads and
// finds, which the second instruction set does not speed up)

namespace {
namespace k = ::meshccl::MESHCCL_CPU_NS;

template <class Cmp, bool Mask, bool Bonds, class I, class L>
i64 lattice_run(const LatticeArgs& a, Cmp cmp, I* trees, L* out) {
    using K = typename Cmp::Key;
    K bg;
    if (sizeof(K) == 8) std::memcpy(&bg, &a.bg_bits, 8);
    else bg = K(a.bg_bits);
    const k::Geometry g{a.shape, a.ndim, a.table, a.noff};
    const k::LatticeInput in{a.mask, a.bonds, a.bond_rows, a.periodic, a.no_left, a.has_bg};
    k::Lattice<Cmp, Mask, Bonds, I> lt{static_cast<const K*>(a.keys), trees, a.n, g, cmp, in, bg};
    if (a.chunks) return k::lattice_chunks(lt, out, a.chunks, a.K, a.back, a.threads, a.counts);
    return k::lattice_serial(lt, out, a.counts);
}

template <class Cmp, bool Mask, bool Bonds>
i64 lattice_out(const LatticeArgs& a, Cmp cmp) {
    if (a.work) {
        if (a.work_bytes == 4 && a.P_bytes == 8)
            return lattice_run<Cmp, Mask, Bonds>(a, cmp, static_cast<std::int32_t*>(a.work),
                                                 static_cast<std::int64_t*>(a.P));
        if (a.work_bytes == 4 && a.P_bytes == 4)
            return lattice_run<Cmp, Mask, Bonds>(a, cmp, static_cast<std::int32_t*>(a.work),
                                                 static_cast<std::int32_t*>(a.P));
        if (a.work_bytes == 8 && a.P_bytes == 8)
            return lattice_run<Cmp, Mask, Bonds>(a, cmp, static_cast<std::int64_t*>(a.work),
                                                 static_cast<std::int64_t*>(a.P));
        throw std::invalid_argument("label_lattice: work must be int32, or int64 with an int64 P");
    }
    if (a.chunks) throw std::invalid_argument("label_lattice: chunks need a work array");
    if (a.P_bytes == 4) {
        auto* p = static_cast<std::int32_t*>(a.P);
        return lattice_run<Cmp, Mask, Bonds>(a, cmp, p, p);
    }
    auto* p = static_cast<std::int64_t*>(a.P);
    return lattice_run<Cmp, Mask, Bonds>(a, cmp, p, p);
}

template <class Cmp>
i64 lattice_features(const LatticeArgs& a, Cmp cmp) {
    if (a.mask && a.bonds) return lattice_out<Cmp, true, true>(a, cmp);
    if (a.mask) return lattice_out<Cmp, true, false>(a, cmp);
    if (a.bonds) return lattice_out<Cmp, false, true>(a, cmp);
    return lattice_out<Cmp, false, false>(a, cmp);
}
}  // namespace

i64 label_lattice(const LatticeArgs& a) {
    if (a.has_tol) {
        if (a.key_kind == -8) return lattice_features(a, k::CloseFloat{a.tol_float});
        if (a.key_kind == 8) return lattice_features(a, k::CloseInt{a.tol_int});
        throw std::invalid_argument("label_lattice: a tolerance needs uint64 or float64 keys");
    }
    if (a.key_kind == 1) return lattice_features(a, k::Equal<std::uint8_t>{});
    if (a.key_kind == 8) return lattice_features(a, k::Equal<std::uint64_t>{});
    throw std::invalid_argument("label_lattice: keys must be uint8 or uint64 (float64 with a tolerance)");
}
#endif

}  // namespace cpu_api
}  // namespace meshccl

#if defined(MESHCCL_TARGET_V3)
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
