"""The label pass of 2-D images whose tiles may be banded: row by row
(meshccl_runs2d_label) against a band's two rows together
(meshccl_runs2d_label_bands, mesh23.RUNS_2D_BANDS_LABEL), the latter
compiled for 1 (no bound), 5 and 6 blocks of 256 per multiprocessor
(RUNS_2D_BANDS_LABEL_BLOCKS: 61 / 48 / 40 registers, the last two with a
few spills), on the 2-D standard cases at connectivity 2: call / device
ms under ab-alternation, labels equal.  (Experiment, 2026-11-26.)

    python benchmarks/experiments/bands_label.py"""
from _common import alternate
from meshccl._gpu import mesh23, plan
import phases as ph

VARIANTS = {"rows": (False, 1), "bands": (True, 1), "bands/5": (True, 5), "bands/6": (True, 6)}


def use(variant):
    mesh23.RUNS_2D_BANDS_LABEL[4], mesh23.RUNS_2D_BANDS_LABEL_BLOCKS[4] = VARIANTS[variant]
    plan._local.__dict__.pop("plans", None)


alternate(ph.standard_cases((2,)), VARIANTS, use, conns=lambda x: (2,))
