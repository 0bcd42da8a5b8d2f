import sys
sys.path.insert(0, "benchmarks/experiments"); sys.path.insert(0, "benchmarks")
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph
V = {"bands": True, "rows": False}
def use(v):
    mesh23.RUNS_2D_BANDS = V[v]
    plan._local.__dict__.pop("plans", None)
cases = [c for c in ph.standard_cases((2,)) if "potts" not in c[0]]
alternate(cases, V, use, conns=lambda x: (2,))
