// ising.cu -- the three per-spin kernels of meshccl.sim.Ising on CuPy:
// a Metropolis half-sweep, the Swendsen-Wang bond draw and the
// Swendsen-Wang cluster flip.  Every random word is Philox4x32-10
// (philox.cuh) of a counter fixed by the lattice alone -- (index, tag,
// step) with key seed, the layout of meshccl.sim.random.words() for
// indices below 2**32 -- so the spins do not depend on the launch shape
// and equal, bit for bit, those of the NumPy expressions in
// meshccl/sim/ising.py, which draw the same words.  Each kernel uses all
// four words of a Philox call, and moves each spin's bytes once.
//
// Metropolis (meshccl_ising_metropolis, one launch per colour).  The
// spins are int8 +-1 in C order, rows of nx cells (nx even).  A cell's
// colour is the parity of its coordinate sum; one launch updates every
// cell of one colour from the fixed spins of the other.  A thread owns a
// span of 8 cells of one row, x in [8k, 8k + 8) (fewer at the row's end
// when nx is not a multiple of 8), of which the cells of the active colour
// are x = 8k + p + 2q, q = 0..3, p the row's parity for that colour:
//
//     x       8k  +1  +2  +3  +4  +5  +6  +7
//     p = 0    q0      q1      q2      q3
//     p = 1        q0      q1      q2      q3
//
// One Philox call with counter index 8k + p + (row's first cell) gives the
// four words, word q for cell q -- so the counter is the flat index of the
// group's first active cell, and each cell of the lattice belongs to one
// group per sweep.  The thread loads its span and the spans above and
// below (and in front and behind, in 3-D) as 8-byte words, and the two
// cells left and right of the span (periodic wrap), sums each active
// cell's neighbours, reads the acceptance threshold of (spin, neighbour
// sum) from `table` (2 (2d + 1) integer thresholds computed on the host:
// accept when the word is below it) and writes the span back whole.
//
// The first colour reads `in` and writes every byte of a new `out`; the
// second updates `out` in place.  In place is safe: a thread reads only
// the other colour's cells of its neighbours' spans, which no thread
// changes in that launch (its 8-byte loads also see bytes of the active
// colour that other threads may be rewriting; those bytes are not used),
// and writes back the other colour's bytes of its own span unchanged.
// With nx a multiple of 8 every span is 8-byte aligned and loads and
// stores are single 64-bit accesses; otherwise byte by byte.
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

namespace meshccl_ising {

// 8 bytes of a row from p: one 64-bit load when `wide` (p 8-byte aligned),
// else `width` byte loads (the missing high bytes are 0).
__device__ __forceinline__ unsigned long long load_span(const signed char* p, int width,
                                                        bool wide) {
    if (wide) return *reinterpret_cast<const unsigned long long*>(p);
    unsigned long long v = 0;
    for (int b = 0; b < width; ++b) v |= (unsigned long long)(unsigned char)p[b] << (8 * b);
    return v;
}

__device__ __forceinline__ void store_span(signed char* p, int width, bool wide,
                                           unsigned long long v) {
    if (wide) {
        *reinterpret_cast<unsigned long long*>(p) = v;
        return;
    }
    for (int b = 0; b < width; ++b) p[b] = (signed char)(unsigned char)(v >> (8 * b));
}

// The spin in byte b of a span.
__device__ __forceinline__ int spin_at(unsigned long long span, int b) {
    return (signed char)(unsigned char)(span >> (8 * b));
}

}  // namespace meshccl_ising

template <int D>
__global__ void __launch_bounds__(256)
meshccl_ising_metropolis(const signed char* in, signed char* out,
                         const unsigned long long* table, int nx, int ny, int nz,
                         unsigned int spans, unsigned int groups, int colour, unsigned int tag,
                         unsigned int t0, unsigned int t1, unsigned int k0, unsigned int k1) {
    using namespace meshccl_ising;
    constexpr int Z = 2 * D;  // neighbours per cell
    const unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    const unsigned int row = g / spans, k = g - row * spans;
    const int y = (int)(row % (unsigned int)ny), zc = (int)(row / (unsigned int)ny);
    const int x0 = 8 * (int)k;
    const int width = min(8, nx - x0);
    const bool wide = (nx & 7) == 0;
    const int p = (colour + y + zc) & 1;  // parity of the active cells' x
    const long long plane = (long long)ny * nx;
    const long long zbase = (long long)zc * plane;
    const long long base = zbase + (long long)y * nx;  // the row's first cell
    const int yu = y == 0 ? ny - 1 : y - 1, yd = y + 1 == ny ? 0 : y + 1;

    const unsigned long long centre = load_span(in + base + x0, width, wide);
    const unsigned long long up = load_span(in + zbase + (long long)yu * nx + x0, width, wide);
    const unsigned long long down = load_span(in + zbase + (long long)yd * nx + x0, width, wide);
    unsigned long long front = 0, back = 0;
    if (D == 3) {
        const long long within = (long long)y * nx + x0;
        const int zf = zc == 0 ? nz - 1 : zc - 1, zb = zc + 1 == nz ? 0 : zc + 1;
        front = load_span(in + (long long)zf * plane + within, width, wide);
        back = load_span(in + (long long)zb * plane + within, width, wide);
    }
    const int left = in[base + (x0 == 0 ? nx - 1 : x0 - 1)];
    const int right = in[base + (x0 + width == nx ? 0 : x0 + width)];

    unsigned int r[4];
    meshccl_philox((unsigned int)(base + x0 + p), tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS,
                   r);
    unsigned long long next = centre;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int b = p + 2 * q;
        if (b < width) {
            const int v = spin_at(centre, b);
            int nn = (b == 0 ? left : spin_at(centre, b - 1))
                   + (b + 1 == width ? right : spin_at(centre, b + 1))
                   + spin_at(up, b) + spin_at(down, b);
            if (D == 3) nn += spin_at(front, b) + spin_at(back, b);
            const int index = (v > 0) * (Z + 1) + (nn + Z) / 2;
            if ((unsigned long long)r[q] < table[index]) {
                const int shift = 8 * b;
                next = (next & ~(0xFFull << shift))
                     | ((unsigned long long)(unsigned char)(signed char)(-v) << shift);
            }
        }
    }
    store_span(out + base + x0, width, wide, next);
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
template __global__ void meshccl_ising_metropolis<2>(
    const signed char*, signed char*, const unsigned long long*, int, int, int, unsigned int,
    unsigned int, int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int);
template __global__ void meshccl_ising_metropolis<3>(
    const signed char*, signed char*, const unsigned long long*, int, int, int, unsigned int,
    unsigned int, int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int);
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
