// runs2d.cu -- plain 2-D images, a row of a tile per thread, runs as nodes.
//
// mesh23.cu gives every cell a thread and a node of the union-find forest.
// On a 2-D image most of that work is repeated: a cell inside a run of
// equal cells along its row only ever joins its run, and the threads of a
// run all load, test, find and store the same thing.  Here a warp owns a
// tile of 32 x 32 cells and works on whole rows of it as 32-bit masks:
//
// 1. meshccl_runs2d_tile.  Lane r of the warp makes row r's masks: F (the
//    cell is foreground), E (it equals its left neighbour in the tile), V
//    (it equals the cell above in the tile) and, at connectivity 2, the two
//    diagonal masks.  One-byte cells (uint8, int8, bool): the lane loads its
//    row's 32 bytes in two 16-byte loads and compares four cells per word
//    operation, the row above coming from lane r - 1 by shuffles.  Wider
//    cells: a lane per column loads all 32 rows, each row becomes masks by
//    warp ballots, and lane r keeps row r's.  A run is a maximal stretch of
//    E; its first cell (a bit of S = F & ~E) is its node.  The pairs
//    between row r and row r - 1 that need a union are a few mask
//    operations: mesh23.cu's three skipping rules (covered, twin, same run),
//    applied to 32 cells at once.  Each remaining pair unites two run starts
//    in the warp's shared-memory forest.  Then each run start stores its piece root (the piece's first
//    cell) as a global index in P, a row of the tile per store
//    instruction; every row stores F and S in two bit arrays laid out tile
//    column by tile column (a warp's stores are consecutive words), and the
//    row's piece roots go to the bit array A, in raster order, as in
//    mesh23.cu.  Only run starts are written in P.
// 2. meshccl_runs2d_border.  Two warps per tile: one unites the tile's top
//    row with the row above (the same mask rules, on keys loaded from
//    global memory), the other the tile's first column with the last column
//    of the tile to its left.  A cell's node is its run start, found in the
//    bit array S with one count of leading zeros; each root that a union
//    hooks is recorded in H.
// 3. The pieces path of relabel.cu (meshccl_piece_roots and the scans) as
//    for mesh23.cu: every hooked piece root then points at its final root.
// 4. meshccl_runs2d_label (relabel.cu).  Eight lanes per tile row read F
//    and S, resolve each run's label once (run start -> piece root -> root
//    -> rank; the middle step only for a piece root a border union hooked)
//    and write the row's labels with 16-byte stores.  Hooked piece roots
//    keep their value (others still read it) until meshccl_label_pieces.
//
// P is read and written at run starts only until the last step, which
// writes every cell once: about 1 byte read and 4 written per cell, plus
// 1/4 byte of bit arrays and the run starts.

#include "lattice.cuh"

namespace meshccl {
namespace runs2d {

template <typename K>
__device__ __forceinline__ K shfl(K k, int delta, bool up) {
    if (sizeof(K) == 8) {
        const long long x = (long long)k;
        return (K)(up ? __shfl_up_sync(0xffffffffu, x, delta)
                      : __shfl_down_sync(0xffffffffu, x, delta));
    }
    const int x = (int)k;
    return (K)(up ? __shfl_up_sync(0xffffffffu, x, delta) : __shfl_down_sync(0xffffffffu, x, delta));
}

// Byte-wise tests on 4 one-byte cells in a word: bit 7 of each byte set
// where the byte is zero / not zero (exact: the sums never carry into the
// next byte).
__device__ __forceinline__ unsigned zero_bytes(unsigned v) {
    return ~(((v & 0x7f7f7f7fu) + 0x7f7f7f7fu) | v) & 0x80808080u;
}
__device__ __forceinline__ unsigned nonzero_bytes(unsigned v) {
    return (((v & 0x7f7f7f7fu) + 0x7f7f7f7fu) | v) & 0x80808080u;
}
// ... and those four bits (bit 7 of bytes 0..3) packed into bits 0..3: the
// product places byte k's bit at 24 + k, and no two partial products meet.
__device__ __forceinline__ unsigned pack4(unsigned hi) {
    return ((hi >> 7) * 0x01020408u) >> 24;
}
// 8 words of byte tests -> one 32-bit mask, cell c at bit c.
__device__ __forceinline__ unsigned pack32(const unsigned (&h)[8]) {
    unsigned m = 0u;
#pragma unroll
    for (int j = 0; j < 8; ++j) m |= pack4(h[j]) << (4 * j);
    return m;
}

// The run start at or left of bit b in the run-start mask s (s has one).
__device__ __forceinline__ int start_of(unsigned s, int b) {
    return 31 - __clz(s & (b == 31 ? 0xffffffffu : ((2u << b) - 1u)));
}

// The node (run start, a global index) of the foreground cell (y, x).
template <typename I>
__device__ __forceinline__ I node(const unsigned* __restrict__ S, I y, I x, I ny, I nx) {
    const I bx = x >> 5;
    return y * nx + (x & ~(I)31) + start_of(__ldg(S + bx * ny + y), (int)(x & 31));
}

template <typename I>
__device__ __forceinline__ void unite_recording(I* P, unsigned* H, I a, I b) {
    const I h = unite_hooked(P, a, b);
    if (h >= 0) atomicOr(H + (h >> 5), 1u << (h & 31));
}

}  // namespace runs2d
}  // namespace meshccl

namespace meshccl {
namespace runs2d {

// The tile kernel's work up to its bit array A: returns the piece roots of
// the lane's row (0 past the array).
template <typename T, typename I, int C, int NW>
__device__ __forceinline__ unsigned label_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ F,
        unsigned* __restrict__ S, I ny, I nx, int has_bg, typename meshccl::Key<T>::type bgkey) {
    typedef typename meshccl::Key<T>::type K;
    using meshccl::runs2d::shfl;
    using meshccl::runs2d::start_of;
    // The warp's forest: node r * 33 + b is the run starting at bit b of row
    // r (raster order inside the tile, so the smallest node is still the
    // first cell).  33, not 32: lane r's nodes then start in bank r, and
    // lanes touching the same bit of their rows do not all queue on one bank.
    constexpr int RS = 33;
    __shared__ int forest[NW][32 * RS];
    __shared__ unsigned starts[NW][32];  // each row's run starts
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I bx = (I)blockIdx.x * NW + warp, ntx = (nx + 31) >> 5;
    if (bx >= ntx) return 0u;  // the whole warp
    const I x0 = bx * 32, x = x0 + lane, y0 = (I)blockIdx.y * 32;
    unsigned mF = 0u, mE = 0u, mV = 0u, mVl = 0u, mVr = 0u;
    if (sizeof(T) == 1) {
        // One-byte cells: lane r loads row r's 32 cells (two 16-byte loads
        // where rows are 16-byte aligned) and makes its masks with byte-wise
        // word arithmetic; the row above comes from lane r - 1.
        const I y = y0 + lane;
        const int width = (int)min((I)32, nx - x0);
        unsigned w[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) w[j] = 0u;
        if (y < ny) {
            const T* row = v + y * nx + x0;
            if (width == 32 && ((unsigned long long)row & 15ull) == 0ull) {
                const uint4 a = reinterpret_cast<const uint4*>(row)[0];
                const uint4 b = reinterpret_cast<const uint4*>(row)[1];
                w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
                w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
            } else {
                for (int c = 0; c < width; ++c)
                    w[c >> 2] |= (unsigned)(unsigned char)row[c] << (8 * (c & 3));
            }
        }
        const unsigned in = y >= ny ? 0u : width == 32 ? 0xffffffffu : (1u << width) - 1u;
        const unsigned bg4 = 0x01010101u * (unsigned)(unsigned char)bgkey;
        unsigned h[8], u[8];
        if (has_bg) {
#pragma unroll
            for (int j = 0; j < 8; ++j) h[j] = meshccl::runs2d::nonzero_bytes(w[j] ^ bg4);
            mF = in & meshccl::runs2d::pack32(h);
        } else {
            mF = in;
        }
#pragma unroll
        for (int j = 0; j < 8; ++j)  // equal to the cell on the left
            h[j] = meshccl::runs2d::zero_bytes(w[j] ^ ((w[j] << 8) | (j ? w[j - 1] >> 24 : 0u)));
        mE = mF & meshccl::runs2d::pack32(h) & ~1u;
#pragma unroll
        for (int j = 0; j < 8; ++j) u[j] = __shfl_up_sync(0xffffffffu, w[j], 1);
        unsigned pF = __shfl_up_sync(0xffffffffu, mF, 1);
        if (lane == 0) pF = 0u;
#pragma unroll
        for (int j = 0; j < 8; ++j) h[j] = meshccl::runs2d::zero_bytes(w[j] ^ u[j]);
        mV = mF & pF & meshccl::runs2d::pack32(h);
        if (C >= 2) {
#pragma unroll
            for (int j = 0; j < 8; ++j)  // equal to the cell up-left
                h[j] = meshccl::runs2d::zero_bytes(w[j] ^ ((u[j] << 8) | (j ? u[j - 1] >> 24 : 0u)));
            mVl = mF & (pF << 1) & meshccl::runs2d::pack32(h);
#pragma unroll
            for (int j = 0; j < 8; ++j)  // equal to the cell up-right
                h[j] = meshccl::runs2d::zero_bytes(w[j] ^ ((u[j] >> 8) | (j < 7 ? u[j + 1] << 24 : 0u)));
            mVr = mF & (pF >> 1) & meshccl::runs2d::pack32(h);
        }
    } else {
        // Wider cells: a lane per column, 32 loads in flight, and row masks by
        // ballot; lane r keeps row r's.
        T raw[32];
#pragma unroll
        for (int r = 0; r < 32; ++r) {
            const I y = y0 + r;
            raw[r] = (x < nx && y < ny) ? v[y * nx + x] : T();
        }
        unsigned pF = 0u;
        K pk = K();
#pragma unroll
        for (int r = 0; r < 32; ++r) {
            const bool in = x < nx && y0 + r < ny;
            const K k = in ? meshccl::Key<T>::of(raw[r]) : K();
            const bool f = in && !(has_bg && k == bgkey);
            const K kl = shfl(k, 1, true);
            const bool pf = (pF >> lane) & 1u;
            const unsigned Fm = __ballot_sync(0xffffffffu, f);
            const unsigned Em = __ballot_sync(0xffffffffu, f && lane > 0 && kl == k);
            const unsigned Vm = __ballot_sync(0xffffffffu, f && pf && pk == k);
            unsigned Vl = 0u, Vr = 0u;
            if (C >= 2) {
                const K ul = shfl(pk, 1, true), ur = shfl(pk, 1, false);
                Vl = __ballot_sync(0xffffffffu,
                                   f && lane > 0 && ((pF >> (lane - 1)) & 1u) && ul == k);
                Vr = __ballot_sync(0xffffffffu,
                                   f && lane < 31 && ((pF >> (lane + 1)) & 1u) && ur == k);
            }
            if (lane == r) {
                mF = Fm;
                mE = Em;
                mV = Vm;
                mVl = Vl;
                mVr = Vr;
            }
            pk = k;
            pF = Fm;
        }
    }
    // Lane r: row r.  Run starts, their forest, and the pairs with row r - 1.
    const unsigned S_ = mF & ~mE;
    const unsigned Sup = __shfl_up_sync(0xffffffffu, S_, 1);
    int* L = forest[warp];
    const int me = lane * RS, up = me - RS;
    for (unsigned m = S_; m; m &= m - 1u) {
        const int b = __ffs(m) - 1;
        L[me + b] = me + b;
    }
    starts[warp][lane] = S_;
    // The straight-up pairs are united with the top of their vertical
    // stretch, not with the row above: t(r, b) is the first row of the
    // column of equal cells (V bits) through (r, b).  A column of 32 one-cell
    // runs then makes a star, not a chain of 32 that every find walks.  (Any
    // cell is joined to its stretch's top: by induction in raster order, a
    // pair the rules skip goes round through an earlier cell's pair and a
    // run, as before.)  t as five bit planes, by a segmented scan over lanes:
    // D marks the columns whose stretch starts in the lanes seen so far.
    unsigned D = ~mV, tops[5];
#pragma unroll
    for (int k = 0; k < 5; ++k) tops[k] = ((lane >> k) & 1) ? D : 0u;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned Du = __shfl_up_sync(0xffffffffu, D, d);
#pragma unroll
        for (int k = 0; k < 5; ++k) {
            const unsigned Tu = __shfl_up_sync(0xffffffffu, tops[k], d);
            if (lane >= d) tops[k] |= Tu & ~D;
        }
        if (lane >= d) D |= Du;
    }
    __syncwarp();
    // mesh23.cu's rules on whole rows (V bits are 0 in row 0).  c1: the pair
    // straight up, unless the left cell is equal and its own pair up exists
    // (twin).  c2: up-left unless up is a pair (same run) or the left cell
    // is equal (covered); up unless up-right is a pair or covered; up-right
    // unless the left cell is equal and up is a pair (twin).
    unsigned U0, Ul = 0u, Ur = 0u;
    if (C == 1) {
        U0 = mV & ~(mE & (mV << 1));
    } else {
        Ul = mVl & ~mV & ~mE;
        U0 = mV & ~mVr & ~mE;
        Ur = mVr & ~(mE & mV);
    }
    for (; U0; U0 &= U0 - 1u) {
        const int b = __ffs(U0) - 1;
        int t = 0;
#pragma unroll
        for (int k = 0; k < 5; ++k) t |= ((tops[k] >> b) & 1) << k;
        meshccl::unite<true>(L, me + start_of(S_, b), t * RS + start_of(starts[warp][t], b));
    }
    for (; Ul; Ul &= Ul - 1u) {
        const int b = __ffs(Ul) - 1;
        meshccl::unite<true>(L, me + start_of(S_, b), up + start_of(Sup, b - 1));
    }
    for (; Ur; Ur &= Ur - 1u) {
        const int b = __ffs(Ur) - 1;
        meshccl::unite<true>(L, me + start_of(S_, b), up + start_of(Sup, b + 1));
    }
    __syncwarp();
    const I y = y0 + lane;
    const I rowbase = y * nx + x0, tilebase = y0 * nx + x0;
    unsigned roots = 0u;
    // Each run start's piece root into P, a row at a time: lane b takes
    // column b, so that a store instruction stays in one row.  (Lane r
    // walking its own row's run starts put 32 rows, 32 partly written
    // sectors, in every store instruction: the tile kernel took twice as
    // long on images with many runs, benchmarks/NOTES.md.)
    for (int r = 0; r < 32 && y0 + r < ny; ++r) {
        const int node = r * RS + lane;
        bool root = false;
        if ((starts[warp][r] >> lane) & 1u) {
            const int rt = meshccl::find<true>(L, node);  // halving: shared walks shorten
            root = rt == node;
            const int ry = rt / RS;
            P[tilebase + (I)r * nx + lane] = tilebase + ry * nx + (rt - ry * RS);
        }
        const unsigned m = __ballot_sync(0xffffffffu, root);
        if (lane == r) roots = m;  // row r's piece roots, for lane r
    }
    if (y >= ny) return 0u;
    F[bx * ny + y] = mF;
    S[bx * ny + y] = S_;
    return roots;
}

}  // namespace runs2d
}  // namespace meshccl

// The image is ny x nx (1-D arrays come as one row).  NW warps per block,
// each on its own 32 x 32 tile (tiles bx = blockIdx.x * NW + warp, by =
// blockIdx.y).  F and S: (nx + 31) / 32 * ny words each, word bx * ny + y.
// A and H: aligned, nx % 32 == 0, makes a tile row one word of each, and
// the block's NW tiles side by side NW consecutive words, which the block
// stores together (H as zeros); a word per lane, 32 rows per store
// instruction, left partly written sectors that cost a fifth of the kernel
// on the 4096^2 images.  Otherwise the host zeroes A and H and rows OR
// their piece roots in.
template <typename T, typename I, int C, int NW>
__global__ void __launch_bounds__(32 * NW) meshccl_runs2d_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I ny, I nx,
        int has_bg, typename meshccl::Key<T>::type bgkey, int aligned) {
    const unsigned roots =
        meshccl::runs2d::label_tile<T, I, C, NW>(v, P, F, S, ny, nx, has_bg, bgkey);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I ntx = (nx + 31) >> 5, y0 = (I)blockIdx.y * 32;
    if (!aligned) {  // the same for the whole grid
        if (roots) {
            const I rowbase = (y0 + lane) * nx + ((I)blockIdx.x * NW + warp) * 32;
            const I w = rowbase >> 5;
            const int s = (int)(rowbase & 31);
            atomicOr(A + w, roots << s);
            if (s) atomicOr(A + w + 1, roots >> (32 - s));
        }
        return;
    }
    __shared__ unsigned staged[32][NW];
    staged[lane][warp] = roots;
    __syncthreads();
    const int r = threadIdx.x / NW, k = threadIdx.x % NW;
    const I bk = (I)blockIdx.x * NW + k, y = y0 + r;
    if (bk < ntx && y < ny) {
        const I w = (y * nx + bk * 32) >> 5;
        A[w] = staged[r][k];
        H[w] = 0u;
    }
}

// Block of 8 warps: tiles bx = blockIdx.x * 4 + warp / 2, by = blockIdx.y.
// Even warps: the tile's top row against the row above (every pair of it
// that goes up).  Odd warps, a lane per row r of the tile: the first
// cell's pair to the left and, at connectivity 2 and r > 0, its pair up-left
// and the pair up-right of the cell to its left (the last column of the
// tile before).  Same rules as the tile kernel, with equality to the left
// taken across tiles.
template <typename T, typename I, int C>
__global__ void __launch_bounds__(256) meshccl_runs2d_border(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I ny, I nx, int has_bg, typename meshccl::Key<T>::type bgkey) {
    typedef typename meshccl::Key<T>::type K;
    using meshccl::Key;
    using meshccl::runs2d::node;
    using meshccl::runs2d::shfl;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I bx = (I)blockIdx.x * 4 + (warp >> 1), ntx = (nx + 31) >> 5;
    const I x0 = bx * 32, y0 = (I)blockIdx.y * 32;
    if (bx >= ntx) return;
    if ((warp & 1) == 0) {
        if (y0 == 0) return;
        const I x = x0 + lane, i = y0 * nx + x;
        const bool in = x < nx;
        const K k = in ? Key<T>::of(v[i]) : K(), ku = in ? Key<T>::of(v[i - nx]) : K();
        const bool f = in && !(has_bg && k == bgkey);
        K kl = shfl(k, 1, true), ul = shfl(ku, 1, true), ur = shfl(ku, 1, false);
        if (lane == 0 && x > 0) {
            kl = Key<T>::of(v[i - 1]);
            ul = Key<T>::of(v[i - nx - 1]);
        }
        if (lane == 31 && x + 1 < nx) ur = Key<T>::of(v[i - nx + 1]);
        if (!f) return;
        const bool e = x > 0 && kl == k;  // equal to the left, across tiles
        const bool V = ku == k, Vl = x > 0 && ul == k, Vr = x + 1 < nx && ur == k;
        bool u0, ul_, ur_;
        if (C == 1) {
            u0 = V && !(e && Vl);
            ul_ = ur_ = false;
        } else {
            ul_ = Vl && !V && !e;
            u0 = V && !Vr && !e;
            ur_ = Vr && !(e && V);
        }
        if (!(u0 || ul_ || ur_)) return;
        const I a = node(S, y0, x, ny, nx);
        if (ul_) meshccl::runs2d::unite_recording(P, H, a, node(S, y0 - 1, x - 1, ny, nx));
        if (u0) meshccl::runs2d::unite_recording(P, H, a, node(S, y0 - 1, x, ny, nx));
        if (ur_) meshccl::runs2d::unite_recording(P, H, a, node(S, y0 - 1, x + 1, ny, nx));
    } else {
        const I y = y0 + lane;
        if (bx == 0 || y >= ny) return;
        const I i = y * nx + x0;  // the tile's first cell of row y (x0 > 0)
        const K k0 = Key<T>::of(v[i]), kL = Key<T>::of(v[i - 1]);
        const bool f0 = !(has_bg && k0 == bgkey), fL = !(has_bg && kL == bgkey);
        if (f0 && kL == k0)  // the first cell is a run start: its own node
            meshccl::runs2d::unite_recording(P, H, i, node(S, y, x0 - 1, ny, nx));
        if (C >= 2 && lane > 0) {
            const K ku0 = Key<T>::of(v[i - nx]), kuL = Key<T>::of(v[i - nx - 1]);
            // (y, x0) up-left to (y - 1, x0 - 1): not if (y - 1, x0) is equal
            // (same run) or (y, x0 - 1) is (covered)
            if (f0 && kuL == k0 && ku0 != k0 && kL != k0)
                meshccl::runs2d::unite_recording(P, H, i, node(S, y - 1, x0 - 1, ny, nx));
            // (y, x0 - 1) up-right to (y - 1, x0): not if its left cell and the
            // cell above it are equal to it (twin)
            if (fL && ku0 == kL && !(Key<T>::of(v[i - 2]) == kL && kuL == kL))
                meshccl::runs2d::unite_recording(P, H, node(S, y, x0 - 1, ny, nx), i - nx);
        }
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_R2(T, I)                                                                         \
    template __global__ void meshccl_runs2d_tile<T, I, 1, 8>(const T*, I*, unsigned*, unsigned*, \
        unsigned*, unsigned*, I, I, int, meshccl::Key<T>::type, int);                             \
    template __global__ void meshccl_runs2d_tile<T, I, 2, 8>(const T*, I*, unsigned*, unsigned*, \
        unsigned*, unsigned*, I, I, int, meshccl::Key<T>::type, int);                                        \
    template __global__ void meshccl_runs2d_border<T, I, 1>(const T*, I*, unsigned*,             \
        const unsigned*, I, I, int, meshccl::Key<T>::type);                                      \
    template __global__ void meshccl_runs2d_border<T, I, 2>(const T*, I*, unsigned*,             \
        const unsigned*, I, I, int, meshccl::Key<T>::type);
#define MESHCCL_R2_T(T) MESHCCL_R2(T, int) MESHCCL_R2(T, long long)
MESHCCL_R2_T(unsigned char)
MESHCCL_R2_T(unsigned short)
MESHCCL_R2_T(unsigned int)
MESHCCL_R2_T(unsigned long long)
MESHCCL_R2_T(signed char)
MESHCCL_R2_T(short)
MESHCCL_R2_T(int)
MESHCCL_R2_T(long long)
MESHCCL_R2_T(float)
MESHCCL_R2_T(double)
#endif
