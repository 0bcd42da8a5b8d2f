"""Experiment: where the host time of a GPU graph call goes.

    python benchmarks/experiments/graph_host_overhead.py [--shrink K] [--only NAME]

For each GConn-shaped graph: wall time of connected_components(method='auto',
symmetric=True) and of its validation alone (both end with a device sync);
CUDA events around the call as the benchmark takes them ("events"), and
the same with the GPU kept busy by a 3 ms spin kernel queued just before
the first event ("gpu only": the host has queued every launch before the
GPU reaches them, so host time drops out and what is left is the kernels
and the gaps between them); then cProfile over 30 calls (top functions by
own time).
"""
import argparse
import cProfile
import pstats
import statistics
import time

from _common import busy  # also puts benchmarks/ and the repo on sys.path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--only", default=None)
    opt = ap.parse_args()
    import cupy

    import graph_bench
    import meshccl.graph as mg
    from meshccl._gpu import graph_plan

    graph_plan.PLAN_AFTER = 0  # the direct path's launches (no recorded plans)

    for name, _p, make in graph_bench.paper_cases(opt.shrink):
        if opt.only and opt.only not in name:
            continue
        e = make()
        _h, g = graph_bench._symmetric_csr(e, True)
        del e, _h
        dev = cupy.cuda.Device()

        def wall(f, reps=15):
            f()
            dev.synchronize()
            ts = []
            for _ in range(reps):
                t = time.perf_counter()
                f()
                dev.synchronize()
                ts.append((time.perf_counter() - t) * 1e3)
            return statistics.median(ts)

        full = wall(lambda: mg.connected_components(g, symmetric=True))
        val = wall(lambda: mg._as_graph(g, {}))

        def events(keep_busy, reps=15):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            ts = []
            for _ in range(reps + 1):
                if keep_busy:
                    busy(3)
                s.record()
                mg.connected_components(g, symmetric=True)
                e.record()
                e.synchronize()
                ts.append(cupy.cuda.get_elapsed_time(s, e))
            return statistics.median(ts[1:])

        ev, gpu_only = events(False), events(True)

        # host issue time: from the call's start until it joins the side
        # check (after its last launch, before its one transfer), with the
        # GPU kept busy so that no launch waits for it
        import time as _time

        from meshccl._gpu import graph as gg
        aside, marks = gg.check_aside, []

        def marked(*a, **k):
            facts, join = aside(*a, **k)
            return facts, lambda: (marks.append(_time.perf_counter()), join())[1]

        gg.check_aside = marked
        issue = []
        try:
            for _ in range(16):
                busy(5)
                marks.clear()
                t0 = _time.perf_counter()
                mg.connected_components(g, symmetric=True)
                if marks:
                    issue.append((marks[0] - t0) * 1e3)
        finally:
            gg.check_aside = aside
        host_issue = statistics.median(issue[1:]) if len(issue) > 1 else float("nan")
        print(f"\n## {name}\nwall: call {full:.3f} ms, validation alone {val:.3f} ms; "
              f"events {ev:.3f} ms, gpu only {gpu_only:.3f} ms, host issue {host_issue:.3f} ms")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(30):
            mg.connected_components(g, symmetric=True)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(22)
        g = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
