"""Experiment: where the host time of a GPU graph call goes.

    python benchmarks/experiments/graph_host_overhead.py [--shrink K] [--only NAME]

For each GConn-shaped graph: wall time of connected_components(method='auto',
symmetric=True) and of its validation alone (both end with a device sync),
then cProfile over 30 calls (top functions by own time).
"""
import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--only", default=None)
    opt = ap.parse_args()
    import cupy

    import graph_bench
    import meshccl.graph as mg

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
        print(f"\n## {name}\nwall: call {full:.3f} ms, validation alone {val:.3f} ms")
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
