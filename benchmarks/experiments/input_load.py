"""The 2-D tile kernel's row loads with the evict-first hint (__ldcs), so
that the input's lines, which nothing after the tile kernel reads but the
border kernel's seams, leave L2 first and the run starts' P, the slots and
the bit arrays stay for the kernels after it (MESHCCL_INPUT_LOAD: 0 plain
loads, 1 every row evict-first, 2 all but what the border kernel reads):
per 2-D case and connectivity, call / device times under ab-alternation,
labels equal, then the phases.  (H200 experiment, 2026-11-25.)

    python benchmarks/experiments/input_load.py"""
import _defines
from _common import alternate
from meshccl._gpu import plan
import phases as ph

VARIANTS = {"plain": 0, "evict-first": 1, "evict-first but seams": 2}


def use(name):
    _defines.use(MESHCCL_INPUT_LOAD=VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
alternate(cases, VARIANTS, use)
for v in VARIANTS:
    use(v)
    for name, a in cases:
        for c in (1, 2):
            t, total = ph.phases(a, c, "fixed", reps=20)
            print(f"{v:22s} {name:22s} c={c} " + " ".join(f"{k} {x:.4f}" for k, x in t.items())
                  + f" | total {total:.4f}", flush=True)
