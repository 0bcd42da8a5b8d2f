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
// uniforms of its 16 nibbles: nibble t takes half (t >> 2) & 1 of word
// (t & 3) + 4 (t >> 3), so words 0..3 serve nibbles j and j + 4 and words
// 4..7 nibbles j + 8 and j + 12 -- two nibbles 16 bits apart in the packed
// word, as the two halves are in the random word.  A cell accepts when u <
// (threshold >> 16); when u equals it (1 in 65,536), 16 more bits decide:
// the low half of word 0 of Philox call 16 G + t with tag
// TAG_METROPOLIS_TIE against the threshold's low 16 bits.  That is exactly
// "a 32-bit uniform (u, extra) below the 32-bit threshold", the resolution
// of the thresholds themselves (2**-32), at the cost of an eighth of a
// Philox call a cell.  Counter indices are below 2**32 when 32 rows W <=
// 2**32 (the launch code checks).
//
// The comparisons, two cells at a time.  The 16 nibbles of `sum + word
// (2d + 1)` are regrouped (two masks, two shifts) into the 8 pairs (j, j +
// 4) of each 32-bit half, a byte per pair; the byte indexes a 256-entry
// table in shared memory that holds the two thresholds' high halves as the
// two 16-bit lanes of one word h, with c = 0x80008000 - (h & 0x7FFF7FFF).
// Then d = (u & 0x7FFF7FFF) + c holds per lane 2**15 + (u mod 2**15) - (h
// mod 2**15), which never borrows from the next lane, and one three-input
// logic operation of u, h and d gives "u < h" in bit 15 and bit 31; one
// shift puts them on nibbles j and j + 4.  A tie (u == h in a lane) shows
// as a zero lane of u ^ h: the word's 16 cells are checked together with
// the usual zero-lane test and, in the rare word with one, each cell again
// with the 16 more bits.  A threshold of 2**32 (always) is stored as high
// half 0xFFFF and low part 0x10000, so that a uniform 0xFFFF ties and its
// 16 more bits always accept.  Per word, against a comparison and a
// table read per cell: 8 table reads and about 8 integer logic operations
// per pair of cells; with Philox (38 multiplies, 38 three-input xors) about
// 150 ALU-pipe instructions a word on sm_90.
//
// A sweep is colour 0 then colour 1, one launch each, in place: a thread
// owns one word of the active colour, reads only the other colour's
// words (which no thread of the launch writes), and writes its own word.
// With an image (the sweep before a labelled 3-D step), the colour-1
// launch also writes the phase's bool image: the thread of word k of row
// r holds the final words of both colours for the 32 cells x = 32 k ..
// 32 k + 31 (its own, and the other colour's that it read), and stores
// them as 32 bytes (meshccl_multispin_image), with no pass of its own.
// A block is 32 words of 8 rows (or, for rows of fewer words, a row's
// words -- a power of two -- and more rows): the grid's x runs over the
// rows of a plane, y over a row's words, z over the planes, so no thread
// divides.  With W = 2 (_tuning.METROPOLIS_WORDS) a thread takes words k and
// k + blockDim.x of its row, sharing the row's set-up and the Philox key
// schedule between them.  The launches are packed once and, from Hopper on, each may
// start while the one before drains: its blocks build their tables, then
// wait in grid_entry() (launch.cuh) before reading a spin.  Per sweep and
// cell: a read of a nibble of each colour about twice (the neighbour rows
// come mostly from cache) and a write of its own nibble, about 0.75
// bytes, against 2 bytes of a read and a write of an int8 lattice.
//
// meshccl_ising_pack writes the two arrays from int8 spins (a thread per
// word); meshccl_ising_unpack writes, from them, a span of 32 cells of a
// row per thread as int8 spins (mode 0), the bool image s > 0 (mode 1) or
// s < 0 (mode 2): the image of a 3-D labelling hook asked for outside the
// run loop (the 2-D hooks' label chain reads the words itself:
// packed_spins.cuh).
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

#include "launch.cuh"
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

// The 16-bit uniform of nibble t of a packed word is half (t >> 2) & 1 of Philox
// word (t & 3) + 4 (t >> 3): word j < 4 holds the uniforms of nibbles j (low half)
// and j + 4 (high half), word j >= 4 those of nibbles j + 4 and j + 8.  Nibbles
// j and j + 4 are 16 bits apart, like the two halves of the word, so one 32-bit
// comparison of two 16-bit lanes decides both and its two result bits move to
// their nibbles with one shift.
__device__ __forceinline__ int meshccl_multispin_word(int t) { return (t & 3) + 4 * (t >> 3); }

// Bit 15 (bit 31) of the result: the low (high) lane of u is below that of h, for
// lanes of 16 bits, given h and its complement c = 0x80008000 - (h & 0x7FFF7FFF).
// The lanes of d = (u & 0x7FFF7FFF) + c are 2**15 + (u mod 2**15) - (h mod 2**15),
// in [1, 2**16), so no carry crosses lanes; a lane's top bit is set when u's low 15
// bits are not below h's; the lanes' top bits of u and h decide the rest.
__device__ __forceinline__ unsigned int meshccl_below16x2(unsigned int u, unsigned int h,
                                                          unsigned int c) {
    const unsigned int d = (u & 0x7FFF7FFFu) + c;
    return (~u & h) | (~(u ^ h) & ~d);
}

// The cells x = 32 k .. 32 k + 31 of a row (those below nx) as bytes of a phase's
// bool image at image + row: 1 where the spin's bit is set (image_flip 0, the phase
// 'up') or clear (1, 'down').  `even` holds the cells of even x of that span, `odd`
// those of odd x (packed_spins.cuh interleaves them the same way).
__device__ __forceinline__ void meshccl_multispin_image(unsigned char* image,
                                                        unsigned long long row, int nx,
                                                        unsigned int k, unsigned long long even,
                                                        unsigned long long odd,
                                                        unsigned int image_flip) {
    unsigned long long u = (even & 0x1111111111111111ull) | ((odd & 0x1111111111111111ull) << 1);
    u = (u | (u >> 2)) & 0x0F0F0F0F0F0F0F0Full;  // bit m of the 32-bit result: cell 32 k + m
    u = (u | (u >> 4)) & 0x00FF00FF00FF00FFull;
    u = (u | (u >> 8)) & 0x0000FFFF0000FFFFull;
    u = (u | (u >> 16)) & 0x00000000FFFFFFFFull;
    const unsigned int m = (unsigned int)u ^ (0u - image_flip);
    unsigned int b[8];  // byte c of b[j]: cell 32 k + 4 j + c, 0 or 1 (no carries)
#pragma unroll
    for (int j = 0; j < 8; ++j) b[j] = (((m >> (4 * j)) & 0xFu) * 0x00204081u) & 0x01010101u;
    const int x0 = 32 * (int)k;
    unsigned char* dst = image + row + (unsigned long long)x0;
    if ((nx & 15) == 0 && x0 + 32 <= nx) {  // 16-byte aligned rows, a whole span
        uint4* out = reinterpret_cast<uint4*>(dst);
        out[0] = make_uint4(b[0], b[1], b[2], b[3]);
        out[1] = make_uint4(b[4], b[5], b[6], b[7]);
    } else {
        for (int c = 0; c < 32 && x0 + c < nx; ++c)
            dst[c] = (unsigned char)((b[c >> 2] >> (8 * (c & 3))) & 1u);
    }
}

// W: packed words per thread, words k, k + blockDim.x, ... of one row (1 or 2;
// _tuning.METROPOLIS_WORDS).
template <int D, int W>
__global__ void __launch_bounds__(256)
meshccl_ising_multispin(unsigned long long* packed, const unsigned long long* table, int half,
                        int ny, int nz, int z0, unsigned int words, int colour, unsigned int tag,
                        unsigned int tie_tag, unsigned int t0, unsigned int t1, unsigned int k0,
                        unsigned int k1, unsigned char* __restrict__ image,
                        unsigned int image_flip) {
    constexpr int Z = 2 * D;  // neighbours per cell
    constexpr int B = MESHCCL_MULTISPIN_BITS;
    // pair[a | b << 4]: the high 16 bits of the thresholds of nibble values a (low
    // lane) and b (high lane); low[v]: the 16 bits below them.  A threshold of 2**32
    // (always) is stored as 0xFFFF with low bits 0x10000: a uniform 0xFFFF ties and its
    // 16 more bits are always below.  Values from 2 (Z + 1) on are padding (never).
    // pair[e].y: the lanes' complement c of meshccl_below16x2.
    __shared__ uint2 pair[256];
    __shared__ unsigned int low[16];
    const unsigned int tid = threadIdx.y * blockDim.x + threadIdx.x;
    for (unsigned int e = tid; e < 256; e += blockDim.x * blockDim.y) {
        const unsigned int a = e & 15u, b = e >> 4;
        const unsigned long long ta = a < 2 * (Z + 1) ? table[a] : 0ull;
        const unsigned long long tb = b < 2 * (Z + 1) ? table[b] : 0ull;
        const unsigned int ha = ta >> 32 ? 0xFFFFu : (unsigned int)(ta >> 16);
        const unsigned int hb = tb >> 32 ? 0xFFFFu : (unsigned int)(tb >> 16);
        const unsigned int h = ha | hb << 16;
        pair[e] = make_uint2(h, 0x80008000u - (h & 0x7FFF7FFFu));
        if (e < 16) low[e] = ta >> 32 ? 0x10000u : (unsigned int)(ta & 0xFFFFu);
    }
    __syncthreads();
    // launched early (PDL), the blocks built their tables while the sweep's kernel before
    // drained; they read the spins only once it has ended
    meshccl::grid_entry();
    // the block's words: rows y of plane z, words k of those rows
    const int y = blockIdx.x * blockDim.y + threadIdx.y, z = z0 + blockIdx.z;
    const unsigned int k0w = blockIdx.y * blockDim.x * W + threadIdx.x;
    if (y >= ny || k0w >= words) return;
    // word indices of packed fit in 32 bits (2 rows words <= 2**28: _packable)
    const unsigned int per_colour = (unsigned int)nz * (unsigned int)ny * words;
    const unsigned int mine = (unsigned int)colour * per_colour;  // the active colour's first word
    const unsigned int theirs = per_colour - mine;                // the other colour's
    const unsigned int last = (unsigned int)(half - 1) >> 4;      // the row's last word
    const int tail = (half - 1) & 15;                             // its last cell's nibble
    const unsigned int r = (unsigned int)z * ny + y;
    const unsigned int at = theirs + r * words;  // the other colour's row r
    const unsigned int up = y == 0 ? at + (ny - 1) * words : at - words;
    const unsigned int down = y + 1 == ny ? at - (ny - 1) * words : at + words;
    unsigned int front = 0, back = 0;
    if (D == 3) {
        const unsigned int plane = (unsigned int)ny * words;
        front = z == 0 ? at + (nz - 1) * plane : at - plane;
        back = z + 1 == nz ? at - (nz - 1) * plane : at + plane;
    }
    // the side neighbours: cell i - 1 of the other colour when (colour + y + z) is even,
    // else cell i + 1; a row's whole words hold 16 cells, its last word tail + 1
    const bool before = ((colour ^ y ^ z) & 1) == 0;
    // the nibbles of the row's last word that hold cells (its padding stays 0)
    const unsigned long long held = tail == 15 ? ~0ull : (1ull << (B * (tail + 1))) - 1;
#pragma unroll
    for (int q = 0; q < W; ++q) {  // words k0w, k0w + blockDim.x, ...
        const unsigned int k = k0w + q * blockDim.x;
        if (W > 1 && k >= words) break;
        const unsigned long long same = packed[at + k];
        unsigned long long sum = same + packed[up + k] + packed[down + k];
        if (D == 3) sum += packed[front + k] + packed[back + k];
        if (before) {                       // nibble t: cell 16k + t - 1
            if (k > 0 || tail == 15) {      // nibble 0 from nibble 15 of the word before
                sum += (same << B) + (packed[at + (k > 0 ? k - 1 : last)] >> 60);
            } else {                        // the row's first word: nibble 0 from cell half - 1
                sum += (same << B) + ((packed[at + last] >> (B * tail)) & 0xFull);
            }
        } else {                            // nibble t: cell 16k + t + 1
            if (k < last || tail == 15) {   // nibble 15 from nibble 0 of the next word
                sum += (same >> B) + (packed[at + (k < last ? k + 1 : 0)] << 60);
            } else {                        // the row's last word: cell half - 1 takes cell 0
                sum += ((same >> B) & ~(0xFull << (B * tail)))
                     + ((packed[at] & 0xFull) << (B * tail));
            }
        }
        const unsigned int g = r * words + k;  // in the active colour
        const unsigned long long word = packed[mine + g];
        const unsigned long long index = sum + word * (unsigned long long)(Z + 1);

        const unsigned int G = (unsigned int)colour * per_colour + g;
        unsigned int w[8];
        meshccl_philox(2 * G, tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, w);
        meshccl_philox(2 * G + 1, tag, t0, t1, k0, k1, MESHCCL_PHILOX_ROUNDS, w + 4);
        unsigned int flips[2] = {0u, 0u}, equal = 0u;
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // nibbles 8h .. 8h + 7
            const unsigned int x = (unsigned int)(index >> (32 * h));
            // bytes 0 and 1 of even (odd): the values of nibbles 0 | 4 << 4 and
            // 2 | 6 << 4 (1 | 5 << 4 and 3 | 7 << 4) of this half
            unsigned int even = x & 0x0F0F0F0Fu, odd = (x >> 4) & 0x0F0F0F0Fu;
            even |= even >> 12;
            odd |= odd >> 12;
#pragma unroll
            for (int j = 0; j < 4; ++j) {  // nibbles j and j + 4 of this half
                const unsigned int v = ((j & 1) ? odd : even) >> (8 * (j >> 1)) & 0xFFu;
                const uint2 p = pair[v];
                const unsigned int u = w[4 * h + j];
                // bits 15 and 31 to bits 4j and 4j + 16 (no overlap: adding is or-ing)
                flips[h] += (meshccl_below16x2(u, p.x, p.y) & 0x80008000u) >> (15 - B * j);
                const unsigned int e = u ^ p.x;  // a lane of 0: a tie
                equal |= (e - 0x00010001u) & ~e;
            }
        }
        unsigned long long flip = flips[0] | (unsigned long long)flips[1] << 32;
        if (k == last) flip &= held;
        if (equal & 0x80008000u) {  // 1 word in 4,096: the 16 more bits of the tied cells
            unsigned int ties = 0;
#pragma unroll
            for (int t = 0; t < MESHCCL_MULTISPIN_CELLS; ++t) {
                const unsigned int v = (unsigned int)(index >> (B * t)) & 0xFu;
                const unsigned int u =
                    (w[meshccl_multispin_word(t)] >> (16 * ((t >> 2) & 1))) & 0xFFFFu;
                if (u == (pair[v].x & 0xFFFFu)) ties |= 1u << t;
            }
            if (k == last) ties &= (1u << (tail + 1)) - 1;
            while (ties) {
                const int t = __ffs(ties) - 1;
                ties &= ties - 1;
                unsigned int x[4];
                meshccl_philox(16 * G + (unsigned int)t, tie_tag, t0, t1, k0, k1,
                               MESHCCL_PHILOX_ROUNDS, x);
                if ((x[0] & 0xFFFFu) < low[(index >> (B * t)) & 0xFull])
                    flip |= 1ull << (B * t);
            }
        }
        packed[mine + g] = word ^ flip;
        if (image != nullptr)  // the last colour of a sweep: both colours' cells are final
            meshccl_multispin_image(image, (unsigned long long)r * (2u * (unsigned int)half),
                                    2 * half, k, before ? word ^ flip : same,
                                    before ? same : word ^ flip, image_flip);
    }
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
template __global__ void meshccl_ising_multispin<2, 1>(
    unsigned long long*, const unsigned long long*, int, int, int, int, unsigned int, int,
    unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
    unsigned char*, unsigned int);
template __global__ void meshccl_ising_multispin<2, 2>(
    unsigned long long*, const unsigned long long*, int, int, int, int, unsigned int, int,
    unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
    unsigned char*, unsigned int);
template __global__ void meshccl_ising_multispin<3, 1>(
    unsigned long long*, const unsigned long long*, int, int, int, int, unsigned int, int,
    unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
    unsigned char*, unsigned int);
template __global__ void meshccl_ising_multispin<3, 2>(
    unsigned long long*, const unsigned long long*, int, int, int, int, unsigned int, int,
    unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
    unsigned char*, unsigned int);
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
