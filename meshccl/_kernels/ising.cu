// ising.cu -- the kernels of meshccl.sim.Ising on CuPy: Metropolis
// sweeps on spins packed 16 to a word (with the packing and unpacking
// kernels), the Swendsen-Wang bond draw and the Swendsen-Wang cluster
// flip.  Every random word is Philox4x32-10 (philox.cuh) of a counter
// fixed by the lattice alone -- (index, tag, step) with key seed, the
// layout of meshccl.sim.random.words() for indices below 2**32 -- so the
// spins do not depend on the launch shape and equal, bit for bit, those of
// the NumPy expressions in meshccl/sim/ising.py, which draw the same
// words.  Each kernel uses all four words of a Philox call.
//
// Metropolis, multi-spin (meshccl_ising_pack, meshccl_ising_multispin,
// meshccl_ising_unpack).  During Metropolis sweeps the spins are not
// bytes but nibbles: 16 spins to a 64-bit word, 1 for +1 and 0 for -1.
// The lattice is split by colour (the parity of the coordinate sum) into
// two arrays, packed[c] of shape (rows, W), rows = nz ny, W = ceil(nx /
// 32).  In a row (z, y) of parity q = (y + z) & 1 the cells of colour c
// are x = 2 i + (c ^ q), i = 0 .. nx/2 - 1, and cell i sits in word i / 16,
// nibble i % 16; the nibbles past nx/2 in a row's last word are 0 and
// stay 0.  A cell's neighbours up and down (and in front and behind) are
// cell i of the other colour in the rows y +- 1 (z +- 1), and in its own
// row cell i and cell i - 1 (when c ^ q == 0) or i + 1 (when c ^ q == 1),
// periodic in i.  So the number of up neighbours of all 16 cells of a
// word is the nibble-wise sum of 4 (6) words of the other colour: the
// same-index words of the rows around, the same-index word of its own
// row, and that word shifted by one nibble, with the nibble shifted in
// taken from the next or previous word (or across the row's wrap).
// Nibble sums never carry: each is at most 2d <= 6.  With the spin s
// (0 or 1) and that count n, nibble n + s (2d + 1) of `sum + word (2d +
// 1)` is the cell's row in `table`, the 2 (2d + 1) thresholds of
// Ising._tables (accept when a 32-bit uniform is below; 2**32: always),
// one multiply and add for 16 cells.
//
// Random numbers.  Word G of the stacked (2, rows, W) array (G = c rows W +
// r W + k) takes Philox calls 2G and 2G + 1 (tag TAG_METROPOLIS); their 8
// words, each cut into its low then its high 16 bits, are the 16-bit
// uniforms of nibbles 0..15: element 16 G + t of the sweep's stream of
// halves.  A cell accepts when u < (threshold >> 16); when u equals it (1
// in 65,536), 16 more bits decide: the low half of word 0 of Philox call
// 16 G + t with tag TAG_METROPOLIS_TIE against the threshold's low 16
// bits.  That is exactly "a 32-bit uniform (u, extra) below the 32-bit
// threshold", the resolution of the thresholds themselves (2**-32), at the
// cost of an eighth of a Philox call a cell.  Counter indices are below
// 2**32 when 32 rows W <= 2**32 (the launch code checks).
//
// A sweep is colour 0 then colour 1, one launch each, in place: a thread
// owns one word of the active colour, reads only the other colour's
// words (which no thread of the launch writes), and writes its own word.
// Per sweep and cell: a read of a nibble of each colour about twice (the
// neighbour rows come mostly from cache) and a write of its own nibble,
// about 0.75 bytes, against 2 bytes of a read and a write of an int8
// lattice.
//
// meshccl_ising_pack writes the two arrays from int8 spins (a thread per
// word); meshccl_ising_unpack writes, from them, a span of 32 cells of a
// row per thread as int8 spins (mode 0), the bool image s > 0 (mode 1) or
// s < 0 (mode 2): the image a 3-D labelling hook labels, written straight
// from the packed words (the 2-D hooks' label chain reads the words
// itself: packed_spins.cuh).
//
// Swendsen-Wang bonds (meshccl_ising_bonds).  bonds is (d, n) bool:
// bonds[j][i] joins cell i and its neighbour one step up axis j (the
// order of neighbourhood.half_offsets), open with probability p when
// its word is below `threshold`.  The words are numbered w = d i + j and
// word w is word w mod 4 of Philox call w / 4: a thread takes 4 cells,
// d calls (4 d words), and writes 4 bytes of each bond plane -- one
// 32-bit store each when n is a multiple of 4.
//
// Swendsen-Wang flip (meshccl_ising_flip).  Cluster L is set to +1 when
// word 0 of Philox call L is below 2**31 (h = 0).  A cluster's cells are
// mostly next to each other in raster order, so one call per cell would
// redo the same call many times.  A warp takes 256 consecutive cells
// (8 per thread) and cuts them into runs of equal label (a run starts at
// the warp's first cell or where the label changes, also across thread
// boundaries through __shfl_up_sync); an exclusive scan of the run counts
// places each run's label in shared memory, the warp's lanes draw one
// call per run, and every cell reads its run's sign.  A label split over
// several runs or warps is drawn several times, always with the same word.
// Per cell: 4 bytes read, 1 written, and a Philox call per run rather than
// per cell (with runs of 8 cells, one call a lane for its 8 cells).

#include "philox.cuh"

// Cells of the active colour per packed word, and bits per cell.
#define MESHCCL_MULTISPIN_CELLS 16
#define MESHCCL_MULTISPIN_BITS 4

__global__ void __launch_bounds__(256)
meshccl_ising_pack(const signed char* spins, unsigned long long* packed, int nx, int ny,
                   unsigned int rows, unsigned int words) {
    const unsigned int per_colour = rows * words;
    const unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= 2 * per_colour) return;
    const unsigned int c = g / per_colour, rest = g - c * per_colour;
    const unsigned int r = rest / words, k = rest - r * words;
    const int q = (int)((r % (unsigned int)ny + r / (unsigned int)ny) & 1u);
    const long long row = (long long)r * nx;
    const int x0 = 32 * (int)k + (int)(c ^ (unsigned int)q);
    unsigned long long v = 0;
#pragma unroll
    for (int t = 0; t < MESHCCL_MULTISPIN_CELLS; ++t) {
        const int x = x0 + 2 * t;
        if (x < nx && spins[row + x] > 0) v |= 1ull << (MESHCCL_MULTISPIN_BITS * t);
    }
    packed[g] = v;
}

template <int D>
__global__ void __launch_bounds__(256)
meshccl_ising_multispin(unsigned long long* packed, const unsigned long long* table, int half,
                        int ny, int nz, unsigned int rows, unsigned int words, int colour,
                        unsigned int tag, unsigned int tie_tag, unsigned int t0,
                        unsigned int t1, unsigned int k0, unsigned int k1) {
    constexpr int Z = 2 * D;  // neighbours per cell
    constexpr int B = MESHCCL_MULTISPIN_BITS;
    // the thresholds' high and low 16 bits by nibble value (2 (Z + 1) <= 14 used; a
    // padding nibble's value, at most Z, reads a used entry or a 0)
    __shared__ unsigned int thr_hi[16], thr_lo[16];
    if (threadIdx.x < 16) {
        const unsigned long long thr = threadIdx.x < 2 * (Z + 1) ? table[threadIdx.x] : 0ull;
        thr_hi[threadIdx.x] = (unsigned int)(thr >> 16);  // 65536 for thr = 2**32: always
        thr_lo[threadIdx.x] = (unsigned int)(thr & 0xFFFFu);
    }
    __syncthreads();
    const unsigned int per_colour = rows * words;
    const unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= per_colour) return;
    const unsigned int r = g / words, k = g - r * words;
    const int y = (int)(r % (unsigned int)ny), z = (int)(r / (unsigned int)ny);
    const bool left = ((colour ^ y ^ z) & 1) == 0;  // the side neighbour is cell i - 1
    unsigned long long* own = packed + (unsigned long long)colour * per_colour;
    const unsigned long long* other = packed + (unsigned long long)(1 - colour) * per_colour;
    const unsigned int last = (unsigned int)(half - 1) >> 4;  // the row's last word
    const int tail = (half - 1) & 15;                         // its last cell's nibble

    const unsigned long long* row = other + (unsigned long long)r * words;
    const unsigned long long same = row[k];
    const int yu = y == 0 ? ny - 1 : y - 1, yd = y + 1 == ny ? 0 : y + 1;
    const unsigned long long plane = (unsigned long long)z * ny;
    unsigned long long sum = same + other[(plane + yu) * words + k]
                           + other[(plane + yd) * words + k];
    if (D == 3) {
        const int zf = z == 0 ? nz - 1 : z - 1, zb = z + 1 == nz ? 0 : z + 1;
        sum += other[((unsigned long long)zf * ny + y) * words + k]
             + other[((unsigned long long)zb * ny + y) * words + k];
    }
    if (left) {  // nibble t: cell 16k + t - 1; nibble 0 from the previous word or the wrap
        const unsigned int from = k > 0 ? k - 1 : last;
        const int nib = k > 0 ? 15 : tail;
        sum += (same << B) | ((row[from] >> (B * nib)) & 0xFull);
    } else {     // nibble t: cell 16k + t + 1; the row's last cell takes cell 0
        const unsigned int from = k < last ? k + 1 : 0;
        const int nib = k < last ? 15 : tail;
        sum += ((same >> B) & ~(0xFull << (B * nib))) | ((row[from] & 0xFull) << (B * nib));
    }
    const unsigned long long word = own[g];
    const unsigned long long index = sum + word * (unsigned long long)(Z + 1);
    const int cells = k < last ? 16 : tail + 1;  // nibbles that hold cells

    const unsigned int G = (unsigned int)colour * per_colour + g;
    unsigned int a[4], b[4];
    meshccl_philox(2 * G, tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, a);
    meshccl_philox(2 * G + 1, tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, b);
    unsigned long long flips = 0;
    unsigned int ties = 0;  // bit t: nibble t's uniform equals its threshold's high half
#pragma unroll
    for (int t = 0; t < MESHCCL_MULTISPIN_CELLS; ++t) {  // padding nibbles masked below
        const unsigned int w = t < 8 ? a[(t >> 1) & 3] : b[(t >> 1) & 3];
        const unsigned int u = (t & 1) ? w >> 16 : w & 0xFFFFu;
        const unsigned int hi = thr_hi[(index >> (B * t)) & 0xFull];
        if (u < hi) flips |= 1ull << (B * t);
        if (u == hi) ties |= 1u << t;
    }
    if (cells < 16) {
        flips &= (1ull << (B * cells)) - 1;
        ties &= (1u << cells) - 1;
    }
    while (ties) {  // 1 in 65,536 cells: the next 16 bits of the 32-bit uniform decide
        const int t = __ffs(ties) - 1;
        ties &= ties - 1;
        unsigned int x[4];
        meshccl_philox(16 * G + (unsigned int)t, tie_tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS,
                       x);
        if ((x[0] & 0xFFFFu) < thr_lo[(index >> (B * t)) & 0xFull]) flips |= 1ull << (B * t);
    }
    own[g] = word ^ flips;
}

__global__ void __launch_bounds__(256)
meshccl_ising_unpack(const unsigned long long* packed, signed char* out, int nx, int ny,
                     unsigned int rows, unsigned int words, int mode) {
    const unsigned int per_colour = rows * words;
    const unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= per_colour) return;
    const unsigned int r = g / words, k = g - r * words;
    const unsigned int q = (r % (unsigned int)ny + r / (unsigned int)ny) & 1u;
    // the words of the cells x = 32k + m with m even and with m odd
    const unsigned long long even = packed[(unsigned long long)q * per_colour + g];
    const unsigned long long odd = packed[(unsigned long long)(q ^ 1u) * per_colour + g];
    // byte of a cell that is +1 and of one that is -1
    const unsigned int up = mode == 2 ? 0u : 1u;
    const unsigned int down = mode == 0 ? 0xFFu : mode == 1 ? 0u : 1u;
    signed char* dst = out + (unsigned long long)r * nx + 32ull * k;
    const int x0 = 32 * (int)k;
    const bool wide = (nx & 7) == 0 && x0 + 32 <= nx;
#pragma unroll
    for (int part = 0; part < 4; ++part) {  // bytes 8 part .. 8 part + 7
        unsigned long long v = 0;
#pragma unroll
        for (int b = 0; b < 8; ++b) {
            const int m = 8 * part + b;
            const unsigned long long w = (m & 1) ? odd : even;
            const bool s = (w >> (MESHCCL_MULTISPIN_BITS * (m >> 1))) & 1ull;
            v |= (unsigned long long)(s ? up : down) << (8 * b);
        }
        if (wide) {
            reinterpret_cast<unsigned long long*>(dst)[part] = v;
        } else {
            for (int b = 0; b < 8 && x0 + 8 * part + b < nx; ++b)
                dst[8 * part + b] = (signed char)(unsigned char)(v >> (8 * b));
        }
    }
}

template <int D>
__global__ void __launch_bounds__(256)
meshccl_ising_bonds(bool* bonds, unsigned long long n, unsigned long long quads,
                    unsigned long long threshold, unsigned int tag, unsigned int t0,
                    unsigned int t1, unsigned int k0, unsigned int k1) {
    const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= quads) return;
    unsigned int open[D];  // byte c of open[j]: bond j of cell 4 t + c, 0 or 1
#pragma unroll
    for (int j = 0; j < D; ++j) open[j] = 0;
#pragma unroll
    for (int call = 0; call < D; ++call) {
        unsigned int r[4];
        meshccl_philox((unsigned int)(D * t + call), tag, t0, t1, k0, k1,
                       MESHCCL_PHILOX_ROUNDS, r);
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            const int w = 4 * call + m;  // the word of this thread's cells: cell w / D, bond w % D
            open[w % D] |= (unsigned int)((unsigned long long)r[m] < threshold) << (8 * (w / D));
        }
    }
    const unsigned long long first = 4 * t;
    unsigned char* out = reinterpret_cast<unsigned char*>(bonds);
#pragma unroll
    for (int j = 0; j < D; ++j) {
        unsigned char* plane = out + (unsigned long long)j * n + first;
        if ((n & 3) == 0) {
            *reinterpret_cast<unsigned int*>(plane) = open[j];
        } else {
            for (int c = 0; c < 4 && first + c < n; ++c)
                plane[c] = (unsigned char)((open[j] >> (8 * c)) & 1u);
        }
    }
}

// Cells per thread of meshccl_ising_flip; the block must be 256 threads (8 warps).
#define MESHCCL_FLIP_CELLS 8

template <typename L>
__global__ void __launch_bounds__(256)
meshccl_ising_flip(const L* labels, signed char* spins, unsigned long long n, unsigned int tag,
                   unsigned int t0, unsigned int t1, unsigned int k0, unsigned int k1) {
    constexpr int PER = MESHCCL_FLIP_CELLS;
    constexpr unsigned int ALL = 0xFFFFFFFFu;
    __shared__ unsigned int run_label[8][32 * PER];
    __shared__ unsigned char run_up[8][32 * PER];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned long long first =
        ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * PER;
    // every lane stays to the end (shuffles): cells at or past n are no run and not written
    const bool whole = (n & (PER - 1)) == 0 && first < n;  // 8 cells, 32-byte aligned
    unsigned int lab[PER];
    if (whole) {
        const uint4* p = reinterpret_cast<const uint4*>(labels + first);
        const uint4 a = p[0], b = p[1];
        lab[0] = a.x; lab[1] = a.y; lab[2] = a.z; lab[3] = a.w;
        lab[4] = b.x; lab[5] = b.y; lab[6] = b.z; lab[7] = b.w;
    } else {
#pragma unroll
        for (int c = 0; c < PER; ++c)
            lab[c] = first + c < n ? (unsigned int)labels[first + c] : 0u;
    }
    const unsigned int before = __shfl_up_sync(ALL, lab[PER - 1], 1);
    unsigned int heads = 0;  // bit c: cell c starts a run
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const bool starts = c == 0 ? (lane == 0 || lab[0] != before) : lab[c] != lab[c - 1];
        if (first + c < n && starts) heads |= 1u << c;
    }
    const int mine = __popc(heads);
    int upto = mine;  // inclusive scan of the run counts over the warp
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(ALL, upto, o);
        if (lane >= o) upto += v;
    }
    const int total = __shfl_sync(ALL, upto, 31);
    int slot = upto - mine;
#pragma unroll
    for (int c = 0; c < PER; ++c)
        if ((heads >> c) & 1u) run_label[warp][slot++] = lab[c];
    __syncwarp();
    for (int run = lane; run < total; run += 32) {
        unsigned int r[4];
        meshccl_philox(run_label[warp][run], tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, r);
        run_up[warp][run] = r[0] < 0x80000000u;
    }
    __syncwarp();
    // the run of cell 0 when it starts none: the previous lane's last (lane 0's cell 0,
    // when in the lattice, always starts one, so this is >= 0 wherever it is read)
    int run = upto - mine - 1;
    unsigned long long packed = 0;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        if ((heads >> c) & 1u) ++run;
        if (first + c < n)
            packed |= (unsigned long long)(run_up[warp][run] ? 0x01u : 0xFFu) << (8 * c);
    }
    if (whole) {
        *reinterpret_cast<unsigned long long*>(spins + first) = packed;
    } else {
        for (int c = 0; c < PER && first + c < n; ++c)
            spins[first + c] = (signed char)(unsigned char)(packed >> (8 * c));
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
template __global__ void meshccl_ising_multispin<2>(
    unsigned long long*, const unsigned long long*, int, int, int, unsigned int, unsigned int,
    int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int);
template __global__ void meshccl_ising_multispin<3>(
    unsigned long long*, const unsigned long long*, int, int, int, unsigned int, unsigned int,
    int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int);
template __global__ void meshccl_ising_bonds<2>(
    bool*, unsigned long long, unsigned long long, unsigned long long, unsigned int,
    unsigned int, unsigned int, unsigned int, unsigned int);
template __global__ void meshccl_ising_bonds<3>(
    bool*, unsigned long long, unsigned long long, unsigned long long, unsigned int,
    unsigned int, unsigned int, unsigned int, unsigned int);
template __global__ void meshccl_ising_flip<int>(
    const int*, signed char*, unsigned long long, unsigned int, unsigned int, unsigned int,
    unsigned int, unsigned int);
template __global__ void meshccl_ising_flip<unsigned int>(
    const unsigned int*, signed char*, unsigned long long, unsigned int, unsigned int,
    unsigned int, unsigned int, unsigned int);
#endif
