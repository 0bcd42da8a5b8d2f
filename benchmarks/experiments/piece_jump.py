"""Walks of meshccl_piece_roots that publish their progress (each hooked
root's parent follows its walk up: MESHCCL_PIECE_JUMP=1) against read-only
walks that re-point the path afterwards (=0): labels compared, then the
phases of the standard 2-D and 3-D cases twice (H200 experiment,
2026-11-24).

    python benchmarks/experiments/piece_jump.py"""
import _defines
from _common import labels_agree
import phases as ph

from meshccl._gpu import plan

cases = ph.standard_cases()


def fresh(jump):
    _defines.use(MESHCCL_PIECE_JUMP=jump)
    plan._local.__dict__.pop("plans", None)


labels_agree(cases, (0, 1), fresh)
for rep in range(2):
    for jump in (0, 1):
        fresh(jump)
        ph.report(f"jump={jump}", cases)
