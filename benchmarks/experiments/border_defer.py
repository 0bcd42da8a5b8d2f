"""The 2-D border kernel's long walks: bounded, and deferred (H100/H200
experiment, 2026-11-27; benchmarks/NOTES.md).

On the spiral one union of the border kernel walks about 100 dependent loads
(NOTES, 2026-11-25) at roughly half a microsecond each, about the kernel's
whole time.  This script asks two questions, runs2d.cu's border kernel
patched at run time (every union of it through ``unite_bounded``, nothing
else changed):

  abortK   a union whose finds pass K parent loads gives up (timing only:
           the labels are wrong).  What the border kernel costs when no walk
           is long: the most that deferring long walks can gain.
  deferK   such a union goes to a list instead; one block of an extra launch
           after the border kernel does the listed unions in full.  Correct
           (labels compared with the library's).  Whether the chains are
           still long when the rest of the border is done.
  jumpK    listed as in deferK; the extra launch is a grid, a thread per
           word of H, that first walks every hooked root to its root (the
           walks publishing their progress, as meshccl_piece_roots's do, so
           a long chain is flattened by pointer doubling), and its last
           block then does the listed unions, on flat chains.

Each variant's phases are timed with CUDA events between the launches, all
queued behind a busy kernel (so the host's launch times are hidden), median
of ``--reps``; "sum" is the first event to the last.  The count of unions
that gave up or were listed is printed too.

    python benchmarks/experiments/border_defer.py [--variants library,abort32,defer32]
"""
import argparse

import _common  # noqa: F401  (sys.path)
from _common import busy, fixed_steps, patched_source, recompile, record_modules
import cupy
import numpy as np

import phases as ph
from meshccl._gpu import loader

_source = loader.source
MODULES = record_modules("runs2d.cu")

ANCHOR = "__device__ __forceinline__ unsigned scattered_row(unsigned b, unsigned rows) {\n"
CAP = 1 << 16
BOUNDED = r"""
__device__ unsigned meshccl_exp_n;            // unions listed (defer) or given up (abort)
__device__ long long meshccl_exp_pairs[2 * %(cap)d];
namespace meshccl {
template <typename I>
__device__ __forceinline__ I find_bounded(I* P, I x, int& budget) {
    I p = __ldcg(P + x);
    --budget;
    while (p != x) {
        if (budget <= 0) return (I)-1;
        I g = __ldcg(P + p);
        --budget;
        if (g == p) return p;
        P[x] = g;
        x = g;
        p = __ldcg(P + x);
        --budget;
    }
    return x;
}
// unite_recording with at most BOUND parent loads; past them, before any
// hook, the pair is listed (DEFER) or dropped.
template <typename I>
__device__ __forceinline__ void unite_bounded(I* P, unsigned* H, I a0, I b0) {
    int budget = %(bound)d;
    I a = find_bounded(P, a0, budget), b = a < 0 ? a : find_bounded(P, b0, budget);
    while (a >= 0 && b >= 0 && a != b) {
        if (a < b) { I t = a; a = b; b = t; }
        const I old = cas(P + a, a, b);
        if (old == a) {
            atomicOr(H + (a >> 5), 1u << (a & 31));
            return;
        }
        a = find_bounded(P, old, budget);
        b = a < 0 ? a : find_bounded(P, b, budget);
    }
    if (a >= 0 && b >= 0) return;  // one set already
    const unsigned k = atomicAdd(&meshccl_exp_n, 1u);
    if (!%(defer)d) return;
    if (k < %(cap)du) {
        meshccl_exp_pairs[2 * k] = (long long)a0;
        meshccl_exp_pairs[2 * k + 1] = (long long)b0;
    } else {
        unite_recording(P, H, a0, b0);
    }
}
}  // namespace meshccl
extern "C" __global__ void meshccl_exp_finish(int* P, unsigned* H) {
    const unsigned n = min(meshccl_exp_n, %(cap)du);
    for (unsigned k = threadIdx.x; k < n; k += blockDim.x)
        meshccl::unite_recording(P, H, (int)meshccl_exp_pairs[2 * k],
                                 (int)meshccl_exp_pairs[2 * k + 1]);
}
// jump: a thread per word of H walks each hooked root to its root,
// publishing its progress (as meshccl_piece_roots does: walks up one chain
// jump along each other's); the block that finishes last, when every chain
// is flat, does the listed unions.
__device__ unsigned meshccl_exp_ticket;
extern "C" __global__ void meshccl_exp_jump(int* P, unsigned* H, unsigned words) {
    const unsigned w = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned h = w < words ? H[w] : 0u;
    while (h) {
        const int x = (int)(w << 5) + __ffs(h) - 1;
        h &= h - 1u;
        int r = x;
        for (;;) {
            const int p = __ldcg(P + r);
            if (p == r) break;
            if (r != x) P[x] = p;
            r = p;
        }
    }
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&meshccl_exp_ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const unsigned n = min(meshccl_exp_n, %(cap)du);
    for (unsigned k = threadIdx.x; k < n; k += blockDim.x)
        meshccl::unite_recording(P, H, (int)meshccl_exp_pairs[2 * k],
                                 (int)meshccl_exp_pairs[2 * k + 1]);
    if (threadIdx.x == 0) meshccl_exp_ticket = 0u;
}
#define unite_recording unite_bounded
"""


def use(variant):
    if variant == "library":
        loader.source = _source
    else:
        kind, bound = variant[:5].rstrip("0123456789"), int(variant.lstrip("abcdefghijklmnopqrstuvwxyz"))
        text = BOUNDED % {"cap": CAP, "bound": bound, "defer": int(kind != "abort")}
        loader.source = patched_source(_source, "runs2d.cu", (ANCHOR, text + ANCHOR))
    recompile()


def run(a, conn, variant, reps):
    """Phase medians (ms), the labels, and the count of unions that gave up
    or were listed, under one variant."""
    use(variant)
    MODULES.clear()
    steps, out = fixed_steps(a, conn)
    counter = None
    if variant != "library":
        mod = MODULES[-1]
        counter = cupy.ndarray((1,), cupy.uint32, memptr=mod.get_global("meshccl_exp_n"))
        names = [n for n, _ in steps]
        k = names.index("border")
        zero = cupy.zeros(1, dtype=cupy.uint32)
        # H, the bit array of hooked roots: the border launch's third
        # argument (values, P, H, S, ...)
        H = steps[k][1].func.args[2]
        finish = mod.get_function("meshccl_exp_finish")
        steps.insert(k, ("zero", lambda: counter.__setitem__(slice(None), zero)))
        if variant.startswith("defer"):
            steps.insert(k + 2, ("finish", lambda: finish((1,), (256,), (out, H))))
        if variant.startswith("jump"):
            jump = mod.get_function("meshccl_exp_jump")
            words = H.size
            steps.insert(k + 2, ("jump", lambda: jump((-(-words // 256),), (256,),
                                                      (out, H, np.uint32(words)))))
    ev = [cupy.cuda.Event() for _ in range(len(steps) + 1)]
    times = {n: [] for n, _ in steps}
    sums, counts = [], []
    for rep in range(reps + 1):
        busy(0.5)
        ev[0].record()
        for i, (n, f) in enumerate(steps):
            f()
            ev[i + 1].record()
        ev[-1].synchronize()
        if counter is not None:
            counts.append(int(counter.get()[0]))
        if rep == 0:
            continue
        for i, (n, _) in enumerate(steps):
            times[n].append(cupy.cuda.get_elapsed_time(ev[i], ev[i + 1]))
        sums.append(cupy.cuda.get_elapsed_time(ev[0], ev[-1]))
    med = {n: float(np.median(t)) for n, t in times.items()}
    med["sum"] = float(np.median(sums))
    return med, out.copy(), (max(counts) if counts else 0)


ap = argparse.ArgumentParser()
ap.add_argument("--variants", default="library,abort16,abort32,jump8,jump16,jump32")
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--only", default="spiral,blobs,perc")
opt = ap.parse_args()
keep = opt.only.split(",")
cases = [c for c in ph.standard_cases((2,)) if any(c[0].startswith(k) for k in keep)]
for name, a in cases:
    for conn in (2, 1):
        ref = None
        for rnd in range(2):
            for variant in opt.variants.split(","):
                med, out, n = run(a, conn, variant, opt.reps)
                if variant == "library":
                    ref = out
                same = "" if ref is None or variant.startswith("abort") else \
                    (" labels equal" if bool((out == ref).all()) else " labels DIFFER")
                parts = " ".join(f"{k} {v:.4f}" for k, v in med.items())
                print(f"{name:22s} c={conn} {variant:9s} n={n:6d} | {parts}{same}", flush=True)
use("library")
