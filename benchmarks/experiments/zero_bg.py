"""The 2-D tile kernel writing the zeros of the labels' all-background
sectors, which the label pass then skips (mesh23.RUNS_2D_ZERO_BG, runs.cuh
bg_sector), against neither: call / device times under ab-alternation on
the 2-D standard cases (labels equal), then phases of each.
(H200 experiment, 2026-11-25.)

    python benchmarks/experiments/zero_bg.py"""
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

VARIANTS = {"zeros in tile": True, "label pass only": False}


def use(variant):
    mesh23.RUNS_2D_ZERO_BG = VARIANTS[variant]
    plan._local.__dict__.pop("plans", None)


cases = ph.standard_cases((2,))
alternate(cases, VARIANTS, use)
for v in VARIANTS:
    use(v)
    for name, a in cases:
        for c in (1, 2):
            t, total = ph.phases(a, c, "fixed", reps=20)
            print(f"{v:16s} {name:22s} c={c} " + " ".join(f"{k} {x:.4f}" for k, x in t.items())
                  + f" | total {total:.4f}", flush=True)
