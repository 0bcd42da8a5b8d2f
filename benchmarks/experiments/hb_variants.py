"""Experiment: the deferred check and HB sampling's settings, end to end.

    python benchmarks/experiments/hb_variants.py [--shrink K] [--reps R]

On the GConn-shaped graphs of graph_bench.py --papers (symmetric CSR on the
GPU), median wall time by CUDA events of connected_components(...,
symmetric=True) after a warm-up, for:

  auto, auto-wait    'auto' with the deferred check (the default since
                     2026-11-23) and with the check waited for before the
                     method runs (meshccl._gpu.graph.DEFERRED_CHECK_METHODS emptied)
  auto inline-check  the deferred check on the caller's stream, before the
                     method (CHECK_ASIDE = False)
  auto aside bps=B   the deferred check beside the method on a side stream
                     with B blocks per multiprocessor (CHECK_ASIDE_BLOCKS_PER_SM)
  hb-H k=K           method='hb' with HB_HOOK = H (the hook step: 'link',
                     unions made with atomicMin; 'cas', GConn's CAS pass)
                     and HB_EDGES = K (the entries it joins)
  kout               method='kout', for reference

Labels of every variant are checked against the first one's.  Its version
of 769180a also timed the flatten before the picks three ways (halving by
CAS, a read-only walk, full compression; meshccl_graph_compress).  Its versions
of 820ae27, 26125e9, bf41ad8 and 672ca6b also timed other hook steps (own
stores, atomicMin claims, claims then a CAS repair); benchmarks/NOTES.md
has the numbers.
"""
import argparse
import statistics

import _common  # noqa: F401  (puts benchmarks/ and the repo on sys.path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shrink", type=int, default=0)
    ap.add_argument("--reps", type=int, default=9)
    opt = ap.parse_args()
    import cupy

    import graph_bench
    import meshccl.graph as mg
    from meshccl._gpu import graph_plan

    graph_plan.PLAN_AFTER = 0  # the direct path's launches (no recorded plans)
    from meshccl._gpu import graph as gg

    def timed(f):
        f()
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        ts = []
        for _ in range(opt.reps):
            s.record()
            f()
            e.record()
            e.synchronize()
            ts.append(cupy.cuda.get_elapsed_time(s, e))
        return statistics.median(ts)

    deferred = gg.DEFERRED_CHECK_METHODS
    defaults = gg.HB_EDGES
    hook_default = gg.HB_HOOK
    aside_default, bps_default = gg.CHECK_ASIDE, gg.CHECK_ASIDE_BLOCKS_PER_SM
    print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for name, _p, make in graph_bench.paper_cases(opt.shrink):
        e = make()
        _h, g = graph_bench._symmetric_csr(e, True)
        del e, _h
        ref = None
        rows = []

        def run(label, method, k=None, wait=False, hook=None, aside=None, bps=None):
            nonlocal ref
            gg.DEFERRED_CHECK_METHODS = () if wait else deferred
            gg.HB_EDGES = defaults if k is None else k
            gg.HB_HOOK = hook or hook_default
            gg.CHECK_ASIDE = aside_default if aside is None else aside
            gg.CHECK_ASIDE_BLOCKS_PER_SM = bps or bps_default

            try:
                ms = timed(lambda: mg.connected_components(g, symmetric=True, method=method))
                _n, lab = mg.connected_components(g, symmetric=True, method=method)
                same = True if ref is None else bool((lab == ref).all())
                if ref is None:
                    ref = lab
                rows.append(f"{label} {ms:.3f}{'' if same else ' LABELS DIFFER'}")
            finally:
                gg.DEFERRED_CHECK_METHODS = deferred
                gg.HB_EDGES = defaults
                gg.HB_HOOK = hook_default
                gg.CHECK_ASIDE = aside_default
                gg.CHECK_ASIDE_BLOCKS_PER_SM = bps_default

        run("auto", "auto")
        run("auto-wait", "auto", wait=True)
        run("auto inline-check", "auto", aside=False)
        for bps in (2, 3, 4, 6, 8):
            run(f"auto aside bps={bps}", "auto", aside=True, bps=bps)
        for k in (1, 2, 3):
            run(f"hb-link k={k}", "hb", k, hook="link")
        run("hb-cas k=2", "hb", 2, hook="cas")
        run("hb-wait", "hb", wait=True)
        run("kout", "kout")
        run("kout-wait", "kout", wait=True)
        print(f"\n## {name} (n {g.shape[0]}, stored {g.nnz}), ms, median of {opt.reps}")
        print(" | ".join(rows))
        g = ref = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
