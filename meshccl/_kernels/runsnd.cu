// runsnd.cu -- binary arrays of any number of axes under any centrosymmetric
// structure: runs of rows as nodes, the neighbourhood from a table.
//
// scipy.ndimage.label takes any 3 x ... x 3 structure, and meshccl.label
// takes 4-D and larger arrays; the fixed-geometry chains (runs2d.cu,
// runs3d.cu) know the neighbourhood of a connectivity at compile time and
// 1 to 3 axes only.  This chain labels the foreground of a binary array
// (bool input: every foreground cell equals every other) with one kernel
// for every structure and number of axes (3-D volumes take the bricks of
// runs3d_structure.cu instead, which include runsnd_pairs.cuh for the
// pairs that leave a brick).  The array is a stack of rows
// along its last axis, each cut into words of 32 cells; the row table
// (runsnd_pairs.cuh, made on the host by meshccl/_gpu/runs_nd.py) lists,
// for each earlier row the structure reaches, how many rows back it is,
// along which leading axes it steps (to skip rows past the array's edge)
// and which of the cells x - 1, x, x + 1 of it a cell at x touches.
//
// 1. meshccl_runsnd_rows: a thread per word.  Its 32 cells (16-byte loads
//    where the row allows) become the foreground mask F and the run starts
//    S (runs.cuh's byte tests); each run start's P is itself, and it is a
//    piece root (bit array A; H, the hooked roots, cleared).
// 2. meshccl_runsnd_unions: a thread per word, the pairs runsnd_pairs.cuh
//    keeps (one per overlap of two runs, for each dx; none where a run, or
//    the same cell's pair with an earlier row of the table, already joins
//    the two), each united in the global forest with
//    unite_recording, which marks the root it hooks in H.  F and S of the
//    rows before are read as words (4 bytes per 32 cells), not the cells.
//    Two template parameters (host: _tuning.RUNSND_UNITE_BATCH and
//    RUNSND_COVER_SLOTS, by number of axes) shape the thread's work:
//    Batch pairs are queued before their unites, whose parents are loaded
//    together, so that a warp's lanes unite at once rather than one
//    (entry, dx) after another; Slots earlier pairs are kept in registers
//    for the cover masks (0: all, in a local-memory table).  A sparse 4-D
//    word has one or two pairs: 4+ axes take 8 and 4, 1-3 axes (dense
//    words, a short table) 1 and 0 (docs/decisions.md: "structures and
//    bool n-D on runs").
// 3. number_pieces.cu, as after runs3d.cu: the hooked roots walked to
//    their root, roots counted and ranked, every piece root's label, then
//    meshccl_label_runs, which sees the array as `rows` rows of nx cells.
//
// Words are numbered bx * rows + r (word bx of row r): consecutive threads
// take consecutive rows of one column of words, so that F and S are read
// and written in whole lines, and a row's table entries (rows r - back)
// read words that threads a few warps earlier wrote.  The root of every
// component is its first cell (unite hooks the larger root under the
// smaller), so the labels are raster-order ranks, SciPy's and skimage's.

#include "launch.cuh"
#include "runs.cuh"
#include "runsnd_pairs.cuh"
#include "unionfind.cuh"

// Word g = bx * rows + r: cells r * nx + 32 bx ... of width up to 32.
// aligned (nx % 32 == 0): the word's run starts are word (r * nx) / 32 + bx
// of A, stored (H zeroed); otherwise the host zeroes A and H and the run
// starts are ORed into the one or two words they fall in.  T: unsigned
// char, the bytes as they are (a cell is foreground where its byte is not
// bg), or meshccl::flag8 (lattice.cuh), each byte tested against 0 first:
// bool input at background 1, whose bytes may be other than 0 and 1.
template <typename T, typename I>
__global__ void __launch_bounds__(256) meshccl_runsnd_rows(
        const T* __restrict__ v, I* P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I rows,
        I nx, int has_bg, unsigned char bg, int xjoin, int aligned) {
    meshccl::grid_entry();  // (launch.cuh)
    const I ntx = (nx + 31) >> 5;
    const I g = (I)blockIdx.x * blockDim.x + (I)threadIdx.x;
    if (g >= rows * ntx) return;
    const I bx = g / rows, r = g - bx * rows;
    const I first = r * nx + bx * 32;
    const int width = (int)min((I)32, nx - bx * 32);
    unsigned w[8];
    meshccl::runs::load_row(v + first, width, w);
    const unsigned m = meshccl::runs::fg_mask(w, width, has_bg, bg);
    const unsigned s = meshccl::runsnd::run_starts(m, xjoin != 0);
    F[g] = m;
    S[g] = s;
    for (unsigned t = s; t; t &= t - 1u) {
        const I c = first + (I)(__ffs(t) - 1);
        P[c] = c;
    }
    if (aligned) {
        A[first >> 5] = s;
        H[first >> 5] = 0u;
    } else if (s) {
        const int sh = (int)(first & 31);
        atomicOr(A + (first >> 5), s << sh);
        if (sh && (s >> (32 - sh))) atomicOr(A + (first >> 5) + 1, s >> (32 - sh));
    }
}

// The row table of runsnd_pairs.cuh (steps, nsteps entries) and the leading
// axes' lengths (lead of them, C order) that say which rows lie on an
// array edge.  Batch: pairs queued per thread before their unites; Slots:
// earlier pairs kept for the cover masks (runsnd_pairs.cuh's word_pairs).
template <typename I, int Batch, int Slots>
__global__ void __launch_bounds__(256) meshccl_runsnd_unions(
        I* P, unsigned* __restrict__ H, const unsigned* __restrict__ F,
        const unsigned* __restrict__ S, I rows, I nx, int xjoin,
        const meshccl::runsnd::Step* __restrict__ steps, int nsteps,
        const long long* __restrict__ lead_shape, int lead) {
    meshccl::grid_entry();  // (launch.cuh)
    const I ntx = (nx + 31) >> 5;
    const I g = (I)blockIdx.x * blockDim.x + (I)threadIdx.x;
    if (g >= rows * ntx) return;
    const unsigned m = F[g];
    if (!m) return;
    const I bx = g / rows, r = g - bx * rows;
    unsigned lo = 0u, hi = 0u;  // bit k: the row is on the first / last plane of axis k
    I t = r;
    for (int k = lead - 1; k >= 0; --k) {
        const I n = (I)__ldg(lead_shape + k), q = t / n, c = t - q * n;
        lo |= (c == 0 ? 1u : 0u) << k;
        hi |= (c == n - 1 ? 1u : 0u) << k;
        t = q;
    }
    auto Fr = [&](I w) { return __ldg(F + w); };
    auto Sr = [&](I w) { return __ldg(S + w); };
    // a batch of pairs: every end's parent loaded first (the loads overlap),
    // then each pair united from the parents (same roots, one step shorter),
    // the first of pa / pb each time, the rest shifted down (one copy of the
    // union loop, the arrays in registers)
    auto unite = [&](const I* a, const I* b, int count) {
        I pa[Batch], pb[Batch];
#pragma unroll
        for (int i = 0; i < Batch; ++i)
            if (i < count) {
                pa[i] = __ldcg(P + a[i]);
                pb[i] = __ldcg(P + b[i]);
            }
#pragma unroll 1
        for (int i = 0; i < count; ++i) {
            meshccl::unite_recording(P, H, pa[0], pb[0]);
#pragma unroll
            for (int j = 0; j + 1 < Batch; ++j) {
                pa[j] = pa[j + 1];
                pb[j] = pb[j + 1];
            }
        }
    };
    meshccl::runsnd::word_pairs<I, Batch, Slots>(m, S[g], xjoin != 0, r, bx, rows, ntx, nx, lo,
                                                 hi, steps, nsteps, Fr, Sr, unite);
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile the instantiations the defaults and the tests ask for.
#define MESHCCL_RUNSND_UNIONS(I, B, K)                                                        \
    template __global__ void meshccl_runsnd_unions<I, B, K>(I*, unsigned*, const unsigned*,   \
        const unsigned*, I, I, int, const meshccl::runsnd::Step*, int, const long long*, int);
#define MESHCCL_RUNSND(I)                                                                     \
    template __global__ void meshccl_runsnd_rows<unsigned char, I>(const unsigned char*, I*,  \
        unsigned*, unsigned*, unsigned*, unsigned*, I, I, int, unsigned char, int, int);       \
    template __global__ void meshccl_runsnd_rows<meshccl::flag8, I>(const meshccl::flag8*,    \
        I*, unsigned*, unsigned*, unsigned*, unsigned*, I, I, int, unsigned char, int, int);   \
    MESHCCL_RUNSND_UNIONS(I, 1, 0) MESHCCL_RUNSND_UNIONS(I, 8, 4)                             \
    MESHCCL_RUNSND_UNIONS(I, 1, 4) MESHCCL_RUNSND_UNIONS(I, 8, 0)
MESHCCL_RUNSND(int)
MESHCCL_RUNSND(long long)
#endif
