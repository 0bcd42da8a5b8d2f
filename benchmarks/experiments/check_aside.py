"""Experiment: the deferred CSR check on the caller's stream or beside the method.

    python benchmarks/experiments/check_aside.py [--shrink K] [--rounds R]

On the GConn-shaped Kronecker and social-like graphs (graph_bench.py
--papers), connected_components(..., symmetric=True) with method 'auto'
under each setting, interleaved: every round times one call of every
setting, R rounds.  Settings: 'inline' (CHECK_ASIDE = False: the check on
the caller's stream before the method, CHECK_BLOCKS_PER_SM blocks per
multiprocessor) and 'aside B' (on a side stream beside the method, B
blocks per multiprocessor).  Two timings by CUDA events, medians and 10th
percentiles: 'events' around the call as a user's loop sees it, and 'gpu'
with a 3 ms spin kernel queued first, so that the host has queued
everything before the GPU reaches it (the kernels and the gaps between
them, without host time).  Labels are compared with the first setting's.
"""
import argparse
import statistics

from _common import busy  # also puts benchmarks/ and the repo on sys.path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=31)
    opt = ap.parse_args()
    import cupy

    import graph_bench
    import meshccl.graph as mg
    from meshccl._gpu import graph_plan

    graph_plan.PLAN_AFTER = 0  # the direct path's launches (no recorded plans)
    from meshccl._gpu import graph as gg
    settings = [("inline", False, None)] + [(f"aside {b}", True, b) for b in (2, 3, 4, 8)]
    print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for name, _p, make in graph_bench.paper_cases(opt.shrink):
        if "road" in name:
            continue
        e = make()
        _h, g = graph_bench._symmetric_csr(e, True)
        del e, _h
        times = {s[0]: {"events": [], "gpu": []} for s in settings}
        ref = None
        s_ev, e_ev = cupy.cuda.Event(), cupy.cuda.Event()
        for r in range(opt.rounds + 1):
            for label, aside, bps in settings:
                gg.CHECK_ASIDE = aside
                if bps:
                    gg.CHECK_ASIDE_BLOCKS_PER_SM = bps
                for kind in ("events", "gpu"):
                    if kind == "gpu":
                        busy(3)
                    s_ev.record()
                    _n, lab = mg.connected_components(g, symmetric=True)
                    e_ev.record()
                    e_ev.synchronize()
                    if r:
                        times[label][kind].append(cupy.cuda.get_elapsed_time(s_ev, e_ev))
                    if ref is None:
                        ref = lab
                    elif r == 0:
                        assert bool((lab == ref).all()), f"{label}: labels differ"
        print(f"\n## {name}: ms over {opt.rounds} interleaved rounds (median / 10th percentile)")
        for label, _a, _b in settings:
            row = []
            for kind in ("events", "gpu"):
                t = sorted(times[label][kind])
                row.append(f"{kind} {statistics.median(t):.3f} / {t[len(t) // 10]:.3f}")
            print(f"{label:10s} " + "  ".join(row))
        g = ref = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
