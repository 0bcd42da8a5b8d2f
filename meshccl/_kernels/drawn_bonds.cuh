// drawn_bonds.cuh -- Swendsen-Wang bonds drawn where the labelling reads
// them, instead of loaded from bond planes in memory.
//
// meshccl.sim.Ising opens the bond between a cell and its earlier
// neighbour along axis k (plane k of its bonds, in the order of
// neighbourhood.half_offsets) when Philox word w = d i + k of the step is
// below `threshold` (i the cell's flat index, d the number of axes; word
// w mod 4 of the Philox call with counter (w / 4, tag, t0, t1) and key
// (k0, k1)): meshccl_ising_bonds (ising.cu) writes exactly these words
// into bond planes, and the NumPy step draws them too.  DrawnBonds is the
// lattice features of a 2-D chain (runs2d.cu's lattice tile, border and
// wrap kernels, in place of PlaneFeatures) that draws the same words when
// a kernel asks whether a bond is open, so the bond planes are never
// written or read: 2 bytes a cell written and 2 read, and a launch, fewer;
// the Philox calls are the same in number (d / 4 a cell), made by the
// tile kernel's lanes as they build their rows' masks.
//
// In 2-D (d = 2) the words of cell i are those of call i / 2: words 0
// (up) and 1 (left) for an even i, 2 and 3 for an odd i.  A tile row of
// 32 cells from cell i0 takes the calls i0 / 2 .. (i0 + 31) / 2, 16 or
// 17 of them (row); a single bond (open), one call.  No mask: every cell
// may be foreground.  The flat indices are below 2**32 (the caller
// checks), so a call index is one 32-bit word, as in ising.cu.
#pragma once

#include "philox.cuh"

namespace meshccl {

struct DrawnBonds {
    unsigned long long threshold;  // open below; 2**32: always
    unsigned tag, t0, t1, k0, k1;  // the step's Philox counter words and key
    // the bond plane of (-1, 0), (0, -1), (-1, -1), (-1, +1) (-1: none): 0, 1, -1, -1
    int up, left, ul, ur;
    double tol;  // (no tolerance: the features' field that the rule reads)

    __device__ __forceinline__ bool on(long long) const { return true; }
    // bond `plane` of cell i (2-D: plane 0 up, 1 left)
    __device__ __forceinline__ bool open(int plane, long long i) const {
        if (plane < 0) return true;
        const unsigned long long w = 2ull * (unsigned long long)i + (unsigned)plane;
        unsigned r[4];
        meshccl_philox((unsigned)(w >> 2), tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, r);
        return (unsigned long long)r[w & 3] < threshold;
    }
    __device__ __forceinline__ int bond(int dy, int dx) const {
        return dy == 0 ? left : dx < 0 ? ul : dx > 0 ? ur : up;
    }
    // The up and left bonds of cells i0 .. i0 + width - 1 (1 <= width <= 32)
    // as bit masks, bit c for cell i0 + c.
    __device__ __forceinline__ void row(long long i0, int width, unsigned& bu,
                                        unsigned& bl) const {
        bu = bl = 0u;
        const long long m0 = i0 >> 1, m1 = (i0 + width - 1) >> 1;
        for (long long m = m0; m <= m1; ++m) {
            unsigned r[4];
            meshccl_philox((unsigned)m, tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, r);
            const int c = (int)(2 * m - i0);  // the bit of cell 2m (-1: before the row)
            if (c >= 0) {
                bu |= (unsigned)((unsigned long long)r[0] < threshold) << c;
                bl |= (unsigned)((unsigned long long)r[1] < threshold) << c;
            }
            if (c + 1 < width) {
                bu |= (unsigned)((unsigned long long)r[2] < threshold) << (c + 1);
                bl |= (unsigned)((unsigned long long)r[3] < threshold) << (c + 1);
            }
        }
    }
};

// Which features draw their bonds (label_tile's row masks come from row()).
template <typename FT> struct drawn_features { static constexpr bool value = false; };
template <> struct drawn_features<DrawnBonds> { static constexpr bool value = true; };

}  // namespace meshccl
