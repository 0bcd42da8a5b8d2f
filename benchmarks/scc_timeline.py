"""Where one GPU strong-components call spends its time, step by step.

    python benchmarks/scc_timeline.py --families cycle,chain --edges 1e7 --reps 3 --out DIR

For each family of :mod:`meshccl.graph_families` (a cupyx CSR on the
device): the call's time without ``return_info`` (CUDA events, median of
--reps after a warm-up), then one more call in which every step
(``meshccl._gpu.timing.run``: transpose, paths, trim, fwbw, pieces,
colour, smallest, relabel, ... at every level of the recursion on
contracted and quotient graphs) and the paths step's pointer jumping run
between two device synchronisations: each line gives the step, the
recursion level and the size of the graph it ran on, the GPU time between
its two events and the host's wall time, in the order they ran.  The
synchronisations slow that call down; the first column is the time to
quote.  Writes timeline.md under --out.  Needs a GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_events_ms  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="cycle,chain")
    ap.add_argument("--edges", type=float, default=1e7)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--tune", default="", help="NAME=VALUE[,...]: meshccl._tuning constants "
                                               "(as graph_bench.py --tune)")
    opt = ap.parse_args(argv)
    from graph_bench import tuning_values

    from meshccl import _tuning

    with _tuning.override(**tuning_values(opt.tune)):
        return _timeline(opt)


def _timeline(opt):

    import cupy
    import cupyx.scipy.sparse as csp
    import numpy as np
    import scipy.sparse as sp

    from meshccl import graph_families
    from meshccl._gpu import strong, strong_paths, timing
    from meshccl.graph import connected_components

    lines = []
    log = []  # (level, n, name, gpu ms, host ms)
    level = [0, 0]  # recursion depth, vertices of the graph at that depth
    recording = [False]

    def timed(name, launch):
        if not recording[0]:
            return launch()
        cupy.cuda.Device().synchronize()
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        t0 = time.perf_counter()
        a.record()
        out = launch()
        b.record()
        b.synchronize()
        host = (time.perf_counter() - t0) * 1e3
        log.append((level[0], level[1], name, cupy.cuda.get_elapsed_time(a, b), host))
        return out

    plain_run, plain_sc, plain_jump = timing.run, strong.strong_components, strong_paths.jump

    def run(timer, name, launch):
        return timed(name, lambda: plain_run(timer, name, launch))

    def strong_components(kind, arrays, n, *args, **kw):
        saved = list(level)
        level[0], level[1] = level[0] + 1, n
        try:
            return plain_sc(kind, arrays, n, *args, **kw)
        finally:
            level[:] = saved

    def jump(xp, after, place, k):
        return timed(f"  jump ({k} path vertices)", lambda: plain_jump(xp, after, place, k))

    timing.run, strong.strong_components, strong_paths.jump = run, strong_components, jump
    for name in opt.families.split(","):
        e = graph_families.FAMILIES[name](int(opt.edges), seed=1)
        n = e.n_vertices
        g = sp.coo_matrix((np.ones(e.src.size), (e.src, e.dst)), shape=(n, n)).tocsr()
        dev = csp.csr_matrix(g)

        def call():
            return connected_components(dev, directed=True, connection="strong")

        median_ms = median_events_ms(call, opt.reps)
        log.clear()
        recording[0] = True
        t0 = time.perf_counter()
        call()
        cupy.cuda.Device().synchronize()
        whole = (time.perf_counter() - t0) * 1e3
        recording[0] = False
        lines += [f"## {graph_families.TITLES[name]}: {n} vertices, {g.nnz} stored edges"
                  + (f" (tuning: {opt.tune})" if opt.tune else ""), "",
                  f"strong components {median_ms:.2f} ms (median of {opt.reps}, "
                  f"CUDA events); the call below, synchronised at every step, {whole:.2f} ms "
                  f"wall", "", "| level | vertices | step | GPU ms | host ms |",
                  "|---:|---:|---|---:|---:|"]
        lines += [f"| {lv} | {nv} | {st} | {g_ms:.3f} | {h_ms:.3f} |"
                  for lv, nv, st, g_ms, h_ms in log]
        lines.append("")
        print("\n".join(lines[-len(log) - 7:]), flush=True)
        del dev
        if opt.out:
            Path(opt.out).mkdir(parents=True, exist_ok=True)
            Path(opt.out, "timeline.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
