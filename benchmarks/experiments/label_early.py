"""The label pass's loads before its wait (MESHCCL_LABEL_EARLY=1): F, S, A
and P at the run starts that are not piece roots are final before
meshccl_label_pieces may let the label pass start (kernels/launch.cuh), so
they can be loaded in the room that kernel's last blocks leave; =0 loads
everything after the wait, as before.  Per case and connectivity, one
event-timed call (the bench's way: results dropped, so the plan's graph at
the call's addresses replays) and the device time behind a busy kernel,
two rounds, alternating; labels must be equal.  (H200 experiment,
2026-11-25.)

    python benchmarks/experiments/label_early.py [2|3 ...]"""
import sys

import _defines
from meshccl._gpu import plan
import phases as ph
from _common import alternate


def use(early):
    _defines.use(MESHCCL_LABEL_EARLY=early)
    plan._local.__dict__.pop("plans", None)


dims = tuple(int(a) for a in sys.argv[1:]) or (2, 3)
alternate(ph.standard_cases(dims), (0, 1), use)
use(1)
