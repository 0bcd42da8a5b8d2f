"""The tile kernels' prefetch of P (mesh23.RUNS_PREFETCH) by mode: 1, a
prefetch per 32-byte sector that holds a run start; 2, one per row that has
any (its first cell's line); wherever the default prefetches, on the
standard 2-D and 3-D cases (H200 experiment, 2026-11-24; the log's
"default" was mode 1, "sectors" here).

    python benchmarks/experiments/prefetch_modes.py"""
from _common import labels_agree
import phases as ph

from meshccl._gpu import mesh23, plan

DEFAULT = dict(mesh23.RUNS_PREFETCH)
VARIANTS = {  # where the default prefetches (and at 2-D c1)
    "off": {k: 0 for k in DEFAULT},
    "sectors": {k: (1 if v else 0) for k, v in DEFAULT.items()},
    "lines": {k: (2 if v else 0) for k, v in DEFAULT.items()} | {(2, 1): 2},
}
cases = ph.standard_cases()


def use(name):
    mesh23.RUNS_PREFETCH.update(VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, VARIANTS, use)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        ph.report(f"{v:8s}", cases, keys=("tile",))
mesh23.RUNS_PREFETCH.update(DEFAULT)
plan._local.__dict__.pop("plans", None)
