"""The 2-D border kernel's unions (runs2d.cu, MESHCCL_BORDER_REM): find both
roots then hook (0), or Rem's rule with splicing (1) or halving (2); every phase on the
2-D standard cases, two rounds (H200 experiment, 2026-11-24).

    python benchmarks/experiments/border_rem.py"""
import _defines
import phases as ph

from meshccl._gpu import plan

VARIANTS = {"finds": 0, "rem": 1, "remhalf": 2}
cases = ph.standard_cases(dims=(2,))


def use(name):
    _defines.use(MESHCCL_BORDER_REM=VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


for rep in range(2):
    for v in VARIANTS:
        use(v)
        ph.report(f"{v:6s}", cases)
use("finds")
