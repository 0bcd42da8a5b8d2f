"""Experiment: what the host does during a GPU graph call (run under nsys).

    nsys profile -t cuda,nvtx -o OUT python benchmarks/experiments/graph_api_calls.py [--calls N]
    nsys stats -r cuda_api_sum,nvtx_sum OUT.nsys-rep

N calls of connected_components(method='auto', symmetric=True) on the
GConn-shaped Kronecker graph after a warm-up, each inside an NVTX range,
so the CUDA API summary shows which runtime calls the host makes per call
and how long they take (a launch that blocks, an allocation, a sync).
"""
import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--shrink", type=int, default=0)
    opt = ap.parse_args()
    import cupy
    from cupyx.profiler import time_range

    import graph_bench
    import meshccl.graph as mg

    name, _p, make = graph_bench.paper_cases(opt.shrink)[0]
    e = make()
    _h, g = graph_bench._symmetric_csr(e, True)
    del e, _h
    for _ in range(3):
        mg.connected_components(g, symmetric=True)
    cupy.cuda.Device().synchronize()
    for _ in range(opt.calls):
        with time_range("call"):
            mg.connected_components(g, symmetric=True)
    print(name, "done")


if __name__ == "__main__":
    main()
