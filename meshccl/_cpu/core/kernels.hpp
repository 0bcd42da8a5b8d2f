// The compiled core's entry points, from raw pointers, as module.cpp calls
// them.  kernels.cpp defines them and is compiled once per instruction set
// (CMakeLists.txt): the baseline of the platform, and on x86-64 once more
// with AVX2, BMI1/2 and POPCNT, which most CPUs since 2013 have (numba,
// which compiled these loops before, targets the machine it runs on; the
// second copy keeps percolation and Potts cases up to 10 % faster than the
// baseline one: docs/decisions.md, "compiled cpu core").
// module.cpp picks one when the module loads (MESHCCL_CPU_ISA=baseline
// forces the baseline; `_core.isa()` says which runs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace meshccl {
namespace cpu_api {

using i64 = std::int64_t;

struct PlainArgs {
    const void* keys;      // n keys of key_bytes (unsigned)
    int key_bytes;
    void* P;               // n labels of P_bytes (int32 / int64)
    int P_bytes;
    std::int32_t* work;    // int32 provisional labels (P int64), or null: P itself
    i64 n;
    const i64* shape;
    int ndim;
    const i64* table;      // noff rows of 4
    int noff;
    bool has_bg;
    std::uint64_t bg;      // the background key's bits
    i64 slabs;             // slabs along axis 0 (< 2: serially)
    i64 prov_table_min, prov_cells_per_label, counts_spread;  // _tuning
    std::vector<i64>* counts;  // null: no counts
};

struct LatticeArgs {
    const void* keys;          // n keys: key_kind 1 uint8, 8 uint64, -8 float64
    int key_kind;
    void* P;                   // n labels of P_bytes
    int P_bytes;
    void* work;                // trees of work_bytes apart from P, or null: in P
    int work_bytes;
    i64 n;
    const i64* shape;
    int ndim;
    const i64* table;
    int noff;
    bool has_bg;
    std::uint64_t bg_bits;     // the background key's bits (a double's for float keys)
    bool has_tol;
    std::uint64_t tol_int;     // the tolerance for integer keys
    double tol_float;          // ... for float keys
    const std::uint8_t* mask;  // n cells, 0 = background; or null
    const std::uint8_t* bonds; // (rows, n), 0 = closed; or null
    const i64* bond_rows;      // the bonds row of each table row, then of the left neighbour
    i64 periodic;              // bit k: axis k wraps
    bool no_left;              // the last axis is not labelled along
    const i64* chunks;         // K + 1 row bounds of chunks on threads, or null: serially
    i64 K, back;
    int threads;
    std::vector<i64>* counts;
};

// The per-label table of meshccl.measure (measure.hpp): labels as unsigned
// integers, the intensity (or none) by kind and size, the columns to fill
// (null where not wanted; zeroed NumPy arrays of rows, or rows x ndim /
// nper), which it fills.
struct MeasureArgs {
    const void* labels;        // n labels of label_bytes (unsigned)
    int label_bytes;
    const void* values;        // n intensities, or null
    char value_kind;           // 'u', 'i' or 'f' (bool as 'u')
    int value_bytes;
    i64 n;
    const i64* shape;
    int ndim;
    i64 rows;                  // labels are below it
    const i64* periodic;       // the periodic axes
    int nper;
    int threads;
    i64 min_cells;             // fewest cells a thread
    i64 cells_per_entry;       // fewest cells a private table's entry
    i64 *count, *first_out, *box;  // box: rows x ndim x (lo, hi)
    double *csum, *cos, *sin, *isum, *iabs;
    void *imin, *imax;         // the intensity's type
    double *wsum, *wcos, *wsin;
    i64* empty;                // out: the labels below rows without cells
};

// Threads for a per-label table of `rows` rows over n cells in R rows of
// the last axis, asked for `threads`: at most one per row and per min_cells
// cells, and cells_per_entry * T * rows <= n (measure.hpp: the private
// tables).
inline int measure_threads(int threads, i64 n, i64 R, i64 rows, i64 min_cells,
                           i64 cells_per_entry) {
    i64 T = threads < 1 ? 1 : threads;
    T = std::min(T, R);
    T = std::min(T, n / std::max<i64>(min_cells, 1));
    T = std::min(T, n / (std::max<i64>(cells_per_entry, 1) * std::max<i64>(rows, 1)));
    return int(std::max<i64>(T, 1));
}

// The lattice labeller (lattice.hpp), compiled in the baseline copy only.
i64 label_lattice(const LatticeArgs& a);

// One instruction set's kernels: label_plain returns N and throws
// std::invalid_argument on a dtype it lacks.
#define MESHCCL_CPU_API(ns)                                                            \
    namespace ns {                                                                     \
    i64 label_plain(const PlainArgs& a);                                               \
    void first_cell_labels(void* L, int L_bytes, i64 n, i64 count);                    \
    bool pack_rows(const void* values, int bytes, i64 n, std::uint64_t* M, i64 W,      \
                   std::uint64_t bg);                                                  \
    i64 label_bits(const std::uint64_t* M, std::int32_t* P, i64 n, const i64* shape,   \
                   int ndim, const i64* table, int noff);                              \
    void neighbour_lines(const i64* shape, int ndim, const i64* table, int noff,       \
                         std::vector<i64>& off, std::vector<int>& cover,               \
                         std::vector<int>& order);                                     \
    int measure_table(const MeasureArgs& a);                                           \
    }

MESHCCL_CPU_API(baseline)
#if defined(MESHCCL_HAVE_X86_64_V3)
MESHCCL_CPU_API(x86_64_v3)
#endif

}  // namespace cpu_api
}  // namespace meshccl
