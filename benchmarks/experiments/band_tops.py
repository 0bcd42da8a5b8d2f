"""The banded tile kernel's straight-up pairs (runs2d.cu band_unions): each
united with its vertical stretch's top (MESHCCL_BAND_TOPS 1, a segmented
scan over the warp's rows first) or with the band run just above (0, no
scan; chains of at most 16 band runs a tile), on the 2-D standard cases at
connectivity 2 (H200 experiment, 2026-11-24).

    python benchmarks/experiments/band_tops.py"""
import _defines
from _common import labels_agree
import phases as ph

from meshccl._gpu import plan

VARIANTS = {"tops": 1, "above": 0}
cases = ph.standard_cases(dims=(2,))


def use(name):
    _defines.use(MESHCCL_BAND_TOPS=VARIANTS[name])
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, VARIANTS, use)
for rep in range(2):
    for v in VARIANTS:
        use(v)
        for name, a in cases:
            r, total = ph.phases(a, 2, "fixed", 10)
            print(f"{v:6s} {name:20s} c=2 tile {r['tile']:.3f} | total {total:.3f}", flush=True)
use("tops")
