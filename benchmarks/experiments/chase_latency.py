"""How long one dependent load of a find takes on this GPU (experiment,
2026-11-27; benchmarks/NOTES.md).

The spiral's border kernel and piece_roots walk chains of hooked roots at
what the notes estimated as about half a microsecond per parent load.  This
script measures a single thread's pointer chase through an int32 array of
the spiral's size (4096^2 cells), with the loads the union-find core uses
(``__ldcg``), in four settings:

  l2        a cycle of 4 096 nodes at random cells, walked many times (every
            line in L2 after the first lap)
  dram      a cycle of 4 M nodes over a 1 GiB array, each timing on nodes
            no earlier one reached (every load a miss)
  l2+halve  as l2, each step also storing the grandparent (find()'s path
            halving: P[x] = P[P[x]]) into a copy of the cycle whose values
            are not followed
  l2 busy   as l2, while a copy of 2 GiB runs on another stream (the chase
            competing with streaming traffic, as a union does with the
            other blocks' loads)

ns per step = (time of 9 laps - time of 1 lap) / (8 laps' steps), CUDA
events, median of 9.

    python benchmarks/experiments/chase_latency.py
"""
import _common  # noqa: F401  (sys.path)
import cupy
import numpy as np

SRC = r"""
extern "C" __global__ void chase(const int* __restrict__ P, int* __restrict__ Q, int start,
                                 long long steps, int halve, int* out) {
    int x = start;
    for (long long k = 0; k < steps; ++k) {
        const int p = __ldcg(P + x);
        if (halve) Q[x] = p;  // a store per step, as path halving makes
        x = p;
    }
    out[0] = x;
}
"""
kern = cupy.RawKernel(SRC, "chase")


def cycle(n_cells, n_nodes, rng):
    P = cupy.zeros(n_cells, dtype=cupy.int32)
    nodes = rng.choice(n_cells, size=n_nodes, replace=False).astype(np.int32)
    nxt = np.roll(nodes, -1)
    P[cupy.asarray(nodes)] = cupy.asarray(nxt)
    return P, int(nodes[0])


def laps_ms(P, Q, start, steps, halve, stream=None, reps=9):
    out = cupy.zeros(1, dtype=cupy.int32)
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    ts = []
    for _ in range(reps + 1):
        s.record()
        kern((1,), (1,), (P, Q, np.int32(start), np.int64(steps), np.int32(halve), out))
        e.record()
        e.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(s, e))
    return float(np.median(ts[1:]))


def per_step_ns(P, Q, start, nodes, halve=0):
    one = laps_ms(P, Q, start, nodes, halve)
    nine = laps_ms(P, Q, start, 9 * nodes, halve)
    return (nine - one) * 1e6 / (8 * nodes)


rng = np.random.default_rng(7)
dev = cupy.cuda.Device()
name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
print(f"device: {name}")
cells = 4096 * 4096
P, start = cycle(cells, 4096, rng)
Q = cupy.zeros_like(P)
print(f"l2        {per_step_ns(P, Q, start, 4096):7.1f} ns per load")
print(f"l2+halve  {per_step_ns(P, Q, start, 4096, 1):7.1f} ns per load")
# dram: each timing starts at a node of the 4 M cycle no earlier timing
# reached, so its 40 000 steps load lines not in L2; minus an empty launch
big = cupy.zeros(1 << 28, dtype=cupy.int32)
nodes = rng.choice(1 << 28, size=1 << 22, replace=False).astype(np.int32)
big[cupy.asarray(nodes)] = cupy.asarray(np.roll(nodes, -1))
out = cupy.zeros(1, dtype=cupy.int32)
s, e = cupy.cuda.Event(), cupy.cuda.Event()
cold = []
for k in range(9):
    for steps in (0, 40000):
        s.record()
        kern((1,), (1,), (big, big, np.int32(nodes[(2 * k + 1) * 100000]), np.int64(steps),
                          np.int32(0), out))
        e.record()
        e.synchronize()
        if steps == 0:
            empty = cupy.cuda.get_elapsed_time(s, e)
        else:
            cold.append((cupy.cuda.get_elapsed_time(s, e) - empty) * 1e6 / steps)
print(f"dram      {np.median(cold):7.1f} ns per load (a 1 GiB array, lines not in L2)")
del big
# busy: a long copy on another stream, the chase on this one
a = cupy.empty(1 << 29, dtype=cupy.float32)
b = cupy.empty_like(a)
side = cupy.cuda.Stream(non_blocking=True)
res = []
for _ in range(5):
    with side:
        for _ in range(6):
            b[...] = a
    t1 = laps_ms(P, Q, start, 4096, 0, reps=1)
    t9 = laps_ms(P, Q, start, 9 * 4096, 0, reps=1)
    side.synchronize()
    res.append((t9 - t1) * 1e6 / (8 * 4096))
print(f"l2 busy   {np.median(res):7.1f} ns per load (a copy on another stream)")
