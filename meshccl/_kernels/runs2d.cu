// runs2d.cu -- plain 2-D images, a row of a tile per thread, runs as nodes.
//
// A cell-per-thread labeller (general.cu) gives every cell a
// thread and a node of the union-find forest.  On a 2-D image most of that work is repeated: a cell inside a run of
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
//    operations: three skipping rules (covered, twin, same run; runs.cuh, row_pairs),
//    applied to 32 cells at once.  Each remaining pair unites two run starts
//    in the warp's shared-memory forest.  Then each run start stores its
//    piece root (the piece's first cell) as a global index in P, 32 run
//    starts per turn when the tile has few, else a tile row per turn
//    (runs.cuh, store_piece_roots); every row stores F and S in two bit
//    arrays laid out tile
//    column by tile column (a warp's stores are consecutive words), and the
//    row's piece roots go to the bit array A, in raster order.  Only run starts are written in P (with `prefetch`, the
//    sectors they will be written in are asked into L2 as soon as the run
//    starts are known: _tuning.RUNS_PREFETCH says where that pays).
//    The block's eight tiles side by side share one forest, numbered in
//    raster order over their strip of 32 x 256 cells, and unite the pairs
//    across their seven inner borders there after a
//    barrier, by the border kernel's rules: a piece is then a component of
//    the strip, and the border kernel below skips those borders.
//    Bands: a tile whose cells are all 0 / 1 with background 0, at
//    connectivity 2, takes its rows two at a time.  Any foreground cell of
//    rows 2k and 2k + 1 touches every foreground cell of the two rows in
//    its own column and the two beside it, so the band's components are
//    the runs of its columns holding any foreground cell, one node each,
//    at the run's first cell in raster order (runs.cuh, band_top /
//    band_bottom: carries through the two rows' masks).  Only the pairs
//    across a band's top border need unions (band_unions), about half of
//    a tile's.  A bottom row's S marks the first cell of each band run in
//    it (band_firsts), and P there gets the band run's piece root too, so
//    the kernels after this one read every row as a row of runs.
//    Slots: a tile with few run starts (at most `slots`,
//    _tuning.RUNS_2D_SLOTS) writes the piece root of its k-th run start (the bits
//    of S as stored, in raster order) to word k of its own slots in Q,
//    and only the run starts that are piece roots to P, with an L2
//    evict-last policy so that the kernels after it find those lines in L2
//    (runs.cuh, store_kept); each tile row's first slot goes to O (16
//    bits; 0xffff: the tile kept the old way, P at every run start).  The
//    tile's slots are consecutive words, where P
//    would have had a partly written sector in nearly every row.  The
//    kernel comes in two forms, with slots (SL) and without: the slot code
//    in one kernel, even where no tile takes it, cost images of many small
//    pieces 3-6 %.  Both forms count the tiles whose run starts fit their
//    slots (one atomic per block, in `tally`); the border kernel hands the
//    count to host memory (`report`) and zeroes the tally, and a launch
//    plan picks the next call's form from it (_tuning.RUNS_2D_SLOTS_SHARE).
//    The kernels after it come in the same two forms (the border kernel
//    here, meshccl_label_runs in number_pieces.cu), and a chain takes one form
//    throughout: the forms without slots are the kernels as they were
//    before slots.
// 2. meshccl_runs2d_border.  Two warps per tile: one unites the tile's top
//    row with the row above (the same mask rules, on keys loaded from
//    global memory), the other the tile's first column with the last column
//    of the tile to its left, skipping a row whose cell and partner both
//    equal the cells above them (the square rule: the row above's pair and
//    the two tiles join them).  A cell's node is its run's piece root: the
//    run start, found in the bit array S with one count of leading zeros,
//    whose P holds it, or in a tile with slots the run start's slot (its
//    rank in the row, after the row's first slot in O); each root that a
//    union hooks is recorded in H.
//    The lattice form's border kernel is the same code (runs2d::border),
//    on a join policy (lattice.cuh: PlainJoin here, LatticeJoin there)
//    whose tests fold away in this one; the pairs at a left border are
//    one function (left_pairs) for both kernels and both forms.
//    Its blocks' top-row warps take the tile rows in a scattered order
//    (scattered_row), so that the blocks at work at one time hook fewer of
//    the same roots; their left-border warp takes them bottom to top, which
//    measured a few microseconds faster on some images (why is not
//    established: a sequential model of these unions leaves the spiral's
//    forest about as deep either way).
// 3. The pieces path of number_pieces.cu (meshccl_piece_roots with the roots'
//    prefix sums, then meshccl_label_pieces): every piece root then holds
//    its label.
// 4. meshccl_label_runs (number_pieces.cu).  Four lanes per tile row (eight
//    with 64-bit labels) read F, S and A, resolve each run once (a run
//    start that is a piece root holds its label; any other holds a piece
//    root, in P or in its slot, and that piece root holds the label) into
//    a table in shared memory and write the row's labels from it with
//    16-byte stores.
//
// Stacks of images (label(..., axes=) over the last one or two axes): a
// stack of images of image_rows rows each is one image of ny rows, every
// kernel's `image_rows` says where images start, and no pair joins an
// image's first row with the row above it: the tile kernel clears such a
// row's masks up (and keeps bands only where no band would hold two
// images' rows), the border kernels skip a tile's top row that starts an
// image and a left-border row's pairs up, and the wrap kernel wraps each
// image's rows onto its own.  Nothing else sees the images: runs, pieces
// and the numbering are those of the tall image, whose raster order is the
// stack's.  A plain image passes image_rows == ny (one compare per lane
// and tile; the modulo is never reached).
//
// P is read and written at run starts only (with slots, at piece roots
// only) until the last step, which writes every cell once: about 1 byte
// read and 4 written per cell, plus 1/4 byte of bit arrays and the run
// starts.

#include "drawn_bonds.cuh"
#include "launch.cuh"
#include "lattice.cuh"
#include "packed_spins.cuh"
#include "runs.cuh"

namespace meshccl {
namespace runs2d {

// The pairs across a tile's left border in one row: cell (y, x0) with keys
// k0 (itself), kL (its left neighbour, the tile before's last column),
// ku0 / kuL (the two cells above them, when `up`: the row above is in the
// same tile row), f0 / fL (foreground), join(a, b) the joining rule, and
// kL2() the cell left of kL (read only when needed).  Bit 1: (y, x0) with
// (y, x0 - 1); at C = 2, bit 2: (y, x0) up-left to (y - 1, x0 - 1), and
// bit 4: (y, x0 - 1) up-right to (y - 1, x0).  Transitive (the plain form,
// equal keys; a cell equal to a foreground cell is foreground): minus the
// pairs that the rules skip (join is then equality).  Bit 1 unless the square rule skips it (the
// cells above both are equal to them: each tile joined its two and the row
// above's pair joins the tiles, one union per region that crosses the
// column, not one per row); bit 2 not if (y - 1, x0) is equal (same run)
// or (y, x0 - 1) is (covered); bit 4 not if its left cell and the cell
// above it are equal to it (twin).  Otherwise (the lattice form) every
// joined pair: ok(b) says for pair b what foreground and f0 / fL do not,
// that the other cell is foreground (bit 1: fL; bits 2 and 4: the cell
// above) and the pair's bond is open.  The border kernels and the tile
// kernels' inner borders all take these.
template <int C, bool Transitive, typename K, typename Ok, typename Join, typename Left2>
__device__ __forceinline__ unsigned left_pairs(K k0, K kL, K ku0, K kuL, bool up, bool f0,
                                               bool fL, Ok ok, Join join, Left2 kL2) {
    // (each test is "the rule, if transitive, or joined, if not": && and ||
    // on the constant first, which the compiler drops unseen)
    unsigned m = 0u;
    if ((Transitive && f0 && kL == k0 && !(up && ku0 == k0 && kuL == k0)) ||
        (!Transitive && f0 && ok(1u) && join(kL, k0)))
        m |= 1u;
    if (C >= 2 && up) {
        if ((Transitive && f0 && kuL == k0 && ku0 != k0 && kL != k0) ||
            (!Transitive && f0 && ok(2u) && join(kuL, k0)))
            m |= 2u;
        if ((Transitive && fL && ku0 == kL && !(kL2() == kL && kuL == kL)) ||
            (!Transitive && fL && ok(4u) && join(ku0, kL)))
            m |= 4u;
    }
    return m;
}

// The unions inside a banded tile (after tile_nodes and a __syncwarp):
// only the pairs across a band's top border, between row 2k (lane 2k's
// masks against the row above: E, Vl, V, Vr) and row 2k - 1 (band k - 1's
// bottom row), each pair a union of the two band runs' nodes.  The rules
// are tile_unions's (a cell's pairs that they skip are joined through the
// same earlier pairs and runs, and a band run only merges runs further).
// Lanes 2k and 2k + 1 share row 2k's pairs, by halves of the row, so the
// warp's turns are about half of a row's pairs.  starts: each row's nodes
// (band_top in even rows, band_bottom in odd); bst: each band's run
// starts.
// A straight-up pair is united with the band run just above (chains of at
// most 16 band runs per tile), not with the top of its vertical stretch as
// in tile_unions (docs/decisions.md: "bands of two rows").
template <int RSB>
__device__ __forceinline__ void band_unions(int* L, int base, const unsigned* starts,
                                            const unsigned* bst, int lane, unsigned mE,
                                            unsigned mVl, unsigned mV, unsigned mVr) {
    unsigned Ul, U0, Ur;
    meshccl::runs::row_pairs<true>(mE, mVl, mV, mVr, Ul, U0, Ur);
    // Lane 2k + 1 takes row 2k's masks: lane 2k then
    // unites the pairs of columns 0..15, lane 2k + 1 those of 16..31.
    const unsigned half = (lane & 1) ? 0xffff0000u : 0x0000ffffu;
    Ul = __shfl_sync(0xffffffffu, Ul, lane & ~1) & half;
    U0 = __shfl_sync(0xffffffffu, U0, lane & ~1) & half;
    Ur = __shfl_sync(0xffffffffu, Ur, lane & ~1) & half;
    const int r = lane & ~1;  // the band's top row
    if (r == 0) Ul = U0 = Ur = 0u;  // (the border kernel's pairs)
    auto node = [&](int row, int x) {  // cell (row, x), foreground
        if (!(row & 1)) return base + row * RSB + meshccl::runs::start_of(starts[row], x);
        int dy;
        const int c = meshccl::runs::band_node(starts[row - 1], bst[row >> 1], x, dy);
        return base + (row - 1 + dy) * RSB + c;
    };
    for (;;) {
        int b, partner;
        if (U0) {
            b = __ffs(U0) - 1;
            U0 &= U0 - 1u;
            partner = node(r - 1, b);
        } else if (Ul) {
            b = __ffs(Ul) - 1;
            Ul &= Ul - 1u;
            partner = node(r - 1, b - 1);
        } else if (Ur) {
            b = __ffs(Ur) - 1;
            Ur &= Ur - 1u;
            partner = node(r - 1, b + 1);
        } else {
            break;
        }
        meshccl::unite<true>(L, node(r, b), partner);
    }
}

// Row y's cells x0 .. x0 + width - 1 of an image as one-byte cells in 8
// words (runs.cuh, load_row; nothing past the image's rows), or of a phase
// of packed spins (x0 a multiple of 32).
template <typename T, typename I>
__device__ __forceinline__ void load_cells(const T* v, I y, I ny, I nx, I x0, int width,
                                           unsigned (&w)[8]) {
    meshccl::runs::load_row(y < ny ? v + y * nx + x0 : nullptr, width, w);
}
template <typename I>
__device__ __forceinline__ void load_cells(const PackedPhase<I>& v, I y, I ny, I, I x0, int,
                                           unsigned (&w)[8]) {
    v.row_bytes(y, ny, x0 >> 5, w);
}

// The tile kernel's work up to its bit array A: returns the piece roots of
// the lane's row (0 past the array).  The block's NW tiles side by side
// (a strip of 32 rows and 32 * NW columns) share one forest, in raster
// order over the strip: node r * RSB + w * 33 + b is row r, tile w, bit b
// (RSB odd, so that lanes on the same bit of their rows touch 32 banks).
// The pairs across the strip's inner tile borders are united there too, in
// shared memory, and a piece is a component of the strip;
// the border kernel then takes the x seams between strips only.
//
// Lat: the lattice form (mask, bonds, tolerance: `ft`), which makes every
// row's masks by ballots with the joining rule (lattice.cuh, Rule) and the
// features in them, never bands, and unites every joined pair (no skipping
// rules: tile_unions' Rules false, and no square rule at the tile borders).
// FT: the features, PlaneFeatures (a mask and bond planes in memory) or
// DrawnBonds (drawn_bonds.cuh: each row's bonds drawn by its lane).
// Cells: how the cells are read -- `const T*` (an image), or PackedPhase<I>
// (packed_spins.cuh: a phase of packed Ising spins, T unsigned char), whose
// rows come as the one-byte rows of the image it stands for.
template <typename T, typename I, int C, int NW, bool SL, bool Lat = false, bool Tol = false,
          typename FT = meshccl::PlaneFeatures, typename Cells = const T*>
__device__ __forceinline__ unsigned label_tile(
        Cells v, I* __restrict__ P, unsigned* __restrict__ F,
        unsigned* __restrict__ S, I* __restrict__ Q, unsigned short* __restrict__ O, int slots,
        unsigned* __restrict__ tally, I ny, I nx, I image_rows, int has_bg,
        typename meshccl::Rule<T, Tol>::K bgkey, int prefetch, const FT& ft) {
    typedef meshccl::Rule<T, Tol> R;
    typedef typename R::K K;
    using meshccl::runs::shfl;
    using meshccl::runs::start_of;
    constexpr int RS = meshccl::runs::ROW_NODES, RSB = (NW * RS) | 1;
    __shared__ int forest[32 * RSB];
    __shared__ unsigned starts[NW][32];  // each row's run starts, per tile
    __shared__ K edge[3][NW][32];         // each row's cells 0, 31 and 30, per tile
    __shared__ unsigned bstarts[NW][16];  // banded tiles: each band's run starts ...
    __shared__ unsigned bfirsts[NW][16];  // ... and first bottom cells that are not nodes
    __shared__ int banded[NW];            // is the tile banded?
    // Lat: the foreground of the tile's columns 0 and 31 (bit r: row r), and
    // the open bonds of column 0 to the left and up-left and of column 31
    // up-right, for the pairs across the tiles' inner borders.
    __shared__ unsigned edgebits[Lat ? NW : 1][5];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I bx = (I)blockIdx.x * NW + warp, ntx = (nx + 31) >> 5;
    const bool live = bx < ntx;  // (the whole warp)
    const I x0 = bx * 32, x = x0 + lane, y0 = (I)blockIdx.y * 32;
    const int base = warp * RS;
    int* L = forest;
    unsigned mF = 0u, mE = 0u, mV = 0u, mVl = 0u, mVr = 0u, S_ = 0u, Sout = 0u;
    bool band = false;  // (the whole warp)
    bool fits = false;     // (the whole warp) at most `slots` run starts?
    bool slotted = false;  // (the whole warp) piece roots in Q's slots (SL and fits)?
    int slot0 = 0;         // lane r: row r's first slot
    if (!live) {
    } else if (sizeof(T) == 1) {
        // One-byte cells: lane r loads row r's 32 cells (two 16-byte loads
        // where rows are 16-byte aligned) and makes its masks with byte-wise
        // word arithmetic; the row above comes from lane r - 1.
        const I y = y0 + lane;
        const int width = (int)min((I)32, nx - x0);
        unsigned w[8];
        load_cells(v, y, ny, nx, x0, width, w);
        mF = meshccl::runs::fg_mask(w, y >= ny ? 0 : width, has_bg, (unsigned char)bgkey);
        // Lat: the row's mask and open bonds as bits (all set where there is
        // no mask / no such bonds), loaded and tested as the cells are.
        unsigned bl = ~0u, bu = ~0u, bul = ~0u, bur = ~0u;
        if constexpr (Lat && meshccl::drawn_features<FT>::value) {
            // (C = 1: the up and left bonds, drawn; no mask)
            if (y < ny && width > 0) ft.row(y * nx + x0, width, bu, bl);
        } else if (Lat) {
            const auto bits = [&](const unsigned char* base, int plane) {
                if (base == nullptr || plane < 0) return ~0u;
                unsigned b[8], h[8];
                meshccl::runs::load_row(y < ny ? base + (long long)plane * ft.bstride +
                                                     y * nx + x0 : nullptr, width, b);
#pragma unroll
                for (int j = 0; j < 8; ++j) h[j] = meshccl::runs::nonzero_bytes(b[j]);
                return meshccl::runs::pack32(h);
            };
            mF &= bits(ft.mask, 0);
            bl = bits(ft.bonds, ft.left);
            bu = bits(ft.bonds, ft.up);
            if (C >= 2) {
                bul = bits(ft.bonds, ft.ul);
                bur = bits(ft.bonds, ft.ur);
            }
        }
        if (Tol) {  // (integer bytes: |a - b| <= the tolerance's integer part)
            const unsigned long long t64 = meshccl::int_tolerance(ft.tol);
            const unsigned t = t64 >= 255ull ? 255u : (unsigned)t64;
            const meshccl::runs::Within near = {0x01010101u * t, T(-1) < T(0)};
            mE = mF & meshccl::runs::eq_left(w, w, near);
            meshccl::runs::above_masks<C >= 2>(w, mF, lane, mV, mVl, mVr, near);
        } else {
            mE = mF & meshccl::runs::eq_left(w, w);
            meshccl::runs::above_masks<C >= 2>(w, mF, lane, mV, mVl, mVr);
        }
        if (Lat) {
            mE &= (mF << 1) & bl;  // (a masked cell may equal its neighbour)
            mV &= bu;
            mVl &= bul;
            mVr &= bur;
            const unsigned e0 = __ballot_sync(0xffffffffu, mF & 1u);
            const unsigned e1 = __ballot_sync(0xffffffffu, mF >> 31);
            const unsigned e2 = __ballot_sync(0xffffffffu, bl & 1u);
            const unsigned e3 = __ballot_sync(0xffffffffu, bul & 1u);
            const unsigned e4 = __ballot_sync(0xffffffffu, bur >> 31);
            if (lane == 0) {
                unsigned* eb = edgebits[Lat ? warp : 0];
                eb[0] = e0; eb[1] = e1; eb[2] = e2; eb[3] = e3; eb[4] = e4;
            }
        }
        edge[0][warp][lane] = (K)(unsigned char)w[0];
        edge[1][warp][lane] = (K)(unsigned char)(w[7] >> 24);
        edge[2][warp][lane] = (K)(unsigned char)(w[7] >> 16);
        // A binary tile (cells 0 / 1, background 0) at connectivity 2 is
        // labelled in bands of two rows (runs.cuh, band_node).
        if (C == 2 && !Lat && has_bg && bgkey == 0)
            band = __all_sync(0xffffffffu, meshccl::runs::binary_row(w));
    } else {
        // Wider cells: a lane per column, 32 loads in flight, and row masks by
        // ballot; lane r keeps row r's.
        T raw[32];
#pragma unroll
        for (int r = 0; r < 32; ++r) {
            const I y = y0 + r;
            raw[r] = (x < nx && y < ny) ? v[y * nx + x] : T();
        }
        // Lat: the column's mask and open bonds, bit r for row r (all set
        // where there is no mask / no bonds).
        unsigned cm = ~0u, cl = ~0u, cu = ~0u, cul = ~0u, cur = ~0u, colF = 0u;
        if (Lat) {
            const bool col = x < nx;
#pragma unroll
            for (int r = 0; r < 32; ++r) {
                const I y = y0 + r, i = y * nx + x;
                if (!(col && y < ny)) continue;
                const unsigned bit = 1u << r;
                if (!ft.on(i)) cm &= ~bit;
                if (!ft.open(ft.left, i)) cl &= ~bit;
                if (!ft.open(ft.up, i)) cu &= ~bit;
                if (C >= 2 && !ft.open(ft.ul, i)) cul &= ~bit;
                if (C >= 2 && !ft.open(ft.ur, i)) cur &= ~bit;
            }
        }
        unsigned pF = 0u;
        K pk = K();
#pragma unroll
        for (int r = 0; r < 32; ++r) {
            const bool in = x < nx && y0 + r < ny;
            const K k = in ? R::key(raw[r]) : K();
            const bool f = in && !(has_bg && k == bgkey) && (!Lat || ((cm >> r) & 1u));
            const K kl = shfl(k, 1, true);
            const bool pf = (pF >> lane) & 1u;
            const unsigned Fm = __ballot_sync(0xffffffffu, f);
            // (without features, equal keys of a foreground cell make its
            // left neighbour foreground too)
            const bool fl = !Lat || (lane > 0 && ((Fm >> (lane - 1)) & 1u) && ((cl >> r) & 1u));
            const unsigned Em =
                __ballot_sync(0xffffffffu, f && lane > 0 && fl && R::join(kl, k, ft.tol));
            const unsigned Vm = __ballot_sync(
                0xffffffffu, f && pf && R::join(pk, k, ft.tol) && (!Lat || ((cu >> r) & 1u)));
            unsigned Vl = 0u, Vr = 0u;
            if (C >= 2) {
                const K ul = shfl(pk, 1, true), ur = shfl(pk, 1, false);
                Vl = __ballot_sync(0xffffffffu,
                                   f && lane > 0 && ((pF >> (lane - 1)) & 1u) &&
                                       R::join(ul, k, ft.tol) && (!Lat || ((cul >> r) & 1u)));
                Vr = __ballot_sync(0xffffffffu,
                                   f && lane < 31 && ((pF >> (lane + 1)) & 1u) &&
                                       R::join(ur, k, ft.tol) && (!Lat || ((cur >> r) & 1u)));
            }
            if (Lat) colF |= (unsigned)f << r;
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
        // the edge columns' keys (lanes 0, 31, 30 hold them for every row)
        const int e = lane == 0 ? 0 : (lane == 31 ? 1 : (lane == 30 ? 2 : -1));
        if (e >= 0) {
#pragma unroll
            for (int r = 0; r < 32; ++r)
                edge[e][warp][r] = (x < nx && y0 + r < ny) ? R::key(raw[r]) : K();
        }
        if (Lat && lane == 0) {
            edgebits[Lat ? warp : 0][0] = colF;
            edgebits[Lat ? warp : 0][2] = cl;
            edgebits[Lat ? warp : 0][3] = cul;
        }
        if (Lat && lane == 31) {
            edgebits[Lat ? warp : 0][1] = colF;
            edgebits[Lat ? warp : 0][4] = cur;
        }
    }
    // A stack of images (image_rows < ny): row r starting an image has no
    // pairs with row r - 1 (cut).  Its masks up are cleared; a band may not
    // hold an image's last row and the next one's first (a cut at an odd
    // row), so a tile with one takes its rows one at a time.  (A plain
    // image: image_rows == ny, never a cut.)
    bool cut = false;
    if (live && image_rows < ny) {  // (the whole warp)
        cut = lane > 0 && (y0 + lane) % image_rows == 0;
        if (cut) mV = mVl = mVr = 0u;
        band = band && !__any_sync(0xffffffffu, cut && (lane & 1));
    }
    // Lane r: row r.  Run starts, their forest, and the pairs with row r - 1.
    if (lane == 0) banded[warp] = band;
    if (live) {
        if (band) {
            // Lanes 2k and 2k + 1 hold band k's rows; each lane's nodes are
            // the band runs' first cells in its row.
            const unsigned other = __shfl_xor_sync(0xffffffffu, mF, 1);
            const bool odd = lane & 1;
            const unsigned top = odd ? other : mF, bottom = odd ? mF : other;
            S_ = odd ? meshccl::runs::band_bottom(top, bottom)
                     : meshccl::runs::band_top(top, bottom);
            // S of a bottom row: its band runs' first cells in it (P there
            // holds the band run's piece root: store_piece_roots below)
            Sout = odd ? meshccl::runs::band_firsts(top, bottom) : S_;
            if (odd) {
                bstarts[warp][lane >> 1] = meshccl::runs::band_starts(top, bottom);
                bfirsts[warp][lane >> 1] = Sout & ~S_;
            }
        } else {
            S_ = Sout = mF & ~mE;
        }
        // Slots (SL): the tile's run starts' piece roots go to Q, in raster
        // order, when they fit in its `slots` (then only piece roots are
        // written in P); else to P at the run starts.  Without SL the tile
        // only finds out whether they would fit (for `tally`).
        if (SL) {
            int off = __popc(Sout);  // (a scan over the rows)
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const int t = __shfl_up_sync(0xffffffffu, off, d);
                if (lane >= d) off += t;
            }
            fits = slotted = slots > 0 && __shfl_sync(0xffffffffu, off, 31) <= slots;
            off -= __popc(Sout);
            if (slots > 0 && y0 + lane < ny)
                O[bx * ny + y0 + lane] = slotted ? (unsigned short)off : (unsigned short)0xffffu;
            slot0 = off;
        } else {
            int all = __popc(Sout);  // (a sum over the rows)
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) all += __shfl_xor_sync(0xffffffffu, all, d);
            fits = slots > 0 && all <= slots;
        }
        if (prefetch && !(SL && slotted) && y0 + lane < ny)
            meshccl::runs::prefetch_run_starts(P + (y0 + lane) * nx + x0, Sout, prefetch);
        meshccl::runs::tile_nodes<RSB>(L, base, starts[warp], lane, S_);
        __syncwarp();
        if (band)
            band_unions<RSB>(L, base, starts[warp], bstarts[warp], lane, mE, mVl, mV, mVr);
        else
            // (Lat: at C = 1 the rule on a row's own pairs, every pair at C = 2)
            meshccl::runs::tile_unions<C >= 2, RSB, Lat ? (C >= 2 ? 0 : 2) : 1>(
                L, base, starts[warp], lane, S_, mE, mVl, mV, mVr);
    }
    // (the block's tiles whose run starts fit their slots, for the host's
    // choice of kernel: _tuning.RUNS_2D_SLOTS_SHARE)
    const int fitting = __syncthreads_count(lane == 0 && fits);
    if (tally != nullptr && threadIdx.x == 0 && fitting) atomicAdd(tally, (unsigned)fitting);
    // The node of cell (r, c) of tile w of the block (foreground), in the
    // block's forest.
    auto local = [&](int w, int r, int c) {
        if (banded[w] && (r & 1)) {  // (a top row's nodes are its run starts' kind)
            int dy;
            const int col = meshccl::runs::band_node(starts[w][r - 1], bstarts[w][r >> 1], c, dy);
            return (r - 1 + dy) * RSB + w * RS + col;
        }
        return r * RSB + w * RS + start_of(starts[w][r], c);
    };
    const I y = y0 + lane;
    if (live && warp > 0 && y < ny) {
        // The pairs across the border with the tile to the left (lane r: row
        // r): left_pairs, on keys from `edge` and nodes from `starts`.  Cell
        // (r, 0) of a tile is a run start, its own node.
        const int r = lane, wl = warp - 1;
        const K k0 = edge[0][warp][r], kL = edge[1][wl][r];
        const K ku0 = r > 0 ? edge[0][warp][r - 1] : K(), kuL = r > 0 ? edge[1][wl][r - 1] : K();
        // Lat: the foreground of the two columns and the open bonds, from
        // `edgebits` (ok: see left_pairs).
        const unsigned* e0 = edgebits[Lat ? warp : 0];
        const unsigned* eL = edgebits[Lat ? wl : 0];
        const auto bit = [r](unsigned w, int dr) { return ((w << dr) >> r) & 1u; };
        const auto ok = [&](unsigned b) -> bool {
            if (b == 1u) return bit(eL[1], 0) && bit(e0[2], 0);
            if (b == 2u) return bit(eL[1], 1) && bit(e0[3], 0);
            return bit(e0[0], 1) && bit(eL[4], 0);
        };
        const unsigned m = left_pairs<C, !Lat>(
                k0, kL, ku0, kuL, r > 0 && !cut, Lat ? bit(e0[0], 0) : !(has_bg && k0 == bgkey),
                Lat ? bit(eL[1], 0) : !(has_bg && kL == bgkey), ok,
                [&](K a, K b) { return R::join(a, b, ft.tol); }, [&] { return edge[2][wl][r]; });
        if (m) {
            const int a = local(warp, r, 0), left = local(wl, r, 31);
            if (m & 1u) meshccl::unite<true>(L, a, left);
            if (m & 2u) meshccl::unite<true>(L, a, local(wl, r - 1, 31));
            if (m & 4u) meshccl::unite<true>(L, left, local(warp, r - 1, 0));
        }
    }
    __syncthreads();
    if (!live) return 0u;
    const I tile0 = y0 * nx + x0, strip0 = y0 * nx + (I)blockIdx.x * NW * 32;
    // In a banded tile a top-row node (r even) whose band run also has
    // bottom-row cells stores the same piece root at the first of them
    // (bfirsts): the border kernel and the label pass then take a bottom
    // row's cells as any row's, from S (band_firsts).
    const unsigned* bs_ = bstarts[warp];
    const unsigned* bf_ = bfirsts[warp];
    auto also = [=](int r, int b, I root) {
        if (!band || (r & 1)) return;
        const unsigned bs = bs_[r >> 1], s = (unsigned)start_of(bs, b);
        unsigned f = bf_[r >> 1] & ~((1u << s) - 1u);
        const unsigned later = bs & ~(s == 31 ? 0xffffffffu : ((2u << s) - 1u));
        if (later) f &= (later & (0u - later)) - 1u;
        if (f) P[tile0 + (I)(r + 1) * nx + (__ffs(f) - 1)] = root;
    };
    auto global_of = [=](int rt) {
        const int ry = rt / RSB, q = rt - ry * RSB, tw = q / RS;
        return strip0 + (I)ry * nx + (I)tw * 32 + (q - tw * RS);
    };
    // Slotted tiles: the piece root of the tile's k-th run start (the bits
    // of S as stored, in raster order: in a band's bottom row also the
    // first cells that are not nodes) goes to slot k, and a run start that
    // is a piece root also to P, where the border kernel's unions and the
    // pieces path work; the tile's slots are consecutive words.  Others:
    // every run start's piece root to P at the run start (and `also`).
    // One loop for both forms: two inlined copies of it made tiles with
    // many run starts 12-16 % slower (docs/decisions.md: "slots for few-run tiles").
    I* q = (SL && slotted) ? Q + ((I)blockIdx.y * ntx + bx) * (I)slots : nullptr;
    struct Row { unsigned s0, s1; int o0, o1; };  // S and first slot of rows r, r + 1
    auto prep = [=](int r) {
        Row w = {0u, 0u, 0, 0};
        if (SL && slotted) {  // (the whole warp)
            w.s0 = __shfl_sync(0xffffffffu, Sout, r);
            w.o0 = __shfl_sync(0xffffffffu, slot0, r);
            w.s1 = __shfl_sync(0xffffffffu, Sout, min(r + 1, 31));
            w.o1 = __shfl_sync(0xffffffffu, slot0, min(r + 1, 31));
        }
        return w;
    };
    const unsigned roots = meshccl::runs::store_piece_roots<C == 1 ? 128 : 256, RSB>(
        L, base, starts[warp], lane, (int)min((I)32, ny - y0), global_of, prep,
        [=](int r, int b, I g, bool root, const Row& w) {
            if (!(SL && slotted)) {
                P[tile0 + (I)r * nx + b] = g;
                also(r, b, g);
                return;
            }
            q[w.o0 + __popc(w.s0 & ((1u << b) - 1u))] = g;
            if (root) meshccl::runs::store_kept(P + tile0 + (I)r * nx + b, g);  // (runs.cuh)
            if (!band || (r & 1)) return;
            // a band run with cells below its top-row node: the slot of its
            // first bottom cell too (as `also` does in P)
            const unsigned bs = bs_[r >> 1], s = (unsigned)start_of(bs, b);
            unsigned f = bf_[r >> 1] & ~((1u << s) - 1u);
            const unsigned later = bs & ~(s == 31 ? 0xffffffffu : ((2u << s) - 1u));
            if (later) f &= (later & (0u - later)) - 1u;
            if (f) q[w.o1 + __popc(w.s1 & ((f & (0u - f)) - 1u))] = g;
        });
    if (y >= ny) return 0u;
    F[bx * ny + y] = mF;
    S[bx * ny + y] = Sout;
    return roots;
}

// The tile kernels' last step: each row's piece roots (`roots`, lane r: row
// r of the warp's tile) into the bit array A, and H zeroed (see above).
template <int NW, typename I>
__device__ __forceinline__ void store_root_bits(unsigned* __restrict__ A, unsigned* __restrict__ H,
                                                unsigned roots, int aligned, I ny, I nx) {
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
template <typename T, typename I, int C, int NW, bool SL>
__global__ void __launch_bounds__(32 * NW) meshccl_runs2d_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I ny, I nx,
        I image_rows, int has_bg, typename meshccl::Key<T>::type bgkey, int aligned, int prefetch,
        I* __restrict__ Q, unsigned short* __restrict__ O, int slots,
        unsigned* __restrict__ tally) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlaneFeatures none = {nullptr, nullptr, 0, -1, -1, -1, -1, 0.0};
    const unsigned roots = meshccl::runs2d::label_tile<T, I, C, NW, SL>(
            v, P, F, S, Q, O, slots, tally, ny, nx, image_rows, has_bg, bgkey, prefetch, none);
    meshccl::runs2d::store_root_bits<NW>(A, H, roots, aligned, ny, nx);
}


// The border kernel's tile row for block row b of `rows`: b * K mod rows,
// K the first of the primes 53, 59, 61 that does not divide rows (1 if all
// do), so that the blocks sent out together work on tile rows far apart
// rather than on neighbouring ones.  Any order gives the same roots (each
// component's first cell); this one meets fewer roots that other blocks
// are hooking at the same moment (docs/decisions.md: "border rows in scattered
// order").
__device__ __forceinline__ unsigned scattered_row(unsigned b, unsigned rows) {
    const unsigned k = rows % 53u ? 53u : rows % 59u ? 59u : rows % 61u ? 61u : 1u;
    return (unsigned)(((unsigned long long)b * k) % rows);
}

namespace meshccl {
namespace runs2d {

// The border kernels' skeleton, for both forms (the join policy J:
// lattice.cuh PlainJoin, or LatticeJoin on PlaneFeatures).  A block takes
// TB tiles side by side, in the tile row scattered_row gives: its first TB
// warps the tiles' top rows against the row above (every pair of them that
// goes up), then one warp per `strip` tiles (the strips' first tiles: the
// tile kernel took the other borders) the pairs across the tile's left
// border, a lane per row r: the first cell's pair to the left and, at
// connectivity 2 and r > 0, its pair up-left and the pair up-right of the
// cell to its left (the last column of the tile before).  TB = 8 with
// strips (9 warps), 4 without (8 warps); the host sizes the block, TB
// follows from it.  The pairs are the tile kernel's: when J is transitive
// (the plain form), minus the ones its rules skip, with equality to the
// left taken across tiles; else every joined pair.  The cells above a
// row's pair are the lane before's, by shuffles, not loads.
template <int C, bool SL, typename J, typename Cells, typename I>
__device__ __forceinline__ void border(const J& join, Cells v, I* P,
                                       unsigned* __restrict__ H, const unsigned* __restrict__ S,
                                       I ny, I nx, I image_rows, int strip,
                                       const I* __restrict__ Q,
                                       const unsigned short* __restrict__ O, int slots) {
    typedef typename J::K K;
    using meshccl::runs::shfl;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tb = (int)(blockDim.x >> 5) * strip / (strip + 1);  // tiles per block
    const bool up = warp < tb;
    const I bx = (I)blockIdx.x * tb + (up ? warp : (warp - tb) * strip), ntx = (nx + 31) >> 5;
    // The top-row warps' tile row is scattered; the left-border warp's goes
    // bottom to top (docs/decisions.md: "border rows in scattered order").
    const I x0 = bx * 32;
    const I y0 = (up ? (I)scattered_row(blockIdx.y, gridDim.y)
                     : (I)(gridDim.y - 1u - blockIdx.y)) * 32;
    if (bx >= ntx) return;
    // The piece root of cell (y, x)'s run (foreground): from the tile's
    // slots (the run start's rank among the row's, after the row's first
    // slot in O), or, where the tile kept them in P (no slots, or too many
    // run starts; always after a tile kernel without SL), the run start
    // itself, whose P holds it (runs.cuh, node).
    auto node = [&](I y, I x) -> I {
        const I w = (x >> 5) * ny + y;
        const unsigned s = __ldg(S + w);
        const unsigned o = (SL && slots > 0) ? __ldg(O + w) : 0xffffu;  // (both loads in flight)
        const int c = (int)(x & 31);
        const I start = y * nx + (x & ~(I)31) + meshccl::runs::start_of(s, c);
        if (o == 0xffffu) return start;
        const unsigned upto = c == 31 ? 0xffffffffu : ((2u << c) - 1u);
        return __ldg(Q + ((y >> 5) * ntx + (x >> 5)) * (I)slots + (I)(o + __popc(s & upto) - 1));
    };
    // (a stack of images: no pairs between an image's first row and the row
    // above it; a plain image, image_rows == ny: row 0 only)
    auto first_row = [&](I y) { return y == 0 || (image_rows < ny && y % image_rows == 0); };
    if (up) {
        if (first_row(y0)) return;
        const I x = x0 + lane, i = y0 * nx + x;
        const bool in = x < nx;
        const K k = in ? J::key(v[i]) : K(), ku = in ? J::key(v[i - nx]) : K();
        const bool f = in && !(join.has_bg && k == join.bgkey) && (!J::features || join.on(i));
        K kl = shfl(k, 1, true), ul = shfl(ku, 1, true), ur = shfl(ku, 1, false);
        if (lane == 0 && x > 0) {
            if (J::transitive) kl = J::key(v[i - 1]);  // (for the rules only)
            ul = J::key(v[i - nx - 1]);
        }
        if (lane == 31 && x + 1 < nx) ur = J::key(v[i - nx + 1]);
        if (!f) return;
        // equal to the left, across tiles (the rules', transitive only)
        const bool e = J::transitive && x > 0 && kl == k;
        const bool V = join.joined(ku, i - nx, k, join.bond(-1, 0), i);
        const bool Vl = x > 0 && join.joined(ul, i - nx - 1, k, join.bond(-1, -1), i);
        const bool Vr = x + 1 < nx && join.joined(ur, i - nx + 1, k, join.bond(-1, 1), i);
        bool u0, ul_, ur_;
        if (C == 1) {
            u0 = V && !(e && Vl);
            ul_ = ur_ = false;
        } else {
            ul_ = Vl && !(J::transitive && V) && !e;
            u0 = V && !(J::transitive && Vr) && !e;
            ur_ = Vr && !(e && V);
        }
        if (!(u0 || ul_ || ur_)) return;
        const I a = node(y0, x);
        if (ul_) meshccl::unite_recording(P, H, a, node(y0 - 1, x - 1));
        if (u0) meshccl::unite_recording(P, H, a, node(y0 - 1, x));
        if (ur_) meshccl::unite_recording(P, H, a, node(y0 - 1, x + 1));
    } else {
        const I y = y0 + lane;
        if (bx == 0) return;
        const I i = y * nx + x0;  // the tile's first cell of row y (x0 > 0)
        const bool rin = y < ny;
        const K k0 = rin ? J::key(v[i]) : K(), kL = rin ? J::key(v[i - 1]) : K();
        // the two cells above (row y - 1, lane r - 1's): used from lane 1 on
        const K ku0 = shfl(k0, 1, true), kuL = shfl(kL, 1, true);
        if (!rin) return;
        const bool f0 = !(join.has_bg && k0 == join.bgkey) && (!J::features || join.on(i));
        const bool fL = !(join.has_bg && kL == join.bgkey) && (!J::features || join.on(i - 1));
        // (ok: the other cell's foreground and the pair's bond, asked only
        // where J is not transitive; see left_pairs)
        const auto ok = [&](unsigned b) {
            if (b == 1u) return fL && join.open(join.bond(0, -1), i);
            if (b == 2u)
                return !join.bg(kuL) && join.on(i - nx - 1) && join.open(join.bond(-1, -1), i);
            return !join.bg(ku0) && join.on(i - nx) && join.open(join.bond(-1, 1), i - 1);
        };
        const unsigned m = left_pairs<C, J::transitive>(
                k0, kL, ku0, kuL, lane > 0 && !first_row(y), f0, fL, ok,
                [&](K a, K b) { return join.join(a, b); }, [&] { return J::key(v[i - 2]); });
        if (m & 1u) meshccl::unite_recording(P, H, node(y, x0), node(y, x0 - 1));
        if (m & 2u) meshccl::unite_recording(P, H, node(y, x0), node(y - 1, x0 - 1));
        if (m & 4u) meshccl::unite_recording(P, H, node(y, x0 - 1), node(y - 1, x0));
    }
}

}  // namespace runs2d
}  // namespace meshccl

// The plain border kernel: the skeleton above with PlainJoin, after the
// slots' count (below).
template <typename T, typename I, int C, bool SL>
__global__ void __launch_bounds__(288) meshccl_runs2d_border(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I ny, I nx, I image_rows, int has_bg, typename meshccl::Key<T>::type bgkey, int strip,
        const I* __restrict__ Q, const unsigned short* __restrict__ O, int slots,
        unsigned* tally, unsigned* report) {
    meshccl::grid_entry();  // (launch.cuh)
    // The tile kernel's count of tiles whose run starts fit their slots
    // (it has ended: grid_entry) goes to `report`, host memory that a
    // launch plan reads when it picks the next call's tile kernel, and the
    // count starts again from 0.
    if (tally != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
        *report = *tally;
        *tally = 0u;
    }
    const meshccl::PlainJoin<T> join = {has_bg, bgkey};
    meshccl::runs2d::border<C, SL>(join, v, P, H, S, ny, nx, image_rows, strip, Q, O, slots);
}

// ---------------------------------------------------------------------------
// The lattice form of the chain: a mask, bonds, a tolerance and periodic
// axes on 1-D and 2-D arrays (the features that simulations use), with the
// same tile geometry, run nodes and numbering as the plain form.
//
// A feature changes which neighbouring pairs join, not how a joined pair is
// labelled: the tile kernel makes each row's masks from the joining rule
// (equal keys, or |a - b| <= tolerance), the cells' mask and their open
// bonds, by ballots for every cell type (meshccl_runs2d_lattice_tile: the
// wider-cell form of label_tile with Lat).  A run is then a stretch of
// joined cells, and every joined pair between runs is united: the skipping
// rules of the plain form take a pair as joined because two others are
// (equality is transitive), which a closed bond, a masked cell or a
// tolerance can break.  The border kernel (meshccl_runs2d_lattice_border)
// is the plain one's skeleton (runs2d::border) on the join policy
// LatticeJoin (lattice.cuh): the same block layout, loads and shuffles,
// uniting every joined pair across the tiles' top rows and across the
// strips' left borders (left_pairs, as the tile kernels' inner borders).
// Periodic axes add the pairs that wrap around (meshccl_runs2d_wrap): a
// thread per cell of the first row and of the first and last columns
// unites the cell with each earlier neighbour it reaches only by wrapping,
// on the nodes the border kernel uses.  Unions hook the larger root under
// the smaller, so each component's root is still its first cell in raster
// order, and number_pieces.cu numbers them as for a plain image.
// The Swendsen-Wang step of meshccl.sim.Ising takes the drawn forms of
// these three kernels (meshccl_runs2d_drawn_tile, _border, _wrap): the
// same code on DrawnBonds (drawn_bonds.cuh) in place of PlaneFeatures, so
// that each bond is drawn from the step's Philox words where a kernel asks
// whether it is open (a tile row's up and left bonds by its lane, 16 or
// 17 calls), and no bond planes exist; one-byte spins, 4 neighbours.

namespace meshccl {
namespace runs2d {

// Is cell i, of key k, foreground?
template <typename K, typename I, typename FT>
__device__ __forceinline__ bool lattice_fg(K k, I i, int has_bg, K bgkey, const FT& ft) {
    return !(has_bg && k == bgkey) && ft.on(i);
}

}  // namespace runs2d
}  // namespace meshccl

template <typename T, typename I, int C, bool Tol>
__global__ void __launch_bounds__(32 * 8) meshccl_runs2d_lattice_tile(
        const T* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I ny, I nx,
        I image_rows, int has_bg, typename meshccl::Rule<T, Tol>::K bgkey, int aligned,
        MESHCCL_PLANE_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlaneFeatures ft = MESHCCL_PLANE_FEATURES_VALUE;
    const unsigned roots = meshccl::runs2d::label_tile<T, I, C, 8, false, true, Tol>(
            v, P, F, S, nullptr, nullptr, 0, nullptr, ny, nx, image_rows, has_bg, bgkey, 0, ft);
    meshccl::runs2d::store_root_bits<8>(A, H, roots, aligned, ny, nx);
}

// The border kernel: the plain one's skeleton with LatticeJoin (no slots).
template <typename T, typename I, int C, bool Tol>
__global__ void __launch_bounds__(288) meshccl_runs2d_lattice_border(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I ny, I nx, I image_rows, int has_bg, typename meshccl::Rule<T, Tol>::K bgkey, int strip,
        MESHCCL_PLANE_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::LatticeJoin<T, Tol, meshccl::PlaneFeatures> join = {
        has_bg, bgkey, MESHCCL_PLANE_FEATURES_VALUE};
    meshccl::runs2d::border<C, false>(join, v, P, H, S, ny, nx, image_rows, strip,
                                      (const I*)nullptr, (const unsigned short*)nullptr, 0);
}

// The pairs that wrap around, in each image of image_rows rows (a stack of
// ny / image_rows images; one image: image_rows == ny).  With tops =
// images * nx where the rows wrap (wrap_y), else 0: thread t < tops takes
// cell (k * image_rows, x) of t = k * nx + x (an image's first row), and
// thread tops + u cell (u, 0) or cell (u - ny, nx - 1) (when the columns
// wrap: wrap_x); it unites the cell with each earlier neighbour in its
// image (bonds= layout: up-left, up, up-right, left) that it reaches only
// across a periodic edge; a pair reached from two such cells is united
// twice, to no effect.  The bond of a pair is the later cell's (the one whose half
// offset points back), as in the general chain.
namespace meshccl {
namespace runs2d {

// The wrap kernel's work for thread t (Cells, FT: as label_tile's).
template <typename T, typename I, int C, bool Tol, typename Cells, typename FT>
__device__ __forceinline__ void wrap(Cells v, I* P, unsigned* __restrict__ H,
                                     const unsigned* __restrict__ S, I ny, I nx, I image_rows,
                                     int has_bg, typename meshccl::Rule<T, Tol>::K bgkey,
                                     int wrap_y, int wrap_x, const FT& ft) {
    typedef meshccl::Rule<T, Tol> R;
    typedef typename R::K K;
    const I t = (I)blockIdx.x * blockDim.x + threadIdx.x;
    const I tops = wrap_y ? ny / image_rows * nx : (I)0;
    I y, x;
    if (t < tops) {
        const I k = t / nx;
        y = k * image_rows;
        x = t - k * nx;
    } else if (t - tops < 2 * ny) {
        if (!wrap_x) return;
        const I u = t - tops;
        y = u < ny ? u : u - ny;
        x = u < ny ? 0 : nx - 1;
    } else {
        return;
    }
    const I top = y - y % image_rows;  // the image's first row
    const I i = y * nx + x;
    const K k = R::key(v[i]);
    if (!lattice_fg(k, i, has_bg, bgkey, ft)) return;
    const I a = meshccl::runs::node(S, y, x, ny, nx);
    const int dys[4] = {-1, -1, -1, 0}, dxs[4] = {-1, 0, 1, -1};
    const int planes[4] = {ft.ul, ft.up, ft.ur, ft.left};
#pragma unroll
    for (int o = 0; o < 4; ++o) {
        if (C < 2 && dys[o] != 0 && dxs[o] != 0) continue;
        I ty = y + dys[o], tx = x + dxs[o];
        const bool oy = ty < top, ox = tx < 0 || tx >= nx;
        if (!(oy || ox) || (oy && !wrap_y) || (ox && !wrap_x)) continue;
        if (oy) ty += image_rows;
        if (tx < 0) tx += nx;
        if (tx >= nx) tx -= nx;
        const I j = ty * nx + tx;
        const K kj = R::key(v[j]);
        if (lattice_fg(kj, j, has_bg, bgkey, ft) && ft.open(planes[o], i) &&
            R::join(kj, k, ft.tol))
            meshccl::unite_recording(P, H, a, meshccl::runs::node(S, ty, tx, ny, nx));
    }
}

}  // namespace runs2d
}  // namespace meshccl

template <typename T, typename I, int C, bool Tol>
__global__ void __launch_bounds__(256) meshccl_runs2d_wrap(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I ny, I nx, I image_rows, int has_bg, typename meshccl::Rule<T, Tol>::K bgkey, int wrap_y,
        int wrap_x, MESHCCL_PLANE_FEATURES) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlaneFeatures ft = MESHCCL_PLANE_FEATURES_VALUE;
    meshccl::runs2d::wrap<T, I, C, Tol>(v, P, H, S, ny, nx, image_rows, has_bg, bgkey, wrap_y,
                                        wrap_x, ft);
}

// ---------------------------------------------------------------------------
// The packed form: a phase of meshccl.sim.Ising's packed Metropolis spins
// (packed_spins.cuh) labelled on the torus by the plain chain without
// slots, its kernels reading the packed words where the plain ones read
// the bool image of the phase (T unsigned char, background 0: the same
// masks, runs, pieces and labels).  `words`: the two colours' words,
// (2, ny, W); flip 0 labels the +1 spins, 1 the -1 spins.

namespace meshccl {
namespace runs2d {

template <typename I>
__device__ __forceinline__ PackedPhase<I> packed_phase(const unsigned long long* words, I ny,
                                                       I nx, I W, int flip) {
    const PackedPhase<I> v = {words, ny * W, W, ny, nx, (unsigned)(flip & 1)};
    return v;
}

}  // namespace runs2d
}  // namespace meshccl

template <typename I, int C, int NW>
__global__ void __launch_bounds__(32 * NW) meshccl_runs2d_packed_tile(
        const unsigned long long* __restrict__ words, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I ny, I nx,
        I W, int flip, int aligned, int prefetch) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlaneFeatures none = {nullptr, nullptr, 0, -1, -1, -1, -1, 0.0};
    const unsigned roots = meshccl::runs2d::label_tile<unsigned char, I, C, NW, false>(
            meshccl::runs2d::packed_phase(words, ny, nx, W, flip), P, F, S, (I*)nullptr,
            (unsigned short*)nullptr, 0, (unsigned*)nullptr, ny, nx, ny, 1, (unsigned char)0,
            prefetch, none);
    meshccl::runs2d::store_root_bits<NW>(A, H, roots, aligned, ny, nx);
}

template <typename I, int C>
__global__ void __launch_bounds__(288) meshccl_runs2d_packed_border(
        const unsigned long long* __restrict__ words, I* P, unsigned* __restrict__ H,
        const unsigned* __restrict__ S, I ny, I nx, I W, int flip, int strip) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlainJoin<unsigned char> join = {1, (unsigned char)0};
    meshccl::runs2d::border<C, false>(join, meshccl::runs2d::packed_phase(words, ny, nx, W, flip),
                                      P, H, S, ny, nx, ny, strip, (const I*)nullptr,
                                      (const unsigned short*)nullptr, 0);
}

template <typename I, int C>
__global__ void __launch_bounds__(256) meshccl_runs2d_packed_wrap(
        const unsigned long long* __restrict__ words, I* P, unsigned* __restrict__ H,
        const unsigned* __restrict__ S, I ny, I nx, I W, int flip, int wrap_y, int wrap_x) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::PlaneFeatures none = {nullptr, nullptr, 0, -1, -1, -1, -1, 0.0};
    meshccl::runs2d::wrap<unsigned char, I, C, false>(
            meshccl::runs2d::packed_phase(words, ny, nx, W, flip), P, H, S, ny, nx, ny, 1,
            (unsigned char)0, wrap_y, wrap_x, none);
}

// The Swendsen-Wang forms of the lattice tile, border and wrap kernels
// (meshccl.sim.Ising, meshccl/_gpu/cluster_flip.py): one-byte spins, 4
// neighbours, no mask, the bonds drawn where they are read (DrawnBonds:
// `threshold` and the step's Philox words in place of the features).
#define MESHCCL_DRAWN_BONDS                                                                    \
    unsigned long long threshold, unsigned tag, unsigned t0, unsigned t1, unsigned k0,         \
    unsigned k1
#define MESHCCL_DRAWN_BONDS_VALUE {threshold, tag, t0, t1, k0, k1, 0, 1, -1, -1, 0.0}

template <typename I>
__global__ void __launch_bounds__(32 * 8) meshccl_runs2d_drawn_tile(
        const unsigned char* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I ny, I nx,
        I image_rows, int has_bg, unsigned char bgkey, int aligned, MESHCCL_DRAWN_BONDS) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::DrawnBonds ft = MESHCCL_DRAWN_BONDS_VALUE;
    const unsigned roots =
        meshccl::runs2d::label_tile<unsigned char, I, 1, 8, false, true, false>(
            v, P, F, S, nullptr, nullptr, 0, nullptr, ny, nx, image_rows, has_bg, bgkey, 0, ft);
    meshccl::runs2d::store_root_bits<8>(A, H, roots, aligned, ny, nx);
}

template <typename I>
__global__ void __launch_bounds__(288) meshccl_runs2d_drawn_border(
        const unsigned char* __restrict__ v, I* P, unsigned* __restrict__ H,
        const unsigned* __restrict__ S, I ny, I nx, I image_rows, int has_bg, unsigned char bgkey,
        int strip, MESHCCL_DRAWN_BONDS) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::LatticeJoin<unsigned char, false, meshccl::DrawnBonds> join = {
        has_bg, bgkey, MESHCCL_DRAWN_BONDS_VALUE};
    meshccl::runs2d::border<1, false>(join, v, P, H, S, ny, nx, image_rows, strip,
                                      (const I*)nullptr, (const unsigned short*)nullptr, 0);
}

template <typename I>
__global__ void __launch_bounds__(256) meshccl_runs2d_drawn_wrap(
        const unsigned char* __restrict__ v, I* P, unsigned* __restrict__ H,
        const unsigned* __restrict__ S, I ny, I nx, I image_rows, int has_bg, unsigned char bgkey,
        int wrap_y, int wrap_x, MESHCCL_DRAWN_BONDS) {
    meshccl::grid_entry();  // (launch.cuh)
    const meshccl::DrawnBonds ft = MESHCCL_DRAWN_BONDS_VALUE;
    meshccl::runs2d::wrap<unsigned char, I, 1, false>(v, P, H, S, ny, nx, image_rows, has_bg,
                                                      bgkey, wrap_y, wrap_x, ft);
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_R2_TILE_NW(T, I, C, NW, SL)                                                      \
    template __global__ void meshccl_runs2d_tile<T, I, C, NW, SL>(const T*, I*, unsigned*,       \
        unsigned*, unsigned*, unsigned*, I, I, I, int, meshccl::Key<T>::type, int, int,          \
        I*, unsigned short*, int, unsigned*);
#define MESHCCL_R2_TILE(T, I, C, SL)                                                             \
    MESHCCL_R2_TILE_NW(T, I, C, 8, SL) MESHCCL_R2_TILE_NW(T, I, C, 2, SL)
#define MESHCCL_R2_BORDER(T, I, C, SL)                                                           \
    template __global__ void meshccl_runs2d_border<T, I, C, SL>(const T*, I*, unsigned*,         \
        const unsigned*, I, I, I, int, meshccl::Key<T>::type, int, const I*,                     \
        const unsigned short*, int, unsigned*, unsigned*);
#define MESHCCL_R2(T, I)                                                                         \
    MESHCCL_R2_TILE(T, I, 1, true) MESHCCL_R2_TILE(T, I, 1, false)                               \
    MESHCCL_R2_TILE(T, I, 2, true) MESHCCL_R2_TILE(T, I, 2, false)                               \
    MESHCCL_R2_BORDER(T, I, 1, true) MESHCCL_R2_BORDER(T, I, 1, false)                           \
    MESHCCL_R2_BORDER(T, I, 2, true) MESHCCL_R2_BORDER(T, I, 2, false)
#define MESHCCL_R2_LAT(T, I, C, Tol)                                                        \
    template __global__ void meshccl_runs2d_lattice_tile<T, I, C, Tol>(const T*, I*, unsigned*, \
        unsigned*, unsigned*, unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K, int,          \
        MESHCCL_PLANE_FEATURE_TYPES);                                                          \
    template __global__ void meshccl_runs2d_lattice_border<T, I, C, Tol>(const T*, I*,         \
        unsigned*, const unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K, int,               \
        MESHCCL_PLANE_FEATURE_TYPES);                                                          \
    template __global__ void meshccl_runs2d_wrap<T, I, C, Tol>(const T*, I*, unsigned*,        \
        const unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K, int, int,                     \
        MESHCCL_PLANE_FEATURE_TYPES);
#define MESHCCL_R2_LATS(T, I)                                                                  \
    MESHCCL_R2_LAT(T, I, 1, false) MESHCCL_R2_LAT(T, I, 2, false)                              \
    MESHCCL_R2_LAT(T, I, 1, true) MESHCCL_R2_LAT(T, I, 2, true)
#define MESHCCL_R2_PACKED(I, C)                                                                \
    template __global__ void meshccl_runs2d_packed_tile<I, C, 8>(const unsigned long long*, I*, \
        unsigned*, unsigned*, unsigned*, unsigned*, I, I, I, int, int, int);                   \
    template __global__ void meshccl_runs2d_packed_tile<I, C, 2>(const unsigned long long*, I*, \
        unsigned*, unsigned*, unsigned*, unsigned*, I, I, I, int, int, int);                   \
    template __global__ void meshccl_runs2d_packed_border<I, C>(const unsigned long long*, I*,  \
        unsigned*, const unsigned*, I, I, I, int, int);                                        \
    template __global__ void meshccl_runs2d_packed_wrap<I, C>(const unsigned long long*, I*,    \
        unsigned*, const unsigned*, I, I, I, int, int, int);
MESHCCL_R2_PACKED(int, 1) MESHCCL_R2_PACKED(int, 2)
MESHCCL_R2_PACKED(long long, 1) MESHCCL_R2_PACKED(long long, 2)
#define MESHCCL_R2_T(T) MESHCCL_R2(T, int) MESHCCL_R2(T, long long) \
    MESHCCL_R2_LATS(T, int) MESHCCL_R2_LATS(T, long long)
template __global__ void meshccl_runs2d_drawn_tile<int>(const unsigned char*, int*, unsigned*,
    unsigned*, unsigned*, unsigned*, int, int, int, int, unsigned char, int, unsigned long long,
    unsigned, unsigned, unsigned, unsigned, unsigned);
template __global__ void meshccl_runs2d_drawn_border<int>(const unsigned char*, int*, unsigned*,
    const unsigned*, int, int, int, int, unsigned char, int, unsigned long long, unsigned,
    unsigned, unsigned, unsigned, unsigned);
template __global__ void meshccl_runs2d_drawn_wrap<int>(const unsigned char*, int*, unsigned*,
    const unsigned*, int, int, int, int, unsigned char, int, int, unsigned long long, unsigned,
    unsigned, unsigned, unsigned, unsigned);
MESHCCL_R2_T(unsigned char)
MESHCCL_R2_T(meshccl::flag8)
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
