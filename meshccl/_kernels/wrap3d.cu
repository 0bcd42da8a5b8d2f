// wrap3d.cu -- periodic axes on the 3-D run chains.
//
// A periodic axis adds pairs of neighbours, those that meet only across the
// wrapped edge, and changes none inside the volume.  So a periodic volume
// is labelled by its chain -- runs3d.cu, plain or, with a mask, bonds or a
// tolerance, in its lattice form -- and one more kernel between their
// border kernels and the numbering: this one.
//
// A thread takes a cell on one of the faces where a half offset can leave
// the volume -- the first plane, the first and last rows, the first and
// last columns -- and unites the cell with each earlier neighbour (the
// half neighbourhood of the connectivity, in bonds= order) that it reaches
// only by wrapping along periodic axes, where the two are joined: both
// foreground (not the background, set in the mask), the bond open (the
// face cell's, whose half offset reaches the other across the edge, as in
// the general chain) and the joining rule true (lattice.cuh, LatticeJoin:
// its Rule and BoxFeatures; without features: equal keys).  The steps are
// lattice.cuh's MESHCCL_EACH_EARLIER_STEP, as in runs3d.cu's lattice
// seams.  An offset that would leave the volume along an axis that does
// not wrap is skipped.  A pair that two face cells reach is united twice,
// to no effect.  No skipping rule: the faces are a small part of the
// volume.
//
// The nodes are the chain's runs: a cell's run start, found in the bit
// array S (runs.cuh, node; a volume is nz * ny rows), whose P holds its
// piece root.  Unions hook the larger root under the smaller and record
// the hooked root in H, as the border kernels do, so each component's root
// is its first cell in raster order and number_pieces.cu numbers them as
// for a plain volume.

#include "lattice.cuh"
#include "runs.cuh"

template <typename T, typename I, int C, bool Tol>
__global__ void __launch_bounds__(256) meshccl_wrap3d(
        const T* __restrict__ v, I* P, unsigned* __restrict__ H, const unsigned* __restrict__ S,
        I nz, I ny, I nx, int has_bg, typename meshccl::Rule<T, Tol>::K bgkey, unsigned periodic,
        MESHCCL_BOX_FEATURES) {
    typedef meshccl::LatticeJoin<T, Tol, meshccl::BoxFeatures> J;
    const J join = {has_bg, bgkey, MESHCCL_BOX_FEATURES_VALUE};
    const bool wz = periodic & 1u, wy = periodic & 2u, wx = periodic & 4u;  // (bit k: axis k)
    // the faces, in turn: z = 0 (ny * nx cells), y = 0 and y = ny - 1 (nz * nx
    // each), x = 0 and x = nx - 1 (nz * ny each)
    I t = (I)blockIdx.x * blockDim.x + threadIdx.x, z, y, x;
    const I zf = ny * nx, yf = nz * nx, xf = nz * ny;
    if (t < zf) {
        if (!wz) return;
        z = 0; y = t / nx; x = t - y * nx;
    } else if ((t -= zf) < 2 * yf) {
        if (!wy) return;
        const I f = t / yf, r = t - f * yf;
        z = r / nx; x = r - z * nx; y = f ? ny - 1 : 0;
    } else if ((t -= 2 * yf) < 2 * xf) {
        if (!wx) return;
        const I f = t / xf, r = t - f * xf;
        z = r / ny; y = r - z * ny; x = f ? nx - 1 : 0;
    } else {
        return;
    }
    const I i = (z * ny + y) * nx + x;
    const typename J::K k = J::key(v[i]);
    if (join.bg(k) || !join.on(i)) return;
    auto node = [&](I cz, I cy, I cx) -> I {
        return meshccl::runs::node(S, cz * ny + cy, cx, nz * ny, nx);
    };
    const I a = node(z, y, x);
    MESHCCL_EACH_EARLIER_STEP(C, dz, dy, dx) {
        I tz = z + dz, ty = y + dy, tx = x + dx;
        const bool oz = tz < 0, oy = ty < 0 || ty >= ny, ox = tx < 0 || tx >= nx;
        if (!(oz || oy || ox) || (oz && !wz) || (oy && !wy) || (ox && !wx)) continue;
        if (oz) tz += nz;
        if (ty < 0) ty += ny;
        if (ty >= ny) ty -= ny;
        if (tx < 0) tx += nx;
        if (tx >= nx) tx -= nx;
        const I j = (tz * ny + ty) * nx + tx;
        const typename J::K kj = J::key(v[j]);
        if (!join.bg(kj) && join.on(j) && join.join(kj, k) && join.open(join.bond(dz, dy, dx), i))
            meshccl::unite_recording(P, H, a, node(tz, ty, tx));
    }
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may
// ask for: integers unsigned (and signed bytes, as runs3d.cu's plain form
// has them), bool bytes (meshccl::flag8) and floats without a tolerance
// (as _validate.py gives them), every cell type with one.
#define MESHCCL_W3(T, I, C, Tol)                                                            \
    template __global__ void meshccl_wrap3d<T, I, C, Tol>(const T*, I*, unsigned*,           \
        const unsigned*, I, I, I, int, meshccl::Rule<T, Tol>::K, unsigned,                   \
        MESHCCL_BOX_FEATURE_TYPES);
#define MESHCCL_W3_C(T, I, Tol) MESHCCL_W3(T, I, 1, Tol) MESHCCL_W3(T, I, 2, Tol) MESHCCL_W3(T, I, 3, Tol)
#define MESHCCL_W3_T(T, Tol) MESHCCL_W3_C(T, int, Tol) MESHCCL_W3_C(T, long long, Tol)
MESHCCL_W3_T(unsigned char, false)
MESHCCL_W3_T(meshccl::flag8, false)
MESHCCL_W3_T(signed char, false)
MESHCCL_W3_T(unsigned short, false)
MESHCCL_W3_T(unsigned int, false)
MESHCCL_W3_T(unsigned long long, false)
MESHCCL_W3_T(float, false)
MESHCCL_W3_T(double, false)
MESHCCL_W3_T(unsigned char, true)
MESHCCL_W3_T(meshccl::flag8, true)
MESHCCL_W3_T(unsigned short, true)
MESHCCL_W3_T(unsigned int, true)
MESHCCL_W3_T(unsigned long long, true)
MESHCCL_W3_T(signed char, true)
MESHCCL_W3_T(short, true)
MESHCCL_W3_T(int, true)
MESHCCL_W3_T(long long, true)
MESHCCL_W3_T(float, true)
MESHCCL_W3_T(double, true)
#endif
