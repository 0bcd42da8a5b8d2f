"""The unions in global memory (unionfind.cuh, unite_hooked) with the two
finds one after the other (MESHCCL_FIND_PAIRS 0) or stepping together
(1, find_both: each step's two loads in flight at once).  The border
kernels' unions of the mesh paths (2-D and 3-D standard cases, connectivity
1 and full) and the graph methods (GConn-shaped graphs of graph_bench.py
--papers, shrunk), event-timed call and device ms, two rounds in
alternating order, labels equal.  (H100 experiment, 2026-11-26.)

    python benchmarks/experiments/find_pairs.py [--shrink K] [--no-mesh]

find_both and MESHCCL_FIND_PAIRS exist only at commit 72a2698 (run this there);
measured and not kept (benchmarks/NOTES.md, results/h100-2026-11-26b/find_pairs/)."""
import argparse

import _common  # noqa: F401  (sys.path)
import _defines
from _common import alternate, device_ms
from meshccl._gpu import plan
import phases as ph

VARIANTS = {"one then the other": 0, "together": 1}


def use(name):
    _defines.use(MESHCCL_FIND_PAIRS=VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


ap = argparse.ArgumentParser()
ap.add_argument("--shrink", type=int, default=1)
ap.add_argument("--no-mesh", action="store_true")
ap.add_argument("--methods", default="auto,ecl,unionfind,async,hb,kout")
opt = ap.parse_args()
if not opt.no_mesh:
    alternate(ph.standard_cases(), VARIANTS, use)

import cupy  # noqa: E402

import graph_bench  # noqa: E402
import meshccl.graph as mg  # noqa: E402

for name, _p, make in graph_bench.paper_cases(opt.shrink):
    e = make()
    _h, g = graph_bench._symmetric_csr(e, True)
    del e, _h
    for method in opt.methods.split(","):
        ref, row = None, []
        for rnd in range(2):
            for v in (list(VARIANTS) if rnd == 0 else list(VARIANTS)[::-1]):
                use(v)
                mg.release_plans()
                _n, lab = mg.connected_components(g, symmetric=True, method=method)
                if ref is None:
                    ref = lab
                elif not bool(cupy.array_equal(lab, ref)):
                    raise SystemExit(f"{name} {method}: labels differ under {v}")
                t = device_ms(lambda: mg.connected_components(g, symmetric=True, method=method),
                              reps=15)
                row.append(f"{v}: {t:.3f}")
        print(f"{name[:40]:40s} {method:10s} device ms | " + " | ".join(row), flush=True)
