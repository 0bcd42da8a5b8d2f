"""Per-kernel GPU times of the graph path on the GConn-shaped graphs.

    python benchmarks/graph_profile.py [--shrink K] [--reps R] [--methods kout,ecl]

For each graph of ``graph_bench.py --papers`` and each method, one warm-up
call and then R calls of ``meshccl.graph.connected_components`` with every
kernel launch of ``meshccl._gpu`` wrapped in a pair of CUDA events, so the
table shows where each phase's time goes: validation (reductions and the
probe), the method's kernels, the relabel.  'other' is the part of the
call's wall time (also by events) outside the wrapped kernels: CuPy's own
kernels (arange, astype, diff, min/max), allocations and host gaps.
Medians over the R calls.  Needs a GPU.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class Recorder:
    def __init__(self):
        self.marks = []

    def wrap(self, name, kern):
        import cupy

        rec = self

        class Timed:
            def __call__(self, grid, block, args, **kw):
                a, b = cupy.cuda.Event(), cupy.cuda.Event()
                a.record()
                kern(grid, block, args, **kw)
                b.record()
                rec.marks.append((name, a, b))

            def __getattr__(self, item):
                return getattr(kern, item)

        return Timed()

    def take(self):
        import cupy

        out = collections.defaultdict(float)
        if self.marks:
            self.marks[-1][2].synchronize()
        for name, a, b in self.marks:
            out[name] += cupy.cuda.get_elapsed_time(a, b)
        self.marks = []
        return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--methods", default="auto,kout,ecl")
    ap.add_argument("--only", default=None)
    opt = ap.parse_args(argv)

    import cupy

    import graph_bench
    import meshccl.graph as mg
    from meshccl import _tuning
    from meshccl._gpu import graph as gg, loader, relabel as rl

    rec = Recorder()
    real = loader.kernels

    def timed_kernels(source, *names):
        ks = real(source, *names)
        return tuple(rec.wrap(n.split("<")[0].replace("meshccl_", ""), k) for n, k in zip(names, ks))

    gg.kernels = timed_kernels
    rl.kernels = timed_kernels

    # the direct path's launches (no recorded plans)
    with _tuning.override(GRAPH_PLAN_AFTER=0):
        print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
        for name, _paper, make in graph_bench.paper_cases(opt.shrink):
            if opt.only and opt.only not in name:
                continue
            e = make()
            _host, g = graph_bench._symmetric_csr(e, True)
            del e, _host
            print(f"\n## {name}: n {g.shape[0]}, stored {g.nnz}")
            for method in opt.methods.split(","):
                mg.connected_components(g, method=method, symmetric=True)  # warm-up (compiles)
                cupy.cuda.Device().synchronize()
                rec.take()
                per, walls = collections.defaultdict(list), []
                for _ in range(opt.reps):
                    a, b = cupy.cuda.Event(), cupy.cuda.Event()
                    a.record()
                    mg.connected_components(g, method=method, symmetric=True)
                    b.record()
                    b.synchronize()
                    walls.append(cupy.cuda.get_elapsed_time(a, b))
                    for k, v in rec.take().items():
                        per[k].append(v)
                wall = statistics.median(walls)
                parts = {k: statistics.median(v) for k, v in per.items()}
                inside = sum(parts.values())
                cells = "  ".join(f"{k} {v:.3f}" for k, v in parts.items())
                print(f"{method:6s} wall {wall:.3f} ms | {cells} | other {wall - inside:.3f}")
            del g
            cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
