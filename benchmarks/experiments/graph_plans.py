"""Experiment: repeated GPU graph calls with and without a recorded plan.

    python benchmarks/experiments/graph_plans.py [--shrink K] [--rounds R] [--methods auto,hb] [--skip road]

On the GConn-shaped graphs of graph_bench.py --papers that a plan takes
(at most meshccl._gpu.graph_plan.MAX_PLAN_VERTICES vertices),
connected_components(..., symmetric=True) for each method, interleaved:
each round times one call without a plan (PLAN_AFTER = 0: the direct path,
as on a first call) and one replay of the recorded plan.  CUDA events,
median and 10th percentile over R rounds: 'events' around the call as a
user's loop sees it, 'gpu' with a 3 ms spin kernel queued first (the host
has queued everything before the GPU gets there, so host time drops out).
Also: the wall time of the call that records the plan, the device memory
the plan keeps (CuPy pool bytes in use after, minus before).  Labels of
the first round are compared with the direct path's.
"""
import argparse
import statistics
import sys
import time

from _common import busy  # also puts benchmarks/ and the repo on sys.path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--methods", default="auto,hb,kout,ecl")
    ap.add_argument("--skip", default="road", help="graphs whose name contains this are left out")
    opt = ap.parse_args()
    import cupy

    import graph_bench
    import meshccl.graph as mg
    from meshccl._gpu import graph_plan
    pool = cupy.get_default_memory_pool()
    print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; command: python {' '.join(sys.argv)}")
    for name, _p, make in graph_bench.paper_cases(opt.shrink):
        if opt.skip and opt.skip in name:
            continue
        e = make()
        _h, g = graph_bench._symmetric_csr(e, True)
        del e, _h
        n = g.shape[0]
        if n > graph_plan.MAX_PLAN_VERTICES:
            print(f"\n## {name}: {n} vertices, above MAX_PLAN_VERTICES: no plan")
            continue
        print(f"\n## {name}: n {n}, stored {g.nnz}; ms over {opt.rounds} interleaved rounds "
              f"(median / 10th percentile)")
        s_ev, e_ev = cupy.cuda.Event(), cupy.cuda.Event()
        for method in opt.methods.split(","):
            mg.release_plans()
            graph_plan.PLAN_AFTER = 0
            _n, ref = mg.connected_components(g, symmetric=True, method=method)  # warm-up
            cupy.cuda.Device().synchronize()
            # the recording call (the key's second call)
            graph_plan.PLAN_AFTER = 2
            mg.connected_components(g, symmetric=True, method=method)
            cupy.cuda.Device().synchronize()
            before = pool.used_bytes()
            t0 = time.perf_counter()
            _n, lab = mg.connected_components(g, symmetric=True, method=method)
            cupy.cuda.Device().synchronize()
            t_record = (time.perf_counter() - t0) * 1e3
            del lab
            kept = pool.used_bytes() - before
            plan = next(iter(graph_plan._tables()[0].values()))
            assert plan, "recording failed"
            times = {s: {"events": [], "gpu": []} for s in ("direct", "plan")}
            for r in range(opt.rounds + 1):
                for setting in ("direct", "plan"):
                    graph_plan.PLAN_AFTER = 0 if setting == "direct" else 2
                    for kind in ("events", "gpu"):
                        if kind == "gpu":
                            busy(3)
                        s_ev.record()
                        _n, lab = mg.connected_components(g, symmetric=True, method=method)
                        e_ev.record()
                        e_ev.synchronize()
                        if r:
                            times[setting][kind].append(cupy.cuda.get_elapsed_time(s_ev, e_ev))
                        elif not bool((lab == ref).all()):
                            raise AssertionError(f"{name} {method} {setting}: labels differ")
            print(f"{method}: recording call {t_record:.2f} ms wall, plan keeps {kept / 2**20:.1f} MiB "
                  f"({kept / n:.1f} B/vertex)")
            for setting in ("direct", "plan"):
                row = []
                for kind in ("events", "gpu"):
                    t = sorted(times[setting][kind])
                    row.append(f"{kind} {statistics.median(t):.3f} / {t[len(t) // 10]:.3f}")
                print(f"  {setting:7s} " + "  ".join(row))
            mg.release_plans()
        g = None
        pool.free_all_blocks()


if __name__ == "__main__":
    main()
