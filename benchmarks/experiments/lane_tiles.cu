// lane_tiles.cu -- an experiment (benchmarks/experiments/lane_tiles.py): a
// lane of a warp labels a whole banded 32 x 32 tile on its own.
//
// The 2-D tile kernel of runs2d.cu gives a tile a warp, a row a lane, and
// unites band runs in a forest the warp's lanes share: shared atomics, and
// loops whose turns are set by the busiest lane.  Nsight counts 282 M warp
// instructions for percolation 8192^2 p = .4073 at connectivity 2, about
// 4 300 per tile.  Here the warp takes 32 tiles side by side instead (a
// strip of 32 x 1024 cells), one per lane, and each lane sweeps its tile's
// sixteen bands from the top: it makes the band's masks from two rows of
// bytes, numbers the band runs in raster order of their first cells
// (band_top then band_bottom, runs.cuh), and unites each with the band runs
// above it by runs.cuh's row_pairs rules.  The forest is the lane's own: a
// byte per node (a tile has at most 256 band runs), in shared memory laid
// out so that node n of lane l is in bank l, whatever n is: no atomics, no
// bank conflicts, no waiting on other lanes.
//
// The output is the slot form of runs2d.cu's tile kernel, with every tile
// slotted (slots must be at least 512, the most S bits a banded tile has):
// F and S (the band forms of S: band_top in a band's top row, band_firsts
// in its bottom row), each S bit's piece root in the tile's slots Q in
// raster order, the row's first slot in O, the piece roots in P and in the
// bit array A, and H zeroed.  A final sweep in raster order resolves the
// nodes: a node's parent is an earlier node, already resolved, so one
// lookup gives its piece root.  Tiles are independent (the border kernel
// takes every tile border: strips off).
//
// Only binary images (0 / 1 bytes, background 0) whose sides are multiples
// of 32; anything else sets *bad.
#include "launch.cuh"
#include "runs.cuh"

template <typename I, int W>
__global__ void __launch_bounds__(32 * W) meshccl_lanetile_band(
        const unsigned char* __restrict__ v, I* __restrict__ P, unsigned* __restrict__ A,
        unsigned* __restrict__ H, unsigned* __restrict__ F, unsigned* __restrict__ S, I ny,
        I nx, I* __restrict__ Q, unsigned short* __restrict__ O, int slots,
        unsigned* __restrict__ bad) {
    meshccl::grid_entry();
    __shared__ unsigned forest[W][64 * 32];
    __shared__ unsigned stage[W][32][33];
    __shared__ I qstage[W][32][33];  // a band's slot values, lane by lane
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const I ntx = nx >> 5;
    const I g0 = ((I)blockIdx.x * W + warp) * 32;  // the warp's first tile column
    const I bx = g0 + lane;
    const I y0 = (I)blockIdx.y * 32;
    const bool live = bx < ntx;
    unsigned char* fo = reinterpret_cast<unsigned char*>(forest[warp]) + lane * 4;
#define AT(n) fo[((n) >> 2) * 128 + ((n) & 3)]
    auto find = [&](int x) {
        for (;;) {
            const int p = AT(x);
            if (p == x) return x;
            const int g = AT(p);
            if (g == p) return p;
            AT(x) = (unsigned char)g;
            x = g;
        }
    };
    unsigned orall = 0u;
    unsigned prevBot = 0u, prevNtop = 0u, prevNbot = 0u, prevBs = 0u;
    int prevBase = 0, base = 0;
    if (live) {
        const unsigned char* tile = v + y0 * nx + bx * 32;
        for (int k = 0; k < 16; ++k) {
            unsigned w[8], u[8];
            const uint4* rt = reinterpret_cast<const uint4*>(tile + (I)(2 * k) * nx);
            const uint4* rb = reinterpret_cast<const uint4*>(tile + (I)(2 * k + 1) * nx);
            const uint4 a0 = rt[0], a1 = rt[1], b0 = rb[0], b1 = rb[1];
            w[0] = a0.x; w[1] = a0.y; w[2] = a0.z; w[3] = a0.w;
            w[4] = a1.x; w[5] = a1.y; w[6] = a1.z; w[7] = a1.w;
            u[0] = b0.x; u[1] = b0.y; u[2] = b0.z; u[3] = b0.w;
            u[4] = b1.x; u[5] = b1.y; u[6] = b1.z; u[7] = b1.w;
#pragma unroll
            for (int j = 0; j < 8; ++j) orall |= w[j] | u[j];
            const unsigned top = meshccl::runs::fg_mask(w, 32, 1, 0);
            const unsigned bot = meshccl::runs::fg_mask(u, 32, 1, 0);
            stage[warp][lane][2 * k] = top;
            stage[warp][lane][2 * k + 1] = bot;
            const unsigned bs = meshccl::runs::band_starts(top, bot);
            const unsigned ntop = meshccl::runs::band_top(top, bot);
            const unsigned nbot = meshccl::runs::band_bottom(top, bot);
            const int nt = __popc(ntop), nn = nt + __popc(nbot);
            for (int n = base; n < base + nn; ++n) AT(n) = (unsigned char)n;
            if (k > 0 && (top & (prevBot | (prevBot << 1) | (prevBot >> 1)))) {
                unsigned Ul, U0, Ur;
                const unsigned E = top & (top << 1);
                meshccl::runs::row_pairs<true>(E, top & (prevBot << 1), top & prevBot,
                                               top & (prevBot >> 1), Ul, U0, Ur);
                const int ptn = __popc(prevNtop);
                for (;;) {
                    int b, pc;
                    if (U0) {
                        b = __ffs(U0) - 1;
                        U0 &= U0 - 1u;
                        pc = b;
                    } else if (Ul) {
                        b = __ffs(Ul) - 1;
                        Ul &= Ul - 1u;
                        pc = b - 1;
                    } else if (Ur) {
                        b = __ffs(Ur) - 1;
                        Ur &= Ur - 1u;
                        pc = b + 1;
                    } else {
                        break;
                    }
                    const unsigned upto = b == 31 ? 0xffffffffu : ((2u << b) - 1u);
                    const int a = base + __popc(ntop & upto) - 1;
                    int dy;
                    const int c = meshccl::runs::band_node(prevNtop, prevBs, pc, dy);
                    const unsigned cto = c == 31 ? 0xffffffffu : ((2u << c) - 1u);
                    const int q = dy ? prevBase + ptn + __popc(prevNbot & cto) - 1
                                     : prevBase + __popc(prevNtop & cto) - 1;
                    int ra = find(a), rq = find(q);
                    if (ra != rq) {
                        if (ra < rq) AT(rq) = (unsigned char)ra;
                        else AT(ra) = (unsigned char)rq;
                    }
                }
            }
            prevBot = bot;
            prevNtop = ntop;
            prevNbot = nbot;
            prevBs = bs;
            prevBase = base;
            base += nn;
        }
        if (orall & 0xfefefefeu) atomicOr(bad, 1u);
    }
    __syncwarp();
    // F out, a tile's 32 rows (one 128-byte line) per store instruction
    for (int t = 0; t < 32; ++t)
        if (g0 + t < ntx) F[(g0 + t) * ny + y0 + lane] = stage[warp][t][lane];
    __syncwarp();
    // The sweep in raster order: a node's parent is an earlier node, which
    // then holds the rank of its piece root; rootp[rank] is that root's
    // cell.  Each band's slot values are staged in shared memory and stored
    // a tile at a time (lane by lane they would be 32 partly written
    // sectors per store instruction).
    unsigned short rootp[256];  // rank -> the root's cell in the tile (row * 32 + column)
    int nid = 0, nroots = 0, slot = 0;
    const I tile0 = y0 * nx + bx * 32;
    I* qs = qstage[warp][lane];
    for (int k = 0; k < 16; ++k) {
        int c = 0;
        const int sb = slot;
        if (live) {
            const unsigned top = stage[warp][lane][2 * k], bot = stage[warp][lane][2 * k + 1];
            const unsigned bs = meshccl::runs::band_starts(top, bot);
            const unsigned ntop = meshccl::runs::band_top(top, bot);
            const unsigned nbot = meshccl::runs::band_bottom(top, bot);
            const unsigned firsts = meshccl::runs::band_firsts(top, bot);
            const int bk = nid;
            unsigned roots0 = 0u, roots1 = 0u;
            auto node = [&](int row, int b) -> int {  // the rank of node nid's piece root
                const int id = nid++;
                const int p = AT(id);
                int r;
                if (p == id) {
                    r = nroots++;
                    rootp[r] = (unsigned short)(row * 32 + b);
                    P[tile0 + (I)row * nx + b] = tile0 + (I)row * nx + b;
                } else {
                    r = AT(p);
                }
                AT(id) = (unsigned char)r;
                return r;
            };
            auto global = [&](int r) {
                const int pos = rootp[r];
                return tile0 + (I)(pos >> 5) * nx + (pos & 31);
            };
            for (unsigned m = ntop; m; m &= m - 1u) {
                const int b = __ffs(m) - 1;
                const int before = nroots;
                qs[c++] = global(node(2 * k, b));
                if (nroots != before) roots0 |= 1u << b;
            }
            for (unsigned m = firsts; m; m &= m - 1u) {
                const int b = __ffs(m) - 1;
                if ((nbot >> b) & 1u) {
                    const int before = nroots;
                    qs[c++] = global(node(2 * k + 1, b));
                    if (nroots != before) roots1 |= 1u << b;
                } else {  // a band run's first bottom cell; its node is in the top row
                    int dy;
                    const int cc = meshccl::runs::band_node(ntop, bs, b, dy);
                    const unsigned cto = cc == 31 ? 0xffffffffu : ((2u << cc) - 1u);
                    qs[c++] = global(AT(bk + __popc(ntop & cto) - 1));
                }
            }
            slot += c;
            const I wa = (y0 + 2 * k) * ntx + bx;
            A[wa] = roots0;
            A[wa + ntx] = roots1;
            H[wa] = 0u;
            H[wa + ntx] = 0u;
            stage[warp][lane][2 * k] = ntop;
            stage[warp][lane][2 * k + 1] = firsts;
        }
        __syncwarp();
        // the band's slots out, a tile's (at most 32 consecutive words) per store
        for (int t = 0; t < 32; ++t) {
            const int ct = __shfl_sync(0xffffffffu, c, t), st = __shfl_sync(0xffffffffu, sb, t);
            if (lane < ct)
                Q[((I)blockIdx.y * ntx + g0 + t) * (I)slots + st + lane] = qstage[warp][t][lane];
        }
        __syncwarp();
    }
#undef AT
    __syncwarp();
    // S and O out: tile t's row `lane`, O the rows' first slots (a scan)
    for (int t = 0; t < 32; ++t) {
        const unsigned s = stage[warp][t][lane];
        int off = __popc(s);
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int x = __shfl_up_sync(0xffffffffu, off, d);
            if (lane >= d) off += x;
        }
        if (g0 + t < ntx) {
            S[(g0 + t) * ny + y0 + lane] = s;
            O[(g0 + t) * ny + y0 + lane] = (unsigned short)(off - __popc(s));
        }
    }
}

template __global__ void meshccl_lanetile_band<int, 2>(const unsigned char*, int*, unsigned*,
    unsigned*, unsigned*, unsigned*, int, int, int*, unsigned short*, int, unsigned*);
