// packed_spins.cuh -- the cells of a phase of packed Ising spins, read
// where the run chains read an image.
//
// meshccl.sim.Ising keeps its Metropolis spins packed (ising.cu's essay):
// two arrays of 64-bit words, one per colour (the parity of the coordinate
// sum), each (rows, W) with rows = nz * ny and W = ceil(nx / 32); 16 cells
// of one colour per word, one a nibble, bit 0 of the nibble the spin (1 for
// +1).  In row r = (z, y), of parity q = (y + z) & 1, colour q holds the
// even x and colour q ^ 1 the odd x, cell x in word x / 32, nibble (x / 2)
// % 16.  So the 32 cells x = 32 k .. 32 k + 31 of a row are word k of
// colour q (even x) and word k of colour q ^ 1 (odd x), and the row's
// 32-bit mask of the phase (bit b: cell 32 k + b is +1, or -1 for the
// phase 'down') is two nibble-bit extractions and an interleave:
//
//   u = (even & 0x1111...) | ((odd & 0x1111...) << 1)
//
// holds cell 2 i at bit 4 i and cell 2 i + 1 at bit 4 i + 1, and four
// shift-or-and steps close the gaps (2-bit groups 4 apart -> 2 apart, then
// 4-bit groups 8 apart -> 4 apart, and so on up to 32 bits).  The phase
// 'down' is the complement within the row (the nibbles past nx / 2 in a
// row's last word are 0: the mask is cut at the row's width).
//
// PackedPhase is what the run kernels take in place of the image pointer
// (runs2d.cu: the tile kernel's row loads, the border and wrap kernels'
// cell reads): row_bytes gives a row of 32 cells as the one-byte rows the
// tile kernel compares (8 words, byte c = cell c, 0 or 1: the image
// `phase` as bool would have), and operator[] one cell of a flat index.
// No pass writes the image: the run chain's tile kernel reads 1/4 byte
// per cell (a bit of each colour's nibble) where a bool image costs 1 byte
// written and 1 read.

#pragma once

namespace meshccl {

template <typename I>
struct PackedPhase {
    const unsigned long long* words;  // (2, rows, W): colour 0, then colour 1
    I per_colour;                     // rows * W
    I W;                              // words per row of a colour
    I ny;                             // rows per plane (a row r is y = r % ny, z = r / ny)
    I nx;                             // cells per row
    unsigned flip;                    // 0: the phase s > 0; 1: s < 0

    // The parity (y + z) & 1 of row r (no division in 2-D, where r < ny).
    __device__ __forceinline__ unsigned parity(I r) const {
        const I z = r < ny ? (I)0 : r / ny;
        return (unsigned)((r - z * ny + z) & 1);
    }

    // Row r's cells x = 32 k + b, b < 32, as a mask (bit b), 0 past nx.
    __device__ __forceinline__ unsigned row_mask(I r, I k) const {
        const unsigned q = parity(r);
        const I at = r * W + k;
        const unsigned long long even = words[(I)q * per_colour + at];
        const unsigned long long odd = words[(I)(q ^ 1u) * per_colour + at];
        unsigned long long u = (even & 0x1111111111111111ull) |
                               ((odd & 0x1111111111111111ull) << 1);
        u = (u | (u >> 2)) & 0x0F0F0F0F0F0F0F0Full;
        u = (u | (u >> 4)) & 0x00FF00FF00FF00FFull;
        u = (u | (u >> 8)) & 0x0000FFFF0000FFFFull;
        u = (u | (u >> 16)) & 0x00000000FFFFFFFFull;
        const I left = nx - 32 * k;
        const unsigned in = left >= 32 ? 0xffffffffu : (1u << (unsigned)left) - 1u;
        return ((unsigned)u ^ (0u - flip)) & in;
    }

    // The same row as 8 words of 4 one-byte cells (byte c & 3 of word c >> 2
    // is cell c: 0 or 1), all 0 where y is past the lattice (y >= rows).
    __device__ __forceinline__ void row_bytes(I r, I rows, I k, unsigned (&w)[8]) const {
        const unsigned m = r < rows ? row_mask(r, k) : 0u;
#pragma unroll
        for (int j = 0; j < 8; ++j)  // nibble j's 4 bits to bit 0 of bytes 0..3 (no carries)
            w[j] = (((m >> (4 * j)) & 0xFu) * 0x00204081u) & 0x01010101u;
    }

    // Cell i = r nx + x: 1 where it is in the phase, else 0.
    __device__ __forceinline__ unsigned char operator[](I i) const {
        const I r = i / nx, x = i - r * nx;
        const unsigned c = ((unsigned)x & 1u) ^ parity(r);
        const unsigned long long w = words[(I)c * per_colour + r * W + (x >> 5)];
        return (unsigned char)(((unsigned)(w >> (4 * ((x >> 1) & 15))) & 1u) ^ flip);
    }
};

}  // namespace meshccl
